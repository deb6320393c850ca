"""Errors that name the problem and where it is."""

from __future__ import annotations

from .expr import Loc


class EqsatError(Exception):
    """Base class of every error this library raises on bad input."""


class ProgramError(EqsatError):
    """A malformed program: the message names the construct, ``loc`` where it is (if known)."""

    def __init__(self, message: str, loc: Loc | None = None) -> None:
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc is not None else message)


class ShapeError(EqsatError):
    """Arguments whose shapes do not fit the program's parameters."""


class ArgumentTypeError(ShapeError, TypeError):
    """An argument of the wrong kind (floats for an index array, weights for a relation)."""
