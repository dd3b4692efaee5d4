"""Judge side of flash.py's checks: the verdicts (the models of right and wrong computations,
float64, never in the process that runs student code: judge_models.py).

"matches the reference" checks compare values with quadratic attention (and its autograd
gradients) computed here, then with the reference; the others test the property they name on
the student's own runs (shift invariance, what the Function saves and keeps, the products a
causal pass skips), each behind a gate that a run computing nothing cannot pass. Those that
measure inside the student's process are advice (forgeable, 0 points).
"""

from __future__ import annotations

import torch

from ...core import verdicts
from ...core.check import CRASH, NOT_FINITE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import agree, assert_close, assert_evidence, close, oracle, worst_error
from . import judge_models as models
from . import probe

CHECKS = CheckList("flash")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- flash_forward


def _forward_case(got, want, x, n, which):
    causal, bq, bk = x["cases"][n]
    T = x["q"].size(-2)
    name = "out" if which == 0 else "lse"
    what = f"flash_forward(causal={causal}, block_q={bq}, block_k={bk})'s {name}"
    key = f"case{n}/{name}"
    value = models._floating(got, key, what, want[key].shape)
    exact = oracle(lambda: models._exact(x, causal)[which], want[key])
    if causal and bq < T and not close(value, exact):
        # Skipping the tile on the diagonal leaves the first query tile with no key at all:
        # compare the rows after it.
        try:
            skipped = models._forward(x, causal, bq, bk, mistake="skips diagonal")[which]
        except models.ModelUnavailable:
            skipped = None
        if skipped is not None and close(
            value.narrow(2, bq, T - bq), skipped.narrow(2, bq, T - bq)
        ):
            raise Failure(MISTAKES["flash-causal-skips-diagonal"], block=bq)
    candidates = models._forward_candidates(x, causal, bq, bk, which)
    assert_close(value, exact, what, candidates)
    assert_close(value, want[key], what)


FORWARD = CHECKS.exercise("flash_forward", probe=probe.probe_forward)


@FORWARD.check("forward", inputs=probe.inputs_forward)
def verdict_forward(got, want, x):
    for n in range(len(x["cases"])):
        _forward_case(got, want, x, n, 0)
    verdicts.assert_kept(got, "flash_forward")  # q, k and v left as they were (charged here)


@FORWARD.check("forward-lse", inputs=probe.inputs_forward)
def verdict_forward_lse(got, want, x):
    for n in range(len(x["cases"])):
        _forward_case(got, want, x, n, 1)


@FORWARD.check(
    "forward-large-logits", inputs=probe.inputs_large_logits, probe=probe.probe_large_logits
)
@no_reference
def verdict_large_logits(got, want, x):
    # Gate: one tile of 4 equal keys gives each query the mean of the values.
    v = x["same_v"]
    same = models._floating(got, "same", "flash_forward with every key the same", v.shape)
    mean = v.double().mean(dim=-2, keepdim=True).expand_as(v).to(v.dtype)
    if not close(same, mean):
        if not torch.isfinite(same).all():
            raise Failure(MISTAKES["flash-overflow"])
        raise Failure(MISTAKES["flash-weights-not-normalised"], err=worst_error(same, mean))
    # Loosened: scores of a few hundred carry float32 rounding of about 1e-5 each, and the
    # order in which q, k and the scale are multiplied moves them by that much.
    tol = {"atol": 1e-4, "rtol": 1e-4}
    for causal in (0, 1):
        what = f"flash_forward(causal={bool(causal)})'s output"
        base = models._floating(got, f"c{causal}/k", what, x["v"].shape)
        assert_evidence(base, what, [x["v"]])
        verdicts.assert_uses_scores(base, x["v"], what)
        for name in ("k_up", "k_down"):
            shifted = models._floating(got, f"c{causal}/{name}", what, x["v"].shape)
            lse = models._floating(got, f"c{causal}/{name}/lse", what, x["v"].shape[:-1])
            if not (torch.isfinite(shifted).all() and torch.isfinite(lse).all()):
                raise Failure(MISTAKES["flash-overflow"])
            if not agree(shifted, base, tol):
                err = worst_error(shifted, base)
                raise Failure(MISTAKES["flash-not-shift-invariant"], err=err, causal=bool(causal))


