"""
End to end: a real regtest node (RocksDB, HTTP on 127.0.0.1, port 0) that
imports a long run of blocks through its chain service — the door peers and
miners use — keeps answering JSON-RPC while it does (DESIGN §4: the reactor
never waits).
"""

import io
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.chainfile import read_blocks
from nodex.chaintool import run_export
from tests.test_chaintool import make_datadir

REPOSITORY = Path(__file__).resolve().parent.parent.parent

IMPORTING_NODE = """
import json, sys
from twisted.internet import reactor
import nodex.node as node_composition
from nodex.config import load_config
from nodex.chain.aside import FILE
from nodex.chain.chainfile import read_blocks
config = load_config(None, {"datadir": sys.argv[1], "rpc": {"endpoint": "tcp:0:interface=127.0.0.1", "ws": "none"}})
node = node_composition.compose(config, reactor)
node.startService()
with open(sys.argv[2], "rb") as source:
    blocks = [block for block, _ in read_blocks(source) if block.number > 0]

def listening(port):
    print("PORT", port.getHost().port, flush=True)
    done = node.chain.import_blocks(blocks, FILE)
    done.addCallback(lambda found: print("IMPORTED", len(found), {o.result for o in found}, flush=True))

node.getServiceNamed("rpc").when_listening().addCallback(listening)
reactor.run()
"""

BLOCKS = 2000


class ImportWhileServingTests(SynchronousTestCase):
    """
    C{eth_blockNumber} answers all through a long import.
    """

    def request(self, url: str, method: str, *params: object) -> object:
        """
        One JSON-RPC request; its result.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        self.assertNotIn("error", answer)
        return answer["result"]

    def test_block_number_answers_during_import(self) -> None:
        """
        While the node imports 2,000 blocks, C{eth_blockNumber} keeps
        answering and sees the head climb block run after block run; once
        done, every block reads back as the file has it.
        """
        source = self.mktemp()
        make_datadir(source, BLOCKS, 0)
        chain_file = self.mktemp()
        self.assertEqual(run_export([chain_file, "--datadir", source], io.StringIO(), io.StringIO()), 0)
        with open(chain_file, "rb") as file:
            wanted = {block.number: block.hash for block, _ in read_blocks(file)}
        process = subprocess.Popen(
            [sys.executable, "-c", IMPORTING_NODE, self.mktemp(), chain_file],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        )
        self.addCleanup(process.wait)
        self.addCleanup(process.kill)
        assert process.stdout is not None
        line = process.stdout.readline()
        self.assertTrue(line.startswith("PORT"), line)
        url = f"http://127.0.0.1:{int(line.split()[1])}/"
        seen = []
        while not seen or seen[-1] < BLOCKS:
            seen.append(int(self.request(url, "eth_blockNumber"), 16))
        self.assertEqual(process.stdout.readline().split()[:2], ["IMPORTED", str(BLOCKS)])
        climbing = sorted({number for number in seen if 0 < number < BLOCKS})
        self.assertGreater(len(climbing), 3, seen[:50])
        for number in (1, BLOCKS // 2, BLOCKS):
            block = self.request(url, "eth_getBlockByNumber", hex(number), False)
            self.assertEqual(block["hash"], "0x" + wanted[number].hex())
