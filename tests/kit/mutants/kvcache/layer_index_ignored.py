"""Mutant: CachedAttention appends to layer 0's entry whatever its layer index: in a model of
two layers, the second reads the first one's keys. The solution's source with one line
changed."""

# expects: kv-layer-ignored
# loses: reference
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "k, v = cache.append(layer, k, v)  # (B, H_kv, S, d_k), S = p0 + T",
    "k, v = cache.append(0, k, v)",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
