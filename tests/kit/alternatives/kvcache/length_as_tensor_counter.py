"""Alternative in the style of pytorch-labs/gpt-fast: per layer a preallocated buffer written
with index_copy_ at input_pos, a freqs_cis table, F.scaled_dot_product_attention; the cache
keeps its positions in a tensor, so length() returns a 0-dim integer tensor, not a Python int.
A count kept that way is the right count: it lost 2 points as a wrong length before."""

import torch
import torch.nn.functional as F
from torch import nn

from .attention import scaled_dot_product_attention  # noqa: F401
from .gqa import repeat_kv  # noqa: F401
from .rotary import apply_rotary  # noqa: F401


def _find_multiple(n, k):
    return n if n % k == 0 else n + k - (n % k)


class KVCache:
    """The keys and values every attention layer has seen so far, for one batch of sequences.

    keys[layer] / values[layer] are views of the filled part of a static buffer."""

    BLOCK = 64

    def __init__(self, num_layers):
        self.keys = [None] * num_layers
        self.values = [None] * num_layers
        self.k_cache = [None] * num_layers
        self.v_cache = [None] * num_layers
        # gpt-fast keeps positions as tensors: the tokens filled per layer
        self.filled = torch.zeros(num_layers, dtype=torch.long)

    def reset(self):
        self.__init__(len(self.keys))

    def length(self, layer=0):
        return self.filled[layer].clone()  # a count of its own, not a view of the counter

    def _setup(self, layer, k, v, max_seq_length):
        B, H, _, dk = k.shape
        k_cache = torch.zeros(B, H, max_seq_length, dk, dtype=k.dtype, device=k.device)
        v_cache = torch.zeros(B, H, max_seq_length, v.shape[3], dtype=v.dtype, device=v.device)
        used = self.length(layer)
        if used:
            k_cache[:, :, :used] = self.k_cache[layer][:, :, :used]
            v_cache[:, :, :used] = self.v_cache[layer][:, :, :used]
        self.k_cache[layer], self.v_cache[layer] = k_cache, v_cache

    def update(self, layer, input_pos, k_val, v_val):
        k_out, v_out = self.k_cache[layer], self.v_cache[layer]
        k_out.index_copy_(2, input_pos, k_val.to(k_out.dtype))
        v_out.index_copy_(2, input_pos, v_val.to(v_out.dtype))
        end = int(input_pos[-1]) + 1
        self.keys[layer], self.values[layer] = k_out[:, :, :end], v_out[:, :, :end]
        self.filled[layer] = end
        return self.keys[layer], self.values[layer]

    def append(self, layer, k, v):
        if k.ndim != 4 or v.ndim != 4:
            raise ValueError(f"expected 4-D k and v, got k {list(k.shape)} and v {list(v.shape)}")
        if k.shape[:3] != v.shape[:3]:
            raise ValueError(f"k {list(k.shape)} and v {list(v.shape)} differ in (B, H_kv, T)")
        start = self.length(layer)
        if start:
            ok, ov = self.keys[layer], self.values[layer]
            if (
                k.shape[:2] != ok.shape[:2]
                or k.shape[3] != ok.shape[3]
                or v.shape[:2] != ov.shape[:2]
                or v.shape[3] != ov.shape[3]
            ):
                raise ValueError(
                    f"k {list(k.shape)} / v {list(v.shape)} do not fit layer {layer}'s cache "
                    f"k {list(ok.shape)} / v {list(ov.shape)}"
                )
        T = k.shape[2]
        if self.k_cache[layer] is None or start + T > self.k_cache[layer].shape[2]:
            self._setup(layer, k, v, _find_multiple(2 * (start + T), self.BLOCK))
        if T == 0:
            k_out, v_out = self.k_cache[layer], self.v_cache[layer]
            self.keys[layer], self.values[layer] = k_out[:, :, :start], v_out[:, :, :start]
            return self.keys[layer], self.values[layer]
        input_pos = torch.arange(start, start + T, device=k.device)
        return self.update(layer, input_pos, k, v)


