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

from ...core import verdicts
from ...core.check import WRONG_SHAPE, WRONG_TYPE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_close, close, model, tensor
from ..rotary.judge import MISTAKES as ROTARY_MISTAKES
from . import judge_models as models
from . import probe
from .judge_given import (
    cache_fault,
    decoding_given_own_cache,
    given_working_cache,
    layer_record,
    loop_right_given_own_model,
    model_calls,
    right_given_own_cache,
    steps,
    whole_run_named,
)

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
    if len(parts) > 1 and close(value, torch.cat(parts[::-1], dim=2)):
        raise Failure(MISTAKES["kv-append-new-first"], what=what, n=len(parts))
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
        message = str(got.get(f"{case}/text", ""))
        if not _says_shape(message, tensors):
            raise Failure(
                MISTAKES["kv-append-error-unclear"], case=text, text=verdicts.excerpt(message)
            )


# --------------------------------------------------------------------------- CachedAttention


FORWARD = CHECKS.exercise("forward", probe=probe.probe_layer)


def _or_given_working_cache(judge, got, x):
    """judge(got); or passed when judge passes the student's calls run again with a working
    cache, which counts only when the student's own cache concatenates along a wrong axis
    (judge_given.given_working_cache: a cache whose returns no layer can run on, charged in
    the cache's own checks). Any other failure is judged on the student's own run, as before."""
    ran = given_working_cache(got, x)
    if ran is not None:
        try:
            judge(ran)
            return
        except Failure:
            pass  # the layer's or the loop's own mistake: reported from the student's own run
    judge(got)


@FORWARD.check("reference", inputs=probe.inputs_layer)
def verdict_layer(got, want, x):
    _or_given_working_cache(lambda run: _layer(run, want, x), got, x)


def _index_ignored(got, x):
    """The layer index the student's layer appended under instead of its own: its keys are
    in that layer's entry and it never appended under its own (a cache that keeps one list
    for every layer is the cache's mistake, charged in its checks); None otherwise."""
    used = got.get("cache/layer", x["layer"])
    if type(used) is int and used != x["layer"] and "given/0/k" not in got:
        return used
    return None


def _layer(got, want, x):
    what = f"CachedAttention on calls of {_calls_text(x)} tokens"
    _failed(got, what)
    used = _index_ignored(got, x)
    if used is not None:
        raise Failure(MISTAKES["kv-layer-ignored"], layer=x["layer"], used=used)
    outs = _outputs(got, x, what)
    right = all(close(out, want[f"out{i}"]) for i, out in enumerate(outs))
    if right or not right_given_own_cache(got, x, outs):
        wrong = [i for i, out in enumerate(outs) if not close(out, want[f"out{i}"])]
        if wrong:
            whole_run_named(outs, x, what, wrong[0])
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
    _or_given_working_cache(lambda run: _contents(run, want, x), got, x)


def _contents(got, want, x):
    _failed(got, "CachedAttention")
    if _index_ignored(got, x) is not None:
        return  # what it then stored follows from that: the reference check names it

    def stored(name, how=()):
        """The layer's cached keys or values at the end, float32, under the mistakes `how`."""
        return lambda: getattr(models._layer_runs(x, how)[1], name[0])[x["layer"]].float()

    p0 = {"p0": x["xs"][0].size(1)}
    new_first = cache_fault(layer_record(got, x)) == "new-first"
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
        if new_first:  # the cache's mistake, charged in its own checks: each call's in turn
            calls = expected.split([xi.size(1) for xi in x["xs"]], dim=2)
            expected = torch.cat(calls[::-1], dim=2)
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
    _or_given_working_cache(lambda run: _positions(run, x), got, x)


def _positions(got, x):
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
            excused = right_given_own_cache(got, x, outs)
        if excused:
            continue
        step = f"{what}, call {i}"
        whole_run_named(outs, x, what, i)
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


@model
def _decoded(x, calls, how=(), cache=None, row=-1):
    """The decoder's logits at position `row` of each call (the last: the next token's), as
    (B, calls, V) float32."""
    return torch.stack(
        [out[:, row] for out in models._decoder64(x, calls, how, cache)], dim=1
    ).float()


