package auditbundle

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Decision is a policy evaluation's outcome as Checks.Restore's
// evaluator gives it: the policy's own, before governance's holds.
type Decision struct {
	// Decision is "allow", "deny" or "require_approval".
	Decision              string
	RiskTier              string
	RequiredApproverRoles []string
	RequiredApprovals     uint32
	Reasons               []string
	Revision              string
}

// Evaluator re-evaluates a recorded input (canonical JSON) with policy's
// clock fixed to at: the action query, or with plan the plan query.
type Evaluator func(ctx context.Context, input []byte, at time.Time, plan bool) (Decision, error)

// Checks are what Verify needs from outside this package.
type Checks struct {
	// Restore compiles a revision's sources, refusing files that do not
	// hash to it or another OPA version; nil leaves policy unevaluated
	// (a note says so).
	Restore func(ctx context.Context, src *stewardv1.PolicySources) (Evaluator, error)
	// Receipt rebuilds a receipt from a task's records; nil leaves
	// receipts unchecked.
	Receipt func(recs []*stewardv1.EventRecord) (*stewardv1.Receipt, error)
	// Trusted, when set, are the only keys signatures may be made with
	// (--trust-key); otherwise the bundle's own keys are used, which
	// shows the record is intact and consistent, not who signed it.
	Trusted []ed25519.PublicKey
}

// bundleTask is one task of a bundle as verified.
type bundleTask struct {
	id   string
	recs []*stewardv1.EventRecord
	task *stewardv1.Task
}

// Verify checks b offline and reports every failure it finds.
func Verify(ctx context.Context, b *stewardv1.AuditBundle, c Checks) *Report {
	r := &Report{Pinned: len(c.Trusted) > 0}
	keys := checkKeys(b, r)
	if len(c.Trusted) > 0 {
		keys = c.Trusted
	}
	if len(b.Tasks) == 0 {
		r.fail(SectionBundle, "tasks", "the bundle holds no task")
	}
	var tasks []*bundleTask
	for _, bt := range b.Tasks {
		if t := verifyTask(bt, keys, r); t != nil {
			tasks = append(tasks, t)
			checkReceipt(bt, t, c, r)
		}
	}
	checkRelatives(b, tasks, r)
	requests := checkBlobs(SectionRequests, b.Requests, r)
	results := checkBlobs(SectionResults, b.Results, r)
	admitErased(b, map[string]map[string][]byte{SectionRequests: requests, SectionResults: results}, r)
	tools := checkTools(b.Tools, r)
	for _, t := range tasks {
		checkReferences(t, requests, results, tools, r)
		checkApprovers(t, r)
	}
	checkPolicy(ctx, b, tasks, c, r)
	return r
}

// checkKeys checks each key is an Ed25519 key under its id, and returns
// them.
func checkKeys(b *stewardv1.AuditBundle, r *Report) []ed25519.PublicKey {
	var keys []ed25519.PublicKey
	for i, k := range b.Keys {
		item := fmt.Sprintf("key %d (%s)", i, k.KeyId)
		if len(k.PublicKey) != ed25519.PublicKeySize {
			r.fail(SectionKeys, item, "%d bytes, not an Ed25519 public key", len(k.PublicKey))
			continue
		}
		if id := credential.KeyID(k.PublicKey); id != k.KeyId {
			r.fail(SectionKeys, item, "the key's id is %s", id)
			continue
		}
		keys = append(keys, k.PublicKey)
	}
	if len(b.Keys) == 0 {
		r.fail(SectionKeys, "keys", "the bundle holds no key to check signatures with")
	}
	return keys
}

// verifyTask replays one task's events with pkg/audit — chain, fold,
// credentials, signatures — and returns it folded, or nil when it breaks.
func verifyTask(bt *stewardv1.BundleTask, keys []ed25519.PublicKey, r *Report) *bundleTask {
	data := make([][]byte, len(bt.Events))
	// Sequences are the store's positions, outside the chain and unsigned:
	// that they strictly increase is all a bundle can show of them.
	var last uint64
	for i, e := range bt.Events {
		data[i] = e.Data
		if e.Sequence <= last {
			r.fail(SectionEvents, eventItem(bt.TaskId, i, e.Data), "stream sequence %d does not follow %d: a task's sequences strictly increase", e.Sequence, last)
			return nil
		}
		last = e.Sequence
	}
	rep := audit.Verify(bt.TaskId, data, audit.WithCredentials(keys...), audit.WithDecisions(keys...))
	if brk := rep.Break; brk != nil {
		section := SectionEvents
		if brk.Index < len(data) && typeOf(data[brk.Index]) == event.TypeCredentialIssued {
			section = SectionCredentials
		}
		item := fmt.Sprintf("task %s event %d", bt.TaskId, brk.Index)
		if brk.EventID != "" {
			item += " (" + brk.EventID + ")"
		}
		r.fail(section, item, "%s", brk.Reason)
		return nil
	}
	if len(keys) > 0 && len(rep.Credentials) == 0 {
		r.fail(SectionCredentials, "task "+bt.TaskId, "its events carry no credential to check the keys against")
	}
	t := &bundleTask{id: bt.TaskId, task: rep.Task}
	for _, e := range bt.Events {
		ev, _ := event.Open(e.Data) // opened once already, by the replay
		t.recs = append(t.recs, &stewardv1.EventRecord{Sequence: e.Sequence, Event: ev})
	}
	r.Tasks++
	r.Events += rep.Events
	r.Heads = append(r.Heads, TaskHead{ID: bt.TaskId, Events: rep.Events, LastSequence: last, Head: rep.Head})
	return t
}

