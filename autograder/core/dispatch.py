"""Count what a piece of code asks PyTorch to do, op by op, deterministically (never by timing).

    with OpCounter() as ops:
        model(x)
    ops.count(*MATMUL_OPS)      # how many matrix products ran
    ops.numels["mm"]            # the number of elements of each mm's output, in call order

OpCounter is a TorchDispatchMode: every aten op that reaches the dispatcher is recorded by
its name without the overload ("mm", "bmm", "_softmax", ...). Composite ops (matmul, einsum,
linear) are recorded as the ops they decompose into, so matmul-family counts should include
both. Recording is all it does: the ops run unchanged.

Profiled is the other witness, torch's own profiler over a block: it sits below Python
dispatch (switching the dispatch modes off does not hide from it) and sees the CPU
allocator's events, so a probe reads the memory a block took from it (allocated_bytes).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Literal

import torch
from torch._C import _autograd, _profiler
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

# Every aten op that multiplies matrices (the fused attention kernels included).
MATMUL_OPS = (
    "mm",
    "bmm",
    "addmm",
    "baddbmm",
    "addbmm",
    "matmul",
    "mv",
    "addmv",
    "dot",
    "linear",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_attention_math",
)


def tensors(out) -> list[torch.Tensor]:
    """The tensors of an op's output: a tensor, or those in a tuple or list of values."""
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]


class OpCounter(TorchDispatchMode):
    """Records each aten op called inside the `with` block: calls per op, output numels."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Recording needs no torch.compile. Without this, torch wraps __torch_dispatch__ in a
        # dynamo guard whose first call imports torch._dynamo (about 800 modules, sympy among
        # them, seconds of CPU) inside whichever check records first.
        return False

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.numels: defaultdict[str, list[int]] = defaultdict(list)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        self.calls[name] += 1
        outs = tensors(out)
        self.numels[name].append(sum(t.numel() for t in outs))
        self.saw(func, outs)
        return out

    def saw(self, func, outs: list[torch.Tensor]) -> None:
        """More about each op's output tensors, for subclasses (nothing here)."""

    def count(self, *names: str) -> int:
        """Calls of the given ops (all ops when none are given)."""
        if not names:
            return sum(self.calls.values())
        return sum(self.calls[n] for n in names)

    def largest(self) -> int:
        """The largest output (in elements) of any op recorded."""
        return max((n for sizes in self.numels.values() for n in sizes), default=0)


class Profiled:
    """Torch's profiler over a `with` block. `ok` is False when the profiler could not be
    started, `busy` when that is because one was already running (nothing in grading starts
    one: student code did), `tampered` when it was stopped inside the block. Subclasses read
    the block's events in `saw_events`, called once the block ends with the profiler intact."""

    def __init__(self) -> None:
        self.ok = self.busy = self.tampered = False

    def __enter__(self):
        try:
            if _autograd._profiler_enabled():
                self.busy = True
                return self
            P = _profiler
            # (state, input shapes, memory, stack, flops, modules, experimental config)
            config = P.ProfilerConfig(
                P.ProfilerState.CPU, False, True, False, False, False, P._ExperimentalConfig()
            )
            _autograd._enable_profiler_legacy(config)
            self.ok = True
        except (RuntimeError, AttributeError, TypeError):
            self.ok = False
        return self

    def __exit__(self, *exc) -> Literal[False]:
        if not self.ok:
            return False
        try:
            threads = _autograd._disable_profiler_legacy()
        except RuntimeError:
            self.tampered = True
            return False
        self.saw_events(threads)
        return False

    def saw_events(self, threads) -> None:
        """The profiler's events (a list of events per thread), for subclasses (nothing here)."""


def allocated_bytes(threads) -> tuple[int, int]:
    """(bytes the block still holds at its end, their peak inside it), from the CPU
    allocator's events in time order (a stable sort: simultaneous events keep their order)."""
    changes = [
        (e.start_us(), e.cpu_memory_usage())
        for th in threads
        for e in th
        if e.kind() == "memory_alloc"
    ]
    changes.sort(key=lambda c: c[0])
    held = peak = 0
    for _, change in changes:
        held += change
        peak = max(peak, held)
    return held, peak
