// The inbox: what waits for a person — approvals to decide, questions to
// answer, outcomes nobody knows to settle — refreshed while it is shown.
import { listAll } from './api.js';
import { h, section, failure, badge, label, raw } from './ui.js';
import { approvalFacts, decisionForm } from './decide.js';
import { steady } from './steady.js';
import { answerForm, settleForm, maySettle } from './forms.js';

const refreshEvery = 5000;
const open = ['TASK_STATUS_RUNNING', 'TASK_STATUS_WAITING_FOR_APPROVAL', 'TASK_STATUS_WAITING_FOR_INPUT', 'TASK_STATUS_PAUSED',
  'TASK_STATUS_RECONCILING', 'TASK_STATUS_COMPENSATING', 'TASK_STATUS_SUSPENDED'];

function approvalCard(a, me, done) {
  return h('article', { class: 'card approval', 'data-approval-id': a.approvalId, 'aria-labelledby': `ap-${a.approvalId}` },
    h('h3', { id: `ap-${a.approvalId}` }, a.tool ? [raw(a.tool, 'mono'), ' → ', raw(a.target || '—', 'mono')] : `Plan version ${a.planVersion}`, ' ', badge(a.effectClass, 'EFFECT_CLASS_')),
    approvalFacts(a),
    decisionForm(a, me, done));
}

// gather reads what waits, following each list's pages up to listAll's
// bound: an empty first page does not mean that nothing waits.
async function gather() {
  const [approvals, asking, busy] = await Promise.all([
    listAll('GovernanceService/ListApprovals', { pendingOnly: true, pageSize: 100 }, 'approvals'),
    listAll('QueryService/ListTasks', { statuses: ['TASK_STATUS_WAITING_FOR_INPUT'], pageSize: 100 }, 'tasks'),
    listAll('QueryService/ListTasks', { statuses: open, pageSize: 100 }, 'tasks'),
  ]);
  const unknown = [];
  for (const t of busy.items) {
    for (const a of t.actions || []) {
      if (a.status === 'ACTION_STATUS_UNKNOWN' || a.status === 'ACTION_STATUS_PERSON_EXECUTING') unknown.push({ t, a });
    }
  }
  return { approvals: approvals.items, questions: asking.items.filter((t) => t.openInput), unknown,
    more: { approvals: approvals.more, questions: asking.more, unknown: busy.more } };
}

function questionCard(t, me, done) {
  return h('div', { class: 'card inner', 'data-question-task': t.contract.taskId },
    h('p', {}, h('a', { href: '#/task/' + encodeURIComponent(t.contract.taskId) }, t.contract.intent || t.contract.taskId)),
    answerForm(t, me, done));
}

function unknownCard({ t, a }, me, done) {
  return h('div', { class: 'card inner', 'data-unknown': a.actionId },
    h('p', {}, h('a', { href: '#/task/' + encodeURIComponent(t.contract.taskId) }, t.contract.intent || t.contract.taskId), ' · ', label(a.status, 'ACTION_STATUS_')),
    maySettle(a, me) ? settleForm(t.contract.taskId, a, done) : h('p', { class: 'note' }, 'Settling an unknown outcome needs the operator role; a person\'s own execution, that person.'));
}

// items are the inbox's three lists as steady lists take them: a key, a
// signature of what is shown, and how to draw it.
function items(g, me, done) {
  return {
    approvals: g.approvals.map((a) => ({ key: a.approvalId, sig: JSON.stringify(a.votes || []), render: () => approvalCard(a, me, done) })),
    questions: g.questions.map((t) => ({ key: t.openInput.questionId || t.contract.taskId, sig: '', render: () => questionCard(t, me, done) })),
    unknown: g.unknown.map((u) => ({ key: u.a.actionId, sig: u.a.status, render: () => unknownCard(u, me, done) })),
  };
}

const kinds = [
  ['approvals', 'Approvals waiting', 'Nothing waits for approval.'],
  ['questions', 'Questions', 'No question waits for an answer.'],
  ['unknown', 'Outcomes to settle', 'No outcome waits to be settled.'],
];

export async function inboxPage(ctx) {
  const gone = { left: false };
  ctx.onLeave(() => { gone.left = true; });
  const lists = Object.fromEntries(kinds.map(([k, , empty]) => [k, steady(empty)]));
  const heads = {};
  const body = h('div', { 'aria-busy': 'true' }, kinds.map(([k, title]) => {
    const s = section(k, title, lists[k].el);
    heads[k] = [s.querySelector('h2'), title];
    return s;
  }));
  const error = h('div', {});
  ctx.main.replaceChildren(h('h1', {}, 'Inbox'), error, body);
  let first = true, gen = 0;
  const load = async () => {
    // Only the latest of overlapping reads (the timer's, a decision's) draws.
    const mine = ++gen;
    let g;
    try { g = await gather(); } catch (err) { if (mine === gen && !gone.left) error.replaceChildren(failure(err, 'Reading the inbox')); return; }
    if (gone.left || mine !== gen) return;
    error.replaceChildren();
    const all = items(g, ctx.me, () => load());
    for (const [k] of kinds) {
      if (first) lists[k].draw(all[k]); else lists[k].update(all[k]);
      // Past the bound, the count says so: more wait than are shown.
      heads[k][0].textContent = `${heads[k][1]} (${all[k].length}${g.more[k] ? ', and more' : ''})`;
    }
    first = false;
    body.setAttribute('aria-busy', 'false');
  };
  const timer = setInterval(load, refreshEvery);
  ctx.onLeave(() => clearInterval(timer));
  await load();
}
