"""Judge side of gpt.py's checks: misconceptions, models of wrong computations, verdicts.

Property checks (causality, return_attn, weight tying, too long, greedy, cropping, modes)
judge the student's own runs; only the checks titled after the reference compare with it.
The training check measures the trained weights here, in the grading process.
"""

from __future__ import annotations

import math
from types import ModuleType

import torch
import torch.nn.functional as F

from ...core import CRASH, WRONG_TYPE, CheckList, Failure, misconception
from ...trusted.masks import causal_mask
from ...verdicts import ModelUnavailable, assert_causal, assert_close, close, model, tensor
from . import probe

trusted: ModuleType | None
try:  # MiniGPT replays the named mistakes; the student copy has no stand-in (fewer are named)
    from ...trusted import gpt as trusted
except ImportError:
    trusted = None

CHECKS = CheckList("gpt")

# --------------------------------------------------------------------------- misconceptions

NO_TYING = misconception(
    "gpt-no-weight-tying",
    "lm_head.weight and token_embed.weight are not one parameter: {detail}.",
    (
        "Weight tying uses one matrix at both ends of the model: the token embedding (token "
        "id to vector) and the output layer (vector to logits). Two equal copies are not "
        "tied: they drift apart in training, and the parameters count twice.",
        "In __init__, make lm_head's weight the very same nn.Parameter object as "
        "token_embed's weight: assign the Parameter itself; do not copy its data.",
        "Assign token_embed's Parameter to lm_head.weight in __init__ (the object itself, "
        "not .data and not copy_). Then model.parameters() counts the (V, D) matrix once and "
        "both uses share one gradient.",
    ),
)
NO_EMBED_SCALE = misconception(
    "gpt-no-embed-scale",
    "Your logits are what the model gives without the √D embedding scale.",
    (
        "Token embeddings are scaled by √D before the positions are added, so that the two "
        "have comparable magnitudes (as in the original Transformer).",
        "Multiply the output of the embedding lookup by the square root of d_model, then add "
        "the positional encoding.",
        "Multiply the token embeddings by self.d_model ** 0.5 before adding the positions.",
    ),
)
NO_FINAL_NORM = misconception(
    "gpt-no-final-norm",
    "Your logits are what the model gives without the final LayerNorm: lm_head(x) instead "
    "of lm_head(final_norm(x)).",
    (
        "Pre-LN blocks leave the residual stream unnormalised, and its scale grows with "
        "depth; a final LayerNorm before the output layer brings it back.",
        "Apply self.final_norm to the last block's output, then self.lm_head to the result.",
        "The logits are lm_head of final_norm of the blocks' output: normalise first, then "
        "project to the vocabulary.",
    ),
)
LOG_SOFTMAX = misconception(
    "gpt-log-softmax-output",
    "Your MiniGPT returns log-probabilities (log_softmax of the logits), not the logits.",
    (
        "A language model's forward returns raw scores, the logits; turning them into "
        "probabilities is the job of the loss (cross-entropy) or of the sampler.",
        "Return lm_head's output as it is, with no softmax or log_softmax after it; "
        "F.cross_entropy and generate apply their own.",
        "Return lm_head(final_norm(x)) as it is: F.cross_entropy and generate's softmax "
        "expect raw logits (log_softmax happens inside cross_entropy).",
    ),
)
NO_CAUSAL = misconception(
    "gpt-no-causal-mask",
    "Your model lets later tokens change the logits of earlier positions: the blocks run "
    "without the causal mask, so position t can read the token it should predict.",
    (
        "A language model predicts each token from the tokens before it; if position t can "
        "see position t + 1, training teaches it to copy the answer, and it fails when it "
        "generates.",
        "Build the causal mask for the sequence length T (causal_mask from masks.py, on "
        "idx's device) and pass it to every block.",
        "causal_mask(T, device=idx.device), given to every block as block(x, mask=...).",
    ),
)
CONSTANT = misconception(
    "gpt-ignores-input",
    "Your logits after position {t} stayed the same when the tokens there changed: the "
    "model does not read its input.",
    (
        "The logits must depend on the tokens: every prediction is computed from the token "
        "ids the model is given.",
        "Start forward from idx: embed the ids, add the positions, then run the blocks, the "
        "final norm and lm_head, each on the previous step's output.",
        "The logits come from the token ids: token_embed(idx) * √D + positions, the blocks, "
        "final_norm, lm_head.",
    ),
)
TOO_LONG = misconception(
    "gpt-too-long",
    "MiniGPT with max_len = {max_len}: {detail}.",
    (
        "The positional encoding covers only max_len positions; a longer sequence must be "
        "refused with a clear error, not cut silently or left to crash deep inside the model.",
        "At the start of forward, compare T (the second dimension of idx) with self.max_len "
        "and raise ValueError when it is larger; T equal to max_len is allowed.",
        "Raise ValueError when T > self.max_len (T == max_len is allowed), naming both numbers.",
    ),
)
ATTN_LIST = misconception(
    "gpt-return-attn",
    "forward(idx, return_attn=True) should return (logits, a list of {layers} weight tensors "
    "(B, H, T, T), one per block), but {detail}.",
    (
        "return_attn=True is for inspection: the caller wants every layer's attention "
        "weights, one tensor per block, in block order.",
        "Keep a Python list; append the weights each block returns as you loop over the "
        "blocks; return (logits, that list) when return_attn is True, the logits alone "
        "otherwise.",
        "Each block returns (x, weights): append the weights to the list in the loop, and "
        "return logits together with the list when return_attn is True.",
    ),
)
NO_CROPPING = misconception(
    "gen-no-cropping",
    "generate fed the model {T} tokens, more than its max_len = {max_len}: the context was not "
    "cropped once the sequence grew past max_len.",
    (
        "The model accepts at most max_len tokens; once the generated sequence is longer, "
        "only its most recent max_len tokens can serve as context.",
        "Before each model call, slice the last max_len tokens along the time dimension (a "
        "negative start index).",
        "Feed only the last max_len tokens each step: idx[:, -model.max_len:] as the model's "
        "input.",
    ),
)
CROP_FIRST = misconception(
    "gen-crop-keeps-first",
    "Your context keeps the first max_len tokens; it must keep the last ones, the most recent.",
    (
        "The next token depends most on the most recent ones: a sliding window keeps the end "
        "of the sequence and drops its beginning.",
        "Slice the time dimension from -max_len to the end, not from 0 to max_len.",
        "idx[:, -model.max_len:], not idx[:, :model.max_len].",
    ),
)
CONTEXT = misconception(
    "gen-wrong-context",
    "generate fed the model other tokens than the last max_len of the sequence: {detail}.",
    (
        "At each step the model reads the sequence generated so far, the prompt and every "
        "new token, cropped to its last max_len tokens.",
        "Each step: slice the last max_len tokens of the whole sequence, call the model "
        "once, and append the new token to the whole sequence (not to the cropped context).",
        "Each step: the context is idx[:, -model.max_len:], one model call on it, then "
        "torch.cat the new token onto idx along dim=1.",
    ),
)
TEMPERATURE_AFTER = misconception(
    "gen-temperature-after-softmax",
    "With temperature {temperature}, your samples are the ones temperature 1 gives: the "
    "temperature never reached the logits (dividing the probabilities after the softmax "
    "changes nothing, because multinomial renormalises them).",
    (
        "Temperature reshapes the distribution by scaling the logits before the softmax; "
        "scaling the probabilities afterwards is undone by the normalisation.",
        "Divide the last position's logits by the temperature, then apply the softmax.",
        "Divide the logits by the temperature, then take the softmax of the result over "
        "dim=-1, then sample.",
    ),
)
TEMPERATURE_MULTIPLIED = misconception(
    "gen-temperature-multiplied",
    "With temperature {temperature}, your samples are the ones logits × {temperature} give: "
    "the logits must be divided by the temperature, not multiplied.",
    (
        "A low temperature sharpens the distribution towards the most likely token and a "
        "high one flattens it: dividing the logits by the temperature does that, multiplying "
        "does the opposite.",
        "Divide the logits by temperature (do not multiply) before the softmax.",
        "logits / temperature: a temperature below 1 sharpens the distribution, above 1 "
        "flattens it.",
    ),
)
TEMPERATURE_ZERO = misconception(
    "gen-temperature-zero-divides",
    "With temperature 0, your generate raised {error}: it divided the logits by 0 (inf and "
    "NaN) and sampled, instead of taking the argmax.",
    (
        "Temperature 0 is the limit of ever sharper distributions: all the probability on "
        "the most likely token. It is computed as a special case (greedy decoding), not by "
        "dividing by 0.",
        "Test for temperature == 0 before the division, and take the argmax over the "
        "vocabulary instead of sampling.",
        "When temperature == 0, the next id is logits.argmax over dim=-1 with keepdim=True: "
        "no division and no sampling.",
    ),
)
TOPK_AFTER = misconception(
    "gen-topk-after-sampling",
    "With top_k = {k}, your generate picked a token outside the {k} most likely ones "
    "(step {step}, sequence {row}): top-k was applied after sampling, or not at all.",
    (
        "Top-k sampling restricts the choice to the k most likely tokens; the restriction "
        "acts on the distribution, before the draw.",
        "Find the k-th largest logit of each row with torch.topk, and set every logit below "
        "it to -inf (masked_fill) before the softmax.",
        "Before sampling: kth = the last column of torch.topk(logits, k).values (kept 2-D, "
        "[:, -1:]); then masked_fill the logits below kth with float('-inf').",
    ),
)
TOPK_EXTRA = misconception(
    "gen-topk-keeps-k-plus-1",
    "With top_k = {k}, your generate kept {k} + 1 tokens: it sampled the ({k}+1)-th most "
    "likely token (step {step}, sequence {row}), so the threshold is one place too far.",
    (
        "The threshold is the k-th largest logit itself: exactly k tokens (more only on "
        "ties) stay at or above it.",
        "torch.topk returns the values sorted in decreasing order: the k-th largest is at "
        "index k - 1 (the last of the k), not at index k.",
        "The k-th largest logit is torch.topk(logits, k).values[:, -1:] (index k - 1 of the "
        "sorted values, not index k); keep the logits >= it.",
    ),
)
TOPK_CLAMP = misconception(
    "gen-topk-not-clamped",
    "generate with top_k = {k} larger than the vocabulary (V = {V}) raised {error}.",
    (
        "A top_k larger than the vocabulary asks for more tokens than there are; it means "
        "'keep them all', and must not crash.",
        "Clamp k to the vocabulary size (logits.size(-1)) before calling torch.topk.",
        "Use Python's min to clamp: the smaller of top_k and the vocabulary size, logits.size(-1).",
    ),
)
GREEDY = misconception(
    "gen-greedy-not-argmax",
    "With temperature 0, generate must pick the most likely token at every step (greedy), "
    "but your tokens differ from the argmax at step {step}.",
    (
        "Greedy decoding always takes the single most likely token: there is no randomness "
        "left, and the result is fully determined by the model.",
        "For temperature == 0, take the argmax of the last position's logits over the "
        "vocabulary; skip the division, top-k and sampling.",
        "temperature == 0 is a special case: logits.argmax over dim=-1 with keepdim=True "
        "(shape (B, 1)), with no division and no sampling.",
    ),
)
OTHER_TOKENS = misconception(
    "gen-other-tokens",
    "{what}: sequence {row} first differs from the reference's at new token {step}: you "
    "drew token {got}, the reference draws token {want} with the same generator and seed.",
    (
        "Sampling with a seeded generator is reproducible only when every random draw "
        "happens in the same order, from the same distribution.",
        "Each step: the last position's logits, divided by the temperature, top-k, softmax, "
        "then one token drawn with torch.multinomial and the given generator; draw nothing "
        "else from it.",
        "Follow the docstring's order: logits of the last position / temperature, top-k, "
        "softmax, then one torch.multinomial(probs, 1, generator=generator) per step; draw "
        "nothing else from the generator.",
    ),
)
GRAD_TRACKING = misconception(
    "gen-grad-tracking",
    "generate ran the model with gradient tracking on: every step keeps the graph in memory "
    "for a backward pass that never comes.",
    (
        "Generation is inference: no backward pass follows, so recording the computation "
        "graph only costs memory and time.",
        "Turn off gradient tracking for the whole loop: the torch.no_grad context manager, "
        "or the decorator of the same name.",
        "Wrap the loop in a `with torch.no_grad()` block (or decorate generate with "
        "@torch.no_grad()).",
    ),
)
TRAIN_MODE = misconception(
    "gen-train-mode",
    "generate ran the model in training mode, so dropout was still active while sampling.",
    (
        "Sampling uses the model as trained, without dropout's randomness: that is "
        "evaluation mode.",
        "Switch the model to evaluation mode (Module.eval) before generating.",
        "Call eval() on the model before the loop (and give it back its old mode at the end).",
    ),
)
MODE_NOT_RESTORED = misconception(
    "gen-mode-not-restored",
    "After generate, the model is in {got} mode, but it was in {expected} mode before the call.",
    (
        "A helper should leave the model as it found it: generate switches to evaluation "
        "mode for sampling, then hands back the mode the caller had.",
        "Read model.training before switching, and restore it with model.train(...) at the "
        "end, even when an error occurs (try/finally).",
        "Save the flag model.training before calling eval(); at the end, in a finally: "
        "block, hand it back to model.train.",
    ),
)
TRAIN_RESULT = misconception(
    "train-wrong-return",
    "train(...) should return a list of {steps} floats (one loss per step), but {detail}.",
    (
        "train reports how learning went: one loss per step, as plain Python floats, so that "
        "the caller can plot or compare them.",
        "Turn each step's loss tensor into a float with .item() and append it to a list; "
        "return the list after the loop.",
        "Start with an empty list, append the loss's .item() every step, and return the list.",
    ),
)
TRAIN_NOT_SHIFTED = misconception(
    "train-targets-not-shifted",
    "After your training run the model predicts the token it is reading, not the next one: "
    "the targets were the inputs themselves (loss {identity:.2f} on copying, {loss:.2f} on "
    "the next token).",
    (
        "A language model learns to predict the next token: the target at each position is "
        "the token one step later, not the token it is reading.",
        "Take the targets from the same random starts as the inputs, one position further on.",
        "The targets are the input windows shifted by one: data at starts + offsets + 1, "
        "where x takes starts + offsets.",
    ),
)
TRAIN_NO_UPDATE = misconception(
    "train-no-update",
    "Your training run did not change the model (loss {before:.3f} before, {loss:.3f} after).",
    (
        "Training changes the weights: each step computes the gradients of the loss, and the "
        "optimiser moves the parameters against them.",
        "Build the optimiser on model.parameters(); each step, clear the gradients, "
        "backpropagate the loss and take an optimiser step.",
        "Each step: zero_grad() on the optimiser, backward() on the loss, then step(); the "
        "optimiser is built once, on model.parameters().",
    ),
)
TRAIN_LOSS_HIGH = misconception(
    "train-loss-too-high",
    "After your training run the mean loss on held-out windows is {loss:.3f} nats per "
    "character; our solution's runs reach at most {solution:.2f} and we ask for below "
    "{threshold:.2f}.",
    (
        "A correct training loop steadily lowers the next-character loss; a loss that stays "
        "high means the model learns from the wrong batches, with the wrong loss, or not at "
        "all.",
        "Check in this order: the batches (inputs and next-token targets from the same "
        "starts), the loss (cross-entropy over the flattened positions), the optimiser step "
        "(zero_grad, backward, step).",
        "Check the batches (x and the next-token targets y), the loss (cross_entropy on (N, "
        "V) logits and (N,) targets) and the optimiser step (zero_grad, backward, step).",
    ),
)

