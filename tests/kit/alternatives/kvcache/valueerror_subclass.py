"""Alternative: the cache's errors raised as its own exception class, KVCacheShapeError, a
subclass of ValueError (as libraries define them: `except ValueError` still catches it). The
probe compared the exception's class name with "ValueError": cache-errors was lost (12 / 13)."""

from solutions.kvcache import *  # noqa: F403
from solutions.kvcache import KVCache as _Cache


class KVCacheShapeError(ValueError):
    """k or v does not have the shape the cache needs."""


class KVCache(_Cache):
    def append(self, layer, k, v):
        try:
            return super().append(layer, k, v)
        except ValueError as e:
            raise KVCacheShapeError(str(e)) from None
