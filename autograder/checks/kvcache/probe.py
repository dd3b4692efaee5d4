"""Probe side of kvcache.py's checks: the inputs they draw and the calls they make.

Imported by the process that runs student code: nothing here judges or computes an answer.
While kvcache is graded, the student's `from .rotary import apply_rotary` (and attention,
repeat_kv) get the trusted stand-ins: a bug in rotary.py costs points in rotary only.

Every size, weight, token and position is drawn from the check's generator. Head widths are
even (rotary pairs features); B, H_kv, T and the widths differ from one another where a check
tells axes apart by their sizes. A decoding run that raises is reported as data (the step and
the error), so one broken step is a finding, not a crash of the check.
"""

from __future__ import annotations

import math
import operator

import torch

from ...run.probing import error_text, guarded, load_weights, pair, raised, randn
from . import probe_fallback

# (D, H, H_kv): d_k = D // H even, 1 <= H_kv < H.
SHAPES = ((24, 4, 2), (32, 4, 2), (36, 6, 2), (36, 6, 3), (40, 4, 1))


def _int(gen, low, high):
    """A draw from low .. high (both included)."""
    return int(torch.randint(low, high + 1, (), generator=gen))


def _pick(gen, options):
    return options[_int(gen, 0, len(options) - 1)]


# --------------------------------------------------------------------------- inputs


def _appends(gen, B, H_kv, d_k, d_v, lengths):
    """One (k, v) pair per layer (2 layers) for each call, T = lengths[i] new tokens."""
    return [
        [(randn(gen, B, H_kv, T, d_k), randn(gen, B, H_kv, T, d_v)) for _ in range(2)]
        for T in lengths
    ]


def inputs_append(gen):
    """Two runs over a 2-layer cache: single tokens only (any axis concatenates them, so the
    sizes show which one was used), then a prefill of several tokens and chunks."""
    B = _int(gen, 2, 3)
    H_kv = _pick(gen, [h for h in (2, 3, 4) if h != B])
    d_k = _pick(gen, [d for d in (6, 8, 10) if d not in (B, H_kv)])
    d_v = d_k + 2
    chunks = [_int(gen, 3, 5), 1, 2, 1]
    return {
        "single": _appends(gen, B, H_kv, d_k, d_v, [1] * _int(gen, 3, 4)),
        "chunks": _appends(gen, B, H_kv, d_k, d_v, chunks),
    }


def inputs_append_errors(gen):
    B, H_kv, d = _int(gen, 1, 3), _int(gen, 2, 3), 2 * _int(gen, 2, 4)
    T = _int(gen, 2, 4)
    return {
        # k and v of the same call disagree on T.
        "kv": (randn(gen, B, H_kv, T, d), randn(gen, B, H_kv, T + 1, d)),
        # A step with one more key/value head than the layer holds.
        "step": (
            (randn(gen, B, H_kv, T, d), randn(gen, B, H_kv, T, d)),
            (randn(gen, B, H_kv + 1, 1, d), randn(gen, B, H_kv + 1, 1, d)),
        ),
    }


