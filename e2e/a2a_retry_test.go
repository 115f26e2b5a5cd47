package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"

	stewarda2a "github.com/steward-run/steward/pkg/a2a"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestA2ARetriedMessages sends each message twice, as a client whose
// answer was lost retries it: the same messageId opens no second task,
// and an answer given again is the same answer, not a refusal (the task
// no longer waits once the first was taken).
func TestA2ARetriedMessages(t *testing.T) {
	h := startSteward(t, setup{inProcess: true, flags: []string{"--a2a-skills", a2aSkills}})
	ctx := context.Background()
	client := a2aClient(t, h.url, ownerToken)
	noWait := false
	open := &a2a.MessageSendParams{Message: textMessage("m-retry-open", "Is this alert mine?"),
		Metadata: map[string]any{"skill": "triage"}, Config: &a2a.MessageSendConfig{Blocking: &noWait}}
	first, err := client.SendMessage(ctx, open)
	if err != nil {
		t.Fatal(err)
	}
	again, err := client.SendMessage(ctx, open)
	if err != nil {
		t.Fatal(err)
	}
	task := first.(*a2a.Task)
	if again.(*a2a.Task).ID != task.ID || again.(*a2a.Task).ContextID != task.ContextID {
		t.Fatalf("a retried message opened %s in %s, the first %s in %s", again.(*a2a.Task).ID, again.(*a2a.Task).ContextID, task.ID, task.ContextID)
	}
	waitServed(t, h.agent.clients, string(task.ID), 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, tk.Status.String()
	})
	if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: string(task.ID), Question: "Which team?", RequestId: "ask-retry"})); err != nil {
		t.Fatal(err)
	}
	answer := &a2a.MessageSendParams{Message: &a2a.Message{ID: "m-retry-answer", Role: a2a.MessageRoleUser, TaskID: task.ID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: "Payments"}}}, Config: &a2a.MessageSendConfig{Blocking: &noWait}}
	for i := range 2 {
		got, err := client.SendMessage(ctx, answer)
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		if st := got.(*a2a.Task).Status.State; st != a2a.TaskStateWorking {
			t.Fatalf("answer %d: %s", i+1, st)
		}
	}
	// A new answer with another id to a task that waits on nothing is
	// still refused, naming the task.
	other := &a2a.MessageSendParams{Message: &a2a.Message{ID: "m-retry-other", Role: a2a.MessageRoleUser, TaskID: task.ID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: "Payments"}}}}
	if _, err := client.SendMessage(ctx, other); !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "message.taskId") {
		t.Fatalf("an answer to a task that waits on nothing: %v, want invalid params naming message.taskId", err)
	}
}

// TestA2AAnswerBoundsInlineContent: a task holding many artifacts, each
// small enough to send inline, is answered within a bound on all of them
// (a2a.MaxInlineAnswerBytes), the rest described, not with every byte of
// every artifact in one answer built in memory whole.
func TestA2AAnswerBoundsInlineContent(t *testing.T) {
	h := startSteward(t, setup{inProcess: true, flags: []string{"--a2a-skills", a2aSkills}})
	ctx := context.Background()
	noWait := false
	sent, err := a2aClient(t, h.url, ownerToken).SendMessage(ctx, &a2a.MessageSendParams{Message: textMessage("m-big", "Many artifacts"),
		Metadata: map[string]any{"skill": "triage"}, Config: &a2a.MessageSendConfig{Blocking: &noWait}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(sent.(*a2a.Task).ID)
	waitServed(t, h.agent.clients, id, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, tk.Status.String()
	})
	const n, each = 12, 500 << 10
	for i := range n {
		content := []byte(strings.Repeat(string(rune('a'+i)), each))
		if _, err := h.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{TaskId: id,
			Name: "part-" + string(rune('a'+i)) + ".txt", MediaType: "text/plain", Content: content})); err != nil {
			t.Fatal(err)
		}
	}
	got := postRPC(t, h.url, ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"`+id+`"}}`)
	if got.Error != nil {
		t.Fatalf("tasks/get: %+v", got.Error)
	}
	var task a2a.Task
	if err := json.Unmarshal(got.Result, &task); err != nil {
		t.Fatal(err)
	}
	inline, described := 0, 0
	for _, art := range task.Artifacts {
		switch p := art.Parts[0].(type) {
		case a2a.TextPart:
			inline += len(p.Text)
		case a2a.DataPart:
			described++
		}
	}
	if len(task.Artifacts) != n || inline > stewarda2a.MaxInlineAnswerBytes || described == 0 || inline == 0 {
		t.Fatalf("%d artifacts, %d bytes inline, %d described; want %d, at most %d inline", len(task.Artifacts), inline, described, n, stewarda2a.MaxInlineAnswerBytes)
	}
}
