"""The end-to-end API (docs/api.md): differentiate, optimize, compile, run.

    g = ea.grad(prog, wrt="A")     # a callable gradient
    g(A=..., x=...)                # keyword or positional arguments, like the program
    g.source, g.program, g.report  # generated NumPy code, optimized adjoint, CostReport

Every function accepts a :class:`~eqsat_ad.ir.Program` or a NumPy-subset Python function
(Tangent-style). A function is translated by :func:`eqsat_ad.frontend.numpy_subset.translate`
when the shapes are known: at the first call with each new argument signature, or ahead of time
with ``shapes={...}``. A call's dimensions become size symbols (``N``, ``M``, ...; 1 stays 1), so
programs and cost reports are symbolic; Python ints and bools are static constants. Compiled
versions are cached per signature (shapes, boolean-ness, static values); see :func:`grad`.
"""

from __future__ import annotations

import inspect
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ad.common import in_dependency_order, is_tensor_output, prune
from .backend.fold import compile_any
from .backend.guard import with_fallback
from .frontend.closures import ConstantArrays
from .ir.errors import EqsatError, EqsatTypeError, ProgramError, ShapeError
from .ir.expr import Access, Const, Expr
from .ir.outline import outline
from .ir.printer import print_program
from .ir.program import Fold, Program, Statement, Step
from .ir.relations import SparseRelation, is_sparse_matrix
from .ir.traverse import rebuild

__all__ = ["Compiled", "Specialization", "compile", "grad", "hessian", "jvp", "vjp"]

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
            raise EqsatTypeError(f"wrt must be parameter names or positions, got {w!r}")
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
    prog: Program, wrt: Sequence[str], *, as_tuple: bool = False, preserve_result: bool = False,
    has_aux: bool = False,
) -> Program:
    """The gradient of ``prog``'s scalar output with respect to ``wrt`` (seed 1), as a Program.

    Same parameters as ``prog``; returns the gradients in order (a tuple when ``as_tuple`` or
    several names), followed by the function's value when ``preserve_result``. Built from
    :func:`eqsat_ad.ad.vjp` with the cotangent fixed to 1. ``has_aux``: ``prog`` returns a pair
    (value, aux); the gradient is the value's, and aux is returned last, as computed.
    """
    from .ad import vjp as ad_vjp

    aux: tuple[Expr, ...] = ()
    if has_aux:
        if not prog.returns_tuple or len(prog.outputs) != 2:
            raise ProgramError(
                f"has_aux=True: {prog.name!r} must return a pair (value, aux); it returns "
                + (f"{len(prog.outputs)} values" if prog.returns_tuple else "one value")
            )
        aux = prog.outputs[1:]
        prog = Program(prog.params, prog.statements, prog.outputs[:1], False, prog.name)
    if prog.returns_tuple or len(prog.outputs) != 1 or is_tensor_output(prog, prog.outputs[0]):
        raise ProgramError(
            f"grad needs a program with one scalar output; {prog.name!r} returns "
            + ("a tuple" if prog.returns_tuple else "a tensor")
            + " (use ea.vjp for a vector-Jacobian product)"
        )
    names = tuple(wrt)
    adjoint = ad_vjp(prog, names if len(names) > 1 else names[0])
    (seed,) = [p for p in adjoint.params if p.name not in prog.param_names]
    one = Const(1.0)
    primal = {n for s in prog.statements for n in s.defines}
    # a fold the adjoint needs keeps its states: it replaces the original where that stood
    saving = {s.names[0]: s for s in adjoint.statements if isinstance(s, Fold)
              and s.names[0] in primal}
    stmts: list[Step] = [saving.get(s.names[0], s) if isinstance(s, Fold) else s
                         for s in prog.statements]
    for s in adjoint.statements:
        if primal.issuperset(s.defines) or s.defines[0] in primal:
            continue
        if isinstance(s, Fold):
            if seed.name in s.reads():
                raise ProgramError("internal: a fold reads the output seed")  # bars are statements
            stmts.append(s)
        else:
            stmts.append(Statement(s.name, s.indices, _replace_access(s.body, seed.name, one),
                                   s.loc))
    stmts = in_dependency_order(stmts)
    outputs = tuple(_replace_access(o, seed.name, one) for o in adjoint.outputs)
    if preserve_result:
        outputs += (prog.outputs[0],)
    outputs += aux
    several = as_tuple or len(names) > 1 or preserve_result or has_aux
    return prune(prog.params, stmts, outputs, several, f"{prog.name}_grad")


def _replace_access(e: Expr, name: str, value: Expr) -> Expr:
    """``e`` with every read of the scalar ``name`` replaced by ``value``."""

    def post(x: Expr, _ctx: object) -> Expr:
        if isinstance(x, Access) and x.name == name and not x.indices:
            return value
        return x

    return rebuild(e, post)


