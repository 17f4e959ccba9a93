"""
Ethereum's hexary Merkle-Patricia trie (Yellow Paper, appendix D).

The trie keeps the nodes it has read or written decoded in memory and
changes them in place.  A change marks the nodes on its path dirty; hashes
are computed only when L{HexaryTrie.root_hash} or L{HexaryTrie.commit} asks,
and only for dirty nodes, since clean nodes keep their hash.  Recomputing
the root after a few changes therefore costs a few hashes per change, and
opening a trie at a root reads nothing until a key is looked up.
"""

from collections.abc import Callable, Iterator

from nodex.crypto import keccak256
from nodex.trie.errors import MissingTrieNodeError, TrieError
from nodex.trie.nodecache import NodeCache
from nodex.trie.nibbles import common_prefix_length, key_to_nibbles, nibbles_to_key
from nodex.trie.node_rlp import EMPTY_STRING
from nodex.trie.nodes import (
    HASH_REF_PREFIX,
    BranchNode,
    Child,
    ExtensionNode,
    LeafNode,
    Node,
    copy_node,
    decode_node,
    encode_branch,
    encode_extension,
    encode_leaf,
)

BLANK_ROOT = keccak256(EMPTY_STRING)
"""The root hash of the empty trie: Keccak-256 of the RLP of the empty string."""

NodeReader = Callable[[bytes], "bytes | None"]
"""Looks a node's RLP up by its hash; answers L{None} when it has no such node."""


def _invalidate(node: Node) -> None:
    """
    Mark C{node} changed: its hash must be recomputed and its RLP written.
    """
    node.ref = None
    node.stored = False