def _generate_candidates(got, x, tokens, T0, what=None, use_cache=True, run=None):
    """(misconception, lazy (B, n, V) float32 logits of greedy_decode with that mistake on these
    tokens, details). Without the cache, each step recomputes its prefix. run: the run whose
    record (probe._watch) may show which cache each call was given."""
    n = tokens.size(1) - T0
    details = {"p0": T0, "T": 1, "S": T0 + 1}
    if what is not None:
        details["what"] = what
    first = MISTAKES["kv-first-position-logits"]
    if not use_cache:
        prefixes = [tokens[:, : T0 + i] for i in range(n)]
        return [
            (m, (lambda how=how: _decoded(x, prefixes, how)), details)
            for m, how in models.LAYER_MISTAKES
            if how[0] in ("no-mask", "values-rotated", "unrotated")
        ] + [(first, lambda: _decoded(x, prefixes, row=0), {})]
    calls = steps(tokens, T0)
    found = [
        (m, (lambda how=how: _decoded(x, calls, how, models._Cache(x["L"]))), details)
        for m, how in models.LAYER_MISTAKES
    ]
    found.append((first, lambda: _decoded(x, calls, (), models._Cache(x["L"]), row=0), {}))
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
    record = model_calls(got, run, tokens.size(0), x["V"]) if run else None
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
            models._decoder64(x, steps(earlier.long(), x["prompts"][0].size(1)), (), cache)
            return _decoded(x, calls, (), cache)

        found.append((MISTAKES["kv-cache-not-reset"], leaked, details))
    return found


GREEDY_DECODE = CHECKS.exercise("greedy_decode", probe=probe.probe_incremental)


@GREEDY_DECODE.check("incremental", inputs=probe.inputs_generate)
@no_reference
def verdict_incremental(got, want, x):
    """Judged on the student's own runs: greedy_decode on prompt B (after a run on prompt A) gives,
    at each step, the logits that one call of the student's model without a cache gives on the
    whole prefix; those must be a model's logits (finite, not constant)."""
    _or_given_working_cache(lambda run: _incremental(run, x), got, x)


def _caches(got, run):
    """The cache each model call of a greedy_decode run was given (probe._watch: a number in
    the order first seen, -1 for none), or None when nothing was recorded."""
    calls = got.get(f"{run}/calls")
    if type(calls) is not int or calls < 1:
        return None
    return [got.get(f"{run}/call/{i}/cache", -1) for i in range(min(calls, 64))]


def _cache_passed(got, run):
    """Whether a greedy_decode run passed its model a cache (None: nothing recorded)."""
    caches = _caches(got, run)
    return None if caches is None else any(c != -1 for c in caches)


def _cache_unused(got, run):
    """How a cached greedy_decode run whose logits are right still did without the cache:
    no cache at all, or a new one at every call (fed the whole sequence); None otherwise."""
    caches = _caches(got, run)
    if caches is None:
        return None
    if all(c == -1 for c in caches):
        return f"called the model {len(caches)} times and never passed it a cache"
    if len(caches) > 1 and len(set(caches)) == len(caches):
        return "gave every call of the model a new, empty cache"
    return None


def _incremental(got, x):
    (a, b), n = x["prompts"], x["n"]
    _generated(got, "a", x, a)
    tokens, logits = _generated(got, "b", x, b)
    for run in ("a", "b"):  # the same logits without a cache prove nothing about one
        how = _cache_unused(got, run)
        if how:
            raise Failure(MISTAKES["kv-cache-unused"], how=how)
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
    # The prefill's token chosen from the prompt's first position (logits[:, 0]): the cache
    # is right, the choice of row is greedy decoding's, charged by the generate check.
    first_row = torch.cat([full[:, :1], full[:, T0:]], dim=1).float()
    if T0 > 1 and close(logits, first_row, models.OWN_TOL):
        return
    if decoding_given_own_cache(got, x, "b", tokens, T0, logits):
        return  # the cache's mistake, charged in its own checks
    if loop_right_given_own_model(got, x, "b", b, tokens, logits, earlier=("a",)):
        return  # the model's (its layers' or cache's) mistake, charged in their own checks
    _named(logits, _generate_candidates(got, x, tokens, T0, what, run="b"))
    # The cached run is right but the full run is not: the mistake is in the no-cache path.
    try:
        cached_right = close(
            logits, _decoded(x, steps(tokens, T0), (), models._Cache(x["L"])), models.MODEL_TOL
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
    if key == "cache" and not right and decoding_given_own_cache(got, x, key, tokens, T0, logits):
        return  # the cache's mistake, charged in its own checks
    if not right and loop_right_given_own_model(got, x, key, prompt, tokens, logits):
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
    def judge(run):
        for key in ("cache", "nocache"):
            _same_run(run, want, x, key)
        if _cache_passed(run, "nocache"):  # use_cache=False recomputes without one
            raise Failure(MISTAKES["kv-cache-flag-ignored"])

    _or_given_working_cache(judge, got, x)
