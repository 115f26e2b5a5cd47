// Schedules: the list (ListSchedules, paged by its token) and a
// schedule's page (GetSchedule): when it fires, in words and in its zone,
// what it does when a run overlaps or firings were missed, its runs
// budget, its recent firings and their runs; pause, resume and delete for
// its creator and operators (the server refuses anyone else anyway).
import { call } from './api.js';
import { listPage } from './lists.js';
import { h, facts, label, badge, when, money, section, failure, toast, raw, bar, arm, field, grid, link } from './ui.js';

const days = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

// seconds reads a protobuf Duration's JSON ("3600s", "1.5s").
function seconds(d) {
  return d ? Number(String(d).replace(/s$/, '')) : 0;
}

function span(sec) {
  for (const [n, unit] of [[86400, 'day'], [3600, 'hour'], [60, 'minute']]) {
    if (sec >= n && sec % n === 0) return `${sec / n} ${unit}${sec / n === 1 ? '' : 's'}`;
  }
  return `${sec} second${sec === 1 ? '' : 's'}`;
}

// cronWords says the common crons in words (a fixed time, every day or
// on one weekday), and any other as the expression it is.
function cronWords(cron) {
  const f = String(cron).trim().split(/\s+/);
  const num = (s) => /^\d+$/.test(s);
  if (f.length === 5 && num(f[0]) && num(f[1]) && f[2] === '*' && f[3] === '*' && (f[4] === '*' || num(f[4]))) {
    const at = `${f[1].padStart(2, '0')}:${f[0].padStart(2, '0')}`;
    return f[4] === '*' ? `every day at ${at}` : `every ${days[Number(f[4])] || 'day ' + f[4]} at ${at}`;
  }
  if (f.length === 5 && num(f[0]) && f.slice(1).every((x) => x === '*')) return `every hour at minute ${f[0]}`;
  return `on the cron "${cron}"`;
}

export function specWords(spec = {}) {
  const fires = spec.cron ? cronWords(spec.cron) : spec.interval ? `every ${span(seconds(spec.interval))}` : 'never (no cron or interval)';
  return `${fires}${spec.cron ? ' (cron ' + spec.cron + ')' : ''}`;
}

function overlapWords(o = {}) {
  switch (o.policy) {
    case 'OVERLAP_POLICY_QUEUE': return `the firing is queued, up to ${o.queueLimit || 1} waiting, and runs when it ends`;
    case 'OVERLAP_POLICY_CANCEL_PREVIOUS': return 'the previous run is cancelled and the firing runs';
    default: return 'the firing is skipped';
  }
}

function catchUpWords(c = {}) {
  switch (c.rule) {
    case 'CATCH_UP_RULE_LAST': return 'the last one runs, the others are recorded missed';
    case 'CATCH_UP_RULE_ALL_WITHIN': return `all within ${span(seconds(c.window))} run, older ones are recorded missed`;
    default: return 'none runs: they are recorded missed';
  }
}

function listRow(s) {
  const k = (s.template && s.template.contract) || {};
  return h('tr', { 'data-schedule-id': s.scheduleId },
    h('td', {}, link('schedule', s.scheduleId, raw(k.intent || s.scheduleId)), h('div', { class: 'sub mono' }, s.scheduleId)),
    h('td', {}, badge(s.status, 'SCHEDULE_STATUS_')),
    h('td', {}, specWords(s.spec), h('div', { class: 'sub' }, (s.spec && s.spec.timeZone) || 'UTC')),
    h('td', {}, when(s.nextFiringTime)),
    h('td', {}, String(s.runsStarted || 0)),
    h('td', {}, s.creator || '—'));
}

export function schedulesPage(ctx) {
  return listPage(ctx, { title: 'Schedules', method: 'ScheduleService/ListSchedules', key: 'schedules', route: 'schedules',
    caption: 'Schedules', heads: ['Schedule', 'Status', 'Fires', 'Next firing', 'Runs', 'Creator'], row: listRow, empty: 'No schedule yet.' });
}

