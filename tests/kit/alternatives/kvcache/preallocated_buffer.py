"""Alternative: a cache that preallocates its buffers and doubles them when full (what
serving code does to avoid a torch.cat per step); keys[layer] is a view of the filled part.
Attention with grouped einsum (no repeat of the key heads), mask from positions."""

import math

import torch

import solutions.kvcache as _given

from .rotary import apply_rotary


class KVCache:
    def __init__(self, num_layers):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers
        self._buffers = [None] * num_layers
        self._used = [0] * num_layers

    def reset(self):
        self.__init__(len(self.keys))

    def length(self, layer=0):
        return self._used[layer]

    def append(self, layer, k, v):
        if k.ndim != 4 or v.ndim != 4 or tuple(k.shape[:3]) != tuple(v.shape[:3]):
            raise ValueError(
                f"k and v disagree: k.shape={tuple(k.shape)}, v.shape={tuple(v.shape)}"
            )
        used, T = self._used[layer], k.shape[2]
        buffers = self._buffers[layer]
        if buffers is not None:
            bk, bv = buffers
            if (k.shape[0], k.shape[1], k.shape[3]) != (bk.shape[0], bk.shape[1], bk.shape[3]) or (
                v.shape[3] != bv.shape[3]
            ):
                raise ValueError(
                    f"k.shape={tuple(k.shape)}, v.shape={tuple(v.shape)} do not match the "
                    f"cached keys {tuple(self.keys[layer].shape)}"
                )
        if buffers is None or used + T > buffers[0].shape[2]:
            size = max(2 * (used + T), 8)
            bk = k.new_empty(k.shape[0], k.shape[1], size, k.shape[3])
            bv = v.new_empty(v.shape[0], v.shape[1], size, v.shape[3])
            if buffers is not None:
                bk[:, :, :used], bv[:, :, :used] = buffers[0][:, :, :used], buffers[1][:, :, :used]
            self._buffers[layer] = (bk, bv)
        bk, bv = self._buffers[layer]
        bk[:, :, used : used + T], bv[:, :, used : used + T] = k, v
        self._used[layer] = used + T
        self.keys[layer], self.values[layer] = bk[:, :, : used + T], bv[:, :, : used + T]
        return self.keys[layer], self.values[layer]


class CachedAttention(_given.CachedAttention):  # the given parameters (w_q .. w_o)
    def forward(self, x, cache=None, layer=0):
        B, T, D = x.shape
        G, R, d = self.num_kv_heads, self.n_rep, self.d_k
        start = cache.length(layer) if cache is not None else 0
        pos = torch.arange(start, start + T, device=x.device)
        q = apply_rotary(self.w_q(x).view(B, T, G * R, d).transpose(1, 2), pos, self.base)
        k = apply_rotary(self.w_k(x).view(B, T, G, d).transpose(1, 2), pos, self.base)
        v = self.w_v(x).view(B, T, G, d).transpose(1, 2)
        if cache is not None:
            k, v = cache.append(layer, k, v)
        q = q.view(B, G, R, T, d)  # query head g*R + r uses key head g
        scores = torch.einsum("bgrtd,bgsd->bgrts", q, k) / math.sqrt(d)
        future = torch.arange(k.shape[2], device=x.device) > pos[:, None]
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        heads = torch.einsum("bgrts,bgsd->bgrtd", weights, v).reshape(B, G * R, T, d)
        return self.w_o(heads.permute(0, 2, 1, 3).reshape(B, T, D))


class TinyDecoder(_given.TinyDecoder):
    """The given decoder, its layers turned into this file's CachedAttention."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for layer in self.layers:
            layer.__class__ = CachedAttention


def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    B, T0 = prompt.shape
    out = prompt.new_empty(B, T0 + max_new_tokens)
    out[:, :T0] = prompt
    cache = KVCache(len(model.layers)) if use_cache else None
    scores = []
    with torch.no_grad():
        for t in range(T0, T0 + max_new_tokens):
            if cache is None:
                feed = out[:, :t]
            else:
                feed = out[:, cache.length(0) : t]  # the prompt first, then one token
            last = model(feed, cache)[:, -1]
            out[:, t] = last.argmax(dim=-1)
            scores.append(last)
    return out, torch.stack(scores, dim=1)
