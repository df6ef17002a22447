"""Write a file so that it is either the old one or the whole new one: :func:`write_atomic`.

Writing in place leaves a 0-byte or truncated file after a SIGTERM or a full disk, and destroys
the input when the output is the same file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file in the same folder, fsync,
    ``os.replace``.

    Parameters
    ----------
    path : str or path-like
        The file to create or replace (a symbolic link's target). An existing file keeps its
        permissions; a new one gets the usual ``0o666 & ~umask``.
    data : bytes or str
        The whole content; a str is written as UTF-8.

    Raises
    ------
    OSError
        The folder is not writable, the disk is full... ``path`` is then unchanged and the
        temporary file removed.
    """
    # through a symbolic link, as a shell's redirection writes (the link itself stays)
    target = Path(os.path.realpath(path))
    blob = data.encode("utf-8") if isinstance(data, str) else bytes(data)
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
    except BaseException:  # KeyboardInterrupt too: never leave the temporary file behind
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