def _optimize(
    naive: Program,
    optimize: bool,
    rules: Any,
    limits: Any,
    sizes: Mapping[str, int] | None,
    structured: bool = False,
    progress: Callable[[Any], None] | None = None,
    verbose: bool = False,
) -> tuple[Program, Any]:
    """Run the optimizer (when asked and available); returns (program, CostReport or None).
    ``structured``: the report prices outputs as they are returned (stored points, factors)."""
    if optimize:
        try:
            from .egraph.optimize import optimize as run_optimizer
        except ImportError:
            run_optimizer = None
        if run_optimizer is not None:
            kwargs: dict[str, Any] = {"sizes": sizes, "structured": structured,
                                      "progress": progress, "verbose": verbose}
            if rules is not None:
                kwargs["rules"] = rules
            if limits is not None:
                kwargs["limits"] = limits
            result = run_optimizer(naive, **kwargs)
            return result.program, result.report
    naive = outline(naive)  # the backend and CPython's compiler take shallow expressions
    return naive, _plain_report(naive, sizes, structured)


def _plain_report(prog: Program, sizes: Mapping[str, int] | None,
                  structured: bool = False) -> Any:
    """The cost report of a program that was not optimized (saturation "not run")."""
    try:
        from .cost.report import CostReport, SaturationStats
    except ImportError:
        return None
    stats = SaturationStats(stop_reason="not run")
    report = CostReport.build(naive=prog, optimized=prog, sizes=sizes, stats=stats,
                              structured=structured)
    return report


# ================================================================================================
# Specializing a Python function
# ================================================================================================

# Size symbols for the dimensions of a call's arguments, in order of appearance.
_SIZE_LETTERS = ("N", "M", "K", "L", "P", "Q", "R", "T", "U", "V")


@dataclass(frozen=True)
class Specialization:
    """How one call signature of a Python function was translated.

    ``shapes``: the shapes given to the translator (size symbols or ints); ``sizes``: the
    concrete value of each size symbol (also given to the optimizer); ``origins``: where each
    symbol came from (``"x.shape[0]"``); ``statics``: the static (Python int / bool) arguments
    the function was specialized on; ``fallback``: ``None`` when the symbolic translation
    worked, else why the translation had to use the concrete shapes.
    """

    shapes: dict[str, tuple[int | str, ...]]
    sizes: dict[str, int]
    origins: dict[str, str]
    statics: dict[str, Any]
    fallback: str | None = None

    @property
    def symbolic(self) -> bool:
        """Whether the program was translated with size symbols."""
        dims = [d for shape in self.shapes.values() for d in shape]
        return self.fallback is None and any(isinstance(d, str) for d in dims)

    def describe(self) -> str:
        parts = [f"{s} = {self.origins.get(s, s)} = {n}" for s, n in self.sizes.items()]
        parts += [f"{k} = {v!r} (static)" for k, v in self.statics.items()]
        line = ", ".join(parts) or "no sizes"
        if self.fallback is not None:
            line += f"; concrete shapes (symbolic translation failed: {self.fallback})"
        return line


def _is_static(value: Any) -> bool:
    """A Python int or bool (or a NumPy integer / bool scalar): a constant of the translation."""
    return isinstance(value, int | np.integer | np.bool_)


def _size_symbols(
    shapes: Mapping[str, tuple[int, ...]], avoid: set[str]
) -> tuple[dict[str, tuple[int | str, ...]], dict[str, int], dict[str, str]]:
    """One size symbol per distinct dimension value other than 0 and 1 (broadcasting depends on
    1, and the cost model counts sizes >= 1): (symbolic shapes, sizes, origins)."""
    letters = [s for s in _SIZE_LETTERS if s not in avoid]
    by_value: dict[int, str] = {}
    sizes: dict[str, int] = {}
    origins: dict[str, str] = {}
    symbolic: dict[str, tuple[int | str, ...]] = {}
    for name, shape in shapes.items():
        dims: list[int | str] = []
        for axis, n in enumerate(shape):
            if n in (0, 1):
                dims.append(n)
                continue
            if n not in by_value:
                k = len(by_value)
                symbol = letters[k] if k < len(letters) else f"N{k - len(letters) + 1}"
                while symbol in avoid:
                    symbol += "_"
                by_value[n] = symbol
                sizes[symbol] = n
                origins[symbol] = f"{name}.shape[{axis}]"
            dims.append(by_value[n])
        symbolic[name] = tuple(dims)
    return symbolic, sizes, origins


