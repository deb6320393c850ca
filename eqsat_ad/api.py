"""The end-to-end API (shared/DESIGN.md section 5): differentiate, optimize, compile, run.

    g = ea.grad(prog, wrt="A")     # a callable gradient
    g(A=..., x=...)                # keyword or positional arguments, like the program
    g.source, g.program, g.report  # generated NumPy code, optimized adjoint, CostReport

Every function accepts a :class:`~eqsat_ad.ir.Program` or a NumPy-subset Python function
(Tangent-style). A function is translated by :func:`eqsat_ad.frontend.numpy_subset.translate`
when the shapes are known: at the first call (from the arguments) or ahead of time with
``shapes={...}``; compiled versions are cached per shape and dtype signature.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .backend.numpy import CompiledProgram, compile_program
from .ir.errors import EqsatError, ProgramError, ShapeError
from .ir.expr import Access, Const, Expr, accessed_names, map_children
from .ir.printer import print_program
from .ir.program import Program, Statement

__all__ = ["Compiled", "compile", "grad", "hessian", "jvp", "vjp"]

Wrt = str | int | Sequence[str | int] | None
ShapeSpec = Mapping[str, tuple[int | str, ...]]


# ================================================================================================
# Building the programs
# ================================================================================================


def _wrt_names(params: Sequence[str], kinds: Sequence[str], wrt: Wrt, what: str) -> tuple[
    tuple[str, ...], bool
]:
    """``wrt`` as parameter names, and whether the caller asked for a tuple."""
    if wrt is None:
        for name, kind in zip(params, kinds, strict=True):
            if kind == "tensor":
                return (name,), False
        raise ProgramError(f"{what} has no float parameter to differentiate with respect to")
    several = isinstance(wrt, (tuple, list))
    items = list(wrt) if several else [wrt]  # type: ignore[list-item]
    names: list[str] = []
    for w in items:
        if isinstance(w, bool) or not isinstance(w, (str, int)):
            raise ProgramError(f"wrt must be parameter names or positions, got {w!r}")
        if isinstance(w, int):
            if not -len(params) <= w < len(params):
                raise ProgramError(
                    f"wrt position {w} is out of range: {what} has {len(params)} parameter(s) "
                    f"({', '.join(params)})"
                )
            w = params[w]
        elif w not in params:
            raise ProgramError(
                f"cannot differentiate with respect to {w!r}: not a parameter of {what} "
                f"(parameters: {', '.join(params) or 'none'})"
            )
        names.append(w)
    if not names:
        raise ProgramError("wrt is empty: name at least one parameter")
    return tuple(names), several


def gradient_program(
    prog: Program, wrt: Sequence[str], *, as_tuple: bool = False, preserve_result: bool = False
) -> Program:
    """The gradient of ``prog``'s scalar output with respect to ``wrt`` (seed 1), as a Program.

    Same parameters as ``prog``; returns the gradients in order (a tuple when ``as_tuple`` or
    several names), followed by the function's value when ``preserve_result``. Built from
    :func:`eqsat_ad.ad.vjp` with the cotangent fixed to 1.
    """
    from .ad import vjp as ad_vjp

    if prog.returns_tuple or len(prog.outputs) != 1 or _is_tensor_output(prog, prog.outputs[0]):
        raise ProgramError(
            f"grad needs a program with one scalar output; {prog.name!r} returns "
            + ("a tuple" if prog.returns_tuple else "a tensor")
            + " (use ea.vjp for a vector-Jacobian product)"
        )
    names = tuple(wrt)
    adjoint = ad_vjp(prog, names if len(names) > 1 else names[0])
    (seed,) = [p for p in adjoint.params if p.name not in prog.param_names]
    one = Const(1.0)
    primal = {s.name for s in prog.statements}
    stmts = list(prog.statements) + [
        Statement(s.name, s.indices, _replace_access(s.body, seed.name, one), s.loc)
        for s in adjoint.statements
        if s.name not in primal
    ]
    outputs = tuple(_replace_access(o, seed.name, one) for o in adjoint.outputs)
    if preserve_result:
        outputs += (prog.outputs[0],)
    several = as_tuple or len(names) > 1 or preserve_result
    return _prune(Program(prog.params, tuple(stmts), outputs, several, f"{prog.name}_grad"))


def _is_tensor_output(prog: Program, out: Expr) -> bool:
    if not (isinstance(out, Access) and not out.indices):
        return False
    try:
        return len(prog.shape_of(out.name)) > 0
    except KeyError:
        return False


def _replace_access(e: Expr, name: str, value: Expr) -> Expr:
    """``e`` with every read of the scalar ``name`` replaced by ``value``."""
    if isinstance(e, Access):
        return value if e.name == name and not e.indices else e
    return map_children(e, lambda c: _replace_access(c, name, value))


def _prune(prog: Program) -> Program:
    """Drop statements the outputs do not need."""
    needed: set[str] = set()
    for o in prog.outputs:
        needed |= accessed_names(o)
    kept: list[Statement] = []
    for s in reversed(prog.statements):
        if s.name in needed:
            kept.append(s)
            needed |= s.reads()
    return replace(prog, statements=tuple(reversed(kept)))


def _optimize(
    naive: Program,
    optimize: bool,
    rules: Any,
    limits: Any,
    sizes: Mapping[str, int] | None,
) -> tuple[Program, Any]:
    """Run the optimizer (when asked and available); returns (program, CostReport or None)."""
    if optimize:
        try:
            from .egraph.optimize import optimize as run_optimizer
        except ImportError:
            run_optimizer = None
        if run_optimizer is not None:
            kwargs: dict[str, Any] = {"sizes": sizes}
            if rules is not None:
                kwargs["rules"] = rules
            if limits is not None:
                kwargs["limits"] = limits
            result = run_optimizer(naive, **kwargs)
            return result.program, result.report
    return naive, _plain_report(naive, sizes)


def _plain_report(prog: Program, sizes: Mapping[str, int] | None) -> Any:
    """The cost report of a program that was not optimized (saturation "not run")."""
    try:
        from .cost.report import CostReport, SaturationStats
    except ImportError:
        return None
    stats = SaturationStats(stop_reason="not run")
    report = CostReport.build(naive=prog, optimized=prog, sizes=sizes, stats=stats)
    return report


# ================================================================================================
# The compiled callable
# ================================================================================================


@dataclass(frozen=True)
class _Stage:
    """One specialization: the naive and optimized programs, the report and the compiled code."""

    naive: Program
    program: Program
    report: Any
    compiled: CompiledProgram


class Compiled:
    """A compiled gradient / function / Hessian. Call it with the program's arguments.

    ``.source`` (generated NumPy source), ``.program`` (the optimized program it runs),
    ``.naive`` (before optimization), ``.report`` (CostReport). For a Python function these
    describe the most recent specialization (shapes bound at the first call or by ``shapes=``).
    """

    def __init__(
        self,
        kind: str,
        target: Program | Callable[..., Any],
        build: Callable[[Program], Program],
        *,
        optimize: bool,
        rules: Any,
        limits: Any,
        sizes: Mapping[str, int] | None,
        verbose: bool,
        shapes: ShapeSpec | None = None,
        dtypes: Mapping[str, Any] | None = None,
    ) -> None:
        self.kind = kind
        self._build = build
        self._options = (optimize, rules, limits, sizes)
        self._verbose = verbose
        self._stages: dict[tuple, _Stage] = {}
        self._latest: _Stage | None = None
        self._lock = threading.Lock()
        if isinstance(target, Program):
            self._fn = None
            self._signature = None
            self._latest = self._stage_for(target, key=())
        else:
            if not callable(target):
                raise ProgramError(
                    f"expected a Program or a Python function, got {type(target).__name__}"
                )
            self._fn = target
            try:
                self._signature = inspect.signature(target)
            except (TypeError, ValueError) as exc:
                raise ProgramError(f"cannot read the signature of {target!r}: {exc}") from None
            self.__wrapped__ = target
            if shapes is not None:
                self._specialize(dict(shapes), dict(dtypes) if dtypes else None)

    # --- stages --------------------------------------------------------------------------------
    def _stage_for(self, forward: Program, key: tuple) -> _Stage:
        optimize, rules, limits, sizes = self._options
        naive = self._build(forward)
        program, report = _optimize(naive, optimize, rules, limits, sizes)
        stage = _Stage(naive, program, report, compile_program(program))
        self._stages[key] = stage
        if self._verbose:
            print(f"# eqsat_ad.{self.kind}: optimized program\n{print_program(program)}")
            print(f"# generated NumPy source\n{stage.compiled.source}")
            if report is not None:
                print(report)
        return stage

    def _specialize(self, shapes: ShapeSpec, dtypes: Mapping[str, Any] | None) -> _Stage:
        from .frontend.numpy_subset import translate

        key = (
            tuple(sorted((k, tuple(v)) for k, v in shapes.items())),
            tuple(sorted((k, np.dtype(v).str) for k, v in (dtypes or {}).items())),
        )
        with self._lock:
            stage = self._stages.get(key)
            if stage is None:
                assert self._fn is not None
                forward = translate(self._fn, shapes, dtypes)
                stage = self._stage_for(forward, key)
            self._latest = stage
        return stage

    def _latest_stage(self) -> _Stage:
        if self._latest is None:
            raise EqsatError(
                f"{self.kind} of a Python function is compiled at its first call (or pass "
                "shapes={...}): call it before reading .source, .program or .report"
            )
        return self._latest

    # --- the public face -----------------------------------------------------------------------
    @property
    def source(self) -> str:
        return self._latest_stage().compiled.source

    @property
    def program(self) -> Program:
        return self._latest_stage().program

    @property
    def naive(self) -> Program:
        return self._latest_stage().naive

    @property
    def report(self) -> Any:
        return self._latest_stage().report

    @property
    def compiled(self) -> CompiledProgram:
        return self._latest_stage().compiled

    def __repr__(self) -> str:
        if self._latest is None:
            return f"<eqsat_ad {self.kind} of {getattr(self._fn, '__name__', '?')} (not compiled)>"
        p = self._latest.program
        return f"<eqsat_ad {self.kind}: {p.name}({', '.join(p.param_names)})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            assert self._latest is not None
            return self._latest.compiled(*args, **kwargs)
        assert self._signature is not None
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ShapeError(f"{getattr(self._fn, '__name__', 'function')}(): {exc}") from None
        # Arguments the caller passes are inputs; parameters left at their defaults stay
        # constants of the translation.
        shapes: dict[str, tuple[int, ...]] = {}
        dtypes: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            arr = np.asarray(value)
            shapes[name] = tuple(int(n) for n in arr.shape)
            if arr.dtype == bool:
                dtypes[name] = bool
        stage = self._specialize(shapes, dtypes or None)
        names = stage.compiled.program.param_names
        return stage.compiled(**{n: bound.arguments[n] for n in names if n in bound.arguments})


# ================================================================================================
# Public functions
# ================================================================================================


def _params_of(target: Program | Callable[..., Any]) -> tuple[list[str], list[str], str]:
    if isinstance(target, Program):
        return (list(target.param_names), [p.kind for p in target.params], repr(target.name))
    if not callable(target):
        raise ProgramError(f"expected a Program or a Python function, got {type(target).__name__}")
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise ProgramError(f"cannot read the signature of {target!r}: {exc}") from None
    names = list(sig.parameters)
    return names, ["tensor"] * len(names), repr(getattr(target, "__name__", "function"))


def grad(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    preserve_result: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
) -> Compiled:
    """The compiled gradient of a scalar-valued program or NumPy-subset function.

    ``wrt``: a parameter name or position (default: the first float parameter), or a tuple of
    them (then the gradient is a tuple). ``optimize=False`` runs the naive adjoint through the
    same backend. ``rules``/``limits``/``sizes`` go to the optimizer (``sizes`` also break cost
    ties). ``preserve_result``: also return the function's value, after the gradient(s).
    ``verbose`` prints the optimized program, the generated code and the cost report.
    """
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)

    def build(forward: Program) -> Program:
        return gradient_program(
            forward, names, as_tuple=several, preserve_result=preserve_result
        )

    return Compiled(
        "grad", prog_or_fn, build, optimize=optimize, rules=rules, limits=limits, sizes=sizes,
        verbose=verbose, shapes=shapes, dtypes=dtypes,
    )


def compile(  # noqa: A001 - the public name of DESIGN.md section 5
    prog_or_fn: Program | Callable[..., Any],
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
) -> Compiled:
    """The forward program through the same optimizer and backend, as a callable."""
    return Compiled(
        "compile", prog_or_fn, lambda p: p, optimize=optimize, rules=rules, limits=limits,
        sizes=sizes, verbose=verbose, shapes=shapes, dtypes=dtypes,
    )


def hessian(
    prog_or_fn: Program | Callable[..., Any],
    wrt: str | int | None = None,
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
) -> Compiled:
    """The compiled symbolic Hessian of a scalar program with respect to one input.

    Built by :func:`eqsat_ad.ad.hessian_program` (forward over reverse with an indicator seed:
    one program, never N one-hot products) and simplified by the optimizer, e.g. to ``A + Aᵀ``
    for ``xᵀAx``. The result has rank ``2 * rank(wrt)``.
    """
    from .ad import hessian_program

    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)
    if several and len(names) != 1:
        raise ProgramError(f"hessian differentiates with respect to one input, got {len(names)}")
    return Compiled(
        "hessian", prog_or_fn, lambda p: hessian_program(p, names[0]), optimize=optimize,
        rules=rules, limits=limits, sizes=sizes, verbose=verbose, shapes=shapes, dtypes=dtypes,
    )


def _as_program(
    prog_or_fn: Program | Callable[..., Any], shapes: ShapeSpec | None, dtypes: Any, what: str
) -> Program:
    if isinstance(prog_or_fn, Program):
        return prog_or_fn
    if not callable(prog_or_fn):
        raise ProgramError(f"expected a Program or a Python function, got {type(prog_or_fn)}")
    if shapes is None:
        raise ProgramError(
            f"{what} of a Python function needs its argument shapes: pass shapes={{name: (...)}}"
        )
    from .frontend.numpy_subset import translate

    return translate(prog_or_fn, shapes, dtypes)


def jvp(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    *,
    shapes: ShapeSpec | None = None,
    dtypes: Any = None,
) -> Program:
    """The forward-mode (tangent) program: one tangent parameter ``<name>_dot`` per input."""
    from .ad import jvp as ad_jvp

    prog = _as_program(prog_or_fn, shapes, dtypes, "jvp")
    names, _ = _wrt_names(list(prog.param_names), [p.kind for p in prog.params], wrt,
                          repr(prog.name))
    return ad_jvp(prog, names if len(names) > 1 else names[0])


def vjp(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    *,
    shapes: ShapeSpec | None = None,
    dtypes: Any = None,
) -> Program:
    """The reverse-mode adjoint program: the output cotangent ``ybar`` as an extra parameter."""
    from .ad import vjp as ad_vjp

    prog = _as_program(prog_or_fn, shapes, dtypes, "vjp")
    names, several = _wrt_names(list(prog.param_names), [p.kind for p in prog.params], wrt,
                                repr(prog.name))
    return ad_vjp(prog, names if several else names[0])
