package content_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/content"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// keyed stands for secret.Sealer.Digest.
func keyed(taskID, hash string) string { return "hmac-sha256:" + taskID + ":" + hash[:4] }

// compensated is a task whose compensation quotes a result, awaiting an
// authorizer, beside a plan step's result and an artifact.
func compensated() *stewardv1.Task {
	return &stewardv1.Task{
		Contract: &stewardv1.TaskContract{TaskId: "t1"},
		Actions: []*stewardv1.Action{
			{ActionId: "a1", Outcome: &stewardv1.Outcome{Result: []byte(`{"ok":"R3SULT"}`), ResultHash: "aaaa1111", ResultRef: ""}},
			{ActionId: "a2", Compensates: "a1", ProposalId: "plan-x-1-bbbb2222", Request: []byte(`{"result":{"ok":"R3SULT"}}`), RequestHash: "bbbb2222", ActionHash: "cccc3333",
				Approval: &stewardv1.Approval{TaskId: "t1", RequiredRoles: []string{"authorizer"}, ParametersJson: `{"result":{"ok":"R3SULT"}}`, ActionHash: "cccc3333",
					AmendedParamsJson: `{"amount":"4MEND"}`, RequestSigned: &stewardv1.SignedEvent{Payload: []byte(`{"ok":"R3SULT"} cccc3333`)}},
				Permit: &stewardv1.ActionPermit{ActionHash: "cccc3333", RequestHash: "bbbb2222"}, SignedPermit: &stewardv1.SignedPermit{Permit: []byte("cccc3333")},
				Snapshot: &stewardv1.PolicySnapshot{InputHash: "eeee5555"}, SnapshotSigned: &stewardv1.SignedEvent{Payload: []byte("eeee5555")}},
		},
		Plan:       &stewardv1.PlanState{Steps: []*stewardv1.PlanStepState{{StepId: "ask", Result: structpb.NewStringValue("R3SULT")}}},
		Artifacts:  []*stewardv1.Artifact{{Name: "r", Uri: content.StoredPrefix + "dddd4444", Sha256: "dddd4444"}},
		Milestones: []*stewardv1.MilestoneState{{MilestoneId: "m1", Note: "PR0GRESS"}},
		Acceptance: []*stewardv1.AcceptanceRound{{Round: 1, Report: said()}},
	}
}

// said is an execution report whose every word quotes a result.
func said() *stewardv1.ExecutionReport {
	return &stewardv1.ExecutionReport{Summary: "R3SULT", LeftOpen: []string{"R3SULT"},
		Steps:      []*stewardv1.ReportStep{{Description: "R3SULT", ActionIds: []string{"a1"}, Artifacts: []string{"r@1"}}},
		Deviations: []*stewardv1.ReportDeviation{{PlanStepId: "ask", What: "R3SULT", Why: "R3SULT"}}}
}

// TestBlindReport: an execution report's words are blank to a caller who
// may not read the task's content, wherever it is shown — a receipt, its
// rounds, a TaskProduced event — and its references stay.
func TestBlindReport(t *testing.T) {
	r := &stewardv1.Receipt{TaskId: "t1", AgentReport: said(), AcceptanceRounds: []*stewardv1.AcceptanceRound{{Report: said()}}}
	b := content.Blind{Digest: keyed}
	b.Receipt(r)
	ev := b.Event(&stewardv1.Event{TaskId: "t1", Payload: &stewardv1.Event_TaskProduced{TaskProduced: &stewardv1.TaskProduced{Report: said()}}})
	for _, rep := range []*stewardv1.ExecutionReport{r.AgentReport, r.AcceptanceRounds[0].Report, ev.GetTaskProduced().Report} {
		js, err := protojson.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(js), "R3SULT") || rep.Steps[0].ActionIds[0] != "a1" || rep.Steps[0].Artifacts[0] != "r@1" || rep.Deviations[0].PlanStepId != "ask" {
			t.Errorf("blinded report: %s", js)
		}
	}
}

