"""Probe side of efficient.py's checks: the inputs they draw, the calls they make, and what
those calls are seen to do (memory, ops).

Imported by the process that runs student code: nothing here judges or computes an answer.
Every size, window, stride and chunk size is drawn from the check's generator, so the hidden
tier varies them too.

Evidence of memory and cost comes from two independent recorders, read by the judge:
  Recorder        a TorchDispatchMode: every aten op that reaches Python dispatch, the size
                  of the largest new storage, the op count, the storages it made;
  AllocationPeak  torch's own profiler (below Python dispatch, so switching the dispatch
                  modes off does not hide from it): the CPU allocator's peak bytes in the
                  block, and the matrix products and fused attention kernels it ran.
Both run in the student's process, so determined code can still fool them: their checks are
advice. The checks that carry points are measured from outside (core.Check.measured,
autograder/run/measure.py): the same call at T and 2T, each in a fresh process whose peak
memory and CPU seconds the trusted parent reads from the kernel; the probes below only make
the calls and hand back a sample of the rows (their values are checked, so a run that
computes nothing cheaply earns nothing).
"""

from __future__ import annotations

from collections import Counter

import torch

from ...core.dispatch import OpCounter, Profiled, allocated_bytes
from ...run.probing import draw, fresh, gradients, pair, qkv, randn, same_keys, shifted_keys

# --------------------------------------------------------------------------- recording


class Recorder(OpCounter):
    """OpCounter that also remembers the largest new storage, the op that made it, the
    elements all ops produced, and which storages were made inside the block.

    Sizes are in elements of the output's *storage*: a view (expand, slice, transpose) costs
    no memory of its own, so it counts as the tensor it views, never as its broadcast size.
    """

    def __init__(self):
        super().__init__()
        self.biggest, self.biggest_op, self.biggest_shape = 0, "", ()
        self.produced = 0  # elements of every output, views included
        self.storages: set[int] = set()

    def saw(self, func, outs):
        for t in outs:
            storage = t.untyped_storage()
            self.storages.add(storage.data_ptr())
            self.produced += t.numel()
            n = storage.nbytes() // max(t.element_size(), 1)
            if n > self.biggest:
                self.biggest = n
                self.biggest_op = f"aten.{func.overloadpacket.__name__}"
                self.biggest_shape = tuple(t.shape)

    def made(self, t) -> bool:
        """Whether tensor `t`'s storage was produced by an op this recorder saw."""
        return isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() in self.storages


MATMUL = ("aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::mv", "aten::dot")


class AllocationPeak(Profiled):
    """Torch's profiler over a block (core.dispatch.Profiled): the allocator's peak bytes
    above the start, the matrix products it saw and any fused attention kernel."""

    def __init__(self):
        super().__init__()
        self.peak, self.matmuls, self.fused = 0, 0, ""

    def saw_events(self, threads):
        names = Counter(e.name() for th in threads for e in th if e.kind() == "push")
        _, self.peak = allocated_bytes(threads)
        self.matmuls = sum(names[n] for n in MATMUL)
        self.fused = ", ".join(sorted(n for n in names if "scaled_dot_product" in n))


def recorded(prefix, rec, alloc, out):
    """The evidence of one recorded run, as plain values."""
    fused = sorted(name for name in rec.calls if "scaled_dot_product" in name)
    return {
        f"{prefix}largest": int(rec.biggest),
        f"{prefix}largest_op": rec.biggest_op,
        f"{prefix}largest_shape": str(rec.biggest_shape),
        f"{prefix}ops": int(rec.count()),
        f"{prefix}produced": int(rec.produced),
        f"{prefix}matmuls": int(rec.count("mm", "bmm", "addmm", "baddbmm", "mv", "dot")),
        f"{prefix}fused": ", ".join(fused),
        f"{prefix}returned_recorded": rec.made(out),
        f"{prefix}profiled": alloc.ok,
        f"{prefix}profiler_tampered": alloc.tampered,
        f"{prefix}profiler_busy": alloc.busy,
        f"{prefix}peak_bytes": int(alloc.peak),
        f"{prefix}profiled_matmuls": int(alloc.matmuls),
        f"{prefix}profiled_fused": alloc.fused,
    }