# --------------------------------------------------------------------------- models
# What MiniGPT and generate compute with a given mistake, to recognise it by its output.


@model
def _built(x):
    """The trusted MiniGPT with x's weights, in eval mode."""
    return probe.load_weights(trusted.MiniGPT(**x["config"]), x["state"]).eval()


@model
def _logits(
    x,
    idx,
    *,
    scale=True,
    causal=True,
    final_norm=True,
    log_softmax=False,
    embed=None,
    head=None,
    built=None,
):
    """MiniGPT's logits on x's weights, with the mistakes named by the flags; embed and head
    replace token_embed's and lm_head's matrices (two matrices: an untied model). `built`:
    _built(x), when the caller replays many mistakes on the same weights."""
    model = built if built is not None else _built(x)
    idx = idx.cpu()
    T = idx.size(1)
    embed = model.token_embed.weight if embed is None else embed
    head = model.lm_head.weight if head is None else head
    with torch.no_grad():
        h = F.embedding(idx, embed) * (model.d_model**0.5 if scale else 1.0)
        h = model.pos_encoding(h)
        mask = causal_mask(T) if causal else None
        for block in model.blocks:
            h, _ = block(h, mask=mask)
        logits = F.linear(model.final_norm(h) if final_norm else h, head)
    return logits.log_softmax(dim=-1) if log_softmax else logits


