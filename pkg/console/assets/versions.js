// A task's contract versions (docs/revisions.md): each version that was in
// force with its reason, who approved it and what it changed; the
// revisions that never took effect; and the open one, with approve and
// reject for who may decide it. A revision id names one proposed contract
// and its hash for good, so the decision sent by id is bound to the hash
// the page shows.
import { call } from './api.js';
import { h, facts, label, badge, when, toast, field, raw, arm, grid } from './ui.js';

// changes says what a revision changed: the fields, and the new intent or
// outcome as text.
function changes(r) {
  if (!r) return '—';
  const k = r.contract || {};
  const words = { intent: k.intent, desired_outcome: k.desiredOutcome };
  return h('ul', { class: 'changes' }, (r.changed || []).map((c) => h('li', {}, h('code', {}, c),
    words[c] !== undefined ? [': ', raw(words[c] || '')] : null,
    c === 'acceptance_criteria' ? `: ${(k.acceptanceCriteria || []).length} criteria` : null,
    c === 'milestones' ? `: ${(k.milestones || []).map((m) => m.milestoneId).join(', ')}` : null)));
}

function versionRow(v, inForce, byId) {
  const n = v.version || 1;
  return h('tr', { 'data-version': n, 'aria-current': n === inForce ? 'true' : null },
    h('td', {}, `v${n}`, n === inForce ? h('strong', { class: 'now' }, 'in force') : null),
    h('td', {}, v.contractHash ? h('code', { class: 'hash' }, v.contractHash) : '—'),
    h('td', {}, v.reason ? raw(v.reason) : n === 1 ? 'the contract it was created with' : '—'),
    h('td', {}, n === 1 ? '—' : changes(byId.get(v.revisionId))),
    h('td', {}, v.proposedBy || '—'),
    h('td', {}, (v.approvedBy || []).join(', ') || '—'),
    h('td', {}, when(v.effectiveAt)));
}

// mayDecide mirrors the control plane's rule: the accountable owner while
// their approval is owed (or to reject); a holder of a role policy asks
// for, who neither proposed it nor approved it as owner; the proposer, to
// withdraw it. The server has the last word.
export function mayDecide(t, r, me) {
  const owner = (t.contract || {}).accountableOwnerRef;
  const snap = r.snapshot || {};
  const roles = snap.decision === 'POLICY_DECISION_REQUIRE_APPROVAL' ? snap.requiredApproverRoles || [] : [];
  const mine = roles.filter((x) => (me.roles || []).includes(x));
  if (me.principal === owner && !r.ownerApprovedBy) return { ok: true, approve: true, as: 'its accountable owner' };
  if (mine.length && !r.policyApprovedBy && me.principal !== r.proposedBy && me.principal !== r.ownerApprovedBy) {
    return { ok: true, approve: true, as: `a holder of ${mine[0]}` };
  }
  // A rejection only stops a change: the owner, a role's holder (even
  // after another approved, or when they proposed it) and the proposer.
  if (me.principal === owner) return { ok: true, approve: false, as: 'its accountable owner' };
  if (mine.length) return { ok: true, approve: false, as: `a holder of ${mine[0]}` };
  if (me.principal === r.proposedBy) return { ok: true, approve: false, as: 'its proposer, withdrawing it' };
  const needs = [`its accountable owner ${owner || '—'}`].concat(roles.length ? [`a holder of ${roles.join(' or ')}`] : []);
  return { ok: false, why: `It is decided by ${needs.join(' and ')}.` };
}

function waitsFor(t, r) {
  const snap = r.snapshot;
  const owed = [];
  if (!r.ownerApprovedBy) owed.push(`its accountable owner ${(t.contract || {}).accountableOwnerRef}`);
  if (!snap) owed.push('policy\'s judgement');
  else if (snap.decision === 'POLICY_DECISION_REQUIRE_APPROVAL' && !r.policyApprovedBy) owed.push(`a holder of ${(snap.requiredApproverRoles || []).join(' or ')}`);
  return owed.length ? 'It waits for ' + owed.join(' and ') + '.' : 'It has every approval it needs.';
}

