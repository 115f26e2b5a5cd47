// An approval as a person decides it: everything the decision rests on,
// the hash it binds to, and approve / reject / amend, each sent with the
// hash shown on the page (DecideApproval refuses any other).
import { call } from './api.js';
import { h, facts, label, badge, when, pretty, toast, field, raw, visible, arm } from './ui.js';

// mayDecide mirrors governance's checks on the caller, so that the page
// does not offer what the server would refuse: one of the roles the
// approval asks for (held by name — admin does not stand in for them), or
// being the backup it was escalated to, and no vote yet. Its proposer may
// reject or amend but not approve (approve: false); the server has the
// last word on the rest (separation of duties, the authorizer).
export function mayDecide(a, me) {
  if (a.decision || a.withdrawn) return { ok: false, why: 'It is decided.' };
  const roles = a.requiredRoles || [];
  const mine = me.roles || [];
  const to = a.escalatedTo || '';
  const backup = to !== '' && (to === me.principal || (to.startsWith('role:') && mine.includes(to.slice('role:'.length))));
  if (!backup && !roles.some((r) => mine.includes(r))) {
    return { ok: false, why: `It needs ${roles.length > 1 ? 'one of the roles' : 'the role'} ${roles.join(', ') || '(none named)'}, which you do not hold.` };
  }
  if ((a.votes || []).some((v) => v.principal === me.principal)) return { ok: false, why: 'You have voted on it.' };
  if (a.requestedBy === me.principal) return { ok: true, approve: false, why: 'You proposed it: someone else approves it; you may still reject or amend it.' };
  return { ok: true, approve: true };
}

export function approvalFacts(a) {
  const r = a.rationale || {};
  return h('div', {},
    facts([
      ['Tool', a.tool ? raw(`${a.tool}${a.toolVersion ? '@' + a.toolVersion : ''}`, 'mono') : (a.planHash ? `plan version ${a.planVersion}` : '')],
      ['Target', a.target ? raw(a.target, 'mono') : ''],
      ['Effect', label(a.effectClass, 'EFFECT_CLASS_')],
      ['Data', label(a.dataSensitivity, 'DATA_SENSITIVITY_')],
      ['Task', h('a', { href: '#/task/' + encodeURIComponent(a.taskId), class: 'mono' }, a.taskId)],
      ['Proposed by', a.requestedBy],
      ['Requested', when(a.requestedAt)],
      ['Needs', `${a.requiredApprovals || 1} approval(s) from ${(a.requiredRoles || []).join(' or ') || '—'}`],
      ['Why policy asks', a.policyReasons],
      ['Expected impact', r.expectedImpact || a.expectedImpact],
      ['Rollback plan', r.rollbackPlan || a.rollback],
      ['Evidence', r.evidence],
      ['Alternatives', r.alternatives],
      ['Escalated to', a.escalatedTo],
    ]),
    a.parametersJson !== undefined ? h('div', {}, h('h3', {}, 'Parameters'),
      h('p', { class: 'sub' }, 'Secret values appear as their commitments, never in clear.'),
      h('pre', { class: 'json', 'data-params': '', tabindex: '0' }, visible(pretty(a.parametersJson)) || '(hidden from you)')) : null,
    votes(a));
}

export function votes(a) {
  const list = a.votes || [];
  if (list.length === 0) return null;
  return h('div', {}, h('h3', {}, 'Votes'), h('ul', { class: 'votes' }, list.map((v) =>
    h('li', {}, badge(v.decision, 'APPROVAL_DECISION_'), ' ', v.principal, ' ', when(v.decidedAt),
      v.comment ? h('q', {}, v.comment) : null, v.asBackup ? ' (as backup)' : ''))));
}

// decisionForm is the controls for one approval, or why there are none.
export function decisionForm(a, me, onDone) {
  const may = mayDecide(a, me);
  if (!may.ok) return h('p', { class: 'note', 'data-cannot-decide': '' }, 'You cannot decide this approval. ', may.why);
  const hash = a.planHash || a.actionHash;
  const id = a.approvalId;
  const comment = h('textarea', { rows: 2 });
  const params = h('textarea', { rows: 6, class: 'mono', spellcheck: 'false' }, pretty(a.parametersJson));
  const amendBox = h('div', { class: 'amend', hidden: true },
    field(`amend-${id}`, 'Amended parameters (JSON): the action is rejected and one with these is proposed in your name, for someone else to approve', params),
    h('button', { type: 'button', class: 'primary', 'data-do': 'amend-send', onclick: () => send('APPROVAL_DECISION_AMEND') }, 'Propose the amended action'));
  const buttons = h('div', { class: 'buttons' },
    may.approve ? h('button', { type: 'button', class: 'primary good', 'data-do': 'approve', onclick: () => send('APPROVAL_DECISION_APPROVE') }, 'Approve') : null,
    h('button', { type: 'button', class: 'bad', 'data-do': 'reject', onclick: () => send('APPROVAL_DECISION_REJECT') }, 'Reject'),
    a.planHash ? null : h('button', { type: 'button', 'data-do': 'amend', 'aria-expanded': 'false', onclick: (e) => {
      amendBox.hidden = !amendBox.hidden;
      e.target.setAttribute('aria-expanded', String(!amendBox.hidden));
      if (!amendBox.hidden) params.focus();
    } }, 'Amend…'));
  const form = h('form', { class: 'decide', 'aria-label': `Decide approval ${id}` },
    h('p', {}, 'You decide the action with hash ', h('code', { class: 'hash', 'data-hash': hash }, hash), '.'),
    may.why ? h('p', { class: 'note', 'data-may-not-approve': '' }, may.why) : null,
    field(`comment-${id}`, 'Comment (for the record)', comment), buttons, amendBox);
  form.addEventListener('submit', (e) => e.preventDefault());
  arm(form.querySelectorAll('button'));

  async function send(decision) {
    const req = { approvalId: id, decision, comment: comment.value };
    if (a.planHash) req.planHash = hash; else req.actionHash = hash;
    if (decision === 'APPROVAL_DECISION_AMEND') {
      try { req.amendedParams = JSON.parse(params.value); } catch (err) {
        toast('The amended parameters are not JSON: ' + err.message, true);
        params.focus();
        return;
      }
    }
    for (const b of form.querySelectorAll('button')) b.disabled = true;
    try {
      const resp = await call('GovernanceService/DecideApproval', req);
      toast(`${label(decision, 'APPROVAL_DECISION_')}: recorded for ${a.tool || 'the plan'}.`);
      onDone(resp.approval);
    } catch (err) {
      toast(`Refused: ${err.code} — ${err.message}`, true);
      for (const b of form.querySelectorAll('button')) b.disabled = false;
    }
  }
  return form;
}
