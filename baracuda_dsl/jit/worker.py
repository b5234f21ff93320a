"""The compiler worker: ``python -m baracuda_dsl.jit.worker``, one per compile slot.

It is a plain child process started by :mod:`.compiler` (never ``multiprocessing``), so it
imports neither the user's ``__main__`` nor anything the user's program had loaded (torch, jax):
only this package, the template's spec module and the CuTe DSL.  ``CUTE_DSL_ARCH`` (read when
``cutlass`` is imported) comes in its environment, so one worker compiles for one arch.

Protocol, over the worker's stdin / stdout (the real stdout: file descriptor 1 is pointed at
stderr before anything else runs, so whatever the DSL prints cannot corrupt a frame): frames of
a 4-byte little-endian length and a pickled tuple.  The worker sends ``("ready", pid, dsl
version)`` once the DSL is imported; then, per request ``("compile", spec, template, knobs,
arch)``, it answers ``("ok", cubin, meta)`` or ``("error", message)``.  ``("exit",)`` or the end
of stdin stops it.  Knobs travel as frozen tuples of plain values.
"""

from __future__ import annotations

import importlib
import os
import pickle
import struct
import sys
from typing import BinaryIO, Optional

_LEN = struct.Struct("<I")


def write_frame(stream: BinaryIO, obj) -> None:
    """Send one pickled frame and flush."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LEN.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Optional[object]:
    """Receive one frame; None at end of stream (the peer closed or died)."""
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return pickle.loads(data)


def main() -> int:
    """Serve compile requests until stdin closes; returns the exit status."""
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                     # prints (ours or the DSL's) go to the log, not the pipe
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    proto_in = sys.stdin.buffer
    try:
        from .compile_one import compile_one, prepare_environment
        from .cache import installed_dsl_version

        prepare_environment()
        importlib.import_module("cutlass.cute")   # paid once, before the first request
    except BaseException as e:        # report the reason instead of dying silently
        write_frame(proto_out, ("error", f"compiler worker could not start: "
                                         f"{type(e).__name__}: {e}"))
        return 1
    write_frame(proto_out, ("ready", os.getpid(), installed_dsl_version()))
    while True:
        try:
            req = read_frame(proto_in)
        except KeyboardInterrupt:
            return 130
        if req is None or req[0] == "exit":
            return 0
        _, spec, name, knobs, arch = req
        try:
            cubin, meta = compile_one(spec, name, knobs, arch)
            reply = ("ok", cubin, meta)
        except KeyboardInterrupt:
            return 130
        except BaseException as e:    # CompileError carries the DSL's message already
            reply = ("error", str(e) or type(e).__name__)
        write_frame(proto_out, reply)


if __name__ == "__main__":
    sys.exit(main())
