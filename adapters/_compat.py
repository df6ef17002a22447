"""What both hosts' compatibility modules share: the error for an unknown host layout.

Each adapter keeps every private host API it uses in its own ``compat`` module
(``unbiased_criteria.adapters.lightgbm.compat``, ``unbiased_criteria.adapters.xgboost.compat``),
with the host versions it is known to work with; :func:`private` looks one up and fails with
:class:`HostVersionError` naming the host, its version and the missing name.
"""

from __future__ import annotations

from typing import Any

from unbiased_criteria.errors import HostVersionError

__all__ = ["HostVersionError", "private"]


def private(owner: Any, name: str, host: str, version: str, known: str) -> Any:
    """``owner.<name>``, or :class:`HostVersionError` saying which host layout is unknown.

    ``host`` and ``version`` are the installed host's name and version, ``known`` the
    versions the adapter is known to work with.
    """
    try:
        return getattr(owner, name)
    except AttributeError:
        where = getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None) \
            or type(owner).__name__
        raise HostVersionError(
            f"{host} {version} has no {where}.{name}, which unbiased-criteria relies on (known "
            f"to work with {host} {known}); install one of those versions or an "
            "unbiased-criteria that supports this one"
        ) from None
