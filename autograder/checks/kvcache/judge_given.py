"""kvcache's judge, what the student's own other parts did: the probe's records of the
student's KVCache (what append was given and returned, what length() said) and of their model
during greedy_decode (the tokens, the cache and the last logits of each call), and the excuses
they give. A check of one part accepts a run that is right given what the student's own other
part did, when the record shows that part's named mistake (charged in its own checks,
docs/fairness.md); a malformed, empty or constant record excuses nothing (principle 14).
Nothing here runs student code; the models it calls are judge_models'."""

from __future__ import annotations

import torch

from ...core.check import Failure
from ...core.verdicts import ModelUnavailable, close
from . import judge_models as models
from . import probe, probe_fallback


def cache_record(got, prefixes, lengths, B, H_kv, d_k):
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


def layer_record(got, x):
    """The record of the layer checks' calls (probe_layer), or None."""
    prefixes = [f"given/{i}/" for i in range(len(x["xs"]))]
    lengths = [xi.size(1) for xi in x["xs"]]
    return cache_record(got, prefixes, lengths, x["xs"][0].size(0), x["H_kv"], x["D"] // x["H"])


def cache_fault(calls):
    """The named mistake of the student's own cache that the record shows, judged from what
    it was given: "new-only" (append returned this call's k and v only, kv-append-new-only),
    "new-first" (append put the new tokens before the cached ones, every call's in reverse
    order, kv-append-new-first), "counts-calls" (length() counted the calls, not the
    tokens, kv-length-counts-calls; append right) or "length-wrong" (append right, length()
    wrong otherwise, as for a layer whose appends went to another layer's list:
    kv-length-wrong, kv-layers-share-cache). None when the cache did its part, or did
    something else."""
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
    if all_appended and lengths != tokens[:-1]:  # length() wrong otherwise: kv-length-wrong
        return "length-wrong"
    new_first = all(
        torch.equal(keys, torch.cat([c[1] for c in calls[i::-1]], 2))
        and torch.equal(values, torch.cat([c[2] for c in calls[i::-1]], 2))
        for i, (_, _, _, keys, values) in enumerate(calls)
    )
    if new_first and lengths == tokens[:-1] and not all_appended:
        return "new-first"
    new_only = all(torch.equal(c[3], c[1]) and torch.equal(c[4], c[2]) for c in calls)
    if new_only and lengths == tokens[:-1] and not all_appended:
        return "new-only"
    return None


def right_given_own_cache(got, x, outs):
    """Whether every cached call of the layer is right given what the student's own cache did
    (a named cache mistake: cache_fault), the cache's mistake being charged in its own
    checks (docs/fairness.md): the k and v it appended are the layer's at the positions the
    cache's length() gave, and its output is attention over what append returned, all
    computed here (judge_models._layer_given). In the student copy, only where recorded."""
    calls = layer_record(got, x)
    if cache_fault(calls) is None:
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


def steps(tokens, T0):
    """The calls of cached decoding on these tokens: the prompt, then one token at a time."""
    n = tokens.size(1) - T0
    return [tokens[:, :T0]] + [tokens[:, T0 + i : T0 + i + 1] for i in range(n - 1)]


def decoding_given_own_cache(got, x, run, tokens, T0, logits):
    """Whether a cached greedy_decode run is right given what the student's own cache did
    (a named cache mistake, the same in every layer: cache_fault), the cache's mistake
    being charged in its own checks: at every call, every layer appended its own k and v at
    the positions the cache's length() gave, and the logits are the model's over what each
    append returned, all computed here (judge_models._decoder_given). In the student copy,
    only where recorded."""
    calls = steps(tokens, T0)
    lengths = [c.size(1) for c in calls]
    B, H_kv, d_k = tokens.size(0), x["H_kv"], x["D"] // x["H"]
    layers = []
    for layer in range(x["L"]):
        prefixes = [f"{run}/given/{layer}/{s}/" for s in range(len(calls))]
        record = cache_record(got, prefixes, lengths, B, H_kv, d_k)
        if record is None:
            return False
        layers.append(record)
    faults = {cache_fault(record) for record in layers}
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


def model_calls(got, run, B, V):
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


def model_computed(lasts):
    """Whether the logits a model returned at each step (n, B, V) are a model's: finite, not
    all zero, not the same over the vocabulary, nor the same at every step and row (a
    constant earns nothing, principle 14)."""
    flat = lasts.reshape(-1, lasts.size(-1)).double()
    if not torch.isfinite(flat).all() or flat.abs().max() == 0:
        return False
    if ((flat.amax(dim=-1) - flat.amin(dim=-1)) <= 1e-6).any():
        return False
    return flat.size(0) > 1 and bool((flat - flat[:1]).abs().max() > 1e-6)


def loop_right_given_own_model(got, x, run, prompt, tokens, logits, earlier=()):
    """Whether a greedy_decode run is right given what the student's own model returned at
    each call (the probe's record: probe._watch), the model's layers and cache being judged
    in their own checks only (docs/fairness.md): exactly n calls; with the cache (runs other
    than "nocache"), the first one on the prompt with a cache no earlier run (`earlier`) used,
    each later one on the (B, 1) token chosen at the step before with that same cache;
    without, call i on the prompt and the first i tokens chosen, no cache; the logits
    returned for token i are the last position's logits of call i, which must be a model's
    (model_computed). The tokens being the argmax of the returned logits was checked
    (_generated). Nothing here runs a model: the student copy decides alike."""
    B, T0 = prompt.shape
    n = x["n"]
    calls = model_calls(got, run, B, x["V"])
    if calls is None or len(calls) != n:
        return False
    before = [model_calls(got, other, B, x["V"]) or [] for other in earlier]
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
    return close(logits, lasts, models.OWN_TOL) and model_computed(lasts.transpose(0, 1))


def wrong_axis(got, x):
    """Whether the student's own KVCache concatenates along a wrong axis (the batch, the heads
    or the features: kv-append-wrong-axis), from what it returned for two single-token appends
    to one layer (probe._own_axis, x["single"]): exactly torch.cat of the two along dim 0, 1
    or 3, keys and values alike."""
    (k1, v1), (k2, v2) = x["single"]
    keys, values = got.get("axis/keys"), got.get("axis/values")
    if type(keys) is not torch.Tensor or type(values) is not torch.Tensor:
        return False
    for dim in (0, 1, 3):
        want_k, want_v = torch.cat([k1, k2], dim), torch.cat([v1, v2], dim)
        if keys.shape == want_k.shape and values.shape == want_v.shape:
            if keys.dtype == want_k.dtype and values.dtype == want_v.dtype:
                if torch.equal(keys, want_k) and torch.equal(values, want_v):
                    return True
    return False


def given_working_cache(got, x):
    """The outputs of the student's own calls run again with a working cache (the probe's
    forked grandchild, probe_fallback), to be judged as a correct submission's would be, when
    the student's own run failed and their cache concatenates along a wrong axis (wrong_axis:
    that mistake is charged in the cache's own checks); None otherwise. The run comes from
    student code, as hostile as `got`: the verdicts guard it alike."""
    if not wrong_axis(got, x):
        return None
    prefix = probe_fallback.PREFIX
    ran = {key[len(prefix) :]: value for key, value in got.items() if key.startswith(prefix)}
    return ran or None


def whole_run_named(outs, x, what, i):
    """The layer mistake whose model gives every call's output (a call can fit two: one
    query that sees one key gets that key's value under any scores), named at call i.
    Nothing when none fits them all, or in the student copy."""
    for mistake, how in models.LAYER_MISTAKES:
        try:
            runs = models._layer_runs(x, how)[0]
        except ModelUnavailable:
            return
        if all(close(out, run.float()) for out, run in zip(outs, runs, strict=True)):
            raise Failure(mistake, what=f"{what}, call {i}", **models._details(x, i, None))
