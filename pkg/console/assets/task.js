// A task's page: its state, what waits on it, budgets, milestones,
// contract versions, plan, actions, the task tree, decisions, timeline
// and receipt, kept live by WatchTask.
import { call, stream } from './api.js';
import { h, facts, label, badge, when, money, section, failure, toast, raw, visible, bar, link } from './ui.js';
import { planGraph } from './plan.js';
import { actionItem } from './actions.js';
import { approvalFacts, decisionForm } from './decide.js';
import { answerForm, settleForm, maySettle } from './forms.js';
import { receiptView } from './receipt.js';
import { taskTree, childrenPerNode } from './tree.js';
import { milestones } from './phases.js';
import { contractVersions } from './versions.js';

function budgets(t) {
  const b = (t.contract && t.contract.budget) || {};
  const u = t.budgetUsed || {};
  const cur = b.currency || '';
  const rows = [bar('b-tokens', 'Tokens', u.tokens, b.maxTokens, String)];
  if (b.maxCostMicros || u.costMicros) rows.push(bar('b-cost', 'Cost', u.costMicros, b.maxCostMicros, (v) => money(v, cur)));
  for (const m of b.milestones || []) {
    const mu = (u.milestones || []).find((x) => x.milestoneId === m.milestoneId) || {};
    rows.push(bar(`b-m-${m.milestoneId}-c`, `Milestone ${m.milestoneId}: cost`, mu.costMicros, m.maxCostMicros, (v) => money(v, cur)));
  }
  return section('budgets', 'Budgets', rows, (u.alerts || []).length ? h('p', { class: 'note' }, 'Alerts: ', u.alerts.join(', ')) : null);
}