def _skips_tiles(got, x, what, outputs):
    """The causal run did at most 3/4 of the non-causal run's products (or of its elements);
    a pass over the 36 of 64 tiles on or below the diagonal does 36/64."""
    for key in outputs:
        assert_evidence(models._floating(got, key, what, x["q"].shape), what, [x["q"]])
    B, H, T, d = x["q"].shape
    macs = (int(got["c0/macs"]), int(got["c1/macs"]))
    produced = (int(got["c0/produced"]), int(got["c1/produced"]))
    if macs[0] < B * H * T * T * d and produced[0] < B * H * T * T:
        raise Failure(
            MISTAKES["flash-not-observed"],
            what=what,
            detail=f"its products made {macs[0]} multiply-adds, fewer than the scores need",
        )
    by_macs = macs[0] >= B * H * T * T * d and macs[1] <= 0.75 * macs[0]
    by_elements = produced[0] >= B * H * T * T and produced[1] <= 0.75 * produced[0]
    if not (by_macs or by_elements):
        ratio = macs[1] / max(macs[0], 1)
        raise Failure(
            MISTAKES["flash-causal-no-skip"], what=what, ratio=ratio, tiles=x["block"], T=T
        )


@FORWARD.advice("forward-skips-tiles", inputs=probe.inputs_tiles, probe=probe.probe_forward_tiles)
def verdict_forward_tiles(got, want, x):
    _skips_tiles(got, x, "flash_forward", ("c0/out", "c1/out"))


# --------------------------------------------------------------------------- flash_backward


def _backward_case(got, want, x, prefix, n):
    causal, bq, bk = x[prefix + "cases"][n]
    key = f"{prefix}case{n}"
    what = f"flash_backward(causal={causal}, block_q={bq}, block_k={bk})"
    if f"{key}/error" in got:
        raise Failure(CRASH, error=str(got[f"{key}/error"])[:300], where=f"in {what}")
    q, v = x[prefix + "q"], x[prefix + "v"]
    shapes = {"dq": q.shape, "dk": q.shape, "dv": v.shape}
    grads = [models._floating(got, f"{key}/{g}", f"{what}'s {g}", s) for g, s in shapes.items()]
    references = [want[f"{key}/{g}"] for g in shapes]
    exact = oracle(lambda: models._quadratic(x, causal, str(q.dtype)[6:], prefix)[1:], references)
    if all(close(g, e) for g, e in zip(grads, exact, strict=True)):
        for g, name, r in zip(grads, shapes, references, strict=True):
            assert_close(g, r, f"{what}'s {name}")
        return
    for mistake, output, details in models._backward_candidates(x, prefix, causal, bq, bk):
        try:
            wrong = output()
        except models.ModelUnavailable:  # the student copy: this mistake is not named there
            continue
        if all(close(g, w) for g, w in zip(grads, wrong, strict=True)):
            raise Failure(mistake, what=what, **details)
    for g, name, e in zip(grads, shapes, exact, strict=True):
        assert_close(g, e, f"{what}'s {name}")


BACKWARD = CHECKS.exercise("flash_backward", probe=probe.probe_backward)


@BACKWARD.check("backward", inputs=probe.inputs_backward)
def verdict_backward(got, want, x):
    for prefix in ("", "f64/"):
        for n in range(len(x[prefix + "cases"])):
            _backward_case(got, want, x, prefix, n)
    verdicts.assert_kept(got, "flash_backward")  # its arguments left as they were


@BACKWARD.advice(
    "backward-skips-tiles", inputs=probe.inputs_tiles, probe=probe.probe_backward_tiles
)
def verdict_backward_tiles(got, want, x):
    _skips_tiles(got, x, "flash_backward", ("c0/dq", "c1/dq"))


# --------------------------------------------------------------------------- FlashAttention

FUNCTION = CHECKS.exercise("FlashAttention", probe=probe.probe_function)


def _backward_ran(got, key, what):
    """Failure (flash-function-backward-raised) when the probe's backward pass raised
    (got[key]: what autograd said, probing.autograd_error)."""
    if got.get(key):
        raise Failure(MISTAKES["flash-function-backward-raised"], what=what, error=got[key])


