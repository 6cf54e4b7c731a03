"""Sortable unique ids (ULIDs) for messages and conversations.

A ULID is 48 bits of milliseconds followed by 80 random bits, written as 26 Crockford base32 characters, so ids
sort by creation time. Within one millisecond the random part is incremented, so ids made by one process are
strictly increasing: the log's order and the ids' order agree.
"""

from __future__ import annotations

import base64
import os
import threading
import time

__all__ = ["new_id"]

_TO_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789ABCDEFGHJKMNPQRSTVWXYZ")
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0
_RAND_MAX = (1 << 80) - 1


def new_id() -> str:
    """Return a new ULID string, strictly greater than every id this process made before."""
    global _last_ms, _last_rand
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            rand = _last_rand + 1
            if rand > _RAND_MAX:  # 2**80 ids in one millisecond: move into the next one.
                ms += 1
                rand = int.from_bytes(os.urandom(10), "big") >> 1
        else:
            # Leave headroom so increments within a millisecond never overflow in practice.
            rand = int.from_bytes(os.urandom(10), "big") >> 1
        _last_ms = ms
        _last_rand = rand
    value = (ms << 80) | rand
    # 128 bits written as 26 base32 digits is 130 bits: left-align in 17 bytes (136 bits) and keep 26 digits.
    encoded = base64.b32encode((value << 6).to_bytes(17, "big"))
    return encoded[:26].translate(_TO_CROCKFORD).decode("ascii")