function firingRow(f) {
  return h('tr', { 'data-firing': f.firingTime || '', 'data-disposition': f.disposition || '' },
    h('td', {}, when(f.firingTime)),
    h('td', {}, badge(f.disposition, 'FIRING_DISPOSITION_'), f.missedCount ? h('div', { class: 'sub' }, `${f.missedCount} firings from `, when(f.missedFrom)) : null),
    h('td', {}, f.taskId ? link('task', f.taskId, h('span', { class: 'mono' }, f.taskId)) : '—',
      f.cancelledTaskId ? h('div', { class: 'sub' }, 'cancelled ', link('task', f.cancelledTaskId)) : null),
    h('td', {}, f.reason ? raw(f.reason) : '—'),
    h('td', {}, when(f.recordedAt)));
}

function runsBudget(s) {
  const k = (s.template && s.template.contract) || {};
  const rb = (s.template && s.template.runsBudget) || {};
  const cur = (k.budget && k.budget.currency) || '';
  const rows = [bar('rb-tokens', 'Tokens committed by its runs', s.committedTokens, rb.maxTokens, String)];
  if (rb.maxCostMicros || s.committedCostMicros) rows.push(bar('rb-cost', 'Cost committed by its runs', s.committedCostMicros, rb.maxCostMicros, (v) => money(v, cur)));
  return section('runs-budget', 'Runs budget', rows,
    h('p', { class: 'sub' }, 'Each run started commits its own budget; a firing that would pass the runs budget is not run.'));
}

function template(s) {
  const k = (s.template && s.template.contract) || {};
  const b = k.budget || {};
  return section('template', 'Each run', facts([
    ['Intent', raw(k.intent || '')], ['Desired outcome', k.desiredOutcome ? raw(k.desiredOutcome) : ''],
    ['Accountable owner', k.accountableOwnerRef], ['Requester', k.requesterRef], ['Risk tier', label(k.riskTier, 'RISK_TIER_')],
    ['Tools', k.allowedTools], ['Budget of a run', [b.maxTokens ? `${b.maxTokens} tokens` : '', b.maxCostMicros ? money(b.maxCostMicros, b.currency) : ''].filter(Boolean).join(', ')],
    ['Objective', k.objectiveId ? link('objective', k.objectiveId) : ''],
  ]));
}

function head(s) {
  const k = (s.template && s.template.contract) || {};
  const spec = s.spec || {};
  return h('div', { class: 'task-head' },
    h('h1', {}, 'Schedule: ', raw(k.intent || s.scheduleId)), h('p', {}, badge(s.status, 'SCHEDULE_STATUS_')),
    facts([['Schedule', h('code', {}, s.scheduleId)], ['Fires', h('span', { 'data-spec': '' }, specWords(spec))], ['Time zone', spec.timeZone || 'UTC'],
      ['Starts', spec.startTime ? when(spec.startTime) : ''], ['Ends', spec.endTime ? when(spec.endTime) : 'never'],
      ['Next firing', h('span', { 'data-next': '' }, s.nextFiringTime ? when(s.nextFiringTime) : 'none')],
      ['When a run is still going', overlapWords(s.overlap)], ['Missed firings', catchUpWords(s.catchUp)],
      ['Runs started', String(s.runsStarted || 0)], ['Latest run', s.lastTaskId ? link('task', s.lastTaskId) : ''],
      ['Queued', (s.queued || []).length ? `${s.queued.length} firing(s)` : ''],
      ['Creator', s.creator], ['Created', when(s.createdAt)]]));
}

// mayControl mirrors the control plane's rule: the creator or an operator.
function mayControl(s, me) {
  if (s.status === 'SCHEDULE_STATUS_DELETED' || s.status === 'SCHEDULE_STATUS_ENDED') return { ok: false, why: 'It fires no more.' };
  if (s.creator === me.principal || (me.roles || []).some((r) => r === 'operator' || r === 'admin')) return { ok: true };
  return { ok: false, why: `Pausing, resuming and deleting it is for its creator (${s.creator}) or an operator.` };
}

