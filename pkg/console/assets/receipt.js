// The receipt, drawn from GetReceipt's structured receipt (the proto), not
// from its Markdown: a table cell is the field it says, whatever an agent
// put in a target (a "|" cannot start a column of its own). The Markdown
// is there too, as text, to take away.
import { h, facts, label, badge, when, money, raw } from './ui.js';

function table(caption, head, rows) {
  return h('table', { class: 'list compact' }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c ?? '—'))))));
}

function summary(r) {
  const p = r.progress || {};
  const spent = r.budgetUsed || {};
  return facts([
    ['Task', h('code', {}, r.taskId)],
    ['Intent', r.intent],
    ['Status', h('span', {}, badge(r.status, 'TASK_STATUS_'), ' ', r.statusReason || '')],
    ['Partial', r.partial ? 'yes: the task has not run to an end on its own' : 'no'],
    ['Forked from', r.forkedFrom ? `${r.forkedFrom.parentTaskId} at sequence ${r.forkedFrom.atSequence}` : ''],
    ['Desired outcome', r.desiredOutcome],
    ['Input version', r.inputVersion],
    ['Actions', `${(p.done || []).length} done, ${(p.failed || []).length} failed, ${(p.remaining || []).length} unfinished`],
    ['Policy revisions', r.policyRevisions],
    ['Retries', r.retries],
    ['Fallback', r.producedUnderFallback ? 'the result was produced under a declared fallback' : ''],
    ['Spent', spent.tokens || spent.costMicros ? `${spent.tokens || 0} tokens, ${money(spent.costMicros, spent.currency)}` : ''],
    ['Created', when(r.createdAt)],
    ['Last event', r.lastSequence ? h('span', {}, `#${r.lastSequence} of ${r.eventCount || 0}, hash `, h('code', {}, r.lastEventHash || '—')) : ''],
    ['Elapsed', r.elapsed],
  ]);
}

function calls(list) {
  if (!list.length) return h('p', { class: 'empty' }, 'No actions were proposed.');
  return table('Tool calls', ['Action', 'Tool', 'Target', 'Status', 'Attempts', 'Result or reason', 'Approved / settled by'],
    list.map((c) => [
      h('code', {}, c.actionId), raw(c.tool + (c.toolVersion ? '@' + c.toolVersion : ''), 'mono'), raw(c.target || '—', 'mono'),
      h('span', { 'data-call-status': c.status || '' }, label(c.status, 'ACTION_STATUS_')), String(c.attempts || 0),
      c.reason || (c.resultHash ? ['result ', h('code', {}, c.resultHash)] : '—'),
      [c.approvedBy, c.settledBy, c.executedBy].filter(Boolean).join(', ') || '—',
    ]));
}

function approvals(list) {
  if (!list.length) return null;
  return table('Approvals', ['Approval', 'For', 'Decision', 'By', 'Comment', 'Roles asked'],
    list.map((a) => [
      h('code', {}, a.approvalId), a.planHash ? `plan version ${a.planVersion}` : h('code', {}, a.actionId),
      a.withdrawn ? 'withdrawn' : a.decision ? label(a.decision, 'APPROVAL_DECISION_') : 'waiting',
      a.decidedBy || (a.escalatedTo ? `escalated to ${a.escalatedTo}` : '—'), a.comment || '—', (a.requiredRoles || []).join(', ') || '—',
    ]));
}

// fallbacks draws the engagements of declared fallbacks and the model
// swaps no fallback declares (docs/fallbacks.md); nothing when neither.
function fallbacks(r) {
  const list = r.fallbackEngagements || [];
  const swaps = r.undeclaredModelSwaps || [];
  if (!list.length && !swaps.length) return null;
  const why = (e) => (e ? [e.trigger, e.actionId, e.serviceKey, e.decisionId].filter(Boolean).join(' ') : '—');
  return [
    list.length ? table('Fallbacks', ['Fallback', 'Primary → fallback', 'Engaged because', 'Engaged', 'Cleared', 'Under it'],
      list.map((e) => [h('code', {}, e.fallbackId), raw(`${e.primary} → ${e.fallback}`, 'mono'), why(e.engagedBy), when(e.engagedAt),
        e.clearedAt ? `${when(e.clearedAt)} (${why(e.clearedBy)})` : 'still engaged',
        [...(e.actionIds || []), ...(e.decisionIds || [])].join(', ') || '—'])) : null,
    swaps.length ? table('Undeclared model swaps', ['From', 'To', 'Decision before', 'Decision after'],
      swaps.map((s) => [raw(s.fromModel, 'mono'), raw(s.toModel, 'mono'), h('code', {}, s.fromDecisionId), h('code', {}, s.toDecisionId)])) : null,
  ];
}

function questions(list) {
  if (!list.length) return null;
  return table('Questions', ['Asked', 'By', 'Answer', 'Answered by'],
    list.map((q) => [q.question, q.askedBy || label(q.cause, 'NEEDS_INPUT_CAUSE_'), q.answer || '—', q.answeredBy || '—']));
}

function closing(r) {
  const parts = [];
  if ((r.errors || []).length) parts.push(h('h3', {}, 'Errors'), h('ul', {}, r.errors.map((e) => h('li', {}, e))));
  for (const round of r.acceptanceRounds || []) {
    parts.push(h('h3', {}, `Acceptance, round ${round.round}`), facts([
      ['Decision', round.decision ? badge(round.decision, 'ACCEPTANCE_DECISION_') : 'waiting'], ['By', round.decidedBy], ['Reasons', round.reasons],
      ['Checks', (round.checks || []).map((c) => `${c.criterionId}: ${c.passed ? 'passed' : 'failed'}`)]]));
  }
  if ((r.findings || []).length) {
    parts.push(table('Findings', ['Kind', 'Action', 'What', 'By'],
      r.findings.map((f) => [label(f.kind, 'FINDING_KIND_'), f.actionId || '—', f.description, f.recordedBy])));
  }
  const c = r.credential;
  if (c) parts.push(h('h3', {}, 'Credential'), facts([['Credential', c.credentialId], ['Principal', c.principal], ['Chain', c.chain], ['Expires', when(c.expiresAt)], ['Revoked', c.revoked ? c.revokedReason || 'yes' : '']]));
  return parts;
}

// receiptView draws the receipt; markdown is the same receipt as the
// server writes it for people, kept as text.
export function receiptView(r, markdown) {
  return h('div', { class: 'receipt' },
    summary(r || {}),
    calls((r && r.calls) || []),
    approvals((r && r.approvals) || []),
    questions((r && r.questions) || []),
    fallbacks(r || {}),
    closing(r || {}),
    markdown ? h('details', { 'data-key': 'receipt-markdown' }, h('summary', {}, 'The receipt as Markdown, to copy'),
      h('pre', { class: 'json', tabindex: '0' }, markdown)) : null);
}
