"""The example agent's scenario, shortened, on the Python client
(sdk/python): sync a few files from one toy store to another through
governed HTTP tools, deciding each copy with a model first and recording
why, then hand the result in and print the receipt.

Its state is Steward's: started again after it left mid-way
(--exit-after), it finds its task by its request id (--run), its
decisions with all_decisions — the model is asked only for a file whose
decision is not on the record — and its actions by their proposal ids,
each copy's derived from its decision's. See docs/sdk-python.md.

    go run ./cmd/steward dev &
    go run ./examples/agent --fixtures-only --files 3 &     # prints "fixtures http://…"
    python3 examples/agent-python/agent.py --store http://…/store --model http://…/v1
"""

import argparse
import contextlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sdk", "python"))

from steward_client import Client, StewardError  # noqa: E402


def file_name(i):
    return f"file-{i:02d}.txt"


def register_tools(admin, store, model):
    """register_tools registers the store's and the model's tools, as an
    admin does once; the same contract again is already there."""
    def http(name, path, effect):
        return {"name": name, "version": "1", "effectClass": effect, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
                "timeout": "5s", "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s"},
                "idempotency": {"honoursKey": True}, "statusQuery": True,
                "http": {"url": store + path, "statusUrl": store + "/status"}}
    tools = [
        http("sync_list", "/list", "EFFECT_CLASS_READ"),
        http("sync_copy", "/copy", "EFFECT_CLASS_IDEMPOTENT_WRITE"),
        {"name": "sync_llm", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
         "timeout": "30s", "model": {"baseUrl": model, "model": "toy-1", "provider": "toy", "maxTokens": 200,
                                     "inputMicrosPer1k": 100, "outputMicrosPer1k": 300}},
    ]
    for contract in tools:
        try:
            admin.call("ToolService", "RegisterTool", {"contract": contract}, retry=False)
        except StewardError as e:
            if e.code != "already_exists":
                raise


def open_task(steward, run, files):
    """open_task creates the run's task — or, started again, finds it: the
    request id is the run's name — and waits for it to run."""
    task = steward.create_task({
        "intent": f"Sync {files} files from the source store to the destination",
        "desiredOutcome": "every file in the destination, and a manifest naming them",
        "requesterRef": "user:ana", "accountableOwnerRef": "user:ana", "riskTier": "RISK_TIER_MEDIUM",
        "budget": {"maxTokens": 100000}, "allowedTools": ["sync_list", "sync_copy", "sync_llm"],
        "acceptanceCriteria": [{"id": "manifest", "description": "the manifest names every file",
                                "expression": f'"manifest" in artifacts && artifacts["manifest"].json.files == {files}'}],
    }, request_id=run)["task"]
    task_id = task["contract"]["taskId"]
    steward.wait_task(task_id, lambda t: t.get("status") != "TASK_STATUS_PENDING")
    return task_id


def step(steward, task_id, proposal_id, tool, params, decision_id=""):
    """step proposes an action under its proposal id and waits for it to
    succeed (Steward retries a transient failure under the tool's policy)."""
    action = steward.propose_and_wait(task_id, tool, params, target="store", proposal_id=proposal_id,
                                      decision_id=decision_id, timeout=60)["action"]
    if action.get("status") != "ACTION_STATUS_SUCCEEDED":
        raise RuntimeError(f"{proposal_id}: {tool} ended {action.get('status')}")
    return action


def wait_recorded(steward, task_id, decision_id):
    """wait_recorded waits, watching the task's events, until Steward has
    recorded the decision it observed of a model call, which it does just
    after the call succeeded: a proposal citing it before then is refused."""
    with contextlib.closing(steward.watch_task(task_id, timeout=60)) as events:
        for rec in events:
            if rec["event"].get("decisionRecorded", {}).get("decision", {}).get("decisionId") == decision_id:
                return


def sync(steward, task_id, files, exit_after):
    """sync lists the source, then decides and copies each file."""
    decided = {d["decisionId"] for d in steward.all_decisions(task_id)}
    print(f"task {task_id}: {len(decided)} decisions already on the record", flush=True)
    listing = step(steward, task_id, "list", "sync_list", {"store": "source"})
    steward.attach_context(task_id, {"contextId": "listing", "uri": "store://source", "source": "sync_list",
                                     "digest": "sha256:" + listing.get("outcome", {}).get("resultHash", ""), "egress": ["toy"]})
    for i in range(1, files + 1):
        name = file_name(i)
        decision_id = f"copy-{name}"
        if decision_id not in decided:
            # The model call's proposal id is the decision's: Steward
            # records what it observed of the call as that decision.
            step(steward, task_id, decision_id, "sync_llm", {
                "messages": [{"role": "user", "content": f"Copy {name} to the destination?"}],
                "decision_id": decision_id, "context_ids": ["listing"], "prompt_template_id": "sync",
                "prompt_version": "v1", "code_version": "examples/agent-python@1"})
            print(f"decided {decision_id}", flush=True)
            wait_recorded(steward, task_id, decision_id)
        step(steward, task_id, f"{decision_id}/put", "sync_copy", {"file": name}, decision_id)
        print(f"copied {name}", flush=True)
        if i == exit_after:
            print(f"left after {i} files", flush=True)
            os._exit(3)  # as a crash would: nothing more runs


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steward", default="http://127.0.0.1:7700")
    p.add_argument("--tokens", default=os.path.join(".steward", "data", "tokens.json"))
    p.add_argument("--store", required=True, help="the toy store's URL: examples/agent --fixtures-only prints it")
    p.add_argument("--model", required=True, help="the model API's URL")
    p.add_argument("--run", default="sync-python-1")
    p.add_argument("--files", type=int, default=3)
    p.add_argument("--exit-after", type=int, default=0)
    args = p.parse_args()
    with open(args.tokens) as f:
        tokens = {t["principal"]: t["token"] for t in json.load(f)["tokens"]}
    steward = Client(args.steward, tokens["agent:dev"])
    register_tools(Client(args.steward, tokens["user:admin"]), args.store, args.model)
    task_id = open_task(steward, args.run, args.files)
    # The agent's word while it works, for a contract that watches it.
    with steward.keep_alive(task_id, 5.0):
        sync(steward, task_id, args.files, args.exit_after)
        manifest = json.dumps({"files": args.files})
        steward.submit_artifact(task_id, "manifest", manifest, media_type="application/json", request_id=f"{args.run}/manifest")
        task = steward.mark_produced(task_id)["task"]
    print(f"task {task_id}: {task.get('status')}", flush=True)
    print(steward.get_receipt(task_id)["markdown"])


if __name__ == "__main__":
    try:
        main()
    except (StewardError, RuntimeError) as e:
        print(f"agent: {e}", file=sys.stderr)
        sys.exit(1)