def layer_state(gen, D, H, H_kv, prefix=""):
    kv = H_kv * (D // H)
    return {
        f"{prefix}{name}.weight": randn(gen, rows, D, scale=1 / math.sqrt(D))
        for name, rows in (("w_q", D), ("w_k", kv), ("w_v", kv), ("w_o", D))
    }


def _single(gen, B, x):
    """Two single-token appends, (k, v) each (B, H_kv, 1, d_k), drawn after every other input
    of the check: what the student's own cache is given when their run fails (_own_axis)."""
    shape = (B, x["H_kv"], 1, x["D"] // x["H"])
    return [(randn(gen, *shape), randn(gen, *shape)) for _ in range(2)]


def _config(gen, grouped=False):
    """Sizes and a base; `grouped`: 1 < H_kv < H, where a tiled repeat of the key/value heads
    differs from repeat_interleave (with one key/value head they agree)."""
    D, H, H_kv = _pick(gen, [s for s in SHAPES if s[2] > 1] if grouped else SHAPES)
    base = _pick(gen, [10000.0, float(_int(gen, 50, 500))])
    return {"D": D, "H": H, "H_kv": H_kv, "base": base}


def inputs_layer(gen):
    """A prefill of several tokens, single steps, then a chunk of 2 tokens, into layer 1 of a
    2-layer cache (a layer that ignores its index and uses layer 0 shows there)."""
    x = _config(gen, grouped=True)
    B = _int(gen, 1, 2)
    lengths = [_int(gen, 3, 6), 1, 1, 2]
    x["state"] = layer_state(gen, x["D"], x["H"], x["H_kv"])
    x["layer"] = 1
    x["xs"] = [randn(gen, B, T, x["D"]) for T in lengths]
    x["single"] = _single(gen, B, x)
    return x


def inputs_positions(gen):
    """A long prefill (p0 = 40 .. 120 tokens), then two single steps."""
    x = _config(gen)
    x["state"] = layer_state(gen, x["D"], x["H"], x["H_kv"])
    x["layer"] = 0
    x["xs"] = [randn(gen, 1, T, x["D"]) for T in (_int(gen, 40, 120), 1, 1)]
    x["single"] = _single(gen, 1, x)
    return x


def model_state(gen, V, D, H, H_kv, L):
    state = {"token_embed.weight": randn(gen, V, D)}
    for i in range(L):
        state[f"norms.{i}.weight"] = 1 + randn(gen, D, scale=0.1)
        state.update(layer_state(gen, D, H, H_kv, prefix=f"layers.{i}."))
    state["norm.weight"] = 1 + randn(gen, D, scale=0.1)
    state["lm_head.weight"] = randn(gen, V, D, scale=1.5 / math.sqrt(D))
    return state


def inputs_generate(gen):
    """A 2-layer TinyDecoder, two prompts of the same batch size, a number of new tokens."""
    x = _config(gen)
    x["V"], x["L"] = _int(gen, 20, 40), 2
    x["state"] = model_state(gen, x["V"], x["D"], x["H"], x["H_kv"], x["L"])
    B = _int(gen, 1, 2)
    x["prompts"] = [torch.randint(0, x["V"], (B, _int(gen, 3, 6)), generator=gen) for _ in range(2)]
    x["n"] = _int(gen, 5, 8)
    x["single"] = _single(gen, B, x)
    return x


# --------------------------------------------------------------------------- running


def _count(value):
    """length()'s value as the int it is: a Python int, or an integer kept another way (a
    0-dim integer tensor, as code that keeps its positions in tensors returns, or a NumPy
    integer: operator.index); anything else (a float, a bool, a tensor of several numbers)
    as its repr, which the judge charges."""
    if isinstance(value, bool):
        return repr(value)
    try:
        return int(operator.index(value))
    except Exception:  # noqa: BLE001 (the student's object: any failure is "not a count")
        return repr(value)[:50]


def _length(cache, layer):
    return _count(cache.length(layer))


def _run_appends(mod, calls, key):
    cache = mod.KVCache(2)
    got = {f"{key}/len-empty": _length(cache, 0)}
    for i, call in enumerate(calls):
        for layer, (k, v) in enumerate(call):
            result, error = guarded(lambda: cache.append(layer, k, v))  # noqa: B023
            if error:
                return {**got, f"{key}/error": error, f"{key}/error-at": f"{i}/{layer}"}
            keys, values = pair(result, "KVCache.append's result", "(keys, values)")
            got[f"{key}/{i}/{layer}/k"], got[f"{key}/{i}/{layer}/v"] = keys, values
            got[f"{key}/{i}/{layer}/len"] = _length(cache, layer)
    return got


def probe_append(mod, x):
    return {**_run_appends(mod, x["single"], "single"), **_run_appends(mod, x["chunks"], "chunks")}


def _append_outcome(cache, layer, k, v):
    """("returned", "") or the exception's kind and message (probing.raised)."""
    return raised(lambda: cache.append(layer, k, v), "returned")


def probe_append_errors(mod, x):
    got = {}
    got["kv/outcome"], got["kv/text"] = _append_outcome(mod.KVCache(1), 0, *x["kv"])
    cache = mod.KVCache(1)
    first, second = x["step"]
    got["first/outcome"], _ = _append_outcome(cache, 0, *first)
    got["step/outcome"], got["step/text"] = _append_outcome(cache, 0, *second)
    return got


def _layer_of(mod, x):
    layer = mod.CachedAttention(x["D"], x["H"], x["H_kv"], base=x["base"])
    load_weights(layer, x["state"])
    return layer.eval()


def _cached(cache, layer, name):
    store = getattr(cache, name, None)
    try:
        value = store[layer]
    except Exception:  # no list of that name: the verdict says what it found
        return None
    return value if isinstance(value, torch.Tensor) else None


def _record_cache(cache, got, where):
    """Record, into got, what the student's own cache is given and returns: for the n-th
    append to a layer (n = 0, 1, ...), under the prefix where(layer, n) (nothing when None):
    the first length() asked of that layer before it ("len"), the k and v appended and the
    keys and values append returned. The judge decides from these whether a difference is the
    cache's (charged in the cache's checks) or the layer's. Nothing when the cache's methods
    cannot be wrapped."""
    append, length = getattr(cache, "append", None), getattr(cache, "length", None)
    if not callable(append) or not callable(length):
        return
    counts = {}

    def recording_length(*args, **kwargs):
        value = length(*args, **kwargs)
        layer = args[0] if args else kwargs.get("layer", 0)
        prefix = where(layer, counts.get(layer, 0)) if type(layer) is int else None
        if prefix is not None and prefix + "len" not in got:
            got[prefix + "len"] = _count(value)
        return value

    def recording_append(*args, **kwargs):
        result = append(*args, **kwargs)
        layer = args[0] if args else kwargs.get("layer")
        if type(layer) is not int:
            return result
        n = counts[layer] = counts.get(layer, 0) + 1
        prefix = where(layer, n - 1)
        k, v = (list(args[1:3]) + [kwargs.get("k"), kwargs.get("v")])[:2]
        if prefix is not None and prefix + "k" not in got:
            if isinstance(result, tuple) and len(result) == 2:
                for name, value in (("k", k), ("v", v), ("keys", result[0]), ("values", result[1])):
                    if type(value) is torch.Tensor:
                        got[prefix + name] = value.detach().clone()
        return result

    try:
        cache.append, cache.length = recording_append, recording_length
    except (AttributeError, TypeError):  # __slots__ or a read-only attribute: no record
        return


def probe_layer(mod, x):
    """Each call's output with a cache, the cache's keys and values at the end, and the
    output of one call on the whole sequence without a cache; what the cache was given and
    returned during each call (_record_cache). When a call fails: what the student's own
    cache does with single tokens, and the same calls with a working cache (_or_working)."""
    return _or_working(mod, x, _probe_layer, lambda got: "error" in got)


def _probe_layer(mod, x):
    layer = _layer_of(mod, x)
    cache, got = mod.KVCache(2), {"call": 0}
    _record_cache(
        cache, got, lambda layer, n: f"given/{got['call']}/" if layer == x["layer"] else None
    )
    with torch.no_grad():
        for i, xi in enumerate(x["xs"]):
            got["call"] = i
            out, error = guarded(lambda: layer(xi, cache, x["layer"]))  # noqa: B023
            if error:
                return {"error": error, "error-at": i}
            got[f"out{i}"] = out
        del got["call"]
        # the layer's own entry; else the entry that holds keys (a layer that ignores its
        # index), its index kept in "cache/layer"
        filled = [i for i in range(2) if _cached(cache, i, "keys") is not None]
        used = x["layer"] if x["layer"] in filled or not filled else filled[0]
        got["cache/layer"] = used
        for name in ("keys", "values"):
            value = _cached(cache, used, name)
            if value is not None:
                got[f"cache/{name}"] = value
        full, error = guarded(lambda: layer(torch.cat(x["xs"], dim=1)))
    if error:
        return {"error": error, "error-at": "full"}
    got["full"] = full
    return got


def _model_of(mod, x):
    model = mod.TinyDecoder(x["V"], x["D"], x["H"], x["H_kv"], x["L"], base=x["base"])
    load_weights(model, x["state"])
    return model.eval()


# The most model calls recorded per greedy_decode run (the checks ask for at most 8 tokens).
MAX_CALLS = 64


def _watch(model, got, run):
    """Record what the student's own model did during each greedy_decode run (run[0]: the run
    going on; None: record nothing), so that the judge decides whether greedy_decode's loop is
    right given what the model returned, the model's layers being judged in their own checks.
    Per call of the model, under got[f"{run[0]}/call/<i>/..."]: the tokens it was given, which
    cache ("cache": the cache's number in the order first seen over the whole probe, -1 for
    none) and the last position's logits it returned ("last"); got[f"{run[0]}/calls"] counts
    the calls. Every cache passed to a layer has what it is given and returns recorded per
    layer and per append (_record_cache), under got[f"{run[0]}/given/<layer>/<n>/..."] (the
    run during which the layer first saw it). Nothing when the model cannot be wrapped."""
    caches, wrapped = [], []  # every cache seen, kept alive so that `is` tells them apart

    def number(cache, seen):
        """cache's index in seen, appended when new; and whether it was new."""
        for i, known in enumerate(seen):
            if known is cache:
                return i, False
        seen.append(cache)
        return len(seen) - 1, True

    def watch_layer(layer):
        forward = layer.forward

        def watched(*args, **kwargs):
            cache = args[1] if len(args) > 1 else kwargs.get("cache")
            if cache is not None and number(cache, wrapped)[1]:
                tag = run[0]

                def where(layer, n):
                    return f"{tag}/given/{layer}/{n}/" if 0 <= layer < 64 and n < 64 else None

                _record_cache(cache, got, where)
            return forward(*args, **kwargs)

        layer.forward = watched

    forward = model.forward

    def watched_model(*args, **kwargs):
        tag = run[0]
        tokens = args[0] if args else kwargs.get("tokens")
        cache = args[1] if len(args) > 1 else kwargs.get("cache")
        which = -1 if cache is None else number(cache, caches)[0]
        out = forward(*args, **kwargs)
        i = got.get(f"{tag}/calls", 0)
        if tag is None or type(i) is not int or i >= MAX_CALLS:
            return out
        got[f"{tag}/calls"] = i + 1
        prefix = f"{tag}/call/{i}/"
        got[prefix + "cache"] = which
        if type(tokens) is torch.Tensor and tokens.numel() <= 10**5:
            got[prefix + "tokens"] = tokens.detach().clone()
        if type(out) is torch.Tensor and out.dim() == 3:
            got[prefix + "last"] = out[:, -1].detach().clone()
        return out

    try:
        for layer in model.layers:
            watch_layer(layer)
        model.forward = watched_model
    except (AttributeError, TypeError):
        return


def _generate(mod, model, prompt, n, use_cache, key):
    result, error = guarded(lambda: mod.greedy_decode(model, prompt, n, use_cache=use_cache))
    if error:
        return {f"{key}/error": error}
    tokens, logits = pair(result, "greedy_decode's result", "(tokens, logits)")
    return {f"{key}/tokens": tokens, f"{key}/logits": logits}


def probe_incremental(mod, x):
    """greedy_decode on prompt A, then on prompt B (a cache kept from A shows in B), both with the
    cache; and the logits of one call without a cache on B's tokens (the whole prefix). When a
    run fails, _or_working."""
    failed = lambda got: "a/error" in got or "b/error" in got  # noqa: E731
    return _or_working(mod, x, _probe_incremental, failed)


def _probe_incremental(mod, x):
    model = _model_of(mod, x)
    (a, b), n = x["prompts"], x["n"]
    got, run = {}, ["a"]
    _watch(model, got, run)
    got.update(_generate(mod, model, a, n, True, "a"))
    run[0] = "b"
    got.update(_generate(mod, model, b, n, True, "b"))
    run[0] = None  # the call below is the probe's, not greedy_decode's
    tokens = got.get("b/tokens")
    if type(tokens) is torch.Tensor and tokens.dim() == 2 and tokens.size(1) > b.size(1):
        with torch.no_grad():
            full, error = guarded(lambda: model(tokens[:, :-1].long()))
        got["full"] = full if error is None else error
    return got


def probe_generate(mod, x):
    """greedy_decode with and without the cache; when the cached run fails, _or_working."""
    return _or_working(mod, x, _probe_generate, lambda got: "cache/error" in got)


def _probe_generate(mod, x):
    model = _model_of(mod, x)
    prompt, n = x["prompts"][0], x["n"]
    got, run = {}, ["cache"]
    _watch(model, got, run)
    got.update(_generate(mod, model, prompt, n, True, "cache"))
    run[0] = "nocache"
    got.update(_generate(mod, model, prompt, n, False, "nocache"))
    return got


# --------------------------------------------------------------------------- a failed run


def _own_axis(mod, x):
    """What the student's own KVCache returns for two single-token appends to one layer
    (x["single"]): any axis concatenates them, so the judge reads off which one was used
    (kv-append-wrong-axis); the error text if it raises."""
    (k1, v1), (k2, v2) = x["single"]
    try:  # the run failed already: whatever this raises is no finding of its own
        cache = mod.KVCache(1)
        result = (cache.append(0, k1, v1), cache.append(0, k2, v2))[1]
    except Exception as e:
        return {"axis/error": error_text(e)}
    if not isinstance(result, tuple) or len(result) != 2:
        return {"axis/error": f"append returned a {type(result).__name__}"[:100]}
    if any(type(t) is not torch.Tensor for t in result):
        return {"axis/error": "append returned other than two tensors"}
    return {"axis/keys": result[0].detach().clone(), "axis/values": result[1].detach().clone()}


def _cloned(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, dict):
        return {k: _cloned(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cloned(v) for v in value)
    return value


def _or_working(mod, x, run, failed):
    """run(mod, x); when failed(its outputs) (the student's run raised), also what the
    student's own cache does with single tokens (_own_axis) and run's outputs with a working
    cache, run in a forked grandchild on untouched inputs (probe_fallback): the judge accepts
    those only when the student's own cache concatenates along a wrong axis."""
    untouched = _cloned(x)
    got = run(mod, x)
    if failed(got):
        got.update(_own_axis(mod, untouched))
        got.update(probe_fallback.run_with_working_cache(mod, untouched, run))
    return got
