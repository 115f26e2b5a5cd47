package governance_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

const (
	amend          = stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND
	personExecutes = stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES
)

// The tools the amendment tests register: a wire whose schema asks a
// positive amount, one with a secret parameter, and a model call that
// always asks a person.
var (
	schemaWire = &stewardv1.ToolContract{Name: "wire2", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
		DataSensitivity:  stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		ParametersSchema: `{"type":"object","required":["amount"],"properties":{"amount":{"type":"integer","minimum":1}}}`}
	secretWire = &stewardv1.ToolContract{Name: "wire3", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
		DataSensitivity:  stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		ParametersSchema: `{"type":"object","properties":{"pin":{"type":"string","writeOnly":true}}}`}
	modelCall = &stewardv1.ToolContract{Name: "chat", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, DefaultApproval: stewardv1.ApprovalRule_APPROVAL_RULE_ALWAYS,
		Endpoint: &stewardv1.ToolContract_Model{Model: &stewardv1.ModelEndpoint{BaseUrl: "http://127.0.0.1:1", Model: "m", Provider: "p"}}}
)

// decision is a DecideApprovalRequest for a's open approval.
func decision(a *stewardv1.Action, d stewardv1.ApprovalDecision, params map[string]any) *stewardv1.DecideApprovalRequest {
	req := &stewardv1.DecideApprovalRequest{ApprovalId: a.Approval.GetApprovalId(), ActionHash: a.ActionHash, Decision: d}
	if params != nil {
		req.AmendedParams, _ = structpb.NewStruct(params)
	}
	return req
}

// amendedProposal proposes, as the control plane does, the action the
// amendment of a's approval asks for.
func (e *harness) amendedProposal(t *testing.T, taskID string, orig *stewardv1.Action, ap *stewardv1.Approval) string {
	t.Helper()
	var params map[string]any
	if err := json.Unmarshal([]byte(ap.AmendedParamsJson), &params); err != nil {
		t.Fatal(err)
	}
	id := e.proposeWith(t, taskID, action.AmendmentID(ap.ApprovalId, []byte(ap.AmendedParamsJson)), orig.Tool, "", ap.DecidedBy, params, orig.Rationale,
		func(a *stewardv1.Action) { a.AmendmentOf = orig.ActionId })
	if id != ap.AmendedActionId {
		t.Fatalf("the amended action is %s, the approval names %s", id, ap.AmendedActionId)
	}
	return id
}

