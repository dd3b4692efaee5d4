"""Judge side of diagnostics.py's LN-placement checks: misconceptions, models of known wrong
computations, verdicts."""

from __future__ import annotations

from types import ModuleType

import torch
import torch.nn.functional as F

from ...core.check import WRONG_DTYPE, WRONG_TYPE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.tolerances import tolerance
from ...core.verdicts import assert_close, model, tensor
from . import probe_ln as probe

trusted_blocks: ModuleType | None
try:  # the stand-in the models replay the named mistakes on; the student copy has none and
    # answers from what make dist recorded (model_replays.py)
    from ...trusted import blocks as trusted_blocks
except ImportError:
    trusted_blocks = None

CHECKS = CheckList("diagnostics")

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- layer_gradient_norms


@model
def _trusted_norms(x, norm_first, final_norm, combine="l2"):
    """The norms, or the sum of per-parameter norms, of the grader's stack (float64)."""
    blocks = probe.stack(x["weights"], norm_first, trusted_blocks)
    h = x["x"]
    for block in blocks:
        h, _ = block(h)
    if final_norm is not None:
        h = final_norm(h)
    F.mse_loss(h, x["target"]).backward()
    if combine == "sum":
        return torch.stack([sum(p.grad.norm() for p in b.parameters()) for b in blocks])
    return torch.stack(
        [torch.sqrt(sum(p.grad.pow(2).sum() for p in b.parameters())) for b in blocks]
    )


def _norms(got, key, what, n):
    """got[key] as (n,) floating norms: any floating dtype (the docstring names none), cast
    to float64, with the tolerance of the coarser of the two dtypes."""
    value = tensor(got, key, what, shape=(n,))
    if not value.is_floating_point():
        raise Failure(WRONG_DTYPE, what=what, got=value.dtype, expected="a floating dtype")
    tol = tolerance(value.dtype) if value.dtype != torch.float64 else None
    return value.detach().to(torch.float64), tol


LAYER_GRADIENT_NORMS = CHECKS.exercise("layer_gradient_norms", probe=probe.probe_norms)


@LAYER_GRADIENT_NORMS.check("ln-gradient-norms", inputs=probe.inputs_norms)
def verdict_norms(got, want, x):
    n = len(x["weights"])
    for key, label in (("post", "Post-LN"), ("pre", "Pre-LN, final_norm given")):
        what = f"layer_gradient_norms on a {n}-block {label} stack"
        norms, tol = _norms(got, key, what, n)
        norm_first, final = key == "pre", probe.final_norm() if key == "pre" else None
        candidates = [
            (MISTAKES["ln-grad-squared-norm"], lambda k=key: want[k].pow(2), {}),
            (
                MISTAKES["ln-grad-sum-of-norms"],
                lambda nf=norm_first, f=final: _trusted_norms(x, nf, f, "sum"),
                {},
            ),
        ]
        if key == "pre":
            candidates.append(
                (MISTAKES["ln-final-norm-ignored"], lambda: _trusted_norms(x, True, None), {})
            )
        assert_close(norms, want[key], what, candidates, tol=tol)
    again, tol = _norms(got, "post_again", "the second call's result", n)
    if not torch.allclose(again, want["post"], **(tol or tolerance(torch.float64))):
        ratio = float(again.sum() / want["post"].sum())
        raise Failure(MISTAKES["ln-grad-accumulated"], ratio=ratio)
    stale, tol = _norms(got, "post_stale", "the result on a stack holding earlier gradients", n)
    if not torch.allclose(stale, want["post"], **(tol or tolerance(torch.float64))):
        ratio = float(stale.sum() / want["post"].sum())
        raise Failure(MISTAKES["ln-grad-earlier-counted"], ratio=ratio)


# --------------------------------------------------------------------------- the experiment
# Judged on its set-up, from what the probe recorded of the two calls to layer_gradient_norms:
# both stacks hold the same weights, see the same x and target, only the Pre-LN one gets a
# final norm, and the two results are what those calls returned. How large the gradients
# come out is layer_gradient_norms' business (charged above), not this check's; what the
# reference run shows is in docs/blocks.md.


def _call(got, i):
    prefix = f"call{i}/"
    return {k[len(prefix) :]: v for k, v in got.items() if k.startswith(prefix)}


