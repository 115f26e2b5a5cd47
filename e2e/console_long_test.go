package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// hostileLong is markup and a right-to-left override, as an objective's
// intent or a schedule's template might hold them.
const hostileLong = hostileImg + hostileButton + " \u202Etroper"

// inertText holds when hostileLong is on the page as its characters: no
// element of its own, the override shown as an escape, not obeyed.
const inertText = `document.querySelectorAll('img, [onerror]').length === 0 && document.title !== 'pwned' &&
	document.querySelectorAll('[data-do="approve"]').length === 0 && document.body.innerText.includes(%q) &&
	document.body.innerText.includes('\\u202E') && !document.body.innerText.includes('\u202E')`

// longWork is an objective with a task of two milestones, a sub-task (in
// a milestone of its own) and a sub-sub-task that spent, a second
// sub-task, and a revision of the task's contract proposed by its agent.
type longWork struct {
	objective, root, child, second, grandchild string
	revision                                   *stewardv1.ContractRevision
}

func startLongWork(t *testing.T, h *harness) longWork {
	t.Helper()
	ctx := context.Background()
	obj, err := h.agent.tasks.CreateObjective(ctx, connect.NewRequest(&stewardv1.CreateObjectiveRequest{RequestId: "console-q3",
		Intent: "Ship the Q3 report " + hostileLong, Budget: &stewardv1.ObjectiveBudget{MaxTokens: 60_000}}))
	if err != nil {
		t.Fatal(err)
	}
	w := longWork{objective: obj.Msg.Objective.ObjectiveId}
	k := contract()
	k.ObjectiveId, k.AccountableOwnerRef = w.objective, "user:bo"
	k.Milestones = []*stewardv1.Milestone{{MilestoneId: "collect", Title: "Collect incidents", MaxActions: 1}, {MilestoneId: "write", Title: "Write the summary"}}
	w.root = h.create(t, "console-root", k)
	a := proposeIn(t, h.agent, w.root, "collect-1", "collect")
	waitAction(t, h.agent.clients, w.root, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := h.agent.tasks.ReportProgress(ctx, connect.NewRequest(&stewardv1.ReportProgressRequest{TaskId: w.root, MilestoneId: "collect", Percent: 50, Note: "half the sources"})); err != nil {
		t.Fatal(err)
	}

	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxTokens: 20_000}
	sub.Milestones = []*stewardv1.Milestone{{MilestoneId: "gather", Title: "Gather alerts"}}
	w.child = delegateTo(t, h.agent, w.root, "agent:researcher", "console-child", sub)
	sub.Milestones = nil
	sub.Budget = &stewardv1.Budget{MaxTokens: 2_000}
	w.second = delegateTo(t, h.agent, w.root, "agent:researcher", "console-second", sub)
	researcher := withToken(h.url, subAgentToken)
	g := proposeIn(t, researcher, w.child, "gather-1", "gather")
	waitAction(t, researcher.clients, w.child, g.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	sub.Budget = &stewardv1.Budget{MaxTokens: 5_000}
	w.grandchild = delegateTo(t, researcher, w.child, "agent:researcher", "console-grandchild", sub)
	for id, n := range map[string]int64{w.child: 300, w.grandchild: 1200} {
		if _, err := researcher.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{TaskId: id, Tokens: n, Model: "m", RequestId: "usage-" + id})); err != nil {
			t.Fatal(err)
		}
	}

	rv, err := h.agent.tasks.ReviseContract(ctx, connect.NewRequest(&stewardv1.ReviseContractRequest{TaskId: w.root, Reason: "the review moved to monthly",
		Contract: &stewardv1.TaskContract{Intent: "Summarise last month's incidents"}, RequestId: "console-revise"}))
	if err != nil {
		t.Fatal(err)
	}
	w.revision = rv.Msg.Revision
	waitServed(t, h.agent.clients, w.root, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
		r := task.OpenRevision(tk)
		return r != nil && r.Snapshot != nil, "the revision judged by policy"
	})
	return w
}