class HexaryTrie:
    """
    A Merkle-Patricia trie over a node reader.

    Keys and values are byte strings; an empty value is the same as no
    value.  The trie never writes: L{commit} hands the new nodes to the
    caller, who writes them in its own batch.

    A trie object belongs to one thread at a time.  After a
    L{MissingTrieNodeError} from L{put} or L{delete} its contents are
    undefined: open it again at its last root.
    """

    def __init__(self, read_node: NodeReader, root_hash: bytes = BLANK_ROOT, node_cache: "NodeCache | None" = None) -> None:
        """
        @param read_node: looks up a node's RLP by its hash.
        @param root_hash: the root to start from; nothing is read until needed.
        @param node_cache: decoded nodes shared with other tries; while this
            trie is unchanged, L{get} walks them instead of loading its own.
        """
        if type(root_hash) is not bytes or len(root_hash) != 32:
            raise TrieError(f"a root hash is 32 bytes, not {root_hash!r:.80}")
        self._read_node = read_node
        self._root: Child = None if root_hash == BLANK_ROOT else HASH_REF_PREFIX + root_hash
        self._node_cache = node_cache

    def _nibbles(self, key: bytes) -> bytes:
        """
        The nibble path at which C{key} is stored.

        @raise TrieError: the key is not C{bytes}.
        """
        try:
            return key_to_nibbles(key)
        except AttributeError:
            raise TrieError(f"trie keys are bytes, not {type(key).__name__}") from None

    def _load(self, ref: bytes) -> Node:
        """
        Read and decode the node behind a 33-byte hash reference, into a
        node of this trie's own: from the shared node cache, if the trie
        has one, as a copy (copying a node costs a tenth of reading and
        decoding it, and the cache's stays unchanged).

        @raise MissingTrieNodeError: the node reader does not know the hash.
        """
        if self._node_cache is not None:
            return copy_node(self._node_cache.load(ref, self._read_node))
        node_hash = ref[1:]
        encoded = self._read_node(node_hash)
        if encoded is None:
            raise MissingTrieNodeError(node_hash)
        node = decode_node(encoded)
        node.ref = ref if len(encoded) >= 32 else encoded
        node.stored = True
        return node

    # Reading

    def get(self, key: bytes) -> bytes | None:
        """
        The value stored under C{key}, or L{None}.

        @raise MissingTrieNodeError: a node on the key's path is missing.
        """
        path = self._nibbles(key)
        node = self._root
        if type(node) is bytes:
            if self._node_cache is not None:
                return self._cached_get(node, path)
            node = self._root = self._load(node)
        position = 0
        while node is not None:
            kind = type(node)
            if kind is BranchNode:
                if position == len(path):
                    return node.value or None
                index = path[position]
                child = node.children[index]
                if type(child) is bytes:
                    child = node.children[index] = self._load(child)
                node = child
                position += 1
            elif kind is LeafNode:
                return node.value if path[position:] == node.path else None
            else:
                end = position + len(node.path)
                if path[position:end] != node.path:
                    return None
                position = end
                child = node.child
                if type(child) is bytes:
                    child = node.child = self._load(child)
                node = child
        return None

    def _cached_get(self, ref: bytes, path: bytes) -> bytes | None:
        """
        L{get} through the shared node cache, from the root reference
        C{ref}: the shared nodes are walked, never changed or kept.
        """
        assert self._node_cache is not None
        load, read_node = self._node_cache.load, self._read_node
        node: Child = load(ref, read_node)
        position = 0
        while node is not None:
            kind = type(node)
            if kind is BranchNode:
                if position == len(path):
                    return node.value or None  # type: ignore[union-attr]
                node = node.children[path[position]]  # type: ignore[union-attr]
                if type(node) is bytes:
                    node = load(node, read_node)
                position += 1
            elif kind is LeafNode:
                return node.value if path[position:] == node.path else None  # type: ignore[union-attr]
            else:
                end = position + len(node.path)  # type: ignore[union-attr]
                if path[position:end] != node.path:  # type: ignore[union-attr]
                    return None
                position = end
                node = node.child  # type: ignore[union-attr]
                if type(node) is bytes:
                    node = load(node, read_node)
        return None

    # Writing

    def put(self, key: bytes, value: bytes) -> None:
        """
        Store C{value} under C{key}; an empty value deletes the key.

        @raise TrieError: the key or the value is not C{bytes}.
        @raise MissingTrieNodeError: a node on the key's path is missing.
        """
        if type(value) is not bytes:
            raise TrieError(f"trie values are bytes, not {type(value).__name__}")
        if not value:
            self.delete(key)
        else:
            self._root = self._put(self._root, self._nibbles(key), value)

    def delete(self, key: bytes) -> None:
        """
        Remove C{key}; removing an absent key changes nothing.

        @raise MissingTrieNodeError: a node on the key's path is missing.
        """
        if self._root is not None:
            self._root = self._delete(self._root, self._nibbles(key))

    def _put(self, node: Child, path: bytes, value: bytes) -> Node:
        """
        Store C{value} at C{path} below C{node}.

        @return: the node that replaces C{node}; it is clean (C{ref} set)
            exactly when nothing changed.
        """
        if node is None:
            return LeafNode(path, value)
        if type(node) is bytes:
            node = self._load(node)
        kind = type(node)
        if kind is BranchNode:
            if path:
                index = path[0]
                new = node.children[index] = self._put(node.children[index], path[1:], value)
                if new.ref is not None:
                    return node
            elif node.value == value:
                return node
            else:
                node.value = value
            # _invalidate inlined in this recursion: a call less for each node on the path.
            node.ref = None
            node.stored = False
            return node
        if kind is LeafNode:
            if node.path == path:
                if node.value != value:
                    node.value = value
                    node.ref = None
                    node.stored = False
                return node
            return self._split(node, path, value)
        length = len(node.path)
        if path[:length] == node.path:
            new = node.child = self._put(node.child, path[length:], value)
            if new.ref is None:
                node.ref = None
                node.stored = False
            return node
        return self._split(node, path, value)

    def _split(self, node: LeafNode | ExtensionNode, path: bytes, value: bytes) -> Node:
        """
        Insert a new leaf where C{path} leaves C{node}'s path: a branch at the
        point where they part, under an extension for the nibbles they share.
        """
        common = common_prefix_length(node.path, path)
        branch = BranchNode()
        remainder = node.path[common:]
        if not remainder:
            # Only a leaf's path can end here: an extension's would have matched.
            branch.value = node.value
        elif type(node) is ExtensionNode and len(remainder) == 1:
            branch.children[remainder[0]] = node.child
        else:
            node.path = remainder[1:]
            _invalidate(node)
            branch.children[remainder[0]] = node
        rest = path[common:]
        if rest:
            branch.children[rest[0]] = LeafNode(rest[1:], value)
        else:
            branch.value = value
        return ExtensionNode(path[:common], branch) if common else branch

    def _delete(self, node: Child, path: bytes) -> Node | None:
        """
        Remove C{path} below C{node}.

        @return: the node that replaces C{node} (L{None} if nothing is left);
            a clean node means nothing changed.
        """
        if type(node) is bytes:
            node = self._load(node)
        kind = type(node)
        if kind is LeafNode:
            return None if node.path == path else node
        if kind is ExtensionNode:
            length = len(node.path)
            if path[:length] != node.path:
                return node
            new = self._delete(node.child, path[length:])
            if new is None:
                return None
            if new.ref is not None or type(new) is BranchNode:
                node.child = new
                if new.ref is None:
                    _invalidate(node)
                return node
            # The branch below collapsed into a leaf or an extension: absorb it.
            new.path = node.path + new.path
            _invalidate(new)
            return new
        if path:
            index = path[0]
            child = node.children[index]
            if child is None:
                return node
            new = node.children[index] = self._delete(child, path[1:])
            if new is not None and new.ref is not None:
                return node
        elif not node.value:
            return node
        else:
            node.value = b""
        _invalidate(node)
        return self._normalise_branch(node)

    def _normalise_branch(self, branch: BranchNode) -> Node:
        """
        Collapse a branch left with a single entry into the node that
        Ethereum's canonical form requires.
        """
        used = [index for index, child in enumerate(branch.children) if child is not None]
        if len(used) + (1 if branch.value else 0) >= 2:
            return branch
        if not used:
            return LeafNode(b"", branch.value)
        index = used[0]
        child = branch.children[index]
        if type(child) is bytes:
            child = self._load(child)
        if type(child) is BranchNode:
            return ExtensionNode(bytes([index]), child)
        child.path = bytes([index]) + child.path
        _invalidate(child)
        return child

    # Hashing and committing

    def _ref(self, node: Node, new_nodes: dict[bytes, bytes] | None) -> bytes:
        """
        The reference that stands for C{node} in its parent, computed for
        dirty nodes and cached.  With C{new_nodes}, also collect the RLP of
        every hashed node not yet stored, and mark them stored.
        """
        ref = node.ref
        if ref is not None and (new_nodes is None or node.stored):
            return ref
        encoded = self._encode(node, new_nodes)
        if len(encoded) >= 32:
            if ref is None:
                ref = HASH_REF_PREFIX + keccak256(encoded)
            if new_nodes is not None:
                new_nodes[ref[1:]] = encoded
        else:
            ref = encoded
        node.ref = ref
        if new_nodes is not None:
            node.stored = True
        return ref

    def _child_ref(self, child: Child, new_nodes: dict[bytes, bytes] | None) -> bytes:
        """
        The reference of a child slot: blank, a hash not loaded, or a node.
        """
        if child is None:
            return EMPTY_STRING
        if type(child) is bytes:
            return child
        return self._ref(child, new_nodes)

    def _encode(self, node: Node, new_nodes: dict[bytes, bytes] | None) -> bytes:
        """
        The RLP of C{node}, with its children's references computed first.
        """
        kind = type(node)
        if kind is LeafNode:
            return encode_leaf(node.path, node.value)
        if kind is ExtensionNode:
            return encode_extension(node.path, self._child_ref(node.child, new_nodes))
        # The sixteen children's references inline (what _child_ref does): this is the heart of hashing.
        return encode_branch(
            [
                EMPTY_STRING
                if child is None
                else child
                if type(child) is bytes
                else child.ref  # type: ignore[union-attr]
                if child.ref is not None and (new_nodes is None or child.stored)  # type: ignore[union-attr]
                else self._ref(child, new_nodes)  # type: ignore[arg-type]
                for child in node.children  # type: ignore[union-attr]
            ],
            node.value,  # type: ignore[union-attr]
        )

    @property
    def root_hash(self) -> bytes:
        """
        The Keccak-256 root hash; hashes only the nodes changed since the
        last time it was computed.
        """
        root = self._root
        if root is None:
            return BLANK_ROOT
        if type(root) is bytes:
            return root[1:]
        ref = self._ref(root, None)
        # The root is hashed even when its RLP is short enough to embed.
        return ref[1:] if len(ref) == 33 else keccak256(ref)

    def commit(self) -> dict[bytes, bytes]:
        """
        Hash what changed and hand over the nodes created since the last
        commit.

        @return: the new nodes' RLP by their hash, for the caller to write
            (the root node is among them, whatever its size).
        """
        root = self._root
        if root is None or type(root) is bytes or root.stored:
            return {}
        new_nodes: dict[bytes, bytes] = {}
        ref = self._ref(root, new_nodes)
        if len(ref) != 33:
            new_nodes[keccak256(ref)] = ref
        return new_nodes

    # Proofs

    def prove(self, key: bytes) -> list[bytes]:
        """
        The RLP of the nodes on C{key}'s path that are referenced by hash,
        root first (EIP-1186): proves the value of C{key}, or its absence.

        @raise MissingTrieNodeError: a node on the key's path is missing.
        """
        self.root_hash
        path = self._nibbles(key)
        proof: list[bytes] = []
        node = self._root
        position = 0
        while node is not None:
            if type(node) is bytes:
                node = self._load(node)
            if not proof or len(node.ref) == 33:
                proof.append(self._encode(node, None))
            kind = type(node)
            if kind is LeafNode:
                break
            if kind is ExtensionNode:
                end = position + len(node.path)
                if path[position:end] != node.path:
                    break
                position, node = end, node.child
            elif position == len(path):
                break
            else:
                node = node.children[path[position]]
                position += 1
        return proof

    # Ordered iteration

    def _resolve(self, child: Child) -> Node | None:
        """
        The node in a child slot, read from the node reader if needed (not cached).
        """
        return self._load(child) if type(child) is bytes else child

    def _walk(self, child: Child, prefix: bytes, bound: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        """
        Yield C{(path, value)} below C{child}, whose path starts with
        C{prefix}, in ascending order, from C{bound} on (all if L{None}).
        """
        node = self._resolve(child)
        if node is None:
            return
        kind = type(node)
        if kind is LeafNode:
            full = prefix + node.path
            if bound is None or full >= bound:
                yield full, node.value
        elif kind is ExtensionNode:
            full = prefix + node.path
            if bound is not None:
                head = bound[: len(full)]
                if full < head:
                    return
                bound = bound if full == head else None
            yield from self._walk(node.child, full, bound)
        else:
            if node.value and (bound is None or prefix >= bound):
                yield prefix, node.value
            for index, grandchild in enumerate(node.children):
                if grandchild is None:
                    continue
                below, child_bound = prefix + bytes([index]), bound
                if bound is not None:
                    head = bound[: len(below)]
                    if below < head:
                        continue
                    child_bound = bound if below == head else None
                yield from self._walk(grandchild, below, child_bound)

    def _walk_back(
        self, child: Child, prefix: bytes, bound: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]:
        """
        Yield C{(path, value)} below C{child} in descending order, from
        C{bound} down (all if L{None}).
        """
        node = self._resolve(child)
        if node is None:
            return
        kind = type(node)
        if kind is LeafNode:
            full = prefix + node.path
            if bound is None or full <= bound:
                yield full, node.value
        elif kind is ExtensionNode:
            full = prefix + node.path
            if bound is not None:
                head = bound[: len(full)]
                if full > head:
                    return
                bound = bound if full == head else None
            yield from self._walk_back(node.child, full, bound)
        else:
            for index in range(15, -1, -1):
                grandchild = node.children[index]
                if grandchild is None:
                    continue
                below, child_bound = prefix + bytes([index]), bound
                if bound is not None:
                    head = bound[: len(below)]
                    if below > head:
                        continue
                    child_bound = bound if below == head else None
                yield from self._walk_back(grandchild, below, child_bound)
            if node.value and (bound is None or prefix <= bound):
                yield prefix, node.value

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """
        Every C{(key, value)} in ascending key order.  A L{SecureTrie}
        yields the hashed keys, as they are stored.

        @raise MissingTrieNodeError: a node is missing.
        """
        for path, value in self._walk(self._root, b"", None):
            yield nibbles_to_key(path), value

    def next_key(self, key: bytes) -> bytes | None:
        """
        The smallest stored key greater than C{key} (in the trie's key
        space), or L{None}.
        """
        bound = key_to_nibbles(key)
        for path, _ in self._walk(self._root, b"", bound):
            if path != bound:
                return nibbles_to_key(path)
        return None

    def previous_key(self, key: bytes) -> bytes | None:
        """
        The greatest stored key smaller than C{key} (in the trie's key
        space), or L{None}.
        """
        bound = key_to_nibbles(key)
        for path, _ in self._walk_back(self._root, b"", bound):
            if path != bound:
                return nibbles_to_key(path)
        return None


__all__ = ["BLANK_ROOT", "HexaryTrie", "NodeReader"]
