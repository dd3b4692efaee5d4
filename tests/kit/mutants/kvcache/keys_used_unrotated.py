"""Mutant: the keys are appended before apply_rotary and the attention uses what append
returned: the queries are turned, the cached keys never. The solution's source with one line
changed."""

# expects: kv-keys-used-unrotated
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "k, v = cache.append(layer, k, v)  # (B, H_kv, S, d_k), S = p0 + T",
    "k, v = cache.append(layer, self.w_k(x).reshape(B, T, -1, self.d_k).transpose(1, 2), v)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
