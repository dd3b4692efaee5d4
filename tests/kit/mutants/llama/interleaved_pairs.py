"""Mutant: rotary embeddings in Meta's interleaved convention, written inline: features
(2i, 2i + 1) turn together, where this kit (apply_rotary, which RotaryAttention's docstring
calls) pairs i with i + d/2. A convention difference: named once, where the attention is
checked; the block and the model, built on it here, pass (and the model learns as well:
its training is credited)."""

# expects: rope-interleaved-pairs
# loses: rotary
import torch
from torch import nn

from solutions.llama import *  # noqa: F403
from solutions.llama import LlamaBlock as _ReferenceBlock
from solutions.llama import MiniLlama as _ReferenceModel
from solutions.llama import RotaryAttention as _Reference
from solutions.llama import repeat_kv, scaled_dot_product_attention


def _interleaved(t, positions, base):
    d = t.size(-1)
    freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32, device=t.device) / d)
    angles = positions.to(t.device, torch.float32)[:, None] * freq  # (T, d/2)
    cos, sin = angles.cos(), angles.sin()
    even, odd = t[..., 0::2].float(), t[..., 1::2].float()
    turned = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return turned.flatten(-2).to(t.dtype)  # (..., T, d): pairs (2i, 2i + 1)


class RotaryAttention(_Reference):
    def forward(self, x, positions, mask=None):
        B, T, _ = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = _interleaved(q, positions, self.base), _interleaved(k, positions, self.base)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        heads, weights = scaled_dot_product_attention(q, k, v, mask)
        out = heads.transpose(1, 2).reshape(B, T, self.num_heads * self.d_k)
        return self.w_o(out), weights


class LlamaBlock(_ReferenceBlock):  # the same parameters, built on the attention above
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, base=10000.0, eps=1e-6):
        super().__init__(d_model, num_heads, num_kv_heads, d_ff, base, eps)
        self.attn = RotaryAttention(d_model, num_heads, num_kv_heads, base)


class MiniLlama(_ReferenceModel):  # the same parameters, built on the blocks above
    def __init__(
        self,
        vocab_size,
        d_model=128,
        num_heads=4,
        num_kv_heads=2,
        num_layers=4,
        d_ff=344,
        max_len=128,
        base=10000.0,
        eps=1e-6,
    ):
        super().__init__(
            vocab_size, d_model, num_heads, num_kv_heads, num_layers, d_ff, max_len, base, eps
        )
        self.blocks = nn.ModuleList(
            LlamaBlock(d_model, num_heads, num_kv_heads, d_ff, base, eps) for _ in range(num_layers)
        )
