"""Mutant: the second half is a second random draw, not a copy of the first."""

# expects: induction-tokens-not-repeated
# loses: tokens
import torch

from solutions.induction import *  # noqa: F403


def repeated_tokens(batch_size, period, vocab_size, generator=None):
    first = torch.randint(vocab_size, (batch_size, period), generator=generator)
    second = torch.randint(vocab_size, (batch_size, period), generator=generator)
    return torch.cat([first, second], dim=1)
