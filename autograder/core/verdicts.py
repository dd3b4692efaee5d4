"""Helpers that verdicts use: type/shape/dtype guards, comparison, naming the mistake.

A verdict never trusts what the probe returned: it checks the type, the shape and the dtype
before it compares values, and each problem raises a Failure that names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import torch

from . import model_replays
from .check import (
    CHANGED_INPUT,
    CHANGED_KEY,
    NO_EVIDENCE,
    NO_GRADIENT,
    NOT_FINITE,
    WRONG_DTYPE,
    WRONG_SHAPE,
    WRONG_TYPE,
    WRONG_VALUES,
    Failure,
    Misconception,
    Misconceptions,
)
from .i18n import N_
from .tolerances import Tolerance, tolerance

# A candidate explanation: (misconception, the output that mistake would give, details).
# The output may be a callable, computed only when needed.
Candidate = tuple[Misconception, "torch.Tensor | Callable[[], torch.Tensor]", dict[str, Any]]


class ModelUnavailable(Exception):
    """A judge model (a function marked @model) was called in the student copy, which holds
    no model code: a candidate that needs one is skipped; a verdict that needs one cannot
    name the mistake there (engine.judge: UNNAMED)."""


class _Model:
    """`@model` marks a judge function that computes the exercise's computation (correctly,
    or with a named mistake): the student copy (`make dist`, student_copy.py) ships its
    signature with the body left out, decorated `@model.left_out` instead, and answers from
    what the kit recorded on the public tier (model_replays.py, which records through this)."""

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        return model_replays.recorded(fn)

    @staticmethod
    def left_out(fn: Callable[..., Any]) -> Callable[..., Any]:
        """The student copy's model: the answer the instructor's kit recorded for these
        arguments on the public tier, else unavailable (the mistake is not named)."""

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            try:
                return model_replays.answer(fn, args, kwargs)
            except KeyError:
                raise ModelUnavailable(fn.__name__) from None

        unavailable.__name__, unavailable.__qualname__ = fn.__name__, fn.__qualname__
        unavailable.__module__ = fn.__module__
        return unavailable


model = _Model()


misconception = Misconceptions(__name__)  # this module's (core.Misconceptions)

WRONG_KIND = misconception(
    "wrong-dtype-kind",
    "{what} has dtype {got}, but a {kind} tensor is expected (like {expected}): its values "
    "cannot be compared.",
    (
        "A boolean or integer tensor holds other kinds of values than the floating-point "
        "result expected: the computation was turned into a test or a count somewhere.",
        "Look at the last operations before the return: a comparison (==, <, >), .bool(), "
        ".long() or .int() changes the kind of the tensor.",
        "Return the tensor your computation produces: drop the .bool(), .long() or .int() at the "
        "end and any comparison (==, <, >), e.g. return out, not return out > 0.",
    ),
)


def excerpt(text: str, limit: int = 300) -> str:
    """A message the student's code raised, as feedback shows it: whole up to `limit`
    characters, else its start and its end (a check reads all of it: probing.message_of)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    head, tail = text[:half], text[-half:]
    # cut between words where there are words to cut between
    head = head.rsplit(" ", 1)[0] if " " in head[half // 2 :] else head
    tail = tail.split(" ", 1)[1] if " " in tail[: half // 2] else tail
    return f"{head} … {tail}"


def tensor(
    got: dict[str, Any],
    key: str,
    what: str,
    *,
    shape: Iterable[int] | None = None,
    dtype: torch.dtype | None = None,
    floating: bool = False,
) -> torch.Tensor:
    """got[key] as a plain tensor of the expected shape and dtype (or, with floating=True,
    any floating dtype), or a Failure naming why."""
    value = got.get(key)
    if type(value) is not torch.Tensor:
        raise Failure(WRONG_TYPE, what=what, expected="a torch.Tensor", got=_type_name(value))
    if floating and not value.is_floating_point():
        raise Failure(
            WRONG_KIND, what=what, got=value.dtype, expected=torch.float32, kind="floating"
        )
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Failure(WRONG_SHAPE, what=what, got=tuple(value.shape), expected=tuple(shape))
    if dtype is not None and value.dtype != dtype:
        raise Failure(WRONG_DTYPE, what=what, got=value.dtype, expected=dtype)
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)}"
    return "None" if value is None else f"a {type(value).__name__}"


def close(
    a: torch.Tensor, b: torch.Tensor, tol: Tolerance | None = None, *, equal_nan: bool = False
) -> bool:
    """`a` (the student's) equals `b` (the expected): same shape, the same kind of dtype
    (floating, complex, integer or bool), and equal within b's tolerance, exact for bool and
    integers. `a` is cast to b's dtype, never the reverse: a bool tensor is never "close" to
    a float reference because the reference was rounded to bool. `equal_nan`: NaN where both
    are NaN counts as equal (only to name a mistake whose model gives NaN there, never to
    pass a check)."""
    if a.shape != b.shape or _kind(a) != _kind(b):
        return False
    if not b.is_floating_point():
        return bool(torch.equal(a.to(b.dtype), b))
    tol = tol or tolerance(b.dtype)
    return bool(torch.allclose(a.to(b.dtype), b, equal_nan=equal_nan, **tol))


