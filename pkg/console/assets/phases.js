// A task's milestones, as Task.milestones holds them (docs/milestones.md):
// order, status, progress, actions against the cap, spend against the
// budget line, the current one marked.
import { h, badge, money, raw, grid } from './ui.js';

function progress(m) {
  const parts = [];
  if (m.steps) parts.push(`${m.stepsDone || 0} of ${m.steps} steps done`);
  if (m.percent || m.note) parts.push(`${m.percent || 0} % by the agent`);
  return h('span', {}, parts.join('; ') || '—', m.note ? h('div', { class: 'sub' }, raw(m.note)) : null);
}

function line(used, max, show) {
  return max && Number(max) > 0 ? `${show(used)} of ${show(max)}` : `${show(used)} (no cap)`;
}

function row(m, i, current, cur) {
  const here = m.milestoneId === current;
  return h('tr', { 'data-milestone': m.milestoneId, 'data-status': m.status || '', 'aria-current': here ? 'step' : null, class: here ? 'current' : null },
    h('td', {}, String(i + 1)),
    h('td', {}, raw(m.title || m.milestoneId), h('div', { class: 'sub mono' }, m.milestoneId), here ? h('strong', { class: 'now' }, 'current') : null),
    h('td', {}, badge(m.status, 'MILESTONE_STATUS_')),
    h('td', {}, progress(m)),
    h('td', {}, line(m.actionsUsed || 0, m.maxActions, String), m.actionsGranted ? h('div', { class: 'sub' }, `${m.actionsGranted} granted by resumes`) : null),
    h('td', {}, line(m.tokens || 0, m.maxTokens, (v) => `${v || 0} tokens`),
      m.costMicros || m.maxCostMicros ? h('div', {}, line(m.costMicros || 0, m.maxCostMicros, (v) => money(v, cur))) : null));
}

// milestones is the section's content, or null when the contract
// declares none.
export function milestones(t, cur) {
  const ms = t.milestones || [];
  if (ms.length === 0) return null;
  return h('div', {},
    h('p', { 'data-current-milestone': t.currentMilestone || '' }, t.currentMilestone ? ['The task is in ', raw(t.currentMilestone, 'mono'), '.'] : 'Every milestone is done.'),
    grid('Milestones, in the order of the work', ['#', 'Milestone', 'Status', 'Progress', 'Actions and decisions', 'Spent'],
      ms.map((m, i) => row(m, i, t.currentMilestone, cur)), 'list compact'));
}
