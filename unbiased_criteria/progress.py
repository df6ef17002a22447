"""A tqdm progress bar on stderr (off unless asked for; never in library logs).

tqdm is a core dependency (small, no dependencies of its own), imported only when a bar is
shown.
"""

from __future__ import annotations

__all__ = ["progress_bar"]


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool, desc: str):
    """A tqdm bar over ``total`` steps when ``enabled``, else a no-op with the same methods."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=desc.rstrip("s"))
