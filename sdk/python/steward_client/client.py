"""Client is Steward's agent API over Connect's JSON protocol.

Every service is served on one address; a call is a POST of the request's
protobuf JSON to /steward.v1.<Service>/<Method>, and its answer is the
response's protobuf JSON, read here as a dict (fields in lowerCamelCase,
enums as their names: "ACTION_STATUS_SUCCEEDED", 64-bit integers as
strings).

Safe retries: a command's ids (request_id, proposal_id, decision_id,
context_id) are generated once per logical call when the caller gives
none, and the same body is sent on every attempt, so a response lost after
a committed command still yields one effect. A call is repeated only on the
Connect codes unavailable, deadline_exceeded and aborted, and on network errors
(refused, reset, disconnected, timed out), after 0.1 s, doubling up to 5 s,
5 attempts in all by default; never on any other code.

A Client holds no connection between calls and may be shared by threads.
"""

import base64
import http.client
import json
import socket
import time
import urllib.error
import urllib.request
import uuid

from .errors import StewardError, WaitTimeout, error_from_response
from .liveness import KeepAlive
from .watch import watch_events

# Statuses after which an action no longer moves.
ENDED_STATUSES = frozenset({
    "ACTION_STATUS_DENIED",
    "ACTION_STATUS_REJECTED",
    "ACTION_STATUS_SUCCEEDED",
    "ACTION_STATUS_FAILED",
    "ACTION_STATUS_WITHDRAWN",
})

# Statuses where an action waits for someone other than Steward: a person's
# approval, the settling of an outcome nobody knows, or a person doing the
# work an approver said they do.
WAITING_STATUSES = frozenset({
    "ACTION_STATUS_AWAITING_APPROVAL",
    "ACTION_STATUS_UNKNOWN",
    "ACTION_STATUS_PERSON_EXECUTING",
})

# How long Steward holds a GetAction with wait set, at most.
_SERVER_HOLD = 30.0


def new_id():
    """new_id returns a fresh id for a command: a random UUID."""
    return str(uuid.uuid4())


