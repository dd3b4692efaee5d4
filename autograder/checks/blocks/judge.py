"""Judge side of blocks.py's checks: misconceptions, models of wrong computations, verdicts."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core import verdicts
from ...core.check import CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import assert_close, assert_evidence, close, dropout_finding, model, tensor
from ...trusted.multihead import MultiHeadAttention
from . import probe

CHECKS = CheckList("blocks")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- layer_norm


@model
def _ln(x, weight=None, bias=None, eps=1e-5, *, dims=(-1,), correction=0, eps_mode="inside"):
    """The layer norm that a given mistake computes, in float64."""
    x = x.double()
    mean = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, correction=correction)
    scale = {
        "inside": lambda: torch.sqrt(var + eps),
        "outside": lambda: torch.sqrt(var) + eps,  # eps added to the std
        "sqrt-std": lambda: torch.sqrt(torch.sqrt(var + eps)),
        "sqrt-std-outside": lambda: torch.sqrt(torch.sqrt(var) + eps),
    }[eps_mode]()
    y = (x - mean) / scale
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y


def _ln_candidates(case):
    x, w, eps = case["x"], case.get("weight"), case["eps"]

    def lazy(**kw):
        return lambda: _ln_case(case, **kw)

    found = [
        (
            MISTAKES["ln-unbiased-variance"],
            lazy(correction=1),
            {},
        ),  # first: in the basic check it is also
        (
            MISTAKES["ln-unbiased-std-plus-eps"],
            lazy(correction=1, eps_mode="outside"),
            {},
        ),  # within tol of this one
        (MISTAKES["ln-eps-outside-sqrt"], lazy(eps_mode="outside"), {}),
        (MISTAKES["ln-divided-by-sqrt-std"], lazy(eps_mode="sqrt-std"), {}),
        (MISTAKES["ln-divided-by-sqrt-std"], lazy(eps_mode="sqrt-std-outside"), {}),
        (MISTAKES["ln-eps-ignored"], lazy(eps=0.0), {"eps": eps}),
        (MISTAKES["ln-eps-ignored"], lazy(eps=1e-5), {"eps": eps}),
        (MISTAKES["ln-wrong-dim"], lazy(dims=tuple(range(x.dim()))), {}),
    ]
    if x.dim() > 1:
        found.append((MISTAKES["ln-wrong-dim"], lazy(dims=(0,)), {}))
    if w is not None:
        found.append((MISTAKES["ln-affine-ignored"], lazy(weight=None, bias=None), {}))
    return found


def _ln_case(case, **kw):
    """The layer norm of one case with a mistake, in the case's dtype."""
    w, b = case.get("weight"), case.get("bias")
    return _ln(case["x"], **{"weight": w, "bias": b, "eps": case["eps"], **kw}).to(case["x"].dtype)


def _replays_eps_outside(x):
    """eps outside the root (biased variance): charged by layer-norm-eps, passes layer-norm."""
    return {name: _ln_case(case, eps_mode="outside") for name, case in x.items()}


def _replays_unbiased(x):
    """The unbiased variance (eps inside the root): charged by layer-norm, passes
    layer-norm-eps."""
    return {name: _ln_case(case, correction=1) for name, case in x.items()}


def _verdict_ln(got, want, x):
    """Each case against the reference; an output equal to the mistake replayed with it
    (charged by the other layer_norm check) passes."""
    for name, case in x.items():
        what = _ln_what(case)
        y = tensor(got, name, what, shape=case["x"].shape, dtype=case["x"].dtype)
        if close(y, want[name]) or close(y, want[f"replay/{name}"]):
            continue
        assert_close(y, want[name], what, _ln_candidates(case))


def _ln_what(case):
    args = "x" + "".join(f", {k}" for k in ("weight", "bias") if k in case)
    return f"layer_norm({args}, eps={case['eps']:g}) on x of shape {tuple(case['x'].shape)}"


LAYER_NORM = CHECKS.exercise("layer_norm", probe=probe.probe_layer_norm)


