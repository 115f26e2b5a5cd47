// Tests against a real Steward, which e2e/sdk_ts_test.go starts with the
// tools "search" (a read) and "wire" (an irreversible write), behind a
// proxy that drops the answer to the first ProposeAction it forwards.
// STEWARD_URL is the proxy, STEWARD_TOKEN an agent's token. Without
// STEWARD_URL these tests are skipped: `npm test` alone runs the unit tests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";

import { ActionStatus, createClient, RiskTier, StewardError } from "../src/index.js";

const baseUrl = process.env.STEWARD_URL;
const skip = baseUrl ? false : "STEWARD_URL is not set: run by go test -run TestTypeScriptClient ./e2e/";

function client(binary = false) {
  return createClient({ baseUrl, token: process.env.STEWARD_TOKEN, binary, retry: { initialBackoffMs: 50 } });
}

async function newTask(c) {
  const resp = await c.tasks.createTask({
    contract: {
      intent: "Check the SDK", desiredOutcome: "one action per proposal",
      requesterRef: "user:ana", accountableOwnerRef: "user:ana", authorizerRef: "user:bo",
      riskTier: RiskTier.LOW, budget: { maxTokens: 50_000n }, allowedTools: ["search", "wire", "slow"],
    },
  });
  return resp.task.contract.taskId;
}

// This test must be the first to propose: the proxy drops the answer to
// the first ProposeAction only.
test("a ProposeAction whose answer was lost is retried with its id: one action", { skip }, async () => {
  const c = client();
  const taskId = await newTask(c);
  const resp = await c.tasks.proposeAction({ taskId, tool: "search", target: "index", params: { q: "incidents" } });
  // The first attempt committed; the retry found the action it made.
  assert.equal(resp.created, false, "the retry created a second action");
  const task = (await c.query.getTask({ taskId })).task;
  assert.equal(task.actions.length, 1, `actions: ${task.actions.map((a) => a.actionId)}`);
  assert.equal(task.actions[0].actionId, resp.action.actionId);
});

test("a refusal names its code and field", { skip }, async () => {
  const c = client();
  await assert.rejects(
    c.tasks.createTask({ contract: { desiredOutcome: "no intent", requesterRef: "user:ana", accountableOwnerRef: "user:ana", riskTier: RiskTier.LOW } }),
    (err) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, "invalid_argument");
      assert.equal(err.field, "contract.intent", err.message);
      assert.equal(err.attempts, 1);
      return true;
    },
  );
  await assert.rejects(c.query.getTask({ taskId: "no-such-task" }), (err) => err.code === "not_found" && err.field === "");
});

test("proposeAndWait returns a read's outcome, and stops where a person must act", { skip }, async () => {
  for (const binary of [false, true]) {
    const c = client(binary);
    const taskId = await newTask(c);
    const read = await c.proposeAndWait(taskId, { tool: "search", target: "index", params: { q: "last week" } }, { timeoutMs: 30_000 });
    assert.equal(read.action.status, ActionStatus.SUCCEEDED, `binary=${binary}`);
    assert.equal(read.needsPerson, false);

    const wire = await c.proposeAndWait(taskId, {
      proposalId: `wire-${randomUUID()}`, tool: "wire", target: "acct:42", params: { amount: 120 },
      rationale: { expectedImpact: "moves 120 to acct:42", rollbackPlan: "ask the payee to send it back" },
    }, { timeoutMs: 30_000 });
    assert.equal(wire.action.status, ActionStatus.AWAITING_APPROVAL, `binary=${binary}`);
    assert.equal(wire.needsPerson, true);
  }
});

test("proposeAndWait gives up at its timeout", { skip }, async () => {
  const c = client();
  const taskId = await newTask(c);
  // slow never answers in time: its action stays dispatched.
  const started = Date.now();
  await assert.rejects(
    c.proposeAndWait(taskId, { tool: "slow", target: "index", params: {} }, { timeoutMs: 1500 }),
    (err) => err instanceof StewardError && err.code === "deadline_exceeded",
  );
  const took = Date.now() - started;
  assert.ok(took >= 1400 && took < 10_000, `gave up after ${took} ms`);
});
