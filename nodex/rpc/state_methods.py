"""
The C{eth} methods that read the world state at a block or run calls on it:
C{eth_getBalance}, C{eth_getTransactionCount}, C{eth_getStorageAt},
C{eth_getCode}, C{eth_call}, C{eth_estimateGas}, C{eth_createAccessList}
and C{eth_getProof}.

Every block parameter goes through L{nodex.rpc.blockref}: numbers, tags and
EIP-1898 objects; C{pending} is the head, except for C{eth_getCode}, one of
the five methods that refuse it (DESIGN §1).  A revert answers -32015 with
the revert payload as C{data}, whatever its shape, so that web3.py and
ethers decode reasons, custom errors and panics.
"""

from collections.abc import Callable, Iterable
from typing import Any, NoReturn, TypeVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from nodex.api.chain import IChainService
from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.errors import ExecutionRevertedError
from nodex.api.mining import IPendingBlock
from nodex.api.pool import ITransactionPool
from nodex.api.state import AccountOverride, AccountProof, CallRequest, IStateService, StateOverrides
from nodex.primitives import Address
from nodex.rpc import decoders, encoders
from nodex.rpc.blockref import header_at, require_block
from nodex.rpc.decoders import BlockSelector, BlockTag, DecodeError, Field
from nodex.rpc.errors import GETH_REVERTED, REVERTED, revert_error
from nodex.rpc.objects import access_list_object
from nodex.rpc.registry import Method, Param
from nodex.rpc.transaction_methods import TRANSACTION_FIELDS, request_call
from nodex.structures.headers import Header

T = TypeVar("T")

call_object = decoders.record(TRANSACTION_FIELDS)
"""The call object of C{eth_call} and C{eth_estimateGas} (unknown members ignored, as the reference does)."""


def call_request(value: Any) -> CallRequest:
    """
    Decode a call object into a L{CallRequest} (L{request_call}).
    """
    return request_call(call_object(value))


word_key = decoders.fixed_data(32, "storage slot")


def _slots(value: Any) -> dict[int, int]:
    """
    A C{state} or C{stateDiff} object: 32-byte slots to 32-byte values.
    """
    if not isinstance(value, dict):
        raise DecodeError("want an object of 32-byte slots to 32-byte values")
    slots = {}
    for key, item in value.items():
        try:
            slots[int.from_bytes(word_key(key), "big")] = int.from_bytes(word_key(item), "big")
        except DecodeError as exc:
            raise DecodeError(f"slot {key[:80]!r}: {exc}") from None
    return slots


account_override = decoders.record(
    {
        "balance": Field(decoders.quantity),
        "nonce": Field(decoders.uint64),
        "code": Field(decoders.data),
        "state": Field(_slots),
        "stateDiff": Field(_slots),
        "movePrecompileToAddress": Field(decoders.address),
    },
    allow_unknown=False,
)
"""One account's entry of a state override set; sizes as the specification says (balance 32 bytes, nonce 8)."""


def state_overrides(value: Any) -> StateOverrides:
    """
    The state override set: addresses to L{AccountOverride}s.
    """
    if not isinstance(value, dict):
        raise DecodeError("want an object of addresses to account overrides")
    accounts = {}
    for key, entry in value.items():
        try:
            address = decoders.address(key)
            fields = account_override(entry)
        except DecodeError as exc:
            raise DecodeError(f"account {str(key)[:44]}: {exc}") from None
        accounts[Address(address)] = AccountOverride(
            balance=fields.get("balance"),
            nonce=fields.get("nonce"),
            code=fields.get("code"),
            state=fields.get("state"),
            state_diff=fields.get("stateDiff"),
            move_precompile_to=fields.get("movePrecompileToAddress"),
        )
    return StateOverrides(accounts)


def proof_object(proof: AccountProof) -> dict[str, Any]:
    """
    The EIP-1186 proof object.
    """
    return {
        "address": encoders.data(proof.address),
        "accountProof": [encoders.data(node) for node in proof.account_proof],
        "balance": encoders.quantity(proof.balance),
        "codeHash": encoders.data(proof.code_hash),
        "nonce": encoders.quantity(proof.nonce),
        "storageHash": encoders.data(proof.storage_hash),
        "storageProof": [
            {
                "key": encoders.quantity(storage.key),
                "value": encoders.quantity(storage.value),
                "proof": [encoders.data(node) for node in storage.proof],
            }
            for storage in proof.storage_proofs
        ],
    }