@LAYER_NORM.check(
    "layer-norm", inputs=probe.inputs_layer_norm, probe=probe.ln_grads, replays=_replays_eps_outside
)
def verdict_layer_norm(got, want, x):
    """Everything but where eps goes: eps outside the root (with the biased variance) passes
    here, as the layer-norm-eps check charges it (each difference is charged once)."""
    _verdict_ln(got, want, x)
    verdicts.assert_gradients(got, None, "layer_norm")  # to x, weight and bias


@LAYER_NORM.check("layer-norm-eps", inputs=probe.inputs_layer_norm_eps, replays=_replays_unbiased)
def verdict_layer_norm_eps(got, want, x):
    """Where eps goes and which eps is used. The unbiased variance with eps inside the root
    is charged by the check above, so it passes here (each difference is charged once)."""
    _verdict_ln(got, want, x)


# --------------------------------------------------------------------------- FeedForward


@model
def _ffn(x, act):
    sd = x["weights"]
    h = F.linear(x["x"].double(), sd["linear1.weight"].double(), sd["linear1.bias"].double())
    return F.linear(act(h), sd["linear2.weight"].double(), sd["linear2.bias"].double()).float()


ACTS = {
    "gelu": lambda h: F.gelu(h),
    "relu": F.relu,
    "gelu-tanh": lambda h: F.gelu(h, approximate="tanh"),
    "none": lambda h: h,
}


def _ffn_what(x, **kw):
    d_ff, d_model = x["weights"]["linear1.weight"].shape
    return f"FeedForward({d_model}, {d_ff}" + "".join(f", {k}={v!r}" for k, v in kw.items()) + ")"


def _verdict_ffn(got, want, x, activation):
    what = _ffn_what(x, activation=activation)
    out = tensor(got, "out", what, shape=x["x"].shape, dtype=torch.float32)
    other = "relu" if activation == "gelu" else "gelu"
    candidates = [
        (
            MISTAKES["ffn-wrong-activation"],
            lambda: _ffn(x, ACTS[other]),
            {"used": other, "asked": activation},
        ),
        (MISTAKES["ffn-no-activation"], lambda: _ffn(x, ACTS["none"]), {}),
    ]
    if activation == "gelu":
        candidates.insert(0, (MISTAKES["ffn-gelu-tanh"], lambda: _ffn(x, ACTS["gelu-tanh"]), {}))
    assert_close(out, want["out"], what, candidates)


FEED_FORWARD = CHECKS.exercise("FeedForward", probe=probe.probe_ffn_gelu)


@FEED_FORWARD.check("ffn-gelu", inputs=probe.inputs_ffn)
def verdict_ffn_gelu(got, want, x):
    _verdict_ffn(got, want, x, "gelu")
    verdicts.assert_gradients(got, None, _ffn_what(x))  # to x and every weight


@FEED_FORWARD.check("ffn-relu", inputs=probe.inputs_ffn, probe=probe.probe_ffn_relu)
def verdict_ffn_relu(got, want, x):
    _verdict_ffn(got, want, x, "relu")


@FEED_FORWARD.check("ffn-dropout-eval", inputs=probe.inputs_ffn, probe=probe.probe_ffn_dropout_eval)
@no_reference
def verdict_ffn_dropout_eval(got, want, x):
    what = _ffn_what(x, dropout=0.5) + " in eval mode"
    out = tensor(got, "out", what, shape=x["x"].shape, dtype=torch.float32)
    assert_evidence(out, f"The output of {what}", [x["x"]])
    if not torch.equal(out, tensor(got, "out2", what, shape=x["x"].shape)):
        raise Failure(MISTAKES["ffn-dropout-in-eval"])
    same = tensor(got, "no_dropout", what, shape=x["x"].shape)
    assert_close(out, same, what + ", compared with your FeedForward with dropout=0")


