// DOM building from text nodes, never from markup: every string the server
// sends stays text, so a task's intent cannot script the page.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// svg builds an SVG element, as h does an HTML one.
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

// label turns an enum's JSON name into words: ACTION_STATUS_AWAITING_APPROVAL
// with prefix ACTION_STATUS_ → "awaiting approval".
export function label(value, prefix) {
  if (!value) return '—';
  return String(value).replace(prefix, '').toLowerCase().replaceAll('_', ' ');
}

// badge shows a status, coloured by what it means for a person.
export function badge(value, prefix) {
  const word = label(value, prefix);
  let tone = 'neutral';
  if (/succeeded|accepted|approve|allow|produced/.test(word)) tone = 'good';
  else if (/failed|denied|reject|cancelled|deny|unknown|suspended/.test(word)) tone = 'bad';
  else if (/await|waiting|needs|paused|require|stalled|executing/.test(word)) tone = 'wait';
  else if (/running|dispatched|claimed|permitted|approved|reconciling/.test(word)) tone = 'run';
  return h('span', { class: 'badge ' + tone, 'data-status': value || '' }, word);
}

export function when(ts) {
  if (!ts) return '—';
  const d = new Date(ts);
  return h('time', { datetime: ts, title: ts }, d.toLocaleString());
}

// money shows micro-units (cost_micros) in the contract's currency.
export function money(micros, currency) {
  const n = Number(micros || 0) / 1e6;
  return n.toFixed(n < 1 ? 4 : 2) + (currency ? ' ' + currency : '');
}

// bar is one budget: what is used against its cap, as a progress bar.
export function bar(id, name, used, max, show) {
  const u = Number(used || 0), m = Number(max || 0);
  const pct = m > 0 ? Math.min(100, Math.round((u / m) * 100)) : 0;
  const text = m > 0 ? `${show(u)} of ${show(m)} (${pct} %)` : `${show(u)} (no cap)`;
  const fill = h('div', { class: 'fill' + (pct >= 80 ? ' hot' : pct >= 50 ? ' warm' : '') });
  // Through the CSSOM: the policy (style-src 'self') refuses style attributes.
  fill.style.width = pct + '%';
  return h('div', { class: 'budget' },
    h('span', { id }, name), h('span', { class: 'sub' }, text),
    h('div', { class: 'track', role: 'progressbar', 'aria-labelledby': id, 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct, 'aria-valuetext': text }, fill));
}

// facts is a description list of [term, value] pairs, values left out when empty.
export function facts(pairs) {
  const dl = h('dl', { class: 'facts' });
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0)) continue;
    dl.append(h('dt', {}, term), h('dd', {}, Array.isArray(value) ? value.join(', ') : value));
  }
  return dl;
}

// section is a titled region of a page, named by its heading.
export function section(id, title, ...children) {
  return h('section', { class: 'card', 'aria-labelledby': id + '-h', id },
    h('h2', { id: id + '-h' }, title), ...children);
}

export function field(id, text, control) {
  control.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, text), control);
}

let toastTimer = 0;

// toast says briefly what happened, to screen readers too (role=status).
export function toast(message, bad = false) {
  const el = document.getElementById('toast');
  el.textContent = message;
  el.className = 'toast show' + (bad ? ' bad' : '');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = 'toast'; }, 6000);
}

// failure shows an error in place: what the server said, as it said it.
export function failure(err, what) {
  const code = err && err.code ? err.code : 'error';
  return h('p', { class: 'error', role: 'alert', 'data-code': code },
    `${what}: ${code.replaceAll('_', ' ')} — ${err && err.message ? err.message : err}`);
}

export function pretty(json) {
  if (!json) return '';
  try { return JSON.stringify(JSON.parse(json), null, 2); } catch { return json; }
}

// Characters that reorder or hide text (bidi overrides and isolates,
// zero-width marks): in a target or parameters they could show one value
// and mean another, so they are shown as escapes, \u202E and the like.
const invisible = /[\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;

export function visible(s) {
  return String(s ?? '').replace(invisible, (c) => '\\u' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0'));
}

// raw is a value from outside (a tool, a target), escaped as visible does
// and isolated from the text around it.
export function raw(s, cls = '') {
  return h('span', { class: ('raw ' + cls).trim() }, visible(s));
}

// armDelay is how long a decision's buttons stay disabled after they are
// drawn: a redraw never puts a live button under a click meant for
// something else.
const armDelay = 1000;

export function arm(buttons) {
  for (const b of buttons) b.disabled = true;
  setTimeout(() => { for (const b of buttons) if (!b.closest('.gone')) b.disabled = false; }, armDelay);
}

// pageSize is 25 a page, or the size the address asks (1 to 100).
export function pageSize(params) {
  const n = Number(params.get('size'));
  return Number.isInteger(n) && n >= 1 && n <= 100 ? n : 25;
}

// pager links a list's first page and its next one (by the list's page
// token), keeping the route's other parameters.
export function pager(route, params, next) {
  const nav = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  if (params.get('page')) {
    const first = new URLSearchParams(params);
    first.delete('page');
    nav.append(h('a', { href: `#/${route}?${first}` }, 'First page'));
  }
  if (next) {
    const more = new URLSearchParams(params);
    more.set('page', next);
    nav.append(h('a', { href: `#/${route}?${more}`, rel: 'next' }, 'Next page'));
  }
  return nav;
}

// grid is a table: its caption, column heads and rows (<tr> elements).
export function grid(caption, heads, rows, cls = 'list') {
  return h('table', { class: cls }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, heads.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows));
}

// link is a link to a page of the console (#/task/ID and the like).
export function link(route, id, text) {
  return h('a', { href: `#/${route}/${encodeURIComponent(id)}` }, text ?? id);
}
