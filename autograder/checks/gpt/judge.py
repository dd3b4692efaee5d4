"""Judge side of gpt.py's checks: verdicts (models of wrong computations: judge_models.py).

Property checks (causality, return_attn, weight tying, too long, greedy, cropping, modes)
judge the student's own runs; only the checks titled after the reference compare with it.
The training check measures the trained weights here, in the grading process, with the
grader's own ConvLM (the model train is given), on windows of the corpus train never saw.
"""

from __future__ import annotations

import math
from types import ModuleType

import torch

from ...core import verdicts
from ...core.check import (
    CRASH,
    INVALID_PROBABILITIES,
    WRONG_TYPE,
    CheckList,
    Failure,
    no_reference,
)
from ...core.misconception_data import misconceptions_of
from ...core.verdicts import ModelUnavailable, assert_causal, assert_close, close, tensor
from . import judge_models as models
from . import probe

trusted: ModuleType | None
try:  # MiniGPT replays the named mistakes; the student copy has no stand-in (fewer are named)
    from ...trusted import gpt as trusted
except ImportError:
    trusted = None

CHECKS = CheckList("gpt")
MISTAKES = misconceptions_of(__name__)  # misconceptions.toml: messages and hint ladders

# --------------------------------------------------------------------------- MiniGPT


def _shape(x, idx_key="idx"):
    return (*x[idx_key].shape, x["config"]["vocab_size"])


MINI_GPT = CHECKS.exercise("MiniGPT", probe=probe.probe_logits)


@MINI_GPT.check(
    "logits", inputs=probe.inputs_model, probe=probe.logits_grads, replays=models._logits_replays
)
def verdict_logits(got, want, x):
    """Against the reference; a model right but for the scale of its embeddings (the
    embed-scale check charges it, on a model with no blocks) or for its causal mask (none,
    inverted or transposed: the causal check charges it) passes. The reference's logits
    must also let gradients reach every weight the reference's reach."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    verdicts.assert_gradients(got, want, "MiniGPT.forward", output="logits")
    if any(close(logits, want[f"replay/{n}"]) for n in models._CHARGED_ELSEWHERE):
        return
    named = (
        MISTAKES["gpt-no-final-norm"],
        MISTAKES["gpt-log-softmax-output"],
        MISTAKES["gpt-no-positions"],
    )
    mistakes = dict(zip(models._LOGITS_MISTAKES, named, strict=True))
    candidates = [(m, want.get(f"replay/{n}"), {}) for n, m in mistakes.items()]
    assert_close(logits, want["logits"], "the logits", candidates)


@MINI_GPT.check(
    "weight-tying",
    inputs=probe.inputs_tying,
    probe=probe.probe_tying,
    replays=models._tying_replays,
)
def verdict_tying(got, want, x):
    """Decided from logits, which need the real computation: after loading
    token_embed.weight = E and lm_head.weight = W, a tied model holds one matrix (E or W,
    whichever loaded last) in both places; an untied one reads with E and scores with W.
    Its logits are compared with those of MiniGPT with one matrix and with two (replayed
    with the reference), each also with the known mistakes the logits check names (so a
    mistake there costs nothing here)."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    for flags in models._variants():
        name = models._name(flags)
        if close(logits, want[f"replay/{name}/untied"]):
            raise Failure(
                MISTAKES["gpt-no-weight-tying"],
                detail="they are two separate matrices (loaded with different values, your "
                "logits read tokens with one and scored them with the other)",
            )
        if close(logits, want[f"replay/{name}/E"]) or close(logits, want[f"replay/{name}/W"]):
            break
    else:
        raise Failure(MISTAKES["gpt-tying-unconfirmed"])
    names = str(got.get("names", "")).split("|")
    n_params = got.get("n_params")
    if ("token_embed.weight" in names and "lm_head.weight" in names) or n_params != want[
        "n_params"
    ]:
        raise Failure(
            MISTAKES["gpt-no-weight-tying"],
            detail=f"they share one storage but are two Parameters: parameters() counts "
            f"{n_params} numbers instead of {want['n_params']}",
        )


