"""Attack: correct masks, each call first burning more CPU than a check may use, after
replacing the channel's send at import so that no "start" message is ever sent again. The
monitor timed a check only from its start message, so every check after the first ran on no
clock (a hunt: every window check passed at 3.5 CPU-s a call against a 1 s cap). Now the next
check's clock starts at the previous one's outcome (run/limits.Stopwatch.outcome)."""

import sys
import time

import torch

BURN = 3.5  # CPU-s: over the 3 s per check the attack tests give
BURNING = ("causal_mask", "padding_mask", "sliding_window_mask")

_wire = sys.modules.get("autograder.run.sandbox.wire")
if _wire is not None:
    _send = _wire.send

    def _quiet(fd, header, blob=b""):
        if isinstance(header, dict) and header.get("type") == "start":
            return None
        return _send(fd, header, blob)

    _wire.send = _quiet


def _burn(function):
    if function not in BURNING:
        return
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
