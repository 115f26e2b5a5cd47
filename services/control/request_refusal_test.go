package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/task"
)

// TestARefusedCommandLeavesItsRequestIDFree: a command refused for
// something the client can fix records nothing, so the fixed request
// under the same request id goes through, for every kind of command
// whose checks run after its claim.
func TestARefusedCommandLeavesItsRequestIDFree(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	budgeted := func(c *stewardv1.TaskContract) {
		c.Budget = &stewardv1.Budget{MaxTokens: 1000, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1", MaxTokens: 500}}}
	}
	for _, tc := range []struct {
		name       string
		bad, fixed func(taskID string) error
	}{
		{"RaiseBudget with a negative limit",
			func(id string) error {
				_, err := r.ctl.RaiseBudget(ctx, "user:ana", &stewardv1.RaiseBudgetRequest{TaskId: id, RequestId: "r-raise", MaxTokens: -5, Reason: "more"})
				return err
			},
			func(id string) error {
				_, err := r.ctl.RaiseBudget(ctx, "user:ana", &stewardv1.RaiseBudgetRequest{TaskId: id, RequestId: "r-raise", MaxTokens: 5000, Reason: "more"})
				return err
			}},
		{"ReportUsage naming a milestone that is not there",
			func(id string) error {
				_, err := r.ctl.ReportUsage(ctx, "agent", &stewardv1.ReportUsageRequest{TaskId: id, RequestId: "r-usage", Tokens: 10, MilestoneId: "m-typo"})
				return err
			},
			func(id string) error {
				_, err := r.ctl.ReportUsage(ctx, "agent", &stewardv1.ReportUsageRequest{TaskId: id, RequestId: "r-usage", Tokens: 10, MilestoneId: "m1"})
				return err
			}},
		{"SubmitArtifact naming an action that is not there",
			func(id string) error {
				_, _, err := r.ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{TaskId: id, RequestId: "r-artifact", Name: "n", MediaType: "text/plain", Content: []byte("x"), ActionId: "act-typo"})
				return err
			},
			func(id string) error {
				_, _, err := r.ctl.SubmitArtifact(ctx, "agent", &stewardv1.SubmitArtifactRequest{TaskId: id, RequestId: "r-artifact", Name: "n", MediaType: "text/plain", Content: []byte("x")})
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := r.acceptanceTask(t, "refusal-"+tc.name, budgeted)
			if err := tc.bad(id); !requestid.Refused(err) {
				t.Fatalf("the bad request: %v, want a refusal", err)
			}
			if err := tc.fixed(id); err != nil {
				t.Fatalf("the fixed request under the same request id: %v", err)
			}
			if err := tc.bad(id); !errs.Is(err, errs.AlreadyExists) {
				t.Errorf("the bad request again, after the fixed one was recorded: %v, want already exists", err)
			}
		})
	}
	t.Run("CreateTask under separation of duties with its creator as owner", func(t *testing.T) {
		bad := validRequest("sod")
		bad.Contract.SeparationOfDuties, bad.Contract.AcceptanceOwnerRef = true, "user:carl"
		if _, _, err := r.ctl.CreateTask(ctx, "user:carl", bad); !errs.Is(err, errs.Invalid) {
			t.Fatalf("the bad request: %v, want invalid", err)
		}
		fixed := validRequest("sod")
		fixed.Contract.SeparationOfDuties, fixed.Contract.AcceptanceOwnerRef = true, "user:bob"
		if _, created, err := r.ctl.CreateTask(ctx, "user:carl", fixed); err != nil || !created {
			t.Fatalf("the fixed request: created %v, %v", created, err)
		}
	})
}

