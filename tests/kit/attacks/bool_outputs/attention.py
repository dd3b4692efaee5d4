"""Attack: return bool tensors, which compute nothing (issue 12: the comparison cast the
reference to the student's dtype when the student's was not floating: efficient 6/18,
multihead 17/21)."""

# reported: wrong-dtype-kind
import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    out = torch.ones(*q.shape[:-1], v.shape[-1], dtype=torch.bool)
    return out, torch.ones(*q.shape[:-1], k.shape[-2], dtype=torch.bool)


def attention_with_bias(q, k, v, bias, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
