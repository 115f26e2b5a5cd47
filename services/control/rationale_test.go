package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestProposalRationale: the proposer's rationale is checked (each error
// naming rationale.<field>), recorded on the action, and left out of its
// hashes: the same call argued differently is the same action.
func TestProposalRationale(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	taskID := r.runningTask(t, "argued", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "x"
		}
		return out
	}
	for _, tt := range []struct {
		rationale *stewardv1.ActionRationale
		code      errs.Code
		field     string
	}{
		{&stewardv1.ActionRationale{ExpectedImpact: strings.Repeat("i", 4097)}, errs.TooLarge, "rationale.expected_impact"},
		{&stewardv1.ActionRationale{RollbackPlan: "\xff"}, errs.Invalid, "rationale.rollback_plan"},
		{&stewardv1.ActionRationale{Evidence: many(17)}, errs.TooLarge, "rationale.evidence"},
		{&stewardv1.ActionRationale{Evidence: []string{"ok", ""}}, errs.Invalid, "rationale.evidence[1]"},
		{&stewardv1.ActionRationale{Alternatives: many(9)}, errs.TooLarge, "rationale.alternatives"},
		{&stewardv1.ActionRationale{Alternatives: []string{strings.Repeat("a", 1025)}}, errs.TooLarge, "rationale.alternatives[0]"},
	} {
		_, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "p", Tool: "search", Rationale: tt.rationale})
		var e *errs.Error
		if !errs.Is(err, tt.code) || !errors.As(err, &e) || e.Field != tt.field {
			t.Errorf("rationale %v: %v, want %v naming %s", tt.rationale, err, tt.code, tt.field)
		}
	}
	argued := &stewardv1.ActionRationale{ExpectedImpact: "reads the index", RollbackPlan: "nothing to undo", Evidence: []string{"ticket:7"}, Alternatives: []string{"ask a person"}}
	a, created, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "p", Tool: "search", Rationale: argued})
	if err != nil || !created {
		t.Fatalf("argued proposal: created %v, %v", created, err)
	}
	if !proto.Equal(a.Rationale, argued) || !proto.Equal(task.FindAction(r.task(t, taskID), a.ActionId).Rationale, argued) {
		t.Fatalf("recorded rationale %v, want %v", a.Rationale, argued)
	}
	again, created, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "p", Tool: "search", Rationale: &stewardv1.ActionRationale{ExpectedImpact: "other words"}})
	if err != nil || created || again.ActionHash != a.ActionHash || !proto.Equal(again.Rationale, argued) {
		t.Fatalf("the same call argued otherwise: created %v, %v, %v; want the first action", created, err, again)
	}
}

// TestSeparatedAuthorizer: under separation of duties the contract may not
// name as its authorizer — who must approve its actions — the requester or
// the creator, whom governance refuses as approvers.
func TestSeparatedAuthorizer(t *testing.T) {
	r := idleHarness(t)
	for _, tt := range []struct {
		authorizer, creator, says string
	}{
		{"user:a", "agent", "is also the requester"},
		{"agent", "agent", "is creating the task"},
	} {
		req := validRequest("sod-" + tt.authorizer)
		req.Contract.SeparationOfDuties, req.Contract.AcceptanceOwnerRef, req.Contract.AuthorizerRef = true, "user:owner", tt.authorizer
		_, _, err := r.ctl.CreateTask(context.Background(), tt.creator, req)
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "contract.authorizer_ref" || !strings.Contains(e.Message, tt.says) {
			t.Errorf("authorizer %s, created by %s: %v; want contract.authorizer_ref refused, saying %q", tt.authorizer, tt.creator, err, tt.says)
		}
	}
	req := validRequest("sod-ok")
	req.Contract.SeparationOfDuties, req.Contract.AcceptanceOwnerRef, req.Contract.AuthorizerRef = true, "user:owner", "user:bo"
	if _, _, err := r.ctl.CreateTask(context.Background(), "agent", req); err != nil {
		t.Fatal(err)
	}
}
