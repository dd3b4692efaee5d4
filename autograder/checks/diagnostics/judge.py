"""The checks of diagnostics.py, in the order students meet them: head entropy, the W_O
experiment, LN placement, the √d_k experiment (each part's verdicts are in judge_<part>.py)."""

from __future__ import annotations

from ...core.check import CheckList
from . import judge_entropy, judge_ln, judge_sqrt_dk, judge_wo

CHECKS = CheckList("diagnostics")
for _part in (judge_entropy, judge_wo, judge_ln, judge_sqrt_dk):
    CHECKS.extend(_part.CHECKS)
