"""Independent oracles: the solutions against PyTorch built-ins, never trusted on our word."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.core.diagnosis import infer_scale, name_scale
from autograder.trusted import attention as trusted_attention
from autograder.trusted import masks as trusted_masks
from solutions import attention, masks

DTYPES = {torch.float32: 1e-5, torch.float64: 1e-10}


@st.composite
def problems(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    L, S = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    d_k, d_v = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    dtype = draw(st.sampled_from(list(DTYPES)))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(*batch, n, d_k, generator=gen, dtype=dtype) for n in (L, S))
    v = torch.randn(*batch, S, d_v, generator=gen, dtype=dtype)
    mask = (
        torch.rand(L, S, generator=gen) < draw(st.floats(0, 0.9)) if draw(st.booleans()) else None
    )
    return q, k, v, mask


def sdpa_oracle(q, k, v, mask):
    """F.scaled_dot_product_attention, whose bool mask means the opposite (True = attend);
    rows with nothing to attend to are defined as zero in this kit."""
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v)
    empty = mask.all(dim=-1, keepdim=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=~mask | empty)
    return out.masked_fill(empty, 0.0)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_solution_matches_pytorch_sdpa(problem):
    q, k, v, mask = problem
    out, weights = attention.scaled_dot_product_attention(q, k, v, mask)
    atol = DTYPES[q.dtype]
    torch.testing.assert_close(out, sdpa_oracle(q, k, v, mask), atol=atol, rtol=atol)
    eye = torch.eye(k.size(-2), dtype=q.dtype).expand(*v.shape[:-1], k.size(-2))
    torch.testing.assert_close(weights, sdpa_oracle(q, k, eye, mask), atol=atol, rtol=atol)
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()


@settings(max_examples=60, deadline=None)
@given(problems())
def test_bias_matches_pytorch_float_mask(problem):
    q, k, v, mask = problem
    bias = torch.randn(q.size(-2), k.size(-2), dtype=q.dtype)
    out, _ = attention.attention_with_bias(q, k, v, bias)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)  # float mask: added
    torch.testing.assert_close(out, expected, atol=DTYPES[q.dtype], rtol=DTYPES[q.dtype])


@settings(max_examples=60, deadline=None)
@given(problems())
def test_trusted_attention_equals_solution(problem):
    q, k, v, mask = problem
    bias = torch.randn(q.size(-2), k.size(-2), dtype=q.dtype)
    for a, b in zip(
        attention.attention_with_bias(q, k, v, bias, mask),
        trusted_attention.attention_with_bias(q, k, v, bias, mask),
        strict=True,
    ):
        torch.testing.assert_close(a, b, atol=DTYPES[q.dtype], rtol=DTYPES[q.dtype])


@pytest.mark.parametrize("L", [1, 2, 7])
def test_masks_match_pytorch_and_trusted(L):
    builtin = torch.nn.Transformer.generate_square_subsequent_mask(L) == -math.inf
    assert torch.equal(masks.causal_mask(L), builtin)
    assert torch.equal(trusted_masks.causal_mask(L), builtin)
    for w in (1, 2, 3, L + 2):
        assert torch.equal(masks.sliding_window_mask(L, w), trusted_masks.sliding_window_mask(L, w))
    lengths = [L, max(L - 1, 0), 1]
    assert torch.equal(masks.padding_mask(lengths, L), trusted_masks.padding_mask(lengths, L))
    # key_padding_mask of nn.MultiheadAttention uses True = ignore, as we do.
    assert torch.equal(
        masks.padding_mask(lengths, L)[:, 0, 0],
        torch.arange(L)[None] >= torch.tensor(lengths)[:, None],
    )


@pytest.mark.parametrize("divisor", [4.0, 1.0, 8.0, 16.0, 0.25])
def test_infer_scale_recovers_the_divisor(divisor):
    gen = torch.Generator().manual_seed(0)
    q, k = torch.randn(3, 5, 16, generator=gen) * 0.5, torch.randn(3, 7, 16, generator=gen) * 0.5
    weights = torch.softmax(q @ k.mT / divisor, dim=-1)
    assert math.isclose(infer_scale(q, k, weights), divisor, rel_tol=1e-3)
    mask = torch.rand(5, 7, generator=gen) < 0.3
    masked = torch.softmax((q @ k.mT / divisor).masked_fill(mask, -math.inf), dim=-1)
    assert math.isclose(infer_scale(q, k, masked, mask), divisor, rel_tol=1e-3)


def test_infer_scale_refuses_what_is_no_softmax_of_the_scores():
    gen = torch.Generator().manual_seed(1)
    q, k = torch.randn(5, 16, generator=gen), torch.randn(7, 16, generator=gen)
    assert infer_scale(q, k, torch.softmax(q @ k.T / 4, dim=-2)) is None
    assert infer_scale(q, k, torch.full((5, 7), 1 / 7)) is None


def test_name_scale_names_the_model_width():
    text = name_scale(8.0, {"d_k": 16, "d_model": 64})
    assert text == "8 = √64 (√d_model)"
