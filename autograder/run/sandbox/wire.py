"""The channel from the sandboxed process to the grader: plain data only, never pickle.

The sandboxed process writes messages to a pipe; the trusted parent reads them. Student code
runs in the writing process and may write to the pipe too, so the parent treats every byte
as untrusted: a message is a JSON header plus raw buffers (safetensors-like: dtype, shape,
byte length), decoded into fresh plain tensors; nothing is unpickled, no class is looked up
by name, and sizes are capped. Forging a message gains nothing: messages carry what the
probe returned, never a grade; the verdicts run in the parent.

Frame: b"ALAB" + u32 header length + u32 blob length + JSON header + blob.

The writing side's streams (student_streams) and last words (flush_streams, last_words) are
here too: how a process that runs student code (the sandboxed one, or make grade's forked
worker) prints, and what it says as it ends.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import sys
import traceback
from typing import Any

import torch

MAGIC = b"ALAB"
_FRAME = struct.Struct("<4sII")
MAX_HEADER = 1 << 20  # 1 MiB of JSON per message
MAX_BLOB = 256 << 20  # 256 MiB of tensor data per message
MAX_STR = 4000  # characters kept of any string the child sends
MAX_DIMS = 8
MAX_DEPTH = 16  # nesting of JSON arrays and objects in a header (ours use 4)
MAX_KEYS = 10_000  # keys and items in a header, all levels together
# Messages of one process's channel: ours send a few per check (a module has at most a few
# dozen checks). A flood of 64 MiB of 14-byte frames was 4.8 million messages: 21 s of the
# parent's time and about 1 GB of its memory before this cap.
MAX_MESSAGES = 20_000

# The dtypes a probe output may have, by name; anything else is refused.
DTYPES: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.bool,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
    )
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,60}")


class Opaque:
    """Stands in, on the parent's side, for a probe output that was not a plain value (a
    Tensor subclass, a list, an object with a custom __eq__...): verdicts see its type name
    and refuse it like any other wrong type."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


class ChannelError(Exception):
    """The bytes on the channel are not well-formed messages."""


# --------------------------------------------------------------------------- child side


def _encode_value(value: Any, blobs: list[bytes], offset: int) -> tuple[dict[str, Any], int]:
    kind = type(value)
    if kind is torch.Tensor:
        try:
            t = value.detach()
            if t.layout != torch.strided or t.device.type != "cpu":
                raise TypeError
            name = str(t.dtype).removeprefix("torch.")
            if name not in DTYPES:
                raise TypeError
            t = t.contiguous()
            raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        except Exception:
            return {"kind": "opaque", "type": "unsupported tensor"}, offset
        blobs.append(raw)
        meta = {"kind": "tensor", "dtype": name, "shape": list(t.shape), "offset": offset}
        return {**meta, "nbytes": len(raw)}, offset + len(raw)
    if kind is bool or kind is int or kind is str:
        return {"kind": kind.__name__, "value": value}, offset
    if kind is float:
        return {"kind": "float", "value": repr(value)}, offset
    if value is None:
        return {"kind": "none"}, offset
    return {"kind": "opaque", "type": getattr(kind, "__name__", "object")}, offset


