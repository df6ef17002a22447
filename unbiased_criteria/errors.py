"""The library's input errors: :class:`InputError`.

Bad input (a corrupt model file, a host that is not installed, data that does not fit the
model) raises an :class:`InputError`, a ``ValueError`` so that existing ``except ValueError``
code keeps working. The command line reports these as one line with exit status 2; any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["InputError", "ObjectiveNeeded"]


class InputError(ValueError):
    """Input the library cannot use: the message says which argument or file and why."""


class ObjectiveNeeded(InputError):
    """The model cannot be scored with the objective read from it or named: ``objective=``
    must be given (a name, or a callable where no name fits). The message gives the Python
    API's advice; the command line, whose ``--objective`` takes a name only, adds its own."""