@MINI_GPT.check("embed-scale", inputs=probe.inputs_scale, replays=models._scale_replays)
def verdict_embed_scale(got, want, x):
    """Only the scale: the logits may be those of the √D model with another difference
    (no final norm, a log_softmax output), which the logits check charges."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    names = [models._name(flags) for flags in models._scale_variants()]
    if any(close(logits, want[f"replay/scaled/{n}"]) for n in names):
        return
    if any(close(logits, want[f"replay/unscaled/{n}"]) for n in names):
        raise Failure(MISTAKES["gpt-no-embed-scale"])
    how = {
        "divided": "divided by √D instead of multiplied",
        "D": "multiplied by D instead of √D",
        "after-pe": "multiplied by √D after the positions were added, not before",
    }
    for scale, text in how.items():
        if close(logits, want[f"replay/scale-{scale}"]):
            raise Failure(MISTAKES["gpt-wrong-embed-scale"], how=text)
    assert_close(logits, want["logits"], "the logits")


@MINI_GPT.check("causal", inputs=probe.inputs_causal, probe=probe.probe_causal)
def verdict_causal(got, want, x):
    """The student's own two runs: equal up to t, different after t; then the mask is on
    idx's device (probe.mask_device: a meta-device run up to the first block)."""
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    logits2 = tensor(got, "logits2", "the logits", shape=_shape(x, "idx2"))
    assert_causal(
        logits,
        logits2,
        want["logits"],
        x["t"],
        MISTAKES["gpt-no-causal-mask"],
        MISTAKES["gpt-ignores-input"],
    )
    if got.get("mask_device") == "cpu":
        raise Failure(MISTAKES["gpt-mask-on-cpu"])


@MINI_GPT.check("return-attn", inputs=probe.inputs_model, probe=probe.probe_attn)
def verdict_attn(got, want, x):
    """The student's own run: the right number and shapes, zeros above the diagonal, rows
    summing to 1, and the same logits as forward(idx)."""
    layers = x["config"]["num_layers"]
    if "problem" in got:
        raise Failure(MISTAKES["gpt-return-attn"], layers=layers, detail=got["problem"])
    if got.get("layers") != layers:
        raise Failure(
            MISTAKES["gpt-return-attn"], layers=layers, detail=f"the list has {got.get('layers')}"
        )
    logits = tensor(got, "logits", "the logits", shape=_shape(x))
    plain = tensor(got, "plain", "the logits of forward(idx)", shape=_shape(x))
    if not close(logits, plain):
        raise Failure(
            MISTAKES["gpt-return-attn"],
            layers=layers,
            detail="its logits differ from forward(idx)'s",
        )
    B, T = x["idx"].shape
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    for i in range(layers):
        what = f"the attention weights of block {i}"
        weights = tensor(got, f"weights{i}", what, shape=(B, x["config"]["num_heads"], T, T))
        if not torch.isfinite(weights).all():
            assert_close(weights, want[f"weights{i}"], what)  # names the NaN / inf
        if weights[..., future].abs().max() > 0:
            raise Failure(MISTAKES["gpt-no-causal-mask"])
        sums = weights.sum(dim=-1)
        if not close(sums, torch.ones_like(sums)):
            detail = f"the rows of block {i}'s weights do not sum to 1 (not softmax weights)"
            raise Failure(MISTAKES["gpt-return-attn"], layers=layers, detail=detail)


@MINI_GPT.check("too-long", inputs=probe.inputs_model, probe=probe.probe_too_long)
@no_reference
def verdict_too_long(got, want, x):
    n = x["config"]["max_len"]
    if got.get(f"T{n}") != "ok":
        detail = f"T = max_len = {n} should work, but it raised {got.get(f'T{n}')}"
        raise Failure(MISTAKES["gpt-too-long"], max_len=n, detail=detail)
    if got.get(f"T{n + 1}") != "ValueError":
        outcome = got.get(f"T{n + 1}")
        outcome = "returned logits" if outcome == "ok" else f"raised {outcome}"
        detail = f"T = {n + 1} should raise ValueError, but it {outcome}"
        raise Failure(MISTAKES["gpt-too-long"], max_len=n, detail=detail)