// TestConsoleObjectivesTreeAndVersions drives the console in headless
// Chromium against the real binary: the objectives list pages by its
// token, and an objective's page shows its intent (markup and a bidi override as text),
// its budget against what its three tasks reserved and spent, and each
// task's spend; another tenant finds no such objective. The task's page
// shows its tree three levels deep with each node's spend and milestone,
// pages a node's sub-tasks, marks the current milestone at its cap with
// the agent's progress, and shows the proposed contract version with its
// hash. A viewer is offered no decision, and the decision sent with their
// token is refused; the accountable owner approves from the page, and an
// operator's page, open before, shows version 2 in force, live. axe-core
// finds no serious or critical issue on any of these pages.
func TestConsoleObjectivesTreeAndVersions(t *testing.T) {
	h := startSteward(t, setup{tools: governedTools(stewardtest.StartTool(t))})
	b := browser(t)
	w := startLongWork(t, h)

	ops := openConsole(t, b, h.url, operatorToken)
	ops.goTo("#/objectives")
	row := sel("data-objective-id", w.objective)
	ops.until(fmt.Sprintf(`(r => !!r && r.innerText.includes('50000 of 60000 tokens') && r.innerText.includes('open'))(document.querySelector('tr%s'))`, row))
	ops.until(fmt.Sprintf(inertText, hostileImg+hostileButton))
	ops.accessible("the objectives list")
	// One a page: the second objective is on the next, by the list's token.
	if _, err := h.agent.tasks.CreateObjective(context.Background(), connect.NewRequest(&stewardv1.CreateObjectiveRequest{RequestId: "console-q4", Intent: "Ship the Q4 report"})); err != nil {
		t.Fatal(err)
	}
	ops.goTo("#/objectives?size=1")
	ops.until(fmt.Sprintf(`document.querySelectorAll('tr[data-objective-id]').length === 1 && !!document.querySelector('tr%s') && !!document.querySelector('a[rel="next"]')`, row))
	ops.do(chromedp.Click(chromedp.CSS(`a[rel="next"]`)))
	ops.until(`document.querySelectorAll('tr[data-objective-id]').length === 1 && document.querySelector('tr[data-objective-id]').innerText.includes('Ship the Q4 report')`)
	ops.goTo("#/objectives")
	ops.until(fmt.Sprintf(`!!document.querySelector('tr%s a')`, row))
	ops.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr%s a`, row))))
	// Each task's budget used: what it spent and reserved for its sub-tasks.
	used := func(id string) string {
		return fmt.Sprintf(`(document.querySelector('#objective-tasks tr%s [data-used]') || {}).textContent`, sel("data-task-id", id))
	}
	ops.until(fmt.Sprintf(`%s === '1200 of 5000' && %s === '5300 of 20000' && %s === '22000 of 50000'`, used(w.grandchild), used(w.child), used(w.root)))
	ops.until(`document.querySelector('#objective-progress').innerText.includes('1500 tokens') && document.querySelector('#objective-progress').innerText.includes('4 (sub-tasks included)')`)
	ops.until(`document.querySelector('[aria-labelledby="ob-reserved"]').getAttribute('aria-valuetext') === '50000 of 60000 (83 %)'`)
	ops.until(fmt.Sprintf(inertText, hostileImg+hostileButton))
	ops.accessible("an objective's page")
	ops.screenshot("main", "objective")

	globex := openConsole(t, b, h.url, globexApproverToken)
	globex.goTo("#/objective/" + w.objective)
	globex.until(`!!document.querySelector('.error[data-code="not_found"]')`)

	// The task's page, opened before the decision, one sub-task a read.
	ops.goTo("#/task/" + w.root + "?children=1")
	node := func(id string) string { return sel("data-tree-task", id) }
	ops.until(fmt.Sprintf(`!!document.querySelector('#subtasks li%s li%s > [data-spent="1200"]') && document.querySelector('#subtasks li%s').dataset.status === 'TASK_STATUS_RUNNING'`,
		node(w.child), node(w.grandchild), node(w.grandchild)))
	ops.until(fmt.Sprintf(`(n => n.dataset.subtreeSpent === '1500' && n.dataset.spent === '300')(document.querySelector('#subtasks li%s > [data-spent]')) &&
		document.querySelector('#subtasks li%s').innerText.includes('milestone gather') && document.querySelector('[data-subtree]').textContent.startsWith('4 tasks in all, which spent 1500 tokens')`,
		node(w.child), node(w.child)))
	// The second sub-task is on the next page of the root's children.
	ops.until(fmt.Sprintf(`!document.querySelector('li%s')`, node(w.second)))
	ops.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#subtasks %s`, sel("data-more", w.root)))))
	ops.until(fmt.Sprintf(`!!document.querySelector('#subtasks > div > ul.tree > li%s')`, node(w.second)))

	ms := func(id string) string {
		return fmt.Sprintf(`document.querySelector('#milestones tr%s')`, sel("data-milestone", id))
	}
	ops.until(fmt.Sprintf(`%s.dataset.status === 'MILESTONE_STATUS_AT_CAP' && %s.getAttribute('aria-current') === 'step' && %s.innerText.includes('50 %% by the agent') &&
		%s.innerText.includes('half the sources') && %s.innerText.includes('1 of 1') && %s.dataset.status === 'MILESTONE_STATUS_PENDING' && !%s.hasAttribute('aria-current')`,
		ms("collect"), ms("collect"), ms("collect"), ms("collect"), ms("collect"), ms("write"), ms("write")))
	ops.until(fmt.Sprintf(`!!document.querySelector('#versions [data-open-revision=%q] [data-cannot-decide-revision]') && document.querySelector('#versions [data-waits-for]').textContent.includes('user:bo')`, w.revision.RevisionId))
	ops.accessible("a task's page with its tree, milestones and an open revision")

	viewer := openConsole(t, b, h.url, viewerToken)
	viewer.goTo("#/task/" + w.root)
	viewer.until(`!!document.querySelector('[data-cannot-decide-revision]') && !document.querySelector('[data-do="approve-revision"]')`)
	forged := eval[string](viewer, fmt.Sprintf(`import('/console/api.js').then(m => m.call('TaskService/DecideContractRevision',
		{taskId: %q, revisionId: %q, approve: true})).then(() => 'accepted', e => e.code)`, w.root, w.revision.RevisionId))
	if forged != "permission_denied" {
		t.Fatalf("a viewer's DecideContractRevision from the console: %s, want permission_denied", forged)
	}

	// A role's holder may still reject once another holder approved
	// (the owner's approval owed): the server takes it, the page offers it.
	mayReject := eval[string](viewer, `import('/console/versions.js').then(m => JSON.stringify(m.mayDecide({contract: {accountableOwnerRef: 'user:bo'}},
		{proposedBy: 'agent:a', policyApprovedBy: 'user:cfo', snapshot: {decision: 'POLICY_DECISION_REQUIRE_APPROVAL', requiredApproverRoles: ['finance']}},
		{principal: 'user:dee', roles: ['finance']})))`)
	if !strings.Contains(mayReject, `"ok":true,"approve":false`) {
		t.Errorf("a role's holder after another's approval: the page's rule says %s, want a rejection offered", mayReject)
	}

	bo := openConsole(t, b, h.url, approverToken)
	bo.goTo("#/task/" + w.root)
	bo.until(`!!document.querySelector('[data-do="approve-revision"]:enabled')`)
	if shown := eval[string](bo, `document.querySelector('[data-revision-hash]').textContent`); shown != w.revision.ContractHash {
		t.Fatalf("the page shows hash %q, want the revision's %q", shown, w.revision.ContractHash)
	}
	bo.accessible("a task's page offering its owner the revision")
	bo.do(chromedp.SendKeys(chromedp.CSS(`form.decide textarea`), "monthly is fine"))
	bo.press("form.decide", `[data-do="approve-revision"]`)

	// Live on the operator's page: version 2 in force, both versions listed.
	v := func(n int) string { return fmt.Sprintf(`document.querySelector('#versions tr[data-version="%d"]')`, n) }
	ops.until(fmt.Sprintf(`!!%s && %s.getAttribute('aria-current') === 'true' && !%s.hasAttribute('aria-current') && %s.innerText.includes('the review moved to monthly') &&
		%s.innerText.includes("Summarise last month's incidents") && %s.innerText.includes('user:bo') && !document.querySelector('[data-open-revision]') &&
		document.querySelector('h1').textContent === "Summarise last month's incidents"`, v(2), v(2), v(1), v(2), v(2), v(2)))
	tk := getTask(t, h.agent.clients, w.root)
	if tk.ContractVersion != 2 || len(tk.ContractVersions) != 2 || strings.Join(tk.ContractVersions[1].ApprovedBy, ",") != "user:bo" {
		t.Fatalf("after the page's approval: version %d, versions %v", tk.ContractVersion, tk.ContractVersions)
	}
	if got := eval[string](ops, v(2)+`.querySelector('code.hash').textContent`); got != tk.ContractHash {
		t.Fatalf("version 2's hash on the page %q, want %q", got, tk.ContractHash)
	}
}

