"""Judge side of mla.py's checks: verdicts (models of MLA, right and wrong: judge_models.py).

Only the checks titled "matches the reference" compare values with it. The causal and
rotary-part checks judge the student's own runs of forward; the cache-size check judges the
shapes of what forward_absorbed returned, against the tokens it was given; the equivalence
check judges each absorbed step against the student's own naive forward on all the tokens.
Those property checks first demand evidence (finite, not constant, depending on the inputs
the property is about), so zeros or a constant earn nothing. A failed comparison is named by
running, in float64, what a known mistake computes on the same weights and tokens.
"""

from __future__ import annotations

import torch

from ...core import verdicts
from ...core.check import WRONG_SHAPE, WRONG_TYPE, CheckList, Failure, no_reference
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_close, assert_evidence, close, tensor
from . import judge_models as models
from . import probe

CHECKS = CheckList("mla")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders


def _lazy(fn, *args, pick=None):
    """A candidate's output, computed only when needed (pick: one item of a tuple result)."""

    def output():
        value = fn(*args)
        return value if pick is None else value[pick]

    return output


# --------------------------------------------------------------------------- forward

FORWARD = CHECKS.exercise("forward", probe=probe.probe_forward)

NAIVE_MISTAKES = (
    (MISTAKES["mla-no-q-norm"], ("no-q-norm",)),
    (MISTAKES["mla-no-kv-norm"], ("no-kv-norm",)),
    (MISTAKES["mla-scale-nope-only"], ("scale-nope",)),
    (MISTAKES["mla-rope-whole-head"], ("rope-whole-head",)),
    (MISTAKES["mla-not-causal"], ("no-mask",)),
)


@FORWARD.check("reference", inputs=probe.inputs_forward)
def verdict_forward(got, want, x):
    what = f"MultiHeadLatentAttention on {x['x'].size(1)} tokens"
    out = tensor(got, "out", what, shape=x["x"].shape, dtype=torch.float32)
    candidates = [
        (m, _lazy(models.naive, x["x"], _cfg(x), x["state"], how), {}) for m, how in NAIVE_MISTAKES
    ]
    assert_close(out, want["out"], what, candidates)
    verdicts.assert_gradients(got, want, what)  # to x and the weights the reference's reach


def _cfg(x):
    keys = ("D", "H", "d_c", "d_c_q", "d_head", "d_rope", "base")
    return {k: x[k] for k in keys}


@FORWARD.check("causal", inputs=probe.inputs_causal, probe=probe.probe_causal)
@no_reference
def verdict_causal(got, want, x):
    """The student's own two runs on inputs equal up to t: equal outputs up to t, different
    ones after t."""
    t, what = x["t"], "forward"
    out = tensor(got, "out", what, shape=x["x"].shape, dtype=torch.float32)
    out2 = tensor(got, "out2", what, shape=x["x"].shape, dtype=torch.float32)
    assert_evidence(out, what, [x["x"]])
    if not close(out2[:, : t + 1], out[:, : t + 1]):
        raise Failure(MISTAKES["mla-not-causal"], what=what)
    if close(out2[:, t + 1 :], out[:, t + 1 :]):
        raise Failure(MISTAKES["mla-later-ignored"], t=t)


@FORWARD.check("rope-part", inputs=probe.inputs_rope_part, probe=probe.probe_rope_part)
@no_reference
def verdict_rope_part(got, want, x):
    """The student's own runs with w_qr = w_kr = 0: the last token's output must depend on the
    earlier tokens (one changed: it changes) and not on their order."""
    what = "forward with w_qr and w_kr zero"
    runs = {k: tensor(got, k, what, shape=x["x"].shape, dtype=torch.float32) for k in
            ("out", "shuffled", "changed")}  # fmt: skip
    assert_evidence(runs["out"], what, [x["x"]])
    last = runs["out"][:, -1]
    if close(runs["changed"][:, -1], last, models.OWN_TOL):
        raise Failure(MISTAKES["mla-context-ignored"])
    if close(runs["shuffled"][:, -1], last, models.OWN_TOL):
        return
    err = float((runs["shuffled"][:, -1].double() - last.double()).abs().max())
    try:
        whole_head = close(
            runs["out"],
            models.naive(x["x"], _cfg(x), x["state"], ("rope-whole-head",)),
            models.MODEL_TOL,
        )
    except ModelUnavailable:  # the student copy: the mistake is not named there
        whole_head = False
    if whole_head:
        raise Failure(MISTAKES["mla-rope-whole-head"], what=what)
    raise Failure(MISTAKES["mla-order-matters"], err=err)


