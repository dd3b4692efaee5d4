"""modern_blocks.py: the solution against PyTorch built-ins (nn.RMSNorm, F.silu), the trusted
stand-in against the solution, and the kit's mutants and alternatives for it."""

import pytest
import torch
import torch.nn.functional as F
from conftest import variants
from torch import nn

from autograder.trusted import modern_blocks as trusted
from solutions import modern_blocks


@pytest.mark.parametrize("shape", [(5,), (2, 7), (2, 3, 16)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rms_norm_matches_nn_rms_norm(shape, dtype):
    gen = torch.Generator().manual_seed(len(shape))
    x = torch.randn(*shape, generator=gen, dtype=dtype) * 3 + 1
    w = torch.randn(shape[-1], generator=gen, dtype=dtype)
    for eps in (1e-6, 0.1):
        oracle = nn.RMSNorm(shape[-1], eps=eps, dtype=dtype)
        with torch.no_grad():
            oracle.weight.copy_(w)
            want = oracle(x)
            plain = nn.RMSNorm(shape[-1], eps=eps, elementwise_affine=False, dtype=dtype)(x)
        torch.testing.assert_close(modern_blocks.rms_norm(x, w, eps), want)
        torch.testing.assert_close(modern_blocks.rms_norm(x, None, eps), plain)
        torch.testing.assert_close(trusted.rms_norm(x, w, eps), want)
        module = modern_blocks.RMSNorm(shape[-1], eps=eps).to(dtype)
        module.load_state_dict({"weight": w})
        with torch.no_grad():
            torch.testing.assert_close(module(x), want)


def test_rms_norm_default_eps_is_1e_6():
    # Mean squares about 1e-6: the default eps changes the result, so this pins it.
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0)) * 1e-3
    want = nn.RMSNorm(8, eps=1e-6, elementwise_affine=False)(x)
    torch.testing.assert_close(modern_blocks.rms_norm(x), want)
    with torch.no_grad():
        torch.testing.assert_close(modern_blocks.RMSNorm(8)(x), want)
    assert modern_blocks.RMSNorm(8).eps == trusted.RMSNorm(8).eps == 1e-6


@pytest.mark.parametrize("shape", [(7, 12), (2, 5, 12), (2, 3, 4, 12)])
def test_swiglu_matches_silu_built_from_linear(shape):
    torch.manual_seed(0)
    module = modern_blocks.SwiGLU(12, 32)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1)) * 2
    g, u = module.w_gate.weight, module.w_up.weight
    with torch.no_grad():
        want = F.linear(F.silu(F.linear(x, g)) * F.linear(x, u), module.w_down.weight)
        torch.testing.assert_close(module(x), want)
        twin = trusted.SwiGLU(12, 32)
        twin.load_state_dict(module.state_dict())
        torch.testing.assert_close(twin(x), want)
        # F.silu itself against its definition, h * sigmoid(h)
        h = F.linear(x, g)
        torch.testing.assert_close(F.silu(h), h * torch.sigmoid(h))


def test_state_dict_keys_match_the_stub():
    assert list(modern_blocks.RMSNorm(8).state_dict()) == ["weight"]
    assert list(trusted.RMSNorm(8).state_dict()) == ["weight"]
    torch.testing.assert_close(modern_blocks.RMSNorm(8).weight.detach(), torch.ones(8))
    keys = ["w_gate.weight", "w_up.weight", "w_down.weight"]
    assert list(modern_blocks.SwiGLU(8, 20).state_dict()) == keys
    assert list(trusted.SwiGLU(8, 20).state_dict()) == keys
    sd = modern_blocks.SwiGLU(8, 20).state_dict()
    assert sd["w_gate.weight"].shape == sd["w_up.weight"].shape == (20, 8)
    assert sd["w_down.weight"].shape == (8, 20)
    swiglu = modern_blocks.SwiGLU(8, 20)
    assert all(lin.bias is None for lin in (swiglu.w_gate, swiglu.w_up, swiglu.w_down))


def test_enough_modern_blocks_variants():
    mutants, alternatives = variants("mutants"), variants("alternatives")
    assert len([m for m in mutants if m.values[0] == "modern_blocks"]) >= 8
    assert len([a for a in alternatives if a.values[0] == "modern_blocks"]) >= 3


def test_rmsnorm_check_excuses_only_a_named_rms_norm_mistake():
    """The RMSNorm check leaves a mistake of the student's own rms_norm to the rms_norm
    checks, but what the student's process says its rms_norm returned excuses no other
    output: a forged 'own' result equal to a wrong module output still fails."""
    from autograder.checks.modern_blocks import judge, probe
    from autograder.core.check import Failure

    x = probe.inputs_rms_module(torch.Generator().manual_seed(3))
    want = probe.probe_rms_module(modern_blocks, x)
    # the rms_norm mistakes replayed with the reference (core.Check.replays)
    want |= {f"replay/{k}": v for k, v in judge._rms_norm_replays(x).items()}
    centred = {}
    for name, case in x.items():
        c = case["x"] - case["x"].mean(-1, keepdim=True)
        centred[name] = modern_blocks.rms_norm(c, case["weight"], case.get("eps", 1e-6))
    # The student's rms_norm subtracts the mean and RMSNorm calls it: charged elsewhere.
    excused = {**want}
    for name in x:
        excused[name] = excused[f"{name}/own"] = centred[name]
    judge.verdict_rms_module(excused, want, x)
    # The same output, but rms_norm said to return it only here: a forgery, not excused...
    forged = {**want}
    for name in x:
        forged[name] = forged[f"{name}/own"] = want[name] * 2
    with pytest.raises(Failure):
        judge.verdict_rms_module(forged, want, x)
    # ... and the centring without a matching rms_norm is named where it happens.
    alone = {**want, **centred}
    with pytest.raises(Failure) as caught:
        judge.verdict_rms_module(alone, want, x)
    assert caught.value.misconception is judge.MISTAKES["rms-norm-subtracts-mean"]
