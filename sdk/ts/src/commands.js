// Thin helpers over the commands an agent sends most, each choosing its
// id once, before the first attempt, so that every retry sends the same
// one; and reads of a task's decisions.

import { randomUUID } from "node:crypto";

/** submitPlan submits or revises the task's plan under opts.requestId (chosen when empty). */
export function submitPlan(client, taskId, plan, opts = {}) {
  const { requestId, ...callOpts } = opts;
  return client.tasks.submitPlan({ taskId, plan, requestId: requestId || randomUUID() }, callOpts);
}

/**
 * recordDecision records a model decision under decision.decisionId
 * (chosen when empty). An agent that restarts finds it with
 * listDecisions rather than ask the model again.
 */
export function recordDecision(client, taskId, decision, opts) {
  return client.tasks.recordDecision({ taskId, decision: { ...decision, decisionId: decision.decisionId || randomUUID() } }, opts);
}

/** attachContext adds an item to the task's context ledger under item.contextId (chosen when empty). */
export function attachContext(client, taskId, item, opts) {
  return client.tasks.attachContext({ taskId, item: { ...item, contextId: item.contextId || randomUUID() } }, opts);
}

/** listDecisions reads one page of the task's decisions, from opts.pageToken ("" for the first). */
export function listDecisions(client, taskId, opts = {}) {
  const { pageToken = "", pageSize = 0, ...callOpts } = opts;
  return client.query.listDecisions({ taskId, pageToken, pageSize }, callOpts);
}

/** allDecisions reads every decision the task recorded, page after page. */
export async function allDecisions(client, taskId, opts) {
  const decisions = [];
  for (let pageToken = ""; ;) {
    const page = await listDecisions(client, taskId, { ...opts, pageToken });
    decisions.push(...page.decisions);
    if (!(pageToken = page.nextPageToken)) return decisions;
  }
}
