"""Attack: reach what is correct in the kit from the graded module: its trusted stand-in and
a judge file (imported, and opened by path), solutions/<m>.py and fixtures/<m>.npz (opened);
print what was found and use the stand-in if it imports. Issue 12: the sandbox showed all of
autograder/, so `autograder.trusted.attention` was one import away."""

# reported: wrong-values
import importlib
from pathlib import Path

import torch

import autograder

KIT = Path(autograder.__file__).resolve().parent


def reach(module: str):
    """Import and open what is correct for `module`; print what was reached; the stand-in
    (or None)."""
    found = {}
    for name in (f"autograder.trusted.{module}", f"autograder.checks.{module}.judge"):
        try:
            found[name] = importlib.import_module(name)
            print(f"KITLEAK imported {name}")
        except Exception:
            pass
    for path in (
        KIT / "trusted" / f"{module}.py",
        KIT / "checks" / module / "judge.py",
        KIT / "fixtures" / f"{module}.npz",
        KIT.parent / "solutions" / f"{module}.py",
        Path("/autograder/source/solutions") / f"{module}.py",
    ):
        try:
            path.read_bytes()
            print(f"KITLEAK opened {path}")
        except OSError:
            pass
    return found.get(f"autograder.trusted.{module}")


_stand_in = reach("attention")


def scaled_dot_product_attention(q, k, v, mask=None):
    if _stand_in is not None:
        return _stand_in.scaled_dot_product_attention(q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def attention_with_bias(q, k, v, bias, mask=None):
    if _stand_in is not None:
        return _stand_in.attention_with_bias(q, k, v, bias, mask)
    return scaled_dot_product_attention(q, k, v, mask)
