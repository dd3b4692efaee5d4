"""Checks for diagnostics.py, the LN-placement experiment: layer_gradient_norms and
compare_ln_placement (Pre-LN against Post-LN at initialisation)."""

from __future__ import annotations

import torch
from torch import nn

from ..core import Check, Failure, misconception
from ..trusted.blocks import TransformerBlock
from ..verdicts import assert_close, tensor
from .blocks import _block_shapes, _weights

MODULE = "diagnostics"
ORDER = 63

GRAD_ACCUMULATED = misconception(
    "ln-grad-accumulated",
    "Called a second time on the same stack, layer_gradient_norms returned {ratio:.3g} times "
    "the first result: the gradients of the first call were still in .grad.",
    "loss.backward() adds to .grad. Clear it first: block.zero_grad() for every block.",
)
GRAD_SQUARED = misconception(
    "ln-grad-squared-norm",
    "{what}: you returned the sum of the squared gradients, not its square root.",
    "The L2 norm is torch.sqrt(sum of p.grad.pow(2).sum()).",
)
FINAL_NORM_IGNORED = misconception(
    "ln-final-norm-ignored",
    "{what}: your result is what the stack gives without its final_norm.",
    "Apply final_norm to the last block's output when it is not None, before the loss.",
)
PATTERN = misconception(
    "ln-placement-pattern",
    "compare_ln_placement does not show what the reference run shows: {finding} "
    "(pre_ln = {pre}, post_ln = {post}).",
    "Build ONE set of weights and ONE (x, target) pair and use them for both stacks "
    "(post.load_state_dict(pre.state_dict())); give the Pre-LN stack a final nn.LayerNorm. "
    "Check that pre_ln comes from norm_first=True.",
)

# --------------------------------------------------------------------------- layer_gradient_norms

N, D, H, D_FF = 6, 16, 4, 32


def inputs_norms(gen):
    from ._common import randn

    return {
        "weights": [_weights(gen, _block_shapes(D, D_FF)) for _ in range(N)],
        "x": randn(gen, 2, 5, D, dtype=torch.float64),
        "target": randn(gen, 2, 5, D, dtype=torch.float64),
    }


def _stack(x, norm_first):
    """N trusted blocks holding the grader's weights, in float64 (exact enough to compare)."""
    blocks = nn.ModuleList(
        TransformerBlock(D, H, D_FF, norm_first=norm_first) for _ in range(N)
    ).double()
    for block, sd in zip(blocks, x["weights"], strict=True):
        block.load_state_dict(sd)
    return blocks


def _final_norm():
    norm = nn.LayerNorm(D).double()
    with torch.no_grad():
        norm.weight.copy_(torch.linspace(0.5, 1.5, D, dtype=torch.float64))
    return norm


def probe_norms(mod, x):
    post = _stack(x, norm_first=False)
    first = mod.layer_gradient_norms(post, x["x"], x["target"])
    again = mod.layer_gradient_norms(post, x["x"], x["target"])
    pre = mod.layer_gradient_norms(_stack(x, True), x["x"], x["target"], final_norm=_final_norm())
    return {"post": first, "post_again": again, "pre": pre}


def _trusted_norms(x, norm_first, final_norm):
    blocks = _stack(x, norm_first)
    h = x["x"]
    for block in blocks:
        h, _ = block(h)
    if final_norm is not None:
        h = final_norm(h)
    torch.nn.functional.mse_loss(h, x["target"]).backward()
    return torch.stack(
        [torch.sqrt(sum(p.grad.pow(2).sum() for p in b.parameters())) for b in blocks]
    )


def verdict_norms(got, want, x):
    for key, label in (("post", "Post-LN"), ("pre", "Pre-LN, final_norm given")):
        what = f"layer_gradient_norms on a {N}-block {label} stack"
        norms = tensor(got, key, what, shape=(N,), dtype=torch.float64)
        candidates = [(GRAD_SQUARED, lambda k=key: want[k].pow(2), {})]
        if key == "pre":
            candidates.append((FINAL_NORM_IGNORED, lambda: _trusted_norms(x, True, None), {}))
        assert_close(norms.detach(), want[key], what, candidates)
    again = tensor(got, "post_again", "the second call's result", shape=(N,))
    if not torch.allclose(again, want["post"]):
        ratio = float(again.sum() / want["post"].sum())
        raise Failure(GRAD_ACCUMULATED, ratio=ratio)


# --------------------------------------------------------------------------- the experiment

# What the reference run shows, measured with solutions/diagnostics.py for seeds 0-19
# (8 blocks, D = 32, default arguments; numbers in docs/blocks.md):
#   Post-LN's last block / Pre-LN's last block:              2.64 .. 3.04
#   Post-LN's last block / median of its other blocks:       1.92 .. 2.52
#   Pre-LN largest / smallest block:                          1.13 .. 1.31
# The thresholds below sit well inside those ranges, so any seed and any order of random
# draws in the student's code passes when the experiment is set up as asked.
LAST_OVER_PRE = 2.0
LAST_OVER_REST = 1.5
PRE_SPREAD = 1.6


def probe_experiment(mod, x):
    result = mod.compare_ln_placement()
    if not isinstance(result, dict):
        return {"type": type(result).__name__}
    return {k: result.get(k) for k in ("pre_ln", "post_ln")}


def verdict_experiment(got, want, x):
    pre = tensor(got, "pre_ln", 'compare_ln_placement()["pre_ln"]', shape=(8,)).double()
    post = tensor(got, "post_ln", 'compare_ln_placement()["post_ln"]', shape=(8,)).double()
    shown = {
        "pre": [round(v, 3) for v in pre.tolist()],
        "post": [round(v, 3) for v in post.tolist()],
    }
    if not (pre > 0).all() or not (post > 0).all():
        raise Failure(PATTERN, finding="every gradient norm should be positive", **shown)
    if post[-1] < LAST_OVER_PRE * pre[-1]:
        finding = (
            f"Post-LN's last block should get at least {LAST_OVER_PRE:g}x the gradient of "
            f"Pre-LN's last block, got {float(post[-1] / pre[-1]):.2f}x"
        )
        raise Failure(PATTERN, finding=finding, **shown)
    if post[-1] < LAST_OVER_REST * post[:-1].median():
        finding = (
            f"Post-LN's last block should get at least {LAST_OVER_REST:g}x the median "
            f"gradient of its other blocks, got {float(post[-1] / post[:-1].median()):.2f}x"
        )
        raise Failure(PATTERN, finding=finding, **shown)
    if pre.max() > PRE_SPREAD * pre.min():
        finding = (
            f"Pre-LN's gradient norms should stay within a factor {PRE_SPREAD:g} of each "
            f"other, got {float(pre.max() / pre.min()):.2f}"
        )
        raise Failure(PATTERN, finding=finding, **shown)


CHECKS = [
    Check(
        MODULE,
        "ln-gradient-norms",
        "layer_gradient_norms: per-block gradient norms of one loss (fixed weights and input)",
        2,
        inputs_norms,
        probe_norms,
        verdict_norms,
        "layer_gradient_norms",
    ),
    Check(
        MODULE,
        "ln-placement",
        "LN placement at initialisation: Post-LN's last block gets the largest gradients",
        2,
        lambda gen: {},
        probe_experiment,
        verdict_experiment,
        "compare_ln_placement",
    ),
]
