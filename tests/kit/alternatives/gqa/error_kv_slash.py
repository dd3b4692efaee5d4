"""Alternative: the ValueError for num_kv_heads not dividing num_heads says "K/V heads" with
both numbers (the check once wanted "kv", "key", "value" or "group" spelled out). The
solution's source with the message changed."""

from inspect import getsource

import solutions.gqa as _solution

_OLD = """            raise ValueError(
                f"num_kv_heads = {num_kv_heads} does not divide num_heads = {num_heads}: "
                f"each key/value head must serve the same number of query heads"
            )
"""
_NEW = """            raise ValueError(
                f"{num_heads} query heads cannot be shared evenly among {num_kv_heads} K/V heads"
            )
"""
assert getsource(_solution).count(_OLD) == 1
exec(compile(getsource(_solution).replace(_OLD, _NEW), __file__, "exec"))
