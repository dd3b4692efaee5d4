"""Checks for multihead.py: split_heads, merge_heads, MultiHeadAttention and the W_O diagnostic.

While multihead is graded, the student's `from .attention import scaled_dot_product_attention`
gets the trusted attention (autograder/trusted/attention.py): a bug in attention.py costs
points in attention only.
"""

from __future__ import annotations

import math

import torch

from ..core import Check, Failure, misconception
from ..diagnosis import infer_scale, name_scale
from ..dispatch import MATMUL_OPS, OpCounter
from ..verdicts import assert_close, close, tensor
from ._common import pair, randn
from .attention.judge import NO_SCALING

MODULE = "multihead"
ORDER = 30

# --------------------------------------------------------------------------- misconceptions

SPLIT_NO_TRANSPOSE = misconception(
    "split-view-no-transpose",
    "Your split_heads reshapes (view) the features without moving the head axis forward "
    "with a transpose: head h does not own features h*d_k:(h+1)*d_k of every position, it "
    "gets a slab of consecutive positions instead.",
    "Cut the LAST axis: x.reshape(B, T, H, d_k), then .transpose(1, 2) -> (B, H, T, d_k). "
    "A straight view to (B, H, T, d_k) has the right shape and the wrong numbers.",
)
SPLIT_INTERLEAVED = misconception(
    "split-interleaved",
    "Your split_heads gives head h every H-th feature (h, h+H, h+2H, ...) instead of the "
    "block h*d_k:(h+1)*d_k.",
    "Reshape the last axis as (H, d_k), not (d_k, H): x.reshape(B, T, H, d_k).transpose(1, 2).",
)
MERGE_NO_TRANSPOSE = misconception(
    "merge-view-no-transpose",
    "Your merge_heads reshapes (B, H, T, d_k) straight to (B, T, D) without a transpose: "
    "positions and heads get mixed up.",
    "Bring the time axis back first: x.transpose(1, 2).reshape(B, T, H * d_k) "
    "(reshape, not view: a transposed tensor is not contiguous).",
)
MERGE_INTERLEAVED = misconception(
    "merge-interleaved",
    "Your merge_heads interleaves the heads feature by feature instead of putting head h "
    "in the block h*d_k:(h+1)*d_k.",
    "x.transpose(1, 2) gives (B, T, H, d_k); reshape that, without permuting d_k before H.",
)
SPLIT_NO_ERROR = misconception(
    "split-no-valueerror",
    "split_heads(x with D = {D}, num_heads={H}) should raise ValueError (D is not divisible "
    "by H), but it {got}.",
    "Check first: if D % num_heads != 0: raise ValueError(f'd_model = {{D}} is not divisible "
    "by num_heads = {{num_heads}}').",
)
SPLIT_ERROR_UNCLEAR = misconception(
    "split-error-unclear",
    "split_heads raised ValueError, but its message ({text!r}) does not say what is wrong.",
    "Say it in the message: D is not divisible by num_heads, with both numbers, so a student "
    "who passes d_model=10, num_heads=3 reads why.",
)
WEIGHTS_AVERAGED = misconception(
    "mha-weights-averaged",
    "The weights you returned have shape {got}: averaged over the heads (as "
    "nn.MultiheadAttention does by default). This kit returns one map per head, (B, H, L, S).",
    "Return the weights of every head, as scaled_dot_product_attention gives them.",
)
MHA_SCALE = misconception(
    "mha-wrong-scale",
    "Inside multi-head attention your scores were divided by {used}, but each head's "
    "queries have d_k = {d_k} features, so the divisor is √d_k = {expected:g}.",
    "The scale belongs to one head: √d_k with d_k = D // H, not √d_model. "
    "scaled_dot_product_attention(q, k, v, mask) on the split tensors does this for you.",
)
NO_WO = misconception(
    "mha-no-output-projection",
    "Your multi-head attention never applies w_o: the output is the concatenated heads. "
    "Output feature slice h then only ever sees head h.",
    "Finish with self.w_o(merge_heads(heads)): W_O mixes the heads into every output feature.",
)
WO_BEFORE_MERGE = misconception(
    "mha-wo-before-merge",
    "You applied w_o before the heads were merged (to the values, before attention): each "
    "output slice h still comes from head h's attention only, so W_O mixes nothing.",
    "Order: project q, k, v with w_q, w_k, w_v; attend; merge_heads; then self.w_o(...).",
)
WO_PER_HEAD = misconception(
    "mha-wo-per-head",
    "You applied W_O to each head separately (its diagonal block only): every output slice "
    "depends on one head only, so the heads are never mixed.",
    "Apply the whole W_O to the merged (B, L, D) tensor: self.w_o(merge_heads(heads)).",
)
WO_NO_MIXING = misconception(
    "wo-no-mixing",
    "With a random W_O, changing head {head}'s queries changed output features "
    "{changed} only: your output does not mix the heads.",
    "W_O acts on the merged tensor (all heads side by side): self.w_o(merge_heads(heads)).",
)
WO_NOT_SEPARATE = misconception(
    "wo-identity-mixes",
    "With W_O = identity, changing head {head}'s queries should change output features "
    "{expected} only (head {head}'s slice), but it changed {changed}.",
    "With W_O = I the output is just the merged heads: head h must land in features "
    "h*d_k:(h+1)*d_k. Check split_heads / merge_heads and where w_o is applied.",
)
VALUE_DEFAULT = misconception(
    "mha-value-defaults-to-query",
    "forward(query, key) with value omitted should use value = key, but yours used the query.",
    "key = query if key is None else key; then value = key if value is None else value.",
)
KEY_DEFAULT = misconception(
    "mha-defaults-not-self-attention",
    "forward(x) should equal forward(x, x, x) (self-attention), but it does not.",
    "key defaults to query and value to key: `key = query if key is None else key`.",
)
LOOP_OVER_HEADS = misconception(
    "mha-loop-over-heads",
    "Your forward runs a Python loop over the heads: with H = 2 it made {mm2} matrix "
    "products ({ops2} tensor ops in all), with H = 8 it made {mm8} ({ops8}). The work should "
    "not depend on H.",
    "Keep the heads as a batch axis: q, k, v of shape (B, H, T, d_k) go through ONE batched "
    "matmul. One big kernel keeps the hardware busy; H small ones pay the Python and launch "
    "overhead H times and each is too small to use the hardware well.",
)
DROPOUT_IN_EVAL = misconception(
    "mha-dropout-in-eval",
    "In eval mode, your output with dropout=0.5 differs from the output with dropout=0: "
    "dropout must act in training mode only.",
    "Use self.dropout (an nn.Dropout, the identity after model.eval()) rather than "
    "F.dropout(..., training=True) or your own random mask.",
)
DROPOUT_IGNORED = misconception(
    "mha-dropout-ignored",
    "In training mode with dropout=0.5, no attention weight was dropped.",
    "Apply self.dropout to the attention weights before multiplying them with v.",
)
DROPOUT_NOT_ON_WEIGHTS = misconception(
    "mha-dropout-not-on-weights",
    "In training mode your output is not what the returned weights give (weights @ v, merged, "
    "w_o): dropout acted somewhere else, or you returned the weights from before dropout.",
    "weights = self.dropout(weights); heads = weights @ v; return the same `weights` you used.",
)
DROPOUT_NOT_RESCALED = misconception(
    "mha-dropout-not-rescaled",
    "Your dropped-out weights are not rescaled: the kept ones should be divided by (1 - p).",
    "Use nn.Dropout (self.dropout), which zeroes with probability p and scales the rest "
    "by 1/(1 - p), so the expected weights are unchanged.",
)

