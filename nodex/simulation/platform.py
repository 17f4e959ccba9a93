"""
What a simulated node is built on: the composition root's L{Platform}
with memory stores that outlive the node (its "disk"), threads on
simulated time, the simulated network's endpoints, seeded randomness and
the simulated network's chain rules.
"""

import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from nodex.chain.rules import ChainRules
from nodex.config import NodeConfig
from nodex.db.errors import StoreError
from nodex.db.kv import KeyValueStore, WriteBatch
from nodex.db.memory import MemoryStore
from nodex.simulation.network import SimulatedHost
from nodex.simulation.threads import SimulatedSerialThread, SimulatedThreadPool
from nodex.node import Platform

WRITER = "chain-writer"
"""The name the composition root gives the chain's writer thread."""


class KeptStore:
    """
    One run's view of a node's memory store.  Closing it (the node
    stopped) or fencing it (the node crashed) keeps the data for the next
    start, as a database on disk keeps it; until then this view refuses
    every use, as a closed database does.
    """

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._open = True

    def _check(self) -> MemoryStore:
        if not self._open:
            raise StoreError("the store is closed")
        return self._store

    def get(self, column: str, key: bytes) -> bytes | None:
        """
        See L{KeyValueStore.get}.
        """
        return self._check().get(column, key)

    def batch(self) -> WriteBatch:
        """
        See L{KeyValueStore.batch}.
        """
        return self._check().batch()

    def write(self, batch: WriteBatch) -> None:
        """
        See L{KeyValueStore.write}.
        """
        self._check().write(batch)

    def iterate(self, column: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """
        See L{KeyValueStore.iterate}.
        """
        return self._check().iterate(column, prefix)

    def close(self) -> None:
        """
        Close this view; the data stays.
        """
        self._open = False


class SimulatedPlatform(Platform):
    """
    The platform of one simulated node (one machine: it outlives the node's
    restarts, and keeps its stores across them).
    """

    def __init__(
        self,
        host: SimulatedHost,
        seed: str,
        drift_limit: int | None,
        writer_job_seconds: float = 0.0,
    ) -> None:
        """
        @param host: the node's machine on the simulated network.
        @param seed: the seed of the node's randomness (challenges, ping nonces).
        @param drift_limit: the drift limit of the simulated network's
            rules (seconds a block may be ahead of the clock; L{None}: none).
        @param writer_job_seconds: the simulated time each job of the chain's
            writer takes.
        """
        self.host = host
        self.disk: dict[str, MemoryStore] = {}
        self._rng = random.Random(seed)
        self._drift_limit = drift_limit
        self._writer_job_seconds = writer_job_seconds
        self._opened: list[KeptStore] = []
        self.writers: list[SimulatedSerialThread] = []

    def open_store(self, path: Path, database_files: int = 0) -> KeyValueStore:
        """
        The node's memory store at C{path}, made on the first start (a
        memory store opens no files: C{database_files} does not apply).
        """
        store = self.disk.get(str(path))
        if store is None:
            store = self.disk[str(path)] = MemoryStore()
        kept = KeptStore(store)
        self._opened = [view for view in self._opened if view._open] + [kept]
        return kept

    def serial_thread(self, reactor: Any, name: str) -> Any:
        """
        A serial thread on simulated time; the chain's writer's jobs take
        the configured time.
        """
        thread = SimulatedSerialThread(reactor, name, self._writer_job_seconds if name == WRITER else 0.0)
        if name == WRITER:
            self.writers.append(thread)
        return thread

    def thread_pool(self, reactor: Any, minimum: int, maximum: int, name: str) -> Any:
        """
        A pool whose jobs run at once, their results delivered on a later turn.
        """
        return SimulatedThreadPool(name)

    def server_endpoint(self, reactor: Any, description: str) -> Any:
        """
        The node's machine listening on the described TCP port.
        """
        return self.host.server_endpoint(description)

    def peer_connector(self, reactor: Any, tls: bool, ca_certificate: str) -> Callable[[str, int], Any]:
        """
        Dials from the node's machine (plain TCP: TLS wraps the stream above
        the transport, which the simulation does not model).

        @raise ValueError: TLS was asked for.
        """
        if tls:
            raise ValueError("the simulated network carries plain TCP; set p2p.tls = false")
        return self.host.client_endpoint

    def entropy(self, size: int) -> bytes:
        """
        C{size} bytes of the node's seeded randomness.
        """
        return self._rng.randbytes(size)

    def chain_rules(self, config: NodeConfig) -> ChainRules:
        """
        The configured network's rules with the simulated network's drift limit.
        """
        return replace(super().chain_rules(config), max_seconds_in_future=self._drift_limit)

    def fence(self) -> None:
        """
        The node crashed: the stores it held refuse any further use (their data stays).
        """
        for view in self._opened:
            view.close()
        self._opened = []


__all__ = ["KeptStore", "SimulatedPlatform", "WRITER"]
