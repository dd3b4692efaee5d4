"""Attack: reach what is correct in the kit from the graded module: its trusted stand-in and
a judge file (imported, and opened by path), solutions/<m>.py and fixtures/<m>.npz (opened);
print what was found and use the stand-in if it imports. Issue 12: the sandbox showed all of
autograder/, so `autograder.trusted.attention` was one import away."""

# reported: mask-not-bool
import importlib
from pathlib import Path

import torch

import autograder

MODULE = Path(__file__).stem
KIT = Path(autograder.__file__).resolve().parent
_found = {}
for name in (f"autograder.trusted.{MODULE}", f"autograder.checks.{MODULE}.judge"):
    try:
        _found[name] = importlib.import_module(name)
        print(f"KITLEAK imported {name}")
    except Exception:
        pass
for path in (
    KIT / "trusted" / f"{MODULE}.py",
    KIT / "checks" / MODULE / "judge.py",
    KIT / "fixtures" / f"{MODULE}.npz",
    KIT.parent / "solutions" / f"{MODULE}.py",
    Path("/autograder/source/solutions") / f"{MODULE}.py",
):
    try:
        path.read_bytes()
        print(f"KITLEAK opened {path}")
    except OSError:
        pass
_stand_in = _found.get(f"autograder.trusted.{MODULE}")


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
