// A list that holds still under a person's pointer. Refreshes do not move
// what is shown: an item that no longer waits stays where it was, greyed
// and inert, and a new one waits behind an "N new — show" control; only
// the person's asking redraws the list. An item that changed is redrawn
// in its place (its buttons armed anew), unless someone is typing in it.
import { h } from './ui.js';

function typingIn(node) {
  const a = document.activeElement;
  return a && node.contains(a) && /^(TEXTAREA|INPUT|SELECT)$/.test(a.tagName);
}

function retire(node) {
  node.classList.add('gone');
  for (const c of node.querySelectorAll('button, textarea, input, select')) c.disabled = true;
  node.append(h('p', { class: 'note gone-note', 'data-gone': '' }, 'This no longer waits: it was decided, withdrawn or settled. "Show the latest" removes it.'));
}

// steady makes the list; items are {key, sig, render} in the order to
// show, sig saying what a redraw would show of the item.
export function steady(emptyText) {
  const list = h('div', {});
  // Always there, always one line: what it says changes, not where the list starts.
  const news = h('div', { class: 'news' });
  let shown = new Map();
  let latest = [];
  const draw = (items) => {
    latest = items;
    shown = new Map(items.map((it) => [it.key, { sig: it.sig, node: it.render() }]));
    list.replaceChildren(...(items.length ? [...shown.values()].map((s) => s.node) : [h('p', { class: 'empty' }, emptyText)]));
    news.replaceChildren(h('span', { class: 'note' }, 'Up to date.'));
  };
  const update = (items) => {
    latest = items;
    const keys = new Set(items.map((it) => it.key));
    let stale = 0;
    for (const [k, s] of shown) {
      if (keys.has(k)) continue;
      stale++;
      if (!s.node.classList.contains('gone')) retire(s.node);
    }
    for (const it of items) {
      const s = shown.get(it.key);
      if (!s || s.sig === it.sig || typingIn(s.node)) continue;
      const node = it.render();
      s.node.replaceWith(node);
      shown.set(it.key, { sig: it.sig, node });
    }
    const fresh = items.filter((it) => !shown.has(it.key)).length;
    news.replaceChildren(fresh || stale
      ? h('button', { type: 'button', 'data-show-latest': '', onclick: () => draw(latest) }, fresh ? `${fresh} new — show` : 'Show the latest')
      : h('span', { class: 'note' }, 'Up to date.'));
  };
  return { el: h('div', {}, news, list), draw, update };
}