# --------------------------------------------------------------------------- generate


def _ids(got, x, name, n, temperature, top_k):
    """The run's token ids: (B, T0 + n) int64 starting with the prompt, or a Failure."""
    V = x["table"].size(0)
    if f"{name}/too_long" in got:
        raise Failure(
            MISTAKES["gen-no-cropping"], T=got[f"{name}/too_long"], max_len=x["pos"].size(0)
        )
    if f"{name}/error" in got:
        error = got[f"{name}/error"]
        if temperature == 0:
            raise Failure(MISTAKES["gen-temperature-zero-divides"], error=error)
        if top_k is not None and top_k > V:
            raise Failure(MISTAKES["gen-topk-not-clamped"], k=top_k, V=V, error=error)
        if "probability tensor contains" in error:  # torch.multinomial's own words
            raise Failure(INVALID_PROBABILITIES, error=error, where="in generate")
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


def _step_logits(x, ids, step, context=None, row=-1):
    """The scripted model's last-position logits (`row`: another position's) for new token
    `step` of the student's own sequence, fed the last max_len tokens (the docstring's
    context), or `context` when given (what the student's generate fed it)."""
    model = probe.scripted(x).eval()
    T0 = x["prompt"].size(1)
    with torch.no_grad():
        if context is None:
            context = ids[:, : T0 + step][:, -model.max_len :]
        return model(context)[:, row]


def _own_contexts(got, x, name, n):
    """What the student's generate fed the scripted model in run `name`, one context per new
    token, when those are not the docstring's (the last max_len tokens of the sequence so
    far): the crop check charges that mistake, and the other generate checks judge the
    tokens given these contexts (principle 10). None when the contexts are right, or when
    they cannot stand in (another number of calls than tokens, or not (B, 1..max_len) ids
    of the vocabulary): those runs are judged on the docstring's contexts."""
    if got.get(f"{name}/calls") != n:
        return None
    (B, T0), m, V = x["prompt"].shape, x["pos"].size(0), x["table"].size(0)
    ids = got.get(f"{name}/ids")
    found, right = [], isinstance(ids, torch.Tensor)
    for step in range(n):
        c = got.get(f"{name}/context{step}")
        usable = (
            isinstance(c, torch.Tensor)
            and c.dtype == torch.int64
            and c.dim() == 2
            and c.size(0) == B
            and 1 <= c.size(1) <= m
            and c.numel() > 0
            and 0 <= int(c.min())
            and int(c.max()) < V
        )
        if not usable:
            return None
        found.append(c)
        if right:
            prefix = ids[:, : T0 + step][:, -m:]
            right = prefix.shape == c.shape and torch.equal(prefix, c)
    return None if right else found


GENERATE = CHECKS.exercise("generate", probe=probe.probe_greedy)


@GENERATE.check("generate-greedy", inputs=probe.inputs_generate)
@no_reference
def verdict_greedy(got, want, x):
    """The student's own run: every new token is the argmax of its step's logits."""
    for name, n, temperature, top_k in probe.cases("greedy", x):
        ids, _ = _ids(got, x, name, n, temperature, top_k)
        T0 = x["prompt"].size(1)
        own = _own_contexts(got, x, name, n) or [None] * n
        for step in range(n):
            logits = _step_logits(x, ids, step, own[step])
            if not torch.equal(logits.argmax(-1), ids[:, T0 + step]):
                if all(
                    torch.equal(_step_logits(x, ids, s, own[s], row=0).argmax(-1), ids[:, T0 + s])
                    for s in range(n)
                ):
                    raise Failure(MISTAKES["gen-first-position-logits"])
                raise Failure(MISTAKES["gen-greedy-not-argmax"], step=step)


