"""Judge side of diagnostics.py's LN-placement checks: misconceptions, models of known wrong
computations, verdicts."""

from __future__ import annotations

from types import ModuleType

import torch
import torch.nn.functional as F

from ...core import WRONG_DTYPE, WRONG_TYPE, CheckList, Failure, misconception
from ...tolerances import tolerance
from ...verdicts import assert_close, model, tensor
from . import probe_ln as probe

trusted_blocks: ModuleType | None
try:  # the stand-in the models replay the named mistakes on; the student copy has none and
    # answers from what make dist recorded (model_replays.py)
    from ...trusted import blocks as trusted_blocks
except ImportError:
    trusted_blocks = None

CHECKS = CheckList("diagnostics")

GRAD_ACCUMULATED = misconception(
    "ln-grad-accumulated",
    "Called a second time on the same stack, layer_gradient_norms returned {ratio:.3g} times "
    "the first result: the gradients of the first call were still in .grad.",
    (
        "PyTorch accumulates gradients: every backward pass adds to what .grad already "
        "holds. A measurement must start from clean gradients, or it also counts the "
        "previous call's.",
        "Reset the gradients of every block's parameters before the backward pass "
        "(Module.zero_grad).",
        "backward() adds to .grad: call zero_grad() on every block before the forward pass.",
    ),
)
GRAD_SQUARED = misconception(
    "ln-grad-squared-norm",
    "{what}: you returned the sum of the squared gradients, not its square root.",
    (
        "The L2 norm of a set of numbers is the square root of the sum of their squares; "
        "without the root it is the squared norm, which grows much faster.",
        "Sum the squares of p.grad over all of the block's parameters, then take torch.sqrt "
        "of the total.",
        "The L2 norm is torch.sqrt(sum of p.grad.pow(2).sum()), over the block's parameters.",
    ),
)
GRAD_SUM_OF_NORMS = misconception(
    "ln-grad-sum-of-norms",
    "{what}: you added up the norms of the block's parameters one by one; the block's norm is "
    "ONE L2 norm over all its parameters together (the square root of the summed squares).",
    (
        "A block's gradient norm treats all its parameters as one long vector: the norm of "
        "that vector, not the sum of the norms of its pieces (which is larger).",
        "Add up the squared entries of every parameter's gradient first, then take one "
        "square root.",
        "One root over one sum: torch.sqrt of the sum, over block.parameters(), of "
        "p.grad.pow(2).sum(); not the sum of p.grad.norm().",
    ),
)
FINAL_NORM_IGNORED = misconception(
    "ln-final-norm-ignored",
    "{what}: your result is what the stack gives without its final_norm.",
    (
        "A Pre-LN stack ends with one more LayerNorm, after its last block; the loss, and so "
        "every gradient, depends on it.",
        "When final_norm is given (not None), apply it to the last block's output before the loss.",
        "After the loop over the blocks: if final_norm is not None, pass the hidden state "
        "through it, then compute the MSE loss.",
    ),
)
PATTERN = misconception(
    "ln-placement-pattern",
    "compare_ln_placement's two results are swapped: {detail}.",
    (
        "The experiment asks which placement gives which gradient profile; each label must "
        "name the stack that was measured.",
        'Key the result by placement: the Pre-LN stack\'s norms under "pre_ln", the Post-LN '
        'stack\'s under "post_ln".',
        '"pre_ln": the norms of the Pre-LN stack (norm_first=True, with the final '
        'LayerNorm); "post_ln": those of the Post-LN stack.',
    ),
)
NOT_MEASURED = misconception(
    "ln-placement-not-measured",
    "compare_ln_placement's numbers do not come from measuring the two stacks: {detail}.",
    (
        "An experiment's numbers come from running it with the arguments it is given; the "
        "grader calls it with its own seed and sizes.",
        "Inside compare_ln_placement, build both stacks, draw the inputs and call "
        "layer_gradient_norms on each; return those tensors, not stored or hand-made numbers.",
        "Build the stacks, draw x and target, and return what layer_gradient_norms returns "
        "for each stack, for the arguments you are given (the grader passes a fresh seed and "
        "sizes).",
    ),
)
WRONG_STACKS = misconception(
    "ln-placement-stacks",
    "compare_ln_placement should measure {layers} Pre-LN blocks (norm_first=True) and {layers} "
    "Post-LN blocks (norm_first=False), one call of layer_gradient_norms each: {detail}.",
    (
        "The comparison is fair only when the two stacks differ in the LayerNorm placement "
        "alone: the same number of blocks, the same sizes.",
        "Build num_layers TransformerBlocks with norm_first=True and num_layers with "
        "norm_first=False, all with the given d_model, num_heads and d_ff (an nn.ModuleList "
        "each).",
        "pre: TransformerBlock(d_model, num_heads, d_ff, norm_first=True) num_layers times; "
        "post: the same with norm_first=False.",
    ),
)
WEIGHTS_DIFFER = misconception(
    "ln-placement-weights-differ",
    "Your Pre-LN and Post-LN stacks hold different weights ({name} differs): the comparison "
    "then mixes the placement with two unrelated initialisations.",
    (
        "To see the effect of the placement alone, both stacks must start from the same "
        "weights; two random initialisations add a difference of their own.",
        "Build both stacks, then copy one stack's parameters into the other with state_dict "
        "and load_state_dict (the two have the same parameter names).",
        "After building both stacks: load the Pre-LN stack's state_dict() into the Post-LN "
        "stack, so that only the placement differs.",
    ),
)
INPUTS_DIFFER = misconception(
    "ln-placement-inputs-differ",
    "Your two stacks were measured on different {what}: the comparison then mixes the "
    "placement with two unrelated batches.",
    (
        "Both stacks must be measured on the same data; otherwise a difference in the "
        "gradients may come from the batch, not from the placement.",
        "Draw x and target once, with torch.randn, and pass the same two tensors to both "
        "calls of layer_gradient_norms.",
        "Draw ONE x and ONE target (torch.randn(batch, seq_len, d_model) each) and give the "
        "same pair to both calls of layer_gradient_norms.",
    ),
)
FINAL_NORM_SETUP = misconception(
    "ln-placement-final-norm",
    "{detail}",
    (
        "A Pre-LN stack leaves its residual stream unnormalised, so Pre-LN models end with "
        "one more LayerNorm; a Post-LN stack's last block already ends with a norm.",
        "Give a fresh nn.LayerNorm(d_model) as final_norm when you measure the Pre-LN stack, "
        "and no final_norm for the Post-LN stack.",
        "Pre-LN stacks end with a LayerNorm: layer_gradient_norms(pre, x, target, "
        "nn.LayerNorm(d_model)); the Post-LN stack already ends with one: no final_norm.",
    ),
)

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


