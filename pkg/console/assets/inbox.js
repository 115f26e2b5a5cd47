// The inbox: what waits for a person — approvals to decide, questions to
// answer, outcomes nobody knows to settle — refreshed while it is shown.
import { call } from './api.js';
import { h, section, failure, badge, label } from './ui.js';
import { approvalFacts, decisionForm } from './decide.js';
import { answerForm, settleForm, maySettle } from './forms.js';

const refreshEvery = 5000;
const open = ['TASK_STATUS_RUNNING', 'TASK_STATUS_WAITING_FOR_APPROVAL', 'TASK_STATUS_WAITING_FOR_INPUT', 'TASK_STATUS_PAUSED',
  'TASK_STATUS_RECONCILING', 'TASK_STATUS_COMPENSATING', 'TASK_STATUS_SUSPENDED'];

function approvalCard(a, me, done) {
  return h('article', { class: 'card approval', 'data-approval-id': a.approvalId, 'aria-labelledby': `ap-${a.approvalId}` },
    h('h3', { id: `ap-${a.approvalId}` }, a.tool ? `${a.tool} → ${a.target || '—'}` : `Plan version ${a.planVersion}`, ' ', badge(a.effectClass, 'EFFECT_CLASS_')),
    approvalFacts(a),
    decisionForm(a, me, done));
}

async function gather() {
  const [approvals, asking, busy] = await Promise.all([
    call('GovernanceService/ListApprovals', { pendingOnly: true, pageSize: 100 }),
    call('QueryService/ListTasks', { statuses: ['TASK_STATUS_WAITING_FOR_INPUT'], pageSize: 100 }),
    call('QueryService/ListTasks', { statuses: open, pageSize: 100 }),
  ]);
  const unknown = [];
  for (const t of busy.tasks || []) {
    for (const a of t.actions || []) {
      if (a.status === 'ACTION_STATUS_UNKNOWN' || a.status === 'ACTION_STATUS_PERSON_EXECUTING') unknown.push({ t, a });
    }
  }
  return { approvals: approvals.approvals || [], questions: (asking.tasks || []).filter((t) => t.openInput), unknown };
}

// signature is what the inbox shows, so that a refresh that changes
// nothing leaves the page (and a half-typed comment) alone.
function signature(g) {
  return JSON.stringify([g.approvals.map((a) => [a.approvalId, (a.votes || []).length]),
    g.questions.map((t) => t.openInput.questionId || t.contract.taskId), g.unknown.map((u) => [u.a.actionId, u.a.status])]);
}

export async function inboxPage(ctx) {
  const body = h('div', { 'aria-busy': 'true' });
  ctx.main.replaceChildren(h('h1', {}, 'Inbox'), body);
  let shown = '';
  const load = async (force) => {
    let g;
    try { g = await gather(); } catch (err) { body.replaceChildren(failure(err, 'Reading the inbox')); return; }
    const sig = signature(g);
    if (!force && sig === shown) return;
    const active = document.activeElement;
    if (!force && shown && active && body.contains(active) && /^(TEXTAREA|INPUT|SELECT)$/.test(active.tagName)) return;
    shown = sig;
    const done = () => load(true);
    body.replaceChildren(
      section('approvals', `Approvals waiting (${g.approvals.length})`,
        g.approvals.length ? g.approvals.map((a) => approvalCard(a, ctx.me, done)) : h('p', { class: 'empty' }, 'Nothing waits for approval.')),
      section('questions', `Questions (${g.questions.length})`,
        g.questions.length ? g.questions.map((t) => h('div', { class: 'card inner' },
          h('p', {}, h('a', { href: '#/task/' + encodeURIComponent(t.contract.taskId) }, t.contract.intent || t.contract.taskId)),
          answerForm(t, ctx.me, done))) : h('p', { class: 'empty' }, 'No question waits for an answer.')),
      section('unknown', `Outcomes to settle (${g.unknown.length})`,
        g.unknown.length ? g.unknown.map(({ t, a }) => h('div', { class: 'card inner' },
          h('p', {}, h('a', { href: '#/task/' + encodeURIComponent(t.contract.taskId) }, t.contract.intent || t.contract.taskId), ' · ', label(a.status, 'ACTION_STATUS_')),
          maySettle(a, ctx.me) ? settleForm(t.contract.taskId, a, done) : h('p', { class: 'note' }, 'Settling an unknown outcome needs the operator role; a person\'s own execution, that person.')))
          : h('p', { class: 'empty' }, 'No outcome waits to be settled.')));
    body.setAttribute('aria-busy', 'false');
  };
  await load(true);
  const timer = setInterval(() => load(false), refreshEvery);
  ctx.onLeave(() => clearInterval(timer));
}
