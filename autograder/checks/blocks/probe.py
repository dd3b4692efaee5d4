"""Probe side of blocks.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
The sub-layers a block check does not grade are replaced by stand-ins made of PyTorch
built-ins (a tanh-of-linear for the FFN, constant outputs for the dropout check), so a bug in
FeedForward costs points once, in its own checks. The attention is the trusted
MultiHeadAttention, a dependency (blocks.py imports it from multihead.py).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ...run.probing import gradients, kept, load_weights, pair, randn

P_DROP = 0.25  # training-mode dropout: not 0.5, so dropping 1 - p instead of p shows


def _int(gen, low: int, high: int) -> int:
    """A draw from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


# --------------------------------------------------------------------------- weights
# Public: the diagnostics checks build their stacks of blocks from these too.


def random_weights(gen, shapes: dict[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
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


def ffn_shapes(d_model: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The state_dict shapes of FeedForward(d_model, d_ff)."""
    return {
        "linear1.weight": (d_ff, d_model),
        "linear1.bias": (d_ff,),
        "linear2.weight": (d_model, d_ff),
        "linear2.bias": (d_model,),
    }


def block_shapes(d_model: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The state_dict shapes of TransformerBlock(d_model, H, d_ff) (any H)."""
    shapes: dict[str, tuple[int, ...]] = {f"attn.w_{n}.weight": (d_model, d_model) for n in "qkvo"}
    shapes.update({f"ffn.{k}": s for k, s in ffn_shapes(d_model, d_ff).items()})
    for norm in ("norm1", "norm2"):
        shapes.update({f"{norm}.weight": (d_model,), f"{norm}.bias": (d_model,)})
    return shapes


# --------------------------------------------------------------------------- layer_norm


def inputs_layer_norm(gen):
    D = _int(gen, 8, 12)
    return {
        "affine": {
            "x": randn(gen, _int(gen, 2, 3), 4, D, scale=2.0) + 1.0,
            "weight": randn(gen, D) + 1.0,
            "bias": randn(gen, D),
            "eps": 1e-5,
        },
        "plain": {"x": randn(gen, 5, _int(gen, 5, 7), scale=3.0) - 2.0, "eps": 1e-5},
        "vector": {"x": randn(gen, _int(gen, 6, 9)), "eps": 1e-5},
        # a weight without a bias, and a bias without a weight: each is applied on its own
        "weight-only": {"x": randn(gen, 3, D) + 0.5, "weight": randn(gen, D) + 1.0, "eps": 1e-5},
        "bias-only": {"x": randn(gen, 3, D) - 0.5, "bias": randn(gen, D), "eps": 1e-5},
    }


def inputs_layer_norm_eps(gen):
    # Tiny variances (std 3e-3, var ~ 1e-5 ~ eps): where eps goes, and which eps, now shows.
    return {
        "tiny": {"x": randn(gen, 4, _int(gen, 8, 12), scale=3e-3), "eps": 1e-5},
        "eps": {"x": randn(gen, 4, _int(gen, 8, 12), scale=0.2), "eps": 0.1},
    }


def probe_layer_norm(mod, x):
    got = {}
    for name, case in x.items():
        kwargs = {k: case[k] for k in ("weight", "bias") if k in case}
        got[name] = mod.layer_norm(case["x"], eps=case["eps"], **kwargs)
    return got


def ln_grads(mod, x):
    """probe_layer_norm, and the gradients that reach x, weight and bias (the affine case)."""
    case = x["affine"]
    run = lambda x_, w, b: mod.layer_norm(x_, weight=w, bias=b, eps=case["eps"])  # noqa: E731
    names = ("x", "weight", "bias")
    return {**probe_layer_norm(mod, x), **gradients(None, run, {n: case[n] for n in names})}


# --------------------------------------------------------------------------- FeedForward


def inputs_ffn(gen):
    d_model, d_ff = 8, 32
    sd = random_weights(gen, ffn_shapes(d_model, d_ff))
    sd["linear1.weight"] = sd["linear1.weight"] * 6  # pre-activations spread over ±4: GELU's
    x = randn(gen, _int(gen, 2, 3), _int(gen, 4, 6), d_model)  # curved part, where tanh differs
    return {"weights": sd, "x": x}


def inputs_ffn_train(gen):
    # d_ff < d_model and linear2 of full column rank: the hidden layer linear2 was given can
    # be recovered from the output, so where dropout acted shows.
    d_model, d_ff = 12, 6
    sd = random_weights(gen, ffn_shapes(d_model, d_ff))
    return {"weights": sd, "x": randn(gen, _int(gen, 4, 6), 10, d_model, scale=2.0)}


def _ffn(mod, x, activation, dropout):
    d_ff, d_model = x["weights"]["linear1.weight"].shape
    module = mod.FeedForward(d_model, d_ff, dropout=dropout, activation=activation)
    load_weights(module, x["weights"])
    return module


def probe_ffn_gelu(mod, x):
    module = _ffn(mod, x, "gelu", 0.0).eval()
    with torch.no_grad():
        got = {"out": module(x["x"])}
    return {**got, **gradients(module, module, {"x": x["x"]})}  # to x and every weight


def probe_ffn_relu(mod, x):
    with torch.no_grad():
        return {"out": _ffn(mod, x, "relu", 0.0).eval()(x["x"])}


def probe_ffn_dropout_eval(mod, x):
    module = _ffn(mod, x, "gelu", 0.5).eval()
    got = {}
    for key, seed in (("out", 1), ("out2", 2)):
        with torch.random.fork_rng(), torch.no_grad():
            torch.manual_seed(seed)
            got[key] = module(x["x"])
    with torch.no_grad():  # the same module without dropout: a bug elsewhere costs points once
        got["no_dropout"] = _ffn(mod, x, "gelu", 0.0).eval()(x["x"])
    return got


def probe_ffn_dropout_train(mod, x):
    module = _ffn(mod, x, "gelu", P_DROP).train()
    with torch.random.fork_rng(), torch.no_grad():
        torch.manual_seed(0)  # reproducible; the verdict does not depend on which values drop
        out = module(x["x"])
        # the same module without dropout: whether its form is linear2 of something at all
        return {"out": out, "eval_out": module.eval()(x["x"])}


# --------------------------------------------------------------------------- TransformerBlock


class SublayerStandIn(nn.Sequential):
    """The block checks' feed-forward sub-layer: tanh(linear(x)), PyTorch built-ins only."""

    def __init__(self, d_model: int):
        super().__init__(nn.Linear(d_model, d_model), nn.Tanh())

    def forward(self, x):  # FeedForward's parameter name: a block may call self.ffn(x=h)
        # A copy: tanh keeps its output for the backward pass, and a block may add into the
        # sub-layer's output in place (h += x), which FeedForward's last Linear allows.
        return super().forward(x).clone()


class ConstantSublayer(nn.Module):
    """A sub-layer whose output is a fixed tensor, whatever its input. With `heads` it stands
    in for the attention and also returns (all-zero) weights of shape (B, heads, T, T)."""

    def __init__(self, value: torch.Tensor, heads: int | None = None):
        super().__init__()
        self.value, self.heads = value, heads

    def forward(self, *args, **kwargs):
        # called as the block calls the sub-layer it stands for: attn(h, mask=m) or
        # attn(query=h, ...) (MultiHeadAttention's names), ffn(h) or ffn(x=h) (FeedForward's)
        h = args[0] if args else kwargs.get("query", kwargs.get("x"))
        if not isinstance(h, torch.Tensor):
            raise TypeError(f"{type(self).__name__}: expected the sub-layer's input tensor")
        out = self.value.to(h.dtype, copy=True)  # its own copy: a block may add into it in place
        if self.heads is None:
            return out
        B, T = h.shape[:2]
        return out, torch.zeros(B, self.heads, T, T, dtype=h.dtype)


def inputs_block(gen):
    D, H, d_ff = 16, 4, 32
    B, T = _int(gen, 2, 3), _int(gen, 5, 8)
    t = _int(gen, 2, T - 1)
    x = randn(gen, B, T, D)
    x2 = x.clone()
    x2[:, t:] = randn(gen, B, T - t, D, scale=3.0)  # a different future, the same past
    sd = random_weights(gen, block_shapes(D, d_ff))
    return {
        "H": H,
        "weights": sd,
        "stand_in": random_weights(gen, {"0.weight": (D, D), "0.bias": (D,)}),
        "x": x,
        "x2": x2,
        "mask": torch.ones(T, T, dtype=torch.bool).triu(1),
    }


def _block(mod, x, norm_first, activation, dropout):
    """The student's block with the grader's weights; its ffn is the built-in stand-in."""
    D = x["x"].size(-1)
    d_ff = x["weights"]["ffn.linear1.weight"].size(0)
    module = mod.TransformerBlock(
        D, x["H"], d_ff, dropout=dropout, norm_first=norm_first, activation=activation
    )
    load_weights(module, x["weights"])
    stand_in = SublayerStandIn(D)
    stand_in.load_state_dict(x["stand_in"])
    module.ffn = stand_in
    return module


def _call(module, x, mask):
    """(out, weights) of module(x, mask=mask), without a graph."""
    with torch.no_grad():
        result = module(x, mask=mask)
    return pair(result, "TransformerBlock's result", "(x, weights)")


def _run(module, x, mask):
    """_call on a copy of x of its own: a block that adds into its input in place (x += ...)
    does not change the next call's x. The pre-ln check charges that, once (changed-input: its
    gradient run hands the block a leaf, which autograd refuses to change in place), and the
    post-ln check, which watches its first call; the other checks judge what the block
    computes."""
    return _call(module, x.clone(), mask)


def _probe_block(mod, x, norm_first, activation, grads=False):
    """The block's runs on x and x2; with `grads`, also the gradients that reach x and the
    block's weights (probing.gradients)."""
    module = _block(mod, x, norm_first, activation, 0.0).eval()
    out, weights = _run(module, x["x"], x["mask"])
    out2, _ = _run(module, x["x2"], x["mask"])
    got = {"out": out, "weights": weights, "out2": out2}
    if grads:
        got.update(gradients(module, lambda x_: module(x_, mask=x["mask"]), {"x": x["x"]}))
    return got


def probe_pre_ln(mod, x):
    return _probe_block(mod, x, True, "gelu", grads=True)


def probe_post_ln(mod, x):
    """_probe_block's runs, the first on a watched x (probing.kept): Post-LN has no gradient
    run, so this check charges a change of x in place (changed-input), once."""
    module = _block(mod, x, False, "relu", 0.0).eval()
    watched = x["x"].clone()
    got = kept(
        [("x", watched)],
        lambda: dict(zip(("out", "weights"), _call(module, watched, x["mask"]), strict=True)),
    )
    got["out2"], _ = _run(module, x["x2"], x["mask"])
    return got


def probe_block_dropout_eval(mod, x):
    module = _block(mod, x, True, "gelu", 0.3).eval()
    got = {}
    for key, seed in (("out", 1), ("out2", 2)):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            got[key], _ = _run(module, x["x"], x["mask"])
    # The same block without dropout: a bug elsewhere in the block costs points once.
    got["no_dropout"], _ = _run(_block(mod, x, True, "gelu", 0.0).eval(), x["x"], x["mask"])
    return got


def inputs_block_train(gen):
    # D = 8: the judge tries all 2^8 drop patterns of a row. Each run makes one sub-layer
    # output a fixed random tensor and the other zero, so where the block's own dropout acts
    # shows in its output (the attention's and the FFN's own dropouts are not involved).
    # The norms are plain (weight 1, bias 0) and alike, so the judge can accept any wiring of
    # them: where the norms sit is graded by the pre-ln and post-ln checks, not here.
    D, H, d_ff = 8, 2, 16
    B, T = _int(gen, 3, 4), 8
    weights = random_weights(gen, block_shapes(D, d_ff))
    for norm in ("norm1", "norm2"):
        weights[f"{norm}.weight"], weights[f"{norm}.bias"] = torch.ones(D), torch.zeros(D)
    return {
        "H": H,
        "weights": weights,
        "x": randn(gen, B, T, D),
        "attn_out": randn(gen, B, T, D),
        "ffn_out": randn(gen, B, T, D),
    }


def probe_block_dropout_train(mod, x):
    D, H = x["x"].size(-1), x["H"]
    d_ff = x["weights"]["ffn.linear1.weight"].size(0)
    zero = torch.zeros_like(x["x"])
    got = {}
    for seed, (norm_first, active) in enumerate(
        [(True, "attn"), (True, "ffn"), (False, "attn"), (False, "ffn")]
    ):
        module = mod.TransformerBlock(D, H, d_ff, dropout=P_DROP, norm_first=norm_first)
        load_weights(module, x["weights"])
        a, f = (x["attn_out"], zero) if active == "attn" else (zero, x["ffn_out"])
        module.attn, module.ffn = ConstantSublayer(a, heads=H), ConstantSublayer(f)
        key = f"{'pre' if norm_first else 'post'}/{active}"
        module.train()
        with torch.random.fork_rng():
            torch.manual_seed(seed)  # reproducible; the verdict does not depend on the draws
            got[key], _ = _run(module, x["x"], None)
        # the same block without dropout: whether the sub-layer reaches the output at all
        got[f"{key}/eval"], _ = _run(module.eval(), x["x"], None)
    return got
