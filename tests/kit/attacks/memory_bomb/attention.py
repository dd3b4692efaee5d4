"""Attack: allocate far more memory than the machine has (at once, and bit by bit)."""

# reported: crash
import numpy as np
import torch


def scaled_dot_product_attention(q, k, v, mask=None):
    return torch.empty(1 << 40), np.zeros(1 << 40)


def attention_with_bias(q, k, v, bias, mask=None):
    hog = []
    while True:
        hog.append(bytearray(1 << 27))
