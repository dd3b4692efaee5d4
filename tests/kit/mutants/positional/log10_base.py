"""Mutant: the frequencies' exponent written with log10 instead of the natural log
(ω_i = e^(-2i·log10(10000)/D) = e^(-8i/D)): a geometric series with the wrong ratio. The
frequencies check charges it; the other table checks pass a table that is right but for its
frequencies. The solution's source with one edit."""

# expects: pe-wrong-frequency
# loses: frequencies
from inspect import getsource

import solutions.positional as _solution

_EDIT = ("-math.log(10000.0) / d_model", "-math.log10(10000.0) / d_model")
assert getsource(_solution).count(_EDIT[0]) == 1
exec(compile(getsource(_solution).replace(*_EDIT), __file__, "exec"))
