"""
Tests for L{nodex.p2p.inbound}: the known-hash sets and the work lane of a connection.
"""

from twisted.internet.defer import Deferred
from twisted.trial.unittest import SynchronousTestCase

from nodex.p2p.inbound import KnownSet, WorkLane


class KnownSetTests(SynchronousTestCase):
    """
    A bounded set that tells what the peer sent from what it was sent.
    """

    def test_repeat_and_echo(self) -> None:
        """
        An entry this node sent is no repeat when the peer sends it; one the peer sent before is.
        """
        known = KnownSet(4)
        known.add(b"sent")
        self.assertFalse(known.note_received(b"sent"))
        self.assertTrue(known.note_received(b"sent"))
        self.assertFalse(known.note_received(b"new"))
        known.add(b"new")
        self.assertTrue(known.note_received(b"new"))

    def test_bounded(self) -> None:
        """
        The oldest entry leaves first.
        """
        known = KnownSet(2)
        for entry in (b"a", b"b", b"c"):
            known.add(entry)
        self.assertEqual((b"a" in known, b"b" in known, b"c" in known, len(known)), (False, True, True, 2))


class WorkLaneTests(SynchronousTestCase):
    """
    One connection's work runs one item at a time, in order.
    """

    def test_one_at_a_time(self) -> None:
        """
        The second work starts when the first is done; each submission's
        Deferred fires with its work's result.
        """
        lane = WorkLane()
        started: list[str] = []
        gates = {name: Deferred() for name in ("first", "second")}

        def work(name: str) -> "Deferred[str]":
            started.append(name)
            return gates[name].addCallback(lambda _: name)

        first, second = lane.submit(lambda: work("first")), lane.submit(lambda: work("second"))
        self.assertEqual((started, len(lane)), (["first"], 2))
        gates["first"].callback(None)
        self.assertEqual(self.successResultOf(first), "first")
        self.assertEqual(started, ["first", "second"])
        gates["second"].callback(None)
        self.assertEqual((self.successResultOf(second), len(lane)), ("second", 0))

    def test_many_done_at_once(self) -> None:
        """
        Work that finishes at once does not nest: thousands run in a loop.
        """
        lane = WorkLane()
        done = [lane.submit(lambda: _finished()) for _ in range(5000)]
        self.assertEqual(len([d for d in done if d.called]), 5000)

    def test_failure_passed_on(self) -> None:
        """
        A failing work fails its Deferred; the next still runs.
        """
        lane = WorkLane()

        async def broken() -> None:
            raise ValueError("broken")

        failed = lane.submit(broken)
        after = lane.submit(lambda: _finished())
        self.failureResultOf(failed, ValueError)
        self.assertIsNone(self.successResultOf(after))

    def test_close_drops_waiting(self) -> None:
        """
        Closing the lane (the peer went away) drops the work still waiting; nothing new runs.
        """
        lane = WorkLane()
        gate: Deferred[None] = Deferred()
        ran: list[int] = []
        lane.submit(lambda: gate)
        waiting = lane.submit(lambda: _finished(ran.append(1)))
        lane.close()
        self.assertIsNone(self.successResultOf(waiting))
        self.assertIsNone(self.successResultOf(lane.submit(lambda: _finished(ran.append(2)))))
        gate.callback(None)
        self.assertEqual(ran, [])


def _finished(_: object = None) -> "Deferred[None]":
    done: Deferred[None] = Deferred()
    done.callback(None)
    return done
