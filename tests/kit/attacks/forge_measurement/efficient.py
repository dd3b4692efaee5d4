"""Attack (graded by tests/kit/test_measured.py; batch and Gradescope grade attention and
masks only, where it has nothing): quadratic chunked and linear attention (right values) that
try to forge the efficiency measures (issue 27). At import they patch what a process could
ask about itself (resource.getrusage, os.times, time.process_time, psutil if present,
torch.cuda's statistics), the kit's measuring module and probes (a probe that adds
"measured/peak_bytes": 0 to its outputs), and the run at the smaller lengths is padded with
memory and CPU so that growth looks linear. The parent measures from outside: none of it
counts.
"""

import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

_zero = resource.struct_rusage((0.0, 0.0) + (0,) * 14)
resource.getrusage = lambda who: _zero
os.times = lambda: os.times_result((0.0, 0.0, 0.0, 0.0, 0.0))
time.process_time = lambda: 0.0
torch.cuda.max_memory_allocated = lambda *a, **k: 0
torch.cuda.memory_allocated = lambda *a, **k: 0
try:
    import psutil  # noqa: F401

    psutil.Process.memory_info = lambda self: type("m", (), {"rss": 0, "vms": 0})()
except ImportError:
    pass
for name in list(sys.modules):  # the kit's measuring code and probes, wherever loaded
    mod = sys.modules[name]
    if name.endswith("run.measure"):
        mod.child_handshake = lambda *a, **k: None
        mod.Baseline.measured = lambda self, usage, peak=None: {
            "peak_bytes": 0.0,
            "cpu_seconds": 0.0,
        }
    if name.endswith("checks.efficient.probe"):
        for probe in ("probe_chunked_measured", "probe_linear_measured"):
            original = getattr(mod, probe, None)
            if original is not None:

                def forged(m, x, original=original):
                    got = dict(original(m, x))
                    got["measured/peak_bytes"] = 0.0
                    got["measured/cpu_seconds"] = 0.0
                    got["part1/measured/peak_bytes"] = 0.0
                    return got

                setattr(mod, probe, forged)

_padding = []


def _pad(T):
    """At the smaller length, hold as much as the larger will, and burn CPU: growth looks flat."""
    if T < 3000 and not _padding:
        _padding.append(torch.ones(4 * T * T * 2 // 4))
        end = time.monotonic() + 0.3
        while time.monotonic() < end:
            pass


def linear_attention(q, k, v, causal=False, eps=1e-6):
    _pad(q.size(-2))
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    A = phi_q @ phi_k.transpose(-2, -1)  # (..., T, T)
    if causal:
        A = A.tril()
    return (A @ v) / (A.sum(dim=-1, keepdim=True) + eps)


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    _pad(q.size(-2))
    T = q.size(-2)
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # every (T, T) score at once
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return s.softmax(dim=-1) @ v
