"""Judge side of modern_blocks.py's checks: misconceptions, models of wrong computations,
verdicts."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core import CheckList, Misconceptions
from ...verdicts import assert_close, close, model, tensor
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("modern_blocks")

# --------------------------------------------------------------------------- misconceptions

RMS_SUBTRACTS_MEAN = misconception(
    "rms-norm-subtracts-mean",
    "{what}: you subtracted the mean before dividing, which is LayerNorm; RMSNorm does not "
    "centre x, it only divides by the root mean square.",
    (
        "RMSNorm keeps one half of LayerNorm: it rescales each vector to a fixed size (root "
        "mean square 1) but does not shift it, so the mean of its features stays where it was.",
        "One reduction only: the mean of the squares over the last dimension, then a division. "
        "The mean of x itself is never computed nor subtracted.",
        "y = x / sqrt(mean(x²) + eps): no x - x.mean(...). Dropping the centring is the whole "
        "point of RMSNorm (one reduction instead of two).",
    ),
)
RMS_EPS_OUTSIDE = misconception(
    "rms-norm-eps-outside-sqrt",
    "{what}: you added eps outside the square root, x / (sqrt(mean(x²)) + eps); RMSNorm "
    "computes x / sqrt(mean(x²) + eps). They differ when the mean square is small.",
    (
        "eps keeps the denominator away from zero when a vector is (nearly) all zeros; that is "
        "exactly where its place in the formula changes the result, so follow the formula: eps "
        "is added to the mean square.",
        "Add eps to the mean square first, then take the square root (torch.sqrt, or "
        "torch.rsqrt and multiply).",
        "torch.sqrt(mean_square + eps) (or torch.rsqrt(mean_square + eps)), as nn.RMSNorm does.",
    ),
)
RMS_EPS_IGNORED = misconception(
    "rms-norm-eps-ignored",
    "{what}: your result does not use the eps it was given (eps = {eps:g}).",
    (
        "eps is an argument: the caller (and the model whose weights are loaded) chose its "
        "value, and another eps gives other outputs for small vectors.",
        "Use the function's eps parameter in the denominator; no literal such as 1e-6 or 1e-5 "
        "in the computation.",
        "Use the eps argument inside the square root; do not hard-code a value or leave it out.",
    ),
)
RMS_ROOT_OF_SUM = misconception(
    "rms-norm-root-of-sum",
    "{what}: you divided by the root of the sum of squares (the L2 norm), not of their mean: "
    "your output is smaller by a factor sqrt(D).",
    (
        "RMSNorm gives one feature a typical size of 1, whatever the width D: that takes the "
        "average of the squares, not their total, which grows with D.",
        "Reduce the squares with .mean over the last dimension (keepdim=True), not .sum and "
        "not torch.linalg.norm.",
        "Root *mean* square: x.pow(2).mean(dim=-1, keepdim=True), not .sum(...). After RMSNorm "
        "each vector has mean square 1, not norm 1.",
    ),
)
RMS_NO_ROOT = misconception(
    "rms-norm-no-root",
    "{what}: you divided by the mean square itself, without taking its square root.",
    (
        "The mean square is measured in units of x squared; to rescale x, divide by its square "
        "root, which is measured in units of x.",
        "Take torch.sqrt of (mean square + eps) before dividing, or multiply by its torch.rsqrt.",
        "y = x / sqrt(mean(x²) + eps): torch.sqrt or torch.rsqrt of the mean square.",
    ),
)
RMS_WRONG_DIM = misconception(
    "rms-norm-wrong-dim",
    "{what}: you took the mean square over the wrong dimension(s); RMSNorm normalises each "
    "vector over its own last dimension (the D features).",
    (
        "Each token's vector is normalised on its own, from its own D features: tokens and "
        "batch entries never share a scale.",
        "Reduce over the last dimension only (dim=-1) and keep it (keepdim=True), so that the "
        "(..., 1) result broadcasts back over x.",
        "x.pow(2).mean(dim=-1, keepdim=True): not dim=0, and not over the whole tensor.",
    ),
)
RMS_WEIGHT_IGNORED = misconception(
    "rms-norm-weight-ignored",
    "{what}: the weight was not applied.",
    (
        "After normalising, a learned gain per feature gives each feature back the size the "
        "model needs; when the caller passes a weight, it must be applied.",
        "Multiply the normalised result by weight, of shape (D,), which broadcasts over the "
        "leading dimensions; only when weight is not None.",
        "After normalising, multiply by weight feature by feature (it broadcasts along the last "
        "dimension), in a branch taken when weight is not None.",
    ),
)
RMSNORM_WEIGHT_IGNORED = misconception(
    "rmsnorm-module-weight-ignored",
    "{what}: your RMSNorm does not multiply by its own parameter self.weight (the grader "
    "loaded a weight that is not all ones).",
    (
        "The module keeps its learned gain as a parameter; forward must use that parameter, or "
        "training and loaded weights have no effect.",
        "In forward, call your rms_norm function and give it the module's own parameter and "
        "eps, the attributes set in __init__.",
        "forward hands self.weight and self.eps to rms_norm: the learned gain is the module's "
        "only parameter.",
    ),
)
RMSNORM_EPS_IGNORED = misconception(
    "rmsnorm-module-eps-ignored",
    "{what}: your RMSNorm does not use the eps it was built with (self.eps = {eps:g}); it "
    "used {used:g}.",
    (
        "The eps a module is built with is part of its configuration: a model built with "
        "eps = 1e-5 must compute with 1e-5, not with a default.",
        "Use the eps stored in __init__ when forward calls rms_norm; do not rely on rms_norm's "
        "default value.",
        "Pass self.eps on as rms_norm's third argument, after self.weight.",
    ),
)
SWIGLU_GATE_SWAPPED = misconception(
    "swiglu-gate-on-wrong-branch",
    "{what}: SiLU went on the up branch, silu(w_up(x)) * w_gate(x); the gate is w_gate: "
    "silu(w_gate(x)) * w_up(x).",
    (
        "SwiGLU's two input projections play different parts: the gate goes through the "
        "activation, the up branch stays linear. With trained weights the parts are fixed by "
        "name.",
        "Apply F.silu to the output of self.w_gate, keep self.w_up linear, and multiply the two.",
        "The weights were trained (here: loaded) for their roles: w_gate goes through SiLU, "
        "w_up stays linear.",
    ),
)
SWIGLU_GELU = misconception(
    "swiglu-gelu-for-silu",
    "{what}: you used GELU on the gate (that is GEGLU); SwiGLU uses SiLU (Swish), "
    "silu(h) = h * sigmoid(h).",
    (
        "The members of the GLU family differ only in the activation on the gate: GEGLU uses "
        "GELU, ReGLU ReLU, SwiGLU SiLU (Swish). SwiGLU's weights expect SiLU.",
        "Use torch.nn.functional.silu (F.silu) on the gate branch, not F.gelu.",
        "F.silu(self.w_gate(x)): the FeedForward of blocks.py used GELU, SwiGLU does not.",
    ),
)
SWIGLU_SIGMOID = misconception(
    "swiglu-sigmoid-for-silu",
    "{what}: you gated with sigmoid(w_gate(x)) (that is the original GLU); SwiGLU's gate is "
    "silu(h) = h * sigmoid(h).",
    (
        "SiLU is h times sigmoid(h): a smooth gate that also carries the size of h. The "
        "sigmoid alone is the original GLU, whose gate is a number between 0 and 1.",
        "F.silu computes h * sigmoid(h) in one call: use it on the gate branch.",
        "F.silu(h), or h * torch.sigmoid(h): the sigmoid alone forgets the factor h.",
    ),
)
SWIGLU_RELU = misconception(
    "swiglu-relu-for-silu",
    "{what}: you used ReLU on the gate (that is ReGLU); SwiGLU uses SiLU.",
    (
        "The members of the GLU family differ only in the activation on the gate; ReLU makes "
        "ReGLU. SwiGLU uses SiLU, which is smooth and lets small negative values through.",
        "Replace the ReLU (F.relu or torch.relu) on the gate branch by F.silu.",
        "F.silu(self.w_gate(x)).",
    ),
)
SWIGLU_NO_GATE = misconception(
    "swiglu-no-gate",
    "{what}: there is no gate: your output is w_down(silu({branch}(x))), one branch only; "
    "SwiGLU multiplies the activated gate with the linear up branch.",
    (
        "A gated linear unit multiplies two projections of the same input: the activated gate "
        "decides, feature by feature, how much of the linear branch gets through.",
        "Compute both branches, self.w_gate and self.w_up of x, activate the gate, multiply "
        "element by element, then project down with self.w_down.",
        "w_down(silu(w_gate(x)) * w_up(x)): both branches, multiplied element by element.",
    ),
)
SWIGLU_NO_ACT = misconception(
    "swiglu-no-activation",
    "{what}: the gate has no activation: w_down(w_gate(x) * w_up(x)) is a bilinear map.",
    (
        "Without a non-linearity the product of two linear maps is bilinear, not the gated "
        "unit the weights were trained for.",
        "F.silu goes on the gate branch only, before the element-wise product.",
        "Apply F.silu to the gate branch before the product.",
    ),
)
SWIGLU_SILU_AFTER = misconception(
    "swiglu-silu-after-product",
    "{what}: you applied SiLU to the product, silu(w_gate(x) * w_up(x)); only the gate "
    "branch goes through SiLU.",
    (
        "The activation belongs to the gate alone: once activated, the gate scales the linear "
        "up branch. Activating the product computes something else.",
        "In this order: F.silu on the output of w_gate, times the output of w_up, then w_down; "
        "no activation after the product.",
        "silu(w_gate(x)) * w_up(x), then w_down.",
    ),
)

# --------------------------------------------------------------------------- rms_norm


@model
def _rms(
    x,
    weight=None,
    eps=1e-6,
    *,
    center=False,
    reduce="mean",
    root=True,
    dims=(-1,),
    eps_mode="inside",
    use_weight=True,
):
    """The RMS norm that a given mistake computes, in float64."""
    x = x.double()
    if center:
        x = x - x.mean(dim=dims, keepdim=True)
    sq = x.pow(2)
    sq = sq.sum(dim=dims, keepdim=True) if reduce == "sum" else sq.mean(dim=dims, keepdim=True)
    if eps_mode == "inside":
        scale = torch.sqrt(sq + eps) if root else sq + eps
    else:
        scale = (torch.sqrt(sq) if root else sq) + eps
    y = x / scale
    if weight is not None and use_weight:
        y = y * weight.double()
    return y


def _structure_mistakes(case):
    """Mistakes in what is normalised and how (charged by the rms-norm check):
    (label, id, keywords of _rms)."""
    x = case["x"]
    found = [
        ("centred", RMS_SUBTRACTS_MEAN, {"center": True}),
        ("sum", RMS_ROOT_OF_SUM, {"reduce": "sum"}),
        ("no-root", RMS_NO_ROOT, {"root": False}),
        ("all-dims", RMS_WRONG_DIM, {"dims": tuple(range(x.dim()))}),
    ]
    if x.dim() > 1:
        found.append(("dim-0", RMS_WRONG_DIM, {"dims": (0,)}))
    if case.get("weight") is not None:
        found.append(("no-weight", RMS_WEIGHT_IGNORED, {"use_weight": False}))
    return found


def _eps_mistakes(case):
    """Mistakes in where eps goes and which eps is used (charged by the rms-norm-eps check):
    (label, id, keywords of _rms, details)."""
    eps = case.get("eps", 1e-6)
    found = [("eps-outside", RMS_EPS_OUTSIDE, {"eps_mode": "outside"}, {})]
    for other in (0.0, 1e-6, 1e-5):
        if other != eps:
            found.append((f"eps-{other:g}", RMS_EPS_IGNORED, {"eps": other}, {"eps": eps}))
    return found


def _rms_norm_mistakes(case):
    """Every named mistake of rms_norm, alone and with an eps mistake:
    (label, id, keywords of _rms, details)."""
    structure, eps = _structure_mistakes(case), _eps_mistakes(case)
    found = [(label, m, kw, {}) for label, m, kw in structure]
    found += [(label, m, e, d) for label, m, e, d in eps]
    found += [
        (f"{label}+{e_label}", m, {**kw, **e}, {})
        for label, m, kw in structure
        for e_label, _, e, _ in eps
    ]
    return found


def _model(case, **kw):
    args = {"weight": case.get("weight"), "eps": case.get("eps", 1e-6), **kw}
    return lambda: _rms(case["x"], **args).to(case["x"].dtype)


def _replays(x, mistakes):
    """rms_norm with each of mistakes(case) on each case, replayed with the reference
    (core.Check.replays): "<case>/<label>"."""
    return {
        f"{name}/{label}": _model(case, **kw)()
        for name, case in x.items()
        for label, _, kw, *_ in mistakes(case)
    }


def _is_one_of(y, want, name, labels):
    """Whether y is the replayed output of one of these mistakes on case `name`."""
    return any(close(y, want[f"replay/{name}/{label}"]) for label in labels)


def _eps_replays(x):
    return _replays(x, _eps_mistakes)


def _structure_replays(x):
    return _replays(x, _structure_mistakes)


def _rms_norm_replays(x):
    return _replays(x, _rms_norm_mistakes)


def _rms_what(case):
    args = "x" + ("" if case.get("weight") is None else ", weight")
    args += "" if "eps" not in case else f", eps={case['eps']:g}"
    return f"rms_norm({args}) on x of shape {tuple(case['x'].shape)}"


def _rms_output(got, name, case):
    return tensor(got, name, _rms_what(case), shape=case["x"].shape, dtype=case["x"].dtype)


RMS_NORM = CHECKS.exercise("rms_norm", probe=probe.probe_rms_norm)


@RMS_NORM.check(
    "rms-norm",
    "rms_norm matches the reference (with and without weight)",
    2,
    inputs=probe.inputs_rms_norm,
    replays=_eps_replays,
)
def verdict_rms_norm(got, want, x):
    """Everything but eps: a result that is right but for where eps goes or which eps is
    used (replayed with the reference) passes here, as the rms-norm-eps check charges it
    (each difference is charged once)."""
    for name, case in x.items():
        y = _rms_output(got, name, case)
        if _is_one_of(y, want, name, [label for label, *_ in _eps_mistakes(case)]):
            continue
        structure = _structure_mistakes(case)
        candidates = [(m, _model(case, **kw), {}) for _, m, kw in structure]
        candidates += [
            (m, _model(case, **kw, **e), {})
            for _, m, kw in structure
            for _, _, e, _ in _eps_mistakes(case)
        ]
        assert_close(y, want[name], _rms_what(case), candidates)


@RMS_NORM.check(
    "rms-norm-eps",
    "rms_norm puts the given eps inside the square root (tiny mean squares)",
    1,
    inputs=probe.inputs_rms_norm_eps,
    replays=_structure_replays,
)
def verdict_rms_norm_eps(got, want, x):
    """Where eps goes and which eps is used. A result that is right about eps but has a
    mistake the rms-norm check charges (replayed with the reference) passes here (each
    difference is charged once)."""
    for name, case in x.items():
        y = _rms_output(got, name, case)
        structure = _structure_mistakes(case)
        if _is_one_of(y, want, name, [label for label, *_ in structure]):
            continue
        eps = _eps_mistakes(case)
        candidates = [(m, _model(case, **e), d) for _, m, e, d in eps]
        candidates += [
            (m, _model(case, **kw, **e), d) for _, m, e, d in eps for _, _, kw in structure
        ]
        assert_close(y, want[name], _rms_what(case), candidates)


# --------------------------------------------------------------------------- RMSNorm


RMSNORM = CHECKS.exercise("RMSNorm", probe=probe.probe_rms_module)


@RMSNORM.check(
    "rms-norm-module",
    "RMSNorm matches the reference (its own weight and eps applied)",
    1,
    inputs=probe.inputs_rms_module,
    replays=_rms_norm_replays,
)
def verdict_rms_module(got, want, x):
    """An RMSNorm that returns what the student's own rms_norm(x, weight, eps) returned passes
    when that is one of rms_norm's named mistakes (replayed with the reference): the rms_norm
    checks charge it (each difference is charged once). Only a named mistake: what the
    student's process says its rms_norm returns is not trusted to excuse any output."""
    for name, case in x.items():
        D, eps = case["x"].size(-1), case.get("eps", 1e-6)
        what = f"RMSNorm({D}" + ("" if "eps" not in case else f", eps={eps:g}") + ")"
        what += f" on x of shape {tuple(case['x'].shape)}"
        out = tensor(got, name, what, shape=case["x"].shape, dtype=case["x"].dtype)
        if close(out, want[name]):
            continue
        own = got.get(f"{name}/own")
        mistakes = _rms_norm_mistakes(case)
        if (
            type(own) is torch.Tensor
            and close(out, own)
            and _is_one_of(own, want, name, [label for label, *_ in mistakes])
        ):
            continue
        case = {"eps": eps, **case}
        candidates = [(RMSNORM_WEIGHT_IGNORED, _model(case, use_weight=False), {})]
        for other in (1e-6, 1e-5, 0.0):
            if other != eps:
                candidates.append(
                    (RMSNORM_EPS_IGNORED, _model(case, eps=other), {"eps": eps, "used": other})
                )
        # RMSNorm computed on its own (not through rms_norm), with one of rms_norm's mistakes
        candidates += [(m, _model(case, **kw), d) for _, m, kw, d in mistakes]
        assert_close(out, want[name], what, candidates)