def _identifiers_of(fn: Callable[..., Any]) -> set[str]:
    """Names the function uses: size symbols must not shadow them in the printed program."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return set()
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names |= set(c.co_varnames) | set(c.co_names) | set(c.co_freevars) | set(c.co_cellvars)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return names


def _with_statics(fn: Callable[..., Any], statics: Mapping[str, Any]) -> Callable[..., Any]:
    """A copy of ``fn`` whose signature gives the static arguments as defaults.

    The translator binds a parameter without a shape to its default, as a constant. Keyword-only
    parameters may take defaults in any order, so the copy's signature makes every parameter
    keyword-only; the translator reads names from the source and only defaults from here.
    """
    if not statics:
        return fn
    real = inspect.unwrap(fn)
    if not isinstance(real, types.FunctionType):
        return fn  # the translator reports what it cannot read
    copy = types.FunctionType(
        real.__code__, real.__globals__, real.__name__, real.__defaults__, real.__closure__
    )
    copy.__kwdefaults__ = real.__kwdefaults__
    copy.__qualname__ = real.__qualname__
    copy.__module__ = real.__module__
    sig = inspect.signature(real)
    params = [
        p.replace(
            kind=inspect.Parameter.KEYWORD_ONLY,
            default=statics[p.name] if p.name in statics else p.default,
        )
        for p in sig.parameters.values()
    ]
    copy.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    return copy


def _unify(declared: Mapping[str, Sequence[int | str]], shapes: Mapping[str, tuple[int, ...]]
           ) -> bool:
    """Whether the call's shapes are an instance of the declared (possibly symbolic) shapes."""
    if set(declared) != set(shapes):
        return False
    bound: dict[str, int] = {}
    for name, dims in declared.items():
        actual = shapes[name]
        if len(dims) != len(actual):
            return False
        for d, n in zip(dims, actual, strict=True):
            if isinstance(d, str):
                if bound.setdefault(d, n) != n:
                    return False
            elif int(d) != n:
                return False
    return True


# ================================================================================================
# The compiled callable
# ================================================================================================


@dataclass(frozen=True)
class _Stage:
    """One specialization: the naive and optimized programs, the report and the compiled code."""

    naive: Program
    program: Program
    report: Any
    compiled: Any  # CompiledProgram, or NumbaProgram for backend="numba"
    specialization: Specialization | None = None
    constants: ConstantArrays | None = None
    """arrays the function captured (closure, module globals): extra arguments of each call"""


BACKENDS = ("numpy", "numba")


def _check_backend(backend: str, structured: bool) -> str:
    if backend not in BACKENDS:
        raise ProgramError(f"unknown backend {backend!r}: expected one of {BACKENDS}")
    if backend == "numba":
        from .backend.fused import require_numba

        require_numba()
        if structured:
            raise ProgramError("structured=True needs backend='numpy' (the numba backend "
                               "returns dense arrays)")
    return backend


def _compile(program: Program, structured: bool, backend: str) -> Any:
    if backend == "numba":
        from .backend.fused import compile_numba

        if program.folds:
            raise ProgramError("backend='numba' does not run rolled loops (Fold) yet: use "
                               "backend='numpy'")
        return compile_numba(program)
    return compile_any(program, structured)