def _matches(a, b) -> bool:
    """Equal values, whatever floating dtype each was returned in."""
    if type(a) is not torch.Tensor or type(b) is not torch.Tensor or a.shape != b.shape:
        return False
    if not (a.is_floating_point() and b.is_floating_point()):
        return False
    return bool(torch.allclose(a.double(), b.double(), **tolerance(torch.float32)))


def _same(a, b) -> bool:
    return (
        type(a) is torch.Tensor
        and type(b) is torch.Tensor
        and a.shape == b.shape
        and bool(torch.equal(a, b))
    )


COMPARE_LN_PLACEMENT = CHECKS.exercise("compare_ln_placement", probe=probe.probe_placement)


@COMPARE_LN_PLACEMENT.check("ln-placement", inputs=probe.inputs_placement)
@no_reference
def verdict_placement(got, want, x):
    if "type" in got:
        raise Failure(
            WRONG_TYPE, what="compare_ln_placement's result", expected="a dict", got=got["type"]
        )
    layers = probe.LAYERS
    pre = tensor(got, "pre_ln", 'compare_ln_placement(...)["pre_ln"]', shape=(layers,))
    post = tensor(got, "post_ln", 'compare_ln_placement(...)["post_ln"]', shape=(layers,))
    calls = got.get("calls")
    if calls == 0:
        raise Failure(
            MISTAKES["ln-placement-not-measured"], detail="layer_gradient_norms was never called"
        )
    if calls != 2:
        raise Failure(
            MISTAKES["ln-placement-stacks"],
            layers=layers,
            detail=f"layer_gradient_norms was called {calls} times",
        )
    runs = {}
    for i in (0, 1):
        call = _call(got, i)
        if call.get("blocks") != layers or call.get("norm_first") not in ("pre", "post"):
            detail = (
                f"call {i + 1} measured {call.get('blocks')} blocks"
                if call.get("blocks") != layers
                else f"the blocks of call {i + 1} are not all of one placement"
            )
            raise Failure(MISTAKES["ln-placement-stacks"], layers=layers, detail=detail)
        runs[call["norm_first"]] = call
    if set(runs) != {"pre", "post"}:
        raise Failure(
            MISTAKES["ln-placement-stacks"],
            layers=layers,
            detail="both calls measured the same placement",
        )
    a, b = runs["pre"], runs["post"]
    names = sorted(k for k in a if k.startswith("w/"))
    if not names or names != sorted(k for k in b if k.startswith("w/")):
        raise Failure(
            MISTAKES["ln-placement-stacks"],
            layers=layers,
            detail="the two stacks hold different parameters",
        )
    for name in names:
        if not _same(a[name], b[name]):
            raise Failure(MISTAKES["ln-placement-weights-differ"], name=name[2:])
    shape = (x["batch"], x["seq_len"], probe.D_MODEL)
    for key, what in (("x", "inputs x"), ("target", "targets")):
        for run in (a, b):
            tensor(run, key, f"the {what} given to layer_gradient_norms", shape=shape)
        if not _same(a[key], b[key]):
            raise Failure(MISTAKES["ln-placement-inputs-differ"], what=what)
    if a.get("final_norm") != "LayerNorm":
        raise Failure(
            MISTAKES["ln-placement-final-norm"],
            detail="The Pre-LN stack was measured without a final LayerNorm "
            f"(final_norm: {a.get('final_norm')}).",
        )
    if b.get("final_norm") != "none":
        raise Failure(
            MISTAKES["ln-placement-final-norm"],
            detail="The Post-LN stack was given a final_norm; its last block already ends with "
            "a LayerNorm.",
        )
    results = {k: run.get("result") for k, run in (("pre", a), ("post", b))}
    if _matches(pre, results["pre"]) and _matches(post, results["post"]):
        return
    if _matches(pre, results["post"]) and _matches(post, results["pre"]):
        raise Failure(
            MISTAKES["ln-placement-pattern"],
            detail='"pre_ln" holds the Post-LN stack\'s norms and the other way round',
        )
    raise Failure(
        MISTAKES["ln-placement-not-measured"],
        detail="the returned vectors are not what the two calls of layer_gradient_norms returned",
    )
