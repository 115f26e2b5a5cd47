"""KeepAlive heartbeats a task from a background thread
(TaskService.Heartbeat, docs/liveness.md)."""

import threading

from .errors import StewardError


class KeepAlive:
    """KeepAlive heartbeats task_id every interval seconds, the first at
    once, until stop() — or the end of a with block. Each answer (the
    HeartbeatResponse dict) goes to on_beat(answer, None), a failed
    heartbeat to on_beat(None, error); on_beat runs on the heartbeat
    thread. Client.keep_alive starts one."""

    def __init__(self, client, task_id, interval, on_beat=None, note=""):
        self._client = client
        self._task_id = task_id
        self._interval = interval
        self._on_beat = on_beat
        self._note = note
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"keep-alive {task_id}", daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                answer, err = self._client.heartbeat(self._task_id, self._note), None
            except StewardError as e:
                answer, err = None, e
            if self._on_beat is not None and not self._stop.is_set():
                self._on_beat(answer, err)
            if self._stop.wait(self._interval):
                return

    def stop(self, timeout=None):
        """stop ends the heartbeats and waits for the thread, at most
        timeout seconds (a heartbeat in flight finishes first)."""
        self._stop.set()
        self._thread.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
