// What a person answers besides approvals: the agent's question
// (ProvideInput) and an outcome nobody knows (SettleAction).
import { call } from './api.js';
import { h, field, toast, label, facts, when, raw, arm } from './ui.js';

async function submit(form, method, req, done, what) {
  for (const b of form.querySelectorAll('button')) b.disabled = true;
  try {
    await call(method, req);
    toast(what);
    done();
  } catch (err) {
    toast(`Refused: ${err.code} — ${err.message}`, true);
    for (const b of form.querySelectorAll('button')) b.disabled = false;
  }
}

// answerForm answers the task's open question; the server decides who may
// (its owner, the backup once escalated, an operator).
export function answerForm(t, me, done) {
  const q = t.openInput;
  const id = t.contract.taskId;
  const choices = q.choices || [];
  const answer = choices.length
    ? h('select', { required: true }, choices.map((c) => h('option', { value: c }, c)))
    : h('textarea', { rows: 2, required: true });
  const form = h('form', { class: 'answer', 'aria-label': `Answer the question of task ${id}`, 'data-question': q.questionId || '' },
    h('h3', {}, 'Question'),
    h('p', { class: 'question' }, q.question),
    facts([['Asked by', q.askedBy], ['Asked', when(q.askedAt)], ['Asks', q.askRef], ['Escalated to', q.escalatedTo]]),
    field(`answer-${id}`, 'Your answer', answer),
    h('button', { type: 'submit', class: 'primary' }, 'Answer'));
  arm(form.querySelectorAll('button'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const requestId = `console-${id}-${q.questionId || ''}-${Date.now()}`;
    submit(form, 'TaskService/ProvideInput', { taskId: id, answer: answer.value, requestId }, done, 'Answer recorded.');
  });
  return form;
}

// maySettle mirrors the server's rule: an unknown outcome by an operator,
// a person's own execution by that person.
export function maySettle(a, me) {
  if (a.status === 'ACTION_STATUS_UNKNOWN') return (me.roles || []).some((r) => r === 'operator' || r === 'admin');
  if (a.status === 'ACTION_STATUS_PERSON_EXECUTING') return a.approval && a.approval.decidedBy === me.principal;
  return false;
}

export function settleForm(taskId, a, done) {
  const key = a.actionId;
  const state = h('select', {},
    ['SETTLE_STATE_SUCCEEDED', 'SETTLE_STATE_FAILED', 'SETTLE_STATE_NOT_ACCEPTED'].map((s) => h('option', { value: s }, label(s, 'SETTLE_STATE_'))));
  const reason = h('input', { required: true });
  const evidence = h('input', { placeholder: 'ticket:INC-7, https://…' });
  const result = h('textarea', { rows: 2, class: 'mono', placeholder: '{"ok": true}' });
  const form = h('form', { class: 'settle', 'aria-label': `Settle action ${key}`, 'data-settle': key },
    h('h3', {}, 'Settle ', raw(a.tool, 'mono'), ' → ', raw(a.target || '—', 'mono'), ` (${label(a.status, 'ACTION_STATUS_')})`),
    field(`settle-state-${key}`, 'What happened', state),
    field(`settle-reason-${key}`, 'How you know (required)', reason),
    field(`settle-evidence-${key}`, 'Evidence, comma-separated', evidence),
    field(`settle-result-${key}`, 'Result (JSON), if it succeeded', result),
    h('button', { type: 'submit', class: 'primary' }, 'Settle'));
  arm(form.querySelectorAll('button'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const req = { taskId, actionId: key, state: state.value, reason: reason.value,
      evidence: evidence.value.split(',').map((s) => s.trim()).filter(Boolean) };
    if (result.value.trim()) {
      try { req.result = JSON.parse(result.value); } catch (err) { toast('The result is not JSON: ' + err.message, true); return; }
    }
    submit(form, 'ActionService/SettleAction', req, done, 'Settled.');
  });
  return form;
}
