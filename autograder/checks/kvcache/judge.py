"""Judge side of kvcache.py's checks: verdicts (models of wrong decoding: judge_models.py).

Only the checks titled "matches the reference" compare values with it. The cache checks judge
what append returned against the student's own inputs; the positions and incremental checks
judge the student's own runs (a cached step against the same code run on the whole prefix),
with guards that zeros or constants cannot pass. greedy_decode's checks also accept a loop
that is right given what the student's own model returned at each call (the probe's record),
so that a mistake of the layer or the cache is charged in their own checks only. A failed
comparison is named by running, in float64, the decoding a known mistake gives on the same
weights and tokens.
"""

from __future__ import annotations

import re

import torch

from ...core.check import WRONG_SHAPE, WRONG_TYPE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_close, close, model, tensor
from ..rotary.judge import MISTAKES as ROTARY_MISTAKES
from . import judge_models as models
from . import probe

CHECKS = CheckList("kvcache")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders


def _failed(got, what):
    if "error" in got:
        at = got.get("error-at")
        where = "the call on the whole sequence (no cache)" if at == "full" else f"call {at}"
        raise Failure(
            MISTAKES["kv-decoding-failed"], what=what, where=where, error=str(got["error"])[:300]
        )


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
                raise Failure(
                    MISTAKES["kv-append-failed"], where=where, error=str(got[f"{key}/error"])[:300]
                )
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
            raise Failure(
                MISTAKES["kv-append-new-only"], what=what, T=parts[-1].size(2), S=expected.size(2)
            )
        for dim, axis in AXES.items():
            if shape == tuple(torch.cat(parts, dim=dim).shape):
                wrong_axis = MISTAKES["kv-append-wrong-axis"]
                raise Failure(
                    wrong_axis, what=what, got=shape, expected=tuple(expected.shape), dim=dim,
                    axis=axis,
                )  # fmt: skip
        both = [p[j] for pairs in zip(*given, strict=False) for p in pairs]
        if shape[2] == sum(t.size(2) for t in both) or shape[2] > expected.size(2):
            raise Failure(MISTAKES["kv-layers-share-cache"], what=what)
        raise Failure(WRONG_SHAPE, what=what, got=shape, expected=tuple(expected.shape))
    assert_close(value, expected, what)


def _length_ok(value, layer, calls, expected):
    if value == expected and type(value) is int:
        return
    details = {"layer": layer, "expected": expected}
    if value == calls and type(value) is int:
        raise Failure(MISTAKES["kv-length-counts-calls"], got=value, calls=calls, **details)
    raise Failure(MISTAKES["kv-length-wrong"], got=str(value)[:50], **details)


APPEND = CHECKS.exercise("append", probe=probe.probe_append)


@APPEND.check("cache-shapes", inputs=probe.inputs_append)
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


@APPEND.check("cache-errors", inputs=probe.inputs_append_errors, probe=probe.probe_append_errors)
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
        raise Failure(
            MISTAKES["kv-append-failed"], where=what, error=str(got.get("first/outcome"))[:100]
        )
    for case, (text, tensors) in cases.items():
        outcome = got.get(f"{case}/outcome")
        if outcome != "ValueError":
            raise Failure(MISTAKES["kv-append-no-valueerror"], case=text, got=str(outcome)[:100])
        message = str(got.get(f"{case}/text", ""))[:300]
        if not _says_shape(message, tensors):
            raise Failure(MISTAKES["kv-append-error-unclear"], case=text, text=message)


# --------------------------------------------------------------------------- CachedAttention


# --------------------------------------------------------------------------- the cache's own part