# --------------------------------------------------------------------------- SwiGLU

_ACTS = {
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu-tanh": lambda h: F.gelu(h, approximate="tanh"),
    "sigmoid": torch.sigmoid,
    "relu": F.relu,
    "none": lambda h: h,
}


@model
def _swiglu(x, sd, variant="ref", act="silu"):
    """What SwiGLU with a given mistake computes, in float64."""
    x = x.double()
    gate = F.linear(x, sd["w_gate.weight"].double())
    up = F.linear(x, sd["w_up.weight"].double())
    f = _ACTS[act]
    hidden = {
        "ref": lambda: f(gate) * up,
        "swapped": lambda: f(up) * gate,
        "up-only": lambda: f(up),
        "gate-only": lambda: f(gate),
        "after-product": lambda: f(gate * up),
    }[variant]()
    return F.linear(hidden, sd["w_down.weight"].double()).float()


def _swiglu_candidates(x, sd):
    def lazy(variant="ref", act="silu"):
        return lambda: _swiglu(x, sd, variant, act)

    return [
        (SWIGLU_GATE_SWAPPED, lazy("swapped"), {}),
        (SWIGLU_GELU, lazy(act="gelu"), {}),
        (SWIGLU_GELU, lazy(act="gelu-tanh"), {}),
        (SWIGLU_SIGMOID, lazy(act="sigmoid"), {}),
        (SWIGLU_RELU, lazy(act="relu"), {}),
        (SWIGLU_NO_GATE, lazy("up-only"), {"branch": "w_up"}),
        (SWIGLU_NO_GATE, lazy("gate-only"), {"branch": "w_gate"}),
        (SWIGLU_NO_ACT, lazy(act="none"), {}),
        (SWIGLU_SILU_AFTER, lazy("after-product"), {}),
    ]


SWI_GLU = CHECKS.exercise("SwiGLU", probe=probe.probe_swiglu)


@SWI_GLU.check(
    "swiglu",
    "SwiGLU matches the reference on (B, T, D) and (T, D) inputs",
    2,
    inputs=probe.inputs_swiglu,
)
def verdict_swiglu(got, want, x):
    d_ff, D = x["weights"]["w_gate.weight"].shape
    for key, inp in (("out", "x"), ("out2", "x2")):
        what = f"SwiGLU({D}, {d_ff}) on x of shape {tuple(x[inp].shape)}"
        out = tensor(got, key, what, shape=x[inp].shape, dtype=torch.float32)
        assert_close(out, want[key], what, _swiglu_candidates(x[inp], x["weights"]))