def _kind(t: torch.Tensor) -> str:
    if t.is_complex():
        return "complex"
    if t.is_floating_point():
        return "floating"
    return "bool" if t.dtype == torch.bool else "integer"


def oracle(compute: Callable[[], Any], reference: Any) -> Any:
    """compute(): a model's output, an oracle independent of the reference; in the student
    copy, which has no models, the reference output itself (the verdict rests on it alone)."""
    try:
        return compute()
    except ModelUnavailable:
        return reference


def agree(a: torch.Tensor, b: torch.Tensor, tol: Tolerance | None = None) -> bool:
    """The student's own two runs agree (NaN where both are NaN counts as agreeing)."""
    a = a.to(b.dtype)
    return bool(torch.allclose(a, b, equal_nan=True, **(tol or tolerance(b.dtype))))


def trained_state(
    got: dict[str, Any], given: dict[str, torch.Tensor], whose: str
) -> dict[str, Any]:
    """The state_dict a training probe returned (got["state/<name>"]), which must hold the
    names of `given`, the state training started from (`whose`: those names, as the
    message calls them); else WRONG_TYPE."""
    state = {k.removeprefix("state/"): v for k, v in got.items() if k.startswith("state/")}
    if set(state) != set(given):
        raise Failure(
            WRONG_TYPE, what="the trained model's state_dict", expected=whose, got="other names"
        )
    return state


def unchanged(state: dict[str, Any], given: dict[str, torch.Tensor]) -> bool:
    """Whether training left every weight as it was given (within the tolerance)."""
    return all(close(state[k].float(), v) for k, v in given.items())


