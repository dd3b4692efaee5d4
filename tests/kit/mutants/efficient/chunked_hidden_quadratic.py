"""Attack as a mutant: all (T, T) scores at once, run with torch's dispatch modes switched off
so that the op recorder sees nothing but the final copy."""

# expects: computation-not-recorded
# loses: chunked-memory, chunked-memory-inside
from torch.utils._python_dispatch import _disable_current_modes

from solutions.efficient import chunked_attention as _chunked
from solutions.efficient import linear_attention, local_attention, strided_attention  # noqa: F401


def chunked_attention(q, k, v, causal=False, chunk_size=128):
    with _disable_current_modes():
        out = _chunked(q, k, v, causal=causal, chunk_size=q.size(-2))  # one chunk: (T, T)
    return out.clone()