class Compiled:
    """A compiled gradient / function / Hessian. Call it with the program's arguments.

    ``.source`` (generated NumPy source), ``.program`` (the optimized program it runs),
    ``.naive`` (before optimization), ``.forward`` (the program differentiated), ``.report``
    (CostReport). For a Python function these describe the most recent specialization;
    ``.specializations`` lists them all (see :class:`Specialization`).
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
        structured: bool = False,
        post: Callable[[Any], Any] | None = None,
        progress: Callable[[Any], None] | None = None,
        backend: str = "numpy",
    ) -> None:
        self.kind = kind
        self._post = post
        self._progress = progress
        self.structured = bool(structured)
        self.backend = _check_backend(backend, self.structured)
        self._build = build
        self._options = (optimize, rules, limits, sizes)
        self._verbose = verbose
        self._stages: dict[tuple, _Stage] = {}
        # Positional all-ndarray calls, by (shape, dtype) of each argument: the stage and the
        # argument positions of its parameters (skips signature binding on repeated calls).
        self._fast: dict[tuple, tuple[_Stage, tuple | None, tuple[int, ...]]] = {}
        self._forwards: dict[tuple, Program] = {}
        self._latest: _Stage | None = None
        self._latest_key: tuple | None = None
        self._declared: tuple[dict[str, Any], dict[str, Any]] | None = None
        self._lock = threading.Lock()
        if isinstance(target, Program):
            self._fn = None
            self._signature = None
            self._latest = self._stage_for(target, (), None)
            self._latest_key = ()
        else:
            if not callable(target):
                raise EqsatTypeError(
                    f"expected a Program or a Python function, got {type(target).__name__}"
                )
            self._fn = target
            try:
                self._signature = inspect.signature(target)
            except (TypeError, ValueError) as exc:
                raise ProgramError(f"cannot read the signature of {target!r}: {exc}") from None
            self.__wrapped__ = target
            self._avoid = _identifiers_of(target) | set(self._signature.parameters)
            if shapes is not None:
                self._declared = (dict(shapes), dict(dtypes) if dtypes else {})
                self._specialize_declared()

    # --- stages --------------------------------------------------------------------------------
    def _stage_for(self, forward: Program, key: tuple, spec: Specialization | None,
                   naive: Program | None = None,
                   constants: ConstantArrays | None = None) -> _Stage:
        optimize, rules, limits, sizes = self._options
        # A call's own sizes are the truth for its symbols; the user's cover declared names.
        all_sizes = {**(sizes or {}), **(spec.sizes if spec else {})} or None
        if naive is None:
            naive = self._build(forward)
        if self._verbose:
            head = f"# eqsat_ad.{self.kind}"
            if spec is not None:
                print(f"{head}: specialization: {spec.describe()}")
            print(f"{head}: Tensor SSA program\n{print_program(forward)}")
            print(f"{head}: naive program\n{print_program(naive)}")
        program, report = _optimize(naive, optimize, rules, limits, all_sizes, self.structured,
                                    self._progress, self._verbose)
        compiled = _compile(program, self.structured, self.backend)
        if optimize:  # inlining is finite-only: a non-finite call reruns the naive program
            compiled = with_fallback(compiled, naive, self.structured)
        stage = _Stage(naive, program, report, compiled,
                       spec, constants if constants is not None and constants.found else None)
        self._stages[key] = stage
        self._forwards[key] = forward
        if self._verbose:
            print(f"# eqsat_ad.{self.kind}: optimized program\n{print_program(program)}")
            label = "NumPy" if self.backend == "numpy" else "Numba loop"
            print(f"# generated {label} source\n{stage.compiled.source}")
            if report is not None:
                print(report)
        return stage

    def _translate(
        self, shapes: Mapping[str, Sequence[int | str]], dtypes: Mapping[str, Any],
        statics: Mapping[str, Any], dims: Mapping[int, str] | None = None,
    ) -> tuple[Program, Program, ConstantArrays]:
        """The forward program, what ``build`` makes of it, and the arrays it captured (their
        dimensions named by ``dims``: value -> size symbol)."""
        from .frontend.numpy_subset import translate

        assert self._fn is not None
        constants = ConstantArrays(dict(dims or {}))
        forward = translate(_with_statics(self._fn, statics), shapes, dtypes or None,
                            constants=constants)
        return forward, self._build(forward), constants

    def _specialize_declared(self) -> _Stage:
        """The specialization for ``shapes=`` given ahead of time: symbolic as given."""
        assert self._declared is not None
        shapes, dtypes = self._declared
        key = ("declared",)
        with self._lock:
            stage = self._stages.get(key)
            if stage is None:
                forward, naive, consts = self._translate(shapes, dtypes, {})
                declared = {k: tuple(v) for k, v in shapes.items()}
                names = {d for dims in declared.values() for d in dims if isinstance(d, str)}
                given = {k: n for k, n in (self._options[3] or {}).items() if k in names}
                spec = Specialization(declared, given, {}, {}, None)
                stage = self._stage_for(forward, key, spec, naive, consts)
            self._latest, self._latest_key = stage, key
        return stage

    def _specialize(self, shapes: Mapping[str, tuple[int, ...]], relations: frozenset[str],
                    statics: Mapping[str, Any], integers: frozenset[str] = frozenset()
                    ) -> _Stage:
        """The specialization for a call: symbolic sizes, or the concrete shapes as fall-back.
        ``integers``: integer array arguments (index arrays where the function indexes)."""
        key = (
            tuple(shapes.items()),
            tuple(sorted(relations)),
            tuple(sorted(integers)),
            tuple((k, type(v).__name__, v) for k, v in statics.items()),
        )
        with self._lock:
            stage = self._stages.get(key)
            if stage is not None and stage.constants is not None \
                    and not stage.constants.unchanged():
                stage = None  # a captured array changed shape: translate again
            if stage is None:
                dtypes: dict[str, Any] = {name: bool for name in relations}
                dtypes.update({name: np.int64 for name in integers})
                symbolic, sizes, origins = _size_symbols(shapes, self._avoid)
                dims = {n: s for s, n in sizes.items()}
                try:
                    forward, naive, consts = self._translate(symbolic, dtypes, statics, dims)
                    spec = Specialization(symbolic, sizes, origins, dict(statics))
                except EqsatError as exc:
                    if not sizes:
                        raise
                    # Some constructs (slices, max over an axis, loops over a size) need
                    # concrete extents: use the shapes of this call.
                    forward, naive, consts = self._translate(shapes, dtypes, statics)
                    spec = Specialization(dict(shapes), {}, {}, dict(statics), str(exc))
                stage = self._stage_for(forward, key, spec, naive, consts)
            self._latest, self._latest_key = stage, key
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
    def forward(self) -> Program:
        """The program that was differentiated (for a function: its Tensor SSA translation)."""
        self._latest_stage()
        return self._forwards[self._latest_key]

    @property
    def report(self) -> Any:
        return self._latest_stage().report

    @property
    def compiled(self) -> Any:
        return self._latest_stage().compiled

    @property
    def compile_seconds(self) -> dict[str, float]:
        """backend="numba": per float type ('d', 'f'), the first call's module load and Numba
        compilation (or on-disk cache load) time; empty for the NumPy backend."""
        return dict(getattr(self._latest_stage().compiled, "compile_seconds", {}))

    @property
    def specialization(self) -> Specialization | None:
        """How the most recent call was specialized (``None`` for a Program)."""
        return self._latest_stage().specialization

    @property
    def specializations(self) -> tuple[Specialization, ...]:
        """Every specialization compiled so far, oldest first (empty for a Program)."""
        return tuple(s.specialization for s in self._stages.values() if s.specialization)

    def explain(self) -> Any:
        """Why the optimized program is cheaper: the rewrite chain of each statement of the
        latest specialization (an :class:`eqsat_ad.why.Explanation`; replays saturation)."""
        from .why import explain_compiled

        self._latest_stage()
        return explain_compiled(self)

    def _repr_html_(self) -> str:
        """Notebooks: the optimized program, the generated source and the cost report."""
        from html import escape

        from .why.html import report_html

        if self._latest is None:
            return f"<pre>{escape(repr(self))}</pre>"
        report = self.report
        return (f"<pre>{escape(print_program(self.program))}</pre><pre>{escape(self.source)}"
                "</pre>" + (report_html(report) if report is not None else ""))

    def __repr__(self) -> str:
        if self._latest is None:
            return f"<eqsat_ad {self.kind} of {getattr(self._fn, '__name__', '?')} (not compiled)>"
        p = self._latest.program
        return f"<eqsat_ad {self.kind}: {p.name}({', '.join(p.param_names)})>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        post = self._post
        buf = {"out": kwargs.pop("out")} if "out" in kwargs and self._out_is_buffer() else {}
        if buf and self.backend != "numba":
            raise ProgramError("out= (an array to write the result into) needs "
                               "backend='numba'; the NumPy backend allocates its results")
        if self._fn is None:
            assert self._latest is not None
            out = self._latest.compiled(*args, **kwargs, **buf)
            return out if post is None else post(out)
        assert self._signature is not None
        if not kwargs and all(type(a) is np.ndarray for a in args):
            hit = self._fast.get(tuple((a.shape, a.dtype) for a in args))
            if hit is not None:
                stage, key, positions = hit
                self._latest, self._latest_key = stage, key
                out = stage.compiled(*[args[k] for k in positions], **buf)
                return out if post is None else post(out)
        stage, call = self._prepare(args, kwargs)
        out = stage.compiled(**call, **buf)
        return out if post is None else post(out)

    def _out_is_buffer(self) -> bool:
        """``out=`` names the result's array unless the function has a parameter ``out``."""
        if self._fn is None:
            assert self._latest is not None
            return "out" not in self._latest.compiled.program.param_names
        assert self._signature is not None
        return "out" not in self._signature.parameters

    def _prepare(self, args: tuple, kwargs: dict[str, Any]) -> tuple[_Stage, dict[str, Any]]:
        """The specialization for these arguments and the keyword arguments of its compiled
        program (captured arrays included)."""
        if self._fn is None:
            assert self._latest is not None
            bound = self._latest.compiled.program
            names = list(bound.param_names)
            if len(args) > len(names):
                raise ShapeError(f"{bound.name}() takes {len(names)} argument(s), "
                                 f"got {len(args)}")
            return self._latest, {**dict(zip(names, args, strict=False)), **kwargs}
        assert self._signature is not None
        fast_key = None
        if not kwargs and all(type(a) is np.ndarray for a in args):
            fast_key = tuple((a.shape, a.dtype) for a in args)
        fname = getattr(self._fn, "__name__", "function")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ShapeError(f"{fname}(): {exc}") from None
        # Arguments the caller passes are inputs (Python ints and bools: static constants);
        # parameters left at their defaults stay constants of the translation.
        shapes: dict[str, tuple[int, ...]] = {}
        relations: set[str] = set()
        integers: set[str] = set()
        statics: dict[str, Any] = {}
        for name, value in bound.arguments.items():
            if _is_static(value):
                statics[name] = value.item() if isinstance(value, np.generic) else value
                continue
            if is_sparse_matrix(value) or isinstance(value, SparseRelation):
                shapes[name] = tuple(int(n) for n in value.shape)  # a relation by its members
                relations.add(name)
                continue
            try:
                arr = np.asarray(value)
            except Exception as exc:  # ragged lists and the like
                raise ShapeError(f"{fname}(): argument {name!r} is not an array: {exc}") from None
            shapes[name] = tuple(int(n) for n in arr.shape)
            if arr.dtype == bool:
                relations.add(name)
            elif arr.dtype.kind in "iu" and arr.ndim:
                integers.add(name)  # an index array where it indexes (x[idx], np.bincount)
        stage = None
        if self._declared is not None and not statics:
            declared_shapes, declared_dtypes = self._declared
            declared_rel = {k for k, v in declared_dtypes.items() if np.dtype(v).kind == "b"}
            if _unify(declared_shapes, shapes) and declared_rel == relations:
                stage = self._specialize_declared()
        if stage is None:
            stage = self._specialize(shapes, frozenset(relations), statics,
                                     frozenset(integers))
        names = stage.compiled.program.param_names
        if fast_key is not None and not statics and stage.constants is None:
            order = list(bound.arguments)
            if all(n in bound.arguments for n in names) and len(self._fast) < 64:
                self._fast[fast_key] = (stage, self._latest_key,
                                        tuple(order.index(n) for n in names))
        call = {n: bound.arguments[n] for n in names if n in bound.arguments}
        if stage.constants is not None:
            call.update(stage.constants.values())
        return stage, call