# --------------------------------------------------------------------------- absorbed_weights

ABSORBED_WEIGHTS = CHECKS.exercise("absorbed_weights", probe=probe.probe_absorbed_weights)


@ABSORBED_WEIGHTS.check("absorbed-weights", inputs=probe.inputs_absorbed_weights)
def verdict_absorbed_weights(got, want, x):
    H, D, d_c, d_c_q = x["H"], x["D"], x["d_c"], x["d_c_q"]
    mistakes = (
        (MISTAKES["mla-absorb-uk-view"], ("uk-view",)),
        (MISTAKES["mla-absorb-uv-view"], ("uv-view",)),
        (MISTAKES["mla-absorb-o-view"], ("o-view",)),
    )
    for i, (key, shape) in enumerate((("w_q", (H, d_c_q, d_c)), ("w_o", (H, d_c, D)))):
        what = f"absorbed_weights()'s {'first' if i == 0 else 'second'} matrix ({key}_absorbed)"
        value = tensor(got, key, what, shape=shape, dtype=torch.float32)
        candidates = [
            (m, _lazy(models.absorb, _cfg(x), x["state"], how, pick=i), {}) for m, how in mistakes
        ]
        assert_close(value, want[key], what, candidates)


# --------------------------------------------------------------------------- forward_absorbed

FORWARD_ABSORBED = CHECKS.exercise("forward_absorbed", probe=probe.probe_given_cache)

STEP_MISTAKES = (
    (MISTAKES["mla-absorbed-ignored"], ("own-weights",)),
    (MISTAKES["mla-absorbed-scale-latent"], ("scale-latent",)),
    (MISTAKES["mla-scale-nope-only"], ("scale-nope",)),
    (MISTAKES["mla-positions-restart"], ("restart",)),
    (MISTAKES["mla-mask-not-offset"], ("mask-not-offset",)),
    (MISTAKES["mla-no-q-norm"], ("no-q-norm",)),
    (MISTAKES["mla-no-kv-norm"], ("no-kv-norm",)),
    (MISTAKES["mla-cache-before-norm"], ("cache-before-norm",)),
    (MISTAKES["mla-cache-rope-at-read"], ("rope-at-read",)),
)
# The mistakes of absorbed_weights, charged by its own check: forward_absorbed is not charged
# for them again (it calls absorbed_weights when it is given no matrices).
ABSORB_MISTAKES = (("uk-view",), ("uv-view",), ("o-view",))


def _failed(got, what):
    if "error" in got:
        at = got.get("error-at")
        where = "the call on all the tokens (forward)" if at == "full" else f"call {at}"
        raise Failure(
            MISTAKES["mla-absorbed-failed"], what=what, where=where, error=str(got["error"])[:300]
        )


@FORWARD_ABSORBED.check("absorbed-reference", inputs=probe.inputs_given_cache)
def verdict_given_cache(got, want, x):
    """Each step's output against the reference's on the same given cache and matrices; then
    the cache it returned, where its shapes are right (cache-sizes charges wrong shapes)."""
    cfg = _cfg(x)
    for i, s in enumerate(x["steps"]):
        T, p0 = s["x"].size(1), s["c_kv"].size(1)
        what = f"forward_absorbed on {T} token(s) after {p0} cached, with given matrices"
        _failed(got, what)
        out = tensor(got, f"{i}/out", what, shape=s["x"].shape, dtype=torch.float32)
        args = (s["x"], cfg, x["state"], s["c_kv"], s["k_rope"], s["w_q"], s["w_o"])
        candidates = [(m, _lazy(models.step, *args, how, pick=0), {}) for m, how in STEP_MISTAKES]
        assert_close(out, want[f"{i}/out"], what, candidates)
        for j, name in ((1, "c_kv"), (2, "k_rope")):
            value, expected = got.get(f"{i}/{name}"), want[f"{i}/{name}"]
            if type(value) is not torch.Tensor or value.shape != expected.shape:
                continue
            stored = [
                (m, _lazy(models.step, *args, how, pick=j), {})
                for m, how in STEP_MISTAKES
                if how[0] in ("cache-before-norm", "rope-at-read", "restart", "no-kv-norm")
            ]
            assert_close(value, expected, f"{what}: the cache's {name}", stored)


