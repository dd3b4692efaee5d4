"""flash.py: the solution and the alternatives against independent oracles (PyTorch's fused
attention and its autograd, torch.autograd.gradcheck), and the probe's evidence on them."""

import importlib.util

import pytest
import torch
import torch.nn.functional as F
from conftest import variants
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks.flash import probe
from solutions import flash

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def _load(path):
    spec = importlib.util.spec_from_file_location(f"flash_variant_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IMPLEMENTATIONS = [pytest.param(flash, id="solution")] + [
    pytest.param(p.values[1], id=p.values[1].stem)
    for p in variants("alternatives")
    if p.values[0] == "flash"
]


@st.composite
def problems(draw):
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    T, d, d_v = draw(st.integers(1, 11)), draw(st.integers(1, 6)), draw(st.integers(1, 6))
    dtype = draw(st.sampled_from(list(TOL)))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    q, k = (torch.randn(*batch, T, d, generator=gen, dtype=dtype) for _ in range(2))
    v, g = (torch.randn(*batch, T, d_v, generator=gen, dtype=dtype) for _ in range(2))
    return q, k, v, g


@settings(max_examples=12, deadline=None)
@given(problems(), st.integers(1, 13), st.integers(1, 13), st.booleans())
def test_solution_matches_pytorch_forward_and_backward(problem, bq, bk, causal):
    """out and every gradient equal autograd through F.scaled_dot_product_attention."""
    q, k, v, g = problem
    tol = TOL[q.dtype]
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    mine = flash.flash_attention(*leaves, causal, bq, bk)
    mine.backward(g)
    oracle = [t.clone().requires_grad_() for t in (q, k, v)]
    want = F.scaled_dot_product_attention(*oracle, is_causal=causal)
    want.backward(g)
    torch.testing.assert_close(mine, want, atol=tol, rtol=tol)
    for a, b in zip(leaves, oracle, strict=True):
        torch.testing.assert_close(a.grad, b.grad, atol=tol, rtol=tol)
    out, lse = flash.flash_forward(q, k, v, causal, bq, bk)
    s = (q @ k.transpose(-2, -1)) / q.size(-1) ** 0.5
    if causal:
        s = s.masked_fill(torch.ones(q.size(-2), q.size(-2), dtype=torch.bool).triu(1), -torch.inf)
    torch.testing.assert_close(lse, torch.logsumexp(s, dim=-1), atol=tol, rtol=tol)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_gradcheck_float64(implementation):
    """torch.autograd.gradcheck in float64 on small shapes, causal or not, ragged tiles."""
    module = implementation if implementation is flash else _load(implementation)
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 6, 3, generator=gen, dtype=torch.float64) for _ in range(3))
    for causal, bq, bk in ((False, 2, 3), (True, 4, 2)):
        leaves = [t.clone().requires_grad_() for t in (q, k, v)]

        def fn(q, k, v, causal=causal, bq=bq, bk=bk):
            return module.flash_attention(q, k, v, causal, bq, bk)

        assert torch.autograd.gradcheck(fn, leaves, fast_mode=True)


def test_the_probe_sees_what_the_function_saves():
    """The saves probe finds q, k, v, out and lse (O(T)) for the solution, and the weights
    when a Function saves them (the mutant), from saved-tensor hooks."""
    x = probe.inputs_saves(torch.Generator().manual_seed(3))
    T = x["q"].size(-2)
    got = probe.probe_saves(flash, x)
    assert got["custom_function"] and got["saved"] == 5
    assert got["saved_largest"] < T * T and got["saved_total"] < 2 * 9 * T * 8
    path = next(
        p.values[1] for p in variants("mutants") if p.values[1].stem == "function_saves_weights"
    )
    bad = probe.probe_saves(_load(path), x)
    assert bad["saved_largest"] >= 2 * T * T


def test_the_work_counter_sees_the_causal_skip():
    """Causal flash_forward and flash_backward do (n + 1) / 2n of the full pass's products
    on n x n square tiles, as the work counter counts them."""
    x = probe.inputs_tiles(torch.Generator().manual_seed(4))
    for got in (probe.probe_forward_tiles(flash, x), probe.probe_backward_tiles(flash, x)):
        assert got["c1/macs"] * 64 == got["c0/macs"] * 36
