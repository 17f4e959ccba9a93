"""
The keystore directory: one Web3 Secret Storage file per key, the layout
geth uses (C{UTC--<time>--<address>}), so that a file copied in from geth,
ethers or web3.py is found, and a file nodex writes can be copied out.

Plain blocking file operations; the accounts service calls them from its
own threads.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from nodex.primitives import Address
from nodex.wallet.errors import KeyfileError
from nodex.wallet.keyfile import Keyfile, loads_keyfile

MAX_KEYFILE_BYTES = 64 * 1024
"""Larger files are not keyfiles (a real one is about 500 bytes) and are not read."""


@dataclass(frozen=True)
class StoredKey:
    """
    A keyfile found in the directory.

    @ivar path: where it is.
    @ivar keyfile: its parsed contents.
    """

    path: Path
    keyfile: Keyfile

    @property
    def address(self) -> Address:
        """
        The address the file holds (files without one are never stored keys).
        """
        assert self.keyfile.address is not None
        return self.keyfile.address


@dataclass(frozen=True)
class SkippedFile:
    """
    A file of the directory that is not a usable keyfile, and why.
    """

    name: str
    reason: str


class KeyStoreDirectory:
    """
    A directory of keyfiles, private to the user (mode 0700, files 0600).
    """

    def __init__(self, path: Path) -> None:
        """
        @param path: the directory (created by L{ensure}).
        """
        self.path = path

    def ensure(self) -> None:
        """
        Create the directory with mode 0700 if it is missing, and take group
        and other permissions away from an existing one.

        @raise OSError: it cannot be created.
        """
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.path.stat().st_mode & 0o077:
            self.path.chmod(0o700)

    def read(self, path: Path) -> Keyfile:
        """
        Read and parse one keyfile.

        @raise KeyfileError: it is not a usable keyfile.
        @raise OSError: it cannot be read.
        """
        with path.open("rb") as handle:
            data = handle.read(MAX_KEYFILE_BYTES + 1)
        if len(data) > MAX_KEYFILE_BYTES:
            raise KeyfileError(f"larger than {MAX_KEYFILE_BYTES} bytes")
        return loads_keyfile(data)

    def scan(self) -> tuple[list[StoredKey], list[SkippedFile]]:
        """
        Every usable keyfile, in file-name order (creation order for the
        names nodex and geth write), and every file skipped with its reason:
        unreadable, not a version 3 keyfile, naming no address, or a second
        file for an address already found.  Hidden files, editor backups
        (C{~}) and directories are ignored.
        """
        found: list[StoredKey] = []
        skipped: list[SkippedFile] = []
        seen: set[Address] = set()
        try:
            names = sorted(os.listdir(self.path))
        except FileNotFoundError:
            return found, skipped
        for name in names:
            path = self.path / name
            if name.startswith(".") or name.endswith("~") or not path.is_file():
                continue
            try:
                keyfile = self.read(path)
            except KeyfileError as exc:
                skipped.append(SkippedFile(name, str(exc)))
                continue
            except OSError as exc:
                skipped.append(SkippedFile(name, f"cannot be read: {exc.strerror}"))
                continue
            if keyfile.address is None:
                skipped.append(SkippedFile(name, "names no address"))
            elif keyfile.address in seen:
                skipped.append(SkippedFile(name, f"a second file for address 0x{keyfile.address.hex()}"))
            else:
                seen.add(keyfile.address)
                found.append(StoredKey(path, keyfile))
        return found, skipped

    def write(self, keyfile: Keyfile, name: str) -> StoredKey:
        """
        Write a keyfile atomically: to a hidden temporary file of mode 0600
        in the directory, flushed to disk, then renamed into place.

        @raise OSError: it cannot be written (the temporary file is removed).
        @raise FileExistsError: a file of that name exists.
        """
        final = self.path / name
        if final.exists():
            raise FileExistsError(f"keyfile {name} exists")
        temporary = self.path / f".{name}.{os.getpid()}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(keyfile.dumps())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, final)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self._sync_directory()
        return StoredKey(final, keyfile)

    def _sync_directory(self) -> None:
        """
        Flush the directory entry of a renamed file to disk.
        """
        descriptor = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


__all__ = ["MAX_KEYFILE_BYTES", "KeyStoreDirectory", "SkippedFile", "StoredKey"]