def _tokens_so_far(x):
    sizes = [xi.size(1) for xi in x["xs"]]
    return [sum(sizes[: i + 1]) for i in range(len(sizes))]


@FORWARD_ABSORBED.check("cache-sizes", inputs=probe.inputs_calls, probe=probe.probe_calls)
@no_reference
def verdict_cache_sizes(got, want, x):
    """After each call, the cache is (c_kv (B, S, d_c), k_rope (B, S, d_rope)), S the tokens
    given so far: judged from what it holds, its sizes."""
    B, H = x["xs"][0].size(0), x["H"]
    d_head, d_rope = x["d_head"], x["d_rope"]
    for i, S in enumerate(_tokens_so_far(x)):
        what = f"the cache forward_absorbed returned after call {i}"
        if f"{i}/cache" in got:
            raise Failure(
                WRONG_TYPE, what=what, expected="a pair (c_kv, k_rope)", got=got[f"{i}/cache"]
            )
        if f"{i}/out" not in got:
            _failed(got, what)
        for name, width in (("c_kv", x["d_c"]), ("k_rope", d_rope)):
            part, expected = f"{what}: {name}", (B, S, width)
            value = got.get(f"{i}/{name}")
            if type(value) is not torch.Tensor:
                tensor(got, f"{i}/{name}", part)
            shape = tuple(value.shape)
            if shape == expected:
                _grown(got, i, name, value, part)
                continue
            details = {"what": part, "got": shape, "expected": expected}
            per_token = value.numel() / (B * S)
            if per_token in (H * d_head, H * (d_head + d_rope), 2 * H * d_head):
                raise Failure(MISTAKES["mla-cache-full-kv"], **details)
            if name == "k_rope" and per_token == H * d_rope:
                raise Failure(MISTAKES["mla-cache-rope-per-head"], **details)
            if i > 0 and shape == (B, x["xs"][i].size(1), width):
                raise Failure(MISTAKES["mla-cache-new-only"], **details)
            raise Failure(WRONG_SHAPE, **details)


def _grown(got, i, name, value, what):
    """A cache of the right size must hold evidence (finite, not one constant) and keep what
    the call before returned as its first rows: a cache grows by appending."""
    tensor({"cache": value}, "cache", what, floating=True)
    assert_evidence(value, what)
    before = got.get(f"{i - 1}/{name}")
    if i == 0 or type(before) is not torch.Tensor or before.dim() != 3:
        return
    kept = value[:, : before.size(1)]
    if kept.shape != before.shape or not torch.equal(kept, before.to(kept.dtype)):
        raise Failure(MISTAKES["mla-cache-not-appended"], what=what, S=before.size(1))


@FORWARD_ABSORBED.check("absorbed-equals-naive", inputs=probe.inputs_calls, probe=probe.probe_calls)
@no_reference
def verdict_equivalence(got, want, x):
    """Judged on the student's own runs: each absorbed call's output (a fresh module each
    call, the cache passed on) equals the rows of forward on all the tokens. Where they
    differ, a difference another check charges (see _charged_elsewhere) is not charged here;
    so is a naive forward that raised, where every absorbed call is right (reference, causal
    and rope-part charge forward)."""
    what = "forward_absorbed"
    if got.get("error-at") == "full" and _absorbed_right(got, x):
        return
    _failed(got, what)
    whole = torch.cat(x["xs"], dim=1)
    full = tensor(got, "full", "forward on all the tokens", shape=whole.shape, dtype=torch.float32)
    assert_evidence(full, "forward on all the tokens", [whole])
    start = 0
    for i, xi in enumerate(x["xs"]):
        T = xi.size(1)
        out = tensor(got, f"{i}/out", f"{what}, call {i}", shape=xi.shape, dtype=torch.float32)
        rows = full[:, start : start + T]
        start += T
        if close(out, rows, models.OWN_TOL) or _charged_elsewhere(out, x, i):
            continue
        for m, how in STEP_MISTAKES[1:]:
            if _model_close(out, x, i, how):
                raise Failure(m, what=f"{what}, call {i}")
        err = float((out.double() - rows.double()).abs().max())
        where = f"at call {i} ({T} tokens after {start - T})"
        raise Failure(MISTAKES["mla-absorbed-differs"], what=what, where=where, err=err)


