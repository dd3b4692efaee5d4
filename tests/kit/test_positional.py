"""positional.py: the solution against the exact formula, the trusted stand-in, and the kit's
mutants and alternatives for it."""

import math

import pytest
import torch
from conftest import variants

from autograder.checks.positional import judge as checks
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
