"""The client against a real Steward, which e2e/sdk_python_test.go starts.

STEWARD_URL is Steward; STEWARD_PROXY_URL a proxy in front of it that
forwards the first ProposeAction and drops its answer; STEWARD_TOKEN an
agent's token. Without STEWARD_URL these tests are skipped.
"""

import os
import unittest

from steward_client import Client, StewardError, new_id

URL = os.environ.get("STEWARD_URL")
PROXY_URL = os.environ.get("STEWARD_PROXY_URL")
TOKEN = os.environ.get("STEWARD_TOKEN")

# The case the proposals make: the default policy denies an irreversible
# write whose proposer says nothing of its impact and rollback.
ARGUED = {
    "expectedImpact": "moves the amount to acct:42",
    "rollbackPlan": "none automatic: ask the payee to send it back",
    "evidence": ["ticket:INC-7"],
}


def contract(**changes):
    k = {
        "intent": "Summarise last week's incidents",
        "desiredOutcome": "A one-page summary for the on-call review",
        "requesterRef": "user:ana",
        "accountableOwnerRef": "user:ana",
        "authorizerRef": "user:bo",
        "riskTier": "RISK_TIER_LOW",
        "budget": {"maxTokens": 50000},
        "allowedTools": ["search", "wire"],
    }
    k.update(changes)
    return k


def running_task(c):
    task_id = c.create_task(contract())["task"]["contract"]["taskId"]
    c.wait_running(task_id)
    return task_id


@unittest.skipUnless(URL, "STEWARD_URL is not set: run through e2e/sdk_python_test.go")
class LostResponseTest(unittest.TestCase):
    @unittest.skipUnless(PROXY_URL, "STEWARD_PROXY_URL is not set")
    def test_a_lost_answer_after_a_committed_proposal_is_one_action(self):
        # Through the proxy, which drops the answer to the first proposal
        # after Steward has committed it: the client retries with the same
        # proposal id and is answered with the action already made.
        c = Client(PROXY_URL, TOKEN)
        task_id = running_task(c)
        resp = c.propose_action(task_id, "search", {"q": "incidents last week"}, target="acct:42")
        self.assertFalse(resp.get("created", False), "the retry made a new action: the first answer was not lost")
        actions = c.get_task(task_id).get("actions", [])
        self.assertEqual(len(actions), 1, actions)
        self.assertEqual(actions[0]["actionId"], resp["action"]["actionId"])


@unittest.skipUnless(URL, "STEWARD_URL is not set: run through e2e/sdk_python_test.go")
class AgentPathTest(unittest.TestCase):
    def setUp(self):
        self.c = Client(URL, TOKEN)

    def test_an_invalid_request_names_its_field(self):
        with self.assertRaises(StewardError) as cm:
            self.c.create_task(contract(intent=""))
        err = cm.exception
        self.assertEqual(err.code, "invalid_argument")
        self.assertEqual(err.field, "contract.intent")
        with self.assertRaises(StewardError) as cm:
            self.c.create_task(contract(budget={"maxTokens": -1}))
        self.assertEqual(cm.exception.field, "contract.budget.max_tokens")

    def test_codes_come_through(self):
        with self.assertRaises(StewardError) as cm:
            self.c.get_task("no-such-task")
        self.assertEqual(cm.exception.code, "not_found")
        with self.assertRaises(StewardError) as cm:
            Client(URL, "not-a-token").get_task("no-such-task")
        self.assertEqual(cm.exception.code, "unauthenticated")

    def test_propose_and_wait(self):
        task_id = running_task(self.c)
        # A read runs at once: the call returns its outcome.
        read = self.c.propose_and_wait(task_id, "search", {"q": "incidents"}, target="acct:42",
                                       rationale=ARGUED, timeout=30)
        self.assertEqual(read["action"]["status"], "ACTION_STATUS_SUCCEEDED", read)
        self.assertIn("outcome", read["action"])
        # An irreversible write waits for a person: the call returns there.
        wire = self.c.propose_and_wait(task_id, "wire", {"amount": 120}, target="acct:42",
                                       rationale=ARGUED, timeout=30)
        self.assertEqual(wire["action"]["status"], "ACTION_STATUS_AWAITING_APPROVAL", wire)
        self.assertEqual(wire["taskStatus"], "TASK_STATUS_WAITING_FOR_APPROVAL")
        # A refused proposal is an error, not a wait.
        with self.assertRaises(StewardError) as cm:
            self.c.propose_and_wait(task_id, "wire", {"amount": 0}, target="acct:42", timeout=30)
        self.assertEqual(cm.exception.code, "invalid_argument", cm.exception)

    def test_a_repeated_proposal_id_is_the_same_action(self):
        task_id = running_task(self.c)
        pid = new_id()
        first = self.c.propose_action(task_id, "search", {"q": "x"}, proposal_id=pid)
        again = self.c.propose_action(task_id, "search", {"q": "x"}, proposal_id=pid)
        self.assertTrue(first["created"])
        self.assertFalse(again.get("created", False))
        self.assertEqual(first["action"]["actionId"], again["action"]["actionId"])

    def test_decisions_context_artifacts_and_receipt(self):
        c = self.c
        task_id = running_task(c)
        item = c.attach_context(task_id, {"uri": "https://wiki.example/incidents", "digest": "sha256:" + "ab" * 32,
                                          "source": "wiki", "egress": ["*"]})["item"]
        decision = c.record_decision(task_id, {
            "call": {"provider": "example", "modelId": "m-1"},
            "contextIds": [item["contextId"]],
            "rationale": "search the incidents first",
            "proposals": {"proposalIds": ["search-1"]},
        })
        self.assertTrue(decision["created"])
        done = c.propose_and_wait(task_id, "search", {"q": "incidents last week"}, target="acct:42",
                                  proposal_id="search-1", decision_id=decision["decision"]["decisionId"], timeout=30)
        self.assertEqual(done["action"]["status"], "ACTION_STATUS_SUCCEEDED", done)
        listed = c.list_decisions(task_id)
        self.assertEqual([d["decisionId"] for d in listed["decisions"]], [decision["decision"]["decisionId"]])
        self.assertEqual([i["contextId"] for i in listed["contextItems"]], [item["contextId"]])
        art = c.submit_artifact(task_id, "summary.md", "# Incidents\n", media_type="text/markdown")
        self.assertEqual(art["artifact"]["name"], "summary.md")
        produced = c.mark_produced(task_id, report={
            "summary": "summarised the incidents",
            "steps": [{"description": "searched", "actionIds": [done["action"]["actionId"]], "artifacts": ["summary.md"]}],
        })
        self.assertEqual(produced["round"]["report"]["summary"], "summarised the incidents")
        receipt = c.get_receipt(task_id)
        self.assertIn(task_id, receipt["markdown"])
        self.assertIn("The agent's account", receipt["markdown"])

    def test_generic_call(self):
        task_id = running_task(self.c)
        timeline = self.c.call("QueryService", "GetTimeline", {"taskId": task_id})
        self.assertGreaterEqual(len(timeline["entries"]), 3)


if __name__ == "__main__":
    unittest.main()
