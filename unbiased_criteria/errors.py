"""The library's input errors: :class:`InputError`.

Bad input (a corrupt model file, a host that is not installed, data that does not fit the
model) raises an :class:`InputError`, a ``ValueError`` so that existing ``except ValueError``
code keeps working. The command line reports these as one line with exit status 2, an
installed host it cannot work with (:class:`HostVersionError`) as one line with status 1;
any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["InputError", "ObjectiveNeeded", "HostVersionError"]


class InputError(ValueError):
    """Input the library cannot use: the message says which argument or file and why."""


class ObjectiveNeeded(InputError):
    """The model cannot be scored with the objective read from it or named: ``objective=``
    must be given (a name, or a callable where no name fits). The message gives the Python
    API's advice; the command line, whose ``--objective`` takes a name only, adds its own."""


class HostVersionError(RuntimeError):
    """The installed host is a version the adapters do not work with (too old, or lacking a
    private API they rely on): the message names the host, its version and the remedy. The
    command line reports it as one line with exit status 1, not as a bug."""
