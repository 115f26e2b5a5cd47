package e2e_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestProposeWithWaitAnswersInOneCall proposes with wait and gets, in that
// one call: a read's outcome; the same action again for the same proposal
// id, not a second one; an irreversible write's turn for a person
// (awaiting approval), at once; and, for a call the tool holds past the
// caller's deadline, the action as it stands before that deadline, not
// an error — and its outcome on a retry once the tool answers.
func TestProposeWithWaitAnswersInOneCall(t *testing.T) {
	tool := stewardtest.StartTool(t).Script("/search", stewardtest.OK, stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	h := startSteward(t, setup{tools: governedTools(tool), inProcess: true})
	taskID := governedTask(t, h.agent, "propose-wait")
	propose := func(ctx context.Context, proposalID, tool string, params map[string]any) *stewardv1.ProposeActionResponse {
		t.Helper()
		s, err := structpb.NewStruct(params)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: proposalID, Tool: tool, Target: "acct:42", Params: s, Rationale: argued, Wait: true,
		}))
		if err != nil {
			t.Fatalf("propose %s with wait: %v", proposalID, err)
		}
		return resp.Msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	read := propose(ctx, "read-1", "search", map[string]any{"q": "incidents"})
	if read.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || !read.Created ||
		read.TaskStatus != stewardv1.TaskStatus_TASK_STATUS_RUNNING || read.LastSequence == 0 {
		t.Fatalf("a read proposed with wait answered %v (created %v), task %v at %d; want its outcome", read.Action.Status, read.Created, read.TaskStatus, read.LastSequence)
	}
	again := propose(ctx, "read-1", "search", map[string]any{"q": "incidents"})
	if again.Created || again.Action.ActionId != read.Action.ActionId || again.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("the same proposal again answered %s %v (created %v), want %s succeeded", again.Action.ActionId, again.Action.Status, again.Created, read.Action.ActionId)
	}
	if n := tool.CallsTo("/search"); n != 1 {
		t.Fatalf("the tool got %d calls for one proposal made twice", n)
	}

	wire := propose(ctx, "wire-1", "wire", map[string]any{"amount": 5})
	if wire.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
		t.Fatalf("an irreversible write proposed with wait answered %v, want awaiting approval", wire.Action.Status)
	}

	// The tool holds the second read: a caller allowing 2 s gets the
	// action as it stands, in time.
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	start := time.Now()
	held := propose(short, "read-2", "search", map[string]any{"q": "held"})
	if took := time.Since(start); took >= 2*time.Second {
		t.Fatalf("a wait under a 2 s deadline answered after %s", took)
	}
	switch held.Action.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED, stewardv1.ActionStatus_ACTION_STATUS_CLAIMED, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
	default:
		t.Fatalf("a held call answered %v, want the action still moving", held.Action.Status)
	}
	tool.Release()
	done := propose(ctx, "read-2", "search", map[string]any{"q": "held"})
	if done.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || done.Action.ActionId != held.Action.ActionId {
		t.Fatalf("the held read, proposed again with wait, answered %s %v, want %s succeeded", done.Action.ActionId, done.Action.Status, held.Action.ActionId)
	}
}