// TestConsoleSchedules: a schedule's page shows when it fires, in words
// and its zone, its overlap and catch-up rules, its runs budget against
// what its runs committed, and its firings: the first started its run (a
// link to the run's task, which links back), later ones were skipped
// while it ran. Its template's intent, markup and a bidi override, is
// text. A viewer is offered no pause and the pause sent with their token
// is refused; an operator pauses it from the page and it stops firing;
// another tenant finds no such schedule and an empty list. axe-core finds
// no serious or critical issue on the list or the page.
func TestConsoleSchedules(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()
	b := browser(t)
	k := contract()
	k.Intent = "Collect the news " + hostileLong
	resp, err := h.agent.schedules.CreateSchedule(ctx, connect.NewRequest(&stewardv1.CreateScheduleRequest{
		RequestId: "console-news",
		Spec:      &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(2 * time.Second)}, TimeZone: "Europe/Paris"},
		Template:  &stewardv1.ScheduleTemplate{Contract: k, RunsBudget: &stewardv1.RunsBudget{MaxTokens: 500_000}},
		Overlap:   &stewardv1.Overlap{Policy: stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP},
		CatchUp:   &stewardv1.CatchUp{Rule: stewardv1.CatchUpRule_CATCH_UP_RULE_LAST},
	}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Schedule.ScheduleId
	var s *stewardv1.Schedule
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		r, err := h.agent.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
		if err != nil {
			return false, err.Error()
		}
		s = r.Msg.Schedule
		skipped := 0
		for _, f := range s.RecentFirings {
			if f.Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED {
				skipped++
			}
		}
		return s.RunsStarted == 1 && skipped >= 1, fmt.Sprintf("%d runs, %d skipped", s.RunsStarted, skipped)
	})
	run := s.LastTaskId
	waitStatus(t, h.agent.clients, run, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	a := propose(t, h.agent, run, "news-1", "search", map[string]any{"q": "competitor news"})
	waitAction(t, h.agent.clients, run, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)

	viewer := openConsole(t, b, h.url, viewerToken)
	viewer.goTo("#/schedules")
	viewer.until(fmt.Sprintf(`(r => !!r && r.innerText.includes('every 2 seconds') && r.innerText.includes('Europe/Paris'))(document.querySelector('tr%s'))`, sel("data-schedule-id", id)))
	viewer.until(fmt.Sprintf(inertText, hostileImg+hostileButton))
	viewer.accessible("the schedules list")
	viewer.goTo("#/schedule/" + id)
	started := `document.querySelector('#firings tr[data-disposition="FIRING_DISPOSITION_STARTED"]')`
	viewer.until(fmt.Sprintf(`!!%s && !!%s.querySelector('a[href="#/task/%s"]') && !!document.querySelector('#firings tr[data-disposition="FIRING_DISPOSITION_SKIPPED"]')`, started, started, run))
	viewer.until(`document.querySelector('[data-spec]').textContent === 'every 2 seconds' && document.querySelector('.task-head').innerText.includes('Europe/Paris') &&
		document.querySelector('.task-head').innerText.includes('skip') && document.querySelector('.task-head').innerText.includes('last') &&
		document.querySelector('[aria-labelledby="rb-tokens"]').getAttribute('aria-valuetext') === '50000 of 500000 (10 %)'`)
	viewer.until(fmt.Sprintf(inertText, hostileImg+hostileButton))
	viewer.until(`!!document.querySelector('[data-cannot-control]') && !document.querySelector('[data-do="pause"]')`)
	viewer.accessible("a schedule's page")
	viewer.screenshot("main", "schedule")
	forged := eval[string](viewer, fmt.Sprintf(`import('/console/api.js').then(m => m.call('ScheduleService/PauseSchedule',
		{scheduleId: %q, reason: 'forged'})).then(() => 'accepted', e => e.code)`, id))
	if forged != "permission_denied" {
		t.Fatalf("a viewer's PauseSchedule from the console: %s, want permission_denied", forged)
	}
	// The run's page names its schedule.
	viewer.goTo("#/task/" + run)
	viewer.until(fmt.Sprintf(`!!document.querySelector('.task-head a[href="#/schedule/%s"]')`, id))
	// Its intent, the template's, is as inert in the run's heading as on the schedule's page.
	viewer.until(`(e => e.innerText.includes('\\u202E') && !e.innerText.includes('\u202E'))(document.querySelector('.task-head h1'))`)

	ops := openConsole(t, b, h.url, operatorToken)
	ops.goTo("#/schedule/" + id)
	ops.do(chromedp.SendKeys(chromedp.CSS(`#schedule-reason`), "the source is down"))
	ops.press("form.controls", `[data-do="pause"]`)
	ops.until(`!!document.querySelector('.task-head [data-status="SCHEDULE_STATUS_PAUSED"]') && !!document.querySelector('[data-do="resume"]') && document.querySelector('[data-next]').textContent === 'none'`)
	paused, err := h.agent.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
	if err != nil || paused.Msg.Schedule.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED {
		t.Fatalf("after the page's pause: %v, %v", paused, err)
	}
	ops.accessible("a paused schedule's page")
	obj, err := h.agent.tasks.CreateObjective(ctx, connect.NewRequest(&stewardv1.CreateObjectiveRequest{RequestId: "console-slow", Intent: "Answered late"}))
	if err != nil {
		t.Fatal(err)
	}
	keepsToItsReads(t, ops, id, obj.Msg.Objective.ObjectiveId)

	globex := openConsole(t, b, h.url, globexApproverToken)
	globex.goTo("#/schedule/" + id)
	globex.until(`!!document.querySelector('.error[data-code="not_found"]')`)
	globex.goTo("#/schedules")
	globex.until(`!!document.querySelector('main .empty') && document.querySelector('main .empty').textContent === 'No schedule yet.'`)
}

