"""The NumPy backend: Tensor SSA programs lowered to readable NumPy source (the design notes,
section 9). :func:`lower` gives the source, :func:`compile_program` a cached callable."""

from .numpy import CompiledProgram, Decision, Lowered, compile_program, lower, lower_program

__all__ = ["CompiledProgram", "Decision", "Lowered", "compile_program", "lower", "lower_program"]