# --------------------------------------------------------------------------- trusted models


def _weights(gen, D, bias=False, scale=1.0):
    """A state_dict for MultiHeadAttention(D, H, bias=bias): drawn from gen."""
    state = {}
    for name in ("w_q", "w_k", "w_v", "w_o"):
        state[f"{name}.weight"] = randn(gen, D, D, scale=scale / math.sqrt(D))
        if bias:
            state[f"{name}.bias"] = randn(gen, D, scale=0.1)
    return state


def _linear(x, state, name):
    out = x.double() @ state[f"{name}.weight"].double().T
    if f"{name}.bias" in state:
        out = out + state[f"{name}.bias"].double()
    return out


def _split(x, H, how="ok"):
    B, T, D = x.shape
    if how == "no-transpose":
        return x.reshape(B, H, T, D // H)
    if how == "interleaved":
        return x.reshape(B, T, D // H, H).permute(0, 3, 1, 2)
    return x.reshape(B, T, H, D // H).transpose(1, 2)


def _merge(x, how="ok"):
    B, H, T, d_k = x.shape
    if how == "no-transpose":
        return x.reshape(B, T, H * d_k)
    if how == "interleaved":
        return x.permute(0, 2, 3, 1).reshape(B, T, H * d_k)
    return x.transpose(1, 2).reshape(B, T, H * d_k)


def _mha(x, *, split="ok", merge="ok", scale=None, wo="ok", value_default="key"):
    """Multi-head attention in float64, with one named mistake: (out, weights)."""
    state, H = x["state"], x["H"]
    query = x["query"]
    key = x.get("key", query)
    value = x.get("value", key if value_default == "key" else query)
    v_in = _linear(value, state, "w_v")
    if wo == "values":
        v_in = _linear(v_in, state, "w_o")
    q = _split(_linear(query, state, "w_q"), H, split)
    k = _split(_linear(key, state, "w_k"), H, split)
    v = _split(v_in, H, split)
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale)
    mask = x.get("mask")
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if mask is not None:
        weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    merged = _merge(weights @ v, merge)
    if wo in ("none", "values"):
        return merged, weights
    w_o = state["w_o.weight"].double()
    if wo == "per-head":
        D = w_o.size(0)
        blocks = torch.block_diag(*[torch.ones(d_k, d_k, dtype=torch.float64)] * H)
        w_o = w_o * blocks[:D, :D]
    out = merged @ w_o.T
    if "w_o.bias" in state:
        out = out + state["w_o.bias"].double()
    return out, weights


def _candidates(x, which, like):
    """(misconception, that mistake's output, details), cast to the student's dtype."""
    i = 0 if which == "out" else 1

    def lazy(**kw):
        return lambda: _mha(x, **kw)[i].to(like.dtype)

    D = x["query"].size(-1)
    found = [
        (SPLIT_NO_TRANSPOSE, lazy(split="no-transpose"), {}),
        (SPLIT_INTERLEAVED, lazy(split="interleaved"), {}),
        (MHA_SCALE, lazy(scale=math.sqrt(D)), _scale_details(x, math.sqrt(D))),
        (NO_SCALING, lazy(scale=1.0), {}),
    ]
    if which == "out":
        found += [
            (MERGE_NO_TRANSPOSE, lazy(merge="no-transpose"), {}),
            (MERGE_INTERLEAVED, lazy(merge="interleaved"), {}),
            (NO_WO, lazy(wo="none"), {}),
            (WO_BEFORE_MERGE, lazy(wo="values"), {}),
            (WO_PER_HEAD, lazy(wo="per-head"), {}),
        ]
    return found


def _scale_details(x, c):
    D, H = x["query"].size(-1), x["H"]
    d_k = D // H
    used = name_scale(c, {"d_k": d_k, "d_model": D})
    return {"used": used, "expected": math.sqrt(d_k), "d_k": d_k}


def _scale_failure(x, weights):
    """If the weights are softmax(q_h k_hᵀ / c) with c ≠ √d_k: the Failure naming c."""
    state, H = x["state"], x["H"]
    key = x.get("key", x["query"])
    q = _split(_linear(x["query"], state, "w_q"), H)
    k = _split(_linear(key, state, "w_k"), H)
    c = infer_scale(q, k, weights, x.get("mask"))
    d_k = q.size(-1)
    if c is None or math.isclose(c, math.sqrt(d_k), rel_tol=1e-3):
        return None
    if math.isclose(c, 1.0, rel_tol=1e-3):
        return Failure(NO_SCALING)
    return Failure(MHA_SCALE, **_scale_details(x, c))


def _compare(got, want, x, prefix=""):
    """Weights first (they say more about a mistake), then the output."""
    w_want, o_want = want[prefix + "weights"], want[prefix + "out"]
    value = got.get(prefix + "weights")
    if type(value) is torch.Tensor and value.dim() == 3 and value.shape != w_want.shape:
        raise Failure(WEIGHTS_AVERAGED, got=tuple(value.shape))
    weights = tensor(got, prefix + "weights", "the weights", shape=w_want.shape)
    out = tensor(got, prefix + "out", "the output", shape=o_want.shape)
    if not close(weights, w_want):
        failure = _scale_failure(x, weights)
        if failure:
            raise failure
    assert_close(weights, w_want, "the weights", _candidates(x, "weights", weights))
    assert_close(out, o_want, "the output", _candidates(x, "out", out))


# --------------------------------------------------------------------------- probes


def _model(mod, x, dropout=0.0):
    bias = "w_q.bias" in x["state"]
    model = mod.MultiHeadAttention(x["query"].size(-1), x["H"], dropout=dropout, bias=bias)
    model.load_state_dict(x["state"])
    return model.to(x["query"].device).eval()


def _call(model, *args, **kwargs):
    with torch.no_grad():
        result = model(*args, **kwargs)
    out, weights = pair(result, "MultiHeadAttention's result")
    return {"out": out, "weights": weights}


def probe_mha(mod, x):
    model = _model(mod, x)
    return _call(model, x["query"], x.get("key"), x.get("value"), mask=x.get("mask"))


# --------------------------------------------------------------------------- split / merge

SPLIT_CASES = ((2, 3, 12, 3), (2, 4, 12, 4), (1, 5, 8, 1))  # (B, T, D, H)


def inputs_split(gen):
    return {f"x{i}": randn(gen, B, T, D) for i, (B, T, D, _) in enumerate(SPLIT_CASES)}


def probe_split(mod, x):
    return {f"x{i}": mod.split_heads(x[f"x{i}"], H) for i, (_, _, _, H) in enumerate(SPLIT_CASES)}


def verdict_split(got, want, x):
    for i, (B, T, D, H) in enumerate(SPLIT_CASES):
        what = f"split_heads(x of shape {(B, T, D)}, {H})"
        value = got.get(f"x{i}")
        if type(value) is torch.Tensor and tuple(value.shape) == (B, T, H, D // H) and T != H:
            raise Failure(SPLIT_NO_TRANSPOSE)
        value = tensor(got, f"x{i}", what, shape=(B, H, T, D // H))
        xi = x[f"x{i}"]
        assert_close(
            value,
            want[f"x{i}"],
            what,
            [
                (SPLIT_NO_TRANSPOSE, _split(xi, H, "no-transpose"), {}),
                (SPLIT_INTERLEAVED, _split(xi, H, "interleaved"), {}),
            ],
        )


MERGE_CASES = ((2, 3, 4, 4), (2, 4, 3, 2))  # (B, H, T, d_k)


def inputs_merge(gen):
    x = {f"x{i}": randn(gen, *shape) for i, shape in enumerate(MERGE_CASES)}
    x["round"] = randn(gen, 2, 5, 12)
    return x


def probe_merge(mod, x):
    got = {f"x{i}": mod.merge_heads(x[f"x{i}"]) for i in range(len(MERGE_CASES))}
    got["round"] = mod.merge_heads(mod.split_heads(x["round"], 3))
    return got


def verdict_merge(got, want, x):
    for i, (B, H, T, d_k) in enumerate(MERGE_CASES):
        what = f"merge_heads(x of shape {(B, H, T, d_k)})"
        value = tensor(got, f"x{i}", what, shape=(B, T, H * d_k))
        xi = x[f"x{i}"]
        assert_close(
            value,
            want[f"x{i}"],
            what,
            [
                (MERGE_NO_TRANSPOSE, _merge(xi, "no-transpose"), {}),
                (MERGE_INTERLEAVED, _merge(xi, "interleaved"), {}),
            ],
        )
    value = tensor(got, "round", "merge_heads(split_heads(x, 3))", shape=(2, 5, 12))
    assert_close(value, x["round"], "merge_heads(split_heads(x, 3)), which should be x")


def inputs_none(gen):
    return {"x": randn(gen, 1, 2, 10)}


def probe_split_error(mod, x):
    try:
        mod.split_heads(x["x"], 3)
    except ValueError as e:
        return {"outcome": "ValueError", "text": str(e)}
    except NotImplementedError:
        raise
    except Exception as e:  # the wrong exception is a finding, not a crash
        return {"outcome": f"raised {type(e).__name__}", "text": str(e)}
    return {"outcome": "returned a tensor", "text": ""}


def verdict_split_error(got, want, x):
    if got.get("outcome") != "ValueError":
        raise Failure(SPLIT_NO_ERROR, D=10, H=3, got=got.get("outcome"))
    text = str(got.get("text", ""))
    if "divisib" not in text.lower() and not ("10" in text and "3" in text):
        raise Failure(SPLIT_ERROR_UNCLEAR, text=text)


# --------------------------------------------------------------------------- MultiHeadAttention


def _mha_inputs(gen, B, L, S, D, H, *, cross=True, bias=False, scale=1.0):
    x = {"H": H, "state": _weights(gen, D, bias=bias), "query": randn(gen, B, L, D, scale=scale)}
    if cross:
        x["key"] = randn(gen, B, S, D, scale=scale)
        x["value"] = randn(gen, B, S, D)
    return x


def inputs_self(gen):
    return _mha_inputs(gen, 2, 5, 5, 16, 4, cross=False)


def inputs_cross_mask(gen):
    x = _mha_inputs(gen, 2, 4, 6, 16, 4)
    mask = torch.rand(4, 6, generator=gen) < 0.4
    mask[torch.arange(4), torch.randint(6, (4,), generator=gen)] = False
    mask[2] = True  # a query with nothing to attend to: zero weights, no NaN
    x["mask"] = mask
    return x


def inputs_padding(gen):
    x = _mha_inputs(gen, 2, 6, 6, 16, 2, cross=False)
    x["mask"] = (torch.arange(6) >= torch.tensor([6, 3])[:, None])[:, None, None, :]
    return x


def inputs_bias(gen):
    return _mha_inputs(gen, 2, 3, 5, 12, 3, bias=True)


def inputs_scale(gen):
    # Small inputs: no weight saturates, so the weights reveal the divisor.
    return _mha_inputs(gen, 2, 5, 5, 32, 4, cross=False, scale=0.5)


def verdict_mha(got, want, x):
    _compare(got, want, x)


def verdict_scale(got, want, x):
    weights = got.get("weights")
    if type(weights) is torch.Tensor and weights.shape == want["weights"].shape:
        failure = _scale_failure(x, weights)
        if failure:
            raise failure
    _compare(got, want, x)


def inputs_defaults(gen):
    x = _mha_inputs(gen, 2, 5, 5, 16, 4, cross=False)
    x["memory"] = randn(gen, 2, 5, 16)
    return x


def probe_defaults(mod, x):
    model = _model(mod, x)
    q, m = x["query"], x["memory"]
    got = {}
    for tag, args in (("self", (q,)), ("self3", (q, q, q)), ("kv", (q, m)), ("kv3", (q, m, m))):
        got.update({f"{tag}/{k}": v for k, v in _call(model, *args).items()})
    return got


def verdict_defaults(got, want, x):
    for tag in ("self", "self3", "kv", "kv3"):
        weights = got.get(f"{tag}/weights")
        if type(weights) is torch.Tensor and weights.dim() == 3:
            raise Failure(WEIGHTS_AVERAGED, got=tuple(weights.shape))
        for name in ("out", "weights"):
            tensor(got, f"{tag}/{name}", "the output", shape=want[f"{tag}/{name}"].shape)
    if not close(got["self/out"], got["self3/out"]):
        raise Failure(KEY_DEFAULT)
    if not close(got["kv/out"], got["kv3/out"]):
        wrong = {**x, "key": x["memory"], "value": x["query"]}
        if close(got["kv/out"], _mha(wrong)[0].to(got["kv/out"].dtype)):
            raise Failure(VALUE_DEFAULT)
        assert_close(got["kv/out"], want["kv/out"], "forward(query, key) with value omitted")
    _compare(got, want, {**x, "key": x["memory"], "value": x["memory"]}, prefix="kv3/")


# --------------------------------------------------------------------------- the W_O diagnostic

WO_D, WO_H = 16, 4


def inputs_wo(gen):
    x = {"H": WO_H, "state": _weights(gen, WO_D), "query": randn(gen, 1, 6, WO_D)}
    x["delta"] = randn(gen, WO_D, WO_D, scale=1.0)  # added to one head's rows of w_q
    return x


def probe_wo(mod, x):
    """The output with W_O = I and with a random W_O, and after changing one head's queries."""
    d_k = WO_D // WO_H
    got = {}
    for tag, w_o in (("identity", torch.eye(WO_D)), ("random", x["state"]["w_o.weight"])):
        state = {**x["state"], "w_o.weight": w_o.to(x["query"].device)}
        got[f"{tag}/base"] = _call(_model(mod, {**x, "state": state}), x["query"])["out"]
        for h in range(WO_H):
            w_q = state["w_q.weight"].clone()
            rows = slice(h * d_k, (h + 1) * d_k)
            w_q[rows] += x["delta"][rows]
            changed = _model(mod, {**x, "state": {**state, "w_q.weight": w_q}})
            got[f"{tag}/h{h}"] = _call(changed, x["query"])["out"]
    return got


def _slices_changed(got, tag, h):
    """Which output feature slices (one per head) changed when head h's queries changed."""
    d_k = WO_D // WO_H
    base = tensor(got, f"{tag}/base", "the output", shape=(1, 6, WO_D))
    after = tensor(got, f"{tag}/h{h}", "the output", shape=(1, 6, WO_D))
    diff = (after - base).abs().amax(dim=(0, 1))
    return [j for j in range(WO_H) if diff[j * d_k : (j + 1) * d_k].max() > 1e-4]


def _feature_text(heads):
    d_k = WO_D // WO_H
    return ", ".join(f"{j * d_k}:{(j + 1) * d_k}" for j in heads) or "none"


def verdict_wo(got, want, x):
    random_state = x["state"]
    for h in range(WO_H):
        changed = _slices_changed(got, "random", h)
        if changed != list(range(WO_H)):
            out = got["random/base"]
            for mistake, output, _ in _candidates({**x, "state": random_state}, "out", out):
                if mistake in (NO_WO, WO_BEFORE_MERGE, WO_PER_HEAD) and close(out, output()):
                    raise Failure(mistake)
            raise Failure(WO_NO_MIXING, head=h, changed=_feature_text(changed))
    for h in range(WO_H):
        changed = _slices_changed(got, "identity", h)
        if changed != [h]:
            raise Failure(
                WO_NOT_SEPARATE,
                head=h,
                expected=_feature_text([h]),
                changed=_feature_text(changed),
            )
    x_random = {**x, "state": random_state}
    assert_close(
        got["random/base"],
        want["random/base"],
        "the output",
        _candidates(x_random, "out", got["random/base"]),
    )


# --------------------------------------------------------------------------- vectorisation


def inputs_vector(gen):
    return {"query": randn(gen, 2, 6, 32)}


def probe_vector(mod, x):
    got = {}
    for H in (2, 8):
        model = mod.MultiHeadAttention(32, H).to(x["query"].device).eval()
        with torch.no_grad(), OpCounter() as ops:
            model(x["query"])
        got[f"mm{H}"], got[f"ops{H}"] = ops.count(*MATMUL_OPS), ops.count()
    return got


def verdict_vector(got, want, x):
    counts = {k: int(got.get(k, 0)) for k in ("mm2", "mm8", "ops2", "ops8")}
    if counts["mm8"] > counts["mm2"] or counts["ops8"] > counts["ops2"]:
        raise Failure(LOOP_OVER_HEADS, **counts)


# --------------------------------------------------------------------------- dropout

P_DROP = 0.5


def inputs_dropout(gen):
    return _mha_inputs(gen, 2, 6, 6, 16, 4, cross=False)


def probe_dropout(mod, x):
    q = x["query"]
    got = {f"p0/{k}": v for k, v in _call(_model(mod, x), q).items()}
    model = _model(mod, x, dropout=P_DROP)
    got.update({f"eval/{k}": v for k, v in _call(model, q).items()})
    model.train()
    torch.manual_seed(0)  # reproducible; the verdict does not depend on which weights drop
    got.update({f"train/{k}": v for k, v in _call(model, q).items()})
    return got


def verdict_dropout(got, want, x):
    # Without dropout first: a mistake elsewhere is named as itself, not as a dropout one.
    _compare(got, want, x, prefix="p0/")
    shapes = {"out": want["p0/out"].shape, "weights": want["p0/weights"].shape}
    t = {
        f"{tag}/{n}": tensor(got, f"{tag}/{n}", f"the {n} ({tag})", shape=shapes[n])
        for tag in ("p0", "eval", "train")
        for n in ("out", "weights")
    }
    if not close(t["eval/out"], t["p0/out"]) or not close(t["eval/weights"], t["p0/weights"]):
        raise Failure(DROPOUT_IN_EVAL)
    w0, w = t["p0/weights"], t["train/weights"]
    if close(w, w0):
        if close(t["train/out"], t["p0/out"]):
            raise Failure(DROPOUT_IGNORED)
        raise Failure(DROPOUT_NOT_ON_WEIGHTS)
    kept = w != 0
    if not kept.all() and close(w[kept], w0[kept]):
        raise Failure(DROPOUT_NOT_RESCALED)
    assert_close(
        w,
        torch.where(kept, w0 / (1 - P_DROP), 0.0),
        "the training-mode weights (each either 0 or w / (1 - p))",
    )
    state, H = x["state"], x["H"]
    v = _split(_linear(x["query"], state, "w_v"), H)
    expected = (_merge(w.double() @ v) @ state["w_o.weight"].double().T).to(w.dtype)
    if not close(t["train/out"], expected):
        raise Failure(DROPOUT_NOT_ON_WEIGHTS)


CHECKS = [
    Check(
        MODULE,
        "split",
        "split_heads: (B, T, D) -> (B, H, T, d_k), head h owns features h*d_k:(h+1)*d_k",
        2,
        inputs_split,
        probe_split,
        verdict_split,
        "split_heads",
    ),
    Check(
        MODULE,
        "merge",
        "merge_heads inverts split_heads",
        2,
        inputs_merge,
        probe_merge,
        verdict_merge,
        "merge_heads",
    ),
    Check(
        MODULE,
        "split-error",
        "split_heads: D not divisible by H raises ValueError saying so",
        1,
        inputs_none,
        probe_split_error,
        verdict_split_error,
        "split_heads",
    ),
    Check(
        MODULE,
        "self-attention",
        "MultiHeadAttention matches the reference (self-attention, weights loaded)",
        3,
        inputs_self,
        probe_mha,
        verdict_mha,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "cross-mask",
        "cross-attention (L ≠ S) with an (L, S) mask and a fully blocked row",
        2,
        inputs_cross_mask,
        probe_mha,
        verdict_mha,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "padding-mask",
        "a (B, 1, 1, S) padding mask broadcasts over heads and queries",
        1,
        inputs_padding,
        probe_mha,
        verdict_mha,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "defaults",
        "key defaults to query, value to key",
        1,
        inputs_defaults,
        probe_defaults,
        verdict_defaults,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "scale",
        "inside each head the scores are scaled by 1/√d_k (d_k = D // H)",
        2,
        inputs_scale,
        probe_mha,
        verdict_scale,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "bias",
        "with bias=True the projections' biases are used",
        1,
        inputs_bias,
        probe_mha,
        verdict_mha,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "w-o",
        "W_O mixes the heads (W_O = I keeps them apart, a random W_O mixes them)",
        2,
        inputs_wo,
        probe_wo,
        verdict_wo,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "vectorised",
        "no Python loop over heads (matrix products counted for H = 2 and H = 8)",
        2,
        inputs_vector,
        probe_vector,
        verdict_vector,
        "MultiHeadAttention",
    ),
    Check(
        MODULE,
        "dropout",
        "dropout acts on the attention weights, in training mode only",
        2,
        inputs_dropout,
        probe_dropout,
        verdict_dropout,
        "MultiHeadAttention",
    ),
]