def _function_runs(got, want, x, names=("out", "dq", "dk", "dv")):
    """Per (dtype, causal): (what, the student's `names` of (out, dq, dk, dv), the
    reference's, the exact values of quadratic attention, and of its non-causal form where
    causal). A backward pass that raised is function-backward's finding."""
    for dtype in ("float32", "float64"):
        for causal in (False, True):
            p = f"{dtype}/c{int(causal)}/"
            what = f"FlashAttention.apply(causal={causal}) in {dtype}"
            if len(names) > 1:
                _backward_ran(got, p + "backward-error", what)
            shapes = (x["v"].shape, x["q"].shape, x["k"].shape, x["v"].shape)
            got_ = [
                models._floating(got, p + n, f"{what}: {n}", s)
                for n, s in zip(names, shapes, strict=False)
            ]
            references = tuple(want[p + n] for n in names)
            exact = oracle(lambda c=causal, t=dtype: models._quadratic(x, c, t), references)
            plain = None
            if causal:
                plain = oracle(lambda t=dtype: models._quadratic(x, False, t), None)
            yield what, names, got_, references, exact, plain


@FUNCTION.check("function-forward", inputs=probe.inputs_function)
def verdict_function_forward(got, want, x):
    """The Function's output alone (its forward's call of flash_forward and what it
    returns); the gradients are function-backward's."""
    for what, _, got_, references, exact, plain in _function_runs(got, want, x, ("out",)):
        out = got_[0]
        if close(out, exact[0]):
            assert_close(out, references[0], f"{what}: out")
            continue
        if plain is not None and close(out, plain[0]):
            raise Failure(MISTAKES["flash-function-forgets-causal"], what=what)
        assert_close(out, exact[0], f"{what}: out")


@FUNCTION.check("function-backward", inputs=probe.inputs_function)
def verdict_function_backward(got, want, x):
    """The gradients dq, dk, dv that backward returns, whatever the output was: a forward
    that forgot causal makes them those of non-causal attention too, and is named so."""
    for what, names, got_, references, exact, plain in _function_runs(got, want, x):
        out, dq, dk, dv = got_
        if all(close(g, e) for g, e in zip(got_[1:], exact[1:], strict=True)):
            for g, n, r in zip(got_[1:], names[1:], references[1:], strict=True):
                assert_close(g, r, f"{what}: {n}")
            continue
        if close(dq, exact[2]) and close(dk, exact[1]) and close(dv, exact[3]):
            raise Failure(MISTAKES["flash-function-gradient-order"], what=what)
        if plain is not None and close(dq, plain[1]) and close(dv, plain[3]):
            raise Failure(MISTAKES["flash-function-forgets-causal"], what=what)
        for g, n, e in zip(got_[1:], names[1:], exact[1:], strict=True):
            assert_close(g, e, f"{what}: {n}")


@FUNCTION.advice("saves", inputs=probe.inputs_saves, probe=probe.probe_saves)
def verdict_saves(got, want, x):
    what = "FlashAttention.apply"
    B, H, T, d = x["q"].shape
    if not got.get("returned_tensor"):
        raise Failure(NOT_FINITE, what=f"{what}'s output", count=0)
    _backward_ran(got, "backward-error", what)
    for key, like in (("out", x["v"]), ("dq", x["q"])):
        value = models._floating(got, key, f"{what}: {key}", like.shape)
        assert_evidence(value, f"{what}: {key}", [like])
    if not got.get("custom_function"):
        raise Failure(MISTAKES["flash-not-a-function"], node=got.get("node", "None"))
    if got.get("profiler_tampered") or got.get("profiler_busy"):
        detail = "torch's profiler was stopped inside it, or already running when it was called"
        raise Failure(MISTAKES["flash-not-observed"], what=what, detail=detail)
    if int(got["saved_largest"]) >= T * T or int(got["saved_total"]) > B * H * T * T // 4:
        raise Failure(
            MISTAKES["flash-saves-TxT"],
            largest=int(got["saved_largest"]),
            shape=got["saved_largest_shape"],
            total=int(got["saved_total"]),
            T=T,
            BH=B * H,
        )
    full = B * H * T * T * x["q"].element_size()
    if got.get("profiled") and int(got["kept_bytes"]) > full // 4:
        raise Failure(
            MISTAKES["flash-keeps-TxT"], kept=int(got["kept_bytes"]), full=full, T=T, BH=B * H
        )
