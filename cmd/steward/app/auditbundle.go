package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/auditbundle"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/terminal"
	"github.com/steward-run/steward/services/governance/policy"
	"github.com/steward-run/steward/services/state"
)

// bundleFlags are audit's flags for bundles: export --bundle (one task,
// or --tenant's tasks created between the times) and verify --bundle FILE.
type bundleFlags struct {
	on                          bool
	tenant                      string
	createdAfter, createdBefore string
	maxMiB                      int64
}

// defaultMaxBundleMiB bounds what export --bundle holds and verify --bundle
// reads: the format is one deterministically encoded message, sorted
// section by section, so both hold the whole bundle in memory.
const (
	defaultMaxBundleMiB = 1024
	maxBundleMiB        = 1 << 20 // a TiB: past anything a machine holds
)

// limit is --max-bundle-mib in bytes.
func (f *bundleFlags) limit() (int64, error) {
	if f.maxMiB < 1 || f.maxMiB > maxBundleMiB {
		return 0, fmt.Errorf("--max-bundle-mib: %d is not between 1 and %d", f.maxMiB, maxBundleMiB)
	}
	return f.maxMiB << 20, nil
}

// exportBundle fetches the bundle of c.taskID, or of every task of
// --tenant created in the range, and writes it to --out.
func (c *auditCmd) exportBundle(ctx context.Context) error {
	bulk := c.bundle.tenant != "" || c.bundle.createdAfter != "" || c.bundle.createdBefore != ""
	switch {
	case c.out == "":
		return errors.New("audit export --bundle: --out is required")
	case bulk == (c.taskID != ""):
		return errors.New("audit export --bundle: give --task ID, or --tenant T with --created-after and --created-before")
	}
	limit, err := c.bundle.limit()
	if err != nil {
		return err
	}
	base, hc, err := c.dial()
	if err != nil {
		return err
	}
	ids := []string{c.taskID}
	if bulk {
		if ids, err = c.bundleTasks(ctx, stewardv1connect.NewQueryServiceClient(hc, base)); err != nil {
			return err
		}
	}
	b := &stewardv1.AuditBundle{}
	m := newBundleMerge(b, limit)
	client := stewardv1connect.NewAuditServiceClient(hc, base)
	for _, id := range ids {
		if m.tasks[id] != nil {
			continue // came with another as its sub-task or ancestor
		}
		if err := m.fetch(ctx, client, id); err != nil {
			return fmt.Errorf("bundle of %s from %s: %w", id, base, err)
		}
	}
	key, err := stewardv1connect.NewGovernanceServiceClient(hc, base).GetCredentialKey(ctx, connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
	if err != nil {
		return fmt.Errorf("credential key from %s: %w", base, err)
	}
	b.Keys = append(b.Keys, &stewardv1.BundleKey{KeyId: key.Msg.KeyId, PublicKey: key.Msg.PublicKey})
	// A task one export withheld (no events yet) may have come whole in a
	// later one.
	b.Withheld = slices.DeleteFunc(b.Withheld, func(w *stewardv1.WithheldTask) bool { return m.tasks[w.TaskId] != nil })
	data, err := auditbundle.Marshal(b)
	if err != nil {
		return err
	}
	if int64(len(data)) > limit { // so verify, with the same flag, reads what export writes
		return exportTooBig(limit)
	}
	if err := os.WriteFile(c.out, data, 0o600); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(c.stdout, "exported a bundle of %d tasks (%d requests, %d results, %d tool registrations, %d policy inputs, %d policy revisions; %d related tasks withheld) to %s\n",
		len(b.Tasks), len(b.Requests), len(b.Results), len(b.Tools), len(b.Inputs), len(b.Policies), len(b.Withheld), c.out)
	return nil
}

// bundleTasks lists the tasks of --tenant created in the range, by
// ListTasks's filters, page by page. ListTasks has no tenant filter, so the
// tenant's are kept from every task the caller may see in the range; only
// their ids are held.
func (c *auditCmd) bundleTasks(ctx context.Context, q stewardv1connect.QueryServiceClient) ([]string, error) {
	req := &stewardv1.ListTasksRequest{PageSize: 1000}
	for _, f := range []struct {
		name, value string
		set         **timestamppb.Timestamp
	}{{"--created-after", c.bundle.createdAfter, &req.CreatedAfter}, {"--created-before", c.bundle.createdBefore, &req.CreatedBefore}} {
		if f.value == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an RFC 3339 time", f.name, f.value)
		}
		*f.set = timestamppb.New(at)
	}
	var ids []string
	for {
		resp, err := q.ListTasks(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		for _, t := range resp.Msg.Tasks {
			if t.Tenant == c.bundle.tenant {
				ids = append(ids, t.Contract.GetTaskId())
			}
		}
		if req.PageToken = resp.Msg.NextPageToken; req.PageToken == "" {
			break
		}
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no task of tenant %q was created in that range", c.bundle.tenant)
	}
	return ids, nil
}

// bundleMerge puts the pieces ExportBundle streams into one bundle, each
// once, and stops when what it keeps passes limit bytes.
type bundleMerge struct {
	b     *stewardv1.AuditBundle
	tasks map[string]*stewardv1.BundleTask
	seen  map[string]bool // blobs by section and hash, tools by bytes
	size  int64           // bytes of the pieces kept
	limit int64
}

func newBundleMerge(b *stewardv1.AuditBundle, limit int64) *bundleMerge {
	return &bundleMerge{b: b, tasks: map[string]*stewardv1.BundleTask{}, seen: map[string]bool{}, limit: limit}
}

// fetch streams taskID's bundle into m.
func (m *bundleMerge) fetch(ctx context.Context, client stewardv1connect.AuditServiceClient, taskID string) error {
	stream, err := client.ExportBundle(ctx, connect.NewRequest(&stewardv1.ExportBundleRequest{TaskId: taskID}))
	if err != nil {
		return err
	}
	defer stream.Close()
	fresh := map[string]bool{} // tasks this stream sends: their chunks add up
	for stream.Receive() {
		if !m.add(stream.Msg(), fresh) {
			continue
		}
		if m.size += int64(proto.Size(stream.Msg())); m.size > m.limit {
			return exportTooBig(m.limit)
		}
	}
	return stream.Err()
}

// add puts r into the bundle, unless it has it already, and reports
// whether it kept it.
func (m *bundleMerge) add(r *stewardv1.ExportBundleResponse, fresh map[string]bool) bool {
	once := func(key string) bool {
		if m.seen[key] {
			return false
		}
		m.seen[key] = true
		return true
	}
	switch p := r.Piece.(type) {
	case *stewardv1.ExportBundleResponse_Task:
		id := p.Task.TaskId
		t := m.tasks[id]
		switch {
		case t != nil && fresh[id]:
			t.Events = append(t.Events, p.Task.Events...)
			t.Receipt = p.Task.Receipt
			return true
		case t == nil:
			fresh[id] = true
			m.tasks[id] = p.Task
			m.b.Tasks = append(m.b.Tasks, p.Task)
			return true
		}
	case *stewardv1.ExportBundleResponse_Request:
		return m.blob(&m.b.Requests, "request", p.Request, once)
	case *stewardv1.ExportBundleResponse_Result:
		return m.blob(&m.b.Results, "result", p.Result, once)
	case *stewardv1.ExportBundleResponse_Tool:
		if once("tool " + string(p.Tool)) {
			m.b.Tools = append(m.b.Tools, p.Tool)
			return true
		}
	case *stewardv1.ExportBundleResponse_Input:
		return m.blob(&m.b.Inputs, "input", p.Input, once)
	case *stewardv1.ExportBundleResponse_Policy:
		if once("policy " + p.Policy.Revision) {
			m.b.Policies = append(m.b.Policies, p.Policy)
			return true
		}
	case *stewardv1.ExportBundleResponse_Withheld:
		if once("withheld " + p.Withheld.TaskId) {
			m.b.Withheld = append(m.b.Withheld, p.Withheld)
		}
	}
	return false
}

// blob adds b to section once, and reports whether it did.
func (m *bundleMerge) blob(section *[]*stewardv1.BundleBlob, what string, b *stewardv1.BundleBlob, once func(string) bool) bool {
	if !once(what + " " + b.Hash) {
		return false
	}
	*section = append(*section, b)
	return true
}

// verifyBundle checks a bundle file offline, with this binary's OPA and
// receipt code, and prints what held and what did not.
func (c *auditCmd) verifyBundle(ctx context.Context, file string) error {
	data, err := c.readBundle(file)
	if err != nil {
		return err
	}
	b, err := auditbundle.Unmarshal(data)
	if err != nil {
		return &failure{code: exitChainBroken, err: fmt.Errorf("FAIL: bundle: %v", err)}
	}
	rep := auditbundle.Verify(ctx, b, BundleChecks(c.trusted))
	// A tail cut off a task, receipt recomputed, verifies on its own: only
	// the server's head (VerifyTask, audit verify --task) shows it.
	for _, h := range rep.Heads {
		fmt.Fprintln(c.stdout, terminal.EscapeLine(h.String()))
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(c.stdout, "note: "+terminal.EscapeLine(n))
	}
	if !rep.OK() {
		for _, f := range rep.Failures {
			fmt.Fprintln(c.stdout, "FAIL "+terminal.EscapeLine(f.String()))
		}
		return &failure{code: exitChainBroken, err: fmt.Errorf("FAIL: %d problems in %s; the first: %s", len(rep.Failures), file, terminal.EscapeLine(rep.Failures[0].String()))}
	}
	keys := "the bundle's own keys (pass --trust-key to check who signed)"
	if rep.Pinned {
		keys = "trusted keys"
	}
	fmt.Fprintf(c.stdout, "ok: %d tasks, %d events verified under %s; %d approvals allowed; %d of %d policy snapshots re-evaluated the same (OPA %s); %d receipts recomputed\n",
		rep.Tasks, rep.Events, keys, rep.Approvals, rep.Reevaluated, rep.Snapshots, policy.OPAVersion(), rep.Receipts)
	fmt.Fprintln(c.stdout, "compare each task's events and head with the server's (steward audit verify --task ID, or VerifyTask): a tail cut off is found only so")
	return nil
}

func exportTooBig(limit int64) error {
	return fmt.Errorf("the bundle is over %d MiB (--max-bundle-mib): export a narrower range of tasks, or raise it", limit>>20)
}

// readBundle reads a bundle file of at most --max-bundle-mib: verify holds
// it, decoded, in memory, and a file it was handed may be anything.
func (c *auditCmd) readBundle(file string) ([]byte, error) {
	limit, err := c.bundle.limit()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--bundle: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("--bundle: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("--bundle: %s is over %d MiB, the most verify reads (--max-bundle-mib)", file, c.bundle.maxMiB)
	}
	return data, nil
}

// BundleChecks are the checks verify --bundle makes with this binary's
// code: governance's policy engine and the state plane's receipts.
func BundleChecks(trusted []ed25519.PublicKey) auditbundle.Checks {
	return auditbundle.Checks{
		Restore: func(ctx context.Context, src *stewardv1.PolicySources) (auditbundle.Evaluator, error) {
			e, err := policy.Restore(ctx, src)
			if err != nil {
				return nil, err
			}
			return engineEvaluator(e), nil
		},
		Receipt: state.BuildReceipt,
		Trusted: trusted,
	}
}

// engineEvaluator re-evaluates recorded inputs with e.
func engineEvaluator(e *policy.Engine) auditbundle.Evaluator {
	return func(ctx context.Context, input []byte, at time.Time, plan bool) (auditbundle.Decision, error) {
		res, err := e.EvaluateAt(ctx, input, at, plan)
		return auditbundle.Decision{Decision: res.Decision, RiskTier: res.RiskTier, RequiredApproverRoles: res.RequiredApproverRoles,
			RequiredApprovals: res.RequiredApprovals, Reasons: res.Reasons, Revision: res.Revision}, err
	}
}

func (f *bundleFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "bundle", false, "export or verify an audit bundle (verify --bundle FILE)")
	fs.StringVar(&f.tenant, "tenant", "", "export --bundle: every task of this `TENANT` (\"\" is the default tenant) created in the range")
	fs.StringVar(&f.createdAfter, "created-after", "", "export --bundle --tenant: tasks created at or after this RFC 3339 `TIME`")
	fs.StringVar(&f.createdBefore, "created-before", "", "export --bundle --tenant: tasks created before this RFC 3339 `TIME`")
	fs.Int64Var(&f.maxMiB, "max-bundle-mib", defaultMaxBundleMiB, "export|verify --bundle: the largest bundle, in `MiB`, held in memory to write or read")
}

// runBundle runs export --bundle or verify --bundle FILE; the flags after
// FILE are parsed too.
func (c *auditCmd) runBundle(fs *flag.FlagSet) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	switch c.verb {
	case "export":
		if fs.NArg() > 0 {
			return fmt.Errorf("audit export --bundle: unexpected argument %q", fs.Arg(0))
		}
		return c.exportBundle(ctx)
	case "verify":
		file := c.file
		if fs.NArg() > 0 {
			file = fs.Arg(0)
			if err := fs.Parse(fs.Args()[1:]); err != nil {
				return errUsage
			}
		}
		switch {
		case fs.NArg() > 0:
			return fmt.Errorf("audit verify --bundle: unexpected argument %q", fs.Arg(0))
		case file == "":
			return errors.New("audit verify --bundle: give the bundle FILE")
		case c.taskID != "":
			return errors.New("audit verify --bundle: a bundle is verified offline; --task is for a server's log")
		}
		return c.verifyBundle(ctx, file)
	}
	return fmt.Errorf("audit %s: --bundle is for export and verify", c.verb)
}