def _before_linear2(out, w2, b2):
    """(the hidden vectors linear2 was given, recovered by least squares, as (d_ff, N);
    whether linear2 of them is `out`): linear2's weight has full column rank (d_ff <
    d_model)."""
    rows = (out - b2).reshape(-1, w2.size(0)).T  # (d_model, N)
    hidden = torch.linalg.lstsq(w2, rows).solution  # (d_ff, N)
    rebuilt = (w2 @ hidden).T.reshape(out.shape) + b2
    return hidden, torch.allclose(rebuilt, out, atol=1e-4, rtol=1e-4)


@FEED_FORWARD.check(
    "ffn-dropout-train", inputs=probe.inputs_ffn_train, probe=probe.probe_ffn_dropout_train
)
@no_reference
def verdict_ffn_dropout_train(got, want, x):
    """From the output alone: linear2's weight has full column rank (d_ff < d_model), so the
    hidden vector linear2 was given is recovered by least squares. It must be the dropout of
    gelu(linear1(x)): each value 0 or kept / (1 - p), about p of them 0."""
    p, sd = probe.P_DROP, x["weights"]
    what = _ffn_what(x, dropout=p) + " in training mode"
    out = tensor(got, "out", what, shape=x["x"].shape, dtype=torch.float32).double()
    if not torch.isfinite(out).all():
        raise Failure(MISTAKES["ffn-dropout-misplaced"], why="the output is not finite")
    w2, b2 = sd["linear2.weight"].double(), sd["linear2.bias"].double()
    hidden, linear = _before_linear2(out, w2, b2)
    if not linear:
        evaluated = got.get("eval_out")
        if isinstance(evaluated, torch.Tensor) and evaluated.shape == out.shape:
            if not _before_linear2(evaluated.double(), w2, b2)[1]:
                why = (
                    "neither this output nor the one in eval mode (no dropout) is linear2 of "
                    "any hidden vector, so the feed-forward is not linear2(dropout(activation("
                    "linear1(x)))) (the gelu and relu checks compare its values)"
                )
                raise Failure(MISTAKES["ffn-dropout-misplaced"], why=why)
        why = "the output is not linear2 of any hidden vector: dropout acted after linear2"
        raise Failure(MISTAKES["ffn-dropout-misplaced"], why=why)
    pre = F.linear(x["x"].double(), sd["linear1.weight"].double(), sd["linear1.bias"].double())
    hidden = hidden.T.reshape(pre.shape)
    # Float32 output, float64 recovery: the hidden values carry errors of about 1e-5. The
    # activation is graded by ffn-gelu: the dropout is judged against the one the code used.
    findings = [
        dropout_finding(hidden, ACTS[act](pre), p, tol=2e-4)
        for act in ("gelu", "gelu-tanh", "relu", "none")
    ]
    if None in findings:
        return
    kind, detail = findings[0]
    if kind == "ignored":
        raise Failure(MISTAKES["ffn-dropout-ignored"], p=p)
    raise Failure(
        MISTAKES["ffn-dropout-misplaced"], why="in the hidden layer linear2 received, " + detail
    )


# --------------------------------------------------------------------------- TransformerBlock


@model
def _trusted_block(x, norm_first, activation):
    """The block's sub-layers in float64, from PyTorch built-ins and the trusted attention,
    with the grader's weights: attention, the FFN stand-in, norm1, norm2."""
    sd = x["weights"]
    D = x["x"].size(-1)
    attn = MultiHeadAttention(D, x["H"], bias=False).double().eval()
    attn.load_state_dict({k[5:]: v.double() for k, v in sd.items() if k.startswith("attn.")})
    norms = []
    for name in ("norm1", "norm2"):
        w, b = sd[f"{name}.weight"].double(), sd[f"{name}.bias"].double()
        norms.append(lambda h, w=w, b=b: F.layer_norm(h, (D,), w, b, 1e-5))
    stand_in = x["stand_in"]
    w, b = stand_in["0.weight"].double(), stand_in["0.bias"].double()
    return attn, norms[0], norms[1], lambda h: torch.tanh(F.linear(h, w, b))


