"""blocks.py: the solution against PyTorch built-ins (F.layer_norm, nn.TransformerEncoderLayer),
the trusted stand-in against the solution, and the kit's mutants and alternatives for it."""

import pytest
import torch
import torch.nn.functional as F
from conftest import variants
from torch import nn

from autograder.trusted import blocks as trusted
from solutions import blocks


@pytest.mark.parametrize("shape", [(5,), (2, 7), (2, 3, 16)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_matches_pytorch(shape, dtype):
    gen = torch.Generator().manual_seed(len(shape))
    x = torch.randn(*shape, generator=gen, dtype=dtype) * 3 + 1
    w, b = (torch.randn(shape[-1], generator=gen, dtype=dtype) for _ in range(2))
    for eps in (1e-5, 0.1):
        for weight, bias in ((None, None), (w, b), (w, None)):
            want = F.layer_norm(x, shape[-1:], weight, bias, eps)
            torch.testing.assert_close(blocks.layer_norm(x, weight, bias, eps), want)
            torch.testing.assert_close(trusted.layer_norm(x, weight, bias, eps), want)


def _encoder_layer(block, norm_first, activation):
    """nn.TransformerEncoderLayer holding `block`'s weights. bias=True (bias=False there would
    also drop the LayerNorm and FFN biases), with the attention's biases set to zero, as our
    attention has none."""
    D, H = block.attn.d_model, block.attn.num_heads
    d_ff = block.ffn.linear1.out_features
    layer = nn.TransformerEncoderLayer(
        D, H, d_ff, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    a = block.attn
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.cat([a.w_q.weight, a.w_k.weight, a.w_v.weight]))
        layer.self_attn.in_proj_bias.zero_()
        layer.self_attn.out_proj.weight.copy_(a.w_o.weight)
        layer.self_attn.out_proj.bias.zero_()
        for mine, theirs in (
            (block.ffn.linear1, layer.linear1),
            (block.ffn.linear2, layer.linear2),
            (block.norm1, layer.norm1),
            (block.norm2, layer.norm2),
        ):
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    return layer


def _randomised(module, seed):
    """Every parameter random (LayerNorm gains and shifts too, so they matter)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    return module


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masked", [False, True])
def test_block_matches_transformer_encoder_layer(norm_first, activation, masked):
    torch.manual_seed(0)
    block = blocks.TransformerBlock(16, 4, 40, norm_first=norm_first, activation=activation)
    _randomised(block, seed=1).eval()
    layer = _encoder_layer(block, norm_first, activation).eval()
    x = torch.randn(3, 7, 16, generator=torch.Generator().manual_seed(2))
    mask = torch.ones(7, 7, dtype=torch.bool).triu(1) if masked else None
    out, weights = block(x, mask=mask)
    with torch.no_grad():
        want = layer(x, src_mask=mask)
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-5)
    assert weights.shape == (3, 4, 7, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4, 7))
    # The trusted block loads the same state_dict and computes the same thing.
    twin = trusted.TransformerBlock(16, 4, 40, norm_first=norm_first, activation=activation)
    twin.load_state_dict(block.state_dict())
    twin_out, twin_weights = twin.eval()(x, mask=mask)
    torch.testing.assert_close(twin_out, out)
    torch.testing.assert_close(twin_weights, weights)


def test_state_dict_keys_match_design():
    block = blocks.TransformerBlock(8, 2, 16)
    keys = list(block.state_dict())
    assert keys == list(trusted.TransformerBlock(8, 2, 16).state_dict())
    assert keys == [
        "attn.w_q.weight",
        "attn.w_k.weight",
        "attn.w_v.weight",
        "attn.w_o.weight",
        "ffn.linear1.weight",
        "ffn.linear1.bias",
        "ffn.linear2.weight",
        "ffn.linear2.bias",
        "norm1.weight",
        "norm1.bias",
        "norm2.weight",
        "norm2.bias",
    ]
    assert block.attn.dropout.p == block.ffn.dropout.p == block.dropout.p == 0.0
    assert blocks.TransformerBlock(8, 2, 16, dropout=0.2).ffn.dropout.p == 0.2


def test_enough_block_variants():
    mutants, alternatives = variants("mutants"), variants("alternatives")
    assert len([m for m in mutants if m.values[0] == "blocks"]) >= 10
    assert len([a for a in alternatives if a.values[0] == "blocks"]) >= 2