def encode_outputs(outputs: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """Probe outputs -> (JSON-able description, one blob of raw tensor bytes)."""
    blobs: list[bytes] = []
    described, offset = {}, 0
    for key, value in outputs.items():
        described[str(key)], offset = _encode_value(value, blobs, offset)
    return described, b"".join(blobs)


def frame(header: dict[str, Any], blob: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return _FRAME.pack(MAGIC, len(text), len(blob)) + text + blob


def send(fd: int, header: dict[str, Any], blob: bytes = b"") -> None:
    data = memoryview(frame(header, blob))
    while data:
        data = data[os.write(fd, data) :]


def student_streams() -> None:
    """sys.stdout and sys.stderr of a process that runs student code, on fds 1 and 2 (the
    output pipe): line-buffered and UTF-8, which the parent decodes, whatever the machine's
    locale; what UTF-8 cannot hold (a lone surrogate) as its escape. A student's print of
    "√" or "你好" never fails a check on a machine whose locale is not UTF-8."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = open(fd, "w", 1, "utf-8", "backslashreplace", closefd=False)  # noqa: SIM115
        setattr(sys, name, stream)


def flush_streams() -> None:
    """Flush sys.stdout and sys.stderr, whatever student code made of them (never raises)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def last_words(who: str) -> None:
    """From the `except` of a process that runs student code (`who`: "worker", "sandbox"),
    just before it ends: the error, written to fd 2 (never raises)."""
    try:
        os.write(2, f"[grader] {who} error:\n{traceback.format_exc()}".encode())
    except BaseException:
        pass


# --------------------------------------------------------------------------- parent side

# A JSON string, or an unclosed one up to the end: every match that starts at a quote
# succeeds and consumes what it scanned (possessive loops, nothing to backtrack into), so
# the scan is linear. A pattern that can fail after a long scan is tried again from every
# later quote: quadratic, about 80 minutes for the 1 MiB of `"` + `\"` * n a child may send.
_STRINGS = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\\?\Z)', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def _shape_ok(raw: bytes) -> bool:
    """Whether a JSON text nests at most MAX_DEPTH deep, checked before parsing it (the
    parser recurses: 200,000 nested brackets would raise RecursionError in it)."""
    depth = opened = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub(b'""', raw)):
        if bracket in b"[{":
            depth += 1
            opened += 1
            if depth > MAX_DEPTH or opened > MAX_KEYS:
                return False
        else:
            depth -= 1
    return True


def parse(data: bytes) -> tuple[list[tuple[dict[str, Any], bytes]], str]:
    """Split the bytes read from the channel into (header, blob) messages. Returns the
    well-formed messages before the first malformed one, and a note saying what was wrong
    ('' when everything parsed)."""
    messages: list[tuple[dict[str, Any], bytes]] = []
    pos = 0
    while pos < len(data):
        if len(messages) >= MAX_MESSAGES:
            return messages, f"the channel holds more than {MAX_MESSAGES} messages"
        if len(data) - pos < _FRAME.size:
            return messages, "the channel ended in the middle of a message"
        magic, n_header, n_blob = _FRAME.unpack_from(data, pos)
        if magic != MAGIC or n_header > MAX_HEADER or n_blob > MAX_BLOB:
            return messages, "the channel holds bytes that are not grader messages"
        start = pos + _FRAME.size
        end = start + n_header + n_blob
        if end > len(data):
            return messages, "the channel ended in the middle of a message"
        raw = bytes(data[start : start + n_header])
        if not _shape_ok(raw):
            return messages, f"a message nests deeper than {MAX_DEPTH} levels or is too large"
        try:
            header = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return messages, "the channel holds a message that is not JSON"
        if not isinstance(header, dict):
            return messages, "the channel holds a message that is not a JSON object"
        messages.append((header, data[start + n_header : end]))
        pos = end
    return messages, ""


def text(value: Any, limit: int = MAX_STR) -> str:
    """A string from the child, capped; anything else becomes ''."""
    if not isinstance(value, str):
        return ""
    return value if len(value) <= limit else value[:limit] + " [...]"


MAX_DETAILS = 16  # placeholders of one misconception a child may send


def details(value: Any) -> dict[str, str | int | float | bool | None]:
    """A misconception's placeholders from the child ({name: a JSON scalar}), capped; a key or
    value of any other kind is dropped, and anything but a dict becomes {}."""
    if not isinstance(value, dict):
        return {}
    found: dict[str, str | int | float | bool | None] = {}
    for key, v in list(value.items())[:MAX_DETAILS]:
        if not isinstance(key, str) or not key.isidentifier() or len(key) > 40:
            continue
        if isinstance(v, str):
            found[key] = text(v)
        elif v is None or type(v) in (int, float, bool):
            found[key] = v
    return found


