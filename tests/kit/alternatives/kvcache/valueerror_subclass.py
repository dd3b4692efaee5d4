"""Alternative: the solution, with the cache's errors raised as its own exception class,
KVCacheShapeError(ValueError) (a ValueError subclass, as libraries define them: `except
ValueError` still catches it)."""

import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .gqa import repeat_kv
from .rotary import apply_rotary


class KVCacheShapeError(ValueError):
    """k or v does not have the shape the cache needs."""


class KVCache:
    """The keys and values every attention layer has seen so far, for one batch of sequences.

    keys[layer] and values[layer] are (B, H_kv, T_so_far, d_k) tensors, or None while the layer
    has seen nothing. Each layer keeps its own: layer 0's keys are not layer 1's. Start a new
    KVCache (or call reset()) for every new batch of sequences.
    """

    def __init__(self, num_layers):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers

    def reset(self):
        """Forget everything: the cache of a new sequence starts empty."""
        self.keys = [None] * len(self.keys)
        self.values = [None] * len(self.values)

    def length(self, layer=0):
        """The number of tokens cached in `layer` (T_so_far, 0 while empty): the position of
        the next token."""
        if self.keys[layer] is None:
            return 0
        return self.keys[layer].size(2)

    def append(self, layer, k, v):
        """Add this call's keys and values to `layer` and return everything cached so far.

        Args:
            layer: the index of the attention layer (0 .. num_layers - 1).
            k: (B, H_kv, T, d_k), the new tokens' keys, already rotated at their positions.
            v: (B, H_kv, T, d_v), the new tokens' values (v.shape[:3] == k.shape[:3]).

        Returns:
            (keys, values): (B, H_kv, T_so_far, d_k) and (B, H_kv, T_so_far, d_v), the old
            tokens first, then the new ones; T_so_far counts the new tokens too.

        Raises:
            ValueError: when k or v is not 4-D, when v.shape[:3] != k.shape[:3], or when k or v
                does not match what the layer holds in B, H_kv or width; the message gives the
                shapes.
        """
        if k.dim() != 4 or v.dim() != 4 or k.shape[:3] != v.shape[:3]:
            raise KVCacheShapeError(
                f"expected k (B, H_kv, T, d_k) and v (B, H_kv, T, d_v) with the same B, H_kv "
                f"and T, got k of shape {tuple(k.shape)} and v of shape {tuple(v.shape)}"
            )
        old_k, old_v = self.keys[layer], self.values[layer]
        if old_k is not None:
            for name, new, old in (("k", k, old_k), ("v", v, old_v)):
                if new.shape[:2] != old.shape[:2] or new.shape[3] != old.shape[3]:
                    raise KVCacheShapeError(
                        f"{name} of shape {tuple(new.shape)} does not fit layer {layer}'s "
                        f"cache of shape {tuple(old.shape)}: only the time axis (dim 2) "
                        f"may differ"
                    )
            k, v = torch.cat([old_k, k], dim=2), torch.cat([old_v, v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v


class CachedAttention(nn.Module):
    """Grouped-query self-attention with rotary positions and an optional KV cache.

    forward(x, cache, layer) treats x as the T tokens that follow the cache's
    p0 = cache.length(layer) tokens:
        positions = p0, p0 + 1, ..., p0 + T - 1
        q, k = apply_rotary(x W_qᵀ, positions), apply_rotary(x W_kᵀ, positions); v = x W_vᵀ
        keys, values = cache.append(layer, k, v)          (all S = p0 + T tokens)
        out = Attention(q, keys, values, causal) W_oᵀ     (query at p sees keys at 0 .. p)
    With cache=None it is plain causal self-attention over x at positions 0 .. T-1.

    Args:
        d_model: D. num_heads: H. num_kv_heads: H_kv (divides H).
        base: the rotary base (apply_rotary's).
    """

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

    def forward(self, x, cache=None, layer=0):
        """
        Args:
            x: (B, T, D), the new tokens (the whole prompt in a prefill, one token in a step).
            cache: a KVCache, or None (no cache: x is the whole sequence).
            layer: this layer's index in the cache.

        Returns:
            (B, T, D). The cache, when given, has grown by T tokens in `layer`.
        """
        B, T, D = x.shape
        p0 = 0 if cache is None else cache.length(layer)
        positions = torch.arange(p0, p0 + T, device=x.device)
        q = self.w_q(x).reshape(B, T, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)
        q, k = apply_rotary(q, positions, self.base), apply_rotary(k, positions, self.base)
        if cache is not None:
            k, v = cache.append(layer, k, v)  # (B, H_kv, S, d_k), S = p0 + T
        key_positions = torch.arange(k.size(2), device=x.device)
        mask = key_positions[None, :] > positions[:, None]  # (T, S), True = a future key
        heads, _ = scaled_dot_product_attention(
            q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep), mask
        )
        return self.w_o(heads.transpose(1, 2).reshape(B, T, D))


class TinyDecoder(nn.Module):
    """An attention-only decoder: token embedding, num_layers residual CachedAttention layers
    (each after an RMSNorm), a final RMSNorm and the output head. A real model adds a
    feed-forward network after each attention; the cache does not touch it. Given, not an
    exercise: it shows how one KVCache serves every layer.

    forward(tokens (B, T) int64, cache=None) -> logits (B, T, V): with a cache, tokens are the
    T tokens that follow the cached ones.
    """

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
    """Greedy decoding: append the most likely next token max_new_tokens times.

    Args:
        model: a TinyDecoder (anything with .layers and forward(tokens, cache=None)).
        prompt: (B, T0) int64 tokens, T0 >= 1.
        max_new_tokens: n >= 1, the number of tokens to generate.
        use_cache: True: one prefill call on the prompt, then one call per new token with a
            fresh KVCache(len(model.layers)); False: every step recomputes the whole prefix
            (model(tokens) without a cache), the slow way, to compare.

    Returns:
        (tokens (B, T0 + n) int64: the prompt then the generated tokens,
         logits (B, n, V): the logits each new token was chosen from; token T0 + i is
         logits[:, i].argmax(-1)).
    """
    cache = KVCache(len(model.layers)) if use_cache else None
    tokens, new, chosen_from = prompt, prompt, []
    for _ in range(max_new_tokens):
        logits = model(new, cache) if use_cache else model(tokens)
        last = logits[:, -1]  # (B, V)
        next_token = last.argmax(dim=-1, keepdim=True)  # (B, 1)
        tokens = torch.cat([tokens, next_token], dim=1)
        new = next_token
        chosen_from.append(last)
    return tokens, torch.stack(chosen_from, dim=1)
