"""
End-to-end tests of the local wallet: a regtest node from L{makeService}
(RocksDB and the keystore under C{self.mktemp()}, HTTP on 127.0.0.1 port
0) driven by web3.py, eth-account and (when installed) ethers, as a
developer drives it: create, import, unlock, lock, let expire, restart,
move keyfiles in and out, sign messages and typed data, send.

Most nodes here write keyfiles with the light scrypt parameters
(C{wallet.light_kdf}); one test uses the default ones, to show that a
derivation of about a second does not hold up the reactor.
"""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, gatherResults
from twisted.internet.task import deferLater
from twisted.trial.unittest import SkipTest

from nodex.crypto import keccak256, private_key_to_address
from nodex.services.accounts import FIRST_FAILURE_DELAY
from tests.e2e.test_web3_node import COW, Web3NodeTestCase, checksummed
from tests.wallet.test_typed_data import MAIL

try:
    from eth_account import Account as EthAccount
    from eth_account.messages import encode_defunct, encode_typed_data
except ImportError:  # pragma: no cover - the test extra is missing
    EthAccount = None

LIGHT = "[wallet]\nlight_kdf = true\n"
KEY = keccak256(b"an e2e keystore key")
ADDRESS = "0x" + private_key_to_address(KEY).hex()
RECIPIENT = "0x" + "42" * 20

ETHERS_SCRIPT = """
const { ethers } = require("ethers");
(async () => {
  const [url, address, typed] = process.argv.slice(1);
  const provider = new ethers.JsonRpcProvider(url, undefined, { staticNetwork: true });
  const signer = await provider.getSigner(address);
  const message = "hello from ethers";
  const signature = await provider.send("eth_sign", [address, ethers.hexlify(ethers.toUtf8Bytes(message))]);
  const data = JSON.parse(typed);
  const types = { ...data.types };
  delete types.EIP712Domain;
  const typedSignature = await signer.signTypedData(data.domain, types, data.message);
  console.log(JSON.stringify({
    message: ethers.verifyMessage(message, signature).toLowerCase(),
    typed: ethers.verifyTypedData(data.domain, types, data.message, typedSignature).toLowerCase(),
  }));
  provider.destroy();
})().catch((error) => { console.error(error); process.exit(1); });
"""
"""Signs through nodex with eth_sign and ethers' JsonRpcSigner.signTypedData, recovers with ethers."""


