// The receipt's Markdown, rendered by hand into DOM nodes: headings,
// lists, tables, code spans and paragraphs — what receipts use — and every
// character of it as text, never as markup.
import { h } from './ui.js';

function inline(text) {
  const out = [];
  const parts = text.split(/(`[^`]*`|\*\*[^*]+\*\*)/);
  for (const p of parts) {
    if (p.startsWith('`') && p.endsWith('`') && p.length > 1) out.push(h('code', {}, p.slice(1, -1)));
    else if (p.startsWith('**') && p.endsWith('**') && p.length > 3) out.push(h('strong', {}, p.slice(2, -2)));
    else if (p) out.push(p);
  }
  return out;
}

function cells(line) {
  return line.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
}

export function receiptView(md) {
  const root = h('div', { class: 'receipt' });
  const lines = md.split('\n');
  let list = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    if (!/^\s*[-*]\s+/.test(line)) list = null;
    if (heading) {
      // The page's own h1 and h2 come first: the receipt's headings nest under them.
      root.append(h('h' + Math.min(6, heading[1].length + 2), {}, inline(heading[2])));
    } else if (/^\s*[-*]\s+/.test(line)) {
      if (!list) { list = h('ul'); root.append(list); }
      list.append(h('li', {}, inline(line.replace(/^\s*[-*]\s+/, ''))));
    } else if (line.startsWith('|') && lines[i + 1] && /^\|?\s*:?-{3,}/.test(lines[i + 1])) {
      const head = cells(line);
      const body = [];
      i += 2;
      while (i < lines.length && lines[i].startsWith('|')) body.push(cells(lines[i++]));
      i--;
      root.append(h('table', { class: 'list compact' },
        h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, inline(c))))),
        h('tbody', {}, body.map((r) => h('tr', {}, r.map((c) => h('td', {}, inline(c))))))));
    } else if (line.trim()) {
      root.append(h('p', {}, inline(line)));
    }
  }
  return root;
}
