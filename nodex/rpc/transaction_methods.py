"""
The C{eth} methods that send transactions and describe the node's own
accounts and mining: C{eth_sendRawTransaction}, C{eth_sendTransaction},
C{eth_pendingTransactions}, C{eth_accounts}, C{eth_coinbase},
C{eth_mining} and C{eth_gasPrice} (reference §3.3), and
C{eth_maxPriorityFeePerGas}, which web3 libraries ask before sending a
type 2 transaction.

A transaction accepted in the miner's C{auto} mode is mined before the
answer: the pool fires only once its observers (the miner) are done.
"""

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from twisted.internet.defer import Deferred, DeferredLock

from nodex.api.accounts import IAccounts
from nodex.api.chain import IChainService
from nodex.api.devchain import IImpersonation
from nodex.api.errors import ExecutionRevertedError, TransactionRejectedError
from nodex.api.mining import IMiner, IWorkService
from nodex.api.pool import ITransactionPool
from nodex.api.state import CallRequest
from nodex.primitives import ZERO_ADDRESS, Address, Hash32
from nodex.rpc import decoders, encoders
from nodex.rpc.decoders import DecodeError, Field
from nodex.rpc.errors import GETH_REVERTED, InvalidParamsError, revert_error
from nodex.rpc.objects import pending_transaction_object
from nodex.rpc.registry import Method, Param
from nodex.structures.errors import InvalidSignatureError, InvalidTransactionError, RLPError
from nodex.structures.transactions import (
    ACCESS_LIST_TX_TYPE,
    FEE_MARKET_TX_TYPE,
    LEGACY_TX_TYPE,
    REFUSED_TX_TYPES,
    AccessList,
    AccessListEntry,
    AccessListTransaction,
    FeeMarketTransaction,
    LegacyTransaction,
    Transaction,
    decode_transaction,
    impersonate,
)

DEFAULT_GAS = 90000
"""The gas of an C{eth_sendTransaction} request that names none (the specification's default)."""

GAS_PRICE_MULTIPLIER_PERCENT = 110
"""C{eth_gasPrice} answers the head's minimum gas price times 1.1 (reference §3.3)."""


def _access_list_entry(value: Any) -> AccessListEntry:
    """
    One access-list entry: C{{"address": ..., "storageKeys": [...]}}.
    """
    fields = decoders.record(
        {"address": Field(decoders.address, required=True), "storageKeys": Field(decoders.array_of(decoders.hash32))},
        allow_unknown=False,
    )(value)
    return AccessListEntry(fields["address"], tuple(fields.get("storageKeys", ())))


def access_list(value: Any) -> AccessList:
    """
    An EIP-2930 access list.
    """
    return tuple(decoders.array_of(_access_list_entry)(value))


def transaction_type(value: Any) -> int:
    """
    The C{type} of a transaction request: 0, 1 or 2.
    """
    kind = decoders.uint64(value)
    if kind in REFUSED_TX_TYPES:
        raise DecodeError(f"transaction type {kind} ({REFUSED_TX_TYPES[kind]}) is not supported by this chain")
    if kind not in (LEGACY_TX_TYPE, ACCESS_LIST_TX_TYPE, FEE_MARKET_TX_TYPE):
        raise DecodeError(f"unknown transaction type {kind}")
    return kind


TRANSACTION_FIELDS: dict[str, Field[Any]] = {
    "from": Field(decoders.address),
    "to": Field(decoders.address),
    "gas": Field(decoders.uint64),
    "gasLimit": Field(decoders.uint64),
    "gasPrice": Field(decoders.quantity),
    "maxFeePerGas": Field(decoders.quantity),
    "maxPriorityFeePerGas": Field(decoders.quantity),
    "value": Field(decoders.quantity),
    "data": Field(decoders.data),
    "input": Field(decoders.data),
    "nonce": Field(decoders.uint64),
    "chainId": Field(decoders.quantity),
    "accessList": Field(access_list),
    "type": Field(decoders.uint64),
}
"""
The members of a transaction object (reference §2.2 plus the fee-market and
access-list members), shared by C{eth_sendTransaction} and the call object of
C{eth_call}/C{eth_estimateGas}.
"""

