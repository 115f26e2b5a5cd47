package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// CredentialWait bounds how long a new context task may take to get its
// credential, which its sub-task is delegated under.
const CredentialWait = 30 * time.Second

// send answers message/send: the task the message opened or answered, as
// it stands then, or once it ends or waits for the client again when the
// configuration asks to block.
func (h *Handler) send(ctx context.Context, c clients, caller string, raw json.RawMessage) (*a2a.Task, *rpcError) {
	taskID, rerr := h.deliver(ctx, c, caller, raw)
	if rerr != nil {
		return nil, rerr
	}
	var p a2a.MessageSendParams
	_ = json.Unmarshal(raw, &p) // deliver decoded it
	var last *stewardv1.Task
	err := c.follow(ctx, taskID, func(t *stewardv1.Task) (bool, error) {
		last = t
		blocking := p.Config != nil && p.Config.Blocking != nil && *p.Config.Blocking
		state, _ := stateOf(t)
		return !blocking || final(state), nil
	})
	if err != nil {
		return nil, fromAPI(err)
	}
	return c.viewed(ctx, last)
}

// deliver acts on a message and returns the task it concerns. A message
// naming a task answers the question it waits on (ProvideInput). Any other
// opens a task under the skill it names (metadata "skill", which may be
// left out when the card has one skill) in a new context: a task the
// caller creates with the skill's contract, from which the task is
// delegated to the skill's agent.
// The message id makes each call safe to retry.
func (h *Handler) deliver(ctx context.Context, c clients, caller string, raw json.RawMessage) (string, *rpcError) {
	var p a2a.MessageSendParams
	if rerr := params(raw, &p); rerr != nil {
		return "", rerr
	}
	text, rerr := checkMessage(p.Message)
	if rerr != nil {
		return "", rerr
	}
	m := p.Message
	if m.TaskID != "" {
		return h.answer(ctx, c, m, text)
	}
	skill, rerr := h.skillOf(p)
	if rerr != nil {
		return "", rerr
	}
	if m.ContextID != "" {
		// One task per context: the skill's contract, budget included, is
		// the task's, and a second skill's would have to be handed on
		// from a context made for the first.
		return "", invalidParams("message.contextId", "a context holds one task: leave contextId out to open a task in a new context, or name the task (taskId) to answer it")
	}
	k := skill.contractFor(caller, text)
	created, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "a2a-context-" + m.ID, Contract: holder(k)}))
	if err != nil {
		return "", fromAPI(err)
	}
	contextID := created.Msg.Task.GetContract().GetTaskId()
	if err := c.credentialed(ctx, contextID); err != nil {
		return "", fromAPI(err)
	}
	sub, err := c.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: contextID, Contract: delegated(k), DelegateRef: skill.Agent, RequestId: "a2a-" + m.ID}))
	if err != nil {
		return "", fromAPI(err)
	}
	return sub.Msg.Task.GetContract().GetTaskId(), nil
}

// answer gives the text of m as the answer to the question its task waits
// on. A task that waits on none takes no message.
func (h *Handler) answer(ctx context.Context, c clients, m *a2a.Message, text string) (string, *rpcError) {
	got, err := c.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: string(m.TaskID)}))
	if err != nil {
		rerr := fromAPI(err)
		if rerr.Code == codeTaskNotFound || rerr.Code == codeInvalidParams {
			rerr.Data = map[string]any{"field": "message.taskId"}
		}
		return "", rerr
	}
	t := got.Msg.Task
	if m.ContextID != "" && m.ContextID != contextOf(t) {
		return "", invalidParams("message.contextId", "task %s is in context %s, not %s", m.TaskID, contextOf(t), m.ContextID)
	}
	// A task that waits on nothing may have taken this very message
	// already (a retry whose answer was lost): ProvideInput says so by
	// its request id, and refuses any other message.
	_, err = c.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: string(m.TaskID), Answer: text, RequestId: "a2a-" + m.ID}))
	if err != nil && t.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
		state, _ := stateOf(t)
		return "", invalidParams("message.taskId", "task %s is %s: a message to a task answers the question it waits on, and it waits on none", m.TaskID, state)
	}
	if err != nil {
		return "", fromAPI(err)
	}
	return string(m.TaskID), nil
}

// checkMessage refuses a message Steward cannot take and returns its
// text: a user's message with an id and text parts only (a task's intent
// and an answer are text).
func checkMessage(m *a2a.Message) (string, *rpcError) {
	switch {
	case m == nil:
		return "", invalidParams("message", "is required")
	case m.ID == "":
		return "", invalidParams("message.messageId", "is required: it makes the call safe to retry")
	case m.Role != a2a.MessageRoleUser:
		return "", invalidParams("message.role", "must be %q, not %q", a2a.MessageRoleUser, m.Role)
	case len(m.Parts) == 0:
		return "", invalidParams("message.parts", "is required: the text of the request or answer")
	}
	var text []string
	for i, part := range m.Parts {
		p, ok := part.(a2a.TextPart)
		if !ok {
			return "", invalidParams(fmt.Sprintf("message.parts[%d]", i), "only text parts are taken: a file or data part has no place in a task's contract or an answer")
		}
		text = append(text, p.Text)
	}
	joined := strings.TrimSpace(strings.Join(text, "\n"))
	if joined == "" {
		return "", invalidParams("message.parts", "hold no text")
	}
	return joined, nil
}

// skillOf is the skill a message asks for.
func (h *Handler) skillOf(p a2a.MessageSendParams) (Skill, *rpcError) {
	id, field := p.Metadata["skill"], "metadata.skill"
	if id == nil {
		id, field = p.Message.Metadata["skill"], "message.metadata.skill"
	}
	if id == nil && len(h.skills) == 1 {
		return h.cfg.Skills[0], nil
	}
	name, _ := id.(string)
	if s, ok := h.skills[name]; ok {
		return s, nil
	}
	ids := make([]string, 0, len(h.skills))
	for id := range h.skills {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	if id == nil {
		return Skill{}, invalidParams("metadata.skill", "is required: one of the card's skills (%s)", strings.Join(ids, ", "))
	}
	return Skill{}, invalidParams(field, "%v is not a skill of this agent (%s)", id, strings.Join(ids, ", "))
}

// credentialed waits until the task holds its credential, which governance
// issues once it sees the task created, for at most CredentialWait.
func (c clients) credentialed(ctx context.Context, taskID string) error {
	ctx, cancel := context.WithTimeout(ctx, CredentialWait)
	defer cancel()
	err := c.follow(ctx, taskID, func(t *stewardv1.Task) (bool, error) {
		return t.GetCredential().GetCredential() != nil, nil
	})
	if ctx.Err() == context.DeadlineExceeded {
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf("task %s got no credential within %s: is the governance plane running?", taskID, CredentialWait))
	}
	return err
}
