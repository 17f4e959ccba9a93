"""
Tests for L{nodex.wallet.keystore}: the keystore directory.
"""

import json
import os
import stat
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import private_key_to_address
from nodex.wallet.keyfile import LIGHT_SCRYPT, encrypt_key
from nodex.wallet.keystore import MAX_KEYFILE_BYTES, KeyStoreDirectory

KEYS = [bytes([index]) * 32 for index in (1, 2, 3)]


class KeyStoreDirectoryTests(SynchronousTestCase):
    """
    Tests for L{KeyStoreDirectory}.
    """

    def setUp(self) -> None:
        self.directory = KeyStoreDirectory(Path(self.mktemp()) / "keystore")
        self.directory.ensure()

    def write(self, key: bytes, name: str) -> None:
        """
        Write a light keyfile of C{key} as C{name}.
        """
        self.directory.write(encrypt_key(key, "pw", LIGHT_SCRYPT), name)

    def test_modes(self) -> None:
        """
        The folder is 0700 (also when it existed with wider rights), each file 0600.
        """
        self.assertEqual(stat.S_IMODE(self.directory.path.stat().st_mode), 0o700)
        self.directory.path.chmod(0o755)
        self.directory.ensure()
        self.assertEqual(stat.S_IMODE(self.directory.path.stat().st_mode), 0o700)
        self.write(KEYS[0], "UTC--a")
        self.assertEqual(stat.S_IMODE((self.directory.path / "UTC--a").stat().st_mode), 0o600)

    def test_atomic_write_leaves_no_temporary(self) -> None:
        """
        After a write only the keyfile is there; writing the same name again is refused.
        """
        self.write(KEYS[0], "UTC--a")
        self.assertEqual(os.listdir(self.directory.path), ["UTC--a"])
        self.assertRaises(FileExistsError, self.write, KEYS[1], "UTC--a")
        self.assertEqual(os.listdir(self.directory.path), ["UTC--a"])

    def test_scan_order_and_skips(self) -> None:
        """
        Usable files come in name order; broken ones are named with a reason;
        hidden files, backups and folders are ignored.
        """
        self.write(KEYS[1], "UTC--2")
        self.write(KEYS[0], "UTC--1")
        path = self.directory.path
        (path / "corrupt").write_text("{not json")
        version2 = encrypt_key(KEYS[2], "pw", LIGHT_SCRYPT).to_json()
        version2["version"] = 2
        (path / "old").write_text(json.dumps(version2))
        anonymous = encrypt_key(KEYS[2], "pw", LIGHT_SCRYPT).to_json()
        del anonymous["address"]
        (path / "anonymous").write_text(json.dumps(anonymous))
        (path / "twice").write_bytes((path / "UTC--1").read_bytes())
        (path / "huge").write_bytes(b" " * (MAX_KEYFILE_BYTES + 1))
        (path / ".hidden").write_text("x")
        (path / "backup~").write_text("x")
        (path / "folder").mkdir()
        found, skipped = self.directory.scan()
        self.assertEqual([stored.path.name for stored in found], ["UTC--1", "UTC--2"])
        self.assertEqual(found[0].address, private_key_to_address(KEYS[0]))
        reasons = {entry.name: entry.reason for entry in skipped}
        self.assertEqual(sorted(reasons), ["anonymous", "corrupt", "huge", "old", "twice"])
        self.assertIn("not JSON", reasons["corrupt"])
        self.assertIn("version 2", reasons["old"])
        self.assertEqual(reasons["anonymous"], "names no address")
        self.assertIn("second file", reasons["twice"])

    def test_scan_missing_folder(self) -> None:
        """
        A folder that does not exist holds no keys.
        """
        self.assertEqual(KeyStoreDirectory(Path(self.mktemp())).scan(), ([], []))
