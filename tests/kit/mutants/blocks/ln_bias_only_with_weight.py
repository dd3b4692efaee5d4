"""Mutant: the bias is added only together with the weight (`y * weight + bias` under
`if weight is not None`): a bias given without a weight is ignored."""

# expects: wrong-values
# loses: layer-norm
import torch

from solutions.blocks import FeedForward, TransformerBlock  # noqa: F401


def layer_norm(x, weight=None, bias=None, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).pow(2).mean(dim=-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    if weight is not None:
        y = y * weight
        if bias is not None:
            y = y + bias
    return y
