"""Mutant: append concatenates along the heads (dim 1) instead of the time axis."""

# expects: kv-append-wrong-axis
# loses: cache-shapes, cache-errors
from types import FunctionType

import torch

import solutions.kvcache as _s
from solutions.kvcache import *  # noqa: F403


class KVCache(_s.KVCache):
    def append(self, layer, k, v):
        if self.keys[layer] is not None:
            k = torch.cat([self.keys[layer], k], dim=1)
            v = torch.cat([self.values[layer], v], dim=1)
        self.keys[layer], self.values[layer] = k, v
        return k, v


# greedy_decode, run with this file's globals (its KVCache).
greedy_decode = torch.no_grad()(FunctionType(_s.greedy_decode.__wrapped__.__code__, globals()))
