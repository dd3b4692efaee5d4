"""Mutant: one list of keys and values for every layer (the layer argument ignored)."""

# expects: kv-layers-share-cache
from types import FunctionType

import torch

import solutions.kvcache as _s
from solutions.kvcache import *  # noqa: F403


class KVCache(_s.KVCache):
    def append(self, layer, k, v):
        return _s.KVCache.append(self, 0, k, v)

    def length(self, layer=0):
        return _s.KVCache.length(self, 0)


# greedy_decode, run with this file's globals (its KVCache).
greedy_decode = torch.no_grad()(FunctionType(_s.greedy_decode.__wrapped__.__code__, globals()))
