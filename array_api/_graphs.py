"""Streams and CUDA graphs for the namespace (extensions).

``use_stream(s)`` makes ``s`` the calling thread's current stream: every namespace op and every
``plan.run(..., stream=None)`` enqueues there (default: the legacy default stream, which orders
with torch's and CuPy's default streams).  Arrays are allocated for the current stream: a freed
block is reused only by allocations on the stream it was allocated on.

:class:`CUDAGraph` records namespace ops and Plans into a CUDA graph (``cuda.core``'s
``GraphBuilder``, relaxed capture on a private non-blocking stream) and replays them::

    g = xp.CUDAGraph()
    with g.capture():          # recorded, not run
        y = step(x)            # arrays made here are the graph's (static outputs)
    g.replay()                 # runs on the current stream; y holds the new result

Memory: during capture every namespace allocation on this thread comes from the graph's own
arena (device memory allocated eagerly with ``cuMemAlloc``, kept until the graph is closed and
no array holds it); a block freed during capture is reused later in the same capture (stream
order inside the graph keeps that safe), never by eager work.  Inputs must exist before capture
and are updated in place between replays; in-place ops inside the capture run on every replay.
Reading device data on the host inside a capture raises UnsupportedError (the work has not run);
host-to-device copies (``asarray(numpy)``) happen once, at capture time.  The out-of-range index
check (a readback) is skipped for ops captured in a graph.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Dict, List

from baracuda_dsl.errors import DriverError, InvalidProblemError
from baracuda_dsl.runtime.device import bind_thread, current_device_ordinal
from baracuda_dsl.runtime.stream import AMBIENT, current_stream, use_stream

__all__ = ["CUDAGraph", "current_stream", "use_stream"]


class _DeviceBuffer:
    """A plain ``cuMemAlloc`` allocation (graph arenas): ``handle``, ``size``, ``close()``."""

    __slots__ = ("handle", "size", "ordinal")

    def __init__(self, nbytes: int, ordinal: int):
        from cuda.bindings import driver

        bind_thread(ordinal)
        err, ptr = driver.cuMemAlloc(nbytes)
        if int(err):
            from baracuda_dsl.errors import DeviceOutOfMemoryError

            raise DeviceOutOfMemoryError(nbytes, ordinal, f"cuMemAlloc: {err}")
        self.handle, self.size, self.ordinal = int(ptr), nbytes, ordinal

    def close(self, stream=None) -> None:
        if self.handle:
            from cuda.bindings import driver

            bind_thread(self.ordinal)
            driver.cuMemFree(self.handle)
            self.handle = 0


class _Arena:
    """The memory of one graph: size-class free lists of its own blocks."""

    def __init__(self):
        self.free: Dict[tuple, List[_DeviceBuffer]] = {}
        self.lock = threading.Lock()
        self.closed = False
        self.nbytes = 0
        self.buffers: Dict[int, _DeviceBuffer] = {}   # handle -> buffer, every one made
        self.pinned: set = set()                      # handles of host-written buffers

    def allocate(self, nbytes: int, ordinal: int, size: int, block_type):
        key = (ordinal, size, "graph")
        buf = None
        with self.lock:
            lst = self.free.get(key)
            if lst:
                buf = lst.pop()
        if buf is None:
            buf = _DeviceBuffer(size, ordinal)
            with self.lock:
                self.nbytes += size
                self.buffers[buf.handle] = buf
        return block_type(buf, key, home=self)

    def pin(self, ptr: int) -> None:
        """The buffer holding ``ptr`` received a host copy at capture time (a constant of the
        graph): it is never handed out again while the graph lives, or a later captured op
        would overwrite the constant on replay."""
        with self.lock:
            for h, b in self.buffers.items():
                if h <= ptr < h + b.size:
                    self.pinned.add(h)
                    return

    def release(self, buf, key) -> None:
        with self.lock:
            if not self.closed:
                if buf.handle not in self.pinned:
                    self.free.setdefault(key, []).append(buf)
                return             # a pinned buffer stays referenced by self.buffers
            self.buffers.pop(buf.handle, None)
        buf.close()

    def buffer(self, nbytes: int, ordinal: int):
        """A raw buffer (``handle``, ``close(stream=None)``) for a plan's temporary: its close
        hands the memory back to this arena."""
        from ._device import size_class

        return _Lease(self, self.allocate(nbytes, ordinal, size_class(nbytes), _Lease.block))

    def close(self) -> None:
        with self.lock:
            self.closed = True
            bufs = [b for lst in self.free.values() for b in lst]
            bufs += [self.buffers[h] for h in self.pinned if h in self.buffers]
            self.free.clear()
            self.pinned.clear()
            for b in bufs:
                self.buffers.pop(b.handle, None)
        for b in bufs:
            b.close()


class _Lease:
    """A plan temporary taken from an arena (runtime.memory.allocate during a capture)."""

    __slots__ = ("handle", "_buf", "_key", "_arena")

    @staticmethod
    def block(buf, key, home):
        return (buf, key)

    def __init__(self, arena, bk):
        self._arena, (self._buf, self._key) = arena, bk
        self.handle = self._buf.handle

    def close(self, stream=None) -> None:
        if self._buf is not None:
            self._arena.release(self._buf, self._key)
            self._buf = None


class CUDAGraph:
    """A CUDA graph of namespace ops and Plans (see the module docstring).  ``capture()``: a
    context manager recording the block's device work; ``replay(stream=None)``: launch it on
    ``stream`` (default: the current stream); ``close()``: free the graph and its memory
    (arrays made during capture stay valid while referenced).  Not re-entrant; one capture per
    graph."""

    def __init__(self, device=None):
        from ._device import as_device

        self._ordinal = as_device(device).ordinal if device is not None else \
            current_device_ordinal()
        self._graph = None
        self._arena = _Arena()
        self._capturing = False

    @property
    def captured(self) -> bool:
        """True once a capture has completed (the graph can be replayed)."""
        return self._graph is not None

    @contextlib.contextmanager
    def capture(self):
        """Record the block's namespace ops and ``plan.run(..., stream=None)`` calls (this
        thread) into the graph instead of running them."""
        if self._graph is not None or self._capturing:
            raise InvalidProblemError("CUDAGraph: this graph is already captured")
        if AMBIENT.arena is not None:
            raise InvalidProblemError("CUDAGraph: captures do not nest")
        dev = bind_thread(self._ordinal)
        stream = dev.create_stream()      # non-blocking: the legacy stream does not wait on it
        builder = stream.create_graph_builder()
        builder.begin_building("relaxed")
        self._capturing = True
        AMBIENT.arena = self._arena
        ok = False
        try:
            with use_stream(int(stream.handle)):
                yield self
            ok = True
        finally:
            AMBIENT.arena = None
            self._capturing = False
            try:
                builder.end_building()
                if ok:
                    self._graph = builder.complete()
            finally:
                builder.close()
                stream.close()

    def replay(self, stream=None) -> None:
        """Launch the captured work on ``stream`` (default: the namespace's current stream)."""
        if self._graph is None:
            raise InvalidProblemError("CUDAGraph.replay: nothing captured (use capture() first)")
        from baracuda_dsl.runtime.device import cuda_core
        from baracuda_dsl.runtime.stream import stream_handle

        dev = bind_thread(self._ordinal)
        h = stream_handle(stream)
        s = dev.default_stream if h == 0 else cuda_core().Stream.from_handle(h)
        try:
            self._graph.launch(s)
        except Exception as e:  # cuda.core's CUDAError
            raise DriverError("cuGraphLaunch", str(e).splitlines()[0]) from None

    def close(self) -> None:
        """Free the graph and the arena's unused memory (waits for the device first)."""
        if self._graph is not None:
            from baracuda_dsl.runtime.stream import synchronize

            synchronize()
            self._graph.close()
            self._graph = None
        self._arena.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