# ================================================================================================
# Public functions
# ================================================================================================


def _params_of(target: Program | Callable[..., Any]) -> tuple[list[str], list[str], str]:
    if isinstance(target, Program):
        return (list(target.param_names), [p.kind for p in target.params], repr(target.name))
    if not callable(target):
        raise EqsatTypeError(
            f"expected a Program or a Python function, got {type(target).__name__}")
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise ProgramError(f"cannot read the signature of {target!r}: {exc}") from None
    names = list(sig.parameters)
    return names, ["tensor"] * len(names), repr(getattr(target, "__name__", "function"))


def _wrt_in(
    forward: Program, target: Program | Callable[..., Any], wrt: Wrt,
    names: tuple[str, ...], what: str,
) -> tuple[str, ...]:
    """``names`` checked against the program actually built (for a Python function: its
    translation, whose parameters leave out static arguments); the default resolved there."""
    if isinstance(target, Program):
        return names
    params = list(forward.param_names)
    if wrt is None:
        return _wrt_names(params, [p.kind for p in forward.params], None, what)[0]
    for n in names:
        if n not in params:
            raise ProgramError(
                f"cannot differentiate with respect to {n!r}: in this call it is a static "
                "constant (a Python int or bool, or left at its default); pass a float or an "
                "array to make it an input"
            )
    return names


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
    structured: bool = False,
    argnums: int | Sequence[int] | None = None,
    has_aux: bool = False,
    progress: Callable[[Any], None] | None = None,
    backend: str = "numpy",
) -> Compiled:
    """The compiled gradient of a scalar-valued program or NumPy-subset function.

    ``wrt``: a parameter name or position (default: the first float parameter), or a tuple of
    them (then the gradient is a tuple); ``argnums`` (an int or a tuple of ints, as in
    ``jax.grad``) is the same by position. ``has_aux=True``: the function returns a pair
    ``(value, aux)``; the gradient is the value's and the call returns ``(gradient, aux)``.
    ``optimize=False`` runs the naive adjoint through the
    same backend. ``rules``/``limits``/``sizes`` go to the optimizer (``sizes`` also break cost
    ties). ``preserve_result``: also return the function's value, after the gradient(s).
    ``verbose`` prints the Tensor SSA program, the naive and the optimized adjoint, the generated
    code and the cost report, and the optimizer's progress to stderr; ``progress``: a callback
    given an ``eqsat_ad.egraph.progress.Progress`` after every saturation step.

    ``structured=True``: a gradient the optimized adjoint writes only at points fixed by equality
    brackets comes back as an :class:`eqsat_ad.Diagonal` (``[i == j] * e(i)``: the gradient of a
    trace or ``diag``) or an :class:`eqsat_ad.Sparse` coordinate list (point reads, gathers), in
    O(nonzeros) time and memory instead of O(size); one that is a single product of factors
    over disjoint indices (``x[i] * y[j]``) comes back as an :class:`eqsat_ad.Outer` of them.
    Other gradients stay dense arrays. All convert with ``np.asarray`` and update an array in
    place with ``.add_to(x, scale)``.

    ``backend="numba"`` runs the same optimized program as fused scalar loop nests compiled by
    Numba (optional: ``pip install 'eqsat-ad[numba]'``; contractions BLAS runs better stay NumPy
    calls); ``.source`` is then the generated module and ``.compile_seconds`` its first-call
    compile (or cache load) time; its calls take ``out=``, an array of the result's shape and
    type (a tuple of them, ``None`` where not wanted, for several outputs) written in place and
    returned. NumPy (``backend="numpy"``) is the default.

    A Python function is translated at its first call with each new signature of arguments and
    compiled once per signature (cached; ``.specializations`` lists them):

    * array (and Python float) arguments are data. Their dimensions become size symbols ``N``,
      ``M``, ``K``, ... in order of appearance (equal dimensions share one; a dimension of 1
      stays 1, since broadcasting depends on it), so ``.program`` and ``.report`` are symbolic
      and the optimizer compares costs asymptotically; the call's sizes break ties. Where the
      function needs concrete extents (some slices, ``max`` over an axis, a branch on a shape),
      the call's concrete shapes are used instead and the specialization records why.
    * a Python ``int`` or ``bool`` argument is a static constant: the function is specialized
      on its value (``for i in range(n)`` works), and a new value compiles a new version.
      Such an argument cannot be differentiated; pass a float to make a scalar input.
    * ``shapes={name: (...)}`` (and ``dtypes``) compile ahead of time with the shapes as given
      (size names stay symbolic); calls whose shapes fit them use that version.
    """
    wrt = resolve_argnums(wrt, argnums)
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)

    def build(forward: Program) -> Program:
        resolved = _wrt_in(forward, prog_or_fn, wrt, names, what)
        return gradient_program(
            forward, resolved, as_tuple=several, preserve_result=preserve_result,
            has_aux=has_aux,
        )

    post = None
    if has_aux:
        def post(out: tuple) -> tuple:
            g = out[: len(names)] if several else out[0]
            rest = out[len(names):]
            return (g, *rest[:-1], rest[-1]) if preserve_result else (g, rest[-1])

    return Compiled(
        "grad", prog_or_fn, build, optimize=optimize, rules=rules, limits=limits, sizes=sizes,
        verbose=verbose, shapes=shapes, dtypes=dtypes, structured=structured, post=post,
        progress=progress, backend=backend,
    )