async function decisions(taskId) {
  let resp;
  try { resp = await call('QueryService/ListDecisions', { taskId, pageSize: 100 }); } catch (err) {
    return err.code === 'permission_denied' ? h('p', { class: 'note' }, 'Decisions are the task\'s content: shown to its people, operators and auditors.') : failure(err, 'Decisions');
  }
  const ds = resp.decisions || [], items = resp.contextItems || [];
  if (ds.length === 0 && items.length === 0) return h('p', { class: 'empty' }, 'No model decision or context item is on the record.');
  return h('div', {},
    ds.map((d) => {
      const c = d.call || {}, v = d.versions || {};
      const led = d.proposals ? 'proposals' : d.planVersion ? `plan version ${d.planVersion}` : d.question ? `a question: ${d.question}` : d.noAction ? 'no action' : '';
      return h('article', { class: 'decision' }, h('h3', {}, d.decisionId), facts([
        ['Model', [c.provider, c.modelId].filter(Boolean).join(' · ')],
        ['Prompt', [v.promptTemplateId, v.promptVersion].filter(Boolean).join(' v')],
        ['Policy revision', v.policyRevision], ['Code version', v.codeVersion],
        ['Tokens', (Number(c.tokensIn || 0) + Number(c.tokensOut || 0)) || ''], ['Cost', c.costMicros ? money(c.costMicros) : ''],
        ['Cites', d.contextIds], ['Rationale', d.rationale], ['Evidence', d.evidence], ['Led to', led],
        ['Flags', (d.flags || []).map((f) => f.kind || JSON.stringify(f))], ['Decided', when(d.decidedAt)],
      ]));
    }),
    items.length ? h('table', { class: 'list compact' }, h('caption', {}, 'Context items'),
      h('thead', {}, h('tr', {}, ['Item', 'Source', 'Where', 'Sensitivity', 'Fetched', 'Expires', 'Digest'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, items.map((c) => h('tr', {}, h('td', { class: 'mono' }, c.contextId), h('td', {}, c.source || '—'), h('td', { class: 'mono' }, c.uri || '—'),
        h('td', {}, label(c.sensitivity, 'DATA_SENSITIVITY_')), h('td', {}, when(c.fetchedAt)), h('td', {}, when(c.expiresAt)), h('td', { class: 'mono' }, c.digest || ''))))) : null);
}

function timeline(entries) {
  return h('table', { class: 'list compact timeline' }, h('caption', { class: 'visually-hidden' }, 'Events, oldest first'),
    h('thead', {}, h('tr', {}, ['#', 'Time', 'Event', 'By', 'What'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, entries.map((e) => h('tr', {}, h('td', {}, e.sequence), h('td', {}, when(e.time)), h('td', { class: 'mono' }, e.type), h('td', {}, e.actor || ''), h('td', {}, visible(e.summary))))));
}

// scheduleRun names the schedule a run comes from, its firing and the run before it.
function scheduleRun(r) {
  if (!r || !r.scheduleId) return '';
  return h('span', {}, link('schedule', r.scheduleId), ', firing of ', when(r.firingTime),
    r.previousTaskId ? [', after ', link('task', r.previousTaskId)] : '');
}

function header(t) {
  const k = t.contract;
  return h('div', { class: 'task-head' },
    h('h1', {}, raw(k.intent || k.taskId)), h('p', {}, badge(t.status, 'TASK_STATUS_'), ' ', t.statusReason || ''),
    facts([['Task', h('code', {}, k.taskId)], ['Desired outcome', k.desiredOutcome ? raw(k.desiredOutcome) : ''], ['Owner', k.accountableOwnerRef], ['Requester', k.requesterRef],
      ['Authorizer', k.authorizerRef], ['Risk tier', label(k.riskTier, 'RISK_TIER_')], ['Tools', k.allowedTools], ['Parent', k.parentTaskId ? h('a', { href: '#/task/' + k.parentTaskId }, k.parentTaskId) : ''],
      ['Objective', k.objectiveId ? link('objective', k.objectiveId) : ''], ['Schedule run', scheduleRun(t.scheduleRun)],
      ['Created', when(t.createdAt)], ['Deadline', when(k.deadline)], ['Events', t.eventCount]]));
}

function waiting(t, ctx, reload) {
  const parts = [];
  if (t.openInput) parts.push(answerForm(t, ctx.me, reload));
  for (const a of t.actions || []) {
    if (a.status === 'ACTION_STATUS_AWAITING_APPROVAL' && a.approval) {
      // The facts the decision rests on, above its buttons, as in the inbox.
      const ap = { ...a.approval, rationale: a.approval.rationale || a.rationale };
      parts.push(h('div', { class: 'waiting-approval', 'data-approval-id': ap.approvalId },
        h('h3', {}, 'Approval of ', raw(a.tool, 'mono'), ' → ', raw(a.target || '—', 'mono')),
        approvalFacts(ap), decisionForm(ap, ctx.me, reload)));
    }
    if (maySettle(a, ctx.me)) parts.push(settleForm(t.contract.taskId, a, reload));
  }
  return parts.length ? section('waiting', 'Waiting for a person', parts) : null;
}

// keepOpen carries which <details> a person opened or closed across a
// redraw, by their data-key: those whose state is not the one they were
// drawn with (data-open-by-default), which the next draw decides afresh.
function keepOpen(root, draw) {
  const was = new Map([...root.querySelectorAll('details[data-key]')]
    .filter((d) => d.open !== d.hasAttribute('data-open-by-default')).map((d) => [d.dataset.key, d.open]));
  draw();
  for (const d of root.querySelectorAll('details[data-key]')) if (was.has(d.dataset.key)) d.open = was.get(d.dataset.key);
}

// render reads the task and draws its page. Renders overlap (an event, a
// timer, a decision): each takes a generation, and only the latest draws,
// so an older answer never lands last. A render that finds what is shown
// unchanged (force aside) leaves the page, its focus and scroll, alone.
async function render(ctx, taskId, view, force) {
  const gen = ++view.gen;
  const [task, tl, rc] = await Promise.all([
    call('QueryService/GetTask', { taskId }),
    call('QueryService/GetTimeline', { taskId }).catch((err) => ({ err })),
    call('QueryService/GetReceipt', { taskId }).catch((err) => ({ err })),
  ]);
  const t = task.task;
  const stale = () => gen !== view.gen || view.gone();
  const sig = JSON.stringify([t, (tl.entries || []).length, rc.markdown, tl.err && tl.err.code, rc.err && rc.err.code]);
  if (stale()) return t;
  // Counted on the live line (kept across draws): when it was last checked.
  view.live.dataset.checked = String(gen);
  if (!force && sig === view.shown) return t;
  const reload = () => render(ctx, taskId, view, true).catch((err) => toast('Reloading: ' + err.message, true));
  const cur = (t.contract.budget || {}).currency;
  const [subs, decided] = await Promise.all([taskTree(taskId, cur, childrenPerNode(ctx.params)), decisions(taskId)]);
  if (stale()) return t;
  view.shown = sig;
  keepOpen(ctx.main, () => ctx.main.replaceChildren(...[
    h('div', { id: 'overview' }, header(t), view.live,
      waiting(t, ctx, reload),
      budgets(t),
      (t.milestones || []).length ? section('milestones', 'Milestones', milestones(t, cur)) : null,
      section('versions', `Contract (version ${t.contractVersion || 1})`, contractVersions(t, ctx.me, reload)),
      t.plan ? section('plan', `Plan (version ${t.plan.version || 1})`, planGraph(t.plan)) : null,
      section('actions', `Actions (${(t.actions || []).length})`, (t.actions || []).length ? (t.actions || []).map((a) => actionItem(a, cur)) : h('p', { class: 'empty' }, 'No action yet.'))),
    section('subtasks', 'Sub-tasks (the task tree)', subs || h('p', { class: 'empty' }, 'None delegated.')),
    section('decisions', 'Decisions and context', decided),
    section('timeline', 'Timeline', tl.err ? failure(tl.err, 'Timeline') : h('div', { class: 'scroll', tabindex: '0', role: 'group', 'aria-label': 'Timeline (scrolls)' }, timeline(tl.entries || []))),
    section('receipt', 'Receipt', rc.err ? failure(rc.err, 'Receipt') : receiptView(rc.receipt, rc.markdown || '')),
  ].filter(Boolean)));
  return t;
}

// reloadDelay gathers a burst of events into one reload.
const reloadDelay = 150;

export async function taskPage(ctx, taskId) {
  ctx.main.replaceChildren(h('p', { 'aria-busy': 'true' }, 'Loading ', taskId, '…'));
  const live = h('p', { class: 'live', role: 'status', 'data-live': 'connecting' }, 'Connecting to live updates…');
  const stop = new AbortController();
  const view = { gen: 0, shown: '', live, gone: () => stop.signal.aborted };
  let pending = 0;
  ctx.onLeave(() => { stop.abort(); clearTimeout(pending); });
  let t;
  try {
    t = await render(ctx, taskId, view, true);
  } catch (err) {
    if (!view.gone()) ctx.main.replaceChildren(h('h1', {}, 'Task ', taskId), failure(err, err.code === 'not_found' ? 'Not found' : 'Reading the task'));
    return;
  }
  const refresh = () => {
    clearTimeout(pending);
    // A burst of events (an approval, then a permit, a claim, a dispatch)
    // is one reload.
    pending = setTimeout(() => {
      // Never under a person's typing: the reload waits until they leave the field.
      const typing = document.activeElement && ctx.main.contains(document.activeElement) && /^(TEXTAREA|INPUT|SELECT)$/.test(document.activeElement.tagName);
      if (typing) { refresh(); return; }
      render(ctx, taskId, view, false).catch((err) => toast('Reloading: ' + err.message, true));
    }, reloadDelay);
  };
  watch(taskId, t.lastSequence || '0', live, refresh, stop.signal);
}

// watch follows the task's events, reloading the page on each, and
// reconnects after the last sequence seen. A caller who may not read the
// task's content may not watch it: the page is then reloaded on a timer.
async function watch(taskId, after, live, refresh, signal) {
  let last = after;
  while (!signal.aborted) {
    try {
      await stream('QueryService/WatchTask', { taskId, afterSequence: last }, (msg) => {
        if (!msg.record) {
          live.dataset.live = 'on';
          live.textContent = 'Live: following the task\'s events.';
          return;
        }
        last = msg.record.sequence || last;
        refresh();
      }, signal);
      // A stream the server ended cleanly (a restart, a drain) is picked
      // up again after a pause, not at once in a loop.
      await new Promise((r) => setTimeout(r, 1000));
    } catch (err) {
      if (signal.aborted) return;
      if (err.code === 'permission_denied') {
        live.dataset.live = 'polling';
        live.textContent = 'Refreshed every 5 seconds (the live feed carries the task\'s content, which is not shown to you).';
        const timer = setInterval(refresh, 5000);
        signal.addEventListener('abort', () => clearInterval(timer));
        return;
      }
      live.dataset.live = 'off';
      live.textContent = 'Live updates interrupted; reconnecting…';
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}