def _revert_error(failure: Failure, code: int, geth_message: bool) -> NoReturn:
    """
    Turn a revert into its answer (L{revert_error}); pass any other failure on.

    @raise RPCError: the call reverted.
    """
    failure.trap(ExecutionRevertedError)
    exc = failure.value
    assert isinstance(exc, ExecutionRevertedError)
    raise revert_error(exc, code, geth_message) from exc


def access_list_result(result: Any) -> dict[str, Any]:
    """
    The C{AccessListResult} of the execution APIs: C{accessList},
    C{gasUsed} and, for a failed call, C{error}.
    """
    answer: dict[str, Any] = {
        "accessList": access_list_object(result.access_list),
        "gasUsed": hex(result.gas_used),
    }
    if result.error is not None:
        answer["error"] = result.error
    return answer


class StateMethods:
    """
    State reads and calls at any block.
    """

    def __init__(
        self,
        chain: IChainService,
        state: IStateService,
        pool: ITransactionPool | None = None,
        revert_error_code: int = REVERTED,
        pending: IPendingBlock | None = None,
        conventions: Conventions = REFERENCE_CONVENTIONS,
    ) -> None:
        """
        @param chain: resolves block parameters and knows the head.
        @param state: reads the state and runs calls.
        @param pool: counts the pending transactions of a sender for
            C{eth_getTransactionCount} at C{pending} (without it, C{pending}
            is the head).
        @param revert_error_code: the code of a revert's answer under the
            reference conventions, -32015 or geth's 3 (C{rpc.revert_error_code}).
        @param conventions: under the Ethereum conventions a revert answers
            geth's code 3 and message, whatever C{revert_error_code} says.
        @param pending: the block the miner would build now, where reads
            and calls at C{pending} run (without it, C{pending} is the head).
        """
        self._pending = pending
        self._chain = chain
        self._state = state
        self._pool = pool
        self._ethereum = conventions.ethereum
        self._revert_code = GETH_REVERTED if conventions.ethereum else revert_error_code

    def rpc_methods(self) -> Iterable[Method]:
        """
        The state methods of the C{eth} module.
        """
        address = Param("address", decoders.address)
        block = Param("block", decoders.block_selector, BlockTag.LATEST)
        call = Param("transaction", call_request)
        overrides = Param("stateOverrides", state_overrides, StateOverrides())
        return [
            Method("eth_getBalance", self.get_balance, (address, block), encoders.quantity),
            Method("eth_getTransactionCount", self.get_transaction_count, (address, block), encoders.quantity),
            Method(
                "eth_getStorageAt", self.get_storage_at,
                (address, Param("slot", decoders.quantity), block), encoders.fixed_data(32),
            ),
            Method("eth_getCode", self.get_code, (address, block), encoders.data),
            Method("eth_call", self.call, (call, block, overrides), encoders.data),
            Method("eth_estimateGas", self.estimate_gas, (call, block, overrides), encoders.quantity),
            Method("eth_createAccessList", self.create_access_list, (call, block), access_list_result),
            Method(
                "eth_getProof", self.get_proof,
                (address, Param("storageKeys", decoders.array_of(decoders.quantity, 1024)), block), proof_object,
            ),
        ]

    async def _header(self, selector: BlockSelector) -> Header:
        """
        The header a block parameter names; C{latest} is the head, known
        without a read, and C{pending} the block the miner would build now.

        @raise nodex.api.errors.BlockNotFoundError: an unknown block.
        """
        return await header_at(self._chain, selector, self._pending)

    def _header_now(self, selector: BlockSelector) -> Header | None:
        """
        The header a block parameter names if it is known at once: the head
        for C{latest} (and for C{pending} without a pending block), the
        pending block's when nothing is pending to execute (an automining
        dev chain, where hardhat-ethers estimates every transaction at
        C{pending}); L{None} when it needs a read or a build.
        """
        if selector is BlockTag.LATEST:
            return self._chain.head.header
        if selector is BlockTag.PENDING:
            pending = self._pending
            return self._chain.head.header if pending is None else pending.header_now()
        return None

    def _at(self, selector: BlockSelector, read: Callable[[Header], "Deferred[T]"]) -> "Deferred[T]":
        """
        Apply C{read} to the header a block parameter names; for the head
        and an empty pending block, at once (the hot path of wallets, dapps
        and test suites: no coroutine, no read).
        """
        header = self._header_now(selector)
        if header is not None:
            return read(header)

        async def resolved() -> T:
            """
            Resolve the block, then read.
            """
            return await read(await self._header(selector))

        return Deferred.fromCoroutine(resolved())

    def get_balance(self, address: Address, selector: BlockSelector) -> "Deferred[int]":
        """
        C{eth_getBalance}: the balance in wei at the block.
        """
        return self._at(selector, lambda header: self._state.get_balance(header, address))

    def get_transaction_count(self, address: Address, selector: BlockSelector) -> "Deferred[int]":
        """
        C{eth_getTransactionCount}: the account's nonce at the block; at
        C{pending}, the nonce its next transaction needs (the state nonce
        plus its pending transactions), what wallets ask before signing.
        """
        if selector is BlockTag.PENDING and self._pool is not None:
            return self._pool.next_nonce(address)
        return self._at(selector, lambda header: self._state.get_nonce(header, address))

    def get_storage_at(self, address: Address, slot: int, selector: BlockSelector) -> "Deferred[bytes]":
        """
        C{eth_getStorageAt}: the slot's 32-byte value (zero when absent).
        """
        return self._at(selector, lambda header: self._state.get_storage(header, address, slot)).addCallback(
            lambda value: value.to_bytes(32, "big")
        )

    async def get_code(self, address: Address, selector: BlockSelector) -> bytes:
        """
        C{eth_getCode}: the code at the block; an unknown block is -32600,
        as for every state read (the reference answers C{null} here only);
        C{pending} is refused by the reference's conventions (DESIGN §1),
        the pending block's state under the Ethereum ones.
        """
        if selector is BlockTag.LATEST:
            header = self._chain.head.header
        elif selector is BlockTag.PENDING and self._ethereum:
            header = await header_at(self._chain, selector, self._pending)
        else:
            header = (await require_block(self._chain, selector, pending_supported=False)).header
        return await self._state.get_code(header, address)

    def call(self, request: CallRequest, selector: BlockSelector, overrides: StateOverrides) -> "Deferred[bytes]":
        """
        C{eth_call}: the return data of the call on the block's state.

        @return: a Deferred firing with the return data, or failing with
            L{RPCError} -32015 (or 3) with the revert payload (or as the
            state service's C{call} fails).
        """
        return self._at(selector, lambda header: self._state.call(header, request, overrides)).addErrback(
            _revert_error, self._revert_code, self._ethereum
        )

    async def create_access_list(self, request: CallRequest, selector: BlockSelector) -> Any:
        """
        C{eth_createAccessList}: the access list the call would want and the
        gas it uses with it; a failed call's error is in the answer, not an
        RPC error (geth's behaviour).
        """
        header = await self._header(selector)
        return await self._state.create_access_list(header, request, StateOverrides())

    def estimate_gas(self, request: CallRequest, selector: BlockSelector, overrides: StateOverrides) -> "Deferred[int]":
        """
        C{eth_estimateGas}: the least gas with which the call succeeds.

        @return: a Deferred firing with the gas, or failing with
            L{RPCError} -32015 (or 3) with the revert payload (or as the
            state service's C{estimate_gas} fails).
        """
        return self._at(selector, lambda header: self._state.estimate_gas(header, request, overrides)).addErrback(
            _revert_error, self._revert_code, self._ethereum
        )

    async def get_proof(self, address: Address, keys: list[int], selector: BlockSelector) -> AccountProof:
        """
        C{eth_getProof}: the EIP-1186 proof of the account and the slots.
        """
        return await self._state.get_proof(await self._header(selector), address, keys)


__all__ = [
    "GETH_REVERTED", "REVERTED", "StateMethods", "access_list_result", "call_request", "proof_object", "state_overrides",
]
