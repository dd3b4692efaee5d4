"""Probe side of flash.py's checks: the inputs they draw, the calls they make, and what those
calls are seen to do (what the Function saves, the memory it keeps, the products it runs).

Imported by the process that runs student code: nothing here judges or computes an answer.
Every size, block size and causal flag is drawn from the check's generator, so the hidden
tier varies them too. The inputs of flash_backward (out and the log-sum-exp) are built here
with PyTorch's own operations, in float64, so that the backward pass is graded on exact
inputs whatever the student's forward pass gives.

Evidence of memory and work is gathered in the student's process (saved-tensor hooks, the
autograd node's attributes, torch's profiler, a TorchDispatchMode that counts the products'
multiply-adds): determined code could fool it, so the checks that judge it are advice.
"""

from __future__ import annotations

import math

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ...core.check import CHANGED_KEY
from ...core.dispatch import Profiled, allocated_bytes, tensors
from ...run import probing
from ...run.probing import (
    autograd_error,
    draw,
    fresh,
    pair,
    qkv,
    randn,
    same_keys,
    shifted_keys,
)

# --------------------------------------------------------------------------- inputs


def _lse_and_out(q, k, v, causal):
    """out and the log-sum-exp of each row's scaled scores, in float64 (PyTorch's own ops),
    cast to q's dtype: what flash_backward is given."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    s = q64 @ k64.transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        T = q.size(-2)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    out = torch.exp(s - lse[..., None]) @ v64
    return out.to(q.dtype), lse.to(q.dtype)


def _cases(gen, T):
    """(causal, block_q, block_k): square tiles that divide T first, then ragged ones."""
    divisors = [t for t in (2, 3, 4) if T % t == 0]
    b = divisors[draw(gen, 0, len(divisors) - 1)]
    square = [(False, b, b), (True, b, b), (True, T // b, T // b)]
    ragged = [(False, 3, 5), (True, 3, 5), (True, 5, 3), (False, 1, 1), (True, 1, 1)]
    ragged += [(False, T, T), (True, T + draw(gen, 1, 5), 4)]
    return square, ragged


def inputs_forward(gen):
    T = [12, 16, 18][draw(gen, 0, 2)]  # square tiles of 2, 3 or 4 divide it
    x = qkv(gen, (2, 2, T), 8, 6)  # √d, d, √d_v and 1 all differ
    square, ragged = _cases(gen, T)
    x["cases"] = square + ragged + [(True, 4, 4 + draw(gen, 1, 3)), (False, 5, T - 1)]
    return x


def inputs_large_logits(gen):
    x, u = shifted_keys(gen)  # scores shifted by ±100 to 300: exp over- and underflows
    x["blocks"] = (draw(gen, 3, 4), draw(gen, 3, 5))
    return same_keys(gen, x, shift=u)


def inputs_backward(gen):
    T = [12, 16][draw(gen, 0, 1)]
    x = qkv(gen, (2, 2, T), 8, 6)
    x["grad_out"] = randn(gen, 2, 2, T, 6)
    square, ragged = _cases(gen, T)
    x["cases"] = square + ragged
    small = draw(gen, 7, 9)  # float64, the precision torch.autograd.gradcheck works in
    x64 = qkv(gen, (1, 2, small), 5, 4, dtype=torch.float64)
    x64["grad_out"] = randn(gen, 1, 2, small, 4, dtype=torch.float64)
    for name, value in x64.items():
        x[f"f64/{name}"] = value
    x["f64/cases"] = [(False, 2, 2), (True, 2, 2), (True, 3, 2)]
    for prefix, cases in (("", x["cases"]), ("f64/", x["f64/cases"])):
        for causal in sorted({c for c, _, _ in cases}):
            out, lse = _lse_and_out(x[prefix + "q"], x[prefix + "k"], x[prefix + "v"], causal)
            x[f"{prefix}out{int(causal)}"], x[f"{prefix}lse{int(causal)}"] = out, lse
    return x


def inputs_saves(gen):
    # T / max(d, d_v) >= 24: a (T, T) tensor per batch and head outgrows, many times over,
    # the O(T) that q, k, v, out and the log-sum-exp hold.
    T = 16 * draw(gen, 12, 16)
    x = qkv(gen, (1, 2, T), 8, 8)
    x["grad_out"] = randn(gen, 1, 2, T, 8)
    x["blocks"] = (16 * draw(gen, 1, 2), 16 * draw(gen, 1, 2))
    return x


def inputs_tiles(gen):
    # 8 tiles of b along each axis: a causal pass over the 36 tiles on or below the diagonal
    # does 36/64 of a full pass's products; one that masks every tile, 64/64.
    b = draw(gen, 4, 6)
    x = qkv(gen, (1, 2, 8 * b), 8, 8)
    x["grad_out"] = randn(gen, 1, 2, 8 * b, 8)
    x["block"] = b
    for causal in (False, True):
        x[f"out{int(causal)}"], x[f"lse{int(causal)}"] = _lse_and_out(
            x["q"], x["k"], x["v"], causal
        )
    return x


# --------------------------------------------------------------------------- recording


MATMULS = ("mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot")


class WorkCounter(TorchDispatchMode):
    """Counts, op by op, the multiply-adds of the matrix products (from their inputs' shapes)
    and the elements every op produces: the work a run did, never its time."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False  # (core.dispatch.OpCounter says why)

    def __init__(self):
        super().__init__()
        self.macs = 0
        self.produced = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in MATMULS:
            mats = [a for a in args if isinstance(a, torch.Tensor)][-2:]
            if len(mats) == 2:
                a, b = mats
                self.macs += a.numel() * (b.size(-1) if b.dim() > 1 else 1)
        self.produced += sum(t.numel() for t in tensors(out))
        return out


class Retained(Profiled):
    """Torch's profiler over a block (core.dispatch.Profiled): the bytes the CPU allocator
    handed out inside it and had not taken back at its end (what the block keeps alive), and
    its peak."""

    def __init__(self):
        super().__init__()
        self.kept = self.peak = 0

    def saw_events(self, threads):
        self.kept, self.peak = allocated_bytes(threads)


# --------------------------------------------------------------------------- probes


def _watched(x, names, call):
    """call(*copies) on copies of x[name] for each name, watched (probing.kept): the first
    call of flash_forward and of flash_backward, whose checks charge a change of an argument
    in place once (changed-input); every other call gets copies of its own (probing.fresh)."""
    args = fresh(x, *names)
    return probing.kept(zip(names, args, strict=True), lambda: call(*args))


def probe_forward(mod, x):
    def run(n, causal, bq, bk):
        def call(q, k, v):
            result = mod.flash_forward(q, k, v, causal=causal, block_q=bq, block_k=bk)
            out, lse = pair(result, "flash_forward's result", "(out, lse)")
            return {f"case{n}/out": out, f"case{n}/lse": lse}

        return call

    got = {}
    for n, (causal, bq, bk) in enumerate(x["cases"]):
        if n == 0:
            got.update(_watched(x, ("q", "k", "v"), run(n, causal, bq, bk)))
        else:
            got.update(run(n, causal, bq, bk)(*fresh(x, "q", "k", "v")))
    return got


def probe_large_logits(mod, x):
    got = {}
    bq, bk = x["blocks"]
    for causal in (False, True):
        for name in ("k", "k_up", "k_down"):
            out, lse = pair(
                mod.flash_forward(*fresh(x, "q", name, "v"), causal, bq, bk),
                "flash_forward's result",
                "(out, lse)",
            )
            got[f"c{int(causal)}/{name}"], got[f"c{int(causal)}/{name}/lse"] = out, lse
    same = mod.flash_forward(*fresh(x, "same_q", "same_k", "same_v"), False, 2, 2)
    got["same"] = pair(same, "flash_forward's result", "(out, lse)")[0]
    return got


BACKWARD_ARGS = ("q", "k", "v", "out", "lse", "grad_out")


def _backward_runs(mod, x, prefix, got):
    for n, (causal, bq, bk) in enumerate(x[prefix + "cases"]):
        key = f"{prefix}case{n}"
        by_name = {name: x[prefix + name] for name in ("q", "k", "v", "grad_out")}
        by_name["out"] = x[f"{prefix}out{int(causal)}"]
        by_name["lse"] = x[f"{prefix}lse{int(causal)}"]

        def call(*args, causal=causal, bq=bq, bk=bk):
            return {"result": mod.flash_backward(*args, causal, bq, bk)}

        try:
            if not got:  # the first call: watched (probing.kept)
                ran = _watched(by_name, BACKWARD_ARGS, call)
                got[CHANGED_KEY] = ran[CHANGED_KEY]
            else:
                ran = call(*fresh(by_name, *BACKWARD_ARGS))
            result = ran["result"]
        except NotImplementedError:
            raise
        except Exception as e:  # noqa: BLE001 (a later case's error is evidence, once an
            # earlier case has named the mistake: transposes that fit square tiles only)
            got[f"{key}/error"] = probing.error_text(e)
            continue
        if not isinstance(result, (tuple, list)) or len(result) != 3:
            got[f"{key}/error"] = f"returned {type(result).__name__}, not (dq, dk, dv)"
            continue
        got[f"{key}/dq"], got[f"{key}/dk"], got[f"{key}/dv"] = result


def probe_backward(mod, x):
    got = {}
    _backward_runs(mod, x, "", got)
    _backward_runs(mod, x, "f64/", got)
    return got


def _quadratic_grads(q, k, v, grad_out, causal):
    """dq, dk, dv of quadratic attention through autograd (float64), cast to q's dtype: the
    answers the function check's stand-ins hand back (inputs, not a check's verdict)."""
    leaves = [t.double().requires_grad_() for t in (q, k, v)]
    s = leaves[0] @ leaves[1].transpose(-2, -1) / math.sqrt(q.size(-1))
    if causal:
        T = q.size(-2)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    out = s.softmax(dim=-1) @ leaves[2]
    return [g.to(q.dtype) for g in torch.autograd.grad(out, leaves, grad_out.double())]


def inputs_function(gen):
    T = draw(gen, 9, 13)
    x = qkv(gen, (2, 2, T), 8, 6)
    x["grad_out"] = randn(gen, 2, 2, T, 6)
    x["blocks"] = (draw(gen, 2, 4), draw(gen, 3, 5))
    # What flash_forward and flash_backward give on these inputs, for either flag: the probe's
    # stand-ins hand these back, so the check grades FlashAttention's own code only.
    for dtype in (torch.float32, torch.float64):
        q, k, v, g = (x[n].to(dtype) for n in ("q", "k", "v", "grad_out"))
        for causal in (False, True):
            p = f"answer/{str(dtype)[6:]}/c{int(causal)}/"
            x[p + "out"], x[p + "lse"] = _lse_and_out(q, k, v, causal)
            x[p + "dq"], x[p + "dk"], x[p + "dv"] = _quadratic_grads(q, k, v, g, causal)
    return x


def _stand_ins(x, dtype):
    """flash_forward and flash_backward for one run of the function check: the answers the
    inputs hold, for the flag each call receives, when called with the run's own tensors or
    with (batch, head) rows of them: reshaped (a Function that folds the leading dimensions
    into one, as kernel wrappers do), or a few at a time (one call per head), each row's
    answer in its place; NaN otherwise (they compute nothing: no working exercise ships with
    the probe). The parameters are named as the exercise names them, for a Function that
    passes them by keyword."""
    d = str(dtype)[6:]
    mine = {n: x[n].to(dtype) for n in ("q", "k", "v", "grad_out")}

    def rows(a, b):
        """Which rows of b (its leading dimensions flattened) a's rows are, in order; None
        when a is no tensor of b's last two sizes or a row of it is none of b's."""
        if not isinstance(a, torch.Tensor) or a.dim() < 2 or a.shape[-2:] != b.shape[-2:]:
            return None
        theirs, ours = a.detach().to(b.dtype).reshape(-1, *b.shape[-2:]), b.flatten(0, -3)
        found = [
            next((i for i, o in enumerate(ours) if torch.equal(row, o)), None) for row in theirs
        ]
        return None if None in found else found

    def picked(name, causal, at, lead):
        """The answer `name` for the flag, at rows `at`, shaped with leading dims `lead`."""
        whole = x[f"answer/{d}/c{int(bool(causal))}/{name}"]
        inner = whole.shape[2:]  # (T, d_v) for out and the gradients, (T,) for lse
        return whole.flatten(0, 1)[at].reshape(*lead, *inner).clone()

    def one_index(*found):
        return found[0] if found[0] is not None and all(f == found[0] for f in found) else None

    def forward(q, k, v, causal=False, block_q=64, block_k=64):
        at = one_index(rows(q, mine["q"]), rows(k, mine["k"]), rows(v, mine["v"]))
        if at is None:
            return tuple(
                torch.full_like(x[f"answer/{d}/c0/{n}"], float("nan")) for n in ("out", "lse")
            )
        lead = q.shape[:-2]
        return picked("out", causal, at, lead), picked("lse", causal, at, lead)

    def backward(q, k, v, out, lse, grad_out, causal=False, block_q=64, block_k=64):
        at = one_index(
            rows(q, mine["q"]),
            rows(k, mine["k"]),
            rows(v, mine["v"]),
            rows(grad_out, mine["grad_out"]),
        )
        # out and lse as a forward pass gave them, at the same rows (for either flag: the flag
        # is judged apart)
        fine = at is not None and any(
            rows(out, x[f"answer/{d}/c{c}/out"]) == at
            and isinstance(lse, torch.Tensor)
            and lse.shape[:-1] == q.shape[:-2]
            and rows(lse.unsqueeze(-1), x[f"answer/{d}/c{c}/lse"].unsqueeze(-1)) == at
            for c in (0, 1)
        )
        if not fine:
            return tuple(
                torch.full_like(x[f"answer/{d}/c0/{n}"], float("nan")) for n in ("dq", "dk", "dv")
            )
        return tuple(
            picked(n, causal, at, t.shape[:-2]) for n, t in (("dq", q), ("dk", k), ("dv", v))
        )

    return forward, backward


def probe_function(mod, x):
    """FlashAttention.apply forward and backward, with flash_forward and flash_backward
    replaced by stand-ins (each is graded by its own checks)."""
    got = {}
    saved = mod.flash_forward, mod.flash_backward
    try:
        for dtype in (torch.float32, torch.float64):
            mod.flash_forward, mod.flash_backward = _stand_ins(x, dtype)
            for causal in (False, True):
                leaves = [x[n].to(dtype).clone().requires_grad_() for n in ("q", "k", "v")]
                out = mod.FlashAttention.apply(*leaves, causal, *x["blocks"])
                p = f"{str(dtype)[6:]}/c{int(causal)}/"
                got[p + "out"] = out.detach() if isinstance(out, torch.Tensor) else out
                if isinstance(out, torch.Tensor) and out.requires_grad:
                    grad = x["grad_out"].to(dtype)
                    error = autograd_error(lambda out=out, grad=grad: out.backward(grad))
                    if error:  # function-backward's finding, not forward's
                        got[p + "backward-error"] = error
                        continue
                for name, leaf in zip(("dq", "dk", "dv"), leaves, strict=True):
                    got[p + name] = leaf.grad
    finally:
        mod.flash_forward, mod.flash_backward = saved
    return got


def probe_saves(mod, x):
    """One forward pass of FlashAttention.apply, watched three ways: the tensors packed for
    backward (saved-tensor hooks), the tensors the autograd node holds as attributes, and the
    bytes allocated inside the call that are still alive after it; then its backward."""
    packed = []

    def pack(t):
        packed.append(t)
        return t

    leaves = [x[n].clone().requires_grad_() for n in ("q", "k", "v")]
    with Retained() as memory, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = mod.FlashAttention.apply(*leaves, True, *x["blocks"])
    got = {"returned_tensor": isinstance(out, torch.Tensor)}
    node = getattr(out, "grad_fn", None)
    got["node"] = type(node).__name__
    got["custom_function"] = isinstance(node, torch.autograd.function.BackwardCFunction)
    held = [v for v in vars(node).values() if isinstance(v, torch.Tensor)] if node else []
    held += [
        t
        for v in (vars(node).values() if node else ())
        if isinstance(v, (list, tuple))
        for t in v
        if isinstance(t, torch.Tensor)
    ]
    storages, total, largest, shape = set(), 0, 0, ()
    for t in packed + held:
        s = t.untyped_storage()
        n = s.nbytes() // max(t.element_size(), 1)
        if n > largest:
            largest, shape = n, tuple(t.shape)
        if s.data_ptr() not in storages:
            storages.add(s.data_ptr())
            total += n
    got.update(
        saved=len(packed),
        held=len(held),
        saved_largest=int(largest),
        saved_largest_shape=str(shape),
        saved_total=int(total),
        profiled=memory.ok,
        profiler_busy=memory.busy,
        profiler_tampered=memory.tampered,
        kept_bytes=int(memory.kept),
    )
    if isinstance(out, torch.Tensor) and out.requires_grad:
        error = autograd_error(lambda: out.backward(x["grad_out"]))
        if error:  # named, as function-backward names it
            got["backward-error"] = error
            return got
        got["out"] = out.detach()
        got["dq"] = leaves[0].grad
    return got


def _work(fn, *args):
    with WorkCounter() as work:
        result = fn(*args)
    return result, work


def probe_forward_tiles(mod, x):
    got = {}
    b = x["block"]
    for causal in (False, True):
        result, work = _work(mod.flash_forward, *fresh(x, "q", "k", "v"), causal, b, b)
        out = pair(result, "flash_forward's result", "(out, lse)")[0]
        got.update({f"c{int(causal)}/macs": work.macs, f"c{int(causal)}/produced": work.produced})
        got[f"c{int(causal)}/out"] = out
    return got


def probe_backward_tiles(mod, x):
    got = {}
    b = x["block"]
    for causal in (False, True):
        c = int(causal)
        args = [*fresh(x, "q", "k", "v", f"out{c}", f"lse{c}", "grad_out"), causal, b, b]
        result, work = _work(mod.flash_backward, *args)
        got.update({f"c{c}/macs": work.macs, f"c{c}/produced": work.produced})
        got[f"c{c}/dq"] = result[0] if isinstance(result, (tuple, list)) and result else result
    return got