@GENERATE.check("generate-crop", inputs=probe.inputs_generate, probe=probe.probe_crop)
@no_reference
def verdict_crop(got, want, x):
    """The student's own run: each step's model call saw the last max_len tokens of the
    sequence so far (how the token was then picked is the other checks' business)."""
    for name, n, temperature, top_k in probe.cases("crop", x):
        calls, m, T0 = got.get(f"{name}/calls"), x["pos"].size(0), x["prompt"].size(1)
        returned = got.get(f"{name}/ids")
        if isinstance(returned, torch.Tensor) and returned.dim() == 2:
            if calls == n and returned.size(1) < T0 + n:  # the sequence was cropped too
                detail = (
                    f"it returned {returned.size(1)} tokens, not the prompt's {T0} and {n} "
                    "new ones: each new token goes onto the whole sequence, not onto the "
                    "cropped context"
                )
                raise Failure(MISTAKES["gen-wrong-context"], detail=detail)
        ids, _ = _ids(got, x, name, n, temperature, top_k)
        if calls != n:
            detail = f"it called the model {calls} times for {n} new tokens, not once per token"
            raise Failure(MISTAKES["gen-wrong-context"], detail=detail)
        for step in range(n):
            seen = tensor(got, f"{name}/context{step}", "a context generate fed the model")
            prefix = ids[:, : T0 + step]
            if close(seen, prefix[:, -m:]):
                continue
            if close(seen, prefix[:, :m]):
                raise Failure(MISTAKES["gen-crop-keeps-first"])
            detail = (
                f"at new token {step} the sequence had {prefix.size(1)} tokens and the model "
                f"was fed {tuple(seen.shape)}"
            )
            raise Failure(MISTAKES["gen-wrong-context"], detail=detail)


def _tokens_verdict(check):
    """Sampled tokens compared as tokens with the reference's (same generator, same seed);
    a difference is named by the known mistake that gives exactly those tokens in every run
    of the check that differs (a few sampled tokens can fit two mistakes in one run: a
    temperature multiplied by 0.5 and one left out can draw the same three tokens), then by
    the one that gives the first differing run's, then by what the tokens break, then by
    the first step where they differ."""

    def verdict(got, want, x):
        differing = []
        for name, n, temperature, top_k in probe.cases(check, x):
            ids, what = _ids(got, x, name, n, temperature, top_k)
            if check == "sample" and got.get(f"{name}/generator-unused") is True:
                raise Failure(MISTAKES["gen-generator-unused"], what=what)
            reference = want[f"{name}/ids"]
            if torch.equal(ids, reference) or torch.equal(ids, want[f"replay/{name}/first-row"]):
                continue  # (tokens picked from the first position: the greedy check's)
            # Fed other contexts than the docstring's: the tokens are judged given them
            # (the crop check charges the contexts), the known mistakes too.
            own = _own_contexts(got, x, name, n)
            given = {} if own is None else {"contexts": own}
            try:
                if own is not None and torch.equal(
                    ids, models._generate(x, n, temperature, top_k, contexts=own)
                ):
                    continue
                fits = [
                    (mistake, kwargs, details)
                    for mistake, kwargs, details in _mistakes(temperature, top_k, own is None)
                    if torch.equal(
                        ids, models._generate(x, n, temperature, top_k, **kwargs, **given)
                    )
                ]
                if _temperature_charged(got, x, name, n, temperature, fits):
                    continue
            except ModelUnavailable:  # the student copy: these go unnamed (and charged)
                fits = []
            differing.append((ids, what, reference, n, top_k, own, fits))
        if not differing:
            return
        everywhere = [
            (mistake, kwargs, details)
            for mistake, kwargs, details in differing[0][-1]
            if all(any(m.id == mistake.id for m, _, _ in run[-1]) for run in differing[1:])
        ]
        ids, what, reference, n, top_k, own, fits = differing[0]
        for mistake, _, details in everywhere or fits:
            raise Failure(mistake, what=what, **details)
        if top_k is not None:
            _check_top_k(ids, x, top_k, n, own, got)
        row, step = _first_difference(ids, reference, x["prompt"].size(1))
        T0 = x["prompt"].size(1)
        raise Failure(
            MISTAKES["gen-other-tokens"],
            what=what,
            row=row,
            step=step,
            got=int(ids[row, T0 + step]),
            want=int(reference[row, T0 + step]),
        )

    return verdict


