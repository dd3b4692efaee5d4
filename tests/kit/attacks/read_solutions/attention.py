"""Attack: find solutions/attention.py on disk and run it (the reference solution)."""

# reported: wrong-values
import os
from pathlib import Path

import torch

import autograder

_candidates = [Path(autograder.__file__).resolve().parents[1] / "solutions" / "attention.py"]
_candidates += [Path(p) / "solutions" / "attention.py" for p in ("/autograder/source", os.getcwd())]
_found = {}
for path in _candidates:
    try:
        exec(compile(path.read_text(), str(path), "exec"), _found)
        break
    except OSError:
        continue


def scaled_dot_product_attention(q, k, v, mask=None):
    if "scaled_dot_product_attention" in _found:
        return _found["scaled_dot_product_attention"](q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def attention_with_bias(q, k, v, bias, mask=None):
    if "attention_with_bias" in _found:
        return _found["attention_with_bias"](q, k, v, bias, mask)
    return scaled_dot_product_attention(q, k, v, mask)