function decideForm(t, r, me, done) {
  const may = mayDecide(t, r, me);
  if (!may.ok) return h('p', { class: 'note', 'data-cannot-decide-revision': '' }, 'You cannot decide this revision. ', may.why);
  const comment = h('textarea', { rows: 2 });
  const form = h('form', { class: 'decide', 'aria-label': `Decide contract revision ${r.revisionId}` },
    h('p', {}, `You decide, as ${may.as}, version ${r.version} with hash `, h('code', { class: 'hash', 'data-revision-hash': r.contractHash }, r.contractHash), '.'),
    field(`revision-comment-${r.revisionId}`, 'Comment (required to reject)', comment),
    h('div', { class: 'buttons' },
      may.approve ? h('button', { type: 'button', class: 'primary good', 'data-do': 'approve-revision', onclick: () => send(true) }, 'Approve version ' + r.version) : null,
      h('button', { type: 'button', class: 'bad', 'data-do': 'reject-revision', onclick: () => send(false) }, 'Reject')));
  form.addEventListener('submit', (e) => e.preventDefault());
  arm(form.querySelectorAll('button'));

  async function send(approve) {
    if (!approve && !comment.value.trim()) {
      toast('A rejection needs a comment.', true);
      comment.focus();
      return;
    }
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    try {
      await call('TaskService/DecideContractRevision', { taskId: t.contract.taskId, revisionId: r.revisionId, approve, comment: comment.value,
        requestId: `console-${r.revisionId}-${me.principal}-${approve ? 'approve' : 'reject'}` });
      toast(`${approve ? 'Approved' : 'Rejected'}: version ${r.version}.`);
      done();
    } catch (err) {
      toast(`Refused: ${err.code} — ${err.message}`, true);
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  }
  return form;
}

function openRevision(t, r, me, done) {
  const snap = r.snapshot;
  return h('div', { class: 'card inner', 'data-open-revision': r.revisionId },
    h('h3', {}, `Proposed: version ${r.version}`),
    facts([['Revision', h('code', {}, r.revisionId)], ['Reason', raw(r.reason || '')], ['Proposed by', r.proposedBy], ['Proposed', when(r.proposedAt)],
      ['Changes', changes(r)], ['Policy', snap ? h('span', {}, badge(snap.decision, 'POLICY_DECISION_'), ' ', (snap.reasons || []).join('; ')) : 'not judged yet'],
      ['Approved as owner by', r.ownerApprovedBy], ['Decisions', (r.decisions || []).map((d) => `${d.decidedBy}: ${d.approve ? 'approve' : 'reject'} (${label(d.capacity, 'CONTRACT_REVISION_CAPACITY_')})`)]]),
    h('p', { 'data-waits-for': '' }, waitsFor(t, r)),
    decideForm(t, r, me, done));
}

// contractVersions is the section's content.
export function contractVersions(t, me, done) {
  const revs = t.contractRevisions || [];
  if (revs.length === 0) return h('p', { class: 'empty' }, 'Version 1, the contract it was created with: no revision has been proposed.');
  const byId = new Map(revs.map((r) => [r.revisionId, r]));
  const inForce = t.contractVersion || 1;
  const versions = (t.contractVersions || []).length ? t.contractVersions : [{ version: 1, contractHash: t.contractHash || '' }];
  const open = revs.find((r) => r.state === 'CONTRACT_REVISION_STATE_OPEN');
  const rejected = revs.filter((r) => r.state === 'CONTRACT_REVISION_STATE_REJECTED');
  return h('div', {},
    open ? openRevision(t, open, me, done) : null,
    grid('Versions that were in force', ['Version', 'Hash', 'Reason', 'What changed', 'Proposed by', 'Approved by', 'In force since'],
      versions.map((v) => versionRow(v, inForce, byId)), 'list compact versions'),
    rejected.length ? grid('Revisions that never took effect', ['Version', 'Reason', 'Proposed by', 'Why not'], rejected.map((r) => h('tr', { 'data-rejected-revision': r.revisionId },
      h('td', {}, `v${r.version}`), h('td', {}, raw(r.reason || '')), h('td', {}, r.proposedBy || '—'), h('td', {}, r.closedReason ? raw(r.closedReason) : '—'))), 'list compact') : null);
}