def _record(got, prefixes, lengths, B, H_kv, d_k):
    """What the student's own cache was given and returned at each call (the probe's record
    under each prefix): [(p0, k, v, keys, values)], each typed and shaped as the call of
    lengths[i] new tokens needs; None when a call has no such record."""
    calls = []
    for prefix, T in zip(prefixes, lengths, strict=True):
        p0 = got.get(prefix + "len")
        if type(p0) is not int or not 0 <= p0 <= 10**6:
            return None
        found = [got.get(prefix + name) for name in ("k", "v", "keys", "values")]
        if any(type(t) is not torch.Tensor or t.dtype != torch.float32 for t in found):
            return None
        k, v, keys, values = found
        if tuple(k.shape) != (B, H_kv, T, d_k) or tuple(v.shape) != (B, H_kv, T, d_k):
            return None
        S = keys.size(2) if keys.dim() == 4 else 0
        if not 1 <= S <= 10**4 or {tuple(keys.shape), tuple(values.shape)} != {(B, H_kv, S, d_k)}:
            return None
        calls.append((p0, k, v, keys, values))
    return calls


def _given(got, x):
    """The record of the layer checks' calls (probe_layer), or None."""
    prefixes = [f"given/{i}/" for i in range(len(x["xs"]))]
    lengths = [xi.size(1) for xi in x["xs"]]
    return _record(got, prefixes, lengths, x["xs"][0].size(0), x["H_kv"], x["D"] // x["H"])


def _cache_fault(calls):
    """The named mistake of the student's own cache that the record shows, judged from what
    it was given: "new-only" (append returned this call's k and v only, kv-append-new-only)
    or "counts-calls" (length() counted the calls, not the tokens, kv-length-counts-calls;
    append right). None when the cache did its part, or did something else."""
    if calls is None:
        return None
    tokens = [0]
    for _, k, *_ in calls:
        tokens.append(tokens[-1] + k.size(2))
    so_far = [
        (torch.cat([c[1] for c in calls[: i + 1]], 2), torch.cat([c[2] for c in calls[: i + 1]], 2))
        for i in range(len(calls))
    ]
    all_appended = all(
        torch.equal(keys, kk) and torch.equal(values, vv)
        for (_, _, _, keys, values), (kk, vv) in zip(calls, so_far, strict=True)
    )
    lengths = [p0 for p0, *_ in calls]
    if all_appended and lengths == list(range(len(calls))) and lengths != tokens[:-1]:
        return "counts-calls"
    new_only = all(torch.equal(c[3], c[1]) and torch.equal(c[4], c[2]) for c in calls)
    if new_only and lengths == tokens[:-1] and not all_appended:
        return "new-only"
    return None


def _right_given_own_cache(got, x, outs):
    """Whether every cached call of the layer is right given what the student's own cache did
    (a named cache mistake: _cache_fault), the cache's mistake being charged in its own
    checks (docs/fairness.md): the k and v it appended are the layer's at the positions the
    cache's length() gave, and its output is attention over what append returned, all
    computed here (judge_models._layer_given). In the student copy, only where recorded."""
    calls = _given(got, x)
    if _cache_fault(calls) is None:
        return False
    try:
        for i, (out, (p0, k, v, keys, values)) in enumerate(zip(outs, calls, strict=True)):
            o_model, k_model, v_model = models._layer_given(x, i, p0, keys, values)
            tol = models.MODEL_TOL
            if not (
                close(k, k_model.float(), tol)
                and close(v, v_model.float(), tol)
                and close(out, o_model.float(), tol)
            ):
                return False
    except ModelUnavailable:
        return False
    return True


FORWARD = CHECKS.exercise("forward", probe=probe.probe_layer)


@FORWARD.check("reference", inputs=probe.inputs_layer)
def verdict_layer(got, want, x):
    what = f"CachedAttention on calls of {_calls_text(x)} tokens"
    _failed(got, what)
    outs = _outputs(got, x, what)
    right = all(close(out, want[f"out{i}"]) for i, out in enumerate(outs))
    if right or not _right_given_own_cache(got, x, outs):
        for i, out in enumerate(outs):
            details = f"{what}, call {i}"
            assert_close(out, want[f"out{i}"], details, models._layer_candidates(x, i))
    whole = torch.cat(x["xs"], dim=1)
    full = tensor(got, "full", what + " without a cache", shape=whole.shape, dtype=whole.dtype)
    no_cache = what + " without a cache"

    def mistake(how):
        return lambda: models._layer64(whole, x, x["state"], "", None, 0, how).float()

    candidates = [
        (MISTAKES["kv-prefill-no-mask"], mistake(("no-mask",)), {}),
        (ROTARY_MISTAKES["rope-rotates-v"], mistake(("values-rotated",)), {}),
        (MISTAKES["kv-keys-used-unrotated"], mistake(("unrotated",)), {}),
    ]
    assert_close(full, want["full"], no_cache, candidates)


@FORWARD.check("cache-contents", inputs=probe.inputs_layer)
def verdict_contents(got, want, x):
    _failed(got, "CachedAttention")

    def stored(name, how=()):
        """The layer's cached keys or values at the end, float32, under the mistakes `how`."""
        return lambda: getattr(models._layer_runs(x, how)[1], name[0])[x["layer"]].float()

    p0 = {"p0": x["xs"][0].size(1)}
    for name, wrong in (
        (
            "keys",
            [
                (MISTAKES["kv-cache-unrotated-keys"], stored("keys", ("unrotated",)), {}),
                (MISTAKES["kv-positions-restart"], stored("keys", ("restart",)), p0),
                (ROTARY_MISTAKES["rope-interleaved-pairs"], stored("keys", ("interleaved",)), {}),
            ],
        ),
        (
            "values",
            [(ROTARY_MISTAKES["rope-rotates-v"], stored("values", ("values-rotated",)), {})],
        ),
    ):
        try:
            expected = stored(name)()
        except ModelUnavailable:  # the student copy: the reference's cache (float32)
            expected = want[f"cache/{name}"]
        what = f"the cache's {name}[{x['layer']}] after calls of {_calls_text(x)} tokens"
        value = tensor(got, f"cache/{name}", what, shape=expected.shape, dtype=torch.float32)
        assert_close(value, expected, what, wrong, tol=models.MODEL_TOL)


def _degenerate(value, what):
    """Fails outputs no attention gives: non-finite, all zero, or the same for every row."""
    if not torch.isfinite(value).all():
        raise Failure(
            MISTAKES["kv-output-degenerate"], what=what, how="not finite (NaN or infinity)"
        )
    flat = value.reshape(-1, value.size(-1)).double()
    if flat.abs().max() == 0:
        raise Failure(MISTAKES["kv-output-degenerate"], what=what, how="all zero")
    if flat.size(0) > 1 and (flat - flat[:1]).abs().max() <= 1e-6:
        raise Failure(MISTAKES["kv-output-degenerate"], what=what, how="the same for every token")


def _named(value, candidates):
    """Raise the first candidate's Failure whose output matches value (models.MODEL_TOL); a
    candidate whose model the student copy lacks is skipped."""
    for mistake, output, details in candidates:
        try:
            named = close(value, output(), models.MODEL_TOL)
        except ModelUnavailable:
            continue
        if named:
            raise Failure(mistake, **details)


@FORWARD.check("positions", inputs=probe.inputs_positions)
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
    start, excused = 0, None
    for i, out in enumerate(outs):
        rows = full[:, start : start + out.size(1)]
        start += out.size(1)
        if close(out, rows, models.OWN_TOL):
            continue
        if excused is None:  # the cache's mistake, charged in its own checks
            excused = _right_given_own_cache(got, x, outs)
        if excused:
            continue
        step = f"{what}, call {i}"
        _named(out, models._layer_candidates(x, i, step))
        err = float((out.double() - rows.double()).abs().max())
        where = f"at call {i} ({out.size(1)} tokens after {start - out.size(1)})"
        raise Failure(MISTAKES["kv-incremental-differs"], what=what, where=where, err=err)


# --------------------------------------------------------------------------- greedy_decode


def _generated(got, key, x, prompt):
    """The (tokens, logits) of one greedy_decode run, after type, shape and prompt guards."""
    what = "greedy_decode" + ("(..., use_cache=False)" if key == "nocache" else "")
    if f"{key}/error" in got:
        where = "a call to the model"
        raise Failure(
            MISTAKES["kv-decoding-failed"],
            what=what,
            where=where,
            error=str(got[f"{key}/error"])[:300],
        )
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
        raise Failure(MISTAKES["kv-generate-prompt-lost"], T0=T0, n=n)
    chosen = logits.argmax(dim=-1)
    for i in range(n):
        picked = tokens[:, T0 + i].long()
        best = logits[:, i].gather(1, chosen[:, i : i + 1]).squeeze(1)
        mine = logits[:, i].gather(1, picked[:, None].clamp(0, x["V"] - 1)).squeeze(1)
        if ((picked < 0) | (picked >= x["V"]) | (best - mine > 1e-6)).any():
            b = int(((picked != chosen[:, i]) | (picked < 0)).nonzero()[0])
            raise Failure(
                MISTAKES["kv-generate-not-greedy"],
                index=T0 + i,
                got=int(picked[b]),
                expected=int(chosen[b, i]),
            )
    return tokens.long(), logits


def _steps(tokens, T0):
    """The calls of cached decoding on these tokens: the prompt, then one token at a time."""
    n = tokens.size(1) - T0
    return [tokens[:, :T0]] + [tokens[:, T0 + i : T0 + i + 1] for i in range(n - 1)]


@model
def _decoded(x, calls, how=(), cache=None):
    return torch.stack(
        [out[:, -1] for out in models._decoder64(x, calls, how, cache)], dim=1
    ).float()


def _generate_candidates(got, x, tokens, T0, what=None, use_cache=True, run=None):
    """(misconception, lazy (B, n, V) float32 logits of greedy_decode with that mistake on these
    tokens, details). Without the cache, each step recomputes its prefix. run: the run whose
    record (probe._watch) may show which cache each call was given."""
    n = tokens.size(1) - T0
    details = {"p0": T0, "T": 1, "S": T0 + 1}
    if what is not None:
        details["what"] = what
    if not use_cache:
        prefixes = [tokens[:, : T0 + i] for i in range(n)]
        return [
            (m, (lambda how=how: _decoded(x, prefixes, how)), details)
            for m, how in models.LAYER_MISTAKES
            if how[0] in ("no-mask", "values-rotated", "unrotated")
        ]
    calls = _steps(tokens, T0)
    found = [
        (m, (lambda how=how: _decoded(x, calls, how, models._Cache(x["L"]))), details)
        for m, how in models.LAYER_MISTAKES
    ]
    every = [tokens[:, : T0 + i] for i in range(n)]
    found.append(
        (
            MISTAKES["kv-generate-feeds-all"],
            lambda: _decoded(x, every, (), models._Cache(x["L"])),
            details,
        )
    )
    late = [tokens[:, :T0]] + [tokens[:, T0 - 1 + i : T0 + i] for i in range(n - 1)]
    found.append(
        (
            MISTAKES["kv-generate-feeds-previous"],
            lambda: _decoded(x, late, (), models._Cache(x["L"])),
            details,
        )
    )

    def cache_per_step():
        return torch.cat([_decoded(x, [c], (), models._Cache(x["L"])) for c in calls], dim=1)

    # A new cache per step gives what a cache returning the new tokens only gives (one key
    # each step, wherever it sits): the record tells them apart, a new cache at every call.
    record = _model_calls(got, run, tokens.size(0), x["V"]) if run else None
    caches = [which for _, which, _ in record or []]
    apart = len(caches) > 1 and min(caches) >= 0 and len(set(caches)) == len(caches)
    per_step = (MISTAKES["kv-generate-cache-per-step"], cache_per_step, details)
    if apart:
        found.insert(0, per_step)
    else:
        found.append(per_step)
    earlier = got.get("a/tokens")
    if type(earlier) is torch.Tensor and earlier.shape[0] == tokens.shape[0]:

        def leaked():
            cache = models._Cache(x["L"])
            models._decoder64(x, _steps(earlier.long(), x["prompts"][0].size(1)), (), cache)
            return _decoded(x, calls, (), cache)

        found.append((MISTAKES["kv-cache-not-reset"], leaked, details))
    return found


def _decoding_given_own_cache(got, x, run, tokens, T0, logits):
    """Whether a cached greedy_decode run is right given what the student's own cache did
    (a named cache mistake, the same in every layer: _cache_fault), the cache's mistake
    being charged in its own checks: at every call, every layer appended its own k and v at
    the positions the cache's length() gave, and the logits are the model's over what each
    append returned, all computed here (judge_models._decoder_given). In the student copy,
    only where recorded."""
    calls = _steps(tokens, T0)
    lengths = [c.size(1) for c in calls]
    B, H_kv, d_k = tokens.size(0), x["H_kv"], x["D"] // x["H"]
    layers = []
    for layer in range(x["L"]):
        prefixes = [f"{run}/given/{layer}/{s}/" for s in range(len(calls))]
        record = _record(got, prefixes, lengths, B, H_kv, d_k)
        if record is None:
            return False
        layers.append(record)
    faults = {_cache_fault(record) for record in layers}
    if len(faults) != 1 or None in faults:
        return False
    given = [
        [(p0, keys, values) for p0, _, _, keys, values in (record[s] for record in layers)]
        for s in range(len(calls))
    ]
    try:
        model_logits, appended = models._decoder_given(x, calls, given)
    except ModelUnavailable:
        return False
    tol = models.MODEL_TOL
    for s in range(len(calls)):
        for i, record in enumerate(layers):
            k, v = record[s][1:3]
            k_model, v_model = appended[s][i]
            if not (close(k, k_model.float(), tol) and close(v, v_model.float(), tol)):
                return False
    return close(logits, model_logits.float(), tol)


def _model_calls(got, run, B, V):
    """What the student's own model was given and returned at each call of a greedy_decode
    run (the probe's record, probe._watch): [(tokens, cache number, last position's logits
    (B, V))], each typed and shaped; None when the record is missing or malformed."""
    count = got.get(f"{run}/calls")
    if type(count) is not int or not 1 <= count <= probe.MAX_CALLS:
        return None
    calls = []
    for i in range(count):
        prefix = f"{run}/call/{i}/"
        tokens, which, last = (got.get(prefix + name) for name in ("tokens", "cache", "last"))
        if type(which) is not int or type(tokens) is not torch.Tensor:
            return None
        if tokens.dim() != 2 or tokens.size(0) != B or tokens.dtype != torch.int64:
            return None
        if type(last) is not torch.Tensor or last.dtype != torch.float32:
            return None
        if tuple(last.shape) != (B, V):
            return None
        calls.append((tokens, which, last))
    return calls


def _model_computed(lasts):
    """Whether the logits a model returned at each step (n, B, V) are a model's: finite, not
    all zero, not the same over the vocabulary, nor the same at every step and row (a
    constant earns nothing, principle 14)."""
    flat = lasts.reshape(-1, lasts.size(-1)).double()
    if not torch.isfinite(flat).all() or flat.abs().max() == 0:
        return False
    if ((flat.amax(dim=-1) - flat.amin(dim=-1)) <= 1e-6).any():
        return False
    return flat.size(0) > 1 and bool((flat - flat[:1]).abs().max() > 1e-6)


def _loop_right_given_own_model(got, x, run, prompt, tokens, logits, earlier=()):
    """Whether a greedy_decode run is right given what the student's own model returned at
    each call (the probe's record: probe._watch), the model's layers and cache being judged
    in their own checks only (docs/fairness.md): exactly n calls; with the cache (runs other
    than "nocache"), the first one on the prompt with a cache no earlier run (`earlier`) used,
    each later one on the (B, 1) token chosen at the step before with that same cache;
    without, call i on the prompt and the first i tokens chosen, no cache; the logits
    returned for token i are the last position's logits of call i, which must be a model's
    (_model_computed). The tokens being the argmax of the returned logits was checked
    (_generated). Nothing here runs a model: the student copy decides alike."""
    B, T0 = prompt.shape
    n = x["n"]
    calls = _model_calls(got, run, B, x["V"])
    if calls is None or len(calls) != n:
        return False
    before = [_model_calls(got, other, B, x["V"]) or [] for other in earlier]
    used = {which for record in before for _, which, _ in record}
    first = calls[0][1]
    for i, (given, which, _) in enumerate(calls):
        if run == "nocache":
            fed, cache_ok = tokens[:, : T0 + i], which == -1
        else:
            fed = prompt if i == 0 else tokens[:, T0 + i - 1 : T0 + i]
            cache_ok = which >= 0 and which == first and which not in used
        if not cache_ok or given.shape != fed.shape or not torch.equal(given, fed):
            return False
    lasts = torch.stack([last for _, _, last in calls], dim=1)  # (B, n, V)
    return close(logits, lasts, models.OWN_TOL) and _model_computed(lasts.transpose(0, 1))


GREEDY_DECODE = CHECKS.exercise("greedy_decode", probe=probe.probe_incremental)


@GREEDY_DECODE.check("incremental", inputs=probe.inputs_generate)
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
        raise Failure(
            MISTAKES["kv-decoding-failed"], what="TinyDecoder", where=where, error=full[:300]
        )
    shape = (b.size(0), T0 + n - 1, x["V"])
    full = tensor({"full": full}, "full", "the model's logits without a cache", shape=shape)
    _degenerate(full, "the model's logits without a cache")
    expected = full[:, T0 - 1 :].float()
    if close(logits, expected, models.OWN_TOL):
        return
    if _decoding_given_own_cache(got, x, "b", tokens, T0, logits):
        return  # the cache's mistake, charged in its own checks
    if _loop_right_given_own_model(got, x, "b", b, tokens, logits, earlier=("a",)):
        return  # the model's (its layers' or cache's) mistake, charged in their own checks
    _named(logits, _generate_candidates(got, x, tokens, T0, what, run="b"))
    # The cached run is right but the full run is not: the mistake is in the no-cache path.
    try:
        cached_right = close(
            logits, _decoded(x, _steps(tokens, T0), (), models._Cache(x["L"])), models.MODEL_TOL
        )
    except ModelUnavailable:  # the student copy: the mistake is not named there
        cached_right = False
    if cached_right:
        no_cache = "the model without a cache"
        no_mask = MISTAKES["kv-prefill-no-mask"]
        _named(expected, [(no_mask, lambda: _decoded(x, [tokens[:, :-1]], ("no-mask",)),
                           {"what": no_cache})])  # fmt: skip
    diff = (logits.double() - expected.double()).abs().amax(dim=(0, 2))
    step = int(
        (diff > models.OWN_TOL["atol"] + models.OWN_TOL["rtol"] * expected.abs().max()).nonzero()[0]
    )
    where = f"at new token {step}"
    raise Failure(MISTAKES["kv-incremental-differs"], what=what, where=where, err=float(diff[step]))


def _same_run(got, want, x, key):
    """Tokens and logits as the reference's, step by step: if the tokens part at a step whose
    logits agree (a near tie between two tokens), the rest is not compared. A difference is
    named by the mistakes' logits on the student's own tokens."""
    prompt = x["prompts"][0]
    tokens, logits = _generated(got, key, x, prompt)
    T0 = prompt.size(1)
    right = close(logits, want[f"{key}/logits"]) and torch.equal(tokens, want[f"{key}/tokens"])
    if key == "cache" and not right and _decoding_given_own_cache(got, x, key, tokens, T0, logits):
        return  # the cache's mistake, charged in its own checks
    if not right and _loop_right_given_own_model(got, x, key, prompt, tokens, logits):
        return  # the model's (its layers' or cache's) mistake, charged in their own checks
    what = "greedy_decode" + ("(..., use_cache=False)" if key == "nocache" else "")
    found = _generate_candidates(got, x, tokens, T0, use_cache=key == "cache", run=key)
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


@GREEDY_DECODE.check("generate", inputs=probe.inputs_generate, probe=probe.probe_generate)
def verdict_generate(got, want, x):
    for key in ("cache", "nocache"):
        _same_run(got, want, x, key)