def worst_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest absolute difference between a and b, in float64 (NaN counts as inf)."""
    diff = torch.nan_to_num((a.double() - b.double()).abs(), nan=float("inf"))
    return float(diff.max()) if diff.numel() else 0.0


def assert_close(
    got: torch.Tensor,
    want: torch.Tensor,
    what: str,
    candidates: Iterable[Candidate] = (),
    tol: Tolerance | None = None,
    finite: bool = True,
) -> None:
    """Pass when got ≈ want. Otherwise name the mistake: the first candidate whose output
    matches (NaN where the candidate's is NaN too: a mistake that leaves a row NaN is named
    by its model, not only as "not finite"), then NaN/inf, then the largest error and where
    it is. A result of another kind of dtype than the expected one (bool or integers where
    floats are expected) fails first, with its own message, before any value is compared."""
    if _kind(got) != _kind(want):
        raise Failure(WRONG_KIND, what=what, got=got.dtype, expected=want.dtype, kind=_kind(want))
    if close(got, want, tol):
        return
    # A mistake's model is often computed in float64: its output is matched within the
    # tolerance of the dtype the student's result should have (want's), not float64's, which
    # a float32 run misses by its last bits on some inputs.
    within = (tol or tolerance(want.dtype)) if want.is_floating_point() else tol
    for mistake, output, details in candidates:
        try:
            value = output() if callable(output) else output
        except ModelUnavailable:  # the student copy: this mistake is not named there
            continue
        if value is not None and close(got, value, within, equal_nan=_informative(value)):
            raise Failure(mistake, what=what, **details)
    if finite and got.is_floating_point() and not torch.isfinite(got).all():
        raise Failure(NOT_FINITE, what=what, count=int((~torch.isfinite(got)).sum()))
    if got.dtype == torch.bool:
        index = tuple(torch.nonzero(got != want)[0].tolist())
        raise Failure(
            WRONG_VALUES,
            what=what,
            err=1.0,
            index=index,
            got=float(got[index]),
            want=float(want[index]),
        )
    diff = (got.to(torch.float64) - want.to(torch.float64)).abs()
    diff = torch.nan_to_num(diff, nan=float("inf"))
    flat = int(diff.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
    raise Failure(
        WRONG_VALUES,
        what=what,
        err=float(diff.flatten()[flat]),
        index=index,
        got=float(got.flatten()[flat]),
        want=float(want.flatten()[flat]),
    )


def _informative(value: torch.Tensor) -> bool:
    """Whether NaN may count as equal when `value` (a mistake's output) is matched: only
    where it also holds finite values, so that a run that is NaN everywhere is "not finite",
    never a mistake whose model happens to be NaN everywhere too."""
    return bool(value.is_floating_point() and torch.isfinite(value).any())


def assert_evidence(
    value: torch.Tensor, what: str, echoes: Iterable[torch.Tensor] = (), *, blocks: bool = False
) -> None:
    """Raise NO_EVIDENCE unless `value` can show a property: finite, not one constant, not one
    of `echoes` (the inputs) handed back; `blocks` (a bool mask): True somewhere. A property
    check that decides on the student's own runs calls it first, so that zeros, a constant,
    inf, NaN or the input echoed earn no point."""
    if blocks:
        if not bool(value.any()):
            raise Failure(NO_EVIDENCE, what=what, how=N_("blocks nothing"))
        return
    if value.is_complex() or not value.is_floating_point():
        return  # a dtype check speaks first where floats are wanted
    if not bool(torch.isfinite(value).all()):
        raise Failure(NO_EVIDENCE, what=what, how=N_("holds NaN or infinity"))
    if value.numel() > 1 and bool((value == value.flatten()[0]).all()):
        raise Failure(NO_EVIDENCE, what=what, how=N_("is one constant everywhere"))
    for echo in echoes:
        if echo.shape == value.shape and torch.equal(value.to(echo.dtype), echo):
            raise Failure(NO_EVIDENCE, what=what, how=N_("is its input, handed back unchanged"))


def assert_uses_scores(out: torch.Tensor, values: torch.Tensor, what: str) -> None:
    """Raise NO_EVIDENCE when an attention's output `out` is the mean of `values` (queries
    on axis -2) over every key, or over the keys up to each query, on inputs whose scores
    differ: an attention that ignores q and k. Such a run gives each query the same output
    in one chunk or many, and for scores shifted by any amount, so a property check of
    chunking or of shifted scores calls this first: that run earns no point there."""
    if values.shape != out.shape or values.size(-2) < 2 or not out.is_floating_point():
        return
    v = values.double()
    counts = torch.arange(1, v.size(-2) + 1, dtype=torch.float64)[:, None]
    for mean in (v.mean(dim=-2, keepdim=True).expand_as(v), v.cumsum(dim=-2) / counts):
        if close(out, mean.to(out.dtype)):
            how = N_("is the mean of the values, whatever the queries and keys")
            raise Failure(NO_EVIDENCE, what=what, how=how)


def variants(
    fn: Callable[..., torch.Tensor], *args: Any, mistakes: Iterable[tuple[Misconception, str]]
) -> list[Candidate]:
    """Candidates for assert_close from one model that takes the variant of the computation
    as its last argument: for each (misconception, variant), the output fn(*args, variant),
    computed only when needed."""
    return [(mistake, partial(fn, *args, variant), {}) for mistake, variant in mistakes]


def linear64(x: torch.Tensor, state: dict[str, torch.Tensor], name: str) -> torch.Tensor:
    """The linear layer `name` of a state dict (name.weight, and name.bias if there is one)
    applied to x, in float64: a judge's own nn.Linear, from the grader's weights."""
    out = x.double() @ state[f"{name}.weight"].double().T
    if f"{name}.bias" in state:
        out = out + state[f"{name}.bias"].double()
    return out


def dropout_finding(
    out: torch.Tensor, full: torch.Tensor, p: float, *, tol: float = 1e-4, sigmas: float = 5.0
) -> tuple[str, str] | None:
    """How `out` departs from inverted dropout of `full` (drop probability p), or None.

    Dropout's promise, judged on one run and on no random stream: each value is 0 or
    full / (1 - p), and the dropped fraction is p within `sigmas` binomial standard
    deviations. Values where `full` is about 0 fit both and are not counted. Returns
    (kind, detail), kind one of "ignored", "not-rescaled", "misplaced", "rate"."""
    out, full = out.double().flatten(), full.double().flatten()
    allowed = tol * (1 + full.abs() / (1 - p))
    clear = full.abs() > 20 * allowed
    dropped = out.abs() <= allowed
    kept = (out - full / (1 - p)).abs() <= allowed
    if not clear.any():
        return None
    if bool(((out - full).abs() <= allowed).all()):
        return "ignored", "no value was dropped"
    bad = clear & ~dropped & ~kept
    if bad.any():
        if bool(((out - full).abs() <= allowed)[clear & ~dropped].all()):
            return "not-rescaled", "the values kept were not divided by 1 - p"
        survivors = clear & ~dropped
        c = float((out[survivors] / full[survivors]).median())
        if bool(((out - c * full).abs() <= tol * (1 + out.abs()))[survivors].all()):
            frac = float(dropped[clear].double().mean())
            return "rate", (
                f"the values kept were multiplied by {c:.4g}, not 1 / (1 - p) = "
                f"{1 / (1 - p):.4g}, and {frac:.0%} were dropped, not p = {p:g} (1 - p given "
                "as the drop probability)"
            )
        i = int(bad.nonzero()[0])
        return "misplaced", (
            f"value {i} (in flattened order) is {float(out[i]):.6g}, neither 0 nor "
            f"{float(full[i] / (1 - p)):.6g}"
        )
    n = int(clear.sum())
    frac = float(dropped[clear].double().mean())
    if abs(frac - p) > sigmas * (p * (1 - p) / n) ** 0.5:
        return "rate", f"{frac:.0%} of {n} values were dropped, but p = {p:g}"
    return None


def assert_kept(got: dict[str, Any], what: str) -> None:
    """Failure (changed-input) when the probe's run of `what` changed one of the arguments it
    watched in place (run/probing.kept). One check per function watches: the mistake is
    charged once, and the function's other checks give it fresh arguments per call."""
    name = got.get(CHANGED_KEY)
    if name:
        raise Failure(CHANGED_INPUT, what=what, name=str(name))