@LAYER_GRADIENT_NORMS.check(
    "ln-gradient-norms",
    "layer_gradient_norms matches the reference: per-block gradient norms of one loss",
    2,
    inputs=probe.inputs_norms,
)
def verdict_norms(got, want, x):
    n = len(x["weights"])
    for key, label in (("post", "Post-LN"), ("pre", "Pre-LN, final_norm given")):
        what = f"layer_gradient_norms on a {n}-block {label} stack"
        norms, tol = _norms(got, key, what, n)
        norm_first, final = key == "pre", probe.final_norm() if key == "pre" else None
        candidates = [
            (GRAD_SQUARED, lambda k=key: want[k].pow(2), {}),
            (GRAD_SUM_OF_NORMS, lambda nf=norm_first, f=final: _trusted_norms(x, nf, f, "sum"), {}),
        ]
        if key == "pre":
            candidates.append((FINAL_NORM_IGNORED, lambda: _trusted_norms(x, True, None), {}))
        assert_close(norms, want[key], what, candidates, tol=tol)
    again, tol = _norms(got, "post_again", "the second call's result", n)
    if not torch.allclose(again, want["post"], **(tol or tolerance(torch.float64))):
        ratio = float(again.sum() / want["post"].sum())
        raise Failure(GRAD_ACCUMULATED, ratio=ratio)


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


@COMPARE_LN_PLACEMENT.check(
    "ln-placement",
    "compare_ln_placement: Pre-LN (final norm) against Post-LN, one input, one set of weights",
    2,
    inputs=probe.inputs_placement,
)
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
        raise Failure(NOT_MEASURED, detail="layer_gradient_norms was never called")
    if calls != 2:
        raise Failure(
            WRONG_STACKS, layers=layers, detail=f"layer_gradient_norms was called {calls} times"
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
            raise Failure(WRONG_STACKS, layers=layers, detail=detail)
        runs[call["norm_first"]] = call
    if set(runs) != {"pre", "post"}:
        raise Failure(WRONG_STACKS, layers=layers, detail="both calls measured the same placement")
    a, b = runs["pre"], runs["post"]
    names = sorted(k for k in a if k.startswith("w/"))
    if not names or names != sorted(k for k in b if k.startswith("w/")):
        raise Failure(
            WRONG_STACKS, layers=layers, detail="the two stacks hold different parameters"
        )
    for name in names:
        if not _same(a[name], b[name]):
            raise Failure(WEIGHTS_DIFFER, name=name[2:])
    shape = (x["batch"], x["seq_len"], probe.D_MODEL)
    for key, what in (("x", "inputs x"), ("target", "targets")):
        for run in (a, b):
            tensor(run, key, f"the {what} given to layer_gradient_norms", shape=shape)
        if not _same(a[key], b[key]):
            raise Failure(INPUTS_DIFFER, what=what)
    if a.get("final_norm") != "LayerNorm":
        raise Failure(
            FINAL_NORM_SETUP,
            detail="The Pre-LN stack was measured without a final LayerNorm "
            f"(final_norm: {a.get('final_norm')}).",
        )
    if b.get("final_norm") != "none":
        raise Failure(
            FINAL_NORM_SETUP,
            detail="The Post-LN stack was given a final_norm; its last block already ends with "
            "a LayerNorm.",
        )
    results = {k: run.get("result") for k, run in (("pre", a), ("post", b))}
    if _matches(pre, results["pre"]) and _matches(post, results["post"]):
        return
    if _matches(pre, results["post"]) and _matches(post, results["pre"]):
        raise Failure(
            PATTERN, detail='"pre_ln" holds the Post-LN stack\'s norms and the other way round'
        )
    raise Failure(
        NOT_MEASURED,
        detail="the returned vectors are not what the two calls of layer_gradient_norms returned",
    )
