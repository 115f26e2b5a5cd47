// The tasks list: ListTasks with its server-side filters, paged with its
// page token, refreshed while it is shown.
import { call } from './api.js';
import { h, field, label, badge, when, failure, pageSize, pager } from './ui.js';

export const taskStatuses = ['PENDING', 'RUNNING', 'WAITING_FOR_APPROVAL', 'WAITING_FOR_INPUT', 'PAUSED',
  'RECONCILING', 'COMPENSATING', 'SUSPENDED', 'PRODUCED', 'ACCEPTED', 'FAILED', 'CANCELLED'];
const riskTiers = ['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'];
const refreshEvery = 10000;

function select(name, values, prefix, chosen) {
  return h('select', { name },
    h('option', { value: '' }, 'any'),
    values.map((v) => h('option', { value: v, selected: chosen === v }, label(prefix + v, prefix))));
}

function request(params) {
  const req = { pageSize: pageSize(params) };
  if (params.get('status')) req.statuses = ['TASK_STATUS_' + params.get('status')];
  if (params.get('risk')) req.riskTiers = ['RISK_TIER_' + params.get('risk')];
  for (const k of ['owner', 'tool', 'text']) if (params.get(k)) req[k] = params.get(k);
  if (params.get('page')) req.pageToken = params.get('page');
  return req;
}

function row(t) {
  const k = t.contract || {};
  const open = (t.actions || []).filter((a) => a.status === 'ACTION_STATUS_AWAITING_APPROVAL').length;
  return h('tr', { 'data-task-id': k.taskId },
    h('td', {}, h('a', { href: '#/task/' + encodeURIComponent(k.taskId) }, k.intent || k.taskId),
      h('div', { class: 'sub mono' }, k.taskId)),
    h('td', {}, badge(t.status, 'TASK_STATUS_')),
    h('td', {}, label(k.riskTier, 'RISK_TIER_')),
    h('td', {}, k.accountableOwnerRef || '—'),
    h('td', {}, String((t.actions || []).length), open ? h('span', { class: 'sub' }, ` (${open} awaiting approval)`) : null),
    h('td', {}, when(t.createdAt)));
}

export async function tasksPage(ctx) {
  const p = ctx.params;
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter tasks' },
    field('f-status', 'Status', select('status', taskStatuses, 'TASK_STATUS_', p.get('status'))),
    field('f-owner', 'Owner', h('input', { name: 'owner', value: p.get('owner') || '', placeholder: 'user:ana' })),
    field('f-risk', 'Risk tier', select('risk', riskTiers, 'RISK_TIER_', p.get('risk'))),
    field('f-tool', 'Tool', h('input', { name: 'tool', value: p.get('tool') || '', placeholder: 'wire' })),
    field('f-text', 'Text', h('input', { name: 'text', type: 'search', value: p.get('text') || '' })),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    if (p.get('size')) q.set('size', p.get('size'));
    for (const [k, v] of new FormData(form)) if (v) q.set(k, String(v));
    location.hash = '#/tasks?' + q;
  });
  const body = h('div', { 'aria-live': 'polite', 'aria-busy': 'true' });
  ctx.main.replaceChildren(h('h1', {}, 'Tasks'), form, body);

  const load = async () => {
    let resp;
    try {
      resp = await call('QueryService/ListTasks', request(p));
    } catch (err) {
      body.replaceChildren(failure(err, 'Listing tasks'));
      return;
    }
    const tasks = resp.tasks || [];
    body.replaceChildren(
      tasks.length === 0 ? h('p', { class: 'empty' }, 'No task matches.') :
        h('table', { class: 'list' },
          h('caption', { class: 'visually-hidden' }, 'Tasks, oldest first'),
          h('thead', {}, h('tr', {}, ['Task', 'Status', 'Risk', 'Owner', 'Actions', 'Created'].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, tasks.map(row))),
      pager('tasks', p, resp.nextPageToken));
    body.setAttribute('aria-busy', 'false');
  };
  // The timer is set before the first read: leaving during it stops it.
  const timer = setInterval(load, refreshEvery);
  ctx.onLeave(() => clearInterval(timer));
  await load();
}
