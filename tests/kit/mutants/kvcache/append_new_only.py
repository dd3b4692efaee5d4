"""Mutant: append stores everything but returns only this call's keys and values."""

# expects: kv-append-new-only
# loses: cache-shapes
from types import FunctionType

import torch

import solutions.kvcache as _s
from solutions.kvcache import *  # noqa: F403


class KVCache(_s.KVCache):
    def append(self, layer, k, v):
        _s.KVCache.append(self, layer, k, v)
        return k, v


# greedy_decode, run with this file's globals (its KVCache).
greedy_decode = torch.no_grad()(FunctionType(_s.greedy_decode.__wrapped__.__code__, globals()))