@model
def _variant(x, norm_first, activation, variant, inputs="x"):
    """What a block with a given mistake computes, in float64."""
    attn, n1, n2, f = _trusted_block(x, norm_first, activation)
    mask = x["mask"]

    def a(h):
        return attn(h, mask=None if variant.startswith("mask-ignored") else mask)[0]

    h0 = x[inputs].double()
    with torch.no_grad():
        _, out = _wiring(variant, h0, a, f, n1, n2)
    return out.float()


@model
def _wiring(variant, x, a, f, n1, n2):
    if variant in ("pre", "mask-ignored-pre"):
        x = x + a(n1(x))
        return x, x + f(n2(x))
    if variant == "pre-parallel":  # the feed-forward reads the block's input
        h = x + a(n1(x))
        return h, h + f(n2(x))
    if variant == "pre-norms-swapped":
        x = x + a(n2(x))
        return x, x + f(n1(x))
    if variant == "post-norms-swapped":
        x = n2(x + a(x))
        return x, n1(x + f(x))
    if variant in ("post", "mask-ignored"):
        x = n1(x + a(x))
        return x, n2(x + f(x))
    if variant == "pre-no-res-attn":
        x = a(n1(x))
        return x, x + f(n2(x))
    if variant == "pre-no-res-ffn":
        x = x + a(n1(x))
        return x, f(n2(x))
    if variant == "post-no-res-attn":
        x = n1(a(x))
        return x, n2(x + f(x))
    if variant == "post-no-res-ffn":
        x = n1(x + a(x))
        return x, n2(f(x))
    if variant == "norm-twice":
        x = n1(x + a(n1(x)))
        return x, n2(x + f(n2(x)))
    if variant == "residual-from-normed":
        h = n1(x)
        x = h + a(h)
        h = n2(x)
        return x, h + f(h)
    if variant == "post-no-norm2":
        x = n1(x + a(x))
        return x, x + f(x)
    if variant == "post-no-norm1":
        x = x + a(x)
        return x, n2(x + f(x))
    if variant.startswith("pre-only-"):  # one norm for both sub-layers
        n = n1 if variant.endswith("norm1") else n2
        x = x + a(n(x))
        return x, x + f(n(x))
    if variant.startswith("post-only-"):
        n = n1 if variant.endswith("norm1") else n2
        x = n(x + a(x))
        return x, n(x + f(x))
    raise KeyError(variant)


def _block_candidates(x, norm_first, activation):
    def lazy(variant):
        return lambda: _variant(x, norm_first, activation, variant)

    asked = "pre" if norm_first else "post"
    found = [
        (MISTAKES["block-post-ln-for-pre-ln"], lazy("post"), {})
        if norm_first
        else (MISTAKES["block-pre-ln-for-post-ln"], lazy("pre"), {}),
        (
            MISTAKES["block-missing-residual"],
            lazy(f"{asked}-no-res-attn"),
            {"sublayer": "attention"},
        ),
        (
            MISTAKES["block-missing-residual"],
            lazy(f"{asked}-no-res-ffn"),
            {"sublayer": "feed-forward"},
        ),
        (MISTAKES["block-norm-twice"], lazy("norm-twice"), {}),
        (MISTAKES["block-one-norm-for-both"], lazy(f"{asked}-only-norm1"), {"norm": "norm1"}),
        (MISTAKES["block-one-norm-for-both"], lazy(f"{asked}-only-norm2"), {"norm": "norm2"}),
    ]
    found.append((MISTAKES["block-norms-swapped"], lazy(f"{asked}-norms-swapped"), {}))
    if norm_first:
        found.append((MISTAKES["block-ffn-reads-block-input"], lazy("pre-parallel"), {}))
        found.append((MISTAKES["block-residual-from-normed"], lazy("residual-from-normed"), {}))
        found.append((MISTAKES["block-mask-ignored"], lazy("mask-ignored-pre"), {}))
    else:
        found.append((MISTAKES["block-returns-pre-norm"], lazy("post-no-norm2"), {"norm": "norm2"}))
        found.append((MISTAKES["block-returns-pre-norm"], lazy("post-no-norm1"), {"norm": "norm1"}))
        found.append((MISTAKES["block-mask-ignored"], lazy("mask-ignored"), {}))
    return found


