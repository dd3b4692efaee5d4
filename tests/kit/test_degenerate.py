"""Issue 27, item 4: no point for degenerate evidence. Every check (the fast ones: the
training runs are judged on a model's own loss) is fed generic outputs of the structure the
solution's probe returns: zeros, ones, ±inf, NaN, random values of the right shape, the input
echoed, all-True and all-False bool, complex. None may earn a point: a check named after a
property passes only on finite outputs that vary with the inputs the property is about, and
on masks that block something (core/verdicts.assert_evidence). Before: "dropout does nothing
in eval mode" (positional, blocks x2), the meta-device mask checks (x2) and llama's logits
shapes passed on constants, inf or the input handed back."""

from __future__ import annotations

import math

import pytest
import torch

from autograder.core import fixtures, paths, registry
from autograder.core.references import References
from autograder.run.engine import judge
from autograder.run.probing import make_inputs, run_probe
from autograder.run.submission import Submission

KINDS = ("zeros", "ones", "inf", "-inf", "nan", "random", "echo", "true", "false", "complex")
_FLOATS = {"zeros": 0.0, "ones": 1.0, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)


def _generic(t: torch.Tensor, kind: str, inputs: list[torch.Tensor], gen) -> torch.Tensor:
    if kind == "echo":
        same = [x for x in inputs if x.shape == t.shape]
        return same[0].to(t.dtype) if same else torch.zeros_like(t)
    if kind in ("true", "false"):
        return torch.full(t.shape, kind == "true", dtype=torch.bool)
    if kind == "complex":
        return torch.zeros(t.shape, dtype=torch.complex64)
    if t.dtype == torch.bool:
        return torch.ones_like(t) if kind == "ones" else torch.zeros_like(t)
    if not t.is_floating_point():
        if kind == "random":
            return torch.randint(0, 5, t.shape, generator=gen, dtype=t.dtype)
        return torch.ones_like(t) if kind == "ones" else torch.zeros_like(t)
    if kind == "random":
        return torch.randn(t.shape, generator=gen, dtype=t.dtype)
    return torch.full_like(t, _FLOATS[kind])


def degenerate(value, kind: str, inputs: list[torch.Tensor], gen):
    """`value` (a probe's outputs) with every leaf replaced by a generic one of `kind`."""
    if isinstance(value, torch.Tensor):
        return _generic(value, kind, inputs, gen)
    if isinstance(value, dict):
        return {k: degenerate(v, kind, inputs, gen) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(degenerate(v, kind, inputs, gen) for v in value)
    if isinstance(value, bool):
        return kind == "true"
    if isinstance(value, float):
        return _FLOATS.get(kind, 0.0)
    if isinstance(value, int):
        return 1 if kind == "ones" else 0
    if isinstance(value, str):
        return ""
    return value


@pytest.mark.parametrize("module", registry.modules())
def test_no_check_earns_a_point_on_generic_outputs(module):
    solutions = Submission(paths.SOLUTIONS)
    references = References.public().module(module)
    gen = torch.Generator().manual_seed(0)
    won = []
    for check in registry.checks_of(module):
        if check.slow or not check.points:
            continue
        inputs = make_inputs(check, fixtures.PUBLIC_SEED)
        shape_of = run_probe(check, solutions.load(module), inputs)  # the outputs' structure
        echoes = list(_tensors(inputs))
        for kind in KINDS:
            got = degenerate(shape_of, kind, echoes, gen)
            if judge(check, got, references.get(check.slug), inputs).passed:
                won.append(f"{check.id} on {kind}")
    assert not won, f"points for outputs that compute nothing: {won}"
