// Unit tests of the retry rules, with an in-memory transport: no server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";

import { callWithRetry, createClient, defaultRetry, StewardError } from "../src/index.js";
import { TaskService } from "../src/gen/steward/v1/task_service_pb.js";
import { GovernanceService } from "../src/gen/steward/v1/governance_service_pb.js";

function recorder() {
  const waits = [];
  return { waits, sleep: async (ms) => { waits.push(ms); } };
}

test("retries unavailable with backoff doubling from 100 ms to 5 s, 5 attempts", async () => {
  const { waits, sleep } = recorder();
  let calls = 0;
  await assert.rejects(
    callWithRetry(async () => { calls++; throw new ConnectError("down", Code.Unavailable); }, {}, { ...defaultRetry, maxAttempts: 8 }, sleep),
    (err) => err instanceof StewardError && err.code === "unavailable" && err.attempts === 8,
  );
  assert.equal(calls, 8);
  assert.deepEqual(waits, [100, 200, 400, 800, 1600, 3200, 5000]);
});

test("retries deadline_exceeded, aborted and a reset connection, then answers", async () => {
  const { sleep } = recorder();
  const reset = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
  const failures = [new ConnectError("slow", Code.DeadlineExceeded), new ConnectError("reset", Code.Aborted, undefined, undefined, reset),
    new ConnectError("changing too fast; try again", Code.Aborted)];
  const got = await callWithRetry(async () => { if (failures.length) throw failures.shift(); return "ok"; }, {}, defaultRetry, sleep);
  assert.equal(got, "ok");
});

test("never retries other codes", async () => {
  for (const code of [Code.InvalidArgument, Code.AlreadyExists, Code.Internal, Code.PermissionDenied, Code.FailedPrecondition]) {
    let calls = 0;
    await assert.rejects(
      callWithRetry(async () => { calls++; throw new ConnectError("no", code); }, {}, defaultRetry, recorder().sleep),
      StewardError,
    );
    assert.equal(calls, 1, `code ${Code[code]} was retried`);
  }
});

test("a command's id is chosen once and sent on every attempt", async () => {
  const seen = [];
  const transport = createRouterTransport(({ service }) => {
    service(TaskService, {
      proposeAction(req) {
        seen.push(req.proposalId);
        if (seen.length < 3) throw new ConnectError("lost", Code.Unavailable);
        return { action: { actionId: "act-1", taskId: req.taskId }, created: true };
      },
      createTask(req) {
        seen.push(req.requestId);
        throw new ConnectError("bad", Code.InvalidArgument);
      },
    });
  });
  const c = createClient({ baseUrl: "http://unused", transport, sleep: async () => {} });
  const resp = await c.tasks.proposeAction({ taskId: "t1", tool: "search" });
  assert.equal(resp.action.actionId, "act-1");
  assert.equal(seen.length, 3);
  assert.ok(seen[0].length > 0);
  assert.deepEqual(new Set(seen).size, 1, `ids differ across attempts: ${seen}`);

  // A caller's own id is kept; a second logical call gets a new one.
  seen.length = 0;
  await c.tasks.proposeAction({ taskId: "t1", proposalId: "mine", tool: "search" }).catch(() => {});
  assert.equal(seen[0], "mine");
  seen.length = 0;
  await assert.rejects(c.tasks.createTask({}), (err) => err.code === "invalid_argument");
  await assert.rejects(c.tasks.createTask({}), (err) => err.code === "invalid_argument");
  assert.equal(seen.length, 2);
  assert.notEqual(seen[0], seen[1]);
});

test("a command without an id is sent once", async () => {
  let calls = 0;
  const transport = createRouterTransport(({ service }) => {
    service(GovernanceService, {
      decideApproval() { calls++; throw new ConnectError("lost", Code.Unavailable); },
    });
  });
  const c = createClient({ baseUrl: "http://unused", transport, sleep: async () => {} });
  await assert.rejects(c.governance.decideApproval({ approvalId: "a" }), (err) => err.code === "unavailable");
  assert.equal(calls, 1);
});
