"""watch_events streams a task's events (QueryService.WatchTask) over
Connect's streaming protocol, resuming after a broken connection.

A server stream is a POST whose body and answer are enveloped messages:
a flags byte, a 4-byte big-endian length, then that many bytes of JSON.
The answer's last envelope has flag 0x02 and carries {"error": ...} when
the stream failed. HTTP/1.1 is enough: urllib reads the answer as it
comes.
"""

import contextlib
import http.client
import json
import socket
import struct
import urllib.error
import urllib.request

from .errors import StewardError, error_from_response

_END_STREAM = 0x02
_PATH = "/steward.v1.QueryService/WatchTask"


class _StreamBroken(Exception):
    """_StreamBroken: the answer stopped before its end-of-stream message."""


def watch_events(client, task_id, after_sequence=0, *, timeout=None, on_live=None):
    """watch_events yields the task's events after after_sequence, in order,
    each once, until the caller stops iterating. See Client.watch_task."""
    failures, delay = 0, client.initial_backoff
    while True:
        try:
            with contextlib.closing(_open(client, task_id, after_sequence, timeout)) as stream:
                for message in stream:
                    record = message.get("record")
                    if record is None:
                        # The live mark: the watch is open and reading.
                        failures, delay = 0, client.initial_backoff
                        if on_live is not None:
                            on_live(int(message.get("lastSequence", 0)))
                        continue
                    yield record
                    after_sequence = int(record.get("sequence", 0))
            err = StewardError("unavailable", "the watch ended")  # the server stopped: open it again
        except StewardError as e:
            if not e.retryable:
                raise
            err = e
        except socket.timeout as e:
            raise StewardError("deadline_exceeded", f"no event on task {task_id} in {timeout}s") from e
        except Exception as e:  # noqa: BLE001 — sorted by _broken
            if not _broken(e):
                raise
            err = StewardError("unavailable", f"the watch broke: {e!r}")
            err.__cause__ = e
        failures += 1
        if failures >= client.max_attempts:
            raise err
        client._sleep(delay)
        delay = min(delay * 2, client.max_backoff)


def _open(client, task_id, after_sequence, timeout):
    """_open makes one WatchTask call and yields its messages as dicts; it
    raises StewardError for the stream's error, _StreamBroken when it
    stops short."""
    body = json.dumps({"taskId": task_id, "afterSequence": str(after_sequence)}).encode("utf-8")
    headers = {
        "Content-Type": "application/connect+json",
        "Connect-Protocol-Version": "1",
        **client._headers,
    }
    if client.token:
        headers["Authorization"] = "Bearer " + client.token
    req = urllib.request.Request(client.base_url + _PATH, data=struct.pack(">BI", 0, len(body)) + body,
                                 headers=headers, method="POST")
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as e:
        with e:
            raise error_from_response(e.code, e.read()) from None
    with resp:
        while True:
            head = _read_exact(resp, 5)
            if head is None:
                raise _StreamBroken("the stream ended without its end message")
            flags, size = struct.unpack(">BI", head)
            payload = _read_exact(resp, size) if size else b""
            if payload is None:
                raise _StreamBroken("the stream stopped inside a message")
            try:
                message = json.loads(payload.decode("utf-8")) if payload else {}
            except (UnicodeDecodeError, ValueError) as e:
                raise StewardError("internal", f"a watch message is not JSON: {e}") from e
            if flags & _END_STREAM:
                wire = message.get("error")
                if wire:
                    raise error_from_response(200, json.dumps(wire).encode("utf-8"))
                return
            yield message


def _read_exact(resp, n):
    """_read_exact reads n bytes, or returns None at the end of the answer
    (b"" only when n is 0)."""
    out = b""
    while len(out) < n:
        chunk = resp.read(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def _broken(exc):
    """_broken says whether exc is a connection that failed or broke, which
    the watch opens again from the last event it handed on."""
    if isinstance(exc, urllib.error.HTTPError):
        return False
    if isinstance(exc, urllib.error.URLError):
        exc = exc.reason
    return isinstance(exc, (_StreamBroken, ConnectionError, http.client.IncompleteRead,
                            http.client.RemoteDisconnected, http.client.HTTPException, OSError))
