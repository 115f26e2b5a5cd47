package e2e_test

import (
	"context"
	"fmt"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// hostile is text an agent might send to make the console run it, draw
// a button of its own, or fake a receipt's columns.
const (
	hostileImg    = `<img src=x onerror="document.title='pwned'">`
	hostileButton = `</pre><button data-do=approve>`
	// A target that, split on every "|", would say the wire succeeded and
	// was approved; and a right-to-left override that would reverse what
	// follows it on screen.
	hostileTarget = "acct-9 | succeeded | 1 | inline | approved by user:cfo \u202Eacct:42"
)

// TestConsoleShowsHostileContentAsText: an intent, a target, parameters,
// a rationale and a question holding markup are shown as the characters
// they are, on the inbox, the task page and its receipt: no element of
// theirs appears (no <img>, no second approve button), a "|" in a target
// does not make a receipt column (the Status cell says what the ledger
// says), and a bidi override is shown as an escape, \u202E, not obeyed.
// The task page shows an approval's facts above its decision form.
func TestConsoleShowsHostileContentAsText(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()
	b := browser(t)
	k := contract()
	k.AllowedTools, k.AuthorizerRef, k.Intent = []string{"search", "wire"}, "user:bo", "Pay "+hostileImg+hostileButton
	created, err := h.agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "hostile-1", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := created.Msg.Task.Contract.TaskId
	waitStarted(t, h.agent.clients, taskID)
	params, _ := structpb.NewStruct(map[string]any{"amount": 500, "note": hostileImg + hostileButton})
	resp, err := h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "wire-1", Tool: "wire", Target: hostileTarget, Params: params,
		Rationale: &stewardv1.ActionRationale{ExpectedImpact: "moves " + hostileImg, RollbackPlan: hostileButton + " none", Evidence: []string{"ticket:INC-7"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, wire := waitAction(t, h.agent.clients, taskID, resp.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	asking := h.create(t, "hostile-ask", contract())
	if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{
		TaskId: asking, Question: "Go on? " + hostileImg + hostileButton, RequestId: "ask-1"})); err != nil {
		t.Fatal(err)
	}
	card := sel("data-approval-id", wire.Approval.ApprovalId)
	// Nothing of theirs is an element, and their text is shown as typed.
	inert := fmt.Sprintf(`document.querySelectorAll('img, [onerror]').length === 0 && document.title !== 'pwned' &&
		document.querySelectorAll('[data-do="approve"]').length === 1 && !!document.querySelector('%s form.decide [data-do="approve"]') &&
		document.body.innerText.includes(%q) && document.body.innerText.includes(%q) &&
		document.body.innerText.includes('\\u202E') && !document.body.innerText.includes('\u202E')`, card, hostileImg, hostileButton)

	bo := openConsole(t, b, h.url, approverToken)
	bo.goTo("#/inbox")
	bo.until(fmt.Sprintf(`!!document.querySelector('%s [data-params]') && !!document.querySelector('[data-question-task=%q]')`, card, asking))
	bo.until(inert)
	bo.accessible("the inbox with hostile content")

	bo.goTo("#/task/" + taskID)
	bo.until(fmt.Sprintf(`!!document.querySelector('#waiting %s [data-params]') && !!document.querySelector('#receipt [data-call-status]')`, card))
	bo.until(inert)
	// The approval's facts (parameters, rationale, reasons) come before its buttons, as in the inbox.
	bo.until(fmt.Sprintf(`(w => !!w && w.innerText.includes('Expected impact') && w.innerText.includes('Rollback plan') && w.querySelector('[data-params]').textContent.includes('"amount": 500') &&
		(w.querySelector('[data-params]').compareDocumentPosition(w.querySelector('[data-do="approve"]')) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0)(document.querySelector('#waiting %s'))`, card))
	// The receipt's row for the wire: seven cells, the Status one the ledger's.
	row := `document.querySelector('#receipt [data-call-status]').closest('tr')`
	bo.until(fmt.Sprintf(`%s.cells.length === 7 && %s.cells[3].textContent === 'awaiting approval' && %s.cells[2].textContent.startsWith('acct-9 | succeeded |')`, row, row, row))
	bo.accessible("the task page with hostile content")
}