def resolve_argnums(wrt: Wrt, argnums: int | Sequence[int] | None) -> Wrt:
    """``argnums`` (``jax.grad``'s name: an int or a tuple of ints) as ``wrt``."""
    if argnums is None:
        return wrt
    if wrt is not None:
        raise EqsatTypeError("give wrt or argnums, not both (argnums is wrt by position)")
    ok = isinstance(argnums, int) and not isinstance(argnums, bool)
    if isinstance(argnums, (tuple, list)):
        ok = all(isinstance(a, int) and not isinstance(a, bool) for a in argnums)
        argnums = tuple(argnums)
    if not ok:
        raise EqsatTypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}")
    return argnums


def compile(  # noqa: A001 - the public name (docs/api.md)
    prog_or_fn: Program | Callable[..., Any],
    *,
    optimize: bool = True,
    rules: Any = None,
    limits: Any = None,
    sizes: Mapping[str, int] | None = None,
    verbose: bool = False,
    shapes: ShapeSpec | None = None,
    dtypes: Mapping[str, Any] | None = None,
    structured: bool = False,
    progress: Callable[[Any], None] | None = None,
    backend: str = "numpy",
) -> Compiled:
    """The forward program through the same optimizer and backend, as a callable.

    ``structured``: as for :func:`grad` (an output like ``D[i, j] = [i == j] * x[i]`` comes back
    as a Diagonal).
    """
    return Compiled(
        "compile", prog_or_fn, lambda p: p, optimize=optimize, rules=rules, limits=limits,
        sizes=sizes, verbose=verbose, shapes=shapes, dtypes=dtypes, structured=structured,
        progress=progress, backend=backend,
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
    structured: bool = False,
    argnums: int | None = None,
    progress: Callable[[Any], None] | None = None,
    backend: str = "numpy",
) -> Compiled:
    """The compiled symbolic Hessian of a scalar program with respect to one input.

    Built by :func:`eqsat_ad.ad.hessian_program` (forward over reverse with an indicator seed:
    one program, never N one-hot products) and simplified by the optimizer, e.g. to ``A + Aᵀ``
    for ``xᵀAx``. The result has rank ``2 * rank(wrt)``. ``structured=True``: a diagonal Hessian
    (of ``Σ_i g(x[i])``) comes back as an :class:`eqsat_ad.Diagonal`, in O(N). ``argnums``:
    ``wrt`` by position, as in ``jax.hessian``.
    """
    from .ad import hessian_program

    wrt = resolve_argnums(wrt, argnums)  # type: ignore[assignment]
    params, kinds, what = _params_of(prog_or_fn)
    names, several = _wrt_names(params, kinds, wrt, what)
    if several and len(names) != 1:
        raise ProgramError(f"hessian differentiates with respect to one input, got {len(names)}")
    def build(forward: Program) -> Program:
        return hessian_program(forward, _wrt_in(forward, prog_or_fn, wrt, names, what)[0])

    return Compiled(
        "hessian", prog_or_fn, build, optimize=optimize,
        rules=rules, limits=limits, sizes=sizes, verbose=verbose, shapes=shapes, dtypes=dtypes,
        structured=structured, progress=progress, backend=backend,
    )


