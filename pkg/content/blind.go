package content

import (
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// StoredPrefix starts the URI of content in Steward's results store; the
// rest of it holds the content's plain SHA-256 (action.ParseRef).
const StoredPrefix = "kv://" + action.ResultBucket + "/"

// Blind takes a task's content out of the copy shown to one caller who
// may not read it. What stays says that there is a result, a request or
// an artifact, not what it is. Its methods change the message they are
// given: pass the caller's copy, never a shared view.
type Blind struct {
	// Digest returns what is shown in place of a plain SHA-256 hash of
	// content in a task (secret.Sealer.Digest: keyed); "" hides it. Nil
	// hides every digest.
	Digest func(taskID, hash string) string
	// Roles are the caller's. A caller holding a role an action's approval
	// asks for decides on it, and reads what it decides on: the action's
	// request, its parameters and its hashes (not its result).
	Roles []string
}

func (b Blind) digest(taskID, hash string) string {
	if b.Digest == nil || hash == "" {
		return ""
	}
	return b.Digest(taskID, hash)
}

// approves reports whether the caller holds one of roles, an approval's
// required roles.
func (b Blind) approves(roles []string) bool {
	return slices.ContainsFunc(roles, func(r string) bool { return slices.Contains(b.Roles, r) })
}

// Task blanks t's content: every action's (Action), every plan step's
// result (a checkpoint's answer, a sub-task's result, an action step's
// result, a foreach's list of them) and every artifact's digest
// (Artifact), and what the agent wrote of its milestones' progress. It
// blanks the head of t's hash chain too: every field of an
// outcome's event but its result can be told or is shown, so the event's
// hash would let a caller test guesses at a small inline result.
func (b Blind) Task(t *stewardv1.Task) {
	taskID := t.GetContract().GetTaskId()
	t.LastHash = nil
	for _, a := range t.Actions {
		b.Action(taskID, a)
	}
	if ps := t.Plan; ps != nil {
		b.Steps(ps.Steps...)
		b.Steps(ps.Retired...)
	}
	for _, a := range t.Artifacts {
		b.Artifact(taskID, a)
	}
	for _, d := range t.Decisions {
		b.Decision(taskID, d)
	}
	for _, c := range t.ContextItems {
		b.Context(taskID, c)
	}
	for _, r := range t.Acceptance {
		b.Report(r.Report)
	}
	for _, m := range t.Milestones {
		// The agent's words on its progress, as a decision's rationale.
		m.Note = ""
	}
}

// Report blanks what an execution report says in the agent's words — its
// summary, steps, deviations and what it left open — as Decision does a
// rationale. Its references stay: they name the record, not content.
func (b Blind) Report(r *stewardv1.ExecutionReport) {
	if r == nil {
		return
	}
	r.Summary, r.LeftOpen = "", nil
	for _, st := range r.Steps {
		st.Description = ""
	}
	for _, d := range r.Deviations {
		d.What, d.Why = "", ""
	}
}

// Decision blanks what a decision says in the agent's words — its
// rationale, evidence and question — and keys its prompt digests, which a
// short prompt would give away. Which model, which versions, what it cost
// and what it led to stay: they are the record, not the content.
func (b Blind) Decision(taskID string, d *stewardv1.Decision) {
	d.Rationale, d.Evidence = "", nil
	if _, ok := d.LedTo.(*stewardv1.Decision_Question); ok {
		d.LedTo = &stewardv1.Decision_Question{}
	}
	if d.Call != nil {
		d.Call.PromptDigest = b.digest(taskID, d.Call.PromptDigest)
	}
	if d.Versions != nil {
		d.Versions.PromptDigest = b.digest(taskID, d.Versions.PromptDigest)
	}
}

// Context blanks where a context item is and keys its digest; its source,
// times, sensitivity and egress stay.
func (b Blind) Context(taskID string, c *stewardv1.ContextItem) {
	c.Uri = ""
	c.Digest = b.digest(taskID, c.Digest)
}

// Steps blanks the results of plan steps.
func (b Blind) Steps(steps ...*stewardv1.PlanStepState) {
	for _, s := range steps {
		s.Result = nil
	}
}

// Action blanks a's inline result and keys its result's digest; unless the
// caller approves a (its approval's or its policy snapshot's roles), it
// also blanks its request — which may quote a result: a compensation's
// does, a plan step's parameters may be computed from one, and an agent
// may pass on what it read — and keys every hash of it (request_hash,
// action_hash, its permit's and approval's, the one a plan step's
// proposal id ends with, and its policy snapshot's input_hash, whose facts
// hold the parameters), which a short request would give away as a plain
// SHA-256 gives away a short result.
func (b Blind) Action(taskID string, a *stewardv1.Action) {
	if o := a.Outcome; o != nil {
		o.Result = nil
		o.ResultHash = b.digest(taskID, o.ResultHash)
		o.ResultRef = ""
	}
	roles := a.GetApproval().GetRequiredRoles()
	if len(roles) == 0 {
		roles = a.GetSnapshot().GetRequiredApproverRoles()
	}
	if b.approves(roles) {
		return
	}
	// The request and action hashes recur below: each is keyed once (an
	// HMAC each, for every action of every task a list shows).
	keyed := map[string]string{}
	d := func(hash string) string {
		if k, ok := keyed[hash]; ok {
			return k
		}
		keyed[hash] = b.digest(taskID, hash)
		return keyed[hash]
	}
	a.Request, a.RequestRef = nil, ""
	if a.RequestHash != "" {
		// Older plan proposal ids end with the request hash.
		a.ProposalId = strings.Replace(a.ProposalId, a.RequestHash, d(a.RequestHash), 1)
	}
	a.RequestHash = d(a.RequestHash)
	a.ActionHash = d(a.ActionHash)
	// The signed permit's bytes hold the plain hashes.
	a.SignedPermit = nil
	if pm := a.Permit; pm != nil {
		pm.ActionHash = d(pm.ActionHash)
		pm.RequestHash = d(pm.RequestHash)
	}
	if s := a.Snapshot; s != nil {
		s.InputHash = d(s.InputHash)
	}
	// The signed snapshot's bytes hold the plain input hash.
	a.SnapshotSigned = nil
	if ap := a.Approval; ap != nil {
		b.approval(ap, d)
	}
}

// Approval blanks what ap shows of its action's request — its parameters
// and hashes — unless the caller holds one of the roles it asks for: an
// approver sees what they approve.
func (b Blind) Approval(ap *stewardv1.Approval) {
	if !b.approves(ap.RequiredRoles) {
		b.approval(ap, func(hash string) string { return b.digest(ap.TaskId, hash) })
	}
}

// approval blanks ap's parameters (an amendment's too) and keys its
// action hash with d.
func (b Blind) approval(ap *stewardv1.Approval, d func(hash string) string) {
	ap.ParametersJson, ap.AmendedParamsJson = "", ""
	ap.ActionHash = d(ap.ActionHash)
	// The signed request's bytes hold the parameters and the plain hash.
	ap.RequestSigned = nil
	for _, v := range ap.Votes {
		// A signed decision's bytes hold the plain action hash.
		v.Signed = nil
	}
}

// Artifact keys a's sha256 and blanks the URI of content Steward stores,
// which names its plain SHA-256. A URI elsewhere (s3://…) stays: it
// names where the content is, and reading it there is that store's rule.
func (b Blind) Artifact(taskID string, a *stewardv1.Artifact) {
	a.Sha256 = b.digest(taskID, a.Sha256)
	if strings.HasPrefix(a.Uri, StoredPrefix) {
		a.Uri = ""
	}
}
