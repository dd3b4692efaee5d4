"""Alternative: rotary by complex multiplication (torch.polar) from a frequency table kept
as a persistent buffer (inv_freq, as older Hugging Face LLaMA code kept it: in the
state_dict, not a weight), the query heads grouped by 5-D views instead of repeat_kv, the
causal mask built with triu."""

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .gqa import GroupedQueryAttention, repeat_kv  # noqa: F401
from .masks import causal_mask  # noqa: F401
from .modern_blocks import RMSNorm, SwiGLU
from .rotary import apply_rotary  # noqa: F401


def _rope_complex(x, positions, inv):
    half = x.shape[-1] // 2
    ang = torch.outer(positions.to(torch.float64), inv)
    rot = torch.polar(torch.ones_like(ang), ang)  # (T, d/2) complex128
    z = torch.complex(x[..., :half].double(), x[..., half:].double())
    z = z * rot
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)


class RotaryAttention(GroupedQueryAttention):
    def __init__(self, d_model, num_heads, num_kv_heads, base=10000.0):
        super().__init__(d_model, num_heads, num_kv_heads, bias=False)
        self.base = base
        d = self.d_k
        self.register_buffer("inv_freq", base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d))

    def forward(self, x, positions, mask=None):
        B, T, _ = x.shape
        G, R, dk = self.num_kv_heads, self.n_rep, self.d_k
        q = self.w_q(x).view(B, T, G, R, dk).permute(0, 2, 3, 1, 4)  # (B, G, R, T, dk)
        k = self.w_k(x).view(B, T, G, 1, dk).permute(0, 2, 3, 1, 4)  # (B, G, 1, T, dk)
        v = self.w_v(x).view(B, T, G, 1, dk).permute(0, 2, 3, 1, 4)
        q = _rope_complex(q, positions, self.inv_freq)
        k = _rope_complex(k, positions, self.inv_freq)
        if mask is not None:
            m = mask
            while m.dim() < 4:
                m = m.unsqueeze(0)
            m = m.expand(B, self.num_heads, T, T).reshape(B, G, R, T, T)
        else:
            m = None
        out, w = scaled_dot_product_attention(
            q, k.expand(B, G, R, T, dk), v.expand(B, G, R, T, dk), m
        )
        out = out.permute(0, 3, 1, 2, 4).reshape(B, T, G * R * dk)
        return self.w_o(out), w.reshape(B, self.num_heads, T, T)


class LlamaBlock(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, d_ff, base=10000.0, eps=1e-6):
        super().__init__()
        self.attn_norm = RMSNorm(d_model, eps)
        self.attn = RotaryAttention(d_model, num_heads, num_kv_heads, base)
        self.ffn_norm = RMSNorm(d_model, eps)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, positions, mask=None):
        a, _ = self.attn(self.attn_norm(x), positions, mask)
        h = x + a
        return h + self.ffn(self.ffn_norm(h))


class MiniLlama(nn.Module):
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
        super().__init__()
        self.max_len = max_len
        self.token_embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token_embed.weight, std=0.02)
        self.blocks = nn.ModuleList(
            LlamaBlock(d_model, num_heads, num_kv_heads, d_ff, base, eps) for _ in range(num_layers)
        )
        self.final_norm = RMSNorm(d_model, eps)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        h = self.token_embed(idx)
        pos = torch.arange(T, device=idx.device)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).triu(diagonal=1)
        for blk in self.blocks:
            h = blk(h, pos, mask)
        return self.lm_head(self.final_norm(h))
