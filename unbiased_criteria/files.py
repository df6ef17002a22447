"""Write a file so that it is either the old one or the whole new one: :func:`write_atomic`.

Writing in place leaves a 0-byte or truncated file after a SIGTERM or a full disk, and destroys
the input when the output is the same file. What is not a regular file (a named pipe, a
device, a descriptor such as ``/dev/stdout``) is written in place, as a shell's ``>`` does:
renaming over it would replace the pipe or device by a file.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _descriptor(path: str | os.PathLike) -> int | None:
    """The open file descriptor ``path`` names through its symbolic links (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/self/fd/N``), or None."""
    own = rf"/proc/(?:self|thread-self|{os.getpid()})/fd/(\d+)|/dev/fd/(\d+)"
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's limit on links followed
        match = re.fullmatch(own, current)
        if match:
            return int(match.group(1) or match.group(2))
        if not os.path.islink(current):
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current),
                                                os.readlink(current)))
    return None


def _write_in_place(path: str | os.PathLike, blob: bytes) -> bool:
    """Write ``blob`` as a shell's ``>`` would where renaming over ``path`` would be wrong:
    an open descriptor (``/dev/stdout``: appended where it stands, a file opened with ``>>``
    keeps its content) or an existing non-regular file (named pipe, device). False: ``path``
    is a regular file or does not exist."""
    fd = _descriptor(path)
    if fd is None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return False
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            return False  # a folder: the rename below fails with its own error
        with open(path, "wb") as f:  # a FIFO blocks here until a reader opens it, as `>`
            f.write(blob)
        return True
    for stream in (sys.stdout, sys.stderr):  # what the process printed comes first
        try:
            if stream is not None and stream.fileno() == fd:
                stream.flush()
        except (AttributeError, OSError, ValueError):  # replaced or closed streams
            pass
    view = memoryview(blob)
    while view:
        view = view[os.write(fd, view):]
    return True


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsync,
    ``os.replace``; what is not a regular file is written in place.

    Parameters
    ----------
    path : str or path-like
        The file to create or replace (a symbolic link's target). An existing file keeps its
        permissions; a new one gets the usual ``0o666 & ~umask``. A named pipe, a device or
        an open descriptor (``/dev/stdout``, ``/dev/fd/N``) is written in place, as a
        shell's ``>`` does (not atomically: a pipe or device cannot be replaced).
    data : bytes or str
        The whole content; a str is written as UTF-8.

    Raises
    ------
    OSError
        The folder is not writable, the disk is full, ``path`` ends with a path separator
        (a folder, ``IsADirectoryError``)... A regular file at ``path`` is then unchanged
        and the temporary file removed (on any exception, ``SystemExit`` and
        ``KeyboardInterrupt`` too).
    """
    text = os.fspath(path)
    if text.endswith(tuple(s for s in (os.sep, os.altsep) if s)):
        # Path() drops the separator: "newdir/" would be written as a file "newdir"
        raise IsADirectoryError(errno.EISDIR, "names a folder (ends with a separator)", text)
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if _write_in_place(path, blob):
        return
    # through a symbolic link, as a shell's redirection writes (the link itself stays)
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                               dir=target.parent if str(target.parent) else ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:  # SystemExit (the CLI's SIGTERM), KeyboardInterrupt too
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    # the rename itself is durable once the folder is synced (not possible on every system)
    try:
        dir_fd = os.open(target.parent if str(target.parent) else ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
