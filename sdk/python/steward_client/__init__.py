"""steward_client calls Steward from Python with the standard library only.

    from steward_client import Client
    c = Client("http://127.0.0.1:7700", token)

See docs/sdk-python.md.
"""

from .client import ENDED_STATUSES, WAITING_STATUSES, Client, new_id, settled
from .errors import RETRYABLE_CODES, StewardError, WaitTimeout, decode_bad_request
from .liveness import KeepAlive

__all__ = [
    "Client",
    "KeepAlive",
    "StewardError",
    "WaitTimeout",
    "ENDED_STATUSES",
    "WAITING_STATUSES",
    "RETRYABLE_CODES",
    "decode_bad_request",
    "new_id",
    "settled",
]