# The mistakes the logits check names, as _logits flags.
_LOGITS_MISTAKES = {
    "no-embed-scale": {"scale": False},
    "no-causal": {"causal": False},
    "no-final-norm": {"final_norm": False},
    "log-softmax": {"log_softmax": True},
}


def _name(flags: dict) -> str:
    return ",".join(f"{k}={int(v)}" for k, v in sorted(flags.items())) or "correct"


def _variants():
    """The correct model first, then every combination of the mistakes named elsewhere."""
    return [
        {"scale": s, "final_norm": f, "log_softmax": ls, "causal": c}
        for s in (True, False)
        for f in (True, False)
        for ls in (False, True)
        for c in (True, False)
    ]


def _logits_replays(x):
    built = _built(x)
    return {n: _logits(x, x["idx"], built=built, **kw) for n, kw in _LOGITS_MISTAKES.items()}


def _tying_replays(x):
    """MiniGPT's logits with E and W (untied), E and E, W and W (tied), each with every
    combination of the mistakes the logits check charges."""
    E, W = x["state"]["token_embed.weight"], x["head"]
    built, found = _built(x), {}
    for flags in _variants():
        for label, (embed, head) in {"untied": (E, W), "E": (E, E), "W": (W, W)}.items():
            found[f"{_name(flags)}/{label}"] = _logits(
                x, x["idx"], embed=embed, head=head, built=built, **flags
            )
    return found


