"""watch_task and keep_alive against a real Steward, which
e2e/sdk_python_test.go starts (STEWARD_URL, STEWARD_TOKEN).

The watch test puts a TCP proxy of its own between the client and
Steward, and cuts the stream's connection in the middle: the watch opens
again from the last event it handed on, so every event comes once.
"""

import socket
import threading
import unittest

from steward_client import Client
from tests.test_steward import TOKEN, URL, running_task


class CutProxy:
    """CutProxy forwards TCP connections to Steward until cut(), which
    closes every connection open at the time; it counts the connections."""

    def __init__(self, target):
        host, port = target.split("://", 1)[1].rstrip("/").rsplit(":", 1)
        self._target = (host, int(port))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open = []
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._target)
            with self._lock:
                self.connections += 1
                self._open.append((conn, upstream))
            for src, dst in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self):
        """cut breaks every connection open now, mid-stream."""
        with self._lock:
            pairs, self._open = self._open, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self._listener.close()
        self.cut()


def context_item(n):
    return {"contextId": f"note-{n}", "uri": f"https://wiki.example/{n}", "digest": "sha256:" + "cd" * 32,
            "source": "wiki", "egress": ["*"]}


@unittest.skipUnless(URL, "STEWARD_URL is not set: run through e2e/sdk_python_test.go")
class WatchTest(unittest.TestCase):
    def test_a_watch_goes_on_after_a_break(self):
        c = Client(URL, TOKEN)
        task_id = running_task(c)
        c.attach_context(task_id, context_item(1))
        proxy = CutProxy(URL)
        self.addCleanup(proxy.close)
        watcher = Client(proxy.url, TOKEN, initial_backoff=0.02, max_backoff=0.2)
        seen, lives, last = [], [], None
        for rec in watcher.watch_task(task_id, timeout=30, on_live=lives.append):
            seq = int(rec["sequence"])
            seen.append(seq)
            if len(seen) == 2:
                # Break the stream, then add events only a new one can bring.
                proxy.cut()
                for n in (2, 3):
                    c.attach_context(task_id, context_item(n))
                last = int(c.get_task(task_id)["lastSequence"])
            if last is not None and seq >= last:
                break
        task = c.get_task(task_id)
        self.assertEqual(proxy.connections, 2, f"the watch opened {proxy.connections} streams; lives {lives}")
        self.assertEqual(len(lives), 2, lives)
        self.assertEqual(seen, sorted(set(seen)), f"events out of order or twice: {seen}")
        self.assertEqual(len(seen), int(task["eventCount"]), f"a gap: {seen}, {task['eventCount']} events")
        self.assertEqual(seen[-1], last)

    def test_a_watch_of_no_task_is_refused_at_once(self):
        c = Client(URL, TOKEN, initial_backoff=5)  # a retry would show as a long wait
        with self.assertRaises(Exception) as cm:
            next(iter(c.watch_task("no-such-task", timeout=10)))
        self.assertEqual(getattr(cm.exception, "code", None), "not_found", cm.exception)


@unittest.skipUnless(URL, "STEWARD_URL is not set: run through e2e/sdk_python_test.go")
class LivenessTest(unittest.TestCase):
    def test_heartbeat_answers_with_the_task_status(self):
        c = Client(URL, TOKEN)
        task_id = running_task(c)
        answer = c.heartbeat(task_id, "reading the listing")
        self.assertEqual(answer["taskStatus"], "TASK_STATUS_RUNNING", answer)

    def test_keep_alive_heartbeats_until_stopped(self):
        c = Client(URL, TOKEN)
        task_id = running_task(c)
        answers, errors = [], []
        three = threading.Event()

        def on_beat(answer, err):
            (errors if err else answers).append(err or answer)
            if len(answers) >= 3:
                three.set()

        with c.keep_alive(task_id, 0.02, on_beat) as beating:
            self.assertTrue(three.wait(10), f"{len(answers)} heartbeats in 10 s; errors {errors}")
        self.assertFalse(beating._thread.is_alive(), "the heartbeats went on after the with block")
        self.assertEqual(errors, [])
        self.assertTrue(all(a.get("taskStatus") == "TASK_STATUS_RUNNING" for a in answers), answers)


if __name__ == "__main__":
    unittest.main()
