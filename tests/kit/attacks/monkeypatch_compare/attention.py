"""Attack: at import, make every comparison in torch and numpy say "equal", then return
zeros."""

# reported: wrong-values
import numpy
import torch

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *x, **k: torch.ones_like(a, dtype=torch.bool)
torch.Tensor.equal = lambda *a, **k: True
torch.Tensor.allclose = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
numpy.allclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None


def scaled_dot_product_attention(q, k, v, mask=None):
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def attention_with_bias(q, k, v, bias, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
