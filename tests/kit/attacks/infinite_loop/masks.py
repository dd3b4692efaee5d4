"""Attack: ignore the grader's alarm and the exceptions it raises, then loop forever."""

import signal

signal.signal(signal.SIGALRM, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)


def causal_mask(L, device=None):
    while True:
        try:
            while True:
                pass
        except BaseException:
            pass


padding_mask = sliding_window_mask = causal_mask