transaction_request = decoders.record(
    {
        **TRANSACTION_FIELDS,
        "from": Field(decoders.address, required=True),
        "type": Field(transaction_type),
    }
)
"""The transaction object of C{eth_sendTransaction} (JSON C{null} = absent; unknown members ignored)."""


def build_unsigned(request: dict[str, Any], chain_id: int, nonce: int) -> Transaction:
    """
    The unsigned transaction a request describes, with the defaults of the
    specification: gas 90000, gas price 0, value 0, empty data.  It is a
    fee-market transaction (type 2) when fee caps are given, an access-list
    transaction (type 1) when an access list is, and an EIP-155 legacy one
    otherwise; an explicit C{type} decides.  A fee-market request that gives
    only one fee cap uses it for both.

    @raise InvalidParamsError: a C{chainId} other than this chain's, or
        fields that contradict the C{type}.
    """
    asked_chain = request.get("chainId")
    if asked_chain is not None and asked_chain != chain_id:
        raise InvalidParamsError(f"Invalid chainId: {asked_chain}")
    kind = request.get("type")
    if kind is None:
        if "maxFeePerGas" in request or "maxPriorityFeePerGas" in request:
            kind = FEE_MARKET_TX_TYPE
        elif "accessList" in request:
            kind = ACCESS_LIST_TX_TYPE
        else:
            kind = LEGACY_TX_TYPE
    if kind != FEE_MARKET_TX_TYPE and ("maxFeePerGas" in request or "maxPriorityFeePerGas" in request):
        raise InvalidParamsError("maxFeePerGas and maxPriorityFeePerGas need a type 2 transaction")
    if kind == LEGACY_TX_TYPE and "accessList" in request:
        raise InvalidParamsError("accessList needs a type 1 or type 2 transaction")
    gas = request.get("gas", request.get("gasLimit", DEFAULT_GAS))
    to = request.get("to", b"")
    value = request.get("value", 0)
    data = request.get("input", request.get("data", b""))
    if kind == LEGACY_TX_TYPE:
        return LegacyTransaction(nonce, request.get("gasPrice", 0), gas, to, value, data)
    entries = request.get("accessList", ())
    if kind == ACCESS_LIST_TX_TYPE:
        return AccessListTransaction(chain_id, nonce, request.get("gasPrice", 0), gas, to, value, data, entries)
    max_fee = request.get("maxFeePerGas", request.get("maxPriorityFeePerGas", request.get("gasPrice", 0)))
    priority = request.get("maxPriorityFeePerGas", max_fee)
    return FeeMarketTransaction(chain_id, nonce, priority, max_fee, gas, to, value, data, entries)


def request_call(fields: dict[str, Any]) -> CallRequest:
    """
    The L{CallRequest} of decoded call or transaction fields: C{input} wins
    over C{data}, C{gas} over C{gasLimit}; with fee caps the price is the
    lesser of the two (the base fee is always zero).

    @raise DecodeError: both C{gasPrice} and a fee cap.
    """
    price = fields.get("gasPrice", 0)
    if "maxFeePerGas" in fields or "maxPriorityFeePerGas" in fields:
        if "gasPrice" in fields:
            raise DecodeError("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified")
        max_fee = fields.get("maxFeePerGas", fields.get("maxPriorityFeePerGas", 0))
        price = min(max_fee, fields.get("maxPriorityFeePerGas", max_fee))
    return CallRequest(
        sender=fields.get("from", ZERO_ADDRESS),
        to=fields.get("to"),
        data=fields.get("input", fields.get("data", b"")),
        value=fields.get("value", 0),
        gas=fields.get("gas", fields.get("gasLimit")),
        gas_price=price,
        access_list=fields.get("accessList", ()),
    )


GasEstimator = Callable[[CallRequest], Awaitable[int]]
"""Estimates the gas of a transaction request at the next block (C{eth_estimateGas} at C{pending})."""