// heldReads wraps the page's fetch and its 5-second timers: a read whose
// method __hold names is answered only when __release() says so (and
// __settled counts those drawn, or not, after), __gets counts the
// schedule reads sent, and a 5-second timer fires when __tick() says so
// (a setInterval's each time, a setTimeout's once), never by the clock.
const heldReads = `(() => {
  const realFetch = window.fetch.bind(window);
  Object.assign(window, { __hold: '', __held: [], __gets: 0, __settled: 0, __timers: new Map() });
  window.fetch = async (url, init) => {
    const held = window.__hold !== '' && String(url).endsWith(window.__hold);
    if (String(url).endsWith('/GetSchedule')) window.__gets++;
    const r = await realFetch(url, init);
    if (!held || window.__hold === '') return r; // released before it came
    await new Promise((go) => window.__held.push(go));
    const json = r.json.bind(r);
    r.json = () => json().then((v) => { setTimeout(() => { window.__settled++; }, 0); return v; });
    return r;
  };
  window.__release = () => { const hs = window.__held; window.__held = []; hs.forEach((go) => go()); return hs.length; };
  let ids = 0;
  const wrap = (real, repeat) => (f, ms, ...a) => {
    if (ms !== 5000) return real(f, ms, ...a);
    const id = 'held-' + (++ids);
    window.__timers.set(id, { f, repeat });
    return id;
  };
  const unwrap = (real) => (id) => (window.__timers.has(id) ? window.__timers.delete(id) : real(id));
  window.setInterval = wrap(window.setInterval.bind(window), true);
  window.setTimeout = wrap(window.setTimeout.bind(window), false);
  window.clearInterval = unwrap(window.clearInterval.bind(window));
  window.clearTimeout = unwrap(window.clearTimeout.bind(window));
  window.__tick = () => { for (const [id, t] of [...window.__timers]) { if (!t.repeat) window.__timers.delete(id); t.f(); } };
  return true;
})()`

