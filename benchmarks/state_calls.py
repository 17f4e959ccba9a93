"""
State and logs benchmark (issue 6).

Through the real node's JSON-RPC over keep-alive HTTP (the node in its own
process pinned to core 0 with C{taskset -c 0}; C{wrk} on core 1 so that the
load generator is not the bottleneck):

  - C{eth_getBalance} requests/s with 1 and 8 connections;
  - C{eth_call} of the ERC-20 C{balanceOf} (C{benchmarks/contracts/Token.json},
    deployed through C{eth_sendTransaction}) requests/s with 1 and 8
    connections: the same call repeated (answered from the state service's
    cache of calls after the first) and a different holder in every request
    (each one run by the EVM);
  - a batch of 100 C{eth_getBalance} requests, batches/s with 1 connection;
  - a compute-heavy C{eth_call}: the EVM benchmark's hand-assembled loop
    (C{COMPUTE_PROGRAM} of C{benchmarks/evm.py}) put at an address by a
    state override, in Mgas/s (gas from the same call run in-process).

In-process, through the JSON-RPC dispatcher (decoding, search, encoding; no
HTTP) over a RocksDB store of synthetic blocks, each with five ERC-20
C{Transfer} logs between random holders: C{eth_getLogs} by topic over
10,000 blocks, over the last 2,000 (200 matches either way), and, with
C{--big}, over 100,000 blocks matching a handful.

Usage::

    python benchmarks/state_calls.py [--seconds 5] [--skip-http] [--skip-logs] [--big]
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPOSITORY = BENCHMARKS.parent
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(BENCHMARKS))

COW = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
TRANSFER = bytes.fromhex("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")


def rpc(url: str, method: str, *params: Any) -> Any:
    """
    One JSON-RPC request; the result, or an exception with the error.
    """
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer = json.loads(response.read())
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def start_node(datadir: str) -> tuple[subprocess.Popen[str], str]:
    """
    Start a regtest node pinned to core 0 (batches of up to 100 requests
    allowed, regtest's limit being 50); return the process and its URL.
    """
    from tests.e2e.test_state_e2e import NODE_SCRIPT

    process = subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, "-c", NODE_SCRIPT, datadir, json.dumps({"rpc": {"max_batch": 100}})],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        raise SystemExit(f"the node did not start: {line!r}")
    return process, f"http://127.0.0.1:{int(line.split()[1])}/"


def deploy_token(url: str) -> str:
    """
    Deploy the benchmark ERC-20 from the first dev account; return its address.
    """
    from evm import token_constructor_data

    data = "0x" + token_constructor_data(10**24).hex()
    tx_hash = rpc(url, "eth_sendTransaction", {"from": COW, "data": data, "gas": hex(3_000_000)})
    for _ in range(100):
        receipt = rpc(url, "eth_getTransactionReceipt", tx_hash)
        if receipt is not None:
            return receipt["contractAddress"]
        time.sleep(0.1)
    raise SystemExit("the token was not mined")


def balance_of_script(token: str) -> str:
    """
    A wrk script whose every request asks C{balanceOf} of another holder,
    so that no answer is the same as an earlier one (the state service
    keeps the answers of repeated calls).
    """
    return f"""
wrk.method = 'POST'
wrk.headers['Content-Type'] = 'application/json'
counter = 0
request = function()
  counter = counter + 1
  local data = '0x70a08231' .. string.format('%064x', counter)
  local body = '{{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{{"to":"{token}","data":"' .. data .. '"}},"latest"]}}'
  return wrk.format(nil, nil, nil, body)
end
"""


def wrk(url: str, body: str, connections: int, seconds: int, lua: str | None = None) -> tuple[float, float]:
    """
    Run wrk on core 1 with one POST body (or a whole Lua script); return
    requests/s and the mean latency in ms.
    """
    script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    escaped = body.replace("\\", "\\\\").replace("'", "\\'")
    if lua is None:
        lua = f"wrk.method = 'POST'\nwrk.body = '{escaped}'\nwrk.headers['Content-Type'] = 'application/json'\n"
    script.write(lua)
    script.close()
    threads = min(connections, 2)
    output = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s",
         "-s", script.name, "--latency", url],
        capture_output=True, text=True, check=True,
    ).stdout
    os.unlink(script.name)
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    latency = re.search(r"Latency\s+([\d.]+)(us|ms|s)", output)
    assert latency is not None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[latency.group(2)]
    if "Non-2xx" in output or "Socket errors" in output:
        print("  wrk reported errors:\n" + output, file=sys.stderr)
    return rate, float(latency.group(1)) * scale


def request_body(method: str, *params: Any) -> str:
    """
    The JSON of one request.
    """
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})


def compute_gas(code: bytes, calldata: bytes) -> int:
    """
    The gas of the compute call, from the same call run in-process.
    """
    from nodex.chain.execution import run_call
    from nodex.db.memory import MemoryStore
    from nodex.evm.environment import BlockEnvironment
    from nodex.primitives import Address
    from nodex.state.state import State

    state = State.from_store(MemoryStore())
    target = Address(b"\x00" * 18 + b"\xc0\xde")
    state.set_code(target, code)
    block = BlockEnvironment(Address(bytes(20)), 1, 1, 30_000_000)
    result = run_call(state, block, Address(bytes.fromhex(COW[2:])), target, calldata, gas=50_000_000)
    assert result.success, result.error
    return result.gas_used


def http_benchmarks(seconds: int) -> None:
    """
    The request-rate and compute figures through the real node.
    """
    datadir = tempfile.mkdtemp(prefix="nodex-bench-")
    process, url = start_node(datadir)
    try:
        token = deploy_token(url)
        balance = request_body("eth_getBalance", COW, "latest")
        selector = "0x70a08231" + "00" * 12 + COW[2:]
        balance_of = request_body("eth_call", {"to": token, "data": selector}, "latest")
        assert int(rpc(url, "eth_call", {"to": token, "data": selector}, "latest"), 16) == 10**24
        batch = json.dumps([
            {"jsonrpc": "2.0", "id": index, "method": "eth_getBalance", "params": [COW, "latest"]} for index in range(100)
        ])
        distinct = balance_of_script(token)
        for name, body, lua, connection_counts in (
            ("eth_chainId (no thread, baseline)", request_body("eth_chainId"), None, (1,)),
            ("eth_getBalance", balance, None, (1, 8)),
            ("eth_call balanceOf (repeated)", balance_of, None, (1, 8)),
            ("eth_call balanceOf (distinct)", "", distinct, (1, 8)),
            ("batch of 100 eth_getBalance", batch, None, (1,)),
        ):
            for connections in connection_counts:
                rate, latency = wrk(url, body, connections, seconds, lua)
                print(f"{name:34s} {connections} conn: {rate:9.1f} /s   mean latency {latency:.2f} ms", flush=True)
        from evm import COMPUTE_PROGRAM, assemble, word

        code = assemble(COMPUTE_PROGRAM)
        iterations = 20_000
        calldata = word(iterations)
        gas = compute_gas(code, calldata)
        target = "0x" + "00" * 18 + "c0de"
        call = {"from": COW, "to": target, "data": "0x" + calldata.hex(), "gas": hex(50_000_000)}
        overrides = {target: {"code": "0x" + code.hex()}}
        rpc(url, "eth_call", call, "latest", overrides)
        durations = []
        for _ in range(5):
            started = time.perf_counter()
            rpc(url, "eth_call", call, "latest", overrides)
            durations.append(time.perf_counter() - started)
        best, median = min(durations), statistics.median(durations)
        print(
            f"compute eth_call ({gas:,} gas): best {best * 1000:.0f} ms = {gas / best / 1e6:.1f} Mgas/s, "
            f"median {median * 1000:.0f} ms = {gas / median / 1e6:.1f} Mgas/s",
            flush=True,
        )
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(datadir, ignore_errors=True)


def build_log_chain(path: str, blocks: int, holder: bytes, matches: set[int]) -> Any:
    """
    A RocksDB store of C{blocks} synthetic canonical blocks, each with five
    Transfer logs of one token between random holders, C{holder} receiving
    in the blocks of C{matches}; return the store and the last block.

    The log index's bitmaps are written as the chain writes them, but to
    their worst lag: the newest C{INDEX_LAG - 1} blocks are left to be read
    bloom by bloom.
    """
    from nodex.chain.logs.index import INDEX_LAG, LogIndexer, index_block
    from nodex.db.rocks import RocksStore
    from nodex.db.schema import write_body_rlp, write_canonical_hash, write_header_rlp, write_receipts_rlp
    from nodex.primitives import Address, Hash32
    from nodex.structures.blocks import Block
    from nodex.structures.bloom import merge_blooms
    from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
    from nodex.structures.logs import Log
    from nodex.structures.receipts import Receipt, encode_receipts
    from nodex.structures.transactions import LegacyTransaction

    generator = random.Random(6)
    token = Address(b"\x70" * 20)
    store = RocksStore.open(path)
    zero = Hash32(bytes(32))
    block = None
    for start in range(0, blocks, 500):
        batch = store.batch()
        for number in range(start, min(blocks, start + 500)):
            logs_per_tx = []
            for index in range(5):
                sender = Hash32(bytes(12) + generator.randbytes(20))
                receiver = Hash32(bytes(12) + (holder if index == 0 and number in matches else generator.randbytes(20)))
                logs_per_tx.append([Log(token, (Hash32(TRANSFER), sender, receiver), (1000).to_bytes(32, "big"))])
            transactions = tuple(
                LegacyTransaction(nonce=i, gas_price=0, gas=60000, to=token, value=0, data=bytes([number % 256]), v=27, r=1, s=1)
                for i in range(5)
            )
            receipts = tuple(Receipt.from_logs(0, 1, 50_000 * (i + 1), logs) for i, logs in enumerate(logs_per_tx))
            header = Header(
                parent_hash=zero, uncles_hash=EMPTY_UNCLES_HASH, coinbase=Address(bytes(20)), state_root=zero,
                transactions_root=zero, receipts_root=zero, logs_bloom=merge_blooms(r.bloom for r in receipts),
                difficulty=1, number=number, gas_limit=30_000_000, gas_used=250_000, timestamp=number,
                extra_data=b"", paid_fees=0, minimum_gas_price=0, uncle_count=0,
            )
            block = Block(header, transactions)
            write_header_rlp(batch, block.hash, header.encode())
            write_body_rlp(batch, block.hash, block.encode_body())
            write_receipts_rlp(batch, block.hash, encode_receipts(receipts))
            write_canonical_hash(batch, number, block.hash)
            index_block(batch, header)
        store.write(batch)
    indexer = LogIndexer(store)
    while indexer.catch_up(blocks - INDEX_LAG):
        pass
    return store, block


def time_get_logs(dispatcher: Any, query: dict[str, Any], runs: int = 20) -> tuple[float, float, float, int]:
    """
    Milliseconds of C{eth_getLogs} through the dispatcher: the first run
    (cold: nothing of the blocks in the search's cache), the best and the
    median of the others; and the match count.
    """
    body = request_body("eth_getLogs", query).encode()
    durations, count = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        deferred = dispatcher.handle(body)
        answers: list[bytes] = []
        deferred.addCallback(answers.append)
        durations.append(time.perf_counter() - started)
        count = len(json.loads(answers[0])["result"])
    warm = durations[1:]
    return durations[0] * 1000, min(warm) * 1000, statistics.median(warm) * 1000, count


def time_empty_cache_search(store: Any, query: dict[str, Any]) -> float:
    """
    Milliseconds of the search of C{query} (bounds and topics as the RPC
    has them) through L{nodex.chain.logs.search.search_logs} with a new,
    empty cache of walked blocks: what a search of blocks that no earlier
    search or start-up walk touched costs, without the RPC around it.
    """
    from nodex.chain.logs.search import BlockLogCache, LogFilter, search_logs
    from nodex.primitives import Hash32

    topics = tuple(None if topic is None else (Hash32(bytes.fromhex(topic[2:])),) for topic in query["topics"])
    started = time.perf_counter()
    search_logs(store, int(query["fromBlock"], 16), int(query["toBlock"], 16), LogFilter((), topics), cache=BlockLogCache())
    return (time.perf_counter() - started) * 1000


def log_benchmarks(big: bool) -> None:
    """
    eth_getLogs through the dispatcher over synthetic chains.
    """
    from twisted.internet.defer import maybeDeferred
    from twisted.internet.task import Clock

    from nodex.api.chain import ChainHead
    from nodex.rpc.dispatch import Dispatcher
    from nodex.rpc.filter_methods import FilterMethods
    from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
    from nodex.services.filters import FilterService

    class Head:
        """
        The head and observers of a chain that does not move.
        """

        def __init__(self, header: Any) -> None:
            """
            Make C{header} the head.
            """
            self.head = ChainHead(header, 1)

        def add_observer(self, observer: Any) -> None:
            """
            Nothing changes, so nothing is told.
            """
            pass

    sizes = [(10_000, set(range(8_000, 10_000, 10)))]
    if big:
        sizes.append((100_000, {1_000, 50_000, 99_000}))
    holder = b"\x42" * 20
    topic = "0x" + (bytes(12) + holder).hex()
    for blocks, matches in sizes:
        directory = tempfile.mkdtemp(prefix="nodex-logs-")
        try:
            started = time.perf_counter()
            store, last = build_log_chain(directory, blocks, holder, matches)
            built = time.perf_counter() - started
            started = time.perf_counter()
            filters = FilterService(store, Head(last.header), None, maybeDeferred, Clock())  # type: ignore[arg-type]
            warmed = time.perf_counter() - started
            registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
            registry.add(FilterMethods(filters))
            dispatcher = Dispatcher(registry, Clock())
            print(f"{blocks:,} blocks of 5 Transfer logs built in {built:.0f} s", flush=True)
            print(f"filter service made (walking its cache of recent blocks in) {warmed * 1000:.0f} ms", flush=True)
            queries = [
                ("last 2,000 blocks, topic2 = holder", {"fromBlock": hex(blocks - 2000), "toBlock": hex(blocks - 1)}),
                (f"all {blocks:,} blocks, topic2 = holder", {"fromBlock": "0x0", "toBlock": hex(blocks - 1)}),
            ]
            for name, bounds in queries:
                query = {**bounds, "topics": [None, None, topic]}
                cold, best, median, count = time_get_logs(dispatcher, query)
                print(
                    f"eth_getLogs {name:38s} {count:4d} logs: cold {cold:.2f} ms, warm best {best:.2f} ms, "
                    f"median {median:.2f} ms",
                    flush=True,
                )
                empty = time_empty_cache_search(store, query)
                print(f"  the same search alone with an empty cache (no start-up walk, no RPC): {empty:.2f} ms", flush=True)
            store.close()
        finally:
            shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    """
    Run the benchmarks the options select.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--skip-http", action="store_true")
    parser.add_argument("--skip-logs", action="store_true")
    parser.add_argument("--big", action="store_true", help="also search 100,000 blocks")
    options = parser.parse_args()
    if not options.skip_http:
        http_benchmarks(options.seconds)
    if not options.skip_logs:
        log_benchmarks(options.big)


if __name__ == "__main__":
    main()
