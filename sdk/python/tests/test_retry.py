"""The safe-retry rules, against a scripted local HTTP server."""

import http.server
import json
import socket
import threading
import unittest

from steward_client import Client, StewardError


class Script(http.server.BaseHTTPRequestHandler):
    """Script answers each POST with the next of the server's replies: an
    (HTTP status, JSON body) pair, or "drop" to close without answering."""

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        srv = self.server
        with srv.lock:
            srv.bodies.append(json.loads(body))
            reply = srv.replies.pop(0) if srv.replies else (200, {})
        if reply == "drop":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        status, wire = reply
        out = json.dumps(wire).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


class RetryTest(unittest.TestCase):
    def serve(self, *replies):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Script)
        srv.lock, srv.bodies, srv.replies = threading.Lock(), [], list(replies)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        self.slept = []
        client = Client(f"http://127.0.0.1:{srv.server_address[1]}", "t", sleep=self.slept.append)
        return srv, client

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