def _block_what(x, **kw):
    D, d_ff = x["x"].size(-1), x["weights"]["ffn.linear1.weight"].size(0)
    args = "".join(f", {k}={v}" for k, v in kw.items())
    return f"TransformerBlock({D}, {x['H']}, {d_ff}{args})"


def _verdict_block(got, want, x, norm_first, activation):
    kind = "Pre-LN" if norm_first else "Post-LN"
    what = _block_what(x, norm_first=norm_first) + f" ({kind})"
    B, T, D = x["x"].shape
    out = tensor(got, "out", f"{what}'s output", shape=(B, T, D), dtype=torch.float32)
    weights = tensor(got, "weights", f"{what}'s weights", shape=(B, x["H"], T, T))
    assert_close(out, want["out"], what, _block_candidates(x, norm_first, activation))
    assert_close(weights, want["weights"], f"the attention weights {what} returned")
    out2 = tensor(got, "out2", f"{what}'s output", shape=(B, T, D), dtype=torch.float32)
    assert_close(out2, want["out2"], f"{what} on a second input")


TRANSFORMER_BLOCK = CHECKS.exercise("TransformerBlock", probe=probe.probe_pre_ln)


@TRANSFORMER_BLOCK.check("pre-ln", inputs=probe.inputs_block)
def verdict_pre_ln(got, want, x):
    _verdict_block(got, want, x, True, "gelu")
    # to x and each weight the reference's gradients reach
    verdicts.assert_gradients(got, want, _block_what(x, norm_first=True))


@TRANSFORMER_BLOCK.check("post-ln", inputs=probe.inputs_block, probe=probe.probe_post_ln)
def verdict_post_ln(got, want, x):
    _verdict_block(got, want, x, False, "relu")
    verdicts.assert_kept(got, _block_what(x, norm_first=False))  # x left as it was


@TRANSFORMER_BLOCK.check(
    "block-dropout-eval", inputs=probe.inputs_block, probe=probe.probe_block_dropout_eval
)
@no_reference
def verdict_block_dropout_eval(got, want, x):
    what = _block_what(x, dropout=0.3) + " in eval mode"
    shape = x["x"].shape
    out = tensor(got, "out", what, shape=shape, dtype=torch.float32)
    assert_evidence(out, f"The output of {what}", [x["x"]])
    if not torch.equal(out, tensor(got, "out2", what, shape=shape)):
        raise Failure(MISTAKES["block-dropout-in-eval"])
    same = tensor(got, "no_dropout", what, shape=shape)
    assert_close(out, same, what + ", compared with your block with dropout=0")


def _masks(D):
    """Every drop pattern of a row of D values: (2^D, D), 1 = kept."""
    return ((torch.arange(2**D)[:, None] >> torch.arange(D)) & 1).double()


def _fit_rows(out, base, sub, final, scale, tol):
    """For each row, the drop pattern m that makes final(base + m * sub * scale) equal out,
    trying all 2^D patterns. Returns (rows that fit, best pattern per row)."""
    masks = _masks(out.size(-1))  # (M, D)
    z = base[None] + masks[:, None, :] * (sub * scale)[None]  # (M, N, D)
    err = ((final(z) - out[None]).abs() / (tol * (1 + out.abs()[None]))).amax(dim=-1)  # (M, N)
    best = err.min(dim=0)
    return best.values <= 1, masks[best.indices]