function controls(s, me, done) {
  const may = mayControl(s, me);
  if (!may.ok) return h('p', { class: 'note', 'data-cannot-control': '' }, may.why);
  const reason = h('input', { spellcheck: 'false' });
  const send = async (verb, word) => {
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    try {
      const resp = await call(`ScheduleService/${verb}Schedule`, { scheduleId: s.scheduleId, reason: reason.value });
      toast(`The schedule is ${word}.`);
      done(resp.schedule);
    } catch (err) {
      toast(`Refused: ${err.code} — ${err.message}`, true);
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  };
  const confirm = h('button', { type: 'button', class: 'bad', 'data-do': 'delete-confirm', hidden: true, onclick: () => send('Delete', 'deleted') }, 'Delete for good: no firing after this');
  const form = h('form', { class: 'controls', 'aria-label': 'Steer the schedule' },
    field('schedule-reason', 'Reason (for the record)', reason),
    h('div', { class: 'buttons' },
      s.status === 'SCHEDULE_STATUS_PAUSED'
        ? h('button', { type: 'button', class: 'primary', 'data-do': 'resume', onclick: () => send('Resume', 'active') }, 'Resume')
        : h('button', { type: 'button', 'data-do': 'pause', onclick: () => send('Pause', 'paused') }, 'Pause'),
      h('button', { type: 'button', class: 'bad', 'data-do': 'delete', 'aria-expanded': 'false', onclick: (e) => {
        confirm.hidden = !confirm.hidden;
        e.target.setAttribute('aria-expanded', String(!confirm.hidden));
      } }, 'Delete…'), confirm));
  form.addEventListener('submit', (e) => e.preventDefault());
  arm(form.querySelectorAll('button'));
  return form;
}

function draw(ctx, s, reload) {
  const firings = [...(s.recentFirings || [])].reverse();
  ctx.main.replaceChildren(head(s),
    section('steer', 'Pause, resume, delete', controls(s, ctx.me, reload)),
    runsBudget(s), template(s),
    section('firings', `Recent firings (${firings.length})`, firings.length
      ? grid('Firings, newest first', ['Firing', 'What became of it', 'Run', 'Reason', 'Recorded'], firings.map(firingRow), 'list compact')
      : h('p', { class: 'empty' }, 'It has not fired yet.')),
    h('p', {}, h('a', { href: '#/schedules' }, 'All schedules')));
}

const refreshEvery = 5000;

export async function schedulePage(ctx, id) {
  ctx.main.replaceChildren(h('p', { 'aria-busy': 'true' }, 'Loading ', id, '…'));
  // seq orders what the page draws: an answer to a read started before
  // the latest one, or before a pause's own answer, is not drawn.
  let shown = '', seq = 0, timer = 0;
  const show = (s) => {
    const sig = JSON.stringify(s);
    if (ctx.left() || sig === shown) return;
    shown = sig;
    draw(ctx, s, (next) => { seq++; show(next); });
  };
  const load = async () => {
    const mine = ++seq;
    const resp = await call('ScheduleService/GetSchedule', { scheduleId: id });
    if (mine !== seq) return;
    // Never under a person's typing a reason or reaching for a button.
    const a = document.activeElement;
    if (shown && a && ctx.main.contains(a) && /^(INPUT|BUTTON)$/.test(a.tagName)) return;
    show(resp.schedule);
  };
  ctx.onLeave(() => clearTimeout(timer));
  try { await load(); } catch (err) {
    if (ctx.left()) return;
    ctx.main.replaceChildren(h('h1', {}, 'Schedule ', id), failure(err, err.code === 'not_found' ? 'Not found' : 'Reading the schedule'));
    return;
  }
  // Firings come on their own: the page reads the schedule again while
  // shown, the next read once the last one answered, so a slow server
  // never has reads piling up.
  const next = () => { if (!ctx.left()) timer = setTimeout(refresh, refreshEvery); };
  const refresh = () => load().catch((err) => { if (!ctx.left()) toast('Reloading: ' + err.message, true); }).finally(next);
  next();
}
