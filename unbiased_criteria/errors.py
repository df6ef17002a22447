"""The library's input errors: :class:`InputError`.

Bad input (a corrupt model file, a host that is not installed, data that does not fit the
model) raises an :class:`InputError`, a ``ValueError`` so that existing ``except ValueError``
code keeps working. The command line reports these as one line with exit status 2; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Input the library cannot use: the message says which argument or file and why."""