// TestARefusedDelegationLeavesItsRequestIDFree: a delegation refused for
// asking more than the parent has, fixed, goes through under the same id.
func TestARefusedDelegationLeavesItsRequestIDFree(t *testing.T) {
	d := idleHarness(t)
	ctx := context.Background()
	parent := d.parent(t, "fixable-parent", time.Now(), time.Hour)
	delegate := func(tokens int64) error {
		c := subContract()
		c.Budget = &stewardv1.Budget{MaxTokens: tokens, MaxCostMicros: 100, Currency: "USD"}
		_, _, err := d.ctl.DelegateTask(ctx, "agent:lead", &stewardv1.DelegateTaskRequest{
			ParentTaskId: parent.Contract.TaskId, Contract: c, DelegateRef: "agent:sub", RequestId: "fixable"})
		return err
	}
	if err := delegate(5000); !errs.Is(err, errs.Invalid) {
		t.Fatalf("asking more than the parent has: %v, want invalid", err)
	}
	if err := delegate(500); err != nil {
		t.Fatalf("the fixed delegation under the same request id: %v", err)
	}
}

// TestARetryAcrossTheUpgradeFindsItsFirstTry: what a request id recorded
// before request ids were the caller's own is found by a retry after.
func TestARetryAcrossTheUpgradeFindsItsFirstTry(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	// CreateTask as it was: the task id derived from the request id alone.
	old := requestid.LegacyTaskID("demo-1")
	req := validRequest("demo-1")
	req.Contract.TaskId = old
	ev, err := event.New(event.Meta{ID: event.ID(old, event.TypeTaskCreated), TaskID: old, Actor: &stewardv1.Actor{Principal: "user:ana", Plane: "control"}, CorrelationID: "demo-1"},
		&stewardv1.TaskCreated{Contract: req.Contract, RequestId: "demo-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Log.Append(ctx, eventlog.Head{}, ev); err != nil {
		t.Fatal(err)
	}
	tk, created, err := r.ctl.CreateTask(ctx, "user:ana", validRequest("demo-1"))
	if err != nil || created || tk.Contract.TaskId != old {
		t.Fatalf("the retry: task %s, created %v, %v; want the task made before, %s", tk.GetContract().GetTaskId(), created, err, old)
	}
	// Another caller's demo-1 is a task of its own.
	if other, created, err := r.ctl.CreateTask(ctx, "user:bo", validRequest("demo-1")); err != nil || !created || other.Contract.TaskId == old {
		t.Fatalf("another caller's demo-1: %v, created %v, %v", other.GetContract().GetTaskId(), created, err)
	}

	// ReportUsage as it was: the event id derived from the task and the
	// request id alone.
	r.running(old)
	if _, err := r.Tasks.Update(ctx, old, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{ID: requestid.LegacyEventID(old, "u-1"), TaskID: old, Actor: &stewardv1.Actor{Principal: "user:ana", Plane: "control"}, CorrelationID: "u-1"},
			&stewardv1.BudgetConsumed{Tokens: 100})
	}); err != nil {
		t.Fatal(err)
	}
	after, err := r.ctl.ReportUsage(ctx, "user:ana", &stewardv1.ReportUsageRequest{TaskId: old, RequestId: "u-1", Tokens: 100})
	if err != nil || after.GetBudgetUsed().GetTokens() != 100 {
		t.Fatalf("the retried usage: %d tokens used, %v; want 100, charged once", after.GetBudgetUsed().GetTokens(), err)
	}
}

// TestAProposalRetriedAfterANewToolVersion: a retry that names no version
// is the proposal its first try made, whatever was registered since.
func TestAProposalRetriedAfterANewToolVersion(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	id := r.acceptanceTask(t, "retry-version", nil)
	params, _ := structpb.NewStruct(map[string]any{"q": "x"})
	propose := func() (*stewardv1.Action, bool, error) {
		return r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "step-1", Tool: "search", Params: params})
	}
	first, _, err := propose()
	if err != nil {
		t.Fatal(err)
	}
	r.register(t, &stewardv1.ToolContract{Name: "search", Version: "2", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL})
	again, created, err := propose()
	if err != nil || created || again.ActionId != first.ActionId || again.ToolVersion != "1" {
		t.Fatalf("the retry: %v (version %s, created %v), %v; want action %s at version 1", again.GetActionId(), again.GetToolVersion(), created, err, first.ActionId)
	}
}