def _as_program(
    prog_or_fn: Program | Callable[..., Any], shapes: ShapeSpec | None, dtypes: Any, what: str
) -> Program:
    if isinstance(prog_or_fn, Program):
        return prog_or_fn
    if not callable(prog_or_fn):
        raise EqsatTypeError(
            f"expected a Program or a Python function, got {type(prog_or_fn).__name__}")
    if shapes is None:
        raise ProgramError(
            f"{what} of a Python function needs its argument shapes: pass shapes={{name: (...)}}"
        )
    from .frontend.numpy_subset import translate

    return translate(prog_or_fn, shapes, dtypes)


def _program_and_wrt(
    prog_or_fn: Program | Callable[..., Any], wrt: Wrt, shapes: ShapeSpec | None, dtypes: Any,
    what: str,
) -> tuple[Program, tuple[str, ...], bool]:
    """The program for jvp/vjp and its ``wrt`` names (and whether a tuple was asked for)."""
    prog = _as_program(prog_or_fn, shapes, dtypes, what)
    names, several = _wrt_names(list(prog.param_names), [p.kind for p in prog.params], wrt,
                                repr(prog.name))
    return prog, names, several


def jvp(
    prog_or_fn: Program | Callable[..., Any],
    wrt: Wrt = None,
    tangents: Sequence[Any] | None = None,
    *,
    shapes: ShapeSpec | None = None,
    dtypes: Any = None,
) -> Any:
    """The forward-mode (tangent) program: one tangent parameter ``<name>_dot`` per input.

    ``ea.jvp(f, primals, tangents)`` with a Python function ``f`` (and no ``shapes``) is
    ``jax.jvp``: it returns the values ``(f(*primals), J·tangents)``.
    """
    from .ad import jvp as ad_jvp

    if not isinstance(prog_or_fn, Program) and shapes is None and callable(prog_or_fn):
        from .transforms import jvp_of_function

        if tangents is None:
            raise EqsatTypeError(
                "jvp of a Python function takes (f, primals, tangents), as jax.jvp; for the "
                "tangent program give shapes={...}"
            )
        return jvp_of_function(prog_or_fn, wrt, tangents)  # type: ignore[arg-type]
    if tangents is not None:
        raise EqsatTypeError("jvp of a Program returns the tangent program: it takes no "
                             "tangents (evaluate the program with them)")

    prog, names, _ = _program_and_wrt(prog_or_fn, wrt, shapes, dtypes, "jvp")
    return ad_jvp(prog, names if len(names) > 1 else names[0])