class WalletNodeTestCase(Web3NodeTestCase):
    """
    A regtest node whose wallet settings come from a configuration file.
    """

    async def start_wallet_node(self, settings: str = LIGHT, *argv: str, datadir: str | None = None) -> Any:
        """
        Start a node with the configuration text C{settings}; the L{Web3}.
        """
        if EthAccount is None:
            raise SkipTest("eth-account (the test extra) is not installed")
        path = Path(self.mktemp())
        path.write_text(settings)
        return await self.start_node("--config", str(path), *argv, datadir=datadir)

    async def result(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = await self.rpc(method, *params)
        self.assertNotIn("error", response, f"{method}: {response}")
        return response["result"]

    async def error(self, method: str, *params: Any) -> tuple[int, str]:
        """
        The code and message of a request that must fail.
        """
        response = await self.rpc(method, *params)
        self.assertIn("error", response, f"{method} succeeded: {response}")
        return response["error"]["code"], response["error"]["message"]

    def keystore(self) -> Path:
        """
        The node's keystore folder.
        """
        return Path(self.datadir) / "keystore"


class KeystoreLifeTests(WalletNodeTestCase):
    """
    Creating, using, locking and unlocking accounts over HTTP.
    """

    async def test_create_fund_send_lock_unlock(self) -> None:
        """
        A new account is listed after the development accounts, signs at
        once, sends once funded, is refused once locked, and works again
        once unlocked.
        """
        w3 = await self.start_wallet_node()
        address = await self.result("personal_newAccount", "e2e passphrase")
        accounts = await self.blocking(lambda: w3.eth.accounts)
        self.assertEqual(len(accounts), 12)
        self.assertEqual(accounts[-1].lower(), address)
        self.assertEqual(await self.result("personal_listAccounts"), [a.lower() for a in accounts])
        funding = await self.blocking(w3.eth.send_transaction, {"from": COW, "to": checksummed(address), "value": 10**18})
        self.assertEqual((await self.receipt(funding))["status"], 1)
        sent = await self.blocking(w3.eth.send_transaction, {"from": checksummed(address), "to": RECIPIENT, "value": 5})
        self.assertEqual((await self.receipt(sent))["status"], 1)
        self.assertIs(await self.result("personal_lockAccount", address), True)
        code, message = await self.error("eth_sendTransaction", {"from": address, "to": RECIPIENT})
        self.assertEqual(code, -32602)
        self.assertIn("is locked", message)
        self.assertIs(await self.result("personal_unlockAccount", address, "e2e passphrase", "0xea60"), True)
        again = await self.result("eth_sendTransaction", {"from": address, "to": RECIPIENT, "value": "0x1"})
        self.assertEqual((await self.receipt(again))["status"], 1)
        balance = await self.blocking(w3.eth.get_balance, checksummed(RECIPIENT))
        self.assertEqual(balance, 6)

    async def test_expiry(self) -> None:
        """
        An unlock of one second ends on time: the account is then refused.
        """
        await self.start_wallet_node()
        await self.result("personal_importRawKey", KEY.hex(), "pw")
        await self.result("personal_lockAccount", ADDRESS)
        self.assertIs(await self.result("personal_unlockAccount", ADDRESS, "pw", "0x3e8"), True)
        await self.result("eth_sign", ADDRESS, "0x00")
        from twisted.internet import reactor

        await deferLater(reactor, 1.2, lambda: None)
        self.assertEqual((await self.error("eth_sign", ADDRESS, "0x00"))[0], -32602)

    async def test_wrong_passphrase(self) -> None:
        """
        personal_sendTransaction with a wrong passphrase sends nothing and says so;
        the account then refuses every attempt for a second; after it, the
        right passphrase sends and leaves the account locked.
        """
        w3 = await self.start_wallet_node()
        await self.result("personal_importRawKey", KEY.hex(), "right")
        await self.result("personal_lockAccount", ADDRESS)
        await self.blocking(w3.eth.send_transaction, {"from": COW, "to": checksummed(ADDRESS), "value": 10**18})
        request = {"from": ADDRESS, "to": RECIPIENT, "value": "0x7"}
        self.assertEqual(
            await self.error("personal_sendTransaction", request, "wrong"), (-32000, "could not decrypt key with given password")
        )
        code, message = await self.error("personal_unlockAccount", ADDRESS, "right", None)
        self.assertEqual(code, -32000)
        self.assertTrue(message.startswith(f"too many wrong passphrases for account {ADDRESS}: try again in "), message)
        self.assertEqual(await self.blocking(w3.eth.get_transaction_count, checksummed(ADDRESS)), 0)
        from twisted.internet import reactor

        await deferLater(reactor, FIRST_FAILURE_DELAY + 0.1, lambda: None)
        tx_hash = await self.result("personal_sendTransaction", request, "right")
        self.assertEqual((await self.receipt(tx_hash))["from"].lower(), ADDRESS)
        self.assertEqual((await self.error("eth_sign", ADDRESS, "0x00"))[0], -32602)

    async def test_bad_inputs(self) -> None:
        """
        Bad hex, short keys, keys at the curve order, empty passphrases,
        unknown addresses and numbers as durations get clear -32602 answers
        (or false, for unlocking an unknown address).
        """
        await self.start_wallet_node()
        order = "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
        for key in ("0x" + "zz" * 32, "ab" * 31, order, "0x" + "00" * 32):
            code, message = await self.error("personal_importRawKey", key, "pw")
            self.assertEqual(code, -32602)
            self.assertNotIn(key.removeprefix("0x"), message)
        self.assertEqual((await self.error("personal_newAccount", ""))[0], -32602)
        self.assertIs(await self.result("personal_unlockAccount", RECIPIENT, "pw", "0x10"), False)
        self.assertEqual((await self.error("personal_unlockAccount", COW.lower(), "pw", 300))[0], -32602)
        self.assertEqual((await self.error("personal_dumpRawKey", RECIPIENT))[0], -32602)
        self.assertEqual((await self.error("eth_sign", RECIPIENT, "0x00"))[0], -32602)
        self.assertEqual((await self.error("eth_sign", "0x1234", "0x00"))[0], -32602)
        self.assertEqual((await self.error("eth_signTypedData_v4", COW.lower(), {"types": 1}))[0], -32602)
        self.assertEqual((await self.error("personal_lockAccount"))[0], -32602)


class KeyfileInteropTests(WalletNodeTestCase):
    """
    Keyfiles move between nodex and eth-account; accounts survive restarts.
    """

    async def test_restart_and_interop(self) -> None:
        """
        A key imported through nodex is a file eth-account opens; a file
        eth-account wrote, copied in, is usable after a restart; keystore
        accounts survive the restart, seed accounts do not.
        """
        # A long time limit: the file eth-account writes uses the standard
        # scrypt parameters, which take seconds on a loaded machine.
        await self.start_wallet_node(LIGHT + "[rpc]\ntimeout = 60\n")
        self.assertEqual(await self.result("personal_importRawKey", "0x" + KEY.hex(), "ours"), ADDRESS)
        seeded = await self.result("personal_newAccountWithSeed", "e2e seed")
        [name] = os.listdir(self.keystore())
        self.assertEqual(bytes(EthAccount.decrypt(json.loads((self.keystore() / name).read_text()), "ours")), KEY)
        await self.stop_node()
        theirs = EthAccount.create()
        (self.keystore() / "from-eth-account.json").write_text(json.dumps(EthAccount.encrypt(theirs.key, "theirs")))
        await self.start_wallet_node(LIGHT + "[rpc]\ntimeout = 60\n", datadir=self.datadir)
        listed = await self.result("eth_accounts")
        self.assertIn(ADDRESS, listed)
        self.assertIn(theirs.address.lower(), listed)
        self.assertNotIn(seeded, listed)
        self.assertEqual((await self.error("eth_sign", ADDRESS, "0x00"))[0], -32602)
        self.assertIs(await self.result("personal_unlockAccount", theirs.address, "theirs", None), True)
        self.assertEqual(await self.result("personal_dumpRawKey", theirs.address), "0x" + bytes(theirs.key).hex())

    async def test_corrupt_file_skipped(self) -> None:
        """
        A corrupt keyfile does not stop the node: it starts, and the good accounts are there.
        """
        datadir = self.mktemp()
        (Path(datadir) / "keystore").mkdir(parents=True)
        (Path(datadir) / "keystore" / "broken").write_text("{\"version\": 3")
        (Path(datadir) / "keystore" / "future").write_text(json.dumps({"version": 4, "crypto": {}}))
        await self.start_wallet_node(datadir=datadir)
        self.assertEqual(len(await self.result("eth_accounts")), 11)


class SignatureTests(WalletNodeTestCase):
    """
    Signatures that standard libraries recover.
    """

    async def test_web3_recovers(self) -> None:
        """
        eth_sign, eth_signTypedData_v4 and eth_signTransaction through
        web3.py; eth-account recovers the signers, and the signed
        transaction goes through eth_sendRawTransaction.
        """
        w3 = await self.start_wallet_node()
        signature = await self.blocking(w3.eth.sign, COW, text="hello")
        recovered = EthAccount.recover_message(encode_defunct(text="hello"), signature=signature)
        self.assertEqual(recovered, COW)
        typed = await self.blocking(w3.eth.sign_typed_data, COW, MAIL)
        self.assertEqual(EthAccount.recover_message(encode_typed_data(full_message=MAIL), signature=typed), COW)
        signed = await self.blocking(
            w3.eth.sign_transaction, {"from": COW, "to": checksummed(RECIPIENT), "value": 3, "gas": 21000, "gasPrice": 0, "nonce": 0}
        )
        self.assertEqual(EthAccount.recover_transaction(signed.raw), COW)
        tx_hash = await self.blocking(w3.eth.send_raw_transaction, signed.raw)
        self.assertEqual((await self.receipt(tx_hash))["status"], 1)

    async def test_network_name(self) -> None:
        """
        With another wallet.network_name the prefix changes: the standard
        recovery then finds another address.
        """
        w3 = await self.start_wallet_node(LIGHT + 'network_name = "Nodex"\n')
        signature = await self.blocking(w3.eth.sign, COW, text="hello")
        self.assertNotEqual(EthAccount.recover_message(encode_defunct(text="hello"), signature=signature), COW)

    async def test_ethers_recovers(self) -> None:
        """
        ethers' verifyMessage and verifyTypedData recover the account from
        nodex's eth_sign and from its JsonRpcSigner.signTypedData (which
        calls eth_signTypedData_v4 with a JSON string).
        """
        node_binary = shutil.which("node")
        modules = os.environ.get("NODEX_ETHERS_PATH", "/tmp/node_modules")
        if node_binary is None or not (Path(modules) / "ethers").is_dir():
            raise SkipTest(f"node and the npm package ethers (in {modules}) are needed")
        await self.start_wallet_node()
        url = self.w3.provider.endpoint_uri
        result = await self.blocking(
            subprocess.run,
            [node_binary, "-e", ETHERS_SCRIPT, url, COW.lower(), json.dumps(MAIL)],
            capture_output=True, text=True, timeout=60, env={**os.environ, "NODE_PATH": modules},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout), {"message": COW.lower(), "typed": COW.lower()})


