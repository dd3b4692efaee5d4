"""Mutant: draws the whole length, then overwrites the second half with the first."""

# expects: induction-tokens-other-draw
# loses: tokens
import torch

from solutions.induction import *  # noqa: F403


def repeated_tokens(batch_size, period, vocab_size, generator=None):
    tokens = torch.randint(vocab_size, (batch_size, 2 * period), generator=generator)
    tokens[:, period:] = tokens[:, :period]
    return tokens
