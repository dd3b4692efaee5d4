"""masks (and multihead's check inputs): oracles from PyTorch, the device probe, seeded inputs."""

import math
import types

import pytest
import torch
import torch.nn.functional as F

from autograder.checks.masks import probe as masks_probe
from autograder.core.registry import checks_of
from autograder.run.probing import make_inputs
from solutions import masks


@pytest.mark.parametrize("L", [1, 2, 5, 9])
def test_causal_mask_equals_pytorchs_is_causal(L):
    q, k, v = torch.randn(3, 2, L, 8).unbind(0)
    ours = F.scaled_dot_product_attention(q, k, v, attn_mask=~masks.causal_mask(L))  # True = keep
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize(("L", "window"), [(6, 1), (6, 3), (7, 7), (5, 9)])
def test_sliding_window_is_causal_and_sees_window_keys(L, window):
    mask = masks.sliding_window_mask(L, window)
    assert torch.equal(mask | masks.causal_mask(L), mask)  # causal
    visible = (~mask).sum(dim=-1)
    assert visible.tolist() == [min(i + 1, window) for i in range(L)]


def test_device_probe_sees_the_device_a_mask_was_made_on():
    x = {"L": 4, "window": 2}
    assert masks_probe.probe_causal_device(masks, x)["device"] == "meta"
    assert masks_probe.probe_window_device(masks, x)["device"] == "meta"
    ignoring = types.SimpleNamespace(causal_mask=lambda L, device=None: masks.causal_mask(L))
    assert masks_probe.probe_causal_device(ignoring, x)["device"] == "cpu"


@pytest.mark.parametrize("module", ["masks", "multihead"])
def test_every_check_input_depends_on_the_seed(module):
    def flat(value):
        if isinstance(value, torch.Tensor):
            return (tuple(value.shape), value.double().flatten().tolist())
        if isinstance(value, dict):
            return tuple((k, flat(v)) for k, v in sorted(value.items()))
        if isinstance(value, (list, tuple)):
            return tuple(flat(v) for v in value)
        return value

    for check in checks_of(module):
        assert flat(make_inputs(check, 1)) != flat(make_inputs(check, 2)), check.id


def test_multihead_shapes_tell_the_divisors_apart():
    """√D, d_k (= d_v), S and L all differ, so a wrong divisor is named as itself."""
    for seed in range(60):
        for check in checks_of("multihead"):
            x = make_inputs(check, seed)
            if "state" not in x or "query" not in x or "H" not in x:
                continue
            B, L, D = x["query"].shape
            d_k, S = D // x["H"], x.get("key", x["query"]).size(1)
            assert d_k != x["H"] and round(math.sqrt(D)) ** 2 != D, (check.id, D, x["H"])
            assert d_k not in (S, L), (check.id, d_k, S, L)
            if "key" in x:
                assert S != L, check.id
