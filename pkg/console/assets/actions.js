// Each action of a task as its ledger holds it: the policy snapshot that
// decided it, the votes, the permit, the outcome, retries and cost.
import { h, facts, label, badge, when, money, raw } from './ui.js';
import { votes } from './decide.js';

function snapshot(s) {
  if (!s) return null;
  return h('div', {}, h('h3', {}, 'Policy snapshot'), facts([
    ['Decision', badge(s.decision, 'POLICY_DECISION_')],
    ['Risk tier', label(s.riskTier, 'RISK_TIER_')],
    ['Reasons', s.reasons],
    ['Approver roles', s.requiredApproverRoles],
    ['Approvals needed', s.requiredApprovals],
    ['Bundle revision', h('code', {}, s.bundleRevision || '—')],
    ['Input hash', h('code', {}, s.inputHash || '—')],
    ['Snapshot', h('code', {}, s.snapshotId || '—')],
    ['Evaluated', when(s.evaluatedAt)],
  ]));
}

function permit(p) {
  if (!p) return null;
  return h('div', {}, h('h3', {}, 'Permit'), facts([
    ['Permit', h('code', {}, p.permitId)],
    ['Issued', when(p.issuedAt)],
    ['Expires', when(p.expiresAt)],
    ['Credential', h('code', {}, p.credentialRef || '—')],
  ]));
}

function outcome(o, currency) {
  if (!o) return null;
  return h('div', {}, h('h3', {}, 'Outcome'), facts([
    ['Status', badge(o.status, 'ACTION_STATUS_')],
    ['Failure class', o.failureClass ? label(o.failureClass, 'FAILURE_CLASS_') : ''],
    ['Reason', o.reason],
    ['Attempt', o.attempt],
    ['Cost', o.costMicros ? money(o.costMicros, currency) : ''],
    ['Tokens', o.tokens],
    ['Result hash', o.resultHash ? h('code', {}, o.resultHash) : ''],
    ['Evidence', o.evidence],
    ['Finished', when(o.finishedAt)],
  ]));
}

export function actionItem(a, currency) {
  const summary = h('summary', {},
    raw(a.tool + (a.toolVersion ? '@' + a.toolVersion : ''), 'mono'), ' → ', raw(a.target || '—', 'mono'), ' ',
    badge(a.status, 'ACTION_STATUS_'));
  const open = a.status === 'ACTION_STATUS_AWAITING_APPROVAL' || a.status === 'ACTION_STATUS_UNKNOWN';
  return h('details', { class: 'action', 'data-key': 'action-' + a.actionId, 'data-action-id': a.actionId, 'data-status': a.status, open, 'data-open-by-default': open },
    summary,
    facts([
      ['Action', h('code', {}, a.actionId)],
      ['Action hash', h('code', {}, a.actionHash)],
      ['Proposed by', a.proposedBy],
      ['Proposed', when(a.proposedAt)],
      ['Plan step', a.planStepId],
      ['Attempt', a.attempt],
      ['Retry of', a.retryOf],
      ['Recovery attempt', a.recoveryAttempt],
      ['Waiting', a.waitReason ? `${a.waitReason} (until ${a.waitUntil || '—'})` : ''],
      ['Amendment of', a.amendmentOf],
      ['Amended as', a.amendedAs],
      ['Compensates', a.compensates],
      ['Settled by', a.settledBy],
      ['Claimed by', a.claimedBy],
    ]),
    h('div', { class: 'parts' },
      snapshot(a.snapshot),
      a.approval ? h('div', {}, h('h3', {}, 'Approval'), facts([
        ['Decision', a.approval.decision ? badge(a.approval.decision, 'APPROVAL_DECISION_') : 'waiting'],
        ['Decided by', a.approval.decidedBy],
        ['Comment', a.approval.comment],
      ]), votes(a.approval)) : null,
      permit(a.permit),
      outcome(a.outcome, currency)));
}
