package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// sel is a CSS attribute selector's value, quoted.
func sel(attr, value string) string { return fmt.Sprintf(`[%s=%q]`, attr, value) }

// TestConsoleIsServedWithItsPolicy: the real binary serves the console at
// /console on the API's port, from the assets in the binary, and so does
// `steward gateway` in front of planes; every answer carries a
// Content-Security-Policy that allows nothing but this origin's scripts,
// styles and calls and no framing, with nosniff and no referrer.
func TestConsoleIsServedWithItsPolicy(t *testing.T) {
	h := startSteward(t, setup{})
	replicas := map[string][]string{}
	for _, r := range app.PlaneRoutes() {
		replicas[r.Plane] = []string{h.url}
	}
	gw := startGateway(t, replicas)
	for _, base := range []string{h.url, gw.url} {
		checkConsoleServed(t, base)
	}
}

func checkConsoleServed(t *testing.T, base string) {
	t.Helper()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("%s/console: %s to %q, want a redirect to /console/", base, resp.Status, resp.Header.Get("Location"))
	}
	for path, typ := range map[string]string{"/console/": "text/html", "/console/app.js": "text/javascript", "/console/style.css": "text/css"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self';", "style-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s%s: Content-Security-Policy %q lacks %q", base, path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" || len(body) == 0 {
			t.Errorf("%s%s: %s, %v", base, path, resp.Status, resp.Header)
		}
		if path == "/console/" && strings.Contains(string(body), "<script>") {
			t.Errorf("%s: the console's page has an inline script", base)
		}
	}
	// The console's first call, through the same address.
	who, err := withToken(base, approverToken).query.WhoAmI(context.Background(), connect.NewRequest(&stewardv1.WhoAmIRequest{}))
	if err != nil || who.Msg.Principal != "user:bo" || !slices.Equal(who.Msg.Roles, []string{"authorizer"}) || !who.Msg.Authenticated || who.Msg.Tenant != "" {
		t.Errorf("%s: WhoAmI as user:bo: %v %v", base, who, err)
	}
}

