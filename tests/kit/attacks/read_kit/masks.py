"""Attack: read_kit for masks.py (attention.py holds the code that reaches into the kit)."""

# reported: mask-not-bool
import torch

from .attention import reach

_stand_in = reach("masks")


def causal_mask(L, device=None):
    if _stand_in is not None:
        return _stand_in.causal_mask(L, device)
    return torch.zeros(L, L)


def padding_mask(lengths, S):
    if _stand_in is not None:
        return _stand_in.padding_mask(lengths, S)
    return torch.zeros(len(lengths), 1, 1, S)


def sliding_window_mask(L, window, device=None):
    if _stand_in is not None:
        return _stand_in.sliding_window_mask(L, window, device)
    return torch.zeros(L, L)
