"""The phone's virtual file system: what ``cat``, ``rm``, ``screencap FILE`` and ``sync:`` see.

Only the paths clients actually use exist (``/sdcard`` and its usual folders, ``/data/local/tmp``);
files live in memory. ``/storage/emulated/0``, ``/storage/self/primary`` and ``/mnt/sdcard`` are
the same folder as ``/sdcard``, as on a real phone. The top-level folders are mount points: they
can be emptied but not removed.
"""

from __future__ import annotations

import posixpath
import stat
import time
from dataclasses import dataclass

#: Folders every phone starts with. The ones in ``MOUNTS`` can never be removed.
DEFAULT_DIRS = (
    "/",
    "/data",
    "/data/local",
    "/data/local/tmp",
    "/dev",
    "/sdcard",
    "/sdcard/Alarms",
    "/sdcard/DCIM",
    "/sdcard/Documents",
    "/sdcard/Download",
    "/sdcard/Movies",
    "/sdcard/Music",
    "/sdcard/Pictures",
    "/storage",
    "/system",
    "/system/bin",
)
MOUNTS = frozenset(
    ("/", "/data", "/data/local", "/data/local/tmp", "/dev", "/sdcard", "/storage", "/system", "/system/bin")
)
_ALIASES = ("/storage/emulated/0", "/storage/self/primary", "/mnt/sdcard")

#: Linux's PATH_MAX and NAME_MAX: longer paths fail with ENAMETOOLONG, as on a phone.
PATH_MAX = 4096
NAME_MAX = 255

DIR_MODE = stat.S_IFDIR | 0o771
FILE_MODE = stat.S_IFREG | 0o660


class FsError(Exception):
    """A file operation failed; the message is toybox's errno text (``No such file or directory``)."""


@dataclass
class Node:
    """A file (``data`` is bytes) or a folder (``data`` is None)."""

    data: bytes | None
    mode: int
    mtime: int

    @property
    def is_dir(self) -> bool:
        return self.data is None

    @property
    def size(self) -> int:
        return 0 if self.data is None else len(self.data)


def normalize(path: str, cwd: str = "/") -> str:
    """An absolute, normalized path with the ``/sdcard`` aliases folded onto ``/sdcard``.

    Raises :class:`FsError` ("File name too long") past ``PATH_MAX`` / ``NAME_MAX``.
    """
    if len(path) >= PATH_MAX or any(len(part) > NAME_MAX for part in path.split("/")):
        raise FsError("File name too long")
    full = posixpath.normpath(posixpath.join(cwd, path)) if path else cwd
    if full.startswith("//"):
        full = "/" + full.lstrip("/")
    for alias in _ALIASES:
        if full == alias or full.startswith(alias + "/"):
            return "/sdcard" + full[len(alias) :]
    return full


class VirtualFS:
    """An in-memory tree keyed by normalized absolute path. Not thread-safe: callers hold the phone lock."""

    def __init__(self) -> None:
        now = int(time.time())
        self._nodes: dict[str, Node] = {d: Node(None, DIR_MODE, now) for d in DEFAULT_DIRS}

    def stat(self, path: str) -> Node | None:
        try:
            return self._nodes.get(normalize(path))
        except FsError:
            return None

    def exists(self, path: str) -> bool:
        return self.stat(path) is not None

    def is_dir(self, path: str) -> bool:
        node = self.stat(path)
        return node is not None and node.is_dir

    def read(self, path: str) -> bytes:
        node = self._nodes.get(normalize(path))
        if node is None:
            raise FsError("No such file or directory")
        if node.data is None:
            raise FsError("Is a directory")
        return node.data

    def write(
        self, path: str, data: bytes, *, append: bool = False, mode: int = 0o660, parents: bool = False
    ) -> None:
        """Create or replace (or append to) a file. The parent folder must exist unless ``parents``."""
        full = normalize(path)
        parent = posixpath.dirname(full)
        if parents:
            self.mkdir(parent, parents=True)
        parent_node = self._nodes.get(parent)
        if parent_node is None:
            raise FsError("No such file or directory")
        if not parent_node.is_dir:
            raise FsError("Not a directory")
        old = self._nodes.get(full)
        if old is not None and old.is_dir:
            raise FsError("Is a directory")
        if append and old is not None and old.data is not None:
            data = old.data + data
        self._nodes[full] = Node(bytes(data), stat.S_IFREG | (mode & 0o7777), int(time.time()))

    def mkdir(self, path: str, *, parents: bool = False) -> None:
        full = normalize(path)
        node = self._nodes.get(full)
        if node is not None:
            if parents and node.is_dir:
                return
            raise FsError("File exists")
        missing = [full]  # this folder, then each missing ancestor (a loop: any depth fits)
        while (parent := posixpath.dirname(missing[-1])) not in self._nodes:
            if not parents:
                raise FsError("No such file or directory")
            missing.append(parent)
        if not self._nodes[parent].is_dir:
            raise FsError("Not a directory")
        now = int(time.time())
        for folder in reversed(missing):
            self._nodes[folder] = Node(None, DIR_MODE, now)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file, or a folder tree with ``recursive``. Mount points are emptied, never removed."""
        full = normalize(path)
        node = self._nodes.get(full)
        if node is None:
            raise FsError("No such file or directory")
        if node.is_dir:
            if not recursive:
                raise FsError("Is a directory")
            prefix = full.rstrip("/") + "/"
            for key in [k for k in self._nodes if k.startswith(prefix) and k not in MOUNTS]:
                del self._nodes[key]
            if full in MOUNTS:
                raise FsError("Permission denied")
        del self._nodes[full]

    def listdir(self, path: str) -> list[tuple[str, Node]]:
        """``(name, node)`` of a folder's direct children, sorted by name."""
        full = normalize(path)
        node = self._nodes.get(full)
        if node is None:
            raise FsError("No such file or directory")
        if not node.is_dir:
            raise FsError("Not a directory")
        prefix = full.rstrip("/") + "/"
        children = [
            (key[len(prefix) :], child)
            for key, child in self._nodes.items()
            if key.startswith(prefix) and key != full and "/" not in key[len(prefix) :]
        ]
        return sorted(children)
