"""How wait_action stops, against a scripted local HTTP server."""

import unittest

from steward_client import WaitTimeout

from .scripted import ScriptedTest


def action(status):
    return (200, {"action": {"actionId": "a1", "status": status}, "taskStatus": "TASK_STATUS_RUNNING"})


class WaitTest(ScriptedTest):
    def test_returns_once_the_action_ends(self):
        srv, c = self.serve(action("ACTION_STATUS_EVALUATED"), action("ACTION_STATUS_DISPATCHED"),
                            action("ACTION_STATUS_SUCCEEDED"))
        resp = c.wait_action("t1", "a1", timeout=10)
        self.assertEqual(resp["action"]["status"], "ACTION_STATUS_SUCCEEDED")
        self.assertEqual(len(srv.bodies), 3)
        self.assertTrue(all(b["wait"] for b in srv.bodies))

    def test_returns_where_a_person_must_act(self):
        srv, c = self.serve(action("ACTION_STATUS_AWAITING_APPROVAL"))
        self.assertEqual(c.wait_action("t1", "a1")["action"]["status"], "ACTION_STATUS_AWAITING_APPROVAL")

    def test_propose_and_wait_is_one_call(self):
        srv, c = self.serve(action("ACTION_STATUS_SUCCEEDED"))
        self.assertEqual(c.propose_and_wait("t1", "search", {"q": "x"})["action"]["status"], "ACTION_STATUS_SUCCEEDED")
        self.assertEqual([sorted(b) for b in srv.bodies], [["params", "proposalId", "taskId", "tool", "wait"]])

    def test_propose_and_wait_waits_on_where_the_server_did_not(self):
        # A control plane alone answers at once, without the task's status.
        srv, c = self.serve((200, {"action": {"actionId": "a1", "status": "ACTION_STATUS_PROPOSED"}, "created": True}),
                            action("ACTION_STATUS_DENIED"))
        self.assertEqual(c.propose_and_wait("t1", "search", {"q": "x"})["action"]["status"], "ACTION_STATUS_DENIED")
        self.assertEqual([sorted(b) for b in srv.bodies],
                         [["params", "proposalId", "taskId", "tool", "wait"], ["actionId", "taskId", "wait"]])

    def test_times_out_with_the_last_action(self):
        moving = [action("ACTION_STATUS_WAITING")] * 1000
        srv, c = self.serve(*moving)
        with self.assertRaises(WaitTimeout) as cm:
            c.wait_action("t1", "a1", timeout=0.2, interval=0.01)
        self.assertEqual(cm.exception.code, "deadline_exceeded")
        self.assertEqual(cm.exception.action["status"], "ACTION_STATUS_WAITING")


if __name__ == "__main__":
    unittest.main()
