package governance_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// harness is the kit's environment with what governance's tests add: the
// registered tools (credTools), a signing key, a clock the test moves, and
// the governance plane it starts. The test plays the control and
// execution planes by appending their events.
type harness struct {
	*stewardtest.Env
	signer *credential.Signer
	clock  *stewardtest.Clock
	plane  *governance.Plane
	// onEvaluate, when set before start, is called at every policy
	// evaluation.
	onEvaluate func()
	// traceParent, when set, is the W3C context proposals are written in.
	traceParent string

	mu       sync.Mutex
	reminded []string // approvals the Notifier was told about
	alerted  []string // budget alerts the BudgetNotifier was told about
}

// credTools are the registered tools: wire needs a scope.
var credTools = []*stewardv1.ToolContract{
	{Name: "search", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL},
	{Name: "wire", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, RequiredScopes: []string{"payments:write"}},
}

// paidTool is a tool some tests register too: it costs 70 a call.
var paidTool = &stewardv1.ToolContract{Name: "paid", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
	DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, CostMicrosPerCall: 70}

func newHarness(t *testing.T) *harness {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := &harness{Env: stewardtest.NewEnv(t), signer: credential.NewSigner(key), clock: &stewardtest.Clock{}}
	e.register(t, credTools...)
	return e
}

// register records tool contracts, as the control plane does.
func (e *harness) register(t *testing.T, contracts ...*stewardv1.ToolContract) {
	t.Helper()
	for _, c := range contracts {
		ev, err := event.New(event.Meta{ID: event.ID("tool", c.Name, c.Version)}, &stewardv1.ToolRegistered{Contract: c})
		if err == nil {
			_, err = e.Log.Append(context.Background(), eventlog.Head{}, ev)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// start starts a governance plane with the env's stores, timers, signer
// and clock, as settings change them; it is stopped when the test ends,
// or by e.plane.Stop.
func (e *harness) start(t *testing.T, settings ...func(*governance.Config)) {
	t.Helper()
	ctx := context.Background()
	engine, err := policy.Load(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := governance.Config{Tasks: e.Tasks, Engine: engine, Tools: e.Tools, Requests: e.Requests, Timers: e.Timers, Signer: e.signer, Now: e.clock.Now, Policy: e.Policy}
	for _, s := range settings {
		s(&cfg)
	}
	p := governance.New(e.Log, e.Logger, cfg,
		governance.WithNotifier(func(_ context.Context, ap *stewardv1.Approval, _ time.Duration) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.reminded = append(e.reminded, ap.ApprovalId)
		}),
		governance.WithBudgetNotifier(func(_ context.Context, taskID string, a *stewardv1.BudgetAlerted) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.alerted = append(e.alerted, fmt.Sprintf("%s %s:%d", taskID, a.Dimension, a.Percent))
		}),
		governance.WithEvaluationHook(func() {
			if e.onEvaluate != nil {
				e.onEvaluate()
			}
		}))
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.plane = p
	var once sync.Once
	t.Cleanup(func() { once.Do(p.Stop) })
}

// redeliver stops the plane and starts another, settings as start takes
// them, on a new consumer: every event on the log is delivered again. It
// returns once the new plane has reacted to all of them.
func (e *harness) redeliver(t *testing.T, settings ...func(*governance.Config)) {
	t.Helper()
	e.plane.Stop()
	if err := e.JS.DeleteConsumer(context.Background(), e.Log.Config().Stream, governance.PlaneName); err != nil {
		t.Fatal(err)
	}
	e.start(t, settings...)
	e.Settle(governance.PlaneName)
}

// Settings of start.
func withoutSigner(c *governance.Config) { c.Signer = nil }
func credentialTTL(d time.Duration) func(*governance.Config) {
	return func(c *governance.Config) { c.CredentialTTL = d }
}

func (e *harness) notified() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.reminded...)
}

// counts returns how many events of each type the task has.
func (e *harness) counts(t *testing.T, taskID string) map[string]int {
	t.Helper()
	recs, err := e.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, r := range recs {
		n[r.Event.Type]++
	}
	return n
}

// waitCounts waits until ok holds of the task and the count of its
// events by type.
func (e *harness) waitCounts(t *testing.T, taskID string, ok func(map[string]int, *stewardv1.Task) bool) {
	t.Helper()
	e.WaitTask(taskID, func(tk *stewardv1.Task) bool { return ok(e.counts(t, taskID), tk) })
}

// create writes a task's creation, by principal, and its start.
func (e *harness) create(t *testing.T, taskID, principal string, c *stewardv1.TaskContract) {
	t.Helper()
	c.TaskId = taskID
	ev, err := event.New(event.Meta{ID: event.ID(taskID, event.TypeTaskCreated), TaskID: taskID, Actor: &stewardv1.Actor{Principal: principal, Plane: event.PlaneControl}}, &stewardv1.TaskCreated{Contract: c})
	if err == nil {
		_, err = e.Log.Append(context.Background(), eventlog.Head{}, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Append(taskID, &stewardv1.TaskStarted{})
}

func credContract(tools, scopes []string) *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent: "pay", DesiredOutcome: "paid", RequesterRef: "user:a", AccountableOwnerRef: "user:a",
		RiskTier: stewardv1.RiskTier_RISK_TIER_LOW, AllowedTools: tools, Scopes: scopes,
		Budget: &stewardv1.Budget{MaxTokens: 1000},
	}
}