@TRANSFORMER_BLOCK.check(
    "block-dropout-train", inputs=probe.inputs_block_train, probe=probe.probe_block_dropout_train
)
@no_reference
def verdict_block_dropout_train(got, want, x):
    """Each run makes one sub-layer output a fixed tensor s and the other 0, so the block
    computes x + drop(s) (Pre-LN), norm(norm(x + drop(s))) (Post-LN, attention) or
    norm(norm(x) + drop(s)) (Post-LN, FFN), the norms being plain LayerNorms. The judge finds,
    row by row, the drop pattern that explains the output, under any of these wirings (which
    wiring is right is graded by the pre-ln and post-ln checks); none means dropout acted
    elsewhere. Then about p of the values must have been dropped, counted over the runs
    where the sub-layer's output reaches the block's at all: a run that keeps none of it
    (every value "dropped") and whose output in eval mode is the same is a block that loses
    that sub-layer with or without dropout, a wiring the pre-ln and post-ln checks charge (a
    residual taken from the block's input, say); at p = 0.25 a correct block never drops
    them all."""
    p = probe.P_DROP
    D = x["x"].size(-1)

    def norm(h):
        return F.layer_norm(h, (D,), None, None, 1e-5)

    xs = x["x"].double().reshape(-1, D)
    wirings = [
        (base, final)
        for base in (xs, norm(xs), torch.zeros_like(xs))  # 0: a missing residual
        for final in (lambda z: z, norm, lambda z: norm(norm(z)))
    ]
    kept = []
    for key in ("pre/attn", "pre/ffn", "post/attn", "post/ffn"):
        layout, active = key.split("/")
        kind = "Pre-LN" if layout == "pre" else "Post-LN"
        sublayer = "attention" if active == "attn" else "feed-forward"
        what = _block_what(x, dropout=p, norm_first=layout == "pre") + " in training mode"
        out = tensor(got, key, what, shape=x["x"].shape, dtype=torch.float32).double()
        out = out.reshape(-1, D)
        sub = x["attn_out" if active == "attn" else "ffn_out"].double().reshape(-1, D)
        details = {"p": p, "kind": kind, "sublayer": sublayer}
        if not torch.isfinite(out).all():
            raise Failure(
                MISTAKES["block-dropout-misplaced"], why="the output is not finite", **details
            )
        for base, final in wirings:
            fits, pattern = _fit_rows(out, base, sub, final, 1 / (1 - p), tol=1e-4)
            if fits.all():
                evaluated = got.get(f"{key}/eval")
                lost = (
                    not bool(pattern[sub.abs() > 1e-3].any())
                    and isinstance(evaluated, torch.Tensor)
                    and evaluated.shape == x["x"].shape
                    and close(evaluated.double().reshape(-1, D), out, {"atol": 1e-5, "rtol": 1e-5})
                )
                if not lost:
                    kept.append(pattern[sub.abs() > 1e-3])
                break
        else:
            tol = {"atol": 1e-4, "rtol": 1e-4}
            if any(close(out, final(base + sub), tol) for base, final in wirings):
                raise Failure(MISTAKES["block-dropout-ignored"], **details)
            if any(_fit_rows(out, b, sub, f, 1.0, tol=1e-4)[0].all() for b, f in wirings):
                why = "the values kept were not divided by 1 - p"
            else:
                why = "no pattern of dropped values of the sub-layer's output explains it"
            raise Failure(MISTAKES["block-dropout-misplaced"], why=why, **details)
    every = {"p": p, "kind": "Pre-LN and Post-LN", "sublayer": "every"}
    if not kept:  # no sub-layer's output reaches the block's output in any run
        why = "none of the sub-layers' outputs reaches the block's output, so no dropout shows"
        raise Failure(MISTAKES["block-dropout-misplaced"], why=why, **every)
    kept = torch.cat(kept)
    dropped = 1 - float(kept.mean())
    if abs(dropped - p) > 5 * (p * (1 - p) / kept.numel()) ** 0.5:
        why = f"{dropped:.0%} of {kept.numel()} values were dropped, but p = {p:g}"
        raise Failure(MISTAKES["block-dropout-misplaced"], why=why, **every)
