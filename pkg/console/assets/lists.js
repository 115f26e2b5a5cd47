// A list page: one page of a list RPC, by the page token in the address
// (#/ROUTE?page=TOKEN, ?size=N), as a table with a pager.
import { call } from './api.js';
import { h, failure, pageSize, pager, grid } from './ui.js';

// listPage draws spec: its title, the method and the key of its items,
// the table's caption and heads, a row per item, and what an empty list
// says.
export async function listPage(ctx, spec) {
  const p = ctx.params;
  const title = h('h1', {}, spec.title);
  ctx.main.replaceChildren(title, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  let resp;
  try {
    resp = await call(spec.method, { pageSize: pageSize(p), pageToken: p.get('page') || undefined });
  } catch (err) {
    if (ctx.left()) return;
    ctx.main.replaceChildren(title, failure(err, 'Listing ' + spec.title.toLowerCase()));
    return;
  }
  if (ctx.left()) return;
  const items = resp[spec.key] || [];
  ctx.main.replaceChildren(title,
    items.length ? grid(spec.caption, spec.heads, items.map(spec.row)) : h('p', { class: 'empty' }, spec.empty),
    pager(spec.route, p, resp.nextPageToken));
}
