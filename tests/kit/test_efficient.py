"""efficient.py: the solutions against independent oracles, and the kit's variants for it."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import variants
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks.efficient.probe import Recorder
from autograder.core.check import Misconception
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

    from autograder.checks.efficient import judge, judge_models

    ids = set(judge.MISTAKES)  # checks/efficient/misconceptions.toml, and the kit's own it uses
    ids |= {
        v.id
        for m in (judge, judge_models)
        for v in vars(m).values()
        if isinstance(v, Misconception)
    }
    # and the kit-wide names of a stand-in refusing its arguments (local_window_minus_one), of
    # a cut graph (verdicts.assert_gradients: linear_under_no_grad) and of an argument changed
    # in place (chunked_scales_q_in_place)
    from autograder.core.check import CALL_REFUSED, CHANGED_INPUT, NO_GRADIENT

    ids |= {CALL_REFUSED.id, NO_GRADIENT.id, CHANGED_INPUT.id}
    for param in variants("mutants"):
        if param.values[0] == "efficient":
            assert expected_misconception(param.values[1]) in ids, param.values[1].name


def test_scale_is_one_over_sqrt_d():
    # One key chunk per key: every step of the online softmax is exercised (chunk_size=1).
    q, k, v = (torch.randn(5, 16, dtype=torch.float64) for _ in range(3))
    s = q @ k.T / math.sqrt(16)
    close(efficient.chunked_attention(q, k, v, chunk_size=1), s.softmax(-1) @ v)


def test_allocation_peak_sees_what_switched_off_dispatch_modes_hide():
    from torch.utils._python_dispatch import _disable_current_modes

    from autograder.checks.efficient.probe import run_recorded

    q = torch.randn(2, 96, 4)

    def hidden(q):
        with _disable_current_modes():
            out = attention.scaled_dot_product_attention(q, q, q)[0]
        return out.clone()

    out, rec, alloc = run_recorded(hidden, q)
    assert rec.biggest == out.numel() and rec.made(out)  # the recorder saw only the copy
    assert alloc.ok and not alloc.tampered
    assert alloc.peak >= 2 * 96 * 96 * 4  # the (T, T) float32 scores, seen by the allocator
    assert alloc.matmuls > 2 * rec.count("bmm", "mm")
    out, rec, alloc = run_recorded(lambda q: q + 1, q)
    assert rec.made(out) and alloc.matmuls == 0


def test_recorded_returns_a_tensor_made_outside_as_not_recorded():
    from autograder.checks.efficient.probe import run_recorded

    made_before = torch.randn(3, 4)
    out, rec, _ = run_recorded(lambda: made_before)
    assert not rec.made(out)


def test_recording_imports_nothing_at_first_use():
    # Without OpCounter._should_skip_dynamo, the first recorded op imported torch._dynamo
    # (and sympy) inside the check, under its time limit.
    import subprocess
    import sys

    code = (
        "import sys, torch\n"
        "from autograder.checks.efficient.probe import run_recorded\n"
        "before = set(sys.modules)\n"
        "run_recorded(lambda q: (q @ q.mT).softmax(-1), torch.randn(2, 8, 4))\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert proc.stdout.strip() == "[]", proc.stdout[:500]


def test_feature_map_inputs_read_phi_off_the_solutions_outputs():
    from autograder.checks.efficient.probe import inputs_feature_map

    x = inputs_feature_map(torch.Generator().manual_seed(0))
    out = efficient.linear_attention(x["q"], x["k"], x["v"]).double()
    b = x["k"][:, 1:, 0].double().expand_as(out[..., 0])
    torch.testing.assert_close(out[..., 1] / out[..., 0], F.elu(b) + 1, rtol=1e-4, atol=1e-5)


def test_close_fails_a_non_floating_result_where_a_float_is_expected():
    from autograder.core.check import Failure
    from autograder.core.verdicts import assert_close, close

    want = torch.tensor([0.5, 1.0])
    for got in (torch.tensor([True, True]), torch.tensor([0, 1])):
        assert not close(got, want)
        with pytest.raises(Failure) as caught:
            assert_close(got, want, "the output")
        assert caught.value.misconception.id == "wrong-dtype-kind"


def test_a_profiler_already_running_is_reported_as_busy():
    # Student code that starts torch's profiler (at import, say) keeps the grader's from
    # starting: the probe says so, and the verdict fails the run as not recorded.
    from autograder.checks.efficient.probe import run_recorded

    outside = torch.autograd.profiler.profile()
    outside.__enter__()
    try:
        _, _, alloc = run_recorded(lambda: torch.ones(3) + 1)
    finally:
        outside.__exit__(None, None, None)
    assert alloc.busy and not alloc.ok
    _, _, alloc = run_recorded(lambda: torch.ones(3) + 1)
    assert alloc.ok and not alloc.busy