class Client:
    """Client calls one Steward at base_url ("http://127.0.0.1:7700") with a
    bearer token (None in the open mode).

    timeout bounds each attempt in seconds; max_attempts, initial_backoff
    and max_backoff are the retry rules; sleep is how the client waits
    between attempts (tests pass their own).
    """

    def __init__(self, base_url, token=None, *, timeout=30.0, max_attempts=5,
                 initial_backoff=0.1, max_backoff=5.0, sleep=time.sleep, headers=None):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._sleep = sleep
        self._headers = dict(headers or {})

    # -- the wire ---------------------------------------------------------

    def call(self, service, method, body=None, *, timeout=None, retry=True, deadline=None):
        """call sends body (a dict, the request's protobuf JSON) to
        steward.v1.<service>/<method> and returns the response as a dict.

        It retries as the module says; the body is sent unchanged each
        time, so a command must carry its ids in it. retry=False makes one
        attempt. deadline (time.monotonic()) stops retrying past it.
        Raises StewardError.
        """
        url = f"{self.base_url}/steward.v1.{service}/{method}"
        data = json.dumps(body or {}).encode("utf-8")
        attempts = self.max_attempts if retry else 1
        delay = self.initial_backoff
        for attempt in range(1, attempts + 1):
            try:
                return self._post(url, data, timeout if timeout is not None else self.timeout)
            except StewardError as e:
                err = e
                if not e.retryable:
                    raise
            except Exception as e:  # noqa: BLE001 — sorted by _network_error
                if not _network_error(e):
                    raise
                err = StewardError("unavailable", f"{service}.{method}: {e}")
                err.__cause__ = e
            if attempt == attempts or (deadline is not None and time.monotonic() + delay >= deadline):
                raise err
            self._sleep(delay)
            delay = min(delay * 2, self.max_backoff)
        raise AssertionError("unreachable")

    def _post(self, url, data, timeout):
        headers = {
            "Content-Type": "application/json",
            "Connect-Protocol-Version": "1",
            "Connect-Timeout-Ms": str(max(1, int(timeout * 1000))),
            **self._headers,
        }
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        req = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            # A little past the server's deadline, so that its answer, not
            # the socket, says the time ran out.
            with urllib.request.urlopen(req, timeout=timeout + 5) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            with e:
                raise error_from_response(e.code, e.read()) from None
        try:
            return json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, ValueError) as e:
            raise StewardError("internal", f"the answer is not JSON: {e}") from e

    # -- tasks ------------------------------------------------------------

    def create_task(self, contract, *, request_id=None):
        """create_task opens a task with contract (a TaskContract dict) and
        returns the CreateTaskResponse: {"task": ..., "created": bool}."""
        return self.call("TaskService", "CreateTask",
                         {"requestId": request_id or new_id(), "contract": contract})

    def get_task(self, task_id):
        """get_task returns the task's view (the Task dict)."""
        return self.call("QueryService", "GetTask", {"taskId": task_id}).get("task", {})

    def wait_task(self, task_id, until, *, timeout=30.0, interval=0.1):
        """wait_task reads the task until until(task) is true and returns it;
        WaitTimeout after timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            task = self.get_task(task_id)
            if until(task):
                return task
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"task {task_id} is {task.get('status')} after {timeout}s")
            self._sleep(interval)

    def wait_running(self, task_id, *, timeout=30.0):
        """wait_running waits until a new task runs and holds its credential:
        the point from which it may propose actions."""
        return self.wait_task(task_id, lambda t: t.get("status") == "TASK_STATUS_RUNNING"
                              and "credential" in t, timeout=timeout)

    # -- actions ----------------------------------------------------------

    def propose_action(self, task_id, tool, params=None, *, target="", proposal_id=None,
                       rationale=None, decision_id="", tool_version="", milestone_id="", timeout=None, **extra):
        """propose_action proposes one tool call and returns the
        ProposeActionResponse: {"action": ..., "created": bool}. extra takes
        other ProposeActionRequest fields by their JSON names (editOf,
        retryPolicy)."""
        body = {"taskId": task_id, "proposalId": proposal_id or new_id(), "tool": tool,
                "params": params or {}, **extra}
        for key, value in (("target", target), ("rationale", rationale), ("decisionId", decision_id),
                           ("toolVersion", tool_version), ("milestoneId", milestone_id)):
            if value:
                body[key] = value
        return self.call("TaskService", "ProposeAction", body, timeout=timeout)

    def get_action(self, task_id, action_id, *, wait=False, timeout=None):
        """get_action returns the GetActionResponse: {"action", "taskStatus",
        "lastSequence", ...}. With wait, Steward holds the call while it is
        moving the action on by itself (at most 30 s, or timeout)."""
        body = {"taskId": task_id, "actionId": action_id}
        if wait:
            body["wait"] = True
        return self.call("QueryService", "GetAction", body, timeout=timeout)

    def wait_action(self, task_id, action_id, *, timeout=60.0, interval=0.5):
        """wait_action returns the GetActionResponse once the action has
        ended (ENDED_STATUSES) or waits for someone (WAITING_STATUSES);
        WaitTimeout, carrying the action last read, after timeout seconds."""
        deadline = time.monotonic() + timeout
        action = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(f"action {action_id} is {(action or {}).get('status')} after {timeout}s", action)
            began = time.monotonic()
            try:
                resp = self.call("QueryService", "GetAction",
                                 {"taskId": task_id, "actionId": action_id, "wait": True},
                                 timeout=min(remaining, _SERVER_HOLD), deadline=deadline)
            except StewardError as e:
                if e.code == "deadline_exceeded" and time.monotonic() >= deadline:
                    raise WaitTimeout(f"action {action_id} did not settle in {timeout}s", action) from e
                raise
            action = resp.get("action", {})
            if settled(action):
                return resp
            # Answered at once though the action still moves: its task is
            # paused. Look again a little later rather than spin.
            if time.monotonic() - began < interval:
                self._sleep(min(interval, max(0.0, deadline - time.monotonic())))

    def propose_and_wait(self, task_id, tool, params=None, *, timeout=60.0, **kwargs):
        """propose_and_wait proposes an action, as propose_action, with wait,
        and waits on as wait_action where Steward did not hold the call: it
        returns the response ({"action", "taskStatus", ...}) once the action
        has ended or waits for a person (awaiting approval). The proposal id
        is generated once, so a retried proposal is the same action."""
        deadline = time.monotonic() + timeout
        # One round trip: Steward holds the proposal until the action stops
        # moving. Where it did not (a control plane alone, or a wait past
        # 30 s) the answer has no taskStatus, and GetAction waits on.
        resp = self.propose_action(task_id, tool, params, wait=True, timeout=min(timeout, _SERVER_HOLD + 5), **kwargs)
        if resp.get("taskStatus") and settled(resp.get("action", {})):
            return resp
        return self.wait_action(task_id, resp["action"]["actionId"], timeout=max(0.0, deadline - time.monotonic()))

    # -- decisions and context --------------------------------------------

    def record_decision(self, task_id, decision):
        """record_decision records a model decision (a Decision dict); a
        decisionId is generated when it has none. Returns the
        RecordDecisionResponse: {"decision": ..., "created": bool}."""
        decision = dict(decision)
        decision.setdefault("decisionId", new_id())
        return self.call("TaskService", "RecordDecision", {"taskId": task_id, "decision": decision})

    def attach_context(self, task_id, item):
        """attach_context adds a context item (a ContextItem dict) to the
        task's ledger; a contextId is generated when it has none. Returns
        the AttachContextResponse: {"item": ..., "created": bool}."""
        item = dict(item)
        item.setdefault("contextId", new_id())
        return self.call("TaskService", "AttachContext", {"taskId": task_id, "item": item})

    def list_decisions(self, task_id, *, page_size=0, page_token=""):
        """list_decisions returns one page of the task's decisions:
        {"decisions", "contextItems", "nextPageToken"}."""
        body = {"taskId": task_id}
        if page_size:
            body["pageSize"] = page_size
        if page_token:
            body["pageToken"] = page_token
        return self.call("QueryService", "ListDecisions", body)

    def all_decisions(self, task_id):
        """all_decisions returns every decision the task recorded, reading
        ListDecisions page after page: what an agent that restarts reads
        before asking a model again."""
        decisions, token = [], ""
        while True:
            page = self.list_decisions(task_id, page_token=token)
            decisions.extend(page.get("decisions", []))
            token = page.get("nextPageToken", "")
            if not token:
                return decisions

    # -- liveness and events ----------------------------------------------

    def heartbeat(self, task_id, note=""):
        """heartbeat says the agent is at work on the task: it answers an
        open "still working?" and resumes a task suspended for the agent's
        silence (docs/liveness.md). Steward records one only when it is
        news, so it is retried as a read is. Returns the HeartbeatResponse:
        {"taskStatus", "taskStatusReason", "question", "resumed"}."""
        body = {"taskId": task_id}
        if note:
            body["note"] = note
        return self.call("TaskService", "Heartbeat", body)

    def keep_alive(self, task_id, interval=30.0, on_beat=None, *, note=""):
        """keep_alive heartbeats the task every interval seconds from a
        background thread, for an agent busy with something long, and
        returns the KeepAlive: call stop(), or use it in a with block."""
        return KeepAlive(self, task_id, interval, on_beat, note)

    def watch_task(self, task_id, after_sequence=0, *, timeout=None, on_live=None):
        """watch_task yields the task's events (EventRecord dicts:
        {"sequence", "event"}) after after_sequence (0: from its first), in
        order, past and then new, until the caller stops iterating.

        A stream that breaks — reset, cut off, unavailable — is opened
        again from the last event yielded, so each event comes once, none
        lost; after max_attempts breaks in a row (a stream that reached
        Steward again starts the count anew) the last is raised as a
        StewardError, as is any other code at once. timeout bounds the
        wait for each read in seconds (None: no bound); past it,
        StewardError deadline_exceeded. on_live(last_sequence) is called
        each time a stream opens, with the task's last sequence then."""
        return watch_events(self, task_id, after_sequence, timeout=timeout, on_live=on_live)

    # -- plans and results ------------------------------------------------

    def submit_plan(self, task_id, plan, *, request_id=None):
        """submit_plan gives the task a plan or a new version of it (a Plan
        dict). Returns the SubmitPlanResponse: {"task", "created"}."""
        return self.call("TaskService", "SubmitPlan",
                         {"taskId": task_id, "plan": plan, "requestId": request_id or new_id()})

    def submit_artifact(self, task_id, name, content=None, *, media_type="", uri="", sha256="",
                        size_bytes=0, action_id="", request_id=None):
        """submit_artifact records a version of an artifact: content (bytes
        or str, stored by Steward) or uri with sha256 and size_bytes.
        Returns the SubmitArtifactResponse: {"artifact", "task"}."""
        body = {"taskId": task_id, "name": name, "requestId": request_id or new_id()}
        if content is not None:
            if isinstance(content, str):
                content = content.encode("utf-8")
            body["content"] = base64.b64encode(content).decode("ascii")
        for key, value in (("mediaType", media_type), ("uri", uri), ("sha256", sha256),
                           ("sizeBytes", str(size_bytes) if size_bytes else ""), ("actionId", action_id)):
            if value:
                body[key] = value
        return self.call("TaskService", "SubmitArtifact", body)

    def mark_produced(self, task_id, *, report=None, request_id=None):
        """mark_produced says the task has produced its result, with the
        agent's execution report if given (an ExecutionReport as a dict:
        summary, steps, deviations, leftOpen; docs/receipts.md). Returns the
        MarkProducedResponse: {"task", "round"}."""
        req = {"taskId": task_id, "requestId": request_id or new_id()}
        if report is not None:
            req["report"] = report
        return self.call("TaskService", "MarkProduced", req)

    def get_receipt(self, task_id):
        """get_receipt returns the task's receipt: {"receipt", "markdown"}."""
        return self.call("QueryService", "GetReceipt", {"taskId": task_id})


def settled(action):
    """settled says whether an action (a dict) has ended or waits for
    someone: where propose_and_wait returns."""
    status = (action or {}).get("status", "")
    return status in ENDED_STATUSES or status in WAITING_STATUSES


def _network_error(exc):
    """_network_error says whether exc is a transport failure worth a retry:
    refused, reset, disconnected, cut short or timed out."""
    if isinstance(exc, urllib.error.HTTPError):
        return False
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason
    return isinstance(exc, (ConnectionError, TimeoutError, socket.timeout,
                            http.client.RemoteDisconnected, http.client.IncompleteRead))