def vjp(
    prog_or_fn: Program | Callable[..., Any],
    *args: Any,
    wrt: Wrt = None,
    shapes: ShapeSpec | None = None,
    dtypes: Any = None,
) -> Any:
    """The reverse-mode adjoint program: the output cotangent ``ybar`` as an extra parameter.

    ``ea.vjp(prog, wrt)`` (or ``wrt=``) returns that Program. ``ea.vjp(f, *primals)`` with a
    Python function ``f`` (and no ``shapes``) is ``jax.vjp``: it returns ``(f(*primals),
    f_vjp)``, where ``f_vjp(cotangent)`` gives a tuple with one cotangent per primal.
    """
    from .ad import vjp as ad_vjp

    if not isinstance(prog_or_fn, Program) and shapes is None and callable(prog_or_fn):
        from .transforms import vjp_of_function

        if wrt is not None:
            raise EqsatTypeError("vjp of a Python function takes (f, *primals), as jax.vjp; "
                                 "for the adjoint program give shapes={...}")
        return vjp_of_function(prog_or_fn, *args)
    if args:
        if len(args) > 1 or wrt is not None:
            raise EqsatTypeError("vjp of a Program takes (prog, wrt)")
        wrt = args[0]

    prog, names, several = _program_and_wrt(prog_or_fn, wrt, shapes, dtypes, "vjp")
    return ad_vjp(prog, names if several else names[0])
