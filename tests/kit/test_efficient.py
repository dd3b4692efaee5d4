"""efficient.py: the solutions against independent oracles, and the kit's variants for it."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import variants
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks.efficient.probe import Recorder
from autograder.core import Misconception
from solutions import attention, efficient, masks

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


@st.composite
def problems(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    T, d, d_v = draw(st.integers(1, 12)), draw(st.integers(1, 9)), draw(st.integers(1, 9))
    dtype = draw(st.sampled_from(list(TOL)))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    q, k = (torch.randn(*batch, T, d, generator=gen, dtype=dtype) for _ in range(2))
    v = torch.randn(*batch, T, d_v, generator=gen, dtype=dtype)
    return q, k, v


def close(a, b):
    torch.testing.assert_close(a, b, atol=TOL[a.dtype], rtol=TOL[a.dtype])


def allowed_by(T, keep):
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    return keep(i, j)  # (T, T) bool, True = may attend (PyTorch's convention)


@settings(max_examples=80, deadline=None)
@given(problems(), st.integers(1, 14), st.booleans())
def test_chunked_equals_pytorch_sdpa(problem, chunk_size, causal):
    q, k, v = problem
    out = efficient.chunked_attention(q, k, v, causal=causal, chunk_size=chunk_size)
    close(out, F.scaled_dot_product_attention(q, k, v, is_causal=causal))
    assert out.dtype == q.dtype


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(1, 14))
def test_local_equals_sdpa_and_plain_attention_under_the_window(problem, window):
    q, k, v = problem
    T = q.size(-2)
    out, weights = efficient.local_attention(q, k, v, window)
    keep = allowed_by(T, lambda i, j: (j <= i) & (i - j < window))
    close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=keep))
    plain = attention.scaled_dot_product_attention(q, k, v, ~keep)
    close(out, plain[0])
    close(weights, plain[1])
    assert torch.equal(~keep, masks.sliding_window_mask(T, window))
    assert (weights[..., ~keep] == 0).all()


@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(1, 6))
def test_strided_equals_sdpa_under_the_pattern(problem, stride):
    q, k, v = problem
    T = q.size(-2)
    out, weights = efficient.strided_attention(q, k, v, stride)
    keep = allowed_by(T, lambda i, j: (j <= i) & ((i - j < stride) | ((i - j) % stride == 0)))
    close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=keep))
    close(weights, attention.scaled_dot_product_attention(q, k, v, ~keep)[1])


def test_strided_pattern_by_hand():
    # stride 3, T = 8: row 7 sees 7, 6, 5 (band) and 4, 1 (7 - 3, 7 - 6).
    _, weights = efficient.strided_attention(*(torch.randn(8, 4) for _ in range(3)), 3)
    assert (weights[7] > 0).nonzero().flatten().tolist() == [1, 4, 5, 6, 7]
    with pytest.raises(ValueError):
        efficient.strided_attention(*(torch.randn(3, 2) for _ in range(3)), 0)


def quadratic_kernel_attention(q, k, v, causal, eps=1e-6):
    """Katharopoulos et al., eq. 4-5, written the quadratic way: an independent oracle."""
    A = (F.elu(q) + 1) @ (F.elu(k) + 1).transpose(-2, -1)
    if causal:
        A = A * torch.ones_like(A).tril()
    return (A @ v) / (A.sum(dim=-1, keepdim=True) + eps)


@settings(max_examples=80, deadline=None)
@given(problems(), st.booleans())
def test_linear_equals_its_quadratic_form(problem, causal):
    q, k, v = problem
    close(
        efficient.linear_attention(q, k, v, causal=causal),
        quadratic_kernel_attention(q, k, v, causal),
    )


def test_causal_linear_prefix_is_the_non_causal_answer_on_the_prefix():
    q, k, v = (torch.randn(2, 9, 4, dtype=torch.float64) for _ in range(3))
    causal = efficient.linear_attention(q, k, v, causal=True)
    for t in (1, 5, 9):
        close(causal[:, t - 1], efficient.linear_attention(q[:, :t], k[:, :t], v[:, :t])[:, -1])


def test_chunked_survives_huge_scores_where_plain_exp_overflows():
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 33, 8, generator=gen) * s for s in (40.0, 40.0, 1.0))
    out = efficient.chunked_attention(q, k, v, causal=True, chunk_size=5)
    assert torch.isfinite(out).all()
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    torch.testing.assert_close(out.double(), ref, atol=1e-3, rtol=1e-3)  # float32 scores ~1e3


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("T", "chunk"), [(64, 8), (96, 4), (50, 7)])
def test_chunked_memory_is_bounded_by_t_times_chunk(causal, T, chunk):
    q, k, v = (torch.randn(1, 2, T, 4) for _ in range(3))
    with Recorder() as rec:
        efficient.chunked_attention(q, k, v, causal=causal, chunk_size=chunk)
    assert rec.biggest <= 2 * T * max(chunk, 4), (rec.biggest_op, rec.biggest_shape)
    with Recorder() as full:
        attention.scaled_dot_product_attention(q, k, v)
    assert full.biggest >= 2 * T * T  # the recorder does see a quadratic tensor


def test_recorder_counts_storage_not_broadcast_views():
    x = torch.randn(4, 1)
    with Recorder() as rec:
        x.expand(4, 1000)
    assert rec.biggest == 4
    with Recorder() as rec:
        x.expand(4, 1000).contiguous()
    assert rec.biggest == 4000 and rec.biggest_shape == (4, 1000)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_largest_tensor_grows_linearly(causal):
    sizes = []
    for T in (256, 512):
        q, k, v = (torch.randn(1, 1, T, 4) for _ in range(3))
        with Recorder() as rec:
            efficient.linear_attention(q, k, v, causal=causal)
        sizes.append(rec.biggest)
        assert rec.biggest < T * T
    assert sizes[1] <= 2 * sizes[0]


def test_enough_efficient_variants():
    mutants = [m for m in variants("mutants") if m.values[0] == "efficient"]
    alternatives = [a for a in variants("alternatives") if a.values[0] == "efficient"]
    assert len(mutants) >= 8 and len(alternatives) >= 3


def test_every_efficient_mutant_names_an_efficient_misconception():
    from conftest import expected_misconception

    from autograder.checks.efficient import judge as checks_efficient

    ids = {v.id for v in vars(checks_efficient).values() if isinstance(v, Misconception)}
    for param in variants("mutants"):
        if param.values[0] == "efficient":
            assert expected_misconception(param.values[1]) in ids, param.values[1].name


def test_scale_is_one_over_sqrt_d():
    # One key chunk per key: every step of the online softmax is exercised (chunk_size=1).
    q, k, v = (torch.randn(5, 16, dtype=torch.float64) for _ in range(3))
    s = q @ k.T / math.sqrt(16)
    close(efficient.chunked_attention(q, k, v, chunk_size=1), s.softmax(-1) @ v)
