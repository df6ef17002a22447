"""A tqdm progress bar on stderr (off unless asked for; never in library logs).

tqdm is a core dependency (small, no dependencies of its own), imported only when a bar is
shown.
"""

from __future__ import annotations

from .options import check_bool

__all__ = ["progress_bar"]


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool, desc: str):
    """A tqdm bar over ``total`` steps when ``enabled``, else a no-op with the same methods.

    ``enabled`` is the caller's ``progress`` argument: ``ValueError`` naming it unless it is
    a bool (a truthy ``"no"`` showed the bar)."""
    if not check_bool(enabled, "progress"):
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=desc.rstrip("s"))
