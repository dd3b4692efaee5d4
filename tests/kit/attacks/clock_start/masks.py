"""Attack: correct masks, each call first burning more CPU than a check may use, while the
process keeps the grader's check clock from running, two ways (TRICKS):
  forge  a thread writes the grader's own "start" message for the running check on every
         pipe the process holds, five times a second: each one restarted the check's clock,
         so slow code never overran its limit (a hunt: 20/20 on attention with a first call
         of 26 CPU-s);
  drop   the channel's send is replaced at import so that no start is sent again: every
         check after a process's first ran on no clock (a second hunt: every window check
         passed at 3.5 CPU-s a call against a 1 s cap).
Now a start is never a reset, and the next check's clock starts at the previous one's
outcome (run/limits.Stopwatch): every burning check times out. The sandbox test switches
one trick on at a time (test_sandbox_time.py)."""

import json
import os
import stat
import struct
import sys
import threading
import time

import torch

BURN = 3.5  # CPU-s: over the 3 s per check the attack tests give
BURNING = ("causal_mask", "padding_mask", "sliding_window_mask")
TRICKS = ("forge", "drop")

_wire = sys.modules.get("autograder.run.sandbox.wire")
if "drop" in TRICKS and _wire is not None:
    _send = _wire.send

    def _quiet(fd, header, blob=b""):
        if isinstance(header, dict) and header.get("type") == "start":
            return None
        return _send(fd, header, blob)

    _wire.send = _quiet


def _pipes():
    found = []
    for fd in range(3, 256):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            pass
    return found


_running = {"check": None}


def _forge():
    while True:
        check = _running["check"]
        if check:
            header = json.dumps({"type": "start", "check": check}).encode()
            for fd in _pipes():
                try:
                    os.write(fd, struct.pack("<4sII", b"ALAB", len(header), 0) + header)
                except OSError:
                    pass
        time.sleep(0.2)


if "forge" in TRICKS:
    threading.Thread(target=_forge, daemon=True).start()


def _current_check():
    frame = sys._getframe()
    while frame:
        check = frame.f_locals.get("check")
        if isinstance(getattr(check, "id", None), str):
            return check.id
        frame = frame.f_back
    return None


def _burn(function):
    if function not in BURNING:
        return
    _running["check"] = _current_check()
    start = time.process_time()
    while time.process_time() - start < BURN:
        pass


def causal_mask(L, device=None):
    _burn("causal_mask")
    return torch.ones(L, L, dtype=torch.bool, device=device).triu(diagonal=1)


def padding_mask(lengths, S):
    _burn("padding_mask")
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(S, device=lengths.device)
    return (positions >= lengths[:, None])[:, None, None, :]


def sliding_window_mask(L, window, device=None):
    _burn("sliding_window_mask")
    if window < 1:
        raise ValueError(f"window must be at least 1 (a query always sees itself), got {window}")
    i = torch.arange(L, device=device)[:, None]
    j = torch.arange(L, device=device)[None, :]
    return (j > i) | (i - j >= window)
