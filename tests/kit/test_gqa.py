"""gqa: the solution against F.scaled_dot_product_attention(enable_gqa=True) and a
repeat_interleave reference, trusted == solution, the key/value bytes against real tensors,
isolation, and enough mutants and alternatives."""

import pytest
import torch
import torch.nn.functional as F
from conftest import KIT, SOLUTIONS, grade_folder, submission_with, variants

from autograder.trusted import gqa as trusted
from solutions import gqa

ATOL = {"atol": 1e-5, "rtol": 1.3e-6}
SIZES = [(24, 6, 2), (24, 6, 3), (32, 8, 2), (20, 4, 1), (12, 3, 3)]


def _model(D, H, H_kv, bias=False, seed=0):
    torch.manual_seed(seed)
    return gqa.GroupedQueryAttention(D, H, H_kv, bias=bias).eval()


def _projections(model, x):
    B, T, D = x.shape
    H, H_kv = model.num_heads, model.num_kv_heads
    q = model.w_q(x).view(B, T, H, D // H).transpose(1, 2)
    k = model.w_k(x).view(B, T, H_kv, D // H).transpose(1, 2)
    v = model.w_v(x).view(B, T, H_kv, D // H).transpose(1, 2)
    return q, k, v


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("D", "H", "H_kv"), SIZES)
def test_solution_equals_sdpa_with_enable_gqa(D, H, H_kv, bias):
    model = _model(D, H, H_kv, bias=bias, seed=D + H + H_kv)
    gen = torch.Generator().manual_seed(H * 10 + H_kv)
    x = torch.randn(2, 7, D, generator=gen)
    mask = torch.ones(7, 7, dtype=torch.bool).triu(1)
    for ours_mask in (None, mask):
        with torch.no_grad():
            out, weights = model(x, mask=ours_mask)
            q, k, v = _projections(model, x)
            allowed = None if ours_mask is None else ~ours_mask  # PyTorch: True = attend
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
            want = model.w_o(heads.transpose(1, 2).reshape(2, 7, D))
            eye = torch.eye(7).expand(2, H_kv, 7, 7)
            want_w = F.scaled_dot_product_attention(q, k, eye, attn_mask=allowed, enable_gqa=True)
        torch.testing.assert_close(out, want, **ATOL)
        torch.testing.assert_close(weights, want_w, **ATOL)


@pytest.mark.parametrize(("D", "H", "H_kv"), SIZES)
def test_query_head_h_meets_key_head_h_over_n_rep(D, H, H_kv):
    """A per-head loop, each query head with key head h // n_rep, in float64."""
    model = _model(D, H, H_kv, seed=1).double()
    x = torch.randn(1, 5, D, dtype=torch.float64)
    with torch.no_grad():
        _, weights = model(x)
        q, k, _ = _projections(model, x)
    n_rep = H // H_kv
    for h in range(H):
        scores = q[:, h] @ k[:, h // n_rep].transpose(-2, -1) / (D // H) ** 0.5
        torch.testing.assert_close(weights[:, h], scores.softmax(-1))


def test_repeat_kv_is_repeat_interleave_and_not_repeat():
    x = torch.randn(2, 3, 4, 5)
    for n_rep in (1, 2, 4):
        got = gqa.repeat_kv(x, n_rep)
        torch.testing.assert_close(got, x.repeat_interleave(n_rep, dim=1))
        torch.testing.assert_close(trusted.repeat_kv(x, n_rep), got)
        for j in range(3 * n_rep):
            assert torch.equal(got[:, j], x[:, j // n_rep])
    assert not torch.equal(gqa.repeat_kv(x, 2), x.repeat(1, 2, 1, 1))


@pytest.mark.parametrize("bias", [False, True])
def test_trusted_equals_solution(bias):
    for D, H, H_kv in SIZES:
        ours = _model(D, H, H_kv, bias=bias, seed=3)
        stand_in = trusted.GroupedQueryAttention(D, H, H_kv, bias=bias).eval()
        stand_in.load_state_dict(ours.state_dict())
        x = torch.randn(2, 6, D)
        mask = torch.rand(2, 1, 6, 6) < 0.4
        mask[0, 0, 2] = True  # a fully blocked row: zeros in both
        for m in (None, mask):
            with torch.no_grad():
                for a, b in zip(ours(x, mask=m), stand_in(x, mask=m), strict=True):
                    torch.testing.assert_close(a, b, **ATOL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize(("D", "H", "H_kv"), SIZES)
def test_kv_cache_bytes_equals_the_keys_and_values_it_counts(D, H, H_kv, dtype):
    """Measured from actual tensors: the keys and values the layer computes for T tokens."""
    model = _model(D, H, H_kv).to(dtype)
    x = torch.randn(1, 11, D, dtype=dtype)
    with torch.no_grad():
        _, k, v = _projections(model, x)
    measured = k.nbytes + v.nbytes
    got = gqa.kv_cache_bytes(D, H, H_kv, 11, dtype)
    assert type(got) is int and got == measured
    assert trusted.kv_cache_bytes(D, H, H_kv, 11, dtype) == measured


def test_value_errors_say_which():
    for module in (gqa, trusted):
        with pytest.raises(ValueError, match="num_kv_heads = 4 does not divide num_heads = 6"):
            module.GroupedQueryAttention(24, 6, 4)
        with pytest.raises(ValueError, match="num_heads = 4 does not divide d_model = 10"):
            module.GroupedQueryAttention(10, 4, 2)


def test_isolation_a_broken_attention_costs_nothing_in_gqa(tmp_path):
    broken = (KIT / "mutants" / "attention" / "no_scaling.py").read_text()
    folder = submission_with(tmp_path, {"attention": broken})
    results = grade_folder(folder, ["gqa"])
    lost = [(r.check_id, r.misconception) for r in results if not r.passed]
    assert not lost, lost


@pytest.mark.parametrize("axis", [0, 2])
def test_heads_repeated_along_another_axis_are_named_so(tmp_path, axis):
    """repeat_kv repeating along the batch or the positions: the layer's runs crash in
    attention, and the checks name the axis, not the group count (n_rep is right). As a
    mutant it would lose more than the fairness bound: every run of the layer fails."""
    source = (SOLUTIONS / "gqa.py").read_text()
    right = "torch.repeat_interleave(x, n_rep, dim=1)"
    assert right in source
    folder = submission_with(tmp_path, {"gqa": source.replace(right, right[:-2] + f"{axis})")})
    results = grade_folder(folder, ["gqa"])
    named = {r.check_id: r.misconception for r in results if not r.passed}
    assert named.pop("gqa.repeat-kv") == "wrong-shape", named
    assert named and set(named.values()) == {"gqa-repeat-wrong-axis"}, named
    assert "gqa.mha" not in named  # one key head per query head: nothing to repeat


def test_enough_mutants_and_alternatives():
    mutants = [m for m in variants("mutants") if m.values[0] == "gqa"]
    alternatives = [a for a in variants("alternatives") if a.values[0] == "gqa"]
    assert len(mutants) >= 8 and len(alternatives) >= 3


@pytest.mark.parametrize(
    ("mistake", "named"),
    [
        ({"heads_as": "split-view"}, "split-view-no-transpose"),
        ({"heads_as": "merge-view"}, "merge-view-no-transpose"),
        ({"wo": False}, "gqa-no-output-projection"),
    ],
)
def test_a_split_merge_or_missing_wo_is_excused_only_where_the_whole_run_is_it(mistake, named):
    """mqa, mha, mask and bias accept a run right but for a split or merge of the heads
    without a transpose, or without w_o (grouped charges it, named); the model is the
    judge's, computed from the check's weights: the same weights with another output are not
    excused."""
    from autograder.checks.gqa import judge, probe
    from autograder.core.check import Failure

    x = probe.inputs_mask(torch.Generator().manual_seed(5))
    want = probe.probe_gqa(gqa, x)
    out, weights = judge._gqa(x, **mistake)
    params = {k: v for k, v in want.items() if k.startswith("param/")}
    got = {**params, "out": out.float(), "weights": weights.float()}
    judge.verdict_elsewhere(got, want, x)
    with pytest.raises(Failure) as caught:
        judge.verdict_grouped(got, want, x)
    assert caught.value.misconception.id == named
    with pytest.raises(Failure):
        judge.verdict_elsewhere({**got, "out": got["out"] * 1.01}, want, x)
