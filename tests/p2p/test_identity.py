"""
Tests for L{nodex.p2p.identity}: the node key file and the handshake signatures.
"""

import stat
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.p2p.errors import NodeKeyError
from nodex.p2p.identity import NODE_KEY_FILE, NodeKey, load_or_create_node_key, verify_challenge


class NodeKeyFileTests(SynchronousTestCase):
    """
    The key in C{<datadir>/nodekey}.
    """

    def test_created_private_and_kept(self) -> None:
        """
        The first start creates the key with mode 0600; the next reads the same key.
        """
        datadir = Path(self.mktemp())
        datadir.mkdir()
        first = load_or_create_node_key(datadir)
        path = datadir / NODE_KEY_FILE
        self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o600)
        self.assertEqual(load_or_create_node_key(datadir), first)
        self.assertEqual(len(first.node_id), 64)

    def test_broken_file(self) -> None:
        """
        A file that holds no key is an error naming the file.
        """
        datadir = Path(self.mktemp())
        datadir.mkdir()
        for content, fragment in (("zz", "not hexadecimal"), ("00" * 31, "32 bytes"), ("00" * 32, "invalid node key")):
            (datadir / NODE_KEY_FILE).write_text(content)
            with self.assertRaises(NodeKeyError) as caught:
                load_or_create_node_key(datadir)
            self.assertIn(fragment, str(caught.exception))

    def test_missing_directory(self) -> None:
        """
        A data directory that cannot hold the key is an error.
        """
        with self.assertRaises(NodeKeyError):
            load_or_create_node_key(Path(self.mktemp()) / "absent")


class SignatureTests(SynchronousTestCase):
    """
    The proof of a node key.
    """

    def test_verify(self) -> None:
        """
        A signature verifies against its challenge and node id only.
        """
        key, other = NodeKey.generate(), NodeKey.generate()
        challenge = b"\x01" * 32
        signature = key.sign_challenge(challenge)
        self.assertTrue(verify_challenge(signature, challenge, key.node_id))
        self.assertFalse(verify_challenge(signature, b"\x02" * 32, key.node_id))
        self.assertFalse(verify_challenge(signature, challenge, other.node_id))
        self.assertFalse(verify_challenge(signature[:64] + b"\x07", challenge, key.node_id))
        self.assertFalse(verify_challenge(b"\x00" * 65, challenge, key.node_id))
