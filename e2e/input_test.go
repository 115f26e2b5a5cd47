package e2e_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestInputRoundTrip runs the agent's exit against the real binary, with
// tokens: the agent asks a question with choices and its task waits;
// GetTask shows the question; nobody but the agent may ask, and nobody but
// the requester, the accountable owner or an operator may answer; an
// answer must be one of the choices; the owner's answer sets the task
// running again, and the timeline tells the question and the answer. A
// free question is then answered by an operator.
func TestInputRoundTrip(t *testing.T) {
	h := startSteward(t, setup{})
	ctx := context.Background()
	k := contract()
	k.AccountableOwnerRef = "user:owner"
	taskID := h.create(t, "input-round-trip", k)

	question := "Which region should the summary cover?"
	ask := &stewardv1.RequestInputRequest{TaskId: taskID, RequestId: "ask-1", Question: question, Choices: []string{"eu", "us"}}
	if _, err := h.viewer.tasks.RequestInput(ctx, connect.NewRequest(ask)); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("a question from someone else than the agent: %v, want permission_denied", err)
	}
	asked, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(ask))
	if err != nil {
		t.Fatal(err)
	}
	if asked.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
		t.Fatalf("after asking: %s (%s)", asked.Msg.Task.Status, asked.Msg.Task.StatusReason)
	}

	// GetTask shows the open question.
	tk := waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.OpenInput != nil, "no open question"
	})
	in := tk.OpenInput
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || in.Question != question || !slices.Equal(in.Choices, ask.Choices) ||
		in.AskedBy != "agent:summariser" || in.Cause != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED || in.AskedAt == nil {
		t.Fatalf("GetTask: %s, open input %v", tk.Status, in)
	}

	answer := func(who authed, requestID, a string) (*stewardv1.Task, error) {
		resp, err := who.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: taskID, RequestId: requestID, Answer: a}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Task, nil
	}
	// Someone else: refused, naming who may.
	_, err = answer(h.viewer, "", "eu")
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("an answer by user:cy: %v, want permission_denied", err)
	}
	saying(t, err, "user:cy", "user:owner", "operator")
	// Not one of the choices: refused, naming the field.
	_, err = answer(h.owner, "answer-1", "asia")
	if connect.CodeOf(err) != connect.CodeInvalidArgument || badRequestField(err) != "answer" {
		t.Fatalf("an answer not among the choices: %v, want invalid_argument naming answer", err)
	}
	// The owner's answer: the task runs again, the question is closed.
	after, err := answer(h.owner, "answer-1", "eu")
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || after.OpenInput != nil {
		t.Fatalf("after the answer: %s (%s), open input %v", after.Status, after.StatusReason, after.OpenInput)
	}
	waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.OpenInput == nil, "status " + tk.Status.String()
	})

	// A free question, answered by an operator.
	if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: taskID, Question: "Anything to leave out?"})); err != nil {
		t.Fatal(err)
	}
	if after, err = answer(h.operator, "", "leave out the test incidents"); err != nil || after.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("an operator's answer: %v, %v", after.GetStatus(), err)
	}

	// The timeline tells both questions and both answers, in words.
	tl, err := h.agent.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range tl.Msg.Entries {
		if e.Type == "task.needs_input" || e.Type == "task.input_provided" {
			said = append(said, e.Summary)
		}
	}
	want := [][]string{
		{"agent:summariser", question, `"eu", "us"`},
		{"user:owner", `answered "eu"`},
		{"agent:summariser", "Anything to leave out?"},
		{"user:ops", `answered "leave out the test incidents"`},
	}
	if len(said) != len(want) {
		t.Fatalf("timeline entries for questions and answers: %q", said)
	}
	for i, words := range want {
		for _, w := range words {
			if !strings.Contains(said[i], w) {
				t.Errorf("timeline entry %q does not say %q", said[i], w)
			}
		}
	}
}
