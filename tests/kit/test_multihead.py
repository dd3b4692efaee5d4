"""multihead: the solution against nn.MultiheadAttention, trusted == solution, isolation, the
op counter, and enough mutants and alternatives."""

import pytest
import torch
from conftest import KIT, grade_folder, submission_with, variants
from torch import nn

from autograder.core.dispatch import MATMUL_OPS, OpCounter
from autograder.trusted import multihead as trusted
from solutions import multihead

ATOL = {"atol": 1e-5, "rtol": 1.3e-6}


def _pair(d_model, num_heads, bias=False, seed=0):
    torch.manual_seed(seed)
    ours = multihead.MultiHeadAttention(d_model, num_heads, bias=bias).eval()
    theirs = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
            theirs.out_proj.bias.copy_(ours.w_o.bias)
    return ours, theirs


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("L", "S", "H"), [(5, 5, 4), (3, 7, 2), (6, 4, 1)])
def test_solution_equals_nn_multihead_attention(L, S, H, bias):
    ours, theirs = _pair(16, H, bias=bias, seed=L * S + H)
    gen = torch.Generator().manual_seed(L + S)
    q, kv = torch.randn(2, L, 16, generator=gen), torch.randn(2, S, 16, generator=gen)
    mask = torch.rand(L, S, generator=gen) < 0.3
    mask[:, 0] = False  # no fully blocked row: nn.MultiheadAttention gives NaN there
    lengths = torch.tensor([S, max(S - 2, 1)])
    padding = torch.arange(S)[None] >= lengths[:, None]  # (B, S), True = ignore, as ours
    for kwargs, ours_mask in (
        ({}, None),
        ({"attn_mask": mask}, mask),
        ({"key_padding_mask": padding}, padding[:, None, None, :]),
    ):
        with torch.no_grad():
            out, weights = ours(q, kv, kv, mask=ours_mask)
            want, want_w = theirs(q, kv, kv, average_attn_weights=False, **kwargs)
        torch.testing.assert_close(out, want, **ATOL)
        torch.testing.assert_close(weights, want_w, **ATOL)


@pytest.mark.parametrize("bias", [False, True])
def test_trusted_equals_solution(bias):
    torch.manual_seed(3)
    ours = multihead.MultiHeadAttention(12, 3, bias=bias).eval()
    stand_in = trusted.MultiHeadAttention(12, 3, bias=bias).eval()
    stand_in.load_state_dict(ours.state_dict())
    q, kv = torch.randn(2, 4, 12), torch.randn(2, 6, 12)
    mask = torch.rand(4, 6) < 0.4
    mask[1] = True  # a fully blocked row: zeros in both
    head_mask = torch.rand(2, 3, 4, 6) < 0.5  # rows blocked in some heads only
    padding = torch.arange(6)[None] >= torch.tensor([6, 0])[:, None]
    for args, m in (
        ((q,), None),
        ((q, kv), mask),
        ((q, kv, kv), head_mask),
        ((kv,), padding[:, None, None, :]),
    ):
        for a, b in zip(ours(*args, mask=m), stand_in(*args, mask=m), strict=True):
            torch.testing.assert_close(a, b, **ATOL)
    x = torch.randn(2, 5, 12)
    torch.testing.assert_close(multihead.split_heads(x, 4), trusted.split_heads(x, 4))
    y = torch.randn(2, 3, 5, 4)
    torch.testing.assert_close(multihead.merge_heads(y), trusted.merge_heads(y))
    for module in (multihead, trusted):
        with pytest.raises(ValueError, match="not divisible"):
            module.split_heads(torch.randn(1, 2, 10), 3)
        with pytest.raises(ValueError, match="not divisible"):
            module.MultiHeadAttention(10, 3)


def test_dropout_in_training_matches_nn_multihead_attention_given_the_same_seed():
    ours, theirs = _pair(16, 4, seed=5)
    ours.dropout.p = theirs.dropout = 0.3
    ours.train(), theirs.train()
    x = torch.randn(2, 6, 16)
    torch.manual_seed(11)
    out, weights = ours(x)
    torch.manual_seed(11)
    want, want_w = theirs(x, x, x, average_attn_weights=False)
    torch.testing.assert_close(weights, want_w, **ATOL)
    torch.testing.assert_close(out, want, **ATOL)
    assert (weights == 0).any()


