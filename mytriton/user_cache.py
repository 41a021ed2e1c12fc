"""The user's cache directory: nvcc's builds and the grammars' parse tables.

``$MYTRITON_CACHE_DIR``, else ``$XDG_CACHE_HOME/mytriton``, else
``~/.cache/mytriton``. What is read from it
is trusted only as far as the directory is private: a file is used only when
it is a regular file (not a link) owned by this user in a folder owned by
this user, and neither is writable by anyone else. Nothing read from it is
ever unpickled or run.

``mytriton cache info`` and ``mytriton cache clear`` see only mytriton's own
entries (``own_entries``): a cache directory pointed at a folder that holds
other files (``MYTRITON_CACHE_DIR=$HOME``) loses none of them.
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Iterator


def cache_root() -> Path:
    from mytriton.knobs import variable

    _, root = variable("MYTRITON_CACHE_DIR")  # or Triton's TRITON_CACHE_DIR
    if not root:
        # The XDG base-directory spec: a relative XDG_CACHE_HOME is invalid and ignored.
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(Path.home(), ".cache")
        root = os.path.join(base, "mytriton")
    return Path(root)


def always_compile() -> bool:
    """``MYTRITON_ALWAYS_COMPILE=1`` (or Triton's ``TRITON_ALWAYS_COMPILE``):
    builds never reuse a cache entry (they still write one)."""
    from mytriton.knobs import flag

    return flag("MYTRITON_ALWAYS_COMPILE")


# The names mytriton gives its entries, folder by folder (nvcc.py, ir/grammar.py,
# runtime/autotuner.py), and the temporary files of a write (write_private).
_OWN_NAMES = {
    "": re.compile(r"[0-9a-f]{64}\.(cubin|ptx|usage)|\.[a-z0-9_]{8}\.partial"),
    "grammars": re.compile(r"[a-z0-9_]+-[a-z0-9_]+-[0-9a-f]{24}\.json|\.[a-z0-9_]{8}\.partial"),
    "autotune": re.compile(r"[0-9a-f]{64}\.json|\.[a-z0-9_]{8}\.partial"),
}


def own_entries(root: Path | None = None) -> Iterator[Path]:
    """mytriton's own files in the cache (regular files, never followed links)."""
    root = cache_root() if root is None else root
    for folder, pattern in _OWN_NAMES.items():
        directory = root / folder if folder else root
        try:
            if not stat.S_ISDIR(os.lstat(directory).st_mode):
                continue
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in names:
            path = directory / name
            try:
                if pattern.fullmatch(name) and stat.S_ISREG(os.lstat(path).st_mode):
                    yield path
            except OSError:
                continue


def cache_usage(root: Path | None = None) -> tuple[int, int]:
    """(entries, bytes) of mytriton's own files in the cache."""
    count = size = 0
    for path in own_entries(root):
        try:
            size += os.lstat(path).st_size
        except OSError:
            continue
        count += 1
    return count, size


def clear_cache(root: Path | None = None) -> tuple[int, int]:
    """Remove mytriton's own entries (and the folders they leave empty);
    (entries, bytes) removed. Anything else in the folder stays."""
    root = cache_root() if root is None else root
    count = size = 0
    for path in list(own_entries(root)):
        try:
            length = os.lstat(path).st_size
            os.unlink(path)
        except OSError:
            continue
        count += 1
        size += length
    for folder in _OWN_NAMES:
        if folder:
            try:
                os.rmdir(root / folder)  # only when empty
            except OSError:
                pass
    return count, size


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
