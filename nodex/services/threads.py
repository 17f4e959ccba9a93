"""
The threads of the chain (DESIGN §4): one writer thread for block import,
mining and rewinds, so that there is one writer at a time in arrival order,
and a small pool of reader threads for reads and EVM calls against an
immutable state root.  The reactor thread only routes.

Services take the two I{run} functions rather than the pools, so that unit
tests pass L{twisted.internet.defer.maybeDeferred} and run synchronously.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

T = TypeVar("T")

RunInThread = Callable[..., "Deferred[Any]"]
"""Calls C{function(*args, **kwargs)} somewhere and returns a Deferred of its result."""


class ChainThreads:
    """
    The writer thread and the reader pool of the chain service.

    @ivar writer: the one-thread pool that runs every write.
    @ivar readers: the pool that runs reads and calls.
    """

    def __init__(self, reactor: Any, readers: int = 4, name: str = "chain") -> None:
        """
        @param reactor: the reactor that results are delivered on.
        @param readers: the most reader threads.
        @param name: the prefix of the thread names.
        """
        if readers < 1:
            raise ValueError(f"the reader pool needs at least one thread, not {readers}")
        self._reactor = reactor
        self.writer = ThreadPool(1, 1, name=f"{name}-writer")
        self.readers = ThreadPool(1, readers, name=f"{name}-reader")

    def start(self) -> None:
        """
        Start both pools.
        """
        self.writer.start()
        self.readers.start()

    def stop(self) -> None:
        """
        Stop both pools, after the work already queued on them has run.
        """
        self.writer.stop()
        self.readers.stop()

    def run_writer(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run C{function} on the writer thread, after every write queued before it.
        """
        return deferToThreadPool(self._reactor, self.writer, function, *args, **kwargs)

    def run_reader(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run C{function} on a reader thread.
        """
        return deferToThreadPool(self._reactor, self.readers, function, *args, **kwargs)


__all__ = ["ChainThreads", "RunInThread"]