def test_isolation_a_broken_attention_costs_nothing_in_multihead(tmp_path):
    broken = (KIT / "mutants" / "attention" / "no_scaling.py").read_text()
    folder = submission_with(tmp_path, {"attention": broken})
    results = grade_folder(folder, ["attention", "multihead"])
    attention = [r for r in results if r.module == "attention"]
    assert any(r.misconception == "no-scaling" for r in attention)
    lost = [
        (r.check_id, r.misconception) for r in results if r.module == "multihead" and not r.passed
    ]
    assert not lost, lost


def test_op_counter_counts_calls_and_output_sizes():
    a, b = torch.randn(3, 4), torch.randn(4, 5)
    with OpCounter() as ops:
        c = a @ b
        torch.bmm(c[None], torch.randn(1, 5, 2))
        c.softmax(-1)
    assert ops.calls["mm"] == 1 and ops.numels["mm"] == [15]
    assert ops.calls["bmm"] == 1 and ops.numels["bmm"] == [6]
    assert ops.count(*MATMUL_OPS) == 2
    assert ops.count() >= 3 and ops.largest() == 15


def test_solution_op_count_does_not_depend_on_the_number_of_heads():
    x = torch.randn(2, 6, 32)
    counts = set()
    for H in (2, 4, 8, 16):  # (H = 1 skips a copy: a transpose of a size-1 axis is free)
        model = multihead.MultiHeadAttention(32, H).eval()
        with torch.no_grad(), OpCounter() as ops:
            model(x)
        counts.add((ops.count(*MATMUL_OPS), ops.count()))
    assert len(counts) == 1, counts


def test_enough_multihead_variants():
    mutants = [m for m in variants("mutants") if m.values[0] == "multihead"]
    alternatives = [a for a in variants("alternatives") if a.values[0] == "multihead"]
    assert len(mutants) >= 12 and len(alternatives) >= 4


def test_wo_checks_replay_the_solutions_task_and_model():
    from autograder.checks.diagnostics import judge_wo as wo
    from solutions import diagnostics

    gen_a, gen_b = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    for a, b in zip(
        diagnostics.recall_batch(8, generator=gen_a),
        wo.recall_batch(8, generator=gen_b),
        strict=True,
    ):
        assert torch.equal(a, b)
    torch.manual_seed(7)
    want = diagnostics.train_recall(diagnostics.RecallModel(), 25, seed=7)
    torch.testing.assert_close(wo.train(wo.fresh(7), 25, seed=7), want, atol=1e-5, rtol=1e-5)


def test_head_entropy_closed_forms_and_classes():
    from solutions import diagnostics

    w = torch.zeros(1, 3, 4, 5)
    w[:, 0] = 0.2
    w[:, 1, :, 2] = 1.0
    w[:, 2, :2] = 0.2  # rows 2 and 3 fully blocked: left out
    torch.testing.assert_close(
        diagnostics.head_entropy(w), torch.tensor([torch.log(torch.tensor(5.0)), 0.0, 1.6094379])
    )
    causal = torch.ones(6, 6, dtype=torch.bool).triu(1)
    uniform = (~causal).float() / (~causal).sum(-1, keepdim=True)
    w = torch.stack([uniform, torch.eye(6)])[None]
    assert diagnostics.classify_heads(w, mask=causal) == ["uniform", "collapsed"]


def test_enough_head_entropy_and_wo_variants():
    names = [p.values[1].stem for p in variants("mutants") if p.values[0] == "diagnostics"]
    assert len([n for n in names if n.startswith(("entropy_", "wo_"))]) >= 10
    names = [p.values[1].stem for p in variants("alternatives") if p.values[0] == "diagnostics"]
    assert len([n for n in names if n.startswith(("entropy_", "wo_"))]) >= 2