def _model_close(out, x, i, how):
    """Whether call i's output is what forward_absorbed computes with the mistakes `how` (a
    model the student copy lacks: False there)."""
    try:
        return close(out, models.calls(x["xs"], _cfg(x), x["state"], how)[i], models.MODEL_TOL)
    except ModelUnavailable:
        return False


def _absorbed_right(got, x):
    """Every absorbed call's output is the reference's (a model: False in the student copy
    where the kit recorded no such run)."""
    outs = [got.get(f"{i}/out") for i in range(len(x["xs"]))]
    if any(type(out) is not torch.Tensor for out in outs):
        return False
    return all(_model_close(out, x, i, ()) for i, out in enumerate(outs))


def _charged_elsewhere(out, x, i):
    """The absorbed output is right, so the naive form differs (reference, causal and
    rope-part charge its mistakes); or it is right but for a mistake of absorbed_weights,
    which its own check charges. Each difference is charged once."""
    return any(_model_close(out, x, i, how) for how in ((), *ABSORB_MISTAKES))


# --------------------------------------------------------------------------- cache bytes

CACHE_BYTES = CHECKS.exercise("cache_bytes_per_token", probe=probe.probe_bytes)

BYTES_MISTAKES = {
    "keys-only": MISTAKES["mla-bytes-keys-only"],
    "latent-twice": MISTAKES["mla-bytes-latent-twice"],
    "no-rope": MISTAKES["mla-bytes-no-rope"],
    "rope-per-head": MISTAKES["mla-bytes-rope-per-head"],
    "gqa-all-heads": MISTAKES["mla-bytes-gqa-all-heads"],
    "elements": MISTAKES["mla-bytes-elements"],
}


@CACHE_BYTES.check("cache-bytes", inputs=probe.inputs_bytes)
def verdict_bytes(got, want, x):
    """Every case is compared; a mistake is named when it explains every case."""
    values, wrong = [], []
    for i, case in enumerate(x["cases"]):
        value = got.get(f"bytes{i}")
        if type(value) is not int:
            what = f"cache_bytes_per_token({_args(case)})"
            raise Failure(WRONG_TYPE, what=what, expected="an int", got=str(value)[:100])
        values.append(value)
        if value != want[f"bytes{i}"]:
            wrong.append(i)
    if not wrong:
        return
    case = x["cases"][wrong[0]]
    details = {
        "args": _args(case),
        "got": values[wrong[0]],
        "want": want[f"bytes{wrong[0]}"],  # withheld on the hidden tier (i18n.REFERENCE_DETAILS)
        "size": getattr(torch, case[-1]).itemsize,
        "dtype": case[-1],
    }
    for how, mistake in BYTES_MISTAKES.items():
        try:
            named = all(
                v == models.cache_bytes(c, how) for v, c in zip(values, x["cases"], strict=True)
            )
        except ModelUnavailable:  # the student copy: not named there
            named = False
        if named:
            raise Failure(mistake, **details)
    raise Failure(MISTAKES["mla-bytes-wrong"], **details)


def _args(case):
    kind, H, d_head, H_kv, d_c, d_rope, dtype = case
    return (
        f"{kind!r}, {H}, {d_head}, num_kv_heads={H_kv}, d_c={d_c}, d_rope={d_rope}, "
        f"dtype=torch.{dtype}"
    )
