"""
End-to-end tests with web3.py's C{AsyncWeb3} over WebSocket (issue 27):
transactions from the node's accounts, revert reasons, custom errors and
panics, and the C{newHeads} and C{logs} subscriptions.

Under the Ethereum conventions every check passes; under the default ones
every check passes except the two that read a revert reason: web3.py 8
keeps the reason only for geth's code 3 (C{docs/compatibility.md}).

web3.py's asyncio client runs in a thread of its own with its own event
loop, while the node runs on the test's reactor.
"""

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest

from tests.e2e.toolsuite import CONTRACTS, BothConventions, ToolSuiteTestCase

try:
    from web3 import AsyncWeb3, WebSocketProvider
    from web3.exceptions import ContractCustomError, ContractLogicError, ContractPanicError
except ImportError:  # pragma: no cover - the test extra is missing
    AsyncWeb3 = None

COW = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"
COW1 = "0x7986b3DF570230288501EEa3D890bd66948C9B79"

REFERENCE_DIFFERENCES = {"eth_call revert reason", "estimate_gas revert reason"}
"""The checks that depend on a convention difference (docs/compatibility.md)."""


def artifact(name: str) -> dict[str, Any]:
    """
    A compiled test contract.
    """
    return json.loads((Path(CONTRACTS) / f"{name}.json").read_text())


async def _deploy(w3: Any, name: str) -> Any:
    """
    Deploy a test contract from the first node-held account; the contract.
    """
    compiled = artifact(name)
    factory = w3.eth.contract(abi=compiled["abi"], bytecode=compiled["bytecode"])
    tx_hash = await factory.constructor().transact({"from": COW})
    receipt = await w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30, poll_latency=0.05)
    assert receipt["status"] == 1, receipt
    return w3.eth.contract(address=receipt["contractAddress"], abi=compiled["abi"])


async def _first_notification(w3: Any, kind: str, arguments: Any, act: Callable[[], Awaitable[Any]]) -> Any:
    """
    Subscribe, do C{act}, and return the first notification (within 20 s).
    """
    subscription = await w3.eth.subscribe(kind, arguments) if arguments else await w3.eth.subscribe(kind)
    try:
        await act()

        async def first() -> Any:
            async for response in w3.socket.process_subscriptions():
                return response["result"]

        return await asyncio.wait_for(first(), 20)
    finally:
        await w3.eth.unsubscribe(subscription)


async def flow(url: str) -> dict[str, str]:
    """
    Every check against the node at the WebSocket C{url}: "ok" or the error.
    """
    checks: dict[str, str] = {}

    async def check(name: str, body: Callable[[], Awaitable[None]]) -> None:
        try:
            await body()
            checks[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - each check reports its own failure
            checks[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"

    async with AsyncWeb3(WebSocketProvider(url)) as w3:
        reverter: Any = None
        events: Any = None

        async def identity() -> None:
            assert await w3.eth.chain_id == 33
            assert COW in await w3.eth.accounts
            assert await w3.eth.get_balance(COW) > 0

        async def deploy() -> None:
            nonlocal reverter, events
            reverter = await _deploy(w3, "Reverter")
            events = await _deploy(w3, "Events")

        async def transact() -> None:
            before = await reverter.functions.counter().call()
            tx_hash = await reverter.functions.increment().transact({"from": COW})
            receipt = await w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30, poll_latency=0.05)
            assert receipt["status"] == 1
            assert await reverter.functions.counter().call() == before + 1

        async def call_reason() -> None:
            try:
                await reverter.functions.revertWithReason().call()
            except ContractLogicError as exc:
                assert "Reverter: always fails" in str(exc), str(exc)
            else:
                raise AssertionError("no revert")

        async def estimate_reason() -> None:
            try:
                await reverter.functions.requirePositive(0).estimate_gas({"from": COW})
            except ContractLogicError as exc:
                assert "value must be positive" in str(exc), str(exc)
            else:
                raise AssertionError("no revert")

        async def custom_error() -> None:
            try:
                await reverter.functions.revertWithCustomError().call()
            except ContractCustomError as exc:
                assert exc.data is not None
            else:
                raise AssertionError("no revert")

        async def panic() -> None:
            try:
                await reverter.functions.divide(1, 0).call()
            except ContractPanicError as exc:
                assert "Division by zero" in str(exc), str(exc)
            else:
                raise AssertionError("no revert")

        async def new_heads() -> None:
            number = await w3.eth.block_number

            async def send() -> None:
                await w3.eth.send_transaction({"from": COW, "to": COW1, "value": 1})

            head = await _first_notification(w3, "newHeads", None, send)
            assert head["number"] == number + 1, head

        async def logs() -> None:
            async def emit() -> None:
                await events.functions.emitOneIndexed(7).transact({"from": COW})

            log = await _first_notification(w3, "logs", {"address": events.address}, emit)
            assert log["address"] == events.address, log
            assert int.from_bytes(bytes(log["data"]), "big") == 7, log

        await check("identity and accounts", identity)
        await check("deploy from a node-held account", deploy)
        await check("transact and call", transact)
        await check("eth_call revert reason", call_reason)
        await check("estimate_gas revert reason", estimate_reason)
        await check("custom error", custom_error)
        await check("panic", panic)
        await check("newHeads subscription", new_heads)
        await check("logs subscription", logs)
    return checks


class AsyncWeb3Tests(BothConventions, ToolSuiteTestCase):
    """
    web3.py's C{AsyncWeb3} over WebSocket, under each set of conventions.
    """

    reference_failing = frozenset(REFERENCE_DIFFERENCES)

    async def checks(self, *argv: str) -> dict[str, str]:
        """
        Start a node with C{argv} and run the checks against its WebSocket.
        """
        if AsyncWeb3 is None:
            raise SkipTest("web3.py (the test extra) is not installed")
        await self.start_node(*argv)
        return await deferToThread(asyncio.run, flow(self.ws_url))