class StandardScryptTests(WalletNodeTestCase):
    """
    The default scrypt parameters run off the reactor thread.
    """

    async def test_reactor_answers_during_unlocks(self) -> None:
        """
        While two standard-scrypt unlocks of two accounts run (about a
        second each), the node keeps answering eth_blockNumber.
        """
        # A derivation takes one to several seconds on a loaded machine.
        await self.start_wallet_node("[rpc]\ntimeout = 120\n")
        addresses = [await self.result("personal_importRawKey", key.hex(), "pw") for key in (KEY, keccak256(KEY))]
        for address in addresses:
            await self.result("personal_lockAccount", address)
        unlocks = gatherResults(
            [Deferred.fromCoroutine(self.result("personal_unlockAccount", address, "pw", None)) for address in addresses]
        )
        answered: list[float] = []
        started = time.monotonic()
        while not unlocks.called:
            before = time.monotonic()
            await self.result("eth_blockNumber")
            answered.append(time.monotonic() - before)
            if time.monotonic() - started > 100:
                break
        self.assertEqual(await unlocks, [True, True])
        self.assertGreater(len(answered), 3)


class HostileUnlockTests(WalletNodeTestCase):
    """
    Guessing passphrases, and asking for keys, as an unauthenticated caller
    (issue 26).
    """

    async def test_sixteen_wrong_then_right(self) -> None:
        """
        Sixteen wrong-passphrase unlocks at once with the standard scrypt
        parameters (about a second and 256 MiB each), then the right one:
        one derivation runs and says the passphrase is wrong, the others
        are refused at once, the right one too while the account waits out
        its second; after it, the right one unlocks (before, all seventeen
        derivations were queued: the right unlock timed out behind them,
        and they burned on for seconds after the answers).
        """
        # A long time limit: a derivation takes seconds on a loaded machine.
        await self.start_wallet_node("[wallet]\nlight_kdf = false\n[rpc]\ntimeout = 60\n")
        await self.result("personal_importRawKey", KEY.hex(), "right")
        await self.result("personal_lockAccount", ADDRESS)
        wrong = [
            Deferred.fromCoroutine(self.rpc("personal_unlockAccount", ADDRESS, f"guess {n}", None)) for n in range(16)
        ]
        answers = await gatherResults(wrong)
        right = await self.rpc("personal_unlockAccount", ADDRESS, "right", None)
        messages = [answer["error"]["message"] for answer in answers + [right]]
        self.assertEqual(messages.count("could not decrypt key with given password"), 1, messages)
        self.assertFalse([message for message in messages if "timed out" in message or "timeout" in message])
        self.assertEqual({answer["error"]["code"] for answer in answers + [right]}, {-32000})
        from twisted.internet import reactor

        await deferLater(reactor, FIRST_FAILURE_DELAY + 0.1, lambda: None)
        self.assertTrue(await self.result("personal_unlockAccount", ADDRESS, "right", None))

    async def test_testnet_gives_no_key(self) -> None:
        """
        On testnet with the wallet turned on, a new account is stored
        locked and C{personal_dumpRawKey} gives no key, even unlocked
        (before, the key of a new account was returned to any caller).
        """
        await self.start_wallet_node(
            "[wallet]\nenabled = true\nlight_kdf = true\n", "--network", "testnet", "--p2p", "none"
        )
        address = await self.result("personal_newAccount", "pw")
        self.assertEqual((await self.error("eth_sign", address, "0x00"))[0], -32602)
        refused = (
            -32000,
            "personal_dumpRawKey is refused: this node gives out no private key (set wallet.allow_key_export to allow it)",
        )
        self.assertEqual(await self.error("personal_dumpRawKey", address), refused)
        self.assertTrue(await self.result("personal_unlockAccount", address, "pw", None))
        self.assertEqual(await self.error("personal_dumpRawKey", address), refused)
        self.assertEqual(len(await self.result("eth_sign", address, "0x00")), 132)


