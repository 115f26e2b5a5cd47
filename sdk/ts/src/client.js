// Package client: a thin wrapper over the generated Connect-ES stubs of
// proto/steward/v1 that an agent developer calls instead of the stubs.
//
// What it adds: one client for every service at Steward's single address,
// the bearer token on every call, safe retries (every command's
// idempotency id is chosen once per logical call and reused on every
// attempt, so a response lost after a committed command still yields one
// effect), proposeAndWait, and StewardError, which names the Connect code
// and the field a refusal is about. The rules are in docs/sdk-typescript.md.

import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { Code, ConnectError, createClient as createServiceClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

import { ActionService } from "./gen/steward/v1/action_service_pb.js";
import { AuditService } from "./gen/steward/v1/audit_service_pb.js";
import { DeadLetterService } from "./gen/steward/v1/dead_letter_service_pb.js";
import { GovernanceService } from "./gen/steward/v1/governance_service_pb.js";
import { QueryService } from "./gen/steward/v1/query_service_pb.js";
import { TaskService } from "./gen/steward/v1/task_service_pb.js";
import { ToolService } from "./gen/steward/v1/tool_service_pb.js";
import { ActionStatus } from "./gen/steward/v1/action_pb.js";
import { TaskStatus } from "./gen/steward/v1/task_pb.js";
import { allDecisions, attachContext, listDecisions, recordDecision, submitPlan } from "./commands.js";
import { keepAlive } from "./liveness.js";
import { watchTask } from "./watch.js";

/** The services createClient wraps, by the property that holds each. */
const services = {
  tasks: TaskService,
  query: QueryService,
  governance: GovernanceService,
  actions: ActionService,
  tools: ToolService,
  audit: AuditService,
  deadLetters: DeadLetterService,
};

/** Defaults of the retry policy: 5 attempts, 100 ms doubling to 5 s. */
export const defaultRetry = Object.freeze({ maxAttempts: 5, initialBackoffMs: 100, maxBackoffMs: 5000 });

// MethodOptions.IdempotencyLevel.NO_SIDE_EFFECTS: a read, safe to repeat.
const noSideEffects = 1;

// Node's codes for a connection that failed or broke: a request that may
// or may not have arrived, which a retry with the same id settles.
const networkCodes = new Set([
  "ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "ENETUNREACH", "EHOSTUNREACH",
  "ECONNABORTED", "EAI_AGAIN", "UND_ERR_SOCKET", "ERR_STREAM_PREMATURE_CLOSE",
  "ERR_HTTP2_STREAM_ERROR", "ERR_HTTP2_GOAWAY_SESSION", "ERR_HTTP2_SESSION_ERROR",
]);

/**
 * StewardError is every error the wrapper throws for a failed call: code
 * is the Connect code's name (invalid_argument, not_found, …), message the
 * server's, and field the request field a refusal names (from the
 * google.rpc.BadRequest detail Steward attaches), or "" when none is named.
 */
export class StewardError extends Error {
  constructor(code, message, { field = "", description = "", cause, attempts = 1 } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "StewardError";
    this.code = code;
    this.field = field;
    this.description = description;
    this.attempts = attempts;
  }
}

/** codeName turns a Connect code (Code.InvalidArgument) into its name (invalid_argument). */
export function codeName(code) {
  return Code[code].replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/** isNetworkError says whether err is a broken or refused connection, not an answer. */
export function isNetworkError(err) {
  for (let e = err, seen = 0; e instanceof Error && seen < 10; e = e.cause, seen++) {
    if (networkCodes.has(e.code)) return true;
    if (/socket hang up|other side closed|fetch failed/.test(e.message)) return true;
  }
  return false;
}

/**
 * isRetryable says whether a failed attempt may be made again: only
 * unavailable, deadline_exceeded and a broken or refused connection.
 * Every other code is an answer, and a repeat would get the same one.
 */
export function isRetryable(err) {
  const ce = ConnectError.from(err);
  // Aborted: Steward did nothing and says to try again (a task changing
  // too fast for its own retries; a watch that fell behind). Every call
  // retried carries its ids, so another attempt is the same command.
  return ce.code === Code.Unavailable || ce.code === Code.DeadlineExceeded || ce.code === Code.Aborted || isNetworkError(err);
}

/** toStewardError maps anything a call threw to a StewardError. */
export function toStewardError(err, attempts = 1) {
  if (err instanceof StewardError) return err;
  const ce = ConnectError.from(err);
  // connect-node reports a connection reset as aborted; it is the
  // network's, not the server's, answer.
  const code = isNetworkError(err) ? "unavailable" : codeName(ce.code);
  const { field, description } = fieldViolation(ce);
  return new StewardError(code, ce.rawMessage, { field, description, cause: err, attempts });
}

// fieldViolation returns the first field violation of the error's
// google.rpc.BadRequest detail. The detail is decoded by hand (BadRequest
// is field 1, repeated FieldViolation{field = 1, description = 2}) so the
// client needs no generated google/rpc types.
function fieldViolation(ce) {
  for (const d of ce.details) {
    if (!("type" in d) || d.type !== "google.rpc.BadRequest") continue;
    try {
      const r = new BinaryReader(d.value);
      while (r.pos < r.len) {
        const [num, wt] = r.tag();
        if (num !== 1) { r.skip(wt); continue; }
        const v = new BinaryReader(r.bytes());
        let field = "", description = "";
        while (v.pos < v.len) {
          const [n, w] = v.tag();
          if (n === 1) field = v.string();
          else if (n === 2) description = v.string();
          else v.skip(w);
        }
        return { field, description };
      }
    } catch {
      // A detail that does not decode names no field.
    }
  }
  return { field: "", description: "" };
}

// idSetter returns how a method's request gets its idempotency id, or
// null for a method that takes none.
function idSetter(method) {
  const fields = new Set(method.input.fields.map((f) => f.name));
  for (const name of ["request_id", "proposal_id"]) {
    if (fields.has(name)) {
      const key = method.input.fields.find((f) => f.name === name).localName;
      return (req) => { if (!req[key]) req[key] = randomUUID(); };
    }
  }
  if (method.name === "RecordDecision") {
    return (req) => { if (req.decision && !req.decision.decisionId) req.decision.decisionId = randomUUID(); };
  }
  if (method.name === "AttachContext") {
    return (req) => { if (req.item && !req.item.contextId) req.item.contextId = randomUUID(); };
  }
  return null;
}

/**
 * createClient returns a client for every Steward service at baseUrl,
 * each call carrying token as a bearer token.
 *
 * Options: baseUrl (required), token, binary (true for the binary
 * protobuf codec; JSON by default), retry ({maxAttempts, initialBackoffMs,
 * maxBackoffMs}), timeoutMs (each attempt's deadline; 30 s by default),
 * transport (a Connect transport to use instead of one over HTTP/1.1),
 * sleep (how backoff waits; tests inject one).
 *
 * Every unary method of client.tasks, client.query, client.governance,
 * client.actions, client.tools, client.audit and client.deadLetters takes
 * a request (a plain object) and call options, and returns the response
 * or throws a StewardError. A command's id (request_id, proposal_id,
 * decision.decision_id, item.context_id) is filled with a random UUID
 * once when the caller leaves it empty, and the same request is sent on
 * every attempt. Reads and commands with an id are retried; a command
 * without one (DecideApproval, SettleAction, …) is sent once, since a
 * repeat could act twice. Streaming methods are passed through as they are.
 *
 * Besides: watchTask (a watch that resumes after a break), heartbeat and
 * keepAlive, and submitPlan, recordDecision, attachContext, listDecisions
 * and allDecisions, which take the task id first.
 */
export function createClient(options) {
  const { baseUrl, token, binary = false, timeoutMs = 30_000, sleep = defaultSleep } = options;
  if (!baseUrl) throw new TypeError("createClient: baseUrl is required");
  const retry = { ...defaultRetry, ...options.retry };
  const interceptors = token ? [(next) => (req) => { req.header.set("Authorization", `Bearer ${token}`); return next(req); }] : [];
  const transport = options.transport ?? createConnectTransport({
    baseUrl, httpVersion: "1.1", useBinaryFormat: binary, interceptors,
  });
  const client = {};
  const raws = {};
  for (const [prop, service] of Object.entries(services)) {
    const raw = createServiceClient(service, transport);
    raws[prop] = raw;
    const wrapped = {};
    for (const method of service.methods) {
      if (method.methodKind !== "unary") {
        wrapped[method.localName] = (req, opts) => raw[method.localName](req, opts);
        continue;
      }
      const setId = idSetter(method);
      const retryable = setId !== null || method.idempotency === noSideEffects;
      wrapped[method.localName] = (req = {}, opts = {}) => {
        // One message for the whole logical call: its id is chosen here,
        // once, and every attempt sends it unchanged.
        const msg = create(method.input, req);
        if (setId) setId(msg);
        return callWithRetry((o) => raw[method.localName](msg, o), { timeoutMs, ...opts }, retryable ? retry : { ...retry, maxAttempts: 1 }, sleep);
      };
    }
    client[prop] = wrapped;
  }
  client.proposeAndWait = (taskId, action, opts) => proposeAndWait(client, taskId, action, opts);
  addAgentCalls(client, raws.tasks, { retry, sleep, timeoutMs });
  return client;
}

// addAgentCalls gives the client what an agent calls besides the RPCs:
// the watch that resumes, its liveness, and the commands with their ids.
function addAgentCalls(client, rawTasks, { retry, sleep, timeoutMs }) {
  client.watchTask = (taskId, opts = {}) => watchTask(client, taskId, { retry, sleep, ...opts });
  // Heartbeat takes no id and records only what is news: a repeat is
  // harmless, so it is retried as a read is.
  client.heartbeat = (taskId, note = "", opts = {}) =>
    callWithRetry((o) => rawTasks.heartbeat({ taskId, note }, o), { timeoutMs, ...opts }, retry, sleep);
  client.keepAlive = (taskId, opts) => keepAlive(client, taskId, opts);
  client.submitPlan = (taskId, plan, opts) => submitPlan(client, taskId, plan, opts);
  client.recordDecision = (taskId, decision, opts) => recordDecision(client, taskId, decision, opts);
  client.attachContext = (taskId, item, opts) => attachContext(client, taskId, item, opts);
  client.listDecisions = (taskId, opts) => listDecisions(client, taskId, opts);
  client.allDecisions = (taskId, opts) => allDecisions(client, taskId, opts);
}

/**
 * callWithRetry runs attempt until it answers, retrying what isRetryable
 * allows with exponential backoff, and throws a StewardError.
 */
export async function callWithRetry(attempt, callOptions, retry, sleep = defaultSleep) {
  let backoff = retry.initialBackoffMs;
  for (let n = 1; ; n++) {
    try {
      return await attempt(callOptions);
    } catch (err) {
      if (n >= retry.maxAttempts || !isRetryable(err) || callOptions.signal?.aborted) {
        throw toStewardError(err, n);
      }
      await sleep(backoff);
      backoff = Math.min(backoff * 2, retry.maxBackoffMs);
    }
  }
}

function defaultSleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// Where an action stops for good, or waits for a person (an approval, or
// a person doing the work) or for its tool's status query (an unknown
// outcome).
const settled = new Set([
  ActionStatus.DENIED, ActionStatus.REJECTED, ActionStatus.SUCCEEDED, ActionStatus.FAILED,
  ActionStatus.WITHDRAWN, ActionStatus.AWAITING_APPROVAL, ActionStatus.UNKNOWN, ActionStatus.PERSON_EXECUTING,
]);

/** isSettled says whether Steward has stopped moving an action by itself. */
export function isSettled(status) {
  return settled.has(status);
}

// needsPerson says whether a settled action waits for a person.
function needsPerson(action) {
  return action.status === ActionStatus.AWAITING_APPROVAL || action.status === ActionStatus.UNKNOWN ||
    action.status === ActionStatus.PERSON_EXECUTING;
}

/**
 * proposeAndWait proposes action (a ProposeActionRequest without
 * task_id; its proposal_id is chosen once when empty) with wait, in one
 * round trip, and goes on with GetAction's wait where the server did not
 * hold it, until the action ends or needs a person: it returns
 * {action, taskStatus, needsPerson}. opts.timeoutMs (60 s by default)
 * bounds the whole wait: past it, a StewardError deadline_exceeded.
 */
export async function proposeAndWait(client, taskId, action, opts = {}) {
  const { timeoutMs = 60_000, pollMs = 200 } = opts;
  const until = Date.now() + timeoutMs;
  const req = { ...action, taskId, proposalId: action.proposalId || randomUUID(), wait: true };
  // One round trip: the server holds the proposal until the action stops
  // moving. A server that did not (a control plane alone, or a wait past
  // 30 s) answers without the task's status, and GetAction waits on.
  const proposed = await client.tasks.proposeAction(req, { timeoutMs: Math.min(timeoutMs, 35_000) });
  if (proposed.taskStatus !== TaskStatus.UNSPECIFIED && isSettled(proposed.action.status)) {
    return { action: proposed.action, taskStatus: proposed.taskStatus, needsPerson: needsPerson(proposed.action) };
  }
  const actionId = proposed.action.actionId;
  for (;;) {
    const left = until - Date.now();
    if (left <= 0) break;
    let got;
    try {
      got = await client.query.getAction({ taskId, actionId, wait: true }, { timeoutMs: Math.min(left, 35_000) });
    } catch (err) {
      if (err.code === "deadline_exceeded" && Date.now() >= until) break;
      throw err;
    }
    if (isSettled(got.action.status)) {
      return { action: got.action, taskStatus: got.taskStatus, needsPerson: needsPerson(got.action) };
    }
    // GetAction answers at once for an action held by a paused task:
    // look again a little later rather than spin.
    await defaultSleep(Math.min(pollMs, Math.max(0, until - Date.now())));
  }
  throw new StewardError("deadline_exceeded", `action ${actionId} did not settle within ${timeoutMs} ms`);
}