def assert_gradients(
    got: dict[str, Any],
    want: dict[str, Any] | None,
    what: str,
    *,
    behind: Iterable[tuple[str, str]] = (),
    output: str | None = None,
) -> None:
    """Failure (no-gradient) when the backward pass of the probe's run (run/probing.gradients)
    raised, or left an input or parameter without a gradient where the reference's got one
    (`want`; None: every one must get one). Only whether gradients arrive: their values
    follow from forward's, which other checks judge. A reference gradient that is rounding
    noise (at most 1e-6 of its largest) asks for none: a key projection's bias, say, whose
    gradient is zero in exact arithmetic (softmax ignores a shift shared by a row).

    behind: (tag, pattern) pairs, one per sub-layer of the student's own that the run went
    through (a rotation, a repeat, an attention), whose own check charges a cut in it: the
    keys that `pattern` matches (re.match) ask for a gradient only where that sub-layer let
    one through to its input (got["<tag>/grad/x"], from the same probe). output: a key of
    got and want; gradients are asked only when got's is the reference's (an output passed
    as right but for a mistake charged elsewhere, a norm left out, may leave a weight
    unused: that mistake is charged there, once). An input the code changed in place, which
    autograd refuses, is charged as changed-input (probing.gradients names it)."""
    if output is not None and want is not None and not close(got[output], want[output]):
        return
    error = got.get("grad/error")
    if error and "does not require grad" in str(error):  # autograd never saw a parameter
        raise Failure(NO_GRADIENT, what=what, detail="no gradient reaches any input or parameter")
    cut = [pattern for tag, pattern in behind if not _passes(got.get(f"{tag}/grad/x"))]
    if error and cut:  # the backward pass broke in a sub-layer whose own check charges it
        return
    if got.get("grad/changed"):  # autograd refused an input changed in place: name it
        raise Failure(CHANGED_INPUT, what=what, name=str(got["grad/changed"]))
    if error:
        raise Failure(NO_GRADIENT, what=what, detail=f"the backward pass raised {error}")
    expected_from = got if want is None else want
    found = {
        key: value
        for key, value in expected_from.items()
        if key.startswith("grad/")
        and key not in ("grad/error", "grad/changed")
        and not any(re.match(pattern, key) for pattern in cut)
    }
    sizes = [float(v.abs().max()) for v in found.values() if _passes(v)]
    noise = 1e-6 * max(sizes, default=0.0)
    for key, expected in found.items():
        if want is not None and not (
            isinstance(expected, torch.Tensor)
            and expected.numel()
            and float(expected.abs().max()) > noise
        ):
            continue
        grad = got.get(key)
        if not isinstance(grad, torch.Tensor) or grad.shape != getattr(expected, "shape", None):
            detail = f"{key[5:]} got no gradient"
        elif not bool(grad.abs().max() > 0):
            detail = f"{key[5:]} got a gradient of zeros"
        else:
            continue
        raise Failure(NO_GRADIENT, what=what, detail=detail)


def _passes(gradient: Any) -> bool:
    """Whether a sub-layer's gradient to its input (probing.gradients's "grad/x") arrived."""
    return isinstance(gradient, torch.Tensor) and bool(gradient.abs().max() > 0)


def assert_causal(
    logits: torch.Tensor,
    logits2: torch.Tensor,
    want: torch.Tensor,
    t: int,
    no_causal: Misconception,
    constant: Misconception,
) -> None:
    """A language model's own two runs on inputs equal up to position t and different after
    it: the logits up to t must agree (else `no_causal`) and those after t must not (else
    `constant`, with t; so zeros cannot pass). NaN or inf is named against `want`."""
    if not (torch.isfinite(logits).all() and torch.isfinite(logits2).all()):
        assert_close(logits, want, "the logits")  # names the NaN / inf
    if not close(logits[:, : t + 1], logits2[:, : t + 1]):
        raise Failure(no_causal)
    if close(logits[:, t + 1 :], logits2[:, t + 1 :]):
        raise Failure(constant, t=t)