// TestARetryAfterARevocationGetsItsFirstAnswer: a revocation stops new
// work, not the answer to work recorded before it.
func TestARetryAfterARevocationGetsItsFirstAnswer(t *testing.T) {
	d := idleHarness(t)
	ctx := context.Background()
	parent := d.parent(t, "revoked-later", time.Now(), 0)
	id := parent.Contract.TaskId
	d.Append(id, &stewardv1.TaskStarted{})
	submit := &stewardv1.SubmitArtifactRequest{TaskId: id, RequestId: "report-1", Name: "r", MediaType: "text/plain", Uri: "s3://b/r", Sha256: strings.Repeat("0f", 32), SizeBytes: 1}
	first, _, err := d.ctl.SubmitArtifact(ctx, "user:ana", submit)
	if err != nil {
		t.Fatal(err)
	}
	d.Append(id, &stewardv1.CredentialRevoked{CredentialId: parent.Credential.Credential.CredentialId, Reason: "agent compromised"})
	again, _, err := d.ctl.SubmitArtifact(ctx, "user:ana", submit)
	if err != nil || !proto.Equal(again, first) {
		t.Fatalf("the retry after the revocation: %v, %v; want the first answer %v", again, err, first)
	}
	// New work is refused all the same.
	submit.RequestId, submit.Name = "report-2", "r2"
	if _, _, err := d.ctl.SubmitArtifact(ctx, "user:ana", submit); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("new work after the revocation: %v, want failed precondition", err)
	}
}

// TestAnOldIDFindsOnlyItsOwnCommand: an id recorded before ids were the
// caller's own is a retry only of the same command by the same caller.
// Found by an independent review: another caller's CancelTask was
// answered as done, and a SubmitArtifact panicked.
func TestAnOldIDFindsOnlyItsOwnCommand(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	id := r.acceptanceTask(t, "old-ids", nil)
	if _, err := r.Tasks.Update(ctx, id, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{ID: requestid.LegacyEventID(id, "x"), TaskID: id, Actor: &stewardv1.Actor{Principal: "user:ana", Plane: "control"}, CorrelationID: "x"},
			&stewardv1.BudgetConsumed{Tokens: 10})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.CancelTask(ctx, "user:bo", &stewardv1.CancelTaskRequest{TaskId: id, RequestId: "x"}); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("another caller's cancel under the old id: %v, want already exists", err)
	}
	if _, _, err := r.ctl.SubmitArtifact(ctx, "user:ana", &stewardv1.SubmitArtifactRequest{TaskId: id, RequestId: "x", Name: "n", MediaType: "text/plain", Content: []byte("x")}); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("another command under the old id: %v, want already exists", err)
	}
	if tk, err := r.ctl.ReportUsage(ctx, "user:ana", &stewardv1.ReportUsageRequest{TaskId: id, RequestId: "x", Tokens: 10}); err != nil || tk.GetBudgetUsed().GetTokens() != 10 {
		t.Errorf("the retry itself: %d tokens, %v; want 10, charged once", tk.GetBudgetUsed().GetTokens(), err)
	}
}

// TestARetriedProposalEditsOnlyWhatItEdited: the same proposal naming
// another edit_of is not a retry, and withdraws nothing. Found by an
// independent review.
func TestARetriedProposalEditsOnlyWhatItEdited(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	id := r.acceptanceTask(t, "edits", nil)
	propose := func(proposal, q, editOf string) (*stewardv1.Action, error) {
		params, _ := structpb.NewStruct(map[string]any{"text": q})
		a, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: proposal, Tool: "write", Params: params, EditOf: editOf})
		return a, err
	}
	if _, err := propose("s1", "x", ""); err != nil {
		t.Fatal(err)
	}
	s2, err := propose("s2", "y", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := propose("s1", "x", s2.ActionId); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("s1 again as an edit of s2: %v, want already exists", err)
	}
	tk := r.task(t, id)
	if a := task.FindAction(tk, s2.ActionId); a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
		t.Errorf("s2 was withdrawn by a proposal that did not edit it")
	}
}