class TransactionSending:
    """
    What C{eth_sendTransaction}, C{personal_sendTransaction} and
    C{eth_signTransaction} share: the defaults of a request and one nonce
    per transaction of a sender.

    A sender's sends that leave the nonce to the node run one at a time,
    from choosing the nonce to the pool's answer (as geth locks each
    sender's address): two sent at once would otherwise both be given the
    nonce the pool reports before either is pooled (issue 27: Hardhat
    fixtures send with C{Promise.all}).  The locks exist only while a send
    from their sender is running.
    """

    def __init__(self, pool: ITransactionPool, chain_id: int, estimate_gas: GasEstimator | None = None) -> None:
        """
        @param pool: gives a sender's next nonce and takes the transactions.
        @param chain_id: the chain the transactions are signed for.
        @param estimate_gas: under the Ethereum conventions, the gas of a
            request that names none, as Anvil estimates it; L{None} for the
            specification's default of L{DEFAULT_GAS}.
        """
        self._pool = pool
        self._chain_id = chain_id
        self._estimate_gas = estimate_gas
        self._locks: dict[Address, tuple[DeferredLock, int]] = {}

    async def unsigned(self, request: dict[str, Any], nonce: int | None = None) -> Transaction:
        """
        The request with its defaults: the sender's pending nonce (or
        C{nonce}), and its gas.

        @raise InvalidParamsError: see L{build_unsigned}.
        """
        if nonce is None:
            nonce = request.get("nonce")
        if nonce is None:
            nonce = await self._pool.next_nonce(request["from"])
        if self._estimate_gas is not None and "gas" not in request and "gasLimit" not in request:
            try:
                gas = await self._estimate_gas(request_call(request))
            except ExecutionRevertedError as exc:
                # The estimate is the Ethereum conventions' only: geth's answer.
                raise revert_error(exc, GETH_REVERTED, geth_message=True) from exc
            request = {**request, "gas": gas}
        return build_unsigned(request, self._chain_id, nonce)

    async def send(
        self, request: dict[str, Any], sign: Callable[[Transaction], Awaitable[Transaction]]
    ) -> Hash32:
        """
        Fill in the request's defaults, sign it with C{sign} and hand it to
        the pool, one send at a time per sender when the node chooses the
        nonce.

        @return: the transaction's hash, once the pool has it (in C{auto}
            mode, once it is mined).
        """
        if request.get("nonce") is not None:
            return await self._pool.add(await sign(await self.unsigned(request)))
        sender: Address = request["from"]
        lock, users = self._locks.get(sender, (None, 0))
        if lock is None:
            lock = DeferredLock()
        self._locks[sender] = (lock, users + 1)
        await lock.acquire()
        try:
            return await self._pool.add(await sign(await self.unsigned(request)))
        finally:
            lock.release()
            lock, users = self._locks[sender]
            if users == 1:
                del self._locks[sender]
            else:
                self._locks[sender] = (lock, users - 1)


def raw_transaction(raw: bytes) -> Transaction:
    """
    Decode the raw transaction of C{eth_sendRawTransaction}.

    @raise InvalidParamsError: the bytes are no transaction, or one of a
        refused type.
    @raise TransactionRejectedError: the signature values are malformed
        (answered -32010, like the pool's own signature checks).
    """
    try:
        return decode_transaction(raw)
    except InvalidSignatureError as exc:
        raise TransactionRejectedError(str(exc)) from None
    except (RLPError, InvalidTransactionError) as exc:
        raise InvalidParamsError(f"invalid argument 0: {exc}") from None