// propose stores the canonical request of a call of tool and proposes it,
// as the control plane does.
func (e *harness) propose(t *testing.T, taskID, proposalID, tool string) string {
	t.Helper()
	return e.proposeAction(t, taskID, proposalID, tool, "", "agent", map[string]any{"n": 1})
}

// proposeCompensation proposes a search that undoes action of, as the
// control plane would (the test tool undoes with itself).
func (e *harness) proposeCompensation(t *testing.T, taskID, of, proposalID string) string {
	t.Helper()
	return e.proposeAction(t, taskID, proposalID, "search", of, "steward", map[string]any{"undo": of})
}

// proposeAction proposes as proposeWith does, with a rationale unless it
// is a compensation: the agent argues for its proposals, as the default
// bundle requires of a high-risk change (wire); Steward's compensations
// do not.
func (e *harness) proposeAction(t *testing.T, taskID, proposalID, tool, compensates, by string, params map[string]any) string {
	t.Helper()
	var rationale *stewardv1.ActionRationale
	if compensates == "" {
		rationale = &stewardv1.ActionRationale{ExpectedImpact: "moves money from acct:1", RollbackPlan: "none: ask for it back"}
	}
	return e.proposeWith(t, taskID, proposalID, tool, compensates, by, params, rationale)
}

// proposeWith proposes a call of tool with params, as the control plane
// records it; edits change the action before it is proposed.
func (e *harness) proposeWith(t *testing.T, taskID, proposalID, tool, compensates, by string, params map[string]any, rationale *stewardv1.ActionRationale, edits ...func(*stewardv1.Action)) string {
	t.Helper()
	var tc *stewardv1.ToolContract
	for _, c := range append([]*stewardv1.ToolContract{paidTool, askingTool, schemaWire, secretWire, modelCall}, credTools...) {
		if c.Name == tool {
			tc = c
		}
	}
	raw, _ := json.Marshal(params)
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: "acct:1", Params: raw})
	if err != nil {
		t.Fatal(err)
	}
	// As control records it: inline when small, else stored and named.
	var ref string
	var inline []byte
	hash := action.RequestHash(canonical)
	if action.Inline(len(canonical)) {
		inline = canonical
	} else if ref, _, err = e.Requests.Put(context.Background(), taskID, canonical); err != nil {
		t.Fatal(err)
	}
	id := action.ID(taskID, proposalID)
	a := &stewardv1.Action{
		ActionId: id, ProposalId: proposalID, Tool: tool, ToolVersion: "1", Target: "acct:1", EffectClass: tc.EffectClass,
		RequestRef: ref, Request: inline, RequestHash: hash, ActionHash: action.Hash(id, hash), OpKey: action.OpKey(taskID, id), ProposedBy: by, Compensates: compensates,
		Rationale: rationale,
	}
	for _, edit := range edits {
		edit(a)
	}
	ev := stewardtest.Event(t, taskID, &stewardv1.ActionProposed{Action: a})
	ev.TraceParent = e.traceParent
	e.AppendEvents(taskID, ev)
	return id
}

// used writes what execution records when a permitted action is claimed,
// dispatched once and fails transiently, then finds its permit used: the
// retry goes back to governance, after meanwhile.
func (e *harness) used(t *testing.T, taskID, actionID, permitID string, attempt uint32, meanwhile ...event.Payload) {
	t.Helper()
	e.Append(taskID,
		&stewardv1.ActionClaimed{ActionId: actionID, PermitId: permitID, Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: actionID, Attempt: attempt, Worker: "w1", PermitId: permitID},
		&stewardv1.ActionWaiting{ActionId: actionID, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.New(e.clock.Now()), NextAttempt: attempt + 1})
	e.Append(taskID, meanwhile...)
	e.Append(taskID, &stewardv1.ActionRevalidating{ActionId: actionID, PermitId: permitID, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY, Detail: "test"})
}

// waitStatus waits until the action reaches status and returns it.
func (e *harness) waitStatus(taskID, actionID string, status stewardv1.ActionStatus) *stewardv1.Action {
	return e.WaitAction(taskID, actionID, func(a *stewardv1.Action) bool { return a.GetStatus() == status })
}

// credentialed waits for taskID's credential.
func (e *harness) credentialed(taskID string) *stewardv1.CredentialState {
	return e.WaitTask(taskID, func(tk *stewardv1.Task) bool { return tk.Credential != nil }).Credential
}

// delegate writes a sub-task of parent as DelegateTask would: the chain
// names the delegate.
func (e *harness) delegate(t *testing.T, parent, child, delegate string, c *stewardv1.TaskContract) {
	t.Helper()
	pc := e.credentialed(parent).Credential
	c.ParentTaskId = parent
	c.DelegationChain = []*stewardv1.Delegation{{FromRef: pc.Principal, ToRef: delegate, CredentialRef: pc.CredentialId, DelegatedAt: timestamppb.New(e.clock.Now())}}
	e.create(t, child, "agent:parent", c)
}

func denialOf(a *stewardv1.Action) string { return a.GetOutcome().GetReason() }

func findAction(tk *stewardv1.Task, id string) *stewardv1.Action { return task.FindAction(tk, id) }

// snapshots counts the policy snapshots on the task's ledger: those
// recorded alone (PolicyEvaluated) and those recorded with their permit.
// alone is how many were recorded alone.
func (e *harness) snapshots(t *testing.T, taskID string) (all, alone int) {
	t.Helper()
	recs, err := e.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		switch {
		case r.Event.GetPolicyEvaluated() != nil:
			all++
			alone++
		case r.Event.GetActionPermitted().GetSnapshot() != nil:
			all++
		}
	}
	return all, alone
}
