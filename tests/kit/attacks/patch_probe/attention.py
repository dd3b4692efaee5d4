"""Attack: patch the probe side at import (issue 12: an untied lm_head reported as tied),
here every probe and the engine's attempt(), so that they report what the attack likes."""

# reported: wrong-return-type
import sys

import torch

for name, module in list(sys.modules.items()):
    if name.startswith("autograder.checks.") or name == "autograder.run.probing":
        for attr, value in list(vars(module).items()):
            if callable(value) and not isinstance(value, type) and not attr.startswith("_"):
                try:
                    setattr(module, attr, lambda *a, **k: {})
                except Exception:
                    pass


def scaled_dot_product_attention(q, k, v, mask=None):
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def attention_with_bias(q, k, v, bias, mask=None):
    return scaled_dot_product_attention(q, k, v, mask)
