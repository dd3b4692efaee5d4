"""Attack: re-export the kit's trusted stand-in (issue 12: 101/140 under make grade and on
the hidden tier with one-line files like this one)."""

# reported: import-error
from autograder.trusted.attention import *  # noqa: F403
