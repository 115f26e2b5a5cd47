"""The safe-retry rules, against a scripted local HTTP server."""

import socket
import unittest

from steward_client import Client, StewardError

from .scripted import ScriptedTest


class RetryTest(ScriptedTest):
    def test_unavailable_is_retried_with_the_same_ids(self):
        unavailable = (503, {"code": "unavailable", "message": "leader moved"})
        srv, c = self.serve(unavailable, unavailable, (200, {"action": {"actionId": "a1"}, "created": True}))
        resp = c.propose_action("t1", "search", {"q": "x"})
        self.assertEqual(resp["action"]["actionId"], "a1")
        self.assertEqual(len(srv.bodies), 3)
        self.assertTrue(srv.bodies[0]["proposalId"])
        self.assertEqual(srv.bodies[0], srv.bodies[1])
        self.assertEqual(srv.bodies[1], srv.bodies[2])
        self.assertEqual(self.slept, [0.1, 0.2])

    def test_a_lost_answer_is_retried(self):
        srv, c = self.serve("drop", (200, {"task": {}, "created": False}))
        c.create_task({"intent": "x"})
        self.assertEqual(len(srv.bodies), 2)
        self.assertEqual(srv.bodies[0]["requestId"], srv.bodies[1]["requestId"])

    def test_deadline_exceeded_is_retried(self):
        srv, c = self.serve((504, {"code": "deadline_exceeded", "message": "slow"}), (200, {}))
        c.mark_produced("t1")
        self.assertEqual(len(srv.bodies), 2)

    def test_other_codes_are_not_retried(self):
        for code, status in (("invalid_argument", 400), ("already_exists", 409), ("internal", 500),
                             ("failed_precondition", 400), ("resource_exhausted", 429)):
            with self.subTest(code=code):
                srv, c = self.serve((status, {"code": code, "message": "no"}))
                with self.assertRaises(StewardError) as cm:
                    c.record_decision("t1", {"rationale": "r"})
                self.assertEqual(cm.exception.code, code)
                self.assertEqual(len(srv.bodies), 1)
                self.assertEqual(self.slept, [])

    def test_the_given_id_is_kept(self):
        srv, c = self.serve((503, {"code": "unavailable"}), (200, {}))
        c.record_decision("t1", {"decisionId": "d-7"})
        self.assertEqual([b["decision"]["decisionId"] for b in srv.bodies], ["d-7", "d-7"])

    def test_refused_gives_up_after_five_attempts_backing_off(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now
        slept = []
        c = Client(f"http://127.0.0.1:{port}", None, sleep=slept.append)
        with self.assertRaises(StewardError) as cm:
            c.get_task("t1")
        self.assertEqual(cm.exception.code, "unavailable")
        self.assertIsInstance(cm.exception.__cause__, Exception)
        self.assertEqual(slept, [0.1, 0.2, 0.4, 0.8])
        slept.clear()
        with self.assertRaises(StewardError):
            Client(f"http://127.0.0.1:{port}", None, sleep=slept.append, max_attempts=10).get_task("t1")
        self.assertEqual(slept, [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0])


if __name__ == "__main__":
    unittest.main()
