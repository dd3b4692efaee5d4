"""Checks for blocks.py: layer_norm, FeedForward, TransformerBlock (Pre-LN and Post-LN)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..core import Check, Failure, misconception
from ..trusted import blocks as trusted
from ..verdicts import assert_close, tensor
from ._common import pair, randn

MODULE = "blocks"
ORDER = 50

# --------------------------------------------------------------------------- misconceptions

LN_UNBIASED = misconception(
    "ln-unbiased-variance",
    "{what}: you used the unbiased variance (divided by D - 1); LayerNorm divides by D.",
    "x.var(dim=-1) divides by D - 1 by default: use ((x - mean) ** 2).mean(dim=-1, "
    "keepdim=True) or x.var(dim=-1, unbiased=False, keepdim=True).",
)
LN_EPS_OUTSIDE = misconception(
    "ln-eps-outside-sqrt",
    "{what}: you added eps outside the square root, (x - mean) / (sqrt(var) + eps); "
    "LayerNorm computes (x - mean) / sqrt(var + eps). They differ when the variance is small.",
    "torch.sqrt(var + eps), as nn.LayerNorm does.",
)
LN_EPS_IGNORED = misconception(
    "ln-eps-ignored",
    "{what}: your result does not use the eps it was given (eps = {eps:g}).",
    "Use the eps argument inside the square root; do not hard-code 1e-5 or leave it out.",
)
LN_WRONG_DIM = misconception(
    "ln-wrong-dim",
    "{what}: you normalised over the wrong dimension(s); LayerNorm normalises each vector "
    "over its own last dimension (the D features).",
    "mean and variance with dim=-1, keepdim=True (not dim=0, which is BatchNorm's idea, and "
    "not over the whole tensor).",
)
LN_AFFINE_IGNORED = misconception(
    "ln-affine-ignored",
    "{what}: weight and bias were not applied.",
    "After normalising: y = y * weight + bias, each only when it is not None.",
)
FFN_GELU_TANH = misconception(
    "ffn-gelu-tanh",
    "{what}: you used the tanh approximation of GELU; the exact GELU x·Φ(x) was asked.",
    "F.gelu(h) (approximate='none', the default). The tanh formula of GPT-2 is close but "
    "differs by up to ~3e-4.",
)
FFN_WRONG_ACT = misconception(
    "ffn-wrong-activation",
    "{what}: you applied {used}, but activation={asked!r} was asked.",
    "Choose the function from self.activation: F.gelu for 'gelu', F.relu for 'relu'.",
)
FFN_NO_ACT = misconception(
    "ffn-no-activation",
    "{what}: there is no activation between linear1 and linear2; two linear layers in a row "
    "are just one linear map.",
    "linear2(dropout(act(linear1(x)))).",
)
FFN_DROPOUT_IN_EVAL = misconception(
    "ffn-dropout-in-eval",
    "In eval mode your FeedForward still drops values: the output changes from call to call.",
    "Use the given self.dropout (nn.Dropout follows train() and eval()); F.dropout(h, p) "
    "defaults to training=True.",
)
POST_FOR_PRE = misconception(
    "block-post-ln-for-pre-ln",
    "{what}: you computed a Post-LN block (x = norm(x + sublayer(x))), but norm_first=True "
    "asks for Pre-LN.",
    "Pre-LN normalises the input of each sub-layer: x = x + drop(attn(norm1(x))), then "
    "x = x + drop(ffn(norm2(x))). Check self.norm_first.",
)
PRE_FOR_POST = misconception(
    "block-pre-ln-for-post-ln",
    "{what}: you computed a Pre-LN block (x = x + sublayer(norm(x))), but norm_first=False "
    "asks for Post-LN.",
    "Post-LN normalises after the residual sum: x = norm1(x + drop(attn(x))), then "
    "x = norm2(x + drop(ffn(x))). Check self.norm_first.",
)
MISSING_RESIDUAL = misconception(
    "block-missing-residual",
    "{what}: the residual connection around the {sublayer} sub-layer is missing: the "
    "sub-layer's output replaces x instead of being added to it.",
    "Each sub-layer adds to its input: x + drop(sublayer(...)). The residual path is what "
    "lets gradients reach early layers.",
)
NORM_TWICE = misconception(
    "block-norm-twice",
    "{what}: you applied the LayerNorm twice per sub-layer, before the sub-layer and again "
    "after the residual sum (Pre-LN and Post-LN at once).",
    "One norm per sub-layer: before it (Pre-LN, norm_first=True) or after the sum (Post-LN), "
    "never both.",
)
RESIDUAL_FROM_NORMED = misconception(
    "block-residual-from-normed",
    "{what}: your residual adds the sub-layer's output to the normalised x "
    "(x = norm1(x); x = x + attn(x)); in Pre-LN the residual path carries the un-normalised x.",
    "Keep x and the normalised copy apart: h = norm1(x); x = x + drop(attn(h)).",
)
RETURNS_PRE_NORM = misconception(
    "block-returns-pre-norm",
    "{what}: in Post-LN you kept the sum before {norm} instead of the normalised sum.",
    "Post-LN's new x is the norm's output: x = norm2(x + drop(ffn(x))); the un-normalised "
    "sum is never used again.",
)
MASK_IGNORED = misconception(
    "block-mask-ignored",
    "{what}: your result is the same as with no mask: the mask did not reach the attention.",
    "Pass it on: self.attn(h, mask=mask).",
)
BLOCK_DROPOUT_IN_EVAL = misconception(
    "block-dropout-in-eval",
    "In eval mode your TransformerBlock still drops values: the output changes from call to call.",
    "Use the given self.dropout module around each sub-layer's output; F.dropout(h, p) "
    "defaults to training=True.",
)

# --------------------------------------------------------------------------- layer_norm


def _ln(x, weight=None, bias=None, eps=1e-5, *, dims=(-1,), correction=0, eps_mode="inside"):
    """The layer norm that a given mistake computes, in float64."""
    x = x.double()
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, correction=correction)
    if eps_mode == "inside":
        y = (x - mean) / torch.sqrt(var + eps)
    else:
        y = (x - mean) / (torch.sqrt(var) + eps)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y


def _ln_candidates(case):
    x, w, b, eps = case["x"], case.get("weight"), case.get("bias"), case["eps"]

    def lazy(**kw):
        return lambda: _ln(x, **{"weight": w, "bias": b, "eps": eps, **kw}).to(x.dtype)

    found = [
        (LN_UNBIASED, lazy(correction=1), {}),
        (LN_EPS_OUTSIDE, lazy(eps_mode="outside"), {}),
        (LN_EPS_IGNORED, lazy(eps=0.0), {"eps": eps}),
        (LN_EPS_IGNORED, lazy(eps=1e-5), {"eps": eps}),
        (LN_WRONG_DIM, lazy(dims=tuple(range(x.dim()))), {}),
    ]
    if x.dim() > 1:
        found.append((LN_WRONG_DIM, lazy(dims=(0,)), {}))
    if w is not None:
        found.append((LN_AFFINE_IGNORED, lazy(weight=None, bias=None), {}))
    return found


def inputs_layer_norm(gen):
    return {
        "affine": {
            "x": randn(gen, 3, 4, 10, scale=2.0) + 1.0,
            "weight": randn(gen, 10) + 1.0,
            "bias": randn(gen, 10),
            "eps": 1e-5,
        },
        "plain": {"x": randn(gen, 5, 6, scale=3.0) - 2.0, "eps": 1e-5},
        "vector": {"x": randn(gen, 7), "eps": 1e-5},
    }


def inputs_layer_norm_eps(gen):
    # Tiny variances (std 3e-3, var ~ 1e-5 ~ eps): where eps goes, and which eps, now shows.
    return {
        "tiny": {"x": randn(gen, 4, 8, scale=3e-3), "eps": 1e-5},
        "eps": {"x": randn(gen, 4, 8, scale=0.2), "eps": 0.1},
    }


def probe_layer_norm(mod, x):
    got = {}
    for name, case in x.items():
        kwargs = {k: case[k] for k in ("weight", "bias") if k in case}
        got[name] = mod.layer_norm(case["x"], eps=case["eps"], **kwargs)
    return got


def verdict_layer_norm(got, want, x):
    for name, case in x.items():
        args = "x" + "".join(f", {k}" for k in ("weight", "bias") if k in case)
        what = f"layer_norm({args}, eps={case['eps']:g}) on x of shape {tuple(case['x'].shape)}"
        y = tensor(got, name, what, shape=case["x"].shape, dtype=case["x"].dtype)
        assert_close(y, want[name], what, _ln_candidates(case))


# --------------------------------------------------------------------------- FeedForward

D, H, D_FF = 16, 4, 32


def _weights(gen, shapes):
    """Random weights for a state_dict: linear weights ~ N(0, 1/fan_in), biases and the
    LayerNorm shifts ~ N(0, 0.2²), LayerNorm gains ~ 1 + N(0, 0.2²)."""
    sd = {}
    for key, shape in shapes.items():
        if key.startswith("norm") and key.endswith("weight"):
            sd[key] = 1.0 + randn(gen, *shape, scale=0.2)
        elif len(shape) == 2:
            sd[key] = randn(gen, *shape, scale=1.0 / math.sqrt(shape[1]))
        else:
            sd[key] = randn(gen, *shape, scale=0.2)
    return sd


def _ffn_shapes(d_model, d_ff):
    return {
        "linear1.weight": (d_ff, d_model),
        "linear1.bias": (d_ff,),
        "linear2.weight": (d_model, d_ff),
        "linear2.bias": (d_model,),
    }


def _block_shapes(d_model, d_ff):
    shapes = {f"attn.w_{n}.weight": (d_model, d_model) for n in "qkvo"}
    shapes.update({f"ffn.{k}": s for k, s in _ffn_shapes(d_model, d_ff).items()})
    for norm in ("norm1", "norm2"):
        shapes.update({f"{norm}.weight": (d_model,), f"{norm}.bias": (d_model,)})
    return shapes


def inputs_ffn(gen):
    sd = _weights(gen, _ffn_shapes(8, D_FF))
    sd["linear1.weight"] = sd["linear1.weight"] * 6  # pre-activations spread over ±4: GELU's
    return {"weights": sd, "x": randn(gen, 2, 5, 8)}  # curved part, where the tanh form differs


def _ffn(x, sd, act):
    h = F.linear(x["x"].double(), sd["linear1.weight"].double(), sd["linear1.bias"].double())
    h = act(h)
    return F.linear(h, sd["linear2.weight"].double(), sd["linear2.bias"].double()).float()


ACTS = {
    "gelu": lambda h: F.gelu(h),
    "relu": F.relu,
    "gelu-tanh": lambda h: F.gelu(h, approximate="tanh"),
    "none": lambda h: h,
}


def _ffn_module(mod, activation, dropout, sd):
    module = mod.FeedForward(8, D_FF, dropout=dropout, activation=activation)
    module.load_state_dict(sd)
    return module.eval()


def probe_ffn(activation):
    def probe(mod, x):
        with torch.no_grad():
            return {"out": _ffn_module(mod, activation, 0.0, x["weights"])(x["x"])}

    return probe


def verdict_ffn(activation):
    def verdict(got, want, x):
        what = f"FeedForward(8, {D_FF}, activation={activation!r})"
        out = tensor(got, "out", what, shape=(2, 5, 8), dtype=torch.float32)
        sd = x["weights"]
        other = "relu" if activation == "gelu" else "gelu"
        candidates = [
            (FFN_WRONG_ACT, lambda: _ffn(x, sd, ACTS[other]), {"used": other, "asked": activation}),
            (FFN_NO_ACT, lambda: _ffn(x, sd, ACTS["none"]), {}),
        ]
        if activation == "gelu":
            candidates.insert(0, (FFN_GELU_TANH, lambda: _ffn(x, sd, ACTS["gelu-tanh"]), {}))
        assert_close(out, want["out"], what, candidates)

    return verdict


def probe_ffn_dropout(mod, x):
    module = _ffn_module(mod, "gelu", 0.5, x["weights"])
    got = {}
    for key, seed in (("out", 1), ("out2", 2)):
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(seed)
            got[key] = module(x["x"])
    with torch.no_grad():  # the same module without dropout: a bug elsewhere costs points once
        got["no_dropout"] = _ffn_module(mod, "gelu", 0.0, x["weights"])(x["x"])
    return got


def verdict_ffn_dropout(got, want, x):
    what = f"FeedForward(8, {D_FF}, dropout=0.5) in eval mode"
    out = tensor(got, "out", what, shape=(2, 5, 8), dtype=torch.float32)
    if not torch.equal(out, tensor(got, "out2", what, shape=(2, 5, 8))):
        raise Failure(FFN_DROPOUT_IN_EVAL)
    same = tensor(got, "no_dropout", what, shape=(2, 5, 8))
    assert_close(out, same, what + ", compared with your FeedForward with dropout=0")


# --------------------------------------------------------------------------- TransformerBlock


def inputs_block(gen):
    T = 6
    x = randn(gen, 2, T, D)
    x2 = x.clone()
    x2[:, 4:] = randn(gen, 2, T - 4, D, scale=3.0)  # a different future, the same past
    return {
        "weights": _weights(gen, _block_shapes(D, D_FF)),
        "x": x,
        "x2": x2,
        "mask": torch.ones(T, T, dtype=torch.bool).triu(1),
    }


def _block_module(mod, norm_first, activation, dropout, sd):
    """The student's block with the grader's weights, in eval mode. Its ffn is replaced by the
    trusted FeedForward (same weights), so a bug in FeedForward costs points once, above."""
    module = mod.TransformerBlock(
        D, H, D_FF, dropout=dropout, norm_first=norm_first, activation=activation
    )
    module.load_state_dict(sd)
    ffn = trusted.FeedForward(D, D_FF, dropout=dropout, activation=activation)
    ffn.load_state_dict({k[4:]: v for k, v in sd.items() if k.startswith("ffn.")})
    module.ffn = ffn
    return module.eval()


def _run(module, x, mask):
    with torch.no_grad():
        out, weights = pair(module(x, mask=mask), "TransformerBlock's result", "(x, weights)")
    return out, weights


def probe_block(norm_first, activation):
    def probe(mod, x):
        module = _block_module(mod, norm_first, activation, 0.0, x["weights"])
        out, weights = _run(module, x["x"], x["mask"])
        out2, _ = _run(module, x["x2"], x["mask"])
        return {"out": out, "weights": weights, "out2": out2}

    return probe


def _variant(x, sd, activation, variant, mask):
    """What a block with a given mistake computes, in float64, from the trusted parts."""
    m = trusted.TransformerBlock(D, H, D_FF, activation=activation).double()
    m.load_state_dict({k: v.double() for k, v in sd.items()})
    m.eval()
    n1, n2, f = m.norm1, m.norm2, m.ffn

    def a(h):
        return m.attn(h, mask=None if variant.startswith("mask-ignored") else mask)[0]

    x = x.double()
    with torch.no_grad():
        if variant in ("pre", "mask-ignored-pre"):
            x = x + a(n1(x))
            out = x + f(n2(x))
        elif variant in ("post", "mask-ignored"):
            x = n1(x + a(x))
            out = n2(x + f(x))
        elif variant == "pre-no-res-attn":
            x = a(n1(x))
            out = x + f(n2(x))
        elif variant == "pre-no-res-ffn":
            x = x + a(n1(x))
            out = f(n2(x))
        elif variant == "post-no-res-attn":
            x = n1(a(x))
            out = n2(x + f(x))
        elif variant == "post-no-res-ffn":
            x = n1(x + a(x))
            out = n2(f(x))
        elif variant == "norm-twice":
            x = n1(x + a(n1(x)))
            out = n2(x + f(n2(x)))
        elif variant == "residual-from-normed":
            h = n1(x)
            x = h + a(h)
            h = n2(x)
            out = h + f(h)
        elif variant == "post-no-norm2":
            x = n1(x + a(x))
            out = x + f(x)
        elif variant == "post-no-norm1":
            x = x + a(x)
            out = n2(x + f(x))
        else:
            raise KeyError(variant)
    return out.float()


def _block_candidates(x, norm_first, activation):
    sd, mask = x["weights"], x["mask"]

    def lazy(variant):
        return lambda: _variant(x["x"], sd, activation, variant, mask)

    asked = "pre" if norm_first else "post"
    found = [
        (POST_FOR_PRE, lazy("post"), {}) if norm_first else (PRE_FOR_POST, lazy("pre"), {}),
        (MISSING_RESIDUAL, lazy(f"{asked}-no-res-attn"), {"sublayer": "attention"}),
        (MISSING_RESIDUAL, lazy(f"{asked}-no-res-ffn"), {"sublayer": "feed-forward"}),
        (NORM_TWICE, lazy("norm-twice"), {}),
    ]
    if norm_first:
        found.append((RESIDUAL_FROM_NORMED, lazy("residual-from-normed"), {}))
        found.append((MASK_IGNORED, lazy("mask-ignored-pre"), {}))
    else:
        found.append((RETURNS_PRE_NORM, lazy("post-no-norm2"), {"norm": "norm2"}))
        found.append((RETURNS_PRE_NORM, lazy("post-no-norm1"), {"norm": "norm1"}))
        found.append((MASK_IGNORED, lazy("mask-ignored"), {}))
    return found


def verdict_block(norm_first, activation):
    def verdict(got, want, x):
        kind = "Pre-LN" if norm_first else "Post-LN"
        what = f"TransformerBlock({D}, {H}, {D_FF}, norm_first={norm_first}) ({kind})"
        out = tensor(got, "out", f"{what}'s output", shape=(2, 6, D), dtype=torch.float32)
        weights = tensor(got, "weights", f"{what}'s weights", shape=(2, H, 6, 6))
        assert_close(out, want["out"], what, _block_candidates(x, norm_first, activation))
        assert_close(weights, want["weights"], f"the attention weights {what} returned")
        out2 = tensor(got, "out2", f"{what}'s output", shape=(2, 6, D), dtype=torch.float32)
        assert_close(out2, want["out2"], f"{what} on a second input")

    return verdict


def probe_block_dropout(mod, x):
    module = _block_module(mod, True, "gelu", 0.3, x["weights"])
    got = {}
    for key, seed in (("out", 1), ("out2", 2)):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            got[key], _ = _run(module, x["x"], x["mask"])
    # The same block without dropout: a bug elsewhere in the block costs points once.
    got["no_dropout"], _ = _run(
        _block_module(mod, True, "gelu", 0.0, x["weights"]), x["x"], x["mask"]
    )
    return got


def verdict_block_dropout(got, want, x):
    what = f"TransformerBlock({D}, {H}, {D_FF}, dropout=0.3) in eval mode"
    out = tensor(got, "out", what, shape=(2, 6, D), dtype=torch.float32)
    if not torch.equal(out, tensor(got, "out2", what, shape=(2, 6, D))):
        raise Failure(BLOCK_DROPOUT_IN_EVAL)
    same = tensor(got, "no_dropout", what, shape=(2, 6, D))
    assert_close(out, same, what + ", compared with your block with dropout=0")


CHECKS = [
    Check(
        MODULE,
        "layer-norm",
        "layer_norm matches the reference (with and without weight and bias)",
        2,
        inputs_layer_norm,
        probe_layer_norm,
        verdict_layer_norm,
        "layer_norm",
    ),
    Check(
        MODULE,
        "layer-norm-eps",
        "layer_norm puts the given eps inside the square root (tiny variances)",
        1,
        inputs_layer_norm_eps,
        probe_layer_norm,
        verdict_layer_norm,
        "layer_norm",
    ),
    Check(
        MODULE,
        "ffn-gelu",
        "FeedForward with the exact GELU matches the reference",
        2,
        inputs_ffn,
        probe_ffn("gelu"),
        verdict_ffn("gelu"),
        "FeedForward",
    ),
    Check(
        MODULE,
        "ffn-relu",
        "FeedForward with ReLU matches the reference",
        1,
        inputs_ffn,
        probe_ffn("relu"),
        verdict_ffn("relu"),
        "FeedForward",
    ),
    Check(
        MODULE,
        "ffn-dropout-eval",
        "FeedForward: dropout does nothing in eval mode",
        1,
        inputs_ffn,
        probe_ffn_dropout,
        verdict_ffn_dropout,
        "FeedForward",
    ),
    Check(
        MODULE,
        "pre-ln",
        "TransformerBlock, Pre-LN (norm_first=True, GELU, causal mask)",
        3,
        inputs_block,
        probe_block(True, "gelu"),
        verdict_block(True, "gelu"),
        "TransformerBlock",
    ),
    Check(
        MODULE,
        "post-ln",
        "TransformerBlock, Post-LN (norm_first=False, ReLU, causal mask)",
        3,
        inputs_block,
        probe_block(False, "relu"),
        verdict_block(False, "relu"),
        "TransformerBlock",
    ),
    Check(
        MODULE,
        "block-dropout-eval",
        "TransformerBlock: dropout does nothing in eval mode",
        1,
        inputs_block,
        probe_block_dropout,
        verdict_block_dropout,
        "TransformerBlock",
    ),
]
