"""Alternative: rotary written inline (rotate_half form, halves convention), a cache stored in
a dict per layer, attention by explicit softmax with a finfo.min fill, and a greedy_decode that
prefills then loops over single-token steps."""

from types import FunctionType

import torch
from torch import nn  # the given decoder's __init__ runs with these globals

import solutions.kvcache as _given

from .gqa import repeat_kv


def _rotate(x, positions, base):
    d = x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d)
    ang = positions.double()[:, None] * inv[None, :]
    ang = torch.cat((ang, ang), dim=-1)
    half = d // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * ang.cos().to(x.dtype) + rotated * ang.sin().to(x.dtype)


class KVCache:
    def __init__(self, num_layers):
        self.n = num_layers
        self.store = {}

    @property
    def keys(self):
        return [self.store.get(i, (None, None))[0] for i in range(self.n)]

    @property
    def values(self):
        return [self.store.get(i, (None, None))[1] for i in range(self.n)]

    def reset(self):
        self.store.clear()

    def length(self, layer=0):
        return self.store[layer][0].shape[2] if layer in self.store else 0

    def append(self, layer, k, v):
        shapes = f"k: {tuple(k.shape)}, v: {tuple(v.shape)}"
        if len(k.shape) != 4 or len(v.shape) != 4 or k.shape[:3] != v.shape[:3]:
            raise ValueError("k and v must be (B, H_kv, T, d) with equal B, H_kv, T; " + shapes)
        if layer in self.store:
            ok, ov = self.store[layer]
            same = ok.shape[:2] == k.shape[:2] and ok.shape[3] == k.shape[3]
            if not (same and ov.shape[:2] == v.shape[:2] and ov.shape[3] == v.shape[3]):
                raise ValueError(f"cached {tuple(ok.shape)} vs new " + shapes)
            k, v = torch.cat((ok, k), 2), torch.cat((ov, v), 2)
        self.store[layer] = (k, v)
        return k, v


class CachedAttention(_given.CachedAttention):  # the given parameters (w_q .. w_o)
    def forward(self, x, cache=None, layer=0):
        B, T, D = x.shape
        p0 = 0 if cache is None else cache.length(layer)
        pos = torch.arange(p0, p0 + T, device=x.device)
        q = _rotate(self.w_q(x).reshape(B, T, -1, self.d_k).permute(0, 2, 1, 3), pos, self.base)
        k = _rotate(self.w_k(x).reshape(B, T, -1, self.d_k).permute(0, 2, 1, 3), pos, self.base)
        v = self.w_v(x).reshape(B, T, -1, self.d_k).permute(0, 2, 1, 3)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        scores = (q @ k.transpose(2, 3)) * self.d_k**-0.5
        keep = torch.arange(k.shape[2], device=x.device)[None, :] <= pos[:, None]
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        out = torch.softmax(scores, dim=-1) @ v
        return self.w_o(out.permute(0, 2, 1, 3).reshape(B, T, D))


# The given decoder, its __init__ run with this file's globals (so its layers are this file's).
TinyDecoder = type(
    "TinyDecoder",
    (_given.TinyDecoder,),
    {"__init__": FunctionType(_given.TinyDecoder.__init__.__code__, globals(), None,
                              _given.TinyDecoder.__init__.__defaults__,
                              _given.TinyDecoder.__init__.__closure__)},
)  # fmt: skip


def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    with torch.no_grad():
        if not use_cache:
            tokens, logits = prompt, []
            for _ in range(max_new_tokens):
                logits.append(model(tokens)[:, -1])
                tokens = torch.cat([tokens, logits[-1].argmax(-1, keepdim=True)], dim=-1)
            return tokens, torch.stack(logits, dim=1)
        cache = KVCache(len(model.layers))
        logits = [model(prompt, cache)[:, -1]]
        tokens = torch.cat([prompt, logits[0].argmax(-1, keepdim=True)], dim=-1)
        for _ in range(max_new_tokens - 1):
            logits.append(model(tokens[:, -1:], cache)[:, -1])
            tokens = torch.cat([tokens, logits[-1].argmax(-1, keepdim=True)], dim=-1)
        return tokens, torch.stack(logits, dim=1)