def _temperature_charged(got, x, name, n, temperature, fits):
    """Whether a top-k run's tokens are those of a temperature mistake that the student's
    twin run without top_k (probe.WITHOUT_TOP_K) makes too: the temperature check charges
    that mistake, so this run passes. A temperature dropped only where top_k is given is
    charged here."""
    twin = got.get(f"{probe.WITHOUT_TOP_K.get(name)}/ids")
    if not isinstance(twin, torch.Tensor):
        return False
    return any(
        kwargs.get("temp") is not None
        and torch.equal(twin, models._generate(x, n, temperature, None, **kwargs))
        for _, kwargs, _ in fits
    )


def _mistakes(temperature, top_k, crop=True):
    """(misconception, the models._generate arguments that model it, details), tried in order
    (`crop`: with the crop mistake; not where the contexts fed are given)."""
    found = [(MISTAKES["gen-crop-keeps-first"], {"crop": "first"}, {})] if crop else []
    if temperature not in (0, 1):
        found += [
            (
                MISTAKES["gen-temperature-after-softmax"],
                {"temp": "nowhere"},
                {"temperature": temperature},
            ),
            (
                MISTAKES["gen-temperature-multiplied"],
                {"temp": "multiply"},
                {"temperature": temperature},
            ),
        ]
    return found


def _first_difference(ids, reference, T0):
    differs = (ids[:, T0:] != reference[:, T0:]).nonzero()
    first = differs[differs[:, 1].argmin()]
    return int(first[0]), int(first[1])


def _check_top_k(ids, x, k, n, own, got):
    """Every sampled token is among the k largest logits of its step (ties kept; `own`: the
    contexts the student's generate fed, where they are not the docstring's); one that
    is not but is always among the k + 1 largest means a threshold one place too far."""
    V = x["table"].size(0)
    T0 = x["prompt"].size(1)
    outside = None
    extra_only = True
    for step in range(n):
        logits = _step_logits(x, ids, step, None if own is None else own[step])
        chosen = logits.gather(1, ids[:, T0 + step : T0 + step + 1])
        kth = logits.topk(min(k, V), dim=-1).values[:, -1:]
        bad = (chosen < kth).flatten().nonzero()
        if len(bad):
            outside = outside or (step, int(bad[0]))
            k1 = logits.topk(min(k + 1, V), dim=-1).values[:, -1:]
            extra_only = extra_only and bool((chosen >= k1).all())
    if outside is not None:
        step, row = outside
        raise Failure(
            MISTAKES["gen-topk-keeps-k-plus-1"]
            if _keeps_one_more(got, x, own, extra_only)
            else MISTAKES["gen-topk-after-sampling"],
            k=k,
            step=step,
            row=row,
        )


def _keeps_one_more(got, x, own, extra_only):
    """Whether tokens drawn outside the k largest come from a threshold one place too far
    rather than from top-k ignored: decided by replaying both over every run of the check
    where the contexts are the docstring's (a few draws with top-k ignored can all fall
    within the k + 1 largest, and where k + 1 = V the two draw alike in that run), by the
    ranks drawn otherwise, and in the student copy, which has no model."""
    runs = [c for c in probe.cases("top-k", x) if isinstance(got.get(f"{c[0]}/ids"), torch.Tensor)]
    if own is None and runs:
        try:
            for kwargs, answer in (({"extra": 1}, True), ({"top_k_on": False}, False)):
                if all(
                    torch.equal(got[f"{name}/ids"], models._generate(x, n, t, k, **kwargs))
                    for name, n, t, k in runs
                ):
                    return answer
        except ModelUnavailable:
            pass
    return extra_only