def _scale_variants():
    return [
        {"final_norm": final_norm, "log_softmax": log_softmax}
        for final_norm in (True, False)
        for log_softmax in (False, True)
    ]


def _scale_replays(x):
    built, found = _built(x), {}
    for flags in _scale_variants():
        found[f"scaled/{_name(flags)}"] = _logits(x, x["idx"], built=built, **flags)
        found[f"unscaled/{_name(flags)}"] = _logits(x, x["idx"], scale=False, built=built, **flags)
    return found


@model
def _generate(x, n, temperature, top_k, *, crop="last", temp="divide", top_k_on=True, extra=0):
    model = probe.scripted(x).eval()
    gen = torch.Generator().manual_seed(x["seed"])
    idx, m, V = x["prompt"].cpu(), model.max_len, x["table"].size(0)
    with torch.no_grad():
        for _ in range(n):
            logits = model(idx[:, -m:] if crop == "last" else idx[:, :m])[:, -1]
            if temperature == 0:
                next_id = logits.argmax(dim=-1, keepdim=True)
            else:
                if temp == "divide":
                    logits = logits / temperature
                elif temp == "multiply":
                    logits = logits * temperature
                if top_k is not None and top_k_on:
                    kth = logits.topk(min(top_k + extra, V), dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                next_id = torch.multinomial(logits.softmax(dim=-1), 1, generator=gen)
            idx = torch.cat([idx, next_id], dim=1)
    return idx


# --------------------------------------------------------------------------- MiniGPT


def _shape(x, idx_key="idx"):
    return (*x[idx_key].shape, x["config"]["vocab_size"])


MINI_GPT = CHECKS.exercise("MiniGPT", probe=probe.probe_logits)


@MINI_GPT.check(
    "logits",
    "MiniGPT's logits match the reference (grader's weights, eval mode)",
    3,
    inputs=probe.inputs_model,
    replays=_logits_replays,
)
def verdict_logits(got, want, x):
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    named = (NO_EMBED_SCALE, NO_CAUSAL, NO_FINAL_NORM, LOG_SOFTMAX)
    mistakes = dict(zip(_LOGITS_MISTAKES, named, strict=True))
    candidates = [(m, want.get(f"replay/{n}"), {}) for n, m in mistakes.items()]
    assert_close(logits, want["logits"], "the logits", candidates)


@MINI_GPT.check(
    "weight-tying",
    "lm_head and token_embed share one weight, counted once in parameters()",
    2,
    inputs=probe.inputs_tying,
    probe=probe.probe_tying,
    replays=_tying_replays,
)
def verdict_tying(got, want, x):
    """Decided from logits, which need the real computation: after loading
    token_embed.weight = E and lm_head.weight = W, a tied model holds one matrix (E or W,
    whichever loaded last) in both places; an untied one reads with E and scores with W.
    Its logits are compared with those of MiniGPT with one matrix and with two (replayed
    with the reference), each also with the known mistakes the logits check names (so a
    mistake there costs nothing here)."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    for flags in _variants():
        name = _name(flags)
        if close(logits, want[f"replay/{name}/untied"]):
            raise Failure(
                NO_TYING,
                detail="they are two separate matrices (loaded with different values, your "
                "logits read tokens with one and scored them with the other)",
            )
        if close(logits, want[f"replay/{name}/E"]) or close(logits, want[f"replay/{name}/W"]):
            break
    else:
        raise Failure(
            NO_TYING,
            detail="with different token_embed and lm_head weights loaded, your logits match "
            "no MiniGPT, tied or untied, so the tying cannot be confirmed; make the logits "
            "check pass first",
        )
    names = str(got.get("names", "")).split("|")
    n_params = got.get("n_params")
    if ("token_embed.weight" in names and "lm_head.weight" in names) or n_params != want[
        "n_params"
    ]:
        raise Failure(
            NO_TYING,
            detail=f"they share one storage but are two Parameters: parameters() counts "
            f"{n_params} numbers instead of {want['n_params']}",
        )


@MINI_GPT.check(
    "embed-scale",
    "token embeddings are multiplied by √D (a model with no blocks)",
    1,
    inputs=probe.inputs_scale,
    replays=_scale_replays,
)
def verdict_embed_scale(got, want, x):
    """Only the scale: the logits may be those of the √D model with another difference
    (no final norm, a log_softmax output), which the logits check charges."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    names = [_name(flags) for flags in _scale_variants()]
    if any(close(logits, want[f"replay/scaled/{n}"]) for n in names):
        return
    if any(close(logits, want[f"replay/unscaled/{n}"]) for n in names):
        raise Failure(NO_EMBED_SCALE)
    assert_close(logits, want["logits"], "the logits")


@MINI_GPT.check(
    "causal",
    "changing the tokens after position t leaves the logits up to t unchanged",
    2,
    inputs=probe.inputs_causal,
)
def verdict_causal(got, want, x):
    """The student's own two runs: equal up to t, different after t."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    logits2 = tensor(got, "logits2", "the logits", shape=_shape(x, "idx2"))
    assert_causal(logits, logits2, want["logits"], x["t"], NO_CAUSAL, CONSTANT)


@MINI_GPT.check(
    "return-attn",
    "return_attn=True gives one (B, H, T, T) causal weight tensor per block",
    1,
    inputs=probe.inputs_model,
    probe=probe.probe_attn,
)
def verdict_attn(got, want, x):
    """The student's own run: the right number and shapes, zeros above the diagonal, rows
    summing to 1, and the same logits as forward(idx)."""
    layers = x["config"]["num_layers"]
    if "problem" in got:
        raise Failure(ATTN_LIST, layers=layers, detail=got["problem"])
    if got.get("layers") != layers:
        raise Failure(ATTN_LIST, layers=layers, detail=f"the list has {got.get('layers')}")
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    plain = tensor(got, "plain", "the logits of forward(idx)", shape=_shape(x))
    if not close(logits, plain):
        raise Failure(ATTN_LIST, layers=layers, detail="its logits differ from forward(idx)'s")
    B, T = x["idx"].shape
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    for i in range(layers):
        what = f"the attention weights of block {i}"
        weights = tensor(got, f"weights{i}", what, shape=(B, x["config"]["num_heads"], T, T))
        if not torch.isfinite(weights).all():
            assert_close(weights, want[f"weights{i}"], what)  # names the NaN / inf
        if weights[..., future].abs().max() > 0:
            raise Failure(NO_CAUSAL)
        sums = weights.sum(dim=-1)
        if not close(sums, torch.ones_like(sums)):
            detail = f"the rows of block {i}'s weights do not sum to 1 (not softmax weights)"
            raise Failure(ATTN_LIST, layers=layers, detail=detail)


@MINI_GPT.check(
    "too-long",
    "T > max_len raises ValueError (T = max_len works)",
    1,
    inputs=probe.inputs_model,
    probe=probe.probe_too_long,
)
def verdict_too_long(got, want, x):
    n = x["config"]["max_len"]
    if got.get(f"T{n}") != "ok":
        detail = f"T = max_len = {n} should work, but it raised {got.get(f'T{n}')}"
        raise Failure(TOO_LONG, max_len=n, detail=detail)
    if got.get(f"T{n + 1}") != "ValueError":
        outcome = got.get(f"T{n + 1}")
        outcome = "returned logits" if outcome == "ok" else f"raised {outcome}"
        detail = f"T = {n + 1} should raise ValueError, but it {outcome}"
        raise Failure(TOO_LONG, max_len=n, detail=detail)


# --------------------------------------------------------------------------- generate


def _ids(got, x, name, n, temperature, top_k):
    """The run's token ids: (B, T0 + n) int64 starting with the prompt, or a Failure."""
    V = x["table"].size(0)
    if f"{name}/too_long" in got:
        raise Failure(NO_CROPPING, T=got[f"{name}/too_long"], max_len=x["pos"].size(0))
    if f"{name}/error" in got:
        error = got[f"{name}/error"]
        if temperature == 0:
            raise Failure(TEMPERATURE_ZERO, error=error)
        if top_k is not None and top_k > V:
            raise Failure(TOPK_CLAMP, k=top_k, V=V, error=error)
        raise Failure(CRASH, error=error, where="")
    B, T0 = x["prompt"].shape
    what = f"generate(..., {n}, temperature={temperature}, top_k={top_k})"
    ids = tensor(got, f"{name}/ids", what, shape=(B, T0 + n))
    if ids.dtype != torch.int64:
        raise Failure(WRONG_TYPE, what=what, expected="int64 token ids", got=ids.dtype)
    if not torch.equal(ids[:, :T0], x["prompt"]):
        raise Failure(
            WRONG_TYPE,
            what=what,
            expected="the prompt followed by the new tokens",
            got="a sequence that does not start with the prompt",
        )
    if ids.min() < 0 or ids.max() >= V:
        raise Failure(
            WRONG_TYPE,
            what=what,
            expected=f"token ids in 0 .. {V - 1}",
            got=f"ids from {int(ids.min())} to {int(ids.max())}",
        )
    return ids, what


def _step_logits(x, ids, step):
    """The scripted model's last-position logits for new token `step` of the student's own
    sequence, fed the last max_len tokens (the docstring's context)."""
    model = probe.scripted(x).eval()
    T0 = x["prompt"].size(1)
    with torch.no_grad():
        return model(ids[:, : T0 + step][:, -model.max_len :])[:, -1]


GENERATE = CHECKS.exercise("generate", probe=probe.probe_greedy)


@GENERATE.check(
    "generate-greedy",
    "generate with temperature 0 is greedy (argmax)",
    2,
    inputs=probe.inputs_generate,
)
def verdict_greedy(got, want, x):
    """The student's own run: every new token is the argmax of its step's logits."""
    for name, n, temperature, top_k in probe.cases("greedy", x):
        ids, _ = _ids(got, x, name, n, temperature, top_k)
        T0 = x["prompt"].size(1)
        for step in range(n):
            if not torch.equal(_step_logits(x, ids, step).argmax(-1), ids[:, T0 + step]):
                raise Failure(GREEDY, step=step)


@GENERATE.check(
    "generate-crop",
    "generate feeds only the last max_len tokens once the sequence is longer "
    "(temperature 1, seeded)",
    2,
    inputs=probe.inputs_generate,
    probe=probe.probe_crop,
)
def verdict_crop(got, want, x):
    """The student's own run: each step's model call saw the last max_len tokens of the
    sequence so far (how the token was then picked is the other checks' business)."""
    for name, n, temperature, top_k in probe.cases("crop", x):
        ids, _ = _ids(got, x, name, n, temperature, top_k)
        calls, m, T0 = got.get(f"{name}/calls"), x["pos"].size(0), x["prompt"].size(1)
        if calls != n:
            detail = f"it called the model {calls} times for {n} new tokens, not once per token"
            raise Failure(CONTEXT, detail=detail)
        for step in range(n):
            seen = tensor(got, f"{name}/context{step}", "a context generate fed the model")
            prefix = ids[:, : T0 + step]
            if close(seen, prefix[:, -m:]):
                continue
            if close(seen, prefix[:, :m]):
                raise Failure(CROP_FIRST)
            detail = (
                f"at new token {step} the sequence had {prefix.size(1)} tokens and the model "
                f"was fed {tuple(seen.shape)}"
            )
            raise Failure(CONTEXT, detail=detail)


def _tokens_verdict(check):
    """Sampled tokens compared as tokens with the reference's (same generator, same seed);
    a difference is named by the known mistake that gives exactly those tokens, then by
    what the tokens break, then by the first step where they differ."""

    def verdict(got, want, x):
        for name, n, temperature, top_k in probe.cases(check, x):
            ids, what = _ids(got, x, name, n, temperature, top_k)
            reference = want[f"{name}/ids"]
            if torch.equal(ids, reference):
                continue
            for mistake, kwargs, details in _mistakes(temperature, top_k):
                try:
                    replayed = _generate(x, n, temperature, top_k, **kwargs)
                except ModelUnavailable:  # the student copy: these mistakes go unnamed
                    break
                if torch.equal(ids, replayed):
                    raise Failure(mistake, what=what, **details)
            if top_k is not None:
                _check_top_k(ids, x, top_k, n)
            row, step = _first_difference(ids, reference, x["prompt"].size(1))
            T0 = x["prompt"].size(1)
            raise Failure(
                OTHER_TOKENS,
                what=what,
                row=row,
                step=step,
                got=int(ids[row, T0 + step]),
                want=int(reference[row, T0 + step]),
            )

    return verdict


def _mistakes(temperature, top_k):
    """(misconception, the _generate arguments that model it, details), tried in order."""
    found = [(CROP_FIRST, {"crop": "first"}, {})]
    if temperature not in (0, 1):
        found += [
            (TEMPERATURE_AFTER, {"temp": "nowhere"}, {"temperature": temperature}),
            (TEMPERATURE_MULTIPLIED, {"temp": "multiply"}, {"temperature": temperature}),
        ]
    return found


def _first_difference(ids, reference, T0):
    differs = (ids[:, T0:] != reference[:, T0:]).nonzero()
    first = differs[differs[:, 1].argmin()]
    return int(first[0]), int(first[1])


def _check_top_k(ids, x, k, n):
    """Every sampled token is among the k largest logits of its step (ties kept); one that
    is not but is always among the k + 1 largest means a threshold one place too far."""
    V = x["table"].size(0)
    T0 = x["prompt"].size(1)
    outside = None
    extra_only = True
    for step in range(n):
        logits = _step_logits(x, ids, step)
        chosen = logits.gather(1, ids[:, T0 + step : T0 + step + 1])
        kth = logits.topk(min(k, V), dim=-1).values[:, -1:]
        bad = (chosen < kth).flatten().nonzero()
        if len(bad):
            outside = outside or (step, int(bad[0]))
            k1 = logits.topk(min(k + 1, V), dim=-1).values[:, -1:]
            extra_only = extra_only and bool((chosen >= k1).all())
    if outside is not None:
        step, row = outside
        raise Failure(TOPK_EXTRA if extra_only else TOPK_AFTER, k=k, step=step, row=row)


GENERATE.check(
    "generate-sample",
    "sampling with a torch.Generator reproduces the reference's tokens",
    2,
    inputs=probe.inputs_generate,
    probe=probe.probe_sample,
    verdict=_tokens_verdict("sample"),
)
GENERATE.check(
    "generate-temperature",
    "temperatures 0.5 and 2 match the reference's tokens (logits divided before the softmax)",
    2,
    inputs=probe.inputs_generate,
    probe=probe.probe_temperature,
    verdict=_tokens_verdict("temperature"),
)
GENERATE.check(
    "generate-top-k",
    "top_k = k, 1 and V + 5 match the reference's tokens (only the k most likely sampled)",
    2,
    inputs=probe.inputs_generate,
    probe=probe.probe_top_k,
    verdict=_tokens_verdict("top-k"),
)


@GENERATE.check(
    "generate-modes",
    "generate runs without gradients, in eval mode, and restores the model's mode",
    1,
    inputs=probe.inputs_generate,
    probe=probe.probe_modes,
)
def verdict_modes(got, want, x):
    for start in ("train", "eval"):
        if got.get(f"{start}/grad") or got.get(f"{start}/requires_grad"):
            raise Failure(GRAD_TRACKING)
        if got.get(f"{start}/training"):
            raise Failure(TRAIN_MODE)
        if got.get(f"{start}/after") != start:
            raise Failure(MODE_NOT_RESTORED, got=got.get(f"{start}/after"), expected=start)


# --------------------------------------------------------------------------- train (slow)

# Measured by running solutions/gpt.py's train through this check (tools/measure_train.py,
# see docs/gpt.md): the held-out loss after the run, over 20 seeds, was at most
# TRAIN_SOLUTION_LOSS; we ask for below TRAIN_THRESHOLD, a margin for other correct ways of
# drawing the batches. Before training the loss is about log V = 4.06.
TRAIN_SOLUTION_LOSS = 1.58
TRAIN_THRESHOLD = 1.90


def _eval_losses(model, data, starts, T):
    """(next-token loss, copy loss) of `model` on the windows at `starts`."""
    starts = starts % (len(data) - T - 1)
    offsets = torch.arange(T)
    x = data[starts[:, None] + offsets]
    y = data[starts[:, None] + offsets + 1]
    with torch.no_grad():
        logits = model.eval()(x).flatten(0, 1).double()
    return F.cross_entropy(logits, y.flatten()).item(), F.cross_entropy(logits, x.flatten()).item()


def _trained(got, alphabet):
    model = probe.ConvLM(len(alphabet))
    state = {k.removeprefix("state/"): v for k, v in got.items() if k.startswith("state/")}
    try:
        model.load_state_dict({k: v.float() for k, v in state.items()})
    except (RuntimeError, AttributeError, TypeError) as e:
        raise Failure(
            WRONG_TYPE,
            what="the trained model's state_dict",
            expected="the model's own parameters, trained in place",
            got=f"something else ({type(e).__name__})",
        ) from None
    return model


TRAIN = CHECKS.exercise("train", probe=probe.probe_train)


@TRAIN.check(
    "train",
    "train: 200 steps on data/corpus.txt bring the held-out loss below the threshold",
    4,
    inputs=probe.inputs_train,
    timeout=60.0,
    slow=True,
)
def verdict_train(got, want, x):
    steps = probe.TRAIN_ARGS["steps"]
    if "losses_type" in got:
        raise Failure(TRAIN_RESULT, steps=steps, detail=f"it returned a {got['losses_type']}")
    losses = tensor(got, "losses", "the list of losses")
    if losses.shape != (steps,):
        raise Failure(TRAIN_RESULT, steps=steps, detail=f"the list has {losses.numel()} items")
    alphabet, data = probe.corpus()
    T, starts = probe.TRAIN_ARGS["seq_len"], x["eval_starts"].cpu()
    before, _ = _eval_losses(probe.train_model(alphabet, x["model_seed"]), data, starts, T)
    loss, identity = _eval_losses(_trained(got, alphabet), data, starts, T)
    high = {"loss": loss, "solution": TRAIN_SOLUTION_LOSS, "threshold": TRAIN_THRESHOLD}
    if not math.isfinite(loss) or not torch.isfinite(losses).all():
        raise Failure(TRAIN_LOSS_HIGH, **high)
    if abs(loss - before) < 1e-4:
        raise Failure(TRAIN_NO_UPDATE, before=before, loss=loss)
    if loss >= TRAIN_THRESHOLD and identity < 1.0:
        raise Failure(TRAIN_NOT_SHIFTED, identity=identity, loss=loss)
    if loss >= TRAIN_THRESHOLD:
        raise Failure(TRAIN_LOSS_HIGH, **high)
