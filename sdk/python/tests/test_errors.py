"""How a Connect JSON error becomes a StewardError, without a server."""

import base64
import json
import unittest

from steward_client import StewardError, decode_bad_request
from steward_client.errors import error_from_response


def _bytes_field(num, value):
    # Field num, wire type 2; lengths here stay under 128.
    return bytes([num << 3 | 2, len(value)]) + value


def bad_request(*violations):
    out = b""
    for field, description in violations:
        v = _bytes_field(1, field.encode()) + _bytes_field(2, description.encode())
        out += _bytes_field(1, v)
    return out


class DecodeBadRequestTest(unittest.TestCase):
    def test_reads_each_violation(self):
        raw = bad_request(("contract.intent", "is required"), ("contract.risk_tier", "is unset"))
        self.assertEqual(decode_bad_request(raw),
                         [("contract.intent", "is required"), ("contract.risk_tier", "is unset")])

    def test_skips_fields_it_does_not_know(self):
        # A varint field 3 inside the violation, a fixed32 field 9 beside it.
        v = _bytes_field(1, b"task_id") + bytes([3 << 3 | 0, 0x96, 0x01]) + _bytes_field(2, b"bad")
        raw = _bytes_field(1, v) + bytes([9 << 3 | 5, 1, 2, 3, 4])
        self.assertEqual(decode_bad_request(raw), [("task_id", "bad")])

    def test_refuses_a_field_past_the_end(self):
        with self.assertRaises(ValueError):
            decode_bad_request(bytes([1 << 3 | 2, 50, 1]))

    def test_matches_what_steward_sent(self):
        # The value of a real answer (contract.intent: is required).
        raw = base64.b64decode("Ch4KD2NvbnRyYWN0LmludGVudBILaXMgcmVxdWlyZWQ=")
        self.assertEqual(decode_bad_request(raw), [("contract.intent", "is required")])


class ErrorFromResponseTest(unittest.TestCase):
    def answer(self, status, wire):
        return error_from_response(status, json.dumps(wire).encode())

    def test_field_from_debug(self):
        err = self.answer(400, {"code": "invalid_argument", "message": "contract.intent: is required", "details": [
            {"type": "google.rpc.BadRequest", "value": "AAAA",
             "debug": {"fieldViolations": [{"field": "contract.intent", "description": "is required"}]}}]})
        self.assertIsInstance(err, StewardError)
        self.assertEqual((err.code, err.field), ("invalid_argument", "contract.intent"))
        self.assertFalse(err.retryable)

    def test_field_from_value_without_debug(self):
        value = base64.b64encode(bad_request(("plan.steps[2].when", "does not compile"))).decode().rstrip("=")
        err = self.answer(400, {"code": "invalid_argument", "message": "m",
                                "details": [{"type": "google.rpc.BadRequest", "value": value}]})
        self.assertEqual(err.field, "plan.steps[2].when")
        self.assertEqual(err.violations, [("plan.steps[2].when", "does not compile")])

    def test_no_detail_no_field(self):
        err = self.answer(404, {"code": "not_found", "message": "task nope not found"})
        self.assertEqual((err.code, err.message, err.field), ("not_found", "task nope not found", ""))

    def test_a_proxy_answer_maps_by_status(self):
        err = error_from_response(502, b"<html>bad gateway</html>")
        self.assertEqual(err.code, "unavailable")
        self.assertTrue(err.retryable)
        self.assertEqual(error_from_response(403, b"").code, "permission_denied")


if __name__ == "__main__":
    unittest.main()