for _slug, _mode, _probe in (
    ("generate-sample", "sample", probe.probe_sample),
    ("generate-temperature", "temperature", probe.probe_temperature),
    ("generate-top-k", "top-k", probe.probe_top_k),
):
    GENERATE.check(
        _slug,
        inputs=probe.inputs_generate,
        probe=_probe,
        replays=models._first_row_replays(_mode),
        verdict=_tokens_verdict(_mode),
    )


@GENERATE.check("generate-modes", inputs=probe.inputs_generate, probe=probe.probe_modes)
@no_reference
def verdict_modes(got, want, x):
    for start in ("train", "eval"):
        if got.get(f"{start}/grad") or got.get(f"{start}/requires_grad"):
            raise Failure(MISTAKES["gen-grad-tracking"])
        if got.get(f"{start}/training"):
            raise Failure(MISTAKES["gen-train-mode"])
        if got.get(f"{start}/after") != start:
            raise Failure(
                MISTAKES["gen-mode-not-restored"], got=got.get(f"{start}/after"), expected=start
            )


# --------------------------------------------------------------------------- train (slow)

# Measured by running solutions/gpt.py's train through this check (tools/measure_train.py,
# see docs/gpt.md): the held-out loss after the run (train is given the first 90 % of the
# corpus, the windows are in the last 10 %), over 20 seeds, was at most TRAIN_SOLUTION_LOSS;
# we ask for below TRAIN_THRESHOLD, a margin for other correct ways of drawing the batches.
# Before training the loss is about log V = 4.06. The loss is computed here by ConvLM, the
# grader's own model, with the trained weights: the student's model is the grader's code.
TRAIN_SOLUTION_LOSS = 2.04
TRAIN_THRESHOLD = 2.30


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


@TRAIN.check("train", inputs=probe.inputs_train, timeout=60.0, slow=True)
@no_reference
def verdict_train(got, want, x):
    steps = probe.TRAIN_ARGS["steps"]
    if "losses_type" in got:
        raise Failure(
            MISTAKES["train-wrong-return"],
            steps=steps,
            detail=f"it returned a {got['losses_type']}",
        )
    losses = tensor(got, "losses", "the list of losses")
    if losses.shape != (steps,):
        raise Failure(
            MISTAKES["train-wrong-return"],
            steps=steps,
            detail=f"the list has {losses.numel()} items",
        )
    if got.get("losses_item_type"):
        raise Failure(
            MISTAKES["train-wrong-return"],
            steps=steps,
            detail=f"its items are {got['losses_item_type']} objects, not floats (a loss "
            "tensor keeps its step's whole graph in memory)",
        )
    alphabet, data = probe.corpus()
    T, starts = probe.TRAIN_ARGS["seq_len"], x["eval_starts"].cpu()
    before, _ = models.eval_losses(probe.train_model(alphabet, x["model_seed"]), data, starts, T)
    loss, identity = models.eval_losses(_trained(got, alphabet), data, starts, T)
    high = {"loss": loss, "solution": TRAIN_SOLUTION_LOSS, "threshold": TRAIN_THRESHOLD}
    if not math.isfinite(loss) or not torch.isfinite(losses).all():
        raise Failure(MISTAKES["train-loss-too-high"], **high)
    if abs(loss - before) < 1e-4:
        raise Failure(MISTAKES["train-no-update"], before=before, loss=loss)
    moved = got.get("tiny_lr_moved")
    if isinstance(moved, int | float) and moved > 1e-6:  # AdamW at 1e-12 moves nothing
        raise Failure(MISTAKES["train-lr-ignored"], lr=probe.TINY_LR, moved=float(moved))
    if loss >= TRAIN_THRESHOLD and identity < 1.0:
        raise Failure(MISTAKES["train-targets-not-shifted"], identity=identity, loss=loss)
    if loss >= TRAIN_THRESHOLD:
        raise Failure(MISTAKES["train-loss-too-high"], **high)
