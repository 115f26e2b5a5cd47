// A plan's steps as a graph: one column per depth (a step sits right of
// everything it depends on), an arrow per dependency, each step coloured
// by its state. The same facts follow as a table, for screen readers and
// for copying.
import { h, svg, label, badge } from './ui.js';

const W = 168, H = 52, GX = 56, GY = 18, PAD = 12;

function kind(step) {
  const kinds = { action: 'action', subTask: 'sub-task', checkpoint: 'checkpoint', wait: 'wait', foreach: 'for each' };
  for (const k of Object.keys(kinds)) if (step[k]) return kinds[k];
  return 'step';
}

function what(step) {
  if (step.action) return step.action.tool + (step.action.target ? ' → ' + step.action.target : '');
  if (step.subTask) return 'sub-task for ' + (step.subTask.delegateRef || '—');
  if (step.checkpoint) return 'asks: ' + (step.checkpoint.question || '');
  if (step.wait) return 'wait';
  if (step.foreach) return 'for each';
  return '';
}

// depths gives each step its column: the longest chain of dependencies
// under it. A cycle cannot be (the plan was checked), but is cut anyway.
function depths(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const depth = new Map();
  const visit = (id, seen) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id) || !byId.has(id)) return 0;
    seen.add(id);
    const d = Math.max(-1, ...(byId.get(id).dependsOn || []).map((p) => visit(p, seen))) + 1;
    depth.set(id, d);
    return d;
  };
  for (const s of steps) visit(s.id, new Set());
  return depth;
}

function tone(status) {
  const w = label(status, 'STEP_STATUS_');
  return { succeeded: 'good', failed: 'bad', running: 'run', skipped: 'neutral', withdrawn: 'neutral' }[w] || 'pending';
}

export function planGraph(plan) {
  const steps = (plan.plan && plan.plan.steps) || [];
  if (steps.length === 0) return h('p', { class: 'empty' }, 'The plan has no steps to show.');
  const states = new Map((plan.steps || []).map((s) => [s.stepId, s]));
  const depth = depths(steps);
  const columns = [];
  for (const s of steps) (columns[depth.get(s.id)] ||= []).push(s);
  const at = new Map();
  columns.forEach((col, x) => col.forEach((s, y) => at.set(s.id, { x: PAD + x * (W + GX), y: PAD + y * (H + GY) })));
  const width = PAD * 2 + columns.length * W + (columns.length - 1) * GX;
  const height = PAD * 2 + Math.max(...columns.map((c) => c.length)) * (H + GY) - GY;

  const g = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-labelledby': 'plan-graph-title', class: 'plan-graph' },
    svg('title', { id: 'plan-graph-title' }, `Plan version ${plan.version || 1}: ${steps.length} steps, arrows from each step to those that depend on it`),
    svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow-head' }))));
  for (const s of steps) {
    for (const dep of s.dependsOn || []) {
      const a = at.get(dep), b = at.get(s.id);
      if (!a || !b) continue;
      // An arrow that skips columns runs along its own row to the last
      // gap, and bends there: through the gaps, not under the boxes between.
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x - 2, y2 = b.y + H / 2;
      const bend = x2 - GX + 4, mid = (bend + x2) / 2;
      g.append(svg('path', { d: `M ${x1} ${y1} L ${bend} ${y1} C ${mid} ${y1}, ${mid} ${y2}, ${x2} ${y2}`, class: 'edge', 'marker-end': 'url(#arrow)' }));
    }
  }
  for (const s of steps) {
    const { x, y } = at.get(s.id);
    const st = states.get(s.id) || {};
    g.append(svg('g', { class: 'node ' + tone(st.status), 'data-step-id': s.id, 'data-status': st.status || 'STEP_STATUS_PENDING' },
      svg('title', {}, `${s.id}: ${label(st.status || 'STEP_STATUS_PENDING', 'STEP_STATUS_')}${st.reason ? ' — ' + st.reason : ''}`),
      svg('rect', { x, y, width: W, height: H, rx: 6 }),
      svg('text', { x: x + 10, y: y + 20, class: 'node-id' }, clip(s.id, 20)),
      svg('text', { x: x + 10, y: y + 38, class: 'node-what' }, clip(`${label(st.status || 'STEP_STATUS_PENDING', 'STEP_STATUS_')} · ${what(s)}`, 24))));
  }
  const table = h('table', { class: 'list compact' },
    h('caption', {}, 'Plan steps'),
    h('thead', {}, h('tr', {}, ['Step', 'Kind', 'Depends on', 'State', 'Attempts', 'Why'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, steps.map((s) => {
      const st = states.get(s.id) || {};
      return h('tr', {}, h('td', { class: 'mono' }, s.id), h('td', {}, kind(s), h('div', { class: 'sub' }, what(s))),
        h('td', { class: 'mono' }, (s.dependsOn || []).join(', ') || '—'), h('td', {}, badge(st.status || 'STEP_STATUS_PENDING', 'STEP_STATUS_')),
        h('td', {}, String(st.attempts || 0)), h('td', {}, st.reason || ''));
    })));
  return h('div', {}, h('div', { class: 'graph-scroll', tabindex: '0', role: 'group', 'aria-label': 'Plan graph (scrolls)' }, g), table);
}

function clip(s, n) {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}
