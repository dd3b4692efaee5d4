"""Alternative: F.scaled_dot_product_attention with enable_gqa and a boolean "allowed" mask
(True = may attend, PyTorch's own convention), rotary by complex multiplication
(view_as_complex) from a frequency table kept as a persistent buffer (inv_freq: in the
state_dict, not a weight), shape checks by tuples, greedy_decode writing into a preallocated
token buffer."""

import torch
import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention  # noqa: F401
from .gqa import repeat_kv  # noqa: F401
from .rotary import apply_rotary  # noqa: F401


class KVCache:
    def __init__(self, num_layers):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers

    def reset(self):
        self.keys = [None] * len(self.keys)
        self.values = [None] * len(self.values)

    def length(self, layer=0):
        k = self.keys[layer]
        return 0 if k is None else k.size(-2)

    def append(self, layer, k, v):
        if k.ndim != 4 or v.ndim != 4 or tuple(k.shape[:3]) != tuple(v.shape[:3]):
            raise ValueError(f"bad shapes: k {tuple(k.shape)}, v {tuple(v.shape)}")
        ok, ov = self.keys[layer], self.values[layer]
        if ok is not None:
            want_k = (ok.shape[0], ok.shape[1], ok.shape[3])
            want_v = (ov.shape[0], ov.shape[1], ov.shape[3])
            if (k.shape[0], k.shape[1], k.shape[3]) != want_k or (
                v.shape[0],
                v.shape[1],
                v.shape[3],
            ) != want_v:
                raise ValueError(
                    f"layer {layer} holds k {tuple(ok.shape)}, v {tuple(ov.shape)}; "
                    f"got k {tuple(k.shape)}, v {tuple(v.shape)}"
                )
            k = torch.cat([ok, k], dim=-2)
            v = torch.cat([ov, v], dim=-2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


def _rot(x, pos, inv):
    d = x.size(-1)
    ang = pos.float()[:, None] * inv
    z = torch.view_as_complex(
        torch.stack((x[..., : d // 2], x[..., d // 2 :]), -1).float().contiguous()
    )
    z = z * torch.polar(torch.ones_like(ang), ang)
    r = torch.view_as_real(z)
    return torch.cat((r[..., 0], r[..., 1]), -1).type_as(x)


class CachedAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, base=10000.0):
        super().__init__()
        n_rep, rest = divmod(num_heads, max(num_kv_heads, 1))
        if num_kv_heads < 1 or rest or d_model % num_heads:
            raise ValueError(
                f"need num_kv_heads | num_heads | d_model, got d_model = {d_model}, "
                f"num_heads = {num_heads}, num_kv_heads = {num_kv_heads}"
            )
        d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, num_kv_heads * d_k, bias=False)
        self.w_v = nn.Linear(d_model, num_kv_heads * d_k, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)
        self.num_heads, self.num_kv_heads, self.n_rep = num_heads, num_kv_heads, n_rep
        self.d_k, self.base = d_k, base
        inv = 1.0 / base ** (torch.arange(0, d_k, 2, dtype=torch.float32) / d_k)
        self.register_buffer("inv_freq", inv)

    def forward(self, x, cache=None, layer=0):
        B, T, D = x.shape
        p0 = cache.length(layer) if cache is not None else 0
        pos = p0 + torch.arange(T, device=x.device)
        q = self.w_q(x).unflatten(-1, (self.num_heads, self.d_k)).transpose(1, 2)
        k = self.w_k(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        v = self.w_v(x).unflatten(-1, (self.num_kv_heads, self.d_k)).transpose(1, 2)
        q, k = _rot(q, pos, self.inv_freq), _rot(k, pos, self.inv_freq)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        S = k.size(2)
        allowed = torch.arange(S, device=x.device)[None, :] <= pos[:, None]
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)
        return self.w_o(o.transpose(1, 2).reshape(B, T, D))


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, d_model=32, num_heads=4, num_kv_heads=2, num_layers=2,
                 base=10000.0):  # fmt: skip
        super().__init__()
        self.token_embed = nn.Embedding(vocab_size, d_model)
        self.norms = nn.ModuleList(nn.RMSNorm(d_model, eps=1e-6) for _ in range(num_layers))
        self.layers = nn.ModuleList(
            CachedAttention(d_model, num_heads, num_kv_heads, base) for _ in range(num_layers)
        )
        self.norm = nn.RMSNorm(d_model, eps=1e-6)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, tokens, cache=None):
        x = self.token_embed(tokens)
        for i, (norm, layer) in enumerate(zip(self.norms, self.layers, strict=True)):
            x = x + layer(norm(x), cache, i)
        return self.lm_head(self.norm(x))


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    B, T0 = prompt.shape
    out = prompt.new_empty((B, T0 + max_new_tokens))
    out[:, :T0] = prompt
    all_logits = []
    cache = KVCache(len(model.layers)) if use_cache else None
    for i in range(max_new_tokens):
        n = T0 + i
        if cache is None:
            lg = model(out[:, :n])
        elif i == 0:
            lg = model(out[:, :n], cache)
        else:
            lg = model(out[:, n - 1 : n], cache)
        last = lg[:, -1]
        all_logits.append(last)
        out[:, n] = last.argmax(-1)
    return out, torch.stack(all_logits, 1)
