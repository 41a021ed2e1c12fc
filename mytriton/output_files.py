"""Writing result files without clobbering anything the user did not name.

``-o PATH`` and ``mytriton run --out-dir`` write here. A regular file (new or
existing) is replaced atomically: the data goes to a temporary file beside it
that is renamed over it only once complete, so a failure leaves the old file
as it was and no temporary file behind. The new file keeps an existing
file's permissions (and owner, where the process may set it); a new one gets
``0666 & ~umask`` like any file a shell redirection creates.

What is not a regular file is never replaced: a device (``/dev/null``), a
FIFO or a socket is opened and written in place, and a symbolic link the user
named stays a link (its target is written instead). Inside ``--out-dir``,
where names are chosen by mytriton, a link found there is replaced, never
written through.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from typing import BinaryIO, Callable

from mytriton import scratch
from mytriton.diagnostics import CompileError

Writer = Callable[[BinaryIO], object]  # what it returns (a count of bytes, None) is not read

# Paths that name the process's own files through the kernel (/dev/stdout ->
# /proc/self/fd/1): always written in place, never replaced.
_MAGIC_PREFIXES = ("/dev/", "/proc/")


def write_output(path: str, data: str | bytes) -> None:
    """The ``-o PATH`` of every stage: all of ``data`` or nothing."""
    payload = data.encode() if isinstance(data, str) else data
    _check_not_directory(path)
    try:
        own = os.lstat(path)
    except FileNotFoundError:
        own = None
    except OSError as err:
        raise _cannot_write(path, err) from None
    if own is not None and stat.S_ISLNK(own.st_mode):
        # The user named the link: it stays a link, and what it points at
        # gets the data (a link to a link to a device is written in place).
        try:
            target_stat = os.stat(path)
        except FileNotFoundError:
            target_stat = None
        except OSError as err:  # a loop of links, a component that is not a directory
            raise _cannot_write(path, err) from None
        if target_stat is not None and stat.S_ISDIR(target_stat.st_mode):
            raise CompileError(f"cannot write {path}: it is a directory")
        in_place = (target_stat is not None and not stat.S_ISREG(target_stat.st_mode)
                    or _through_the_kernels_links(path))
        if in_place:
            _write_in_place(path, payload)
        else:
            _replace(os.path.realpath(path), lambda handle: handle.write(payload), target_stat, shown=path)
        return
    if own is None or stat.S_ISREG(own.st_mode):
        _replace(path, lambda handle: handle.write(payload), own, shown=path)
    else:
        _write_in_place(path, payload)


def prepare_directory(directory: str, option: str) -> None:
    """Make ``directory`` (and its parents) unless it exists; it must be a
    directory (or a link to one the user named)."""
    try:
        os.makedirs(directory, exist_ok=True)
    except FileExistsError:
        raise CompileError(f"{option} {directory}: exists and is not a directory") from None
    except (OSError, ValueError) as err:
        raise CompileError(f"{option} {directory}: {getattr(err, 'strerror', None) or err}") from None


def replace_in_directory(directory: str, name: str, write: Writer) -> str:
    """Write ``directory/name`` atomically through ``write(handle)``. Whatever
    is there is replaced, never followed: a planted link is swapped for the
    new file and its target stays untouched."""
    path = os.path.join(directory, name)
    try:
        existing = os.lstat(path)
    except FileNotFoundError:
        existing = None
    except OSError as err:
        raise _cannot_write(path, err) from None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise CompileError(f"cannot write {path}: it is a directory")
    keep = existing if existing is not None and stat.S_ISREG(existing.st_mode) else None
    _replace(path, write, keep, shown=path)
    return path


# ---- the two ways to write ---------------------------------------------------------------


def _replace(target: str, write: Writer, previous: os.stat_result | None, shown: str) -> None:
    """A temporary file beside ``target``, renamed over it when complete."""
    directory, base = os.path.split(target)
    partial = None
    fd = -1
    try:
        for _ in range(100):
            partial = os.path.join(directory, f".{base}.{secrets.token_hex(6)}.partial")
            try:
                # 0o666: the umask makes it what a new file usually gets. Registered
                # with scratch, so that an interrupted run removes it.
                fd = scratch.create_file(partial, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
                break
            except FileExistsError:
                partial = None
        else:
            raise FileExistsError(f"no free temporary name beside {target}")
        if previous is not None:
            _keep_owner_and_mode(fd, previous)
        with os.fdopen(fd, "wb") as handle:
            fd = -1  # the handle owns it now
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
        scratch.release(partial)
        partial = None
    except OSError as err:
        raise _cannot_write(shown, err) from None
    finally:
        if fd >= 0:
            os.close(fd)
        if partial is not None:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            scratch.release(partial)


def _keep_owner_and_mode(fd: int, previous: os.stat_result) -> None:
    # Owner first: changing it clears set-id bits that the mode then restores.
    if (previous.st_uid, previous.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):  # only root may give a file away; the mode is still kept
            os.fchown(fd, previous.st_uid, previous.st_gid)
    os.fchmod(fd, stat.S_IMODE(previous.st_mode))


def _write_in_place(path: str, payload: bytes) -> None:
    """A device, FIFO or the process's own stdout: open it and write."""
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise _cannot_write(path, err) from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            # /dev/stdout redirected to a file: append as the shell's own
            # writes would, not over what is already there.
            os.close(fd)
            fd = -1
            fd = os.open(path, flags | os.O_APPEND)
        view = memoryview(payload)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as err:
        raise _cannot_write(path, err) from None
    finally:
        if fd >= 0:
            os.close(fd)


def _through_the_kernels_links(path: str) -> bool:
    """Whether following the link ``path`` passes through /dev or /proc (as
    /dev/stdout does), where a link's target is the process's own file."""
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on links in a row
        if current.startswith(_MAGIC_PREFIXES):
            return True
        try:
            target = os.readlink(current)
        except OSError:  # not a link (any more): the chain ended elsewhere
            return False
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
    return False


def _check_not_directory(path: str) -> None:
    if path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise CompileError(f"cannot write {path}: it is a directory")


def _cannot_write(path: str, err: OSError) -> CompileError:
    return CompileError(f"cannot write {path}: {err.strerror or err}")
