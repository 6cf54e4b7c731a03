"""Sortable unique ids (ULIDs) for messages and conversations.

A ULID is 48 bits of milliseconds followed by 80 random bits, written as 26 Crockford base32 characters, so ids
sort by creation time. Within one millisecond the random part is incremented, so ids made by one process are
strictly increasing: the log's order and the ids' order agree.

A forked child inherits that state, so parent and child would mint the same ids within the same millisecond (and a
store, idempotent on message id, would keep only one of two different messages): the child moves its random part
on by a random jump as it starts (``os.register_at_fork``), staying above every id it inherited.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Every 10-bit value as two digits: 13 lookups write an id (the loop makes one per message, so this is hot; the
# base64 module's pure-Python base32 took three times as long).
_PAIRS = [high + low for high in _CROCKFORD for low in _CROCKFORD]
_SHIFTS = tuple(range(120, -1, -10))
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
    # 128 bits as 26 base32 digits (130 bits): the first digit holds the top 3 bits, as the ULID spec says.
    return "".join([_PAIRS[(value >> shift) & 0x3FF] for shift in _SHIFTS])


def _reseed_after_fork() -> None:
    """Run in a forked child: part from the parent's sequence, and drop a lock another thread may have held."""
    global _lock, _last_rand
    _lock = threading.Lock()
    # The parent goes on by one per id, a few thousand per millisecond at most; a jump of 2**40 to 2**41 leaves it
    # far behind, and two children forked from one state draw different jumps (2**40 values).
    _last_rand += (1 << 40) | int.from_bytes(os.urandom(5), "big")


if hasattr(os, "register_at_fork"):  # POSIX; where there is no fork there is nothing to part from.
    os.register_at_fork(after_in_child=_reseed_after_fork)
