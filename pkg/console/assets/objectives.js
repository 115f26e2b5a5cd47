// Objectives: the list (ListObjectives, paged by its token) and an
// objective's page (GetObjective): its owner, intent and status, its
// budget against what its tasks reserved and spent, and its tasks. An
// intent is shown as text, its hidden characters as escapes.
import { call } from './api.js';
import { listPage } from './lists.js';
import { h, facts, badge, when, money, section, failure, raw, bar, pageSize, pager, grid, link } from './ui.js';

function listRow(o) {
  const b = o.budget || {};
  return h('tr', { 'data-objective-id': o.objectiveId },
    h('td', {}, link('objective', o.objectiveId, raw(o.intent || o.objectiveId)), h('div', { class: 'sub mono' }, o.objectiveId)),
    h('td', {}, badge(o.status, 'OBJECTIVE_STATUS_')),
    h('td', {}, o.ownerRef || '—'),
    h('td', {}, b.maxTokens ? `${o.reservedTokens || 0} of ${b.maxTokens} tokens` : `${o.reservedTokens || 0} tokens (no cap)`),
    h('td', {}, String(o.tasksAdded || 0)),
    h('td', {}, when(o.createdAt)));
}

export function objectivesPage(ctx) {
  return listPage(ctx, { title: 'Objectives', method: 'QueryService/ListObjectives', key: 'objectives', route: 'objectives',
    caption: 'Objectives, oldest first', heads: ['Objective', 'Status', 'Owner', 'Reserved by its tasks', 'Tasks', 'Created'], row: listRow, empty: 'No objective yet.' });
}

function budgets(o, pr) {
  const b = o.budget || {};
  const cur = b.currency || '';
  const rows = [
    bar('ob-spent', 'Tokens spent by its tasks', pr.spentTokens, b.maxTokens, String),
    bar('ob-reserved', 'Tokens reserved by its tasks', o.reservedTokens, b.maxTokens, String),
  ];
  if (b.maxCostMicros || pr.spentCostMicros) {
    rows.push(bar('ob-cost', 'Cost spent by its tasks', pr.spentCostMicros, b.maxCostMicros, (v) => money(v, cur)),
      bar('ob-cost-reserved', 'Cost reserved by its tasks', o.reservedCostMicros, b.maxCostMicros, (v) => money(v, cur)));
  }
  return section('objective-budget', 'Budget across its tasks', rows,
    pr.reservationsWithoutTask ? h('p', { class: 'note' }, `${pr.reservationsWithoutTask} reservation(s) for a task that was never made stay reserved.`) : null);
}

function progress(pr) {
  const counts = (pr.statuses || []).map((s) => h('li', { 'data-count-status': s.status }, badge(s.status, 'TASK_STATUS_'), ` ${s.count}`));
  return section('objective-progress', 'Its tasks taken together', facts([
    ['Tasks', `${pr.tasks || 0} (sub-tasks included)`],
    ['Accepted', `${pr.accepted || 0} of ${pr.tasks || 0}`],
    ['Spent', `${pr.spentTokens || 0} tokens${pr.spentCostMicros ? ', ' + money(pr.spentCostMicros) : ''}`],
  ]), counts.length ? h('ul', { class: 'counts' }, counts) : null);
}

// acceptance is where a task's latest acceptance round stands.
function acceptance(t) {
  const rounds = t.acceptance || [];
  const last = rounds[rounds.length - 1];
  if (!last) return '—';
  return last.decision ? badge(last.decision, 'ACCEPTANCE_DECISION_') : `round ${last.round || rounds.length}, waiting`;
}

// used is a budget line: what a task used (what it reserved for its
// sub-tasks included) of its cap.
function used(n, max, show) {
  return Number(max) > 0 ? `${show(n || 0)} of ${show(max)}` : show(n || 0);
}

function taskRow(t, cur) {
  const k = t.contract || {};
  const u = t.budgetUsed || {};
  const b = k.budget || {};
  return h('tr', { 'data-task-id': k.taskId },
    h('td', {}, link('task', k.taskId, raw(k.intent || k.taskId)), h('div', { class: 'sub mono' }, k.taskId)),
    h('td', {}, badge(t.status, 'TASK_STATUS_')),
    h('td', { 'data-used': '' }, used(u.tokens, b.maxTokens, String), u.costMicros || b.maxCostMicros ? ', ' + used(u.costMicros, b.maxCostMicros, (v) => money(v, cur)) : ''),
    h('td', {}, acceptance(t)),
    h('td', {}, k.parentTaskId ? link('task', k.parentTaskId, h('span', { class: 'mono' }, k.parentTaskId)) : '—'));
}

function head(o) {
  return h('div', { class: 'task-head' },
    h('h1', {}, raw(o.intent || o.objectiveId)), h('p', {}, badge(o.status, 'OBJECTIVE_STATUS_'), ' ', o.closeReason ? raw(o.closeReason) : ''),
    facts([['Objective', h('code', {}, o.objectiveId)], ['Owner', o.ownerRef], ['Desired outcome', o.desiredOutcome ? raw(o.desiredOutcome) : ''],
      ['Created by', o.createdBy], ['Created', when(o.createdAt)], ['Closed by', o.closedBy], ['Closed', o.closedAt ? when(o.closedAt) : ''],
      ['Tenant', o.tenant]]));
}

export async function objectivePage(ctx, id) {
  const p = ctx.params;
  ctx.main.replaceChildren(h('p', { 'aria-busy': 'true' }, 'Loading ', id, '…'));
  let resp;
  try {
    resp = await call('QueryService/GetObjective', { objectiveId: id, pageSize: pageSize(p), pageToken: p.get('page') || undefined });
  } catch (err) {
    if (ctx.left()) return;
    ctx.main.replaceChildren(h('h1', {}, 'Objective ', id), failure(err, err.code === 'not_found' ? 'Not found' : 'Reading the objective'));
    return;
  }
  if (ctx.left()) return;
  const o = resp.objective, pr = resp.progress || {};
  const tasks = resp.tasks || [];
  const cur = (o.budget || {}).currency || '';
  ctx.main.replaceChildren(head(o), budgets(o, pr), progress(pr),
    section('objective-tasks', 'Its tasks', tasks.length
      ? grid('Tasks that name it, oldest first', ['Task', 'Status', 'Budget used (tokens; reserved for sub-tasks included)', 'Acceptance', 'Sub-task of'], tasks.map((t) => taskRow(t, cur)), 'list compact')
      : h('p', { class: 'empty' }, 'No task names it yet.'),
    pager('objective/' + encodeURIComponent(id), p, resp.nextPageToken)),
    h('p', {}, h('a', { href: '#/objectives' }, 'All objectives')));
}