// typeOf is the type an event's bytes claim, read without checking them.
func typeOf(data []byte) string {
	ev := &stewardv1.Event{}
	if proto.Unmarshal(data, ev) != nil {
		return ""
	}
	return ev.Type
}

// eventItem names event i of a task, by id when its bytes tell it.
func eventItem(taskID string, i int, data []byte) string {
	ev := &stewardv1.Event{}
	if proto.Unmarshal(data, ev) == nil && ev.EventId != "" {
		return fmt.Sprintf("task %s event %d (%s)", taskID, i, ev.EventId)
	}
	return fmt.Sprintf("task %s event %d", taskID, i)
}

// checkBlobs checks that each blob hashes to its name, and returns the
// ones that do, by hash.
func checkBlobs(section string, blobs []*stewardv1.BundleBlob, r *Report) map[string][]byte {
	out := map[string][]byte{}
	for _, b := range blobs {
		if got := action.RequestHash(b.Data); got != b.Hash {
			r.fail(section, b.Hash, "its bytes hash to %s", got)
			continue
		}
		out[b.Hash] = b.Data
	}
	return out
}

// checkTools opens each tool registration and returns their contracts,
// by tenant, name and version.
func checkTools(tools [][]byte, r *Report) map[[3]string]bool {
	out := map[[3]string]bool{}
	for i, data := range tools {
		ev, err := event.Open(data)
		if err != nil || ev.GetToolRegistered() == nil {
			if err == nil {
				err = fmt.Errorf("a %s event, not a tool registration", ev.Type)
			}
			r.fail(SectionTools, fmt.Sprintf("tool registration %d (%s)", i, action.RequestHash(data)[:16]), "%v", err)
			continue
		}
		tr := ev.GetToolRegistered()
		out[[3]string{tr.Tenant, tr.GetContract().GetName(), tr.GetContract().GetVersion()}] = true
	}
	return out
}

// checkReferences checks that every request and result t's actions hold
// by reference is in the bundle, and every action's tool version is
// registered for t's tenant or globally.
func checkReferences(t *bundleTask, requests, results map[string][]byte, tools map[[3]string]bool, r *Report) {
	for _, a := range t.task.Actions {
		item := fmt.Sprintf("task %s action %s", t.id, a.ActionId)
		if a.RequestRef != "" {
			if _, ok := requests[a.RequestHash]; !ok || a.RequestRef != storedRef(a.RequestRef, a.RequestHash) {
				r.fail(SectionRequests, item, "its request %s is not in the bundle", a.RequestHash)
			}
		} else if got := action.RequestHash(a.Request); got != a.RequestHash {
			r.fail(SectionRequests, item, "its inline request hashes to %s, not %s", got, a.RequestHash)
		}
		if o := a.Outcome; o != nil && o.ResultRef != "" {
			if _, ok := results[o.ResultHash]; !ok {
				r.fail(SectionResults, item, "its result %s is not in the bundle", o.ResultHash)
			}
		}
		if !tools[[3]string{t.task.Tenant, a.Tool, a.ToolVersion}] && !tools[[3]string{"", a.Tool, a.ToolVersion}] {
			r.fail(SectionTools, item, "no registration of %s@%s in the bundle", a.Tool, a.ToolVersion)
		}
	}
}

// storedRef is ref when it names hash in a store (action.ParseRef).
func storedRef(ref, hash string) string {
	if r, err := action.ParseRef(ref); err == nil && r.Hash == hash {
		return ref
	}
	return ""
}

// checkReceipt recomputes t's receipt and compares it with the one the
// bundle carries.
func checkReceipt(bt *stewardv1.BundleTask, t *bundleTask, c Checks, r *Report) {
	if c.Receipt == nil {
		return
	}
	item := "task " + bt.TaskId
	if bt.Receipt == nil {
		r.fail(SectionReceipt, item, "the bundle holds no receipt for it")
		return
	}
	got, err := c.Receipt(t.recs)
	if err != nil {
		r.fail(SectionReceipt, item, "does not recompute: %v", err)
		return
	}
	if !proto.Equal(got, bt.Receipt) {
		r.fail(SectionReceipt, item, "differs from the one its events give, in %s", firstDifference(got, bt.Receipt))
		return
	}
	r.Receipts++
}

// firstDifference names the first top-level field in which two receipts
// differ.
func firstDifference(a, b *stewardv1.Receipt) string {
	fields := a.ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		if !a.ProtoReflect().Get(f).Equal(b.ProtoReflect().Get(f)) {
			return string(f.Name())
		}
	}
	return "unknown fields"
}