// TestConsoleApprovesAndAmends drives the console in headless Chromium
// against the real binary and a real HTTP tool. An approver signs in,
// finds the wire in the inbox with the hash it binds to, approves it, and
// an operator's task page, open before, sees it succeed live (WatchTask);
// the tool was called once. A second wire is amended from the inbox: the
// original is rejected and the amended action, in the approver's name,
// waits for someone else, who rejects it from their inbox. A viewer, without the approver's role, sees the
// approval but no approve button, and the same DecideApproval sent with
// the viewer's token from the page is refused by the server. An approver
// of another tenant finds no such task. axe-core finds no serious or
// critical issue on the inbox or the task page.
func TestConsoleApprovesAndAmends(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	b := browser(t)
	taskID := governedTask(t, h.agent, "console-1")
	wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 500})
	_, wire = waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	second := propose(t, h.agent, taskID, "wire-2", "wire", map[string]any{"amount": 700})
	_, second = waitAction(t, h.agent.clients, taskID, second.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	card := sel("data-approval-id", wire.Approval.ApprovalId)

	viewer := openConsole(t, b, h.url, viewerToken)
	viewer.goTo("#/inbox")
	viewer.until(fmt.Sprintf(`!!document.querySelector('%s [data-cannot-decide]')`, card))
	if n := eval[int](viewer, `document.querySelectorAll('[data-do="approve"]').length`); n != 0 {
		t.Fatalf("a viewer is shown %d approve buttons", n)
	}
	forged := eval[string](viewer, fmt.Sprintf(`import('/console/api.js').then(m => m.call('GovernanceService/DecideApproval',
		{approvalId: %q, actionHash: %q, decision: 'APPROVAL_DECISION_APPROVE'})).then(() => 'accepted', e => e.code)`, wire.Approval.ApprovalId, wire.ActionHash))
	if forged != "permission_denied" {
		t.Fatalf("a viewer's DecideApproval from the console: %s, want permission_denied", forged)
	}

	// The viewer may not watch the task's content: their page polls, and a
	// poll that finds nothing new leaves the page (and what they opened) alone.
	viewer.goTo("#/task/" + taskID)
	viewer.until(`!!document.querySelector('[data-live="polling"][data-checked]') && !!document.querySelector('#receipt details')`)
	viewer.do(chromedp.Click(chromedp.CSS(`#receipt details summary`)))
	eval[bool](viewer, `window.page = document.querySelector('#overview'), window.checked = document.querySelector('[data-live]').dataset.checked, true`)
	viewer.until(`document.querySelector('[data-live]').dataset.checked !== window.checked`)
	if same := eval[bool](viewer, `document.querySelector('#overview') === window.page && document.querySelector('#receipt details').open`); !same {
		t.Fatal("a poll that found nothing new redrew the viewer's page")
	}

	ops := openConsole(t, b, h.url, operatorToken)
	ops.goTo("#/task/" + taskID)
	ops.until(`!!document.querySelector('[data-live="on"]')`)
	ops.accessible("the task page")

	bo := openConsole(t, b, h.url, approverToken)
	bo.goTo("#/inbox")
	bo.until(fmt.Sprintf(`!!document.querySelector('%s [data-do="approve"]:enabled')`, card))
	if shown := eval[string](bo, fmt.Sprintf(`document.querySelector('%s [data-hash]').textContent`, card)); shown != wire.ActionHash {
		t.Fatalf("the inbox shows hash %q, want the action's %q", shown, wire.ActionHash)
	}
	bo.accessible("the inbox")
	bo.screenshot("body", "inbox")
	// By keyboard: a comment, Tab to Approve, Enter.
	bo.do(chromedp.SendKeys(chromedp.CSS(card+" form.decide textarea"), "checked the invoice"))
	bo.do(chromedp.KeyEvent(kb.Tab))
	bo.until(fmt.Sprintf(`document.activeElement === document.querySelector('%s [data-do="approve"]')`, card))
	bo.do(chromedp.KeyEvent(kb.Enter))
	ops.until(fmt.Sprintf(`!!document.querySelector('details%s[data-status="ACTION_STATUS_SUCCEEDED"]')`, sel("data-action-id", wire.ActionId)))
	if vote := waitVote(t, h, taskID, wire.ActionId); vote.Principal != "user:bo" || vote.Comment != "checked the invoice" {
		t.Fatalf("the vote: %v", vote)
	}
	if n := tool.CallsFor(wire.OpKey); n != 1 {
		t.Fatalf("the tool was called %d times for the approved wire, want once", n)
	}

	// The decided card stays where it was, greyed and inert, until asked.
	second2 := sel("data-approval-id", second.Approval.ApprovalId)
	bo.until(fmt.Sprintf(`!!document.querySelector('%s.gone [data-gone]') && document.querySelector('%s [data-do="reject"]').disabled`, card, card))
	// Amend the second wire: 700 becomes 70.
	bo.press(second2, `[data-do="amend"]`)
	bo.do(setValue(second2, "textarea.mono", `{"amount": 70}`))
	bo.press(second2, `[data-do="amend-send"]`)
	_, orig := waitAction(t, h.agent.clients, taskID, second.ActionId, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
	_, amended := waitAction(t, h.agent.clients, taskID, orig.AmendedAs, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if amended.ProposedBy != "user:bo" || amended.Approval.GetParametersJson() != `{"amount":70}` {
		t.Fatalf("the amended action: %v", amended)
	}
	// The amended action waits behind "1 new — show", not slid in under the pointer.
	mine := sel("data-approval-id", amended.Approval.ApprovalId)
	bo.until(fmt.Sprintf(`(document.querySelector('#approvals [data-show-latest]') || {}).textContent === '1 new — show' && !document.querySelector('%s')`, mine))
	// Drawn, its buttons are armed only a second later: no redraw puts a live button under a click.
	if armed := eval[bool](bo, fmt.Sprintf(`document.querySelector('#approvals [data-show-latest]').click(), document.querySelector('%s [data-do="reject"]').disabled`, mine)); !armed {
		t.Fatal("a decision's buttons were live the moment they were drawn")
	}
	// The amender may reject their own amendment but not approve it: the inbox says so.
	bo.until(fmt.Sprintf(`(document.querySelector('%s [data-may-not-approve]') || {}).textContent?.includes('You proposed it') && !document.querySelector('%s [data-do="approve"]') && !document.querySelector('%s')`, mine, mine, card))

	// Another tenant's approver: no such task, and nothing in the inbox.
	globex := openConsole(t, b, h.url, globexApproverToken)
	globex.until(`document.getElementById('who').textContent === 'user:bo · tenant globex · authorizer'`)
	globex.goTo("#/task/" + taskID)
	globex.until(`!!document.querySelector('.error[data-code="not_found"]')`)
	globex.goTo("#/inbox")
	globex.until(`(document.getElementById('approvals-h') || {}).textContent === 'Approvals waiting (0)'`)

	ops.until(fmt.Sprintf(`!!document.querySelector('details%s[data-status="ACTION_STATUS_AWAITING_APPROVAL"]')`, sel("data-action-id", amended.ActionId)))
	// The approved wire's record, open: snapshot, vote, permit, outcome.
	ops.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`details%s summary`, sel("data-action-id", wire.ActionId)))))
	ops.until(fmt.Sprintf(`document.querySelector('details%s').open`, sel("data-action-id", wire.ActionId)))
	ops.screenshot("#overview", "task")

	// Another approver rejects the amendment.
	di := openConsole(t, b, h.url, secondApproverToken)
	di.goTo("#/inbox")
	third := sel("data-approval-id", amended.Approval.ApprovalId)
	di.until(fmt.Sprintf(`!!document.querySelector('%s [data-do="reject"]:enabled')`, third))
	di.press(third, `[data-do="reject"]`)
	waitAction(t, h.agent.clients, taskID, amended.ActionId, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
	ops.until(fmt.Sprintf(`!!document.querySelector('details%s[data-status="ACTION_STATUS_REJECTED"]')`, sel("data-action-id", amended.ActionId)))
	// Redrawn for the rejection, the page keeps the record the operator opened open.
	ops.until(fmt.Sprintf(`document.querySelector('details%s').open`, sel("data-action-id", wire.ActionId)))
}

// waitVote is the one vote on the action's approval, once it is recorded.
func waitVote(t *testing.T, h *harness, taskID, actionID string) *stewardv1.ApprovalVote {
	t.Helper()
	_, a := waitAction(t, h.agent.clients, taskID, actionID, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if votes := a.GetApproval().GetVotes(); len(votes) == 1 {
		return votes[0]
	}
	t.Fatalf("votes on %s: %v", actionID, a.GetApproval().GetVotes())
	return nil
}
