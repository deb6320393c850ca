"""Errors that name the problem and where it is.

Every error this library raises on bad input is an :class:`EqsatError`, and also the standard
exception a Python user expects: a malformed program, a shape that does not fit, a rule file
egglog rejects are ``ValueError``s; an argument of the wrong type is a ``TypeError``. So
``except ValueError`` (as around NumPy or JAX code) and ``except EqsatError`` both work.
"""

from __future__ import annotations

from .expr import Loc


class EqsatError(Exception):
    """Base class of every error this library raises on bad input."""


class EqsatValueError(EqsatError, ValueError):
    """A value the library cannot use: an option out of range, an unknown name."""


class EqsatTypeError(EqsatError, TypeError):
    """An argument of the wrong type (a list where a Program or a function is expected, ...)."""


class ProgramError(EqsatValueError):
    """A malformed program: the message names the construct, ``loc`` where it is (if known)."""

    def __init__(self, message: str, loc: Loc | None = None) -> None:
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc is not None else message)


class ShapeError(EqsatValueError):
    """Arguments whose shapes do not fit the program's parameters."""


class ArgumentTypeError(ShapeError, TypeError):
    """An argument of the wrong kind (floats for an index array, weights for a relation)."""