func TestBlind(t *testing.T) {
	for _, tt := range []struct {
		who   string
		roles []string
		// shows are what the caller's copy must still hold; hides what it
		// must not.
		shows, hides []string
	}{
		{"a stranger", nil, []string{"hmac-sha256:t1:aaaa", "hmac-sha256:t1:bbbb", "plan-x-1-hmac-sha256:t1:bbbb", "hmac-sha256:t1:dddd", "hmac-sha256:t1:eeee"},
			[]string{"R3SULT", "4MEND", "aaaa1111", "bbbb2222", "cccc3333", "dddd4444", "eeee5555", "PR0GRESS"}},
		{"the approver", []string{"authorizer"}, []string{"R3SULT", "4MEND", "bbbb2222", "cccc3333", "eeee5555", "hmac-sha256:t1:aaaa"},
			[]string{"aaaa1111", "dddd4444", "PR0GRESS"}},
	} {
		x := compensated()
		content.Blind{Digest: keyed, Roles: tt.roles}.Task(x)
		js, err := protojson.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		a := x.Actions[1]
		// Signed bytes, which protojson shows in base64, as they are.
		shown := string(js) + string(a.GetRequest()) + string(a.GetSignedPermit().GetPermit()) + string(a.GetApproval().GetRequestSigned().GetPayload()) + string(a.GetSnapshotSigned().GetPayload())
		for _, s := range tt.shows {
			if !strings.Contains(shown, s) {
				t.Errorf("%s is not shown %q: %s", tt.who, s, shown)
			}
		}
		for _, s := range tt.hides {
			if strings.Contains(shown, s) {
				t.Errorf("%s is shown %q: %s", tt.who, s, shown)
			}
		}
	}
	// Without a key the digests are hidden, not shown plain.
	x := compensated()
	content.Blind{}.Task(x)
	if h := x.Actions[0].Outcome.ResultHash + x.Actions[1].RequestHash + x.Artifacts[0].Sha256; h != "" {
		t.Errorf("without a key the digests are %q, want none", h)
	}
}

// TestBlindKeysEachHashOnce: an action's request and action hashes recur
// (its proposal id, permit and approval quote them), and each is keyed
// once: a list of many tasks costs an HMAC per hash, not per place.
func TestBlindKeysEachHashOnce(t *testing.T) {
	calls := map[string]int{}
	counted := func(taskID, hash string) string { calls[hash]++; return keyed(taskID, hash) }
	content.Blind{Digest: counted}.Task(compensated())
	for hash, n := range calls {
		if n != 1 {
			t.Errorf("%s is keyed %d times, want once", hash, n)
		}
	}
}

func TestNamed(t *testing.T) {
	parent := content.Parties{TaskID: "p", Principals: []string{"user:ana"}}
	child := content.PartiesOf(&stewardv1.Task{CreatedBy: "agent:sub", Contract: &stewardv1.TaskContract{TaskId: "c", ParentTaskId: "p", RequesterRef: "user:bo"}})
	up := func(id string) (content.Parties, bool) { return parent, id == "p" }
	for who, want := range map[string]bool{"agent:sub": true, "user:bo": true, "user:ana": true, "user:eve": false} {
		if got := content.Named(who, child, up); got != want {
			t.Errorf("Named(%s) = %v, want %v", who, got, want)
		}
	}
	if content.Named("agent:sub", parent, up) {
		t.Error("a sub-task's agent reads its parent's content")
	}
}

func ExampleBlind() {
	t := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "t1"}, Actions: []*stewardv1.Action{
		{ActionId: "a1", Outcome: &stewardv1.Outcome{Result: []byte(`{"approved":true}`), ResultHash: "5f1e0c2a"}},
	}}
	content.Blind{Digest: func(taskID, hash string) string { return "hmac-sha256:…" }}.Task(t)
	fmt.Printf("%q %s\n", t.Actions[0].Outcome.Result, t.Actions[0].Outcome.ResultHash)
	// Output: "" hmac-sha256:…
}

// TestBlindMilestoneNote: what the agent wrote of a milestone's progress
// is blank in its event to a caller who may not read the task's content,
// and the event on the log is left as it is; the milestone and percent stay.
func TestBlindMilestoneNote(t *testing.T) {
	ev := &stewardv1.Event{TaskId: "t1", Payload: &stewardv1.Event_MilestoneProgressed{MilestoneProgressed: &stewardv1.MilestoneProgressed{MilestoneId: "m1", Percent: 40, Note: "PR0GRESS"}}}
	shown := content.Blind{Digest: keyed}.Event(ev).GetMilestoneProgressed()
	if shown.Note != "" || shown.MilestoneId != "m1" || shown.Percent != 40 {
		t.Errorf("blinded progress: %v", shown)
	}
	if ev.GetMilestoneProgressed().Note != "PR0GRESS" {
		t.Error("the log's event was changed")
	}
}
