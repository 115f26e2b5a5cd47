"""A scripted local HTTP server, for tests of the client without Steward."""

import http.server
import json
import socket
import threading
import unittest

from steward_client import Client


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


class ScriptedTest(unittest.TestCase):
    """ScriptedTest starts a Script server per test; slept records the
    client's waits between attempts."""

    def serve(self, *replies):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Script)
        srv.lock, srv.bodies, srv.replies = threading.Lock(), [], list(replies)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        self.slept = []
        client = Client(f"http://127.0.0.1:{srv.server_address[1]}", "t", sleep=self.slept.append)
        return srv, client
