"""Errors a Steward call raises, and how they are read off the wire.

Connect answers a failed call with a JSON body
{"code": ..., "message": ..., "details": [...]}; Steward attaches a
google.rpc.BadRequest detail naming the field it refused. StewardError
carries the code, the message and that field.
"""

import base64
import json

# The Connect codes a call is retried on: the server did not act, or the
# caller cannot know whether it did and the command's ids make a repeat safe.
# aborted: Steward did nothing and says to try again (a task changing too
# fast for its own retries; a watch that fell behind). Every call retried
# carries its ids, so another attempt is the same command.
RETRYABLE_CODES = frozenset({"unavailable", "deadline_exceeded", "aborted"})

_BAD_REQUEST = "google.rpc.BadRequest"


class StewardError(Exception):
    """StewardError is a call's failure: a Connect code, a message, and the
    request field the server named, if any ("contract.intent").

    violations lists every (field, description) the server's BadRequest
    detail named; details is the error's raw "details" list.
    """

    def __init__(self, code, message, field="", violations=(), details=(), http_status=0):
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
        self.field = field
        self.violations = list(violations)
        self.details = list(details)
        self.http_status = http_status

    @property
    def retryable(self):
        """retryable says whether the safe-retry rules repeat the call."""
        return self.code in RETRYABLE_CODES


class WaitTimeout(StewardError):
    """WaitTimeout is raised when an action did not settle in time; action is
    the action as last read (a dict), or None."""

    def __init__(self, message, action=None):
        super().__init__("deadline_exceeded", message)
        self.action = action


# Connect's mapping of an HTTP status to a code, for an answer without a
# Connect error body (a proxy's 502, say).
_HTTP_CODES = {
    400: "internal",
    401: "unauthenticated",
    403: "permission_denied",
    404: "unimplemented",
    408: "deadline_exceeded",
    429: "unavailable",
    502: "unavailable",
    503: "unavailable",
    504: "unavailable",
}


def error_from_response(status, body):
    """error_from_response builds the StewardError for an HTTP answer that was
    not 200, from its status and body bytes."""
    try:
        wire = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        wire = None
    if not isinstance(wire, dict) or not isinstance(wire.get("code"), str):
        text = body.decode("utf-8", "replace").strip()[:200]
        return StewardError(_HTTP_CODES.get(status, "unknown"), text or f"HTTP {status}", http_status=status)
    details = wire.get("details") or []
    violations = []
    for d in details:
        if isinstance(d, dict) and _type_name(d.get("type", "")) == _BAD_REQUEST:
            violations.extend(_violations(d))
    field = violations[0][0] if violations else ""
    return StewardError(wire["code"], wire.get("message", ""), field, violations, details, status)


def _type_name(t):
    # Connect sends the bare name; an Any's type URL carries a prefix.
    return t.rsplit("/", 1)[-1]


def _violations(detail):
    """_violations reads a BadRequest detail: its "debug" JSON when the server
    sent one, else the proto bytes of "value"."""
    debug = detail.get("debug")
    if isinstance(debug, dict):
        out = []
        for v in debug.get("fieldViolations", debug.get("field_violations", [])):
            out.append((v.get("field", ""), v.get("description", "")))
        return out
    value = detail.get("value", "")
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4))
        return decode_bad_request(raw)
    except (ValueError, IndexError):
        return []


def decode_bad_request(raw):
    """decode_bad_request parses the proto bytes of a google.rpc.BadRequest —
    field 1, repeated FieldViolation{field = 1, description = 2} — and
    returns its (field, description) pairs. ValueError when malformed."""
    out = []
    for num, wire_type, value in _fields(raw):
        if num == 1 and wire_type == 2:
            field = description = ""
            for n, wt, v in _fields(value):
                if n == 1 and wt == 2:
                    field = v.decode("utf-8")
                elif n == 2 and wt == 2:
                    description = v.decode("utf-8")
            out.append((field, description))
    return out


def _fields(buf):
    """_fields yields (number, wire type, value) for each field of a proto
    message; a length-delimited value is bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, i = _varint(buf, i)
        elif wire_type == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire_type == 2:
            size, i = _varint(buf, i)
            value, i = buf[i:i + size], i + size
        elif wire_type == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire_type} is not supported")
        if i > len(buf):
            raise ValueError("field runs past the end")
        yield num, wire_type, value


def _varint(buf, i):
    result = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
