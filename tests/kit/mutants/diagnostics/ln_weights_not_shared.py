"""Mutant (issue 16 false pass): the Post-LN stack keeps its own initialisation (no
load_state_dict), so the two stacks differ in more than the placement."""

# expects: ln-placement-weights-differ
# loses: ln-placement
import torch
from torch import nn

from solutions.diagnostics import *  # noqa: F403
from solutions.diagnostics import layer_gradient_norms


def compare_ln_placement(
    num_layers=8, d_model=32, num_heads=4, d_ff=64, batch=4, seq_len=16, seed=0
):
    from .blocks import TransformerBlock

    torch.manual_seed(seed)
    pre = nn.ModuleList(
        TransformerBlock(d_model, num_heads, d_ff, norm_first=True) for _ in range(num_layers)
    )
    post = nn.ModuleList(
        TransformerBlock(d_model, num_heads, d_ff, norm_first=False) for _ in range(num_layers)
    )
    x, target = torch.randn(batch, seq_len, d_model), torch.randn(batch, seq_len, d_model)
    return {
        "pre_ln": layer_gradient_norms(pre, x, target, nn.LayerNorm(d_model)),
        "post_ln": layer_gradient_norms(post, x, target),
    }