class TransactionMethods:
    """
    Sending transactions, the node's accounts, and what it mines with.
    """

    def __init__(
        self,
        chain: IChainService,
        pool: ITransactionPool,
        accounts: IAccounts,
        miner: IMiner,
        work: IWorkService | None = None,
        impersonation: IImpersonation | None = None,
        sending: TransactionSending | None = None,
    ) -> None:
        """
        @param chain: gives the chain id and the head's minimum gas price.
        @param pool: takes the transactions.
        @param accounts: signs C{eth_sendTransaction} requests.
        @param miner: the coinbase and whether the node mines.
        @param work: the work service, whose built-in CPU miner also counts as mining.
        @param impersonation: on a dev chain, the impersonated accounts
            (C{hardhat_impersonateAccount}): their requests are sent without
            a key, with the impersonation marker, and C{eth_accounts} lists
            them after the wallet's.
        @param sending: the request defaults and the senders' locks, shared
            with C{personal_sendTransaction} (a new one when L{None}).
        """
        self._sending = sending if sending is not None else TransactionSending(pool, chain.chain_id)
        self._work = work
        self._impersonation = impersonation
        self._chain = chain
        self._pool = pool
        self._accounts = accounts
        self._miner = miner

    def rpc_methods(self) -> Iterable[Method]:
        """
        The sending and account methods of the C{eth} module.
        """
        return [
            Method("eth_sendRawTransaction", self.send_raw_transaction, (Param("data", decoders.data),), encoders.hash32),
            Method(
                "eth_sendTransaction", self.send_transaction, (Param("transaction", transaction_request),), encoders.hash32
            ),
            Method("eth_pendingTransactions", self.pending_transactions, ()),
            Method("eth_accounts", self.accounts, (), encoders.array_of(encoders.address)),
            Method("eth_coinbase", self.coinbase, (), encoders.address),
            Method("eth_mining", self.mining, ()),
            Method("eth_gasPrice", self.gas_price, (), encoders.quantity),
            Method("eth_maxPriorityFeePerGas", self.gas_price, (), encoders.quantity),
        ]

    def send_raw_transaction(self, raw: bytes) -> "Deferred[Hash32]":
        """
        Decode a signed transaction and hand it to the pool.

        @return: the pool's Deferred, firing with the hash.
        """
        return self._pool.add(raw_transaction(raw))

    async def send_transaction(self, request: dict[str, Any]) -> Hash32:
        """
        Fill in the defaults of a transaction request, sign it with an
        unlocked account and hand it to the pool; on a dev chain, send it
        from an impersonated account whose key the node does not hold
        with the impersonation marker instead of a signature.
        """
        sender: Address = request["from"]
        impersonation = self._impersonation
        if impersonation is not None and impersonation.is_impersonated(sender) and not self._accounts.holds(sender):
            chain_id = self._chain.chain_id

            async def sign(unsigned: Transaction) -> Transaction:
                return impersonate(unsigned, sender, chain_id)

            return await self._sending.send(request, sign)
        return await self._sending.send(request, lambda unsigned: self._accounts.sign_transaction(unsigned, sender))

    def pending_transactions(self) -> list[dict[str, Any]]:
        """
        The pooled transactions sent from the node's own accounts.
        """
        own = set(self._accounts.addresses())
        pooled = self._pool.pending() + self._pool.queued()
        return [pending_transaction_object(tx) for tx in pooled if tx.sender in own]

    def accounts(self) -> list[Address]:
        """
        The wallet's accounts, then (on a dev chain, as Anvil answers) the
        accounts impersonated one by one, which ethers' C{getSigner} looks for.
        """
        held = self._accounts.addresses()
        if self._impersonation is None:
            return held
        known = set(held)
        return held + [address for address in self._impersonation.addresses() if address not in known]

    def coinbase(self) -> bytes:
        """
        The address the miner credits, when the node mines (a mining mode
        other than C{off}, or the built-in CPU miner); 20 zero bytes on a
        node that does not mine, as the reference answers with its miner off.
        """
        cpu_mining = self._work is not None and self._work.is_cpu_mining()
        if self._miner.mode == "off" and not cpu_mining:
            return b"\x00" * 20
        return bytes(self._miner.coinbase)

    def mining(self) -> bool:
        """
        Whether the node produces blocks without being asked (the miner in
        C{auto} or C{interval} mode, or the built-in CPU miner).
        """
        cpu_mining = self._work is not None and self._work.is_cpu_mining()
        return bool(self._miner.is_mining) or cpu_mining

    def gas_price(self) -> int:
        """
        The head's minimum gas price times 1.1, truncated; also the
        suggested priority fee (C{eth_maxPriorityFeePerGas}), since the base
        fee is always zero.
        """
        return self._chain.head.header.minimum_gas_price * GAS_PRICE_MULTIPLIER_PERCENT // 100


__all__ = [
    "DEFAULT_GAS",
    "TRANSACTION_FIELDS",
    "GasEstimator",
    "TransactionMethods",
    "TransactionSending",
    "access_list",
    "build_unsigned",
    "raw_transaction",
    "request_call",
    "transaction_request",
]
