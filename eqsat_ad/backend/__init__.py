"""Running plans: the NumPy backend loads the function the plan package built
(:func:`eqsat_ad.plan.lower.lower_program`) and calls it (docs/design.md, "The plan and the
backend"); :func:`lower` gives that source, :func:`compile_program` a cached callable. The Numba
backend (:mod:`.fused`) runs the same program as fused loop nests, and what it does not fuse as
the plan's NumPy lines."""

from .numpy import CompiledProgram, Decision, Lowered, compile_program, lower, lower_program

__all__ = ["CompiledProgram", "Decision", "Lowered", "compile_program", "lower", "lower_program"]
