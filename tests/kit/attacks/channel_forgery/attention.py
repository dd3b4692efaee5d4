"""Attack: write forged and malformed messages on the grader's channel (every pipe this
process inherited): a check id that is a list, a result whose status is a list, an
outputs message whose outputs are a string, then one header nested 200,000 deep (the
parser once recursed on it and the whole batch died with RecursionError)."""

# reported: malformed message
# reported: channel was damaged
import json
import os
import stat
import struct


def _frame(header: bytes) -> bytes:
    return struct.pack("<4sII", b"ALAB", len(header), 0) + header


def _pipes() -> list[int]:
    found = []
    for fd in range(3, 256):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            pass
    return found


_CHECK = "attention.reference"
_FORGED = [
    {"type": "outputs", "check": ["attention", "reference"], "outputs": {}},
    {"type": "result", "check": _CHECK, "status": ["passed"], "misconception": ""},
    {"type": "outputs", "check": _CHECK, "outputs": "all passed"},
    {"type": {"nested": True}, "check": _CHECK},
]
for fd in _pipes():
    try:
        for message in _FORGED:
            os.write(fd, _frame(json.dumps(message).encode()))
        os.write(fd, _frame(b"[" * 200_000 + b"]" * 200_000))
    except OSError:
        pass


def scaled_dot_product_attention(q, k, v, mask=None):
    return q, None
