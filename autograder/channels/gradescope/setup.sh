#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image; the zip's
# contents are in /autograder/source. It installs the student set only (requirements.lock:
# torch, numpy, pytest, matplotlib and what grading needs; no nbgrader, no Jupyter) into
# /autograder/venv, with torch's CPU-only build from PyTorch's own index, as PyTorch documents
# it (PyPI's Linux torch is the multi-GB CUDA build).
set -euo pipefail
SOURCE="$(cd "$(dirname "$0")" && pwd)"
VENV="${ATTENTION_LAB_VENV:-/autograder/venv}"

python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
PYTHON=""
for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null && python_ok "$candidate"; then
        PYTHON="$candidate"
        break
    fi
done
if [ -z "$PYTHON" ]; then  # an older base image: Python 3.11 from the distribution
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y python3.11 python3.11-venv
    PYTHON=python3.11
fi
# libseccomp2: the sandbox's seccomp filter (the grader refuses to run student code without it).
if ! ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2'; then
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y libseccomp2
fi
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --upgrade --quiet pip
TORCH="$(grep -E '^torch==' "$SOURCE/requirements.lock")"
"$VENV/bin/python" -m pip install --no-cache-dir --no-deps "$TORCH" \
    --index-url https://download.pytorch.org/whl/cpu
"$VENV/bin/python" -m pip install --no-cache-dir -r "$SOURCE/requirements.lock"
"$VENV/bin/python" -c 'import torch; print("torch", torch.__version__, "installed")'
