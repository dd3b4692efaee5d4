"""Attention Lab exercises.

Each module is one group of exercises. Fill in the regions marked TODO, then run
`make grade` (or `make grade EX=attention` for one module).

Shape legend used in every docstring:
    B batch, H heads, L query length, S key length, T sequence length (L = S = T),
    D = d_model, d_k = D // H.
Mask convention: a bool tensor, True = blocked (may not be attended).
"""
