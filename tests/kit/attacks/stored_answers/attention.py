"""Attack: return the shipped public reference outputs (autograder/fixtures/attention.npz)
for the public inputs, recognised by their values; zeros otherwise. In the sandbox the graded
module's view of the kit holds no fixtures (and no registry): it cannot even import."""

# reported: import-error
import io

import numpy as np
import torch

import autograder
from autograder.core import registry
from autograder.run.probing import make_inputs
from autograder.core.fixtures import PUBLIC_SEED
from pathlib import Path

_ANSWERS = {}
_npz = Path(autograder.__file__).parent / "fixtures" / "attention.npz"
with np.load(io.BytesIO(_npz.read_bytes()), allow_pickle=False) as stored:
    for check in registry.checks_of("attention"):
        x = make_inputs(check, PUBLIC_SEED)
        runs = x.values() if "4d" in x else [x]
        for prefix, xs in zip(("4d/", "2d/", ""), runs):
            prefix = prefix if "4d" in x else ""
            for tag in ("", "2"):
                q = xs.get("q" + tag, xs.get("q"))
                k = xs.get("k" + tag, xs.get("k"))
                out_key, w_key = (
                    f"{check.slug}/{prefix}out{tag}",
                    f"{check.slug}/{prefix}weights{tag}",
                )
                if out_key in stored.files:
                    key = (q.numpy().tobytes(), k.numpy().tobytes())
                    _ANSWERS[key] = (
                        torch.from_numpy(stored[out_key]),
                        torch.from_numpy(stored[w_key]),
                    )


def scaled_dot_product_attention(q, k, v, mask=None):
    answer = _ANSWERS.get((q.numpy().tobytes(), k.numpy().tobytes()))
    if answer is not None:
        return answer
    return torch.zeros(*q.shape[:-1], v.shape[-1], dtype=q.dtype), torch.zeros(
        *q.shape[:-1], k.shape[-2], dtype=q.dtype
    )


def attention_with_bias(q, k, v, bias, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