// TestDecideNamesTheBadField: what an answer to an approval may not be is
// refused as invalid, naming the field, and records nothing.
func TestDecideNamesTheBadField(t *testing.T) {
	e := newHarness(t)
	e.register(t, schemaWire, secretWire, modelCall)
	e.start(t, withBundle(t, twoForWires))
	e.create(t, "t", "user:ana", credContract([]string{"wire", "wire2", "wire3", "chat"}, []string{"payments:write"}))
	e.credentialed("t")
	two := e.waitStatus("t", e.propose(t, "t", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	schema := e.waitStatus("t", e.proposeAction(t, "t", "w2", "wire2", "", "agent", map[string]any{"amount": 5}), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	secret := e.waitStatus("t", e.proposeAction(t, "t", "w3", "wire3", "", "agent", map[string]any{"pin": "1234"}), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	chat := e.waitStatus("t", e.proposeAction(t, "t", "c1", "chat", "", "agent", map[string]any{"messages": []any{}}), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	for _, c := range []struct {
		name, field string
		req         *stewardv1.DecideApprovalRequest
	}{
		{"no decision", "decision", decision(schema, stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED, nil)},
		{"an unknown decision", "decision", decision(schema, stewardv1.ApprovalDecision(9), nil)},
		{"an amendment without parameters", "amended_params", decision(schema, amend, nil)},
		{"parameters with an approval", "amended_params", decision(schema, stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, map[string]any{"amount": 2})},
		{"parameters with a rejection", "amended_params", decision(schema, reject, map[string]any{"amount": 2})},
		{"parameters the schema refuses", "amended_params/amount", decision(schema, amend, map[string]any{"amount": 0})},
		{"a secret parameter", "amended_params", decision(secret, amend, map[string]any{"pin": "9999"})},
		{"the action's own parameters", "amended_params", decision(schema, amend, map[string]any{"amount": 5})},
		{"a model call", "decision", decision(chat, amend, map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}})},
		{"a person executes it, as the first of two approvals", "decision", decision(two, personExecutes, nil)},
	} {
		_, err := e.plane.Decide(context.Background(), authorizer("user:bo"), c.req)
		var fe *errs.Error
		if !errs.Is(err, errs.Invalid) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %v, want invalid naming %s", c.name, err, c.field)
		}
	}
	long := decision(schema, reject, nil)
	long.Comment = strings.Repeat("x", 4097)
	var fe *errs.Error
	if _, err := e.plane.Decide(context.Background(), authorizer("user:bo"), long); !errs.Is(err, errs.TooLarge) || !errors.As(err, &fe) || fe.Field != "comment" {
		t.Errorf("a comment past 4 KiB: %v, want too large naming comment", err)
	}
	if n := e.counts(t, "t")[event.TypeApprovalDecided]; n != 0 {
		t.Fatalf("refused answers recorded %d decisions", n)
	}
}

// awaitingWire starts a plane over a task that may call wire2, and
// returns it with a wire2 of 500, proposed by by, awaiting its approval.
func awaitingWire(t *testing.T, by string) (*harness, *stewardv1.Action) {
	t.Helper()
	e := newHarness(t)
	e.register(t, schemaWire)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire2"}, []string{"payments:write"}))
	e.credentialed("t")
	return e, e.waitStatus("t", e.proposeAction(t, "t", "w1", "wire2", "", by, map[string]any{"amount": 500}), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
}

// TestARetriedAmendmentRecordsOne: the same amendment sent eight times at
// once, as a client retrying after lost answers would, is answered with
// the same approval each time and recorded once; the approval names the
// amended action, the original is rejected naming it; another amendment
// after it is refused.
func TestARetriedAmendmentRecordsOne(t *testing.T) {
	e, orig := awaitingWire(t, "agent")

	var wg sync.WaitGroup
	answers := make([]*stewardv1.Approval, 8)
	fails := make([]error, 8)
	for i := range answers {
		wg.Go(func() {
			answers[i], fails[i] = e.plane.Decide(context.Background(), authorizer("user:bo"), decision(orig, amend, map[string]any{"amount": 50}))
		})
	}
	wg.Wait()
	for i, ap := range answers {
		if fails[i] != nil || ap.Decision != amend || ap.AmendedActionId == "" || ap.AmendedActionId != answers[0].AmendedActionId || ap.AmendedParamsJson != `{"amount":50}` {
			t.Fatalf("answer %d: %v, %v", i, ap, fails[i])
		}
	}
	if n := e.counts(t, "t")[event.TypeApprovalDecided]; n != 1 {
		t.Fatalf("%d decisions recorded, want 1", n)
	}
	a := e.waitStatus("t", orig.ActionId, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
	if a.AmendedAs != answers[0].AmendedActionId || !strings.Contains(a.Outcome.GetReason(), "amended by user:bo") || a.Permit != nil {
		t.Fatalf("the original: %v", a)
	}
	if _, err := e.plane.Decide(context.Background(), authorizer("user:bo"), decision(orig, amend, map[string]any{"amount": 60})); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a second amendment: %v, want failed precondition", err)
	}
}

// TestTheAmenderMayNotApproveTheAmendment: the amended action is judged
// afresh and waits for its own approval, which neither the approver who
// amended it nor the original's proposer may give — approve or answer
// that a person executes it — whatever roles they hold; a third approver
// may, and the permit follows.
func TestTheAmenderMayNotApproveTheAmendment(t *testing.T) {
	e, orig := awaitingWire(t, "user:cy")
	amended := e.amendedByBo(t, orig)
	admin := rpc.Identity{Principal: "user:bo", Roles: []string{"authorizer", "admin", "operator"}}
	for _, c := range []struct {
		who  rpc.Identity
		d    stewardv1.ApprovalDecision
		says string
	}{
		{admin, approve, "user:bo proposed action " + amended.ActionId},
		{admin, personExecutes, "user:bo proposed action " + amended.ActionId},
		{authorizer("user:cy"), approve, "the amendment"},
	} {
		if _, err := e.plane.Decide(context.Background(), c.who, decision(amended, c.d, nil)); !errs.Is(err, errs.PermissionDenied) || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("%s %v: %v, want permission denied saying %q", c.who.Principal, c.d, err, c.says)
		}
	}
	if _, err := e.plane.Decide(context.Background(), authorizer("user:di"), decision(amended, approve, nil)); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("t", amended.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
}

// TestAPersonExecutesItNoPermit: an approver's answer that a person does
// the work completes the approval, and no permit follows: the action
// waits, person executing, even when the decision is delivered again; the
// same answer again is answered with the approval.
func TestAPersonExecutesItNoPermit(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	wire := e.waitStatus("t", e.propose(t, "t", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	for range 2 {
		ap, err := e.plane.Decide(context.Background(), authorizer("user:bo"), decision(wire, personExecutes, nil))
		if err != nil || ap.Decision != personExecutes || ap.DecidedBy != "user:bo" {
			t.Fatalf("a person executes it: %v, %v", ap, err)
		}
	}
	e.redeliver(t)
	a := e.waitStatus("t", wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING)
	c := e.counts(t, "t")
	if a.Permit != nil || c[event.TypeActionPermitted] != 0 || c[event.TypeApprovalDecided] != 1 {
		t.Fatalf("a person's execution: %v, events %v", a, c)
	}
}

// amendedByBo is the action user:bo's amendment of orig (amount 50)
// proposes, once it waits for its own approval.
func (e *harness) amendedByBo(t *testing.T, orig *stewardv1.Action) *stewardv1.Action {
	t.Helper()
	ap, err := e.plane.Decide(context.Background(), authorizer("user:bo"), decision(orig, amend, map[string]any{"amount": 50}))
	if err != nil {
		t.Fatal(err)
	}
	return e.waitStatus("t", e.amendedProposal(t, "t", orig, ap), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
}