class WalletOffTests(WalletNodeTestCase):
    """
    A node with C{wallet.enabled = false}: every wallet method says so.
    """

    async def test_every_method(self) -> None:
        """
        personal_* answer -32604; eth_accounts is empty; eth_sign,
        eth_signTypedData_v4, eth_signTransaction and eth_sendTransaction
        answer -32602 "Local wallet is disabled in this node"; no keystore
        folder is made; rpc_modules still lists personal.
        """
        await self.start_wallet_node("[wallet]\nenabled = false\n")
        calls: dict[str, list[Any]] = {
            "personal_newAccount": ["pw"],
            "personal_importRawKey": [KEY.hex(), "pw"],
            "personal_newAccountWithSeed": ["seed"],
            "personal_listAccounts": [],
            "personal_unlockAccount": [ADDRESS, "pw", None],
            "personal_lockAccount": [ADDRESS],
            "personal_dumpRawKey": [ADDRESS],
            "personal_sendTransaction": [{"from": ADDRESS}, "pw"],
        }
        for method, params in calls.items():
            self.assertEqual(await self.error(method, *params), (-32604, "The local wallet feature is disabled"), method)
        self.assertEqual(await self.result("eth_accounts"), [])
        disabled = (-32602, "Local wallet is disabled in this node")
        self.assertEqual(await self.error("eth_sign", COW.lower(), "0x00"), disabled)
        self.assertEqual(await self.error("eth_signTypedData_v4", COW.lower(), MAIL), disabled)
        self.assertEqual(await self.error("eth_signTransaction", {"from": COW.lower()}), disabled)
        self.assertEqual(await self.error("eth_sendTransaction", {"from": COW.lower(), "to": RECIPIENT}), disabled)
        self.assertFalse(self.keystore().exists())
        self.assertIn("personal", await self.result("rpc_modules"))


__all__ = ["WalletNodeTestCase"]
