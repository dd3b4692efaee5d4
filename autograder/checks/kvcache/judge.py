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

from ...core import WRONG_SHAPE, WRONG_TYPE, CheckList, Failure
from ...misconception_data import misconceptions_of
from ...verdicts import ModelUnavailable, assert_close, close, model, tensor
from ..rotary.judge import ROTATES_V
from . import probe

CHECKS = CheckList("kvcache")

# --------------------------------------------------------------------------- misconceptions

MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: texts and hint ladders
POSITIONS_RESTART = MISTAKES["kv-positions-restart"]
WRONG_AXIS = MISTAKES["kv-append-wrong-axis"]
NEW_ONLY = MISTAKES["kv-append-new-only"]
LAYERS_SHARED = MISTAKES["kv-layers-share-cache"]
LENGTH_CALLS = MISTAKES["kv-length-counts-calls"]
LENGTH_WRONG = MISTAKES["kv-length-wrong"]
APPEND_FAILED = MISTAKES["kv-append-failed"]
NO_VALUEERROR = MISTAKES["kv-append-no-valueerror"]
ERROR_UNCLEAR = MISTAKES["kv-append-error-unclear"]
CACHE_UNROTATED = MISTAKES["kv-cache-unrotated-keys"]
KEYS_UNROTATED = MISTAKES["kv-keys-used-unrotated"]
ROTATED_TWICE = MISTAKES["kv-keys-rotated-twice"]
NO_MASK = MISTAKES["kv-prefill-no-mask"]
MASK_NOT_OFFSET = MISTAKES["kv-mask-not-offset"]
NOT_RESET = MISTAKES["kv-cache-not-reset"]
FEEDS_ALL = MISTAKES["kv-generate-feeds-all"]
NOT_GREEDY = MISTAKES["kv-generate-not-greedy"]
PROMPT_LOST = MISTAKES["kv-generate-prompt-lost"]
STEP_FAILED = MISTAKES["kv-decoding-failed"]
INCREMENTAL_DIFFERS = MISTAKES["kv-incremental-differs"]
DEGENERATE = MISTAKES["kv-output-degenerate"]

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
