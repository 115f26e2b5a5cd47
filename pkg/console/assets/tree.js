// A task's tree of sub-tasks (QueryService/GetTaskTree): each node with
// its status, what it spent itself and with everything below it, and its
// current milestone. A node whose sub-tasks are not all listed (a page's
// end, the depth) offers the next ones, read by its children_page_token.
import { call } from './api.js';
import { h, badge, money, failure, raw, link } from './ui.js';

// depth is how many levels one read shows below the task; deeper ones
// come with "more".
const depth = 6;

// children is how many sub-tasks of a node one read lists: 50, or what
// the address asks (#/task/ID?children=N, 1 to 200).
export function childrenPerNode(params) {
  const n = Number(params.get('children'));
  return Number.isInteger(n) && n >= 1 && n <= 200 ? n : 50;
}

function spent(n, cur) {
  const own = `${n.tokens || 0} tokens${n.costMicros ? ', ' + money(n.costMicros, cur) : ''}`;
  const below = n.childCount
    ? `; with its ${Math.max(0, (n.subtreeTasks || 1) - 1)} below: ${n.subtreeTokens || 0} tokens${n.subtreeCostMicros ? ', ' + money(n.subtreeCostMicros, cur) : ''}`
    : '';
  return h('span', { class: 'sub', 'data-spent': n.tokens || 0, 'data-subtree-spent': n.subtreeTokens || 0 }, ` spent ${own}${below}`);
}

// more reads the node's next sub-tasks and puts them where the button
// was; before is how many of them earlier reads listed.
function more(n, o, before = 0) {
  if (!n.childrenPageToken) return null;
  const shown = before + (n.children || []).length;
  const button = h('button', { type: 'button', 'data-more': n.taskId }, `more… (${shown} of ${n.childCount || '?'} shown)`);
  button.addEventListener('click', async () => {
    button.disabled = true;
    let resp;
    try {
      resp = await call('QueryService/GetTaskTree', { taskId: n.taskId, pageToken: n.childrenPageToken, maxDepth: depth, maxChildren: o.size });
    } catch (err) {
      button.replaceWith(failure(err, 'More sub-tasks'));
      return;
    }
    const next = resp.root || {};
    button.closest('li').replaceWith(...(next.children || []).map((c) => node(c, o)), ...[more(next, o, shown)].filter(Boolean).map((b) => h('li', {}, b)));
  });
  return button;
}

function node(n, o) {
  const kids = (n.children || []).map((c) => node(c, o));
  const tail = more(n, o);
  return h('li', { 'data-tree-task': n.taskId, 'data-status': n.status || '' },
    link('task', n.taskId, raw(n.intent || n.taskId)), ' ', badge(n.status, 'TASK_STATUS_'),
    n.milestoneId ? h('span', { class: 'sub' }, ' · milestone ', raw(n.milestoneId, 'mono')) : null,
    spent(n, o.cur),
    kids.length || tail ? h('ul', { class: 'tree' }, kids, tail ? h('li', {}, tail) : null) : null);
}

// taskTree is the section's content: the tree below the task, or null
// when it delegated nothing.
export async function taskTree(taskId, cur, size) {
  const o = { cur, size };
  let resp;
  try {
    resp = await call('QueryService/GetTaskTree', { taskId, maxDepth: depth, maxChildren: size });
  } catch (err) {
    return failure(err, 'The task tree');
  }
  const root = resp.root || {};
  if (!root.childCount) return null;
  const tail = more(root, o);
  return h('div', {},
    h('p', { 'data-subtree': '' }, `${root.subtreeTasks || 1} tasks in all, which spent ${root.subtreeTokens || 0} tokens`,
      root.subtreeCostMicros ? ', ' + money(root.subtreeCostMicros, cur) : '', ` (this task itself: ${root.tokens || 0} tokens).`),
    h('ul', { class: 'tree', 'aria-label': 'Sub-tasks' }, (root.children || []).map((c) => node(c, o)), tail ? h('li', {}, tail) : null));
}