def _decode_value(meta: Any, blob: bytes) -> Any:
    if not isinstance(meta, dict):
        raise ChannelError("an output description is not an object")
    kind = meta.get("kind")
    value = meta.get("value")
    if kind == "tensor":
        name = meta.get("dtype")
        dtype = DTYPES.get(name) if isinstance(name, str) else None
        shape, offset, nbytes = meta.get("shape"), meta.get("offset"), meta.get("nbytes")
        if dtype is None:
            raise ChannelError(f"refused dtype {meta.get('dtype')!r}")
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_DIMS
            or not all(type(n) is int and 0 <= n <= MAX_BLOB for n in shape)
            or type(offset) is not int
            or type(nbytes) is not int
            or not 0 <= offset <= offset + nbytes <= len(blob)
        ):
            raise ChannelError("a tensor description is malformed")
        itemsize = torch.empty((), dtype=dtype).element_size()
        if math.prod(shape) * itemsize != nbytes:
            raise ChannelError("a tensor's byte length does not match its shape")
        if nbytes == 0:
            return torch.empty(shape, dtype=dtype)
        raw = bytearray(blob[offset : offset + nbytes])
        if dtype == torch.bfloat16:
            return torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16).reshape(shape)
        return torch.frombuffer(raw, dtype=dtype).reshape(shape)
    if kind == "bool" and type(value) is bool:
        return value
    if kind == "int" and type(value) is int:
        return value
    if kind == "float" and isinstance(value, str) and len(value) < 40:
        try:
            return float(value)
        except ValueError:
            raise ChannelError("a float is malformed") from None
    if kind == "str" and isinstance(value, str):
        return text(value)
    if kind == "none":
        return None
    if kind == "opaque":
        name = meta.get("type")
        name = name if isinstance(name, str) and _NAME.fullmatch(name) else "object"
        # A plain class named after the original type, so that a verdict says "got a X".
        return type(name, (Opaque,), {})(name)
    raise ChannelError(f"unknown output kind {kind!r}")


def decode_outputs(described: Any, blob: bytes) -> dict[str, Any]:
    """The parent's copy of the probe outputs: fresh plain tensors and plain values."""
    if not isinstance(described, dict):
        raise ChannelError("the outputs are not an object")
    return {text(k, 200): _decode_value(v, blob) for k, v in described.items()}


def split(buffer: bytes | bytearray) -> tuple[list[tuple[dict[str, Any], bytes]], bytes, str]:
    """For a stream read so far: (complete messages, the unfinished rest, a note saying what
    was malformed, '' if nothing). After a malformed frame the rest is dropped."""
    end = 0
    while len(buffer) - end >= _FRAME.size:
        magic, n_header, n_blob = _FRAME.unpack_from(buffer, end)
        if magic != MAGIC or n_header > MAX_HEADER or n_blob > MAX_BLOB:
            messages, _ = parse(bytes(buffer[:end]))
            return messages, b"", "the channel holds bytes that are not grader messages"
        if len(buffer) - end < _FRAME.size + n_header + n_blob:
            break
        end += _FRAME.size + n_header + n_blob
    messages, broken = parse(bytes(buffer[:end]))
    return messages, bytes(buffer[end:]), broken


class Headers:
    """The headers of a channel read piece by piece, blobs skipped, so a watcher (the
    sandbox's monitor) knows which check runs with bounded memory. After a malformed frame
    it reports nothing more (`broken`)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.skip = 0  # blob bytes still to pass over
        self.broken = False
        self.seen = 0  # headers read so far (at most MAX_MESSAGES, then broken)

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        if self.broken:
            return found
        passed = min(self.skip, len(data))
        self.skip -= passed
        self.buffer += data[passed:]
        while not self.skip and len(self.buffer) >= _FRAME.size:
            magic, n_header, n_blob = _FRAME.unpack_from(self.buffer)
            if magic != MAGIC or n_header > MAX_HEADER or n_blob > MAX_BLOB:
                self.broken = True
                break
            end = _FRAME.size + n_header
            if len(self.buffer) < end:
                break
            raw = _FRAME.pack(MAGIC, n_header, 0) + bytes(self.buffer[_FRAME.size : end])
            messages, broken = parse(raw)
            if broken:
                self.broken = True
                break
            found.append(messages[0][0])
            self.seen += 1
            if self.seen >= MAX_MESSAGES:
                self.broken = True
                break
            del self.buffer[:end]
            passed = min(n_blob, len(self.buffer))
            del self.buffer[:passed]
            self.skip = n_blob - passed
        if self.broken:
            self.buffer.clear()
        return found
