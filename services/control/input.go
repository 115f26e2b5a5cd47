package control

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// OperatorRole may answer any task's question when tokens are in use.
const OperatorRole = access.Operator

// Limits on a question and its answer: a question is read by a person, and
// its choices are shown as buttons or a list, not as a document.
const (
	MaxChoices   = 32
	MaxChoiceLen = 256
)

// RequestInput is the agent asking for help: its running task waits for
// input with question, and the choices offered if any, until a person
// answers (ProvideInput) or resumes it. With ask_ref — the requester or
// the accountable owner, the fold checks — only they (or an operator) may
// answer. Only a running task may ask: one
// waiting for approval or settling an outcome has a person's attention
// already, and one stopped cannot ask anything. Who may ask is the agent
// (the role table, pkg/access, at the edge). With a request id it is idempotent (see claimRequestID).
func (p *Plane) RequestInput(ctx context.Context, principal string, req *stewardv1.RequestInputRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, err
	}
	if err := checkQuestion(req.Question, req.Choices); err != nil {
		return nil, err
	}
	if err := checkText("ask_ref", req.AskRef, MaxRefLen, false); err != nil {
		return nil, err
	}
	u, err := p.claimRequestID(ctx, principal, requestid.RequestInput, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	t, history, err := p.loadStarted(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	if id != "" && history.Has(id) {
		return t, nil // a retry of a question asked, whatever has happened since
	}
	return p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if cur.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
			return nil, errs.New(errs.FailedPrecondition, "task %s cannot ask for input: it is %s, and only a running task may ask", req.TaskId, task.StatusName(cur.Status))
		}
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(principal), CorrelationID: req.RequestId}, &stewardv1.TaskNeedsInput{
			Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: req.Question, Choices: req.Choices, AskRef: req.AskRef,
		})
	})
}

// ProvideInput records a person's answer to the task's open question, and
// the task runs again: an answer is a resume with words, so a task that
// waits for input for any cause — the agent's question, a loop guard, an
// escalated failure, the action cap — may be answered, as may one
// suspended because its question waited too long. The contract's
// requester or accountable owner may answer, and, when callers are
// authenticated, anyone with the operator role; once the question was
// escalated, its backup too; anyone else is PermissionDenied. A question that names whom it asks (ask_ref) is
// answered only by them or an operator (mayAnswerAsked). When the
// question offered choices, the answer must be one of them (the fold
// checks it, so a replay checks it too). With a request id it is
// idempotent (see claimRequestID).
func (p *Plane) ProvideInput(ctx context.Context, who rpc.Identity, req *stewardv1.ProvideInputRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, err
	}
	if err := checkText("answer", req.Answer, MaxTextLen, true); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Answer) == "" {
		return nil, errs.Field("answer", "is blank")
	}
	u, err := p.claimRequestID(ctx, who.Principal, requestid.ProvideInput, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	if t, history, err := p.tasks.Load(ctx, req.TaskId); err == nil && id != "" && history.Has(id) {
		return t, nil // a retry of an answer given
	}
	return p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if err := mayAnswer(cur, who); err != nil {
			return nil, err
		}
		if err := mayAnswerAsked(cur, who); err != nil {
			return nil, err
		}
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(who.Principal), CorrelationID: req.RequestId},
			&stewardv1.InputProvided{Answer: req.Answer})
	})
}

// mayAnswer refuses who unless they are t's requester or accountable
// owner, an authenticated operator, or the backup its open question was
// escalated to (inputladder.go).
func mayAnswer(t *stewardv1.Task, who rpc.Identity) error {
	c := t.Contract
	switch {
	case who.Principal == c.GetRequesterRef(), who.Principal == c.GetAccountableOwnerRef():
		return nil
	case who.Verified && who.HasRole(OperatorRole):
		return nil
	case isInputBackup(t, who):
		return nil
	}
	return errs.New(errs.PermissionDenied, "%s may not answer task %s: its requester %s, its accountable owner %s or an operator may%s",
		who.Principal, c.GetTaskId(), c.GetRequesterRef(), c.GetAccountableOwnerRef(), notYetBackup(t, who))
}

// mayAnswerAsked refuses who an answer to t's open question when it names
// someone else (ask_ref), unless who is an authenticated operator: the
// break-glass role answers any task's question. Resuming the task, which
// closes the question unanswered, stays with all who may answer it
// (mayResume): the asked one answers, the task's people steer. The
// backup the question was escalated to stands in for the one it asks.
func mayAnswerAsked(t *stewardv1.Task, who rpc.Identity) error {
	asked := t.OpenInput.GetAskRef()
	if asked == "" || who.Principal == asked || who.Verified && who.HasRole(OperatorRole) || isInputBackup(t, who) {
		return nil
	}
	return errs.New(errs.PermissionDenied, "%s may not answer task %s: its question is for %s; they or an operator may",
		who.Principal, t.Contract.GetTaskId(), asked)
}

// checkQuestion checks what an agent asks: a question a person can read,
// and choices that are few, short, non-blank and distinct.
func checkQuestion(question string, choices []string) error {
	if err := checkText("question", question, MaxTextLen, true); err != nil {
		return err
	}
	if strings.TrimSpace(question) == "" {
		return errs.Field("question", "is blank")
	}
	if len(choices) > MaxChoices {
		return &errs.Error{Code: errs.TooLarge, Field: "choices", Message: fmt.Sprintf("has %d entries; the limit is %d", len(choices), MaxChoices)}
	}
	seen := map[string]int{}
	for i, c := range choices {
		field := fmt.Sprintf("choices[%d]", i)
		if err := checkText(field, c, MaxChoiceLen, true); err != nil {
			return err
		}
		if strings.TrimSpace(c) == "" {
			return errs.Field(field, "is blank")
		}
		if j, ok := seen[c]; ok {
			return errs.Field(field, "%s repeats choices[%d]", errs.Quote(c), j)
		}
		seen[c] = i
	}
	return nil
}

func (s *taskService) RequestInput(ctx context.Context, req *connect.Request[stewardv1.RequestInputRequest]) (*connect.Response[stewardv1.RequestInputResponse], error) {
	t, err := s.plane.RequestInput(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RequestInputResponse{Task: t}), nil
}

func (s *taskService) ProvideInput(ctx context.Context, req *connect.Request[stewardv1.ProvideInputRequest]) (*connect.Response[stewardv1.ProvideInputResponse], error) {
	t, err := s.plane.ProvideInput(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ProvideInputResponse{Task: t}), nil
}
