"""
Merkle proofs of a key's value or absence (EIP-1186's C{accountProof} and
C{storageProof}).
"""

from nodex.crypto import keccak256
from nodex.trie.errors import BadProofError, MalformedNodeError
from nodex.trie.hexary import BLANK_ROOT, HexaryTrie
from nodex.trie.nibbles import decode_path, key_to_nibbles
from nodex.trie.node_rlp import RLPItem, decode


def make_proof(trie: HexaryTrie, key: bytes) -> list[bytes]:
    """
    The proof of C{key}'s value (or absence) in C{trie}: the RLP of the
    hashed nodes on its path, root node first.  For a L{SecureTrie} C{key} is
    the original key.

    @raise MissingTrieNodeError: a node on the path is missing.
    """
    return trie.prove(key)


def _follow(node: RLPItem, path: bytes, position: int) -> tuple[RLPItem | None, int, bytes | None]:
    """
    Take one step along C{path} from a decoded node.

    @return: C{(next, position, value)}: the next child item and the path
        position below it, or a final value (C{next} is then L{None}; an
        empty value means the key is absent).
    @raise BadProofError: the node is not a well-formed trie node.
    """
    if not isinstance(node, list) or len(node) not in (2, 17):
        raise BadProofError("a proof node is not a trie node")
    if len(node) == 17:
        if position == len(path):
            value = node[16]
            if not isinstance(value, bytes):
                raise BadProofError("a branch value in the proof is not a byte string")
            return None, position, value
        return node[path[position]], position + 1, None
    encoded_path, second = node
    if not isinstance(encoded_path, bytes):
        raise BadProofError("a node path in the proof is not a byte string")
    try:
        node_path, is_leaf = decode_path(encoded_path)
    except MalformedNodeError as exc:
        raise BadProofError(f"bad path in a proof node: {exc}") from exc
    if is_leaf:
        if path[position:] != node_path or not isinstance(second, bytes):
            return None, position, b""
        return None, position, second
    end = position + len(node_path)
    if path[position:end] != node_path:
        return None, position, b""
    return second, end, None


def verify_proof(root_hash: bytes, key: bytes, proof: list[bytes], secure: bool = False) -> bytes | None:
    """
    Check a proof against a root and answer the value it proves.

    @param key: the key as stored in the trie; with C{secure} true, the
        original key of a secure trie (it is hashed here).
    @return: the value, or L{None} when the proof shows the key is absent.
    @raise BadProofError: the proof lacks a node on the path, holds bytes
        that are not a trie node, or does not hash up to C{root_hash}.
    """
    path = key_to_nibbles(keccak256(key) if secure else key)
    nodes = {keccak256(encoded): encoded for encoded in proof}
    if root_hash == BLANK_ROOT and root_hash not in nodes:
        return None
    item: RLPItem | None = root_hash
    position = 0
    while True:
        if isinstance(item, bytes):
            if not item:
                return None
            if len(item) != 32:
                raise BadProofError(f"a child reference of {len(item)} bytes in the proof")
            encoded = nodes.get(item)
            if encoded is None:
                raise BadProofError(f"the proof lacks node 0x{item.hex()} on the key's path")
            try:
                node = decode(encoded)
            except MalformedNodeError as exc:
                raise BadProofError(f"a proof node is not valid RLP: {exc}") from exc
        else:
            node = item
        item, position, value = _follow(node, path, position)
        if item is None:
            return value or None


__all__ = ["make_proof", "verify_proof"]
