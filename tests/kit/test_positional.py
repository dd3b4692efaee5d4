"""positional.py: the solution against the exact formula, the trusted stand-in, and the kit's
mutants and alternatives for it."""

import math

import pytest
import torch
from conftest import variants

from autograder.checks.positional import judge as checks
from autograder.core import registry
from autograder.core.check import Failure
from autograder.run.probing import make_inputs
from autograder.trusted import positional as trusted
from solutions import positional


@pytest.mark.parametrize("D", [1, 2, 7, 16, 64])
def test_solution_matches_the_formula_and_trusted(D):
    pe = positional.sinusoidal_encoding(300, D)
    assert pe.dtype == torch.float32 and pe.shape == (300, D)
    for p in (0, 1, 17, 299):
        for col in range(D):
            angle = p / 10000 ** (2 * (col // 2) / D)
            exact = math.sin(angle) if col % 2 == 0 else math.cos(angle)
            assert abs(float(pe[p, col]) - exact) <= 1e-5 + checks.SLOPE * p
    torch.testing.assert_close(pe, trusted.sinusoidal_encoding(300, D), atol=1e-4, rtol=0)


def test_module_equals_trusted_and_loads_its_state_dict():
    torch.manual_seed(0)
    mine, theirs = positional.PositionalEncoding(12, max_len=30), trusted.PositionalEncoding(12, 30)
    assert list(mine.state_dict()) == list(theirs.state_dict()) == ["pe"]
    assert list(mine.parameters()) == []
    theirs.load_state_dict(mine.state_dict())
    x = torch.randn(2, 9, 12)
    torch.testing.assert_close(mine.eval()(x), theirs.eval()(x))
    with pytest.raises(ValueError, match="31"):
        mine(torch.zeros(1, 31, 12))


def test_trusted_table_is_what_the_checks_call_exact():
    # The checks' float64 closed form, the trusted table and the solution agree.
    for D in (7, 16):
        exact = checks._table(range(50), D)
        torch.testing.assert_close(
            trusted.sinusoidal_encoding(50, D).double(), exact, atol=1e-5, rtol=0
        )


def test_every_named_table_mistake_is_far_from_the_right_table():
    # Otherwise the growing tolerance could let a mistake pass the far-position check.
    far = (0, 1, 2, 63, 500, 2047, 4999)
    exact = checks._table(far, 32)
    for mistake, output, _ in checks._mistakes(far, 32):
        assert (output() - exact).abs().max() > 0.1, mistake.id


def test_enough_positional_variants():
    assert len([m for m in variants("mutants") if m.values[0] == "positional"]) >= 8
    assert len([a for a in variants("alternatives") if a.values[0] == "positional"]) >= 2


def _check(slug, seed=3):
    check = registry.find(f"positional.{slug}")
    return check, make_inputs(check, seed)


def _fails_with(check, got, want, x, mistake):
    with pytest.raises(Failure) as failure:
        check.verdict(got, want, x)
    assert failure.value.misconception.id == mistake


def test_frequencies_judges_the_students_own_table():
    """The angle each pair turns by per position, read off the student's table: a table with
    the right frequencies but another origin (a phase per pair) passes here (the encoding
    check charges it); tables that do not turn earn nothing; the exponent mistakes are named."""
    check, x = _check("frequencies")
    n, D = x["max_len"], x["d_model"]
    want = {f"replay/{k}": v for k, v in check.replays(x).items()}
    check.verdict({"pe": positional.sinusoidal_encoding(n, D)}, want, x)  # no Failure
    phase = torch.rand(D // 2, generator=torch.Generator().manual_seed(0)) * 6
    omega = 10000.0 ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
    turned = torch.arange(n, dtype=torch.float64)[:, None] * omega + phase
    shifted = torch.stack([turned.sin(), turned.cos()], dim=-1).flatten(1).float()
    check.verdict({"pe": shifted}, want, x)  # no Failure: the origin is not this check's
    for forged in (torch.zeros(n, D), torch.ones(n, D)):
        _fails_with(check, {"pe": forged}, want, x, "pe-wrong-frequency")
    wrong = checks._table(range(n), D, exponent="i").float()
    _fails_with(check, {"pe": wrong}, want, x, "pe-exponent-i-over-d")
    slower = torch.stack([(turned / 2).sin(), (turned / 2).cos()], dim=-1).flatten(1).float()
    _fails_with(check, {"pe": slower}, want, x, "pe-wrong-frequency")


def test_not_trained_needs_a_forward_that_adds_the_table():
    """A module whose forward adds nothing (or a constant) has nothing to train, and earns
    nothing: the check asks that forward adds the table and that a step leaves it."""
    check, x = _check("not-trained")
    from autograder.checks.positional import probe

    want = probe.probe_buffer(positional, x)
    check.verdict(probe.probe_buffer(positional, x), want, x)  # no Failure
    for added, mistake in ((0.0, "no-evidence"), (1.0, "wrong-values")):
        out = x["x"] + added  # x handed back; x plus a constant (float32-rounded)
        got = {**want, "before_step": out, "after_step": out}
        _fails_with(check, got, want, x, mistake)
