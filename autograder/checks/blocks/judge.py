"""Judge side of blocks.py's checks: misconceptions, models of wrong computations, verdicts."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ...core import CheckList, Failure, Misconceptions, no_reference
from ...trusted.multihead import MultiHeadAttention
from ...verdicts import assert_close, close, dropout_finding, model, tensor
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("blocks")

# --------------------------------------------------------------------------- misconceptions

LN_UNBIASED = misconception(
    "ln-unbiased-variance",
    "{what}: you used the unbiased variance (divided by D - 1); LayerNorm divides by D.",
    (
        "LayerNorm standardises each vector with the statistics of its own D features: the "
        "population variance, the mean of the squared deviations from the mean, which "
        "divides by D. The unbiased variance divides by D - 1; it estimates the variance of "
        "a larger population, which is not the question here.",
        "Compute the variance as the mean of the squared deviations over the last dimension, "
        "or pass unbiased=False (correction=0) to Tensor.var; keep the reduced dimension "
        "with keepdim=True.",
        "x.var(dim=-1) divides by D - 1 by default: use ((x - mean) ** 2).mean(dim=-1, "
        "keepdim=True) or x.var(dim=-1, unbiased=False, keepdim=True).",
    ),
)
LN_EPS_OUTSIDE = misconception(
    "ln-eps-outside-sqrt",
    "{what}: you added eps outside the square root, (x - mean) / (sqrt(var) + eps); "
    "LayerNorm computes (x - mean) / sqrt(var + eps). They differ when the variance is small.",
    (
        "eps keeps the division safe when a vector's features are nearly all equal (variance "
        "close to 0). It belongs to the variance, under the square root; added to the "
        "standard deviation it changes the result in exactly those small-variance cases.",
        "Add eps to the variance, then take torch.sqrt (or multiply by torch.rsqrt); do not "
        "add it after the root.",
        "Divide (x - mean) by torch.sqrt(var + eps), as nn.LayerNorm does, not by "
        "torch.sqrt(var) + eps.",
    ),
)
LN_EPS_IGNORED = misconception(
    "ln-eps-ignored",
    "{what}: your result does not use the eps it was given (eps = {eps:g}).",
    (
        "The caller chooses eps; a layer that ignores it is not the layer they asked for, "
        "and the difference shows most when the variance is tiny.",
        "Use the eps argument of layer_norm, added to the variance under the square root.",
        "torch.sqrt(var + eps) with the eps you were given; do not hard-code 1e-5 or leave it out.",
    ),
)
LN_WRONG_DIM = misconception(
    "ln-wrong-dim",
    "{what}: you normalised over the wrong dimension(s); LayerNorm normalises each vector "
    "over its own last dimension (the D features).",
    (
        "Layer normalisation treats each token's vector on its own: its D features get mean "
        "0 and variance 1, independently of the other tokens and of the other examples in "
        "the batch.",
        "Reduce over the last dimension only (dim=-1), for the mean and for the variance, "
        "and keep it (keepdim=True) so that the result broadcasts against x.",
        "mean and variance with dim=-1, keepdim=True (not dim=0, which is BatchNorm's idea, "
        "and not over the whole tensor).",
    ),
)
LN_AFFINE_IGNORED = misconception(
    "ln-affine-ignored",
    "{what}: weight and bias were not applied.",
    (
        "After normalising, LayerNorm lets the model rescale and shift each feature again "
        "with learned parameters; without them every output is forced to mean 0 and variance "
        "1.",
        "Multiply the normalised tensor by weight and add bias (elementwise, broadcast over "
        "the last dimension), each only when it is given.",
        "After normalising: y * weight, then + bias, each only when it is not None.",
    ),
)
FFN_GELU_TANH = misconception(
    "ffn-gelu-tanh",
    "{what}: you used the tanh approximation of GELU; the exact GELU x·Φ(x) was asked.",
    (
        "GELU weights each value by the probability that a standard normal variable lies "
        "below it, x·Φ(x). GPT-2 used a tanh formula that approximates it: close, but not "
        "the function that was asked for.",
        "Use F.gelu with its default approximate='none' (the exact, erf-based form); do not "
        "pass approximate='tanh' or write the tanh formula by hand.",
        "F.gelu(h) (approximate='none', the default). The tanh formula of GPT-2 is close but "
        "differs by up to ~3e-4.",
    ),
)
FFN_WRONG_ACT = misconception(
    "ffn-wrong-activation",
    "{what}: you applied {used}, but activation={asked!r} was asked.",
    (
        "The FeedForward's activation is chosen by its constructor argument; the forward "
        "pass must apply the one that was asked for.",
        "Read self.activation in forward and apply the matching function of "
        "torch.nn.functional: gelu or relu.",
        "Choose the function from self.activation: F.gelu for 'gelu', F.relu for 'relu'.",
    ),
)
FFN_NO_ACT = misconception(
    "ffn-no-activation",
    "{what}: there is no activation between linear1 and linear2; two linear layers in a row "
    "are just one linear map.",
    (
        "The nonlinearity between the two linear layers is what makes the feed-forward "
        "network more than one matrix: without it the two layers collapse into a single "
        "linear map.",
        "Apply the activation that self.activation names (F.gelu or F.relu) to linear1's "
        "output, before dropout and linear2.",
        "linear2(dropout(act(linear1(x)))).",
    ),
)
FFN_DROPOUT_IN_EVAL = misconception(
    "ffn-dropout-in-eval",
    "In eval mode your FeedForward still drops values: the output changes from call to call.",
    (
        "Dropout is a training-time regulariser; in evaluation the network must be "
        "deterministic, the same input always giving the same output.",
        "Use the nn.Dropout module the constructor built (self.dropout): it follows train() "
        "and eval() by itself. F.dropout does not, unless you pass training=self.training.",
        "Use the given self.dropout (nn.Dropout follows train() and eval()); F.dropout(h, p) "
        "defaults to training=True.",
    ),
)
POST_FOR_PRE = misconception(
    "block-post-ln-for-pre-ln",
    "{what}: you computed a Post-LN block (x = norm(x + sublayer(x))), but norm_first=True "
    "asks for Pre-LN.",
    (
        "Pre-LN and Post-LN differ in where the LayerNorm sits: Pre-LN normalises what goes "
        "into each sub-layer and leaves the residual stream itself unnormalised; Post-LN "
        "normalises the residual sum. norm_first chooses between them.",
        "Branch on self.norm_first. In the Pre-LN branch, apply norm1 to the attention's "
        "input and norm2 to the feed-forward's input, and add each sub-layer's output to the "
        "un-normalised x.",
        "Pre-LN normalises the input of each sub-layer: x = x + drop(attn(norm1(x))), then x "
        "= x + drop(ffn(norm2(x))). Check self.norm_first.",
    ),
)
PRE_FOR_POST = misconception(
    "block-pre-ln-for-post-ln",
    "{what}: you computed a Pre-LN block (x = x + sublayer(norm(x))), but norm_first=False "
    "asks for Post-LN.",
    (
        "Post-LN, the original Transformer's layout, normalises after the residual sum, so "
        "the residual stream is renormalised after every sub-layer; norm_first=False asks "
        "for it.",
        "In the Post-LN branch (self.norm_first is False), give x to each sub-layer as it "
        "is, add the sub-layer's output to x, and apply the norm to that sum.",
        "Post-LN normalises after the residual sum: x = norm1(x + drop(attn(x))), then x = "
        "norm2(x + drop(ffn(x))). Check self.norm_first.",
    ),
)
MISSING_RESIDUAL = misconception(
    "block-missing-residual",
    "{what}: the residual connection around the {sublayer} sub-layer is missing: the "
    "sub-layer's output replaces x instead of being added to it.",
    (
        "A residual connection adds a sub-layer's output to its input, so that each "
        "sub-layer learns a correction to x instead of replacing it; this path is also what "
        "carries the gradients straight back to the early layers.",
        "Around each of the two sub-layers (attention, feed-forward), add the dropped-out "
        "output to the x that came in, instead of assigning it to x.",
        "Each sub-layer adds to its input: x + drop(sublayer(...)). The residual path is "
        "what lets gradients reach early layers.",
    ),
)
NORM_TWICE = misconception(
    "block-norm-twice",
    "{what}: you applied the LayerNorm twice per sub-layer, before the sub-layer and again "
    "after the residual sum (Pre-LN and Post-LN at once).",
    (
        "Each sub-layer gets exactly one LayerNorm: Pre-LN puts it before the sub-layer, "
        "Post-LN after the residual sum. Both places at once make a third architecture.",
        "Read each sub-layer's line: the norm appears either inside the sub-layer's call "
        "(Pre-LN) or around the residual sum (Post-LN), never in both.",
        "One norm per sub-layer: before it (Pre-LN, norm_first=True) or after the sum "
        "(Post-LN), never both.",
    ),
)
RESIDUAL_FROM_NORMED = misconception(
    "block-residual-from-normed",
    "{what}: your residual adds the sub-layer's output to the normalised x "
    "(x = norm1(x); x = x + attn(x)); in Pre-LN the residual path carries the un-normalised x.",
    (
        "In Pre-LN the residual stream carries the raw, un-normalised x from block to block; "
        "only the copy that enters a sub-layer is normalised.",
        "Do not overwrite x with its normalised version: keep the norm's output in another "
        "variable for the sub-layer, and add the sub-layer's output to the original x.",
        "Keep x and the normalised copy apart: h = norm1(x); x = x + drop(attn(h)).",
    ),
)
RETURNS_PRE_NORM = misconception(
    "block-returns-pre-norm",
    "{what}: in Post-LN you kept the sum before {norm} instead of the normalised sum.",
    (
        "In Post-LN the norm comes last in each sub-layer: the new x is the normalised sum, "
        "and that is what the next sub-layer and the next block receive.",
        "Assign the norm's output (norm1 after the attention's sum, norm2 after the "
        "feed-forward's sum) back to x, and return that.",
        "Post-LN's new x is the norm's output: x = norm2(x + drop(ffn(x))); the "
        "un-normalised sum is never used again.",
    ),
)
MASK_IGNORED = misconception(
    "block-mask-ignored",
    "{what}: your result is the same as with no mask: the mask did not reach the attention.",
    (
        "The block does not decide the mask: it receives one (the causal mask, for example) "
        "and must hand it to the attention, the only place where it acts.",
        "Pass forward's mask argument on to self.attn, as its mask keyword.",
        "self.attn(..., mask=mask), in the Pre-LN branch and in the Post-LN branch.",
    ),
)
BLOCK_DROPOUT_IN_EVAL = misconception(
    "block-dropout-in-eval",
    "In eval mode your TransformerBlock still drops values: the output changes from call to call.",
    (
        "Dropout is a training-time regulariser; in evaluation the block must be "
        "deterministic, the same input always giving the same output.",
        "Use the nn.Dropout module self.dropout around each sub-layer's output: it acts in "
        "train() mode and does nothing in eval(). F.dropout ignores the mode unless you pass "
        "training=self.training.",
        "Use the given self.dropout module around each sub-layer's output; F.dropout(h, p) "
        "defaults to training=True.",
    ),
)

LN_ANNOTATED = misconception(
    "ln-unbiased-std-plus-eps",
    "{what}: you divided by the unbiased standard deviation plus eps, (x - mean) / "
    "(x.std(-1) + eps), as the Annotated Transformer's LayerNorm does; nn.LayerNorm divides "
    "by sqrt(var + eps) with the biased variance (divide by D).",
    (
        "nn.LayerNorm and the Annotated Transformer's LayerNorm differ twice: the population "
        "variance (divide by D) instead of the unbiased one, and eps under the square root "
        "instead of added to the standard deviation.",
        "Compute the biased variance over dim=-1 (the mean of the squared deviations, or "
        "unbiased=False) and take torch.sqrt of the variance plus eps; Tensor.std is not the "
        "tool here.",
        "x.std(dim=-1) divides by D - 1 and puts eps outside the root: use the mean of (x - "
        "mean) ** 2 over dim=-1 (keepdim=True) as var, and divide (x - mean) by "
        "torch.sqrt(var + eps).",
    ),
)
LN_SQRT_STD = misconception(
    "ln-divided-by-sqrt-std",
    "{what}: you divided by the square root of the standard deviation (the root taken twice): "
    "the result is not scaled to variance 1.",
    (
        "Dividing by the standard deviation is what gives each vector variance 1; the square "
        "root turns the variance into that standard deviation, and it is taken once.",
        "Take torch.sqrt of (variance + eps) and divide by it; do not take a second root of "
        "a standard deviation (Tensor.std already is one).",
        "The standard deviation is already sqrt(var + eps): divide (x - mean) by it, once.",
    ),
)
ONE_NORM_TWICE = misconception(
    "block-one-norm-for-both",
    "{what}: you used {norm} for both sub-layers; each sub-layer has its own LayerNorm, with "
    "its own weight and bias (norm1 around the attention, norm2 around the feed-forward).",
    (
        "Each sub-layer has its own LayerNorm, with its own learned scale and shift; sharing "
        "one ties together parameters that the model should learn separately.",
        "Use self.norm1 with the attention sub-layer and self.norm2 with the feed-forward "
        "sub-layer.",
        "norm1 around the attention (its input in Pre-LN, its residual sum in Post-LN), "
        "norm2 around the feed-forward, in the same places.",
    ),
)
FFN_DROPOUT_IGNORED = misconception(
    "ffn-dropout-ignored",
    "In training mode with dropout={p}, your FeedForward dropped nothing.",
    (
        "Dropout regularises the feed-forward network by zeroing a random share p of its "
        "hidden activations in training, and scaling the others by 1 / (1 - p); a dropout "
        "that never acts regularises nothing.",
        "Apply self.dropout (the nn.Dropout built with p) to the hidden activations in "
        "forward; it acts in training mode by itself.",
        "linear2(self.dropout(act(linear1(x)))): the dropout module acts in training mode only.",
    ),
)
FFN_DROPOUT_MISPLACED = misconception(
    "ffn-dropout-misplaced",
    "In training mode, dropout in your FeedForward does not act on the activations between "
    "the two linear layers: {why}.",
    (
        "In the feed-forward network dropout belongs to the hidden layer: it zeroes some of "
        "the d_ff activations that linear2 then mixes, not the input or the output.",
        "Apply self.dropout once, after the activation and before linear2; not to x, not to "
        "linear1's output before the activation, not to linear2's output.",
        "Drop the hidden activations, after act and before linear2: "
        "linear2(self.dropout(act(linear1(x)))); not the input, the pre-activations or the "
        "output.",
    ),
)
BLOCK_DROPOUT_IGNORED = misconception(
    "block-dropout-ignored",
    "In training mode with dropout={p}, your {kind} block did not drop the {sublayer} "
    "sub-layer's output.",
    (
        "In a Transformer block dropout acts on each sub-layer's output before it joins the "
        "residual stream; in training mode some of those values must be zeroed.",
        "Wrap the attention's output and the feed-forward's output in self.dropout, in the "
        "Pre-LN branch and in the Post-LN branch.",
        "Wrap each sub-layer's output in self.dropout before the residual sum: x + "
        "self.dropout(sublayer(...)).",
    ),
)
BLOCK_DROPOUT_MISPLACED = misconception(
    "block-dropout-misplaced",
    "In training mode your {kind} block's dropout did not act on the {sublayer} sub-layer's "
    "output alone: {why}.",
    (
        "Dropout in a block acts on what a sub-layer adds, not on the residual stream: the x "
        "that comes in passes through intact, and the kept values of the sub-layer's output "
        "are scaled by 1 / (1 - p).",
        "Apply self.dropout (it scales by 1 / (1 - p) for you) to each sub-layer's output "
        "only, before the addition; not to x and not to the normalised sum.",
        "Drop the sub-layer's output, before it joins the residual sum: x + "
        "self.dropout(sublayer(...)) (Pre-LN), norm(x + self.dropout(sublayer(x))) "
        "(Post-LN); never the residual x itself or the normalised sum.",
    ),
)

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
        (LN_UNBIASED, lazy(correction=1), {}),  # first: in the basic check it is also
        (LN_ANNOTATED, lazy(correction=1, eps_mode="outside"), {}),  # within tol of this one
        (LN_EPS_OUTSIDE, lazy(eps_mode="outside"), {}),
        (LN_SQRT_STD, lazy(eps_mode="sqrt-std"), {}),
        (LN_SQRT_STD, lazy(eps_mode="sqrt-std-outside"), {}),
        (LN_EPS_IGNORED, lazy(eps=0.0), {"eps": eps}),
        (LN_EPS_IGNORED, lazy(eps=1e-5), {"eps": eps}),
        (LN_WRONG_DIM, lazy(dims=tuple(range(x.dim()))), {}),
    ]
    if x.dim() > 1:
        found.append((LN_WRONG_DIM, lazy(dims=(0,)), {}))
    if w is not None:
        found.append((LN_AFFINE_IGNORED, lazy(weight=None, bias=None), {}))
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
    "layer-norm",
    "layer_norm matches the reference (with and without weight and bias)",
    2,
    inputs=probe.inputs_layer_norm,
    replays=_replays_eps_outside,
)
def verdict_layer_norm(got, want, x):
    """Everything but where eps goes: eps outside the root (with the biased variance) passes
    here, as the layer-norm-eps check charges it (each difference is charged once)."""
    _verdict_ln(got, want, x)


@LAYER_NORM.check(
    "layer-norm-eps",
    "layer_norm puts the given eps inside the square root (tiny variances)",
    1,
    inputs=probe.inputs_layer_norm_eps,
    replays=_replays_unbiased,
)
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
        (FFN_WRONG_ACT, lambda: _ffn(x, ACTS[other]), {"used": other, "asked": activation}),
        (FFN_NO_ACT, lambda: _ffn(x, ACTS["none"]), {}),
    ]
    if activation == "gelu":
        candidates.insert(0, (FFN_GELU_TANH, lambda: _ffn(x, ACTS["gelu-tanh"]), {}))
    assert_close(out, want["out"], what, candidates)


FEED_FORWARD = CHECKS.exercise("FeedForward", probe=probe.probe_ffn_gelu)


@FEED_FORWARD.check(
    "ffn-gelu", "FeedForward with the exact GELU matches the reference", 2, inputs=probe.inputs_ffn
)
def verdict_ffn_gelu(got, want, x):
    _verdict_ffn(got, want, x, "gelu")


@FEED_FORWARD.check(
    "ffn-relu",
    "FeedForward with ReLU matches the reference",
    1,
    inputs=probe.inputs_ffn,
    probe=probe.probe_ffn_relu,
)
def verdict_ffn_relu(got, want, x):
    _verdict_ffn(got, want, x, "relu")


@FEED_FORWARD.check(
    "ffn-dropout-eval",
    "FeedForward: dropout does nothing in eval mode (deterministic, equal to dropout=0)",
    1,
    inputs=probe.inputs_ffn,
    probe=probe.probe_ffn_dropout_eval,
)
@no_reference
def verdict_ffn_dropout_eval(got, want, x):
    what = _ffn_what(x, dropout=0.5) + " in eval mode"
    out = tensor(got, "out", what, shape=x["x"].shape, dtype=torch.float32)
    if not torch.equal(out, tensor(got, "out2", what, shape=x["x"].shape)):
        raise Failure(FFN_DROPOUT_IN_EVAL)
    same = tensor(got, "no_dropout", what, shape=x["x"].shape)
    assert_close(out, same, what + ", compared with your FeedForward with dropout=0")


@FEED_FORWARD.check(
    "ffn-dropout-train",
    "FeedForward: in training mode dropout acts on the activations between linear1 and linear2",
    1,
    inputs=probe.inputs_ffn_train,
    probe=probe.probe_ffn_dropout_train,
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
        raise Failure(FFN_DROPOUT_MISPLACED, why="the output is not finite")
    w2, b2 = sd["linear2.weight"].double(), sd["linear2.bias"].double()
    rows = (out - b2).reshape(-1, w2.size(0)).T  # (d_model, N)
    hidden = torch.linalg.lstsq(w2, rows).solution  # (d_ff, N)
    rebuilt = (w2 @ hidden).T.reshape(out.shape) + b2
    if not torch.allclose(rebuilt, out, atol=1e-4, rtol=1e-4):
        why = "the output is not linear2 of any hidden vector: dropout acted after linear2"
        raise Failure(FFN_DROPOUT_MISPLACED, why=why)
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
        raise Failure(FFN_DROPOUT_IGNORED, p=p)
    raise Failure(FFN_DROPOUT_MISPLACED, why="in the hidden layer linear2 received, " + detail)


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
        (POST_FOR_PRE, lazy("post"), {}) if norm_first else (PRE_FOR_POST, lazy("pre"), {}),
        (MISSING_RESIDUAL, lazy(f"{asked}-no-res-attn"), {"sublayer": "attention"}),
        (MISSING_RESIDUAL, lazy(f"{asked}-no-res-ffn"), {"sublayer": "feed-forward"}),
        (NORM_TWICE, lazy("norm-twice"), {}),
        (ONE_NORM_TWICE, lazy(f"{asked}-only-norm1"), {"norm": "norm1"}),
        (ONE_NORM_TWICE, lazy(f"{asked}-only-norm2"), {"norm": "norm2"}),
    ]
    if norm_first:
        found.append((RESIDUAL_FROM_NORMED, lazy("residual-from-normed"), {}))
        found.append((MASK_IGNORED, lazy("mask-ignored-pre"), {}))
    else:
        found.append((RETURNS_PRE_NORM, lazy("post-no-norm2"), {"norm": "norm2"}))
        found.append((RETURNS_PRE_NORM, lazy("post-no-norm1"), {"norm": "norm1"}))
        found.append((MASK_IGNORED, lazy("mask-ignored"), {}))
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


@TRANSFORMER_BLOCK.check(
    "pre-ln",
    "TransformerBlock Pre-LN matches the reference (norm_first=True, causal mask)",
    3,
    inputs=probe.inputs_block,
)
def verdict_pre_ln(got, want, x):
    _verdict_block(got, want, x, True, "gelu")


@TRANSFORMER_BLOCK.check(
    "post-ln",
    "TransformerBlock Post-LN matches the reference (norm_first=False, causal mask)",
    3,
    inputs=probe.inputs_block,
    probe=probe.probe_post_ln,
)
def verdict_post_ln(got, want, x):
    _verdict_block(got, want, x, False, "relu")


@TRANSFORMER_BLOCK.check(
    "block-dropout-eval",
    "TransformerBlock: dropout does nothing in eval mode (deterministic, equal to dropout=0)",
    1,
    inputs=probe.inputs_block,
    probe=probe.probe_block_dropout_eval,
)
@no_reference
def verdict_block_dropout_eval(got, want, x):
    what = _block_what(x, dropout=0.3) + " in eval mode"
    shape = x["x"].shape
    out = tensor(got, "out", what, shape=shape, dtype=torch.float32)
    if not torch.equal(out, tensor(got, "out2", what, shape=shape)):
        raise Failure(BLOCK_DROPOUT_IN_EVAL)
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
    "block-dropout-train",
    "TransformerBlock: in training mode dropout acts on each sub-layer's output (Pre-LN and "
    "Post-LN)",
    1,
    inputs=probe.inputs_block_train,
    probe=probe.probe_block_dropout_train,
)
@no_reference
def verdict_block_dropout_train(got, want, x):
    """Each run makes one sub-layer output a fixed tensor s and the other 0, so the block
    computes x + drop(s) (Pre-LN), norm(norm(x + drop(s))) (Post-LN, attention) or
    norm(norm(x) + drop(s)) (Post-LN, FFN), the norms being plain LayerNorms. The judge finds,
    row by row, the drop pattern that explains the output, under any of these wirings (which
    wiring is right is graded by the pre-ln and post-ln checks); none means dropout acted
    elsewhere. Then about p of the values must have been dropped."""
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
            raise Failure(BLOCK_DROPOUT_MISPLACED, why="the output is not finite", **details)
        for base, final in wirings:
            fits, pattern = _fit_rows(out, base, sub, final, 1 / (1 - p), tol=1e-4)
            if fits.all():
                kept.append(pattern[sub.abs() > 1e-3])
                break
        else:
            tol = {"atol": 1e-4, "rtol": 1e-4}
            if any(close(out, final(base + sub), tol) for base, final in wirings):
                raise Failure(BLOCK_DROPOUT_IGNORED, **details)
            if any(_fit_rows(out, b, sub, f, 1.0, tol=1e-4)[0].all() for b, f in wirings):
                why = "the values kept were not divided by 1 - p"
            else:
                why = "no pattern of dropped values of the sub-layer's output explains it"
            raise Failure(BLOCK_DROPOUT_MISPLACED, why=why, **details)
    kept = torch.cat(kept)
    dropped = 1 - float(kept.mean())
    if abs(dropped - p) > 5 * (p * (1 - p) / kept.numel()) ** 0.5:
        why = f"{dropped:.0%} of {kept.numel()} values were dropped, but p = {p:g}"
        raise Failure(
            BLOCK_DROPOUT_MISPLACED, why=why, p=p, kind="Pre-LN and Post-LN", sublayer="every"
        )
