"""Judge side of kvcache.py's checks: misconceptions, models of wrong decoding, verdicts.

Only the checks titled "matches the reference" compare values with it. The cache checks judge
what append returned against the student's own inputs; the positions and incremental checks
judge the student's own runs (a cached step against the same code run on the whole prefix),
with guards that zeros or constants cannot pass. A failed comparison is named by running, in
float64, the decoding a known mistake gives on the same weights and tokens.
"""

from __future__ import annotations

import math
import re

import torch

from ...core import WRONG_SHAPE, WRONG_TYPE, CheckList, Failure, Misconceptions, no_reference
from ...verdicts import ModelUnavailable, assert_close, close, model, tensor
from ..rotary.judge import ROTATES_V
from . import probe

misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

CHECKS = CheckList("kvcache")

# --------------------------------------------------------------------------- misconceptions

POSITIONS_RESTART = misconception(
    "kv-positions-restart",
    "{what}: the new tokens were rotated at positions 0, 1, ... although the cache already "
    "held {p0} tokens. A cached step must continue the positions: p0, p0 + 1, ...",
    (
        "A token's position is where it sits in the whole sequence, not in this call's "
        "input: after p0 cached tokens, the next one is at position p0.",
        "Read p0 from the cache (cache.length(layer)) before appending, and build the "
        "positions with torch.arange starting at p0.",
        "The positions are torch.arange(p0, p0 + T) on x's device, with p0 = cache.length(layer) "
        "read before append; pass them to apply_rotary for both q and k, and use them for the "
        "causal mask.",
    ),
)
WRONG_AXIS = misconception(
    "kv-append-wrong-axis",
    "{what} has shape {got}, expected {expected}: you concatenated along dim {dim} ({axis}), "
    "not along the time axis, dim 2.",
    (
        "A cache grows in time only: every new token adds one row per head; the batch, the "
        "heads and the features keep their sizes.",
        "Concatenate the old and the new tensors with torch.cat along the time axis of "
        "(B, H_kv, T, d), which is dim 2 (or dim=-2).",
        "torch.cat([old_k, k], dim=2), and the same for v.",
    ),
)
NEW_ONLY = misconception(
    "kv-append-new-only",
    "{what}: append returned only this call's tokens ({T}), not all {S} cached so far: the "
    "new tokens cannot attend to the earlier ones.",
    (
        "The point of the cache is to give attention every key and value seen so far: the "
        "old ones from the cache, the new ones from this call.",
        "Store the concatenation in self.keys[layer] / self.values[layer] and return the "
        "stored tensors, not the arguments.",
        "self.keys[layer] = torch.cat([old, k], dim=2); ...; return self.keys[layer], "
        "self.values[layer].",
    ),
)
LAYERS_SHARED = misconception(
    "kv-layers-share-cache",
    "{what}: the keys of different layers were stored together. Each layer has its own keys "
    "and values (layer 0's keys are not layer 1's).",
    (
        "Every attention layer projects its own keys and values, so each needs its own "
        "history; one list for all layers mixes them.",
        "Index the stores by the layer argument: self.keys[layer], self.values[layer].",
        "old = self.keys[layer]; ... self.keys[layer] = torch.cat([old, k], dim=2).",
    ),
)
LENGTH_CALLS = misconception(
    "kv-length-counts-calls",
    "KVCache.length({layer}) returned {got} after {calls} calls to append, but the layer holds "
    "{expected} tokens: length counts tokens, not calls (a prefill adds several at once).",
    (
        "The length of the cache is the position of the next token: a prefill of a 5-token "
        "prompt moves it by 5, not by 1.",
        "Read it from the cached keys: the size of their time axis (dim 2).",
        "self.keys[layer].size(2) once the layer holds keys, and 0 while self.keys[layer] is None.",
    ),
)
LENGTH_WRONG = misconception(
    "kv-length-wrong",
    "KVCache.length({layer}) returned {got}, but the layer holds {expected} tokens.",
    (
        "length is the number of tokens cached in that layer, 0 while it is empty; it is "
        "the next token's position.",
        "Use the size of the time axis (dim 2) of the layer's cached keys, and 0 when the "
        "layer holds nothing; return a Python int.",
        "self.keys[layer].size(2) (an int), or 0 when self.keys[layer] is None; not the "
        "number of calls, nor a size of another axis.",
    ),
)
APPEND_FAILED = misconception(
    "kv-append-failed",
    "KVCache.append failed on a correct call ({where}): {error}.",
    (
        "Appending T new tokens (T = 1 for a step, several for a prefill) to a layer must "
        "work whatever was cached before, and on an empty layer.",
        "An empty layer holds None: store k and v as they are; otherwise concatenate along "
        "dim 2 with torch.cat. Only raise ValueError for the mismatches the docstring names.",
        "When self.keys[layer] is None, store k and v; otherwise torch.cat([self.keys[layer], "
        "k], dim=2) and the same for the values.",
    ),
)
NO_VALUEERROR = misconception(
    "kv-append-no-valueerror",
    "KVCache.append({case}) should raise ValueError, but it {got}.",
    (
        "A cache that silently accepts a tensor of the wrong shape fails later, far from the "
        "mistake; bad input should stop at once with a clear message.",
        "Compare the shapes before concatenating: k.shape[:3] with v.shape[:3], and every "
        "axis but dim 2 with what the layer holds; raise ValueError when they differ.",
        "When k.shape[:3] != v.shape[:3], raise a ValueError(f'... k {{tuple(k.shape)}} ... v "
        "{{tuple(v.shape)}}'), and the same when a step does not fit self.keys[layer].",
    ),
)
ERROR_UNCLEAR = misconception(
    "kv-append-error-unclear",
    "KVCache.append({case}) raised ValueError, but its message ({text!r}) does not give the "
    "shapes: the reader cannot see which tensor was wrong.",
    (
        "An error message should let the reader fix the call without a debugger: say what "
        "was expected and what came.",
        "Put the shapes in the message (tuple(k.shape), tuple(v.shape), the cached shape).",
        "ValueError(f'k of shape {{tuple(k.shape)}} does not fit the cache of shape "
        "{{tuple(old.shape)}}')",
    ),
)
CACHE_UNROTATED = misconception(
    "kv-cache-unrotated-keys",
    "Your cache holds the keys before rotation. This kit's convention (LLaMA's and Hugging "
    "Face's) caches them after: each key is turned once, at its own position, and never again.",
    (
        "Rotating before caching means no cached key ever needs turning again; caching raw "
        "keys forces every step to rotate the whole cache, work that grows with its length.",
        "Call apply_rotary on the new keys first, then append the rotated keys.",
        "k = apply_rotary(k, positions, self.base) before keys, values = cache.append(layer, "
        "k, v).",
    ),
)
KEYS_UNROTATED = misconception(
    "kv-keys-used-unrotated",
    "{what}: the keys you attended over were never rotated (you appended them before "
    "apply_rotary and used what append returned), while the queries were.",
    (
        "Scores see relative positions only when both the query and the key are turned; "
        "keys taken from the cache before rotation are plain projections.",
        "Rotate the new keys with apply_rotary first, then append them, and attend over what "
        "append returns.",
        "q, k = apply_rotary(q, positions, ...), apply_rotary(k, positions, ...); then "
        "keys, values = cache.append(layer, k, v).",
    ),
)
ROTATED_TWICE = misconception(
    "kv-keys-rotated-twice",
    "{what}: the keys were rotated twice (turned at their position before caching, then the "
    "whole cache turned again), so a key at position p ends up turned by 2p.",
    (
        "Rotation is applied once per key, at its position; cached keys are already turned.",
        "Mix no conventions: rotate the new keys, append them, and use the cache's keys as "
        "they are.",
        "keys, values = cache.append(layer, apply_rotary(k, positions, ...), v): no "
        "apply_rotary on keys afterwards.",
    ),
)
NO_MASK = misconception(
    "kv-prefill-no-mask",
    "{what}: a prefill of several tokens attended without a causal mask, so each prompt token "
    "saw the tokens after it. A single step needs no mask; a prefill does.",
    (
        "In a prefill all prompt tokens are computed at once, and each must still see only "
        "itself and the tokens before it, as when they were generated one by one.",
        "Build a (T, S) bool mask, True where the key's position is greater than the "
        "query's, and pass it to scaled_dot_product_attention.",
        "mask = torch.arange(S)[None, :] > positions[:, None]  # (T, S), True = a future key",
    ),
)
MASK_NOT_OFFSET = misconception(
    "kv-mask-not-offset",
    "{what}: your causal mask is the (T, S) upper triangle, which lines query i up with key i. "
    "With p0 cached tokens, query i sits at position p0 + i: it may see keys 0 .. p0 + i.",
    (
        "The mask compares positions in the whole sequence; the new queries start at p0, the "
        "keys at 0.",
        "Compare the key positions 0 .. S-1 with the query positions p0 .. p0 + T - 1 "
        "(broadcasting), or shift the triangle's diagonal by p0.",
        "mask = torch.arange(S)[None, :] > positions[:, None], with positions = p0 + "
        "torch.arange(T).",
    ),
)
NOT_RESET = misconception(
    "kv-cache-not-reset",
    "{what}: the keys and values of the previous call's sequence were still in the cache: a "
    "new sequence must start with an empty cache.",
    (
        "A cache belongs to one batch of sequences; keeping it across calls lets an old text "
        "leak into the attention of a new one.",
        "Create the cache inside greedy_decode, once per call (or call reset() first), never at "
        "module level, as a default argument or on the model.",
        "cache = KVCache(len(model.layers)) as the first line of greedy_decode when use_cache.",
    ),
)
FEEDS_ALL = misconception(
    "kv-generate-feeds-all",
    "{what}: with the cache, each step fed the whole sequence again, so the cache holds every "
    "old token several times. After the prefill, feed only the token just chosen.",
    (
        "The cache already holds the keys and values of every earlier token; a step only "
        "adds the newest one.",
        "After the prefill call on the prompt, call the model on a (B, 1) tensor: the token "
        "chosen at the previous step.",
        "After the prefill, model(next_token, cache) with next_token of shape (B, 1), never "
        "model(tokens, cache).",
    ),
)
NOT_GREEDY = misconception(
    "kv-generate-not-greedy",
    "greedy_decode's token {index} is {got}, but the logits it returned for that step have their "
    "maximum at {expected}: greedy decoding picks the argmax of the last position's logits.",
    (
        "Greedy decoding takes the most likely token at each step, from the logits of the "
        "last position only.",
        "Take logits[:, -1] (B, V), then argmax over the vocabulary (dim=-1), and append it.",
        "logits[:, -1].argmax(dim=-1, keepdim=True) is the (B, 1) next token; it is what you "
        "append to the tokens and what you feed at the next step.",
    ),
)
PROMPT_LOST = misconception(
    "kv-generate-prompt-lost",
    "greedy_decode's tokens should start with the prompt ({T0} tokens) and then hold the {n} new "
    "ones; yours do not start with the prompt.",
    (
        "greedy_decode returns the whole sequence: the prompt, then what it generated.",
        "Start the tokens from the prompt and torch.cat each chosen token after them, along dim 1.",
        "Begin with tokens = prompt; at each step torch.cat([tokens, ...], dim=1) with the "
        "(B, 1) chosen token.",
    ),
)
STEP_FAILED = misconception(
    "kv-decoding-failed",
    "{what} failed at {where}: {error}",
    (
        "Decoding calls the same code on inputs of different lengths: a prefill of several "
        "tokens, then single tokens, and without a cache the whole sequence.",
        "Check the shapes at each step against the docstrings: x (B, T, D), the cache "
        "(B, H_kv, T_so_far, d_k), the mask (T, S).",
        "Print q.shape, keys.shape and mask.shape at each call of forward, for T = 1 and "
        "T > 1, with and without a cache.",
    ),
)
INCREMENTAL_DIFFERS = misconception(
    "kv-incremental-differs",
    "{what}: {where}, your cached result differs from recomputing the whole prefix without a "
    "cache (largest difference {err:.3g}). The cache must change the cost, never the result.",
    (
        "With a cache, a step must see exactly what a full recomputation sees: the same keys "
        "and values, at the same positions, under the same causal mask.",
        "Compare, for one step, the positions, the keys after append and the mask with the "
        "ones the full run uses for the last row.",
        "positions = p0 + torch.arange(T); keys, values = cache.append(layer, rotated k, v); "
        "mask = torch.arange(S)[None, :] > positions[:, None].",
    ),
)
DEGENERATE = misconception(
    "kv-output-degenerate",
    "{what} is {how}: that is not attention over the sequence, whatever a cache does.",
    (
        "A property (cached equals recomputed) holds trivially for constant outputs; the "
        "model must first compute something.",
        "Run the layer or the model without a cache and check its output against the "
        "docstring's equations.",
        "out = self.w_o(merged heads of scaled_dot_product_attention(q, keys, values, mask)).",
    ),
)

