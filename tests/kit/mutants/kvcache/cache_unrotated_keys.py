"""Mutant: the other convention: the cache holds the keys before rotation, and every call
rotates all cached keys at 0 .. S-1. The outputs are right; the cache breaks the kit's
convention (keys cached after rotation). The solution's source with one line changed."""

# expects: kv-cache-unrotated-keys
# loses: cache-contents
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "k, v = cache.append(layer, k, v)  # (B, H_kv, S, d_k), S = p0 + T",
    "k, v = cache.append(layer, self.w_k(x).reshape(B, T, -1, self.d_k).transpose(1, "
    "2), v); k = apply_rotary(k, torch.arange(k.size(2)), self.base)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