def run_recorded(fn, *args, **kwargs):
    """fn(*args, **kwargs) under both recorders: (result, Recorder, AllocationPeak)."""
    with AllocationPeak() as alloc, Recorder() as rec:
        out = fn(*args, **kwargs)
    return out, rec, alloc


# --------------------------------------------------------------------------- inputs


def inputs_pattern(gen):
    T = draw(gen, 9, 13)
    x = qkv(gen, (2, T), 8, 6)  # (B, T, d): no head axis
    x["windows"] = [1, draw(gen, 2, T - 2), T, T + draw(gen, 1, 3)]
    x["strides"] = [1, 2, 3, draw(gen, 4, T // 2)]
    return x


def inputs_linear(gen):
    d = draw(gen, 4, 7)
    return qkv(gen, (2, 2, draw(gen, 10, 14)), d, d + draw(gen, 1, 2))  # (B, H, T, d)


def inputs_feature_map(gen):
    # d = 1 and two keys, k = 0 and k = b, with the values e_1 and e_2: each output row is
    # phi(q) (phi(0), phi(b)) / normaliser, so out[..., 1] / out[..., 0] = phi(b) / phi(0)
    # whatever the normaliser, the query's own map or any scale of q: only the key's feature
    # map is measured. Half the b are negative, half positive (elu differs from relu there).
    n = 2 * draw(gen, 5, 7)
    b = torch.rand(n, generator=gen, dtype=torch.float64) * 2.5 + 0.25
    b[: n // 2] *= -1
    k = torch.zeros(n, 2, 1, dtype=torch.float64)
    k[:, 1, 0] = b
    return {
        "q": randn(gen, n, 2, 1),
        "k": k.float(),
        "v": torch.eye(2).expand(n, 2, 2).contiguous(),
    }


def inputs_linear_cost(gen):
    # T >= 6 d d_v, so a (T, T) tensor outgrows everything a linear-cost solution makes.
    T = 8 * draw(gen, 12, 16)
    x = qkv(gen, (1, 2, 2 * T), 4, 4)
    x["lengths"] = [T, 2 * T]
    return x


def inputs_chunked(gen):
    T = [10, 11, 13, 14][draw(gen, 0, 3)]  # not a multiple of 3 or 4: a short last chunk
    x = qkv(gen, (2, 2, T), 8, 6)  # √d, d, √d_v, √T and 1 all differ
    x["cases"] = [(False, 4), (True, 4), (False, 3), (True, 3), (False, 1), (True, 1)]
    x["cases"] += [(False, T), (True, T + draw(gen, 1, 6))]
    return x


def inputs_chunked_rescale(gen):
    # The scores rise along the keys (every query leans on one direction, every key more so
    # the later it comes), so each new chunk raises the running maximum of every row.
    T, d = 4 * draw(gen, 3, 4), 8
    x = qkv(gen, (2, T), d, 6, scale=0.3)
    x["q"] = x["q"] + 1.0
    x["k"] = x["k"] + 0.35 * torch.arange(T, dtype=torch.float32)[:, None]
    return same_keys(gen, x)


def inputs_chunked_shift(gen):
    x, u = shifted_keys(gen)  # scores shifted by ±100 to 300: exp over- and underflows
    return same_keys(gen, x, shift=u)


def inputs_chunked_memory(gen):
    # Two runs. "small": T / chunk = 7 or 8 > B·H = 4, so even one (T, T) mask shared by
    # every head outgrows the largest tensor allowed, T × max(chunk, d, d_v) per batch and
    # head. "big": T / max(chunk, d, d_v) >= 48, so the tensors alive at once (the
    # allocator's peak) tell chunking from (T, T) scores, kept whole or in pieces.
    small = qkv(gen, (2, 2, 8 * draw(gen, 7, 8)), 8, 8)
    big = qkv(gen, (1, 2, 64 * draw(gen, 6, 7)), 8, 8)
    big["rows"] = torch.randperm(big["q"].size(-2), generator=gen)[:16].sort().values
    small["chunk"], big["chunk"] = 8, draw(gen, 6, 8)
    return {"small": small, "big": big}


def _measured_parts(gen, lengths, d, chunk=None):
    # One part per length, each run in a fresh process measured from outside
    # (run/measure.py); B·H = 2. The rows handed back are a sample (each part its own).
    x = qkv(gen, (1, 2, lengths[-1]), d, d)
    parts = []
    for L in lengths:
        part = {n: x[n][..., :L, :].clone() for n in ("q", "k", "v")}
        part["rows"] = torch.randperm(L, generator=gen)[:16].sort().values
        if chunk is not None:
            part["chunk"] = chunk
        parts.append(part)
    return {"parts": parts, "lengths": list(lengths)}


def inputs_linear_measured(gen):
    # At 2T ≈ 4096, one (T, T) float32 per batch and head is 64 MB (128 MB for both heads),
    # far above what linear attention holds (T × d × d_v per head for the causal prefix sums).
    T = 128 * draw(gen, 15, 17)
    return _measured_parts(gen, [T, 2 * T], 12)


def inputs_chunked_measured(gen):
    # At 2T ≈ 3200, the (T, T) float32 scores of both heads are 80 MB, chunked attention's
    # tensors a few MB. T / chunk <= chunk: even (T / chunk, T) row statistics are no (T, T).
    T = 128 * draw(gen, 12, 13)
    return _measured_parts(gen, [T, 2 * T], 8, chunk=draw(gen, 48, 63))


# --------------------------------------------------------------------------- probes


def _rows(value, x):
    """A sample of a result's rows (a result of another shape is judged by its shape)."""
    if isinstance(value, torch.Tensor) and value.shape == x["v"].shape:
        return value[..., x["rows"], :]
    return value


def _pattern_runs(fn, name, x, sizes, tag):
    """fn(q, k, v, size) for each size (a window, a stride): its (out, weights) under
    "<tag><n>/out" and "<tag><n>/weights"."""
    got = {}
    for n, size in enumerate(sizes):
        out, weights = pair(fn(*fresh(x, "q", "k", "v"), size), f"{name}'s result")
        got[f"{tag}{n}/out"], got[f"{tag}{n}/weights"] = out, weights
    return got


def _qkv_gradients(fn, x, *args, **kwargs):
    """The gradients that reach q, k and v from fn(q, k, v, *args, **kwargs)'s output."""
    run = lambda q, k, v: fn(q, k, v, *args, **kwargs)  # noqa: E731
    return gradients(None, run, {n: x[n] for n in ("q", "k", "v")})


def probe_local(mod, x):
    got = _pattern_runs(mod.local_attention, "local_attention", x, x["windows"], "w")
    # the widest window: with window 1 each query sees itself alone, and q gets no gradient
    return {**got, **_qkv_gradients(mod.local_attention, x, max(x["windows"]))}


def probe_strided(mod, x):
    got = _pattern_runs(mod.strided_attention, "strided_attention", x, x["strides"], "s")
    got.update(_qkv_gradients(mod.strided_attention, x, max(x["strides"])))
    # The docstring promises ValueError for stride < 1: record what stride 0 does.
    try:
        mod.strided_attention(*fresh(x, "q", "k", "v"), 0)
        got["stride0"] = "returned a result"
    except ValueError:
        got["stride0"] = "ValueError"
    except Exception as e:  # noqa: BLE001 (what it raised is the evidence)
        got["stride0"] = f"raised {type(e).__name__}"
    return got


def probe_linear(mod, x):
    return {"out": mod.linear_attention(*fresh(x, "q", "k", "v"))}


def probe_linear_gradients(mod, x):
    """probe_linear, and the gradients that reach q, k and v."""
    return {**probe_linear(mod, x), **_qkv_gradients(mod.linear_attention, x)}


def probe_linear_causal(mod, x):
    return {"out": mod.linear_attention(*fresh(x, "q", "k", "v"), causal=True)}


def probe_linear_cost(mod, x):
    got = {}
    for causal in (False, True):
        for T in x["lengths"]:
            # Fresh contiguous inputs: a slice would carry the whole input's storage.
            q, k, v = (x[n][..., :T, :].clone() for n in ("q", "k", "v"))
            out, rec, alloc = run_recorded(mod.linear_attention, q, k, v, causal=causal)
            got.update(recorded(f"c{int(causal)}/T{T}/", rec, alloc, out))
    return got


def probe_chunked(mod, x):
    got = {}
    for n, (causal, chunk) in enumerate(x["cases"]):
        got[f"case{n}"] = mod.chunked_attention(
            *fresh(x, "q", "k", "v"), causal=causal, chunk_size=chunk
        )
    causal, chunk = x["cases"][0]
    return {**got, **_qkv_gradients(mod.chunked_attention, x, causal=causal, chunk_size=chunk)}


def probe_chunked_rescale(mod, x):
    got = {}
    T = x["q"].size(-2)
    for causal in (False, True):
        for chunk in (4, T):
            got[f"c{int(causal)}/chunk{'T' if chunk == T else chunk}"] = mod.chunked_attention(
                *fresh(x, "q", "k", "v"), causal=causal, chunk_size=chunk
            )
    return {**got, **probe_same_keys(mod, x)}


def probe_chunked_shift(mod, x):
    got = {}
    for causal in (False, True):
        for name in ("k", "k_up", "k_down"):
            got[f"c{int(causal)}/{name}"] = mod.chunked_attention(
                *fresh(x, "q", name, "v"), causal=causal, chunk_size=4
            )
    return {**got, **probe_same_keys(mod, x)}


def probe_same_keys(mod, x):
    same = fresh(x, "same_q", "same_k", "same_v")
    return {"same": mod.chunked_attention(*same, chunk_size=4)}


def probe_chunked_memory(mod, x):
    got = {}
    for size, xs in x.items():
        for causal in (False, True):
            chunk = xs["chunk"]
            out, rec, alloc = run_recorded(
                mod.chunked_attention, *fresh(xs, "q", "k", "v"), causal=causal, chunk_size=chunk
            )
            p = f"{size}/c{int(causal)}/"
            got.update(recorded(p, rec, alloc, out))
            # The same call, unobserved: a result that changes under observation is suspect.
            plain = mod.chunked_attention(
                *fresh(xs, "q", "k", "v"), causal=causal, chunk_size=chunk
            )
            for name, value in (("out", out), ("plain", plain)):
                whole = isinstance(value, torch.Tensor) and value.shape == xs["v"].shape
                if whole and "rows" in xs:
                    value = value[..., xs["rows"], :]  # a sample of the rows is enough
                got[p + name] = value  # (a tensor of the wrong shape is judged by its shape)
    return got


def probe_linear_measured(mod, x):
    return {
        f"c{int(causal)}": _rows(mod.linear_attention(*fresh(x, "q", "k", "v"), causal=causal), x)
        for causal in (False, True)
    }


def probe_chunked_measured(mod, x):
    got = {}
    for causal in (False, True):
        out = mod.chunked_attention(*fresh(x, "q", "k", "v"), causal=causal, chunk_size=x["chunk"])
        got[f"c{int(causal)}"] = _rows(out, x)
    return got


# The measured checks' inputs and probe, by exercise: the judge's _measured_check registers
# each exercise's check from them.
MEASURED = {
    "linear_attention": (inputs_linear_measured, probe_linear_measured),
    "chunked_attention": (inputs_chunked_measured, probe_chunked_measured),
}
