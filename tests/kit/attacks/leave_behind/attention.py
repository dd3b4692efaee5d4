"""Attack: leave files in /tmp and /dev/shm (past the address-space limit, for the next
student on the same uid to read) and a daemon that outlives the grading and keeps
rewriting files; nothing of it may survive the sandbox."""

import os

for folder in ("/tmp", "/dev/shm", "/var/tmp"):
    try:
        with open(f"{folder}/attention-lab-leak-{os.getpid()}", "wb") as f:
            f.write(b"x" * (8 << 20))
    except OSError:
        pass

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time

        for i in range(600):
            for folder in ("/tmp", "/dev/shm"):
                try:
                    with open(f"{folder}/attention-lab-leak-daemon", "w") as f:
                        f.write(str(i))
                except OSError:
                    pass
            time.sleep(0.1)
    os._exit(0)


def scaled_dot_product_attention(q, k, v, mask=None):
    return q, None
