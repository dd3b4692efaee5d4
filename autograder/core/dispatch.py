"""Count what a piece of code asks PyTorch to do, op by op, deterministically (never by timing).

    with OpCounter() as ops:
        model(x)
    ops.count(*MATMUL_OPS)      # how many matrix products ran
    ops.numels["mm"]            # the number of elements of each mm's output, in call order

OpCounter is a TorchDispatchMode: every aten op that reaches the dispatcher is recorded by
its name without the overload ("mm", "bmm", "_softmax", ...). Composite ops (matmul, einsum,
linear) are recorded as the ops they decompose into, so matmul-family counts should include
both. Recording is all it does: the ops run unchanged.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import torch
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
