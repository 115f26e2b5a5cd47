// The agent's calls besides the RPCs — watchTask, heartbeat, keepAlive,
// and the commands that choose their ids — against a real Steward, which
// e2e/sdk_ts_test.go starts: STEWARD_DIRECT_URL is Steward itself (these
// tests propose nothing, so they leave the drop proxy's one drop to
// steward.test.js), STEWARD_TOKEN an agent's token. Skipped without them.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

import { createClient, RiskTier, TaskStatus } from "../src/index.js";
import { PlanEnding } from "../src/gen/steward/v1/plan_pb.js";

const baseUrl = process.env.STEWARD_DIRECT_URL;
const skip = baseUrl ? false : "STEWARD_DIRECT_URL is not set: run by go test -run TestTypeScriptClient ./e2e/";

function client(url = baseUrl) {
  return createClient({ baseUrl: url, token: process.env.STEWARD_TOKEN, retry: { initialBackoffMs: 20, maxBackoffMs: 200 } });
}

async function runningTask(c) {
  const { task } = await c.tasks.createTask({
    contract: {
      intent: "Watch the SDK", desiredOutcome: "every event once",
      requesterRef: "user:ana", accountableOwnerRef: "user:ana", riskTier: RiskTier.LOW, budget: { maxTokens: 50_000n },
    },
  });
  const taskId = task.contract.taskId;
  // The control plane starts a task at once: wait for that.
  for (let t = task, until = Date.now() + 10_000; t.status !== TaskStatus.RUNNING; t = (await c.query.getTask({ taskId })).task) {
    assert.ok(t.status === TaskStatus.PENDING && Date.now() < until, `task ${taskId} is ${TaskStatus[t.status]}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return taskId;
}

function item(n) {
  return { contextId: `note-${n}`, uri: `https://wiki.example/${n}`, digest: `sha256:${"cd".repeat(32)}`, source: "wiki", egress: ["*"] };
}

// cutProxy forwards TCP connections to Steward until cut(), which breaks
// every connection open at the time; it counts the connections.
async function cutProxy(target) {
  const { hostname, port } = new URL(target);
  const open = new Set();
  const proxy = { connections: 0 };
  const server = net.createServer((down) => {
    proxy.connections++;
    const up = net.connect(Number(port), hostname);
    for (const s of [down, up]) {
      open.add(s);
      s.on("error", () => {});
      s.on("close", () => open.delete(s));
    }
    down.pipe(up);
    up.pipe(down);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${server.address().port}`;
  proxy.cut = () => { for (const s of open) s.destroy(); };
  proxy.close = () => { proxy.cut(); server.close(); };
  return proxy;
}

test("a watch goes on after a break: every event once, in order", { skip }, async (t) => {
  const c = client();
  const taskId = await runningTask(c);
  await c.attachContext(taskId, item(1));
  const proxy = await cutProxy(baseUrl);
  t.after(proxy.close);
  const seen = [];
  const lives = [];
  let last;
  for await (const rec of client(proxy.url).watchTask(taskId, { onLive: (seq) => lives.push(seq) })) {
    seen.push(rec.sequence);
    if (seen.length === 2) {
      // Break the stream, then add events only a new one can bring.
      proxy.cut();
      for (const n of [2, 3]) await c.attachContext(taskId, item(n));
      last = (await c.query.getTask({ taskId })).task.lastSequence;
    }
    if (last !== undefined && rec.sequence >= last) break;
  }
  const task = (await c.query.getTask({ taskId })).task;
  assert.equal(proxy.connections, 2, `the watch opened ${proxy.connections} streams`);
  assert.equal(lives.length, 2);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i] > seen[i - 1], `out of order or twice: ${seen}`);
  assert.equal(seen.length, task.eventCount, `a gap: ${seen}, ${task.eventCount} events`);
  assert.equal(seen.at(-1), last);
});

test("a watch of no task is refused at once; an aborted one ends", { skip }, async () => {
  const c = createClient({ baseUrl, token: process.env.STEWARD_TOKEN, retry: { initialBackoffMs: 5000 } });
  const started = Date.now();
  await assert.rejects(async () => { for await (const _ of c.watchTask("no-such-task")) break; }, (err) => err.code === "not_found");
  assert.ok(Date.now() - started < 4000, "a refusal was retried");

  const taskId = await runningTask(c);
  const stop = new AbortController();
  let live;
  const lived = new Promise((resolve) => { live = resolve; });
  const watching = (async () => { for await (const _ of c.watchTask(taskId, { signal: stop.signal, onLive: live })) { /* the past */ } })();
  await lived;
  stop.abort();
  await assert.rejects(watching, (err) => err.code === "canceled");
});

test("heartbeat answers with the task's status; keepAlive beats until stopped", { skip }, async () => {
  const c = client();
  const taskId = await runningTask(c);
  const answer = await c.heartbeat(taskId, "reading the listing");
  assert.equal(answer.taskStatus, TaskStatus.RUNNING);

  const answers = [];
  const errors = [];
  let three;
  const gotThree = new Promise((resolve) => { three = resolve; });
  const stop = c.keepAlive(taskId, {
    intervalMs: 20,
    onBeat: (a, err) => { if (err) errors.push(err); else answers.push(a); if (answers.length === 3) three(); },
  });
  await gotThree;
  await stop(); // resolves once the loop has ended: no beat after it
  assert.deepEqual(errors, []);
  assert.ok(answers.every((a) => a.taskStatus === TaskStatus.RUNNING));
});

test("the commands choose their ids once: a repeat is the same record", { skip }, async () => {
  const c = client();
  const taskId = await runningTask(c);
  const ctx = await c.attachContext(taskId, { ...item(9), contextId: "" });
  assert.ok(ctx.item.contextId, "no context id chosen");
  const decision = { call: { provider: "example", modelId: "m-1" }, contextIds: [ctx.item.contextId], rationale: "check first", ledTo: { case: "noAction", value: {} } };
  const first = await c.recordDecision(taskId, decision);
  assert.equal(first.created, true);
  assert.ok(first.decision.decisionId);
  const again = await c.recordDecision(taskId, { ...decision, decisionId: first.decision.decisionId });
  assert.equal(again.created, false);
  const plan = { version: 1, ending: PlanEnding.PRODUCE, steps: [{ id: "confirm", kind: { case: "checkpoint", value: { question: "Go on?", choices: ["yes", "no"] } } }] };
  const submitted = await c.submitPlan(taskId, plan, { requestId: "plan-1" });
  assert.equal(submitted.created, true);
  assert.equal((await c.submitPlan(taskId, plan, { requestId: "plan-1" })).created, false);
  const page = await c.listDecisions(taskId, { pageSize: 1 });
  assert.deepEqual(page.decisions.map((d) => d.decisionId), [first.decision.decisionId]);
  assert.deepEqual((await c.allDecisions(taskId)).map((d) => d.decisionId), [first.decision.decisionId]);
});