// untilFlag waits for cond as until does, checking it on every frame: a
// window flag's change is no change of the DOM.
func untilFlag(p *page, cond string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, browserWait+5*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(browserWait))); err != nil {
		p.t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", cond, err, p.text("main"))
	}
}

// keepsToItsReads: a schedule's refresh sends its next read only once
// the last one answered, however often its timer comes; a page left
// while its read is out draws nothing when the answer comes and leaves
// no refresh behind; an objective's page answered late does not take the
// place of the page the person went on to.
func keepsToItsReads(t *testing.T, p *page, scheduleID, objectiveID string) {
	t.Helper()
	p.goTo("#/schedules")
	untilFlag(p, `!!document.querySelector('tr[data-schedule-id]')`)
	eval[bool](p, heldReads)
	p.goTo("#/schedule/" + scheduleID)
	untilFlag(p, `!!document.querySelector('[data-spec]') && window.__timers.size === 1`)
	before := eval[int](p, `window.__hold = '/GetSchedule'; window.__gets`)
	eval[bool](p, `window.__tick(); window.__tick(); window.__tick(); true`)
	if sent := eval[int](p, `window.__gets`) - before; sent != 1 {
		t.Errorf("three refresh timers with a read unanswered sent %d reads, want 1", sent)
	}
	untilFlag(p, `window.__held.length >= 1`)
	eval[int](p, `window.__hold = ''; window.__release()`)
	untilFlag(p, `window.__settled >= 1 && window.__timers.size === 1`)

	// Left during its first read: the schedule page.
	eval[string](p, `window.__hold = '/GetSchedule'; ''`)
	p.goTo("#/schedule/" + scheduleID + "?again=1")
	untilFlag(p, `window.__held.length === 1`)
	p.goTo("#/schedules")
	untilFlag(p, `document.querySelector('main h1').textContent === 'Schedules' && !!document.querySelector('tr[data-schedule-id]')`)
	settled := eval[int](p, `window.__hold = ''; window.__release(); window.__settled`)
	untilFlag(p, fmt.Sprintf(`window.__settled > %d`, settled))
	if n := eval[int](p, `window.__timers.size`); n != 0 {
		t.Errorf("a schedule page left during its first read leaves %d refresh timers behind", n)
	}
	// Left during its read: an objective's page.
	eval[string](p, `window.__hold = '/GetObjective'; ''`)
	p.goTo("#/objective/" + objectiveID)
	untilFlag(p, `window.__held.length === 1`)
	p.goTo("#/schedules?size=1")
	untilFlag(p, `document.querySelector('main h1').textContent === 'Schedules' && !!document.querySelector('tr[data-schedule-id]')`)
	settled = eval[int](p, `window.__hold = ''; window.__release(); window.__settled`)
	untilFlag(p, fmt.Sprintf(`window.__settled > %d`, settled))
	if h1 := eval[string](p, `document.querySelector('main h1').textContent`); h1 != "Schedules" {
		t.Errorf("an objective's page answered after the person went on shows %q where the schedules list was", h1)
	}
}