def precompute_freqs_cis(seq_len, n_elem, base=10000.0, device=None):
    freqs = 1.0 / (
        base ** (torch.arange(0, n_elem, 2, device=device)[: (n_elem // 2)].float() / n_elem)
    )
    t = torch.arange(seq_len, device=freqs.device)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    return torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1)  # (seq_len, d/2, 2)


def apply_rotary_emb(x, freqs_cis):
    """x: (B, H, T, d), freqs_cis: (T, d/2, 2); the pairs are (i, i + d/2) (kit convention)."""
    work = x.dtype if x.dtype == torch.float64 else torch.float32
    xshaped = x.to(work).unflatten(-1, (2, -1))  # (..., 2, d/2): halves
    fc = freqs_cis.to(work)
    cos, sin = fc[..., 0], fc[..., 1]
    x_out = torch.stack(
        [
            xshaped[..., 0, :] * cos - xshaped[..., 1, :] * sin,
            xshaped[..., 1, :] * cos + xshaped[..., 0, :] * sin,
        ],
        -2,
    )
    return x_out.flatten(-2).type_as(x)


class CachedAttention(nn.Module):
    """Grouped-query self-attention with rotary positions and an optional KV cache."""

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
        self._freqs_cis = None  # grown on demand (not a parameter, not in the state_dict)
        self._causal = None

    def _tables(self, needed, device):
        if (
            self._freqs_cis is None
            or self._freqs_cis.shape[0] < needed
            or self._freqs_cis.device != device
        ):
            size = _find_multiple(max(needed, 256), 256)
            self._freqs_cis = precompute_freqs_cis(size, self.d_k, self.base, device)
            self._causal = torch.tril(torch.ones(size, size, dtype=torch.bool, device=device))
        return self._freqs_cis, self._causal

    def forward(self, x, cache=None, layer=0):
        bsz, seqlen, _ = x.shape
        start = cache.length(layer) if cache is not None else 0
        input_pos = torch.arange(start, start + seqlen, device=x.device)
        freqs_cis, causal = self._tables(start + seqlen, x.device)

        q = self.w_q(x).view(bsz, seqlen, self.num_heads, self.d_k).transpose(1, 2)
        k = self.w_k(x).view(bsz, seqlen, self.num_kv_heads, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(bsz, seqlen, self.num_kv_heads, self.d_k).transpose(1, 2)

        q = apply_rotary_emb(q, freqs_cis[input_pos])
        k = apply_rotary_emb(k, freqs_cis[input_pos])

        if cache is not None:
            k, v = cache.append(layer, k, v)

        k = k.repeat_interleave(self.n_rep, dim=1)
        v = v.repeat_interleave(self.n_rep, dim=1)
        mask = causal[input_pos][:, : k.shape[2]]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[None, None], dropout_p=0.0)
        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.w_o(y)


class TinyDecoder(nn.Module):
    """An attention-only decoder (given)."""

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


def prefill(model, x, cache):
    logits = model(x, cache)
    return logits[:, -1]


def decode_one_token(model, x, cache):
    logits = model(x, cache)
    return logits[:, -1]


@torch.no_grad()
def greedy_decode(model, prompt, max_new_tokens, use_cache=True):
    B, T = prompt.shape
    T_new = T + max_new_tokens
    seq = torch.empty(B, T_new, dtype=prompt.dtype, device=prompt.device)
    seq[:, :T] = prompt
    all_logits = []
    if not use_cache:
        for t in range(T, T_new):
            logits = model(seq[:, :t])[:, -1]
            seq[:, t] = logits.argmax(dim=-1)
            all_logits.append(logits)
        return seq, torch.stack(all_logits, dim=1)
    cache = KVCache(len(model.layers))
    logits = prefill(model, prompt, cache)
    next_token = logits.argmax(dim=-1)
    seq[:, T] = next_token
    all_logits.append(logits)
    for i in range(max_new_tokens - 1):
        cur = next_token.view(B, 1)
        logits = decode_one_token(model, cur, cache)
        next_token = logits.argmax(dim=-1)
        seq[:, T + 1 + i] = next_token
        all_logits.append(logits)
    return seq, torch.stack(all_logits, dim=1)
