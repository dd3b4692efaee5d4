"""Mutant: append puts the new tokens before the cached ones (torch.cat([new, old], dim=2))."""

# expects: kv-append-new-first
# loses: cache-shapes
from types import FunctionType

import torch

import solutions.kvcache as _s
from solutions.kvcache import *  # noqa: F403


class KVCache(_s.KVCache):
    def append(self, layer, k, v):
        old_k, old_v = self.keys[layer], self.values[layer]
        _s.KVCache.append(self, layer, k, v)
        if old_k is not None:
            self.keys[layer] = torch.cat([k, old_k], dim=2)
            self.values[layer] = torch.cat([v, old_v], dim=2)
        return self.keys[layer], self.values[layer]


# greedy_decode, run with this file's globals (its KVCache).
greedy_decode = torch.no_grad()(FunctionType(_s.greedy_decode.__wrapped__.__code__, globals()))
