"""The user's cache directory: nvcc's builds and the grammars' parse tables.

``$MYTRITON_CACHE_DIR``, default ``~/.cache/mytriton``. What is read from it
is trusted only as far as the directory is private: a file is used only when
it is a regular file (not a link) owned by this user in a folder owned by
this user, and neither is writable by anyone else. Nothing read from it is
ever unpickled or run.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def cache_root() -> Path:
    root = os.environ.get("MYTRITON_CACHE_DIR") or os.path.join(Path.home(), ".cache", "mytriton")
    return Path(root)


def _private(st: os.stat_result) -> bool:
    return st.st_uid == os.getuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_private(path: Path) -> bytes | None:
    """The bytes of ``path`` if it is a private regular file in a private
    folder (see the module's doc); None otherwise or when it cannot be read."""
    try:
        if not _private(os.stat(path.parent)):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _private(st):
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError:
        return None
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically, mode 0600, creating its folder
    (mode 0700) if needed; False when the cache cannot be written, which
    only costs time. A partial file never stays behind."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(os.stat(path.parent)):
            return False
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".partial")
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(partial, path)  # our own regular file in our own folder
        return True
    except OSError:
        return False
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