# --------------------------------------------------------------------------- models
# What cached decoding with a given mistake computes, in float64, to recognise it.

# A float32 run against a float64 model of the same computation (two layers, norms):
# errors of a few float32 epsilons times the sizes, far below what a mistake changes.
MODEL_TOL = {"atol": 1e-4, "rtol": 1e-4}
# Two float32 runs of the student's own code (a cached step, the full recomputation): the
# same operations on differently shaped inputs, so summation orders differ.
OWN_TOL = {"atol": 1e-5, "rtol": 1e-5}


@model
def _rope(x, positions, base=10000.0):
    """The rotary model (halves convention), float64 in, float64 out: judge-side, because the
    student copy of the kit leaves out rotary's stand-in (it is an exercise)."""
    half = x.size(-1) // 2
    theta = float(base) ** (-torch.arange(half, dtype=torch.float64) * (2.0 / x.size(-1)))
    angles = torch.outer(positions.to(torch.float64), theta)
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * torch.polar(
        torch.ones_like(angles), angles
    )
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


class _Cache:
    def __init__(self, layers):
        self.k = [None] * layers
        self.v = [None] * layers


def _linear(x, state, name):
    return x @ state[name].double().T


def _split(t, n):
    B, T, F = t.shape
    return t.reshape(B, T, n, F // n).transpose(1, 2)


@model
def _mask(how, T, S, positions, key_positions):
    if "no-mask" in how:
        return torch.zeros(T, S, dtype=torch.bool)
    if "mask-not-offset" in how:
        return torch.ones(T, S, dtype=torch.bool).triu(1)
    if "restart-mask" in how:
        return key_positions[None, :] > torch.arange(T)[:, None]
    return key_positions[None, :] > positions[:, None]


@model
def _layer64(x, cfg, state, prefix, cache, layer, how=()):
    """One CachedAttention call in float64, with the mistakes named in `how`."""
    x = x.double()
    B, T, D = x.shape
    H, H_kv, base = cfg["H"], cfg["H_kv"], cfg["base"]
    old = cache.k[layer] if cache is not None else None
    p0 = 0 if old is None else old.size(2)
    positions = torch.arange(p0, p0 + T)
    turn = torch.arange(T) if ("restart" in how or "restart-mask" in how) else positions
    q = _rope(_split(_linear(x, state, prefix + "w_q.weight"), H), turn, base)
    k = _split(_linear(x, state, prefix + "w_k.weight"), H_kv)
    v = _split(_linear(x, state, prefix + "w_v.weight"), H_kv)
    if "unrotated" not in how:
        k = _rope(k, turn, base)
    if "values-rotated" in how:
        v = _rope(v, turn, base)
    keys, values = k, v
    if cache is not None:
        if old is not None:
            keys, values = torch.cat([old, k], dim=2), torch.cat([cache.v[layer], v], dim=2)
        cache.k[layer], cache.v[layer] = keys, values
        if "new-only" in how:
            keys, values = k, v
    S = keys.size(2)
    if "twice" in how:
        keys = _rope(keys, torch.arange(S), base)
    mask = _mask(how, T, S, positions, torch.arange(S))
    n_rep = H // H_kv
    keys, values = keys.repeat_interleave(n_rep, 1), values.repeat_interleave(n_rep, 1)
    scores = (q @ keys.transpose(-2, -1) / math.sqrt(D // H)).masked_fill(mask, float("-inf"))
    heads = scores.softmax(dim=-1) @ values
    return _linear(heads.transpose(1, 2).reshape(B, T, D), state, prefix + "w_o.weight")


@model
def _rms(x, weight):
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * weight.double()


@model
def _decoder64(x, calls, how=(), cache=None):
    """TinyDecoder in float64 on each call's tokens in turn (sharing `cache` when given)."""
    state, outs = x["state"], []
    for tokens in calls:
        h = state["token_embed.weight"].double()[tokens]
        for i in range(x["L"]):
            normed = _rms(h, state[f"norms.{i}.weight"])
            h = h + _layer64(normed, x, state, f"layers.{i}.", cache, i, how)
        outs.append(_linear(_rms(h, state["norm.weight"]), state, "lm_head.weight"))
    return outs


# The mistakes a decoding run can show, each with the misconception that names it.
# A single step whose mask lets it see key 0 only outputs that key's value whatever the
# rotation: the mask mistake is named before the restart that also restarts the mask.
LAYER_MISTAKES = (
    (POSITIONS_RESTART, ("restart",)),
    (MASK_NOT_OFFSET, ("mask-not-offset",)),
    (POSITIONS_RESTART, ("restart-mask",)),
    (KEYS_UNROTATED, ("unrotated",)),
    (ROTATED_TWICE, ("twice",)),
    (NO_MASK, ("no-mask",)),
    (NEW_ONLY, ("new-only",)),
    (ROTATES_V, ("values-rotated",)),
)


@model
def _layer_runs(x, how=()):
    """Each call's output and the final cache, in float64, for the layer checks' inputs."""
    cache = _Cache(2)
    outs = [_layer64(xi, x, x["state"], "", cache, x["layer"], how) for xi in x["xs"]]
    return outs, cache


def _details(x, i, what):
    p0 = sum(xi.size(1) for xi in x["xs"][:i])
    T = x["xs"][i].size(1)
    details = {"p0": p0, "T": T, "S": p0 + T}
    return details if what is None else {"what": what, **details}


def _layer_candidates(x, i, what=None):
    """(misconception, lazy float32 output of call i under that mistake, details); `what` is
    left to assert_close when None."""

    def lazy(how):
        return lambda: _layer_runs(x, how)[0][i].float()

    return [(m, lazy(how), _details(x, i, what)) for m, how in LAYER_MISTAKES]


def _failed(got, what):
    if "error" in got:
        at = got.get("error-at")
        where = "the call on the whole sequence (no cache)" if at == "full" else f"call {at}"
        raise Failure(STEP_FAILED, what=what, where=where, error=str(got["error"])[:300])


def _calls_text(x):
    return " + ".join(str(xi.size(1)) for xi in x["xs"])


def _outputs(got, x, what):
    outs = []
    for i, xi in enumerate(x["xs"]):
        outs.append(tensor(got, f"out{i}", f"{what}, call {i}", shape=xi.shape, dtype=xi.dtype))
    return outs


# --------------------------------------------------------------------------- KVCache


AXES = {0: "the batch", 1: "the heads", 3: "the features"}


def _cache_run(got, x, key):
    """One run of appends: every returned tensor is the concatenation along dim 2 of what
    this layer was given, and length() counts its tokens."""
    calls = x[key]
    _length_ok(got.get(f"{key}/len-empty"), 0, 0, 0)
    given = [[], []]
    for i, call in enumerate(calls):
        for layer, (k, v) in enumerate(call):
            if f"{key}/error-at" in got and got[f"{key}/error-at"] == f"{i}/{layer}":
                where = f"call {i} on layer {layer}, {k.size(2)} new tokens"
                raise Failure(APPEND_FAILED, where=where, error=str(got[f"{key}/error"])[:300])
            given[layer].append((k, v))
            for j, name in ((0, "keys"), (1, "values")):
                what = f"KVCache.append's {name} after call {i} on layer {layer}"
                _appended(got, f"{key}/{i}/{layer}/{'kv'[j]}", what, given, layer, j)
            _length_ok(got.get(f"{key}/{i}/{layer}/len"), layer, i + 1, _tokens(given[layer]))


def _tokens(pairs):
    return sum(k.size(2) for k, _ in pairs)


def _appended(got, key, what, given, layer, j):
    parts = [pair[j] for pair in given[layer]]
    expected = torch.cat(parts, dim=2)
    value = got.get(key)
    if type(value) is not torch.Tensor:
        tensor(got, key, what)
    if tuple(value.shape) != tuple(expected.shape):
        shape = tuple(value.shape)
        if len(parts) > 1 and shape == tuple(parts[-1].shape):
            raise Failure(NEW_ONLY, what=what, T=parts[-1].size(2), S=expected.size(2))
        for dim, axis in AXES.items():
            if shape == tuple(torch.cat(parts, dim=dim).shape):
                raise Failure(
                    WRONG_AXIS, what=what, got=shape, expected=tuple(expected.shape), dim=dim,
                    axis=axis,
                )  # fmt: skip
        both = [p[j] for pairs in zip(*given, strict=False) for p in pairs]
        if shape[2] == sum(t.size(2) for t in both) or shape[2] > expected.size(2):
            raise Failure(LAYERS_SHARED, what=what)
        raise Failure(WRONG_SHAPE, what=what, got=shape, expected=tuple(expected.shape))
    assert_close(value, expected, what)


def _length_ok(value, layer, calls, expected):
    if value == expected and type(value) is int:
        return
    if value == calls and type(value) is int:
        raise Failure(LENGTH_CALLS, layer=layer, got=value, calls=calls, expected=expected)
    raise Failure(LENGTH_WRONG, layer=layer, got=str(value)[:50], expected=expected)


APPEND = CHECKS.exercise("append", probe=probe.probe_append)


@APPEND.check(
    "cache-shapes",
    "KVCache.append returns every key and value so far, (B, H_kv, T_so_far, d), per layer; "
    "length() counts the tokens",
    2,
    inputs=probe.inputs_append,
)
@no_reference
def verdict_append(got, want, x):
    """Judged on the student's own inputs: after each call, the returned keys and values are
    the layer's appends so far, concatenated along the time axis."""
    _cache_run(got, x, "single")
    _cache_run(got, x, "chunks")


def _shape_text(t):
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _says_shape(text, tensors):
    """Whether a message gives a shape: the word, or the sizes of one of the tensors."""
    if "shape" in text.lower():
        return True
    return any(re.search(r"\D*".join(str(s) for s in t.shape), text) is not None for t in tensors)


@APPEND.check(
    "cache-errors",
    "KVCache.append rejects k and v of different lengths, and a step that does not fit the "
    "cache, with a ValueError giving the shapes",
    1,
    inputs=probe.inputs_append_errors,
    probe=probe.probe_append_errors,
)
@no_reference
def verdict_append_errors(got, want, x):
    k, v = x["kv"]
    (k1, _), (k2, v2) = x["step"]
    cases = {
        "kv": (f"k {_shape_text(k)}, v {_shape_text(v)}", (k, v)),
        "step": (
            f"k {_shape_text(k2)} after k {_shape_text(k1)} in the same layer",
            (k1, k2, v2),
        ),
    }
    if got.get("first/outcome") != "returned":
        what = f"k {_shape_text(k1)} on an empty layer"
        raise Failure(APPEND_FAILED, where=what, error=str(got.get("first/outcome"))[:100])
    for case, (text, tensors) in cases.items():
        outcome = got.get(f"{case}/outcome")
        if outcome != "ValueError":
            raise Failure(NO_VALUEERROR, case=text, got=str(outcome)[:100])
        message = str(got.get(f"{case}/text", ""))[:300]
        if not _says_shape(message, tensors):
            raise Failure(ERROR_UNCLEAR, case=text, text=message)


# --------------------------------------------------------------------------- CachedAttention


FORWARD = CHECKS.exercise("forward", probe=probe.probe_layer)


@FORWARD.check(
    "reference",
    "CachedAttention matches the reference: a prefill of several tokens, single steps, a "
    "2-token chunk, and the whole sequence without a cache",
    3,
    inputs=probe.inputs_layer,
)
def verdict_layer(got, want, x):
    what = f"CachedAttention on calls of {_calls_text(x)} tokens"
    _failed(got, what)
    for i, out in enumerate(_outputs(got, x, what)):
        details = f"{what}, call {i}"
        assert_close(out, want[f"out{i}"], details, _layer_candidates(x, i))
    whole = torch.cat(x["xs"], dim=1)
    full = tensor(got, "full", what + " without a cache", shape=whole.shape, dtype=whole.dtype)
    no_cache = what + " without a cache"

    def mistake(how):
        return lambda: _layer64(whole, x, x["state"], "", None, 0, how).float()

    candidates = [
        (NO_MASK, mistake(("no-mask",)), {}),
        (ROTATES_V, mistake(("values-rotated",)), {}),
        (KEYS_UNROTATED, mistake(("unrotated",)), {}),
    ]
    assert_close(full, want["full"], no_cache, candidates)


@FORWARD.check(
    "cache-contents",
    "the cache holds the keys after rotation (each at its own position) and the values as they are",
    1,
    inputs=probe.inputs_layer,
)
def verdict_contents(got, want, x):
    _failed(got, "CachedAttention")

    def stored(name, how=()):
        """The layer's cached keys or values at the end, float32, under the mistakes `how`."""
        return lambda: getattr(_layer_runs(x, how)[1], name[0])[x["layer"]].float()

    p0 = {"p0": x["xs"][0].size(1)}
    for name, wrong in (
        (
            "keys",
            [
                (CACHE_UNROTATED, stored("keys", ("unrotated",)), {}),
                (POSITIONS_RESTART, stored("keys", ("restart",)), p0),
            ],
        ),
        ("values", [(ROTATES_V, stored("values", ("values-rotated",)), {})]),
    ):
        try:
            expected = stored(name)()
        except ModelUnavailable:  # the student copy: the reference's cache (float32)
            expected = want[f"cache/{name}"]
        what = f"the cache's {name}[{x['layer']}] after calls of {_calls_text(x)} tokens"
        value = tensor(got, f"cache/{name}", what, shape=expected.shape, dtype=torch.float32)
        assert_close(value, expected, what, wrong, tol=MODEL_TOL)


def _degenerate(value, what):
    """Fails outputs no attention gives: non-finite, all zero, or the same for every row."""
    if not torch.isfinite(value).all():
        raise Failure(DEGENERATE, what=what, how="not finite (NaN or infinity)")
    flat = value.reshape(-1, value.size(-1)).double()
    if flat.abs().max() == 0:
        raise Failure(DEGENERATE, what=what, how="all zero")
    if flat.size(0) > 1 and (flat - flat[:1]).abs().max() <= 1e-6:
        raise Failure(DEGENERATE, what=what, how="the same for every token")


def _named(value, candidates):
    """Raise the first candidate's Failure whose output matches value (MODEL_TOL); a
    candidate whose model the student copy lacks is skipped."""
    for mistake, output, details in candidates:
        try:
            named = close(value, output(), MODEL_TOL)
        except ModelUnavailable:
            continue
        if named:
            raise Failure(mistake, **details)


@FORWARD.check(
    "positions",
    "positions continue across steps: after p0 = 40 .. 120 cached tokens, a step equals the "
    "last row of your own run on the whole sequence",
    2,
    inputs=probe.inputs_positions,
)
@no_reference
def verdict_positions(got, want, x):
    """Judged on the student's own runs: each cached call's output equals the rows of the
    same layer run once on the whole sequence without a cache (which must be attention: not
    constant, finite)."""
    what = f"CachedAttention after a prefill of {x['xs'][0].size(1)} tokens"
    _failed(got, what)
    outs = _outputs(got, x, what)
    whole = torch.cat(x["xs"], dim=1)
    full = tensor(got, "full", what + " without a cache", shape=whole.shape, dtype=whole.dtype)
    _degenerate(full, what + " without a cache")
    start = 0
    for i, out in enumerate(outs):
        rows = full[:, start : start + out.size(1)]
        start += out.size(1)
        if close(out, rows, OWN_TOL):
            continue
        step = f"{what}, call {i}"
        _named(out, _layer_candidates(x, i, step))
        err = float((out.double() - rows.double()).abs().max())
        where = f"at call {i} ({out.size(1)} tokens after {start - out.size(1)})"
        raise Failure(INCREMENTAL_DIFFERS, what=what, where=where, err=err)


# --------------------------------------------------------------------------- greedy_decode


def _generated(got, key, x, prompt):
    """The (tokens, logits) of one greedy_decode run, after type, shape and prompt guards."""
    what = "greedy_decode" + ("(..., use_cache=False)" if key == "nocache" else "")
    if f"{key}/error" in got:
        where = "a call to the model"
        raise Failure(STEP_FAILED, what=what, where=where, error=str(got[f"{key}/error"])[:300])
    B, T0 = prompt.shape
    n = x["n"]
    tokens = tensor(got, f"{key}/tokens", f"{what}'s tokens", shape=(B, T0 + n))
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise Failure(
            WRONG_TYPE, what=f"{what}'s tokens", expected="int64 tokens", got=tokens.dtype
        )
    logits = tensor(
        got, f"{key}/logits", f"{what}'s logits", shape=(B, n, x["V"]), dtype=torch.float32
    )
    if not torch.equal(tokens[:, :T0].long(), prompt):
        raise Failure(PROMPT_LOST, T0=T0, n=n)
    chosen = logits.argmax(dim=-1)
    for i in range(n):
        picked = tokens[:, T0 + i].long()
        best = logits[:, i].gather(1, chosen[:, i : i + 1]).squeeze(1)
        mine = logits[:, i].gather(1, picked[:, None].clamp(0, x["V"] - 1)).squeeze(1)
        if ((picked < 0) | (picked >= x["V"]) | (best - mine > 1e-6)).any():
            b = int(((picked != chosen[:, i]) | (picked < 0)).nonzero()[0])
            raise Failure(NOT_GREEDY, index=T0 + i, got=int(picked[b]), expected=int(chosen[b, i]))
    return tokens.long(), logits


def _steps(tokens, T0):
    """The calls of cached decoding on these tokens: the prompt, then one token at a time."""
    n = tokens.size(1) - T0
    return [tokens[:, :T0]] + [tokens[:, T0 + i : T0 + i + 1] for i in range(n - 1)]


@model
def _decoded(x, calls, how=(), cache=None):
    return torch.stack([out[:, -1] for out in _decoder64(x, calls, how, cache)], dim=1).float()


def _generate_candidates(got, x, tokens, T0, what=None, use_cache=True):
    """(misconception, lazy (B, n, V) float32 logits of greedy_decode with that mistake on these
    tokens, details). Without the cache, each step recomputes its prefix."""
    n = tokens.size(1) - T0
    details = {"p0": T0, "T": 1, "S": T0 + 1}
    if what is not None:
        details["what"] = what
    if not use_cache:
        prefixes = [tokens[:, : T0 + i] for i in range(n)]
        return [
            (m, (lambda how=how: _decoded(x, prefixes, how)), details)
            for m, how in LAYER_MISTAKES
            if how[0] in ("no-mask", "values-rotated", "unrotated")
        ]
    calls = _steps(tokens, T0)
    found = [
        (m, (lambda how=how: _decoded(x, calls, how, _Cache(x["L"]))), details)
        for m, how in LAYER_MISTAKES
    ]
    every = [tokens[:, : T0 + i] for i in range(n)]
    found.append((FEEDS_ALL, lambda: _decoded(x, every, (), _Cache(x["L"])), details))
    earlier = got.get("a/tokens")
    if type(earlier) is torch.Tensor and earlier.shape[0] == tokens.shape[0]:

        def leaked():
            cache = _Cache(x["L"])
            _decoder64(x, _steps(earlier.long(), x["prompts"][0].size(1)), (), cache)
            return _decoded(x, calls, (), cache)

        found.append((NOT_RESET, leaked, details))
    return found


GREEDY_DECODE = CHECKS.exercise("greedy_decode", probe=probe.probe_incremental)


@GREEDY_DECODE.check(
    "incremental",
    "incremental decoding gives the same logits as recomputing the whole prefix, at every "
    "step (your own runs)",
    3,
    inputs=probe.inputs_generate,
)
@no_reference
def verdict_incremental(got, want, x):
    """Judged on the student's own runs: greedy_decode on prompt B (after a run on prompt A) gives,
    at each step, the logits that one call of the student's model without a cache gives on the
    whole prefix; those must be a model's logits (finite, not constant)."""
    (a, b), n = x["prompts"], x["n"]
    _generated(got, "a", x, a)
    tokens, logits = _generated(got, "b", x, b)
    T0 = b.size(1)
    what = "greedy_decode's logits with the cache"
    full = got.get("full")
    if isinstance(full, str):
        where = "the model without a cache, on the whole prefix"
        raise Failure(STEP_FAILED, what="TinyDecoder", where=where, error=full[:300])
    shape = (b.size(0), T0 + n - 1, x["V"])
    full = tensor({"full": full}, "full", "the model's logits without a cache", shape=shape)
    _degenerate(full, "the model's logits without a cache")
    expected = full[:, T0 - 1 :].float()
    if close(logits, expected, OWN_TOL):
        return
    _named(logits, _generate_candidates(got, x, tokens, T0, what))
    # The cached run is right but the full run is not: the mistake is in the no-cache path.
    try:
        cached_right = close(logits, _decoded(x, _steps(tokens, T0), (), _Cache(x["L"])), MODEL_TOL)
    except ModelUnavailable:  # the student copy: the mistake is not named there
        cached_right = False
    if cached_right:
        no_cache = "the model without a cache"
        _named(expected, [(NO_MASK, lambda: _decoded(x, [tokens[:, :-1]], ("no-mask",)),
                           {"what": no_cache})])  # fmt: skip
    diff = (logits.double() - expected.double()).abs().amax(dim=(0, 2))
    step = int((diff > OWN_TOL["atol"] + OWN_TOL["rtol"] * expected.abs().max()).nonzero()[0])
    where = f"at new token {step}"
    raise Failure(INCREMENTAL_DIFFERS, what=what, where=where, err=float(diff[step]))


def _same_run(got, want, x, key):
    """Tokens and logits as the reference's, step by step: if the tokens part at a step whose
    logits agree (a near tie between two tokens), the rest is not compared. A difference is
    named by the mistakes' logits on the student's own tokens."""
    prompt = x["prompts"][0]
    tokens, logits = _generated(got, key, x, prompt)
    T0 = prompt.size(1)
    what = "greedy_decode" + ("(..., use_cache=False)" if key == "nocache" else "")
    found = _generate_candidates(got, x, tokens, T0, use_cache=key == "cache")
    memo = {}

    def step(j, i):
        def output():
            if j not in memo:
                memo[j] = found[j][1]()
            return memo[j][:, i]

        return output

    for i in range(x["n"]):
        candidates = [(m, step(j, i), d) for j, (m, _, d) in enumerate(found)]
        expected = want[f"{key}/logits"][:, i]
        assert_close(logits[:, i], expected, f"{what}'s logits for new token {i}", candidates)
        if not torch.equal(tokens[:, T0 + i], want[f"{key}/tokens"][:, T0 + i]):
            return


@GREEDY_DECODE.check(
    "generate",
    "greedy_decode matches the reference: greedy tokens and their logits, with and without the "
    "cache (weights loaded)",
    1,
    inputs=probe.inputs_generate,
    probe=probe.probe_generate,
)
def verdict_generate(got, want, x):
    for key in ("cache", "nocache"):
        _same_run(got, want, x, key)
