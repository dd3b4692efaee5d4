"""Mutant: the heads merged by reshape alone, (B, H, T, d_k) -> (B, T, D) with no transpose:
multihead's mistake, made again where CachedAttention merges its heads (a single step, T = 1,
is right by luck; a prefill is not). The solution's source with one line changed."""

# expects: merge-view-no-transpose
from inspect import getsource

import solutions.kvcache as _solution

_EDIT = (
    "return self.w_o(heads.transpose(1, 2).reshape(B, T, D))",
    "return self.w_o(heads.reshape(B, T, D))",
)
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
