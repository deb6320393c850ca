"""Running one generated program through every stage and comparing the results.

For each input set: the reference interpreter (``ea.evaluate``) on the program (for a NumPy
function: on its translation), the compiled code with ``optimize=False`` and the optimized code,
and for a scalar program the gradient (interpreted, both compiled variants); on finite inputs
the interpreted gradient is also compared with central finite differences where the function is
smooth at the point, and a NumPy function's translation with running the function itself.

Outcomes (one per program and input kind, the most serious finding): ``agree``; ``rejected`` (the
library refused the program with an EqsatError before any result: a generator defect);
``value``/``nan-pattern`` (compiled differs from the interpreter); ``gradient`` (a compiled
gradient differs from the interpreted one); ``fd`` (the interpreted gradient differs from finite
differences); ``numpy`` (the translation differs from running the function with NumPy, by
more than rounding: else ``ill-conditioned``);
``raises`` (an EqsatError where the interpreter returned a value); ``internal`` (any other
exception); ``timeout`` (set by the runner); ``ieee-gradient`` (not a defect: the interpreted
gradient is inf or nan where finite differences are finite, and evaluating it with every 0.0
factor absorbing inf and nan, or with every inf it makes saturated, gives the finite
differences' value: the chain rule's IEEE ``0 * inf`` or ``inf - inf``, specified by
docs/semantics.md, "The chain rule is IEEE too"; the compiled gradients are
still compared with the interpreted one); ``ill-conditioned`` (not a defect: the compiled
result differs, but only as rounding can: each differing entry is of a kind (nan, ±inf, finite)
and within a span that the interpreter's own result shows under 1e-13 relative moves of the
inputs or of each read and sum, or with its products' factors in another order
(:mod:`eqsat_ad.fuzz.rounding`): two roundings of the same finite arithmetic, e.g. ``1e154 + 1
- 1e154``, ``Σ(B - B)`` summed in another order, ``2 x · x · 0.5`` overflowing at 1e154).
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.util
import shutil
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..ir.errors import EqsatError
from ..ir.printer import print_program
from ..ir.program import Program
from .case import Case
from .compare import mismatch, short
from .rounding import within_rounding

__all__ = ["OUTCOMES", "Finding", "check_case", "load_target"]

# most serious first; a program's outcome for an input kind is its first finding in this order
OUTCOMES = ("timeout", "internal", "raises", "nan-pattern", "value", "gradient", "fd", "numpy",
            "rejected", "ill-conditioned", "ieee-gradient", "agree")
# not defects: "rejected" (the generator's), "ill-conditioned" and "ieee-gradient" (allowed by
# docs/semantics.md: rounding, the chain rule's IEEE 0 * inf)
ALLOWED = ("rejected", "ill-conditioned", "ieee-gradient", "agree")
FD_COMPONENTS = 6  # components per differentiated input checked against finite differences


@dataclass(frozen=True)
class Finding:
    outcome: str
    stage: str
    detail: str = ""
    expected: str = ""
    actual: str = ""

    @property
    def signature(self) -> tuple[str, str, str]:
        """What must persist while a reproducer is minimized."""
        if self.outcome in ("internal", "raises"):
            head = self.detail.split(":")[0]  # the exception type
        elif "pattern differs" in self.detail:  # which of nan / +inf / -inf
            head = self.detail[self.detail.rindex("(") + 1:]
        else:
            head = ""
        return (self.outcome, self.stage, head)


class _Rejected(Exception):
    """The program was refused before any result (not a finding against the library)."""


_MODULE_DIR: Path | None = None


def load_target(case: Case) -> Program | Callable[..., Any]:
    """The Program (index language) or the function ``f`` (NumPy subset) of ``case``."""
    global _MODULE_DIR
    if case.generator == "index":
        from ..frontend.index_lang import parse

        return parse(case.source)
    if _MODULE_DIR is None:
        _MODULE_DIR = Path(tempfile.mkdtemp(prefix="eqsat_fuzz_"))
        atexit.register(shutil.rmtree, _MODULE_DIR, True)
    # inspect.getsource needs a file: one module per distinct source
    name = "fuzzcase_" + hashlib.sha1(case.source.encode()).hexdigest()[:16]
    path = _MODULE_DIR / f"{name}.py"
    path.write_text(case.source)
    if name in sys.modules:
        return sys.modules[name].f
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.f


def _error(stage: str, exc: BaseException) -> Finding:
    kind = "raises" if isinstance(exc, EqsatError) else "internal"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" [{Path(tb[-1].filename).name}:{tb[-1].lineno}]" if tb else ""
    return Finding(kind, stage, f"{type(exc).__name__}: {str(exc)[:300]}{where}")


def _float_params(forward: Program) -> tuple[str, ...]:
    return tuple(p.name for p in forward.params if p.kind == "tensor")


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, tuple) and np.ndim(value) == 0


class _Stages:
    """The compiled variants of one case, built once and called on every input set."""

    def __init__(self, case: Case, backend: str = "numpy") -> None:
        import eqsat_ad as ea

        self.ea = ea
        self.case = case
        self.backend = backend
        self.target = load_target(case)  # EqsatError: rejected (raised to the caller)
        self.forward: Program | None = self.target if isinstance(self.target, Program) else None
        self.compiled: dict[bool, Any] = {}
        self.grads: dict[bool, Any] = {}
        self.wrt: tuple[str, ...] | None = None

    def forward_program(self, inputs: Mapping[str, Any]) -> Program:
        """The program the interpreter runs (a function: its translation for these shapes)."""
        if self.forward is None:
            c = self.compiled_fn(False)
            try:
                c(**inputs)
                self.forward = c.forward
            except Exception:  # noqa: BLE001 - the compile stage reports its own failure
                from ..frontend.numpy_subset import translate

                try:  # translated, then failed later: the translation it made
                    self.forward = c.forward
                    return self.forward
                except EqsatError:
                    pass

                shapes = {k: np.shape(v) for k, v in inputs.items()}
                try:
                    self.forward = translate(self.target, shapes)
                except EqsatError as exc:
                    raise _Rejected(f"translate: {exc}") from None
        return self.forward

    def compiled_fn(self, optimize: bool) -> Any:
        if optimize not in self.compiled:
            self.compiled[optimize] = self.ea.compile(self.target, optimize=optimize,
                                                      backend=self.backend)
        return self.compiled[optimize]

    def grad_fn(self, optimize: bool, wrt: tuple[str, ...]) -> Any:
        if optimize not in self.grads:
            self.grads[optimize] = self.ea.grad(self.target, wrt=wrt, optimize=optimize,
                                                backend=self.backend)
        return self.grads[optimize]


def check_case(case: Case, inputs_by_kind: Mapping[str, Mapping[str, Any]],
               fd: bool = True, backend: str = "numpy") -> dict[str, list[Finding]]:
    """Every finding for ``case`` on each input set (an empty list: all stages agree).

    ``backend``: what compiles the program and its gradient (``"numpy"`` or ``"numba"``);
    the interpreter, the finite differences and NumPy's own run are the same either way, and
    a compiled stage's name says which backend ran it when it is not NumPy
    (``compile[numba]``)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            stages = _Stages(case, backend)
        except EqsatError as exc:
            return {k: [Finding("rejected", "parse", f"{type(exc).__name__}: {exc}")]
                    for k in inputs_by_kind}
        except Exception as exc:  # noqa: BLE001 - a crash of the front end is a finding
            return {k: [_error("parse", exc)] for k in inputs_by_kind}
        return {kind: _check_inputs(stages, kind, dict(inputs), fd)
                for kind, inputs in inputs_by_kind.items()}


def _check_inputs(st: _Stages, kind: str, inputs: dict[str, Any], fd: bool) -> list[Finding]:
    from ..api import gradient_program
    from ..ir.interpreter import evaluate

    try:
        forward = st.forward_program(inputs)
    except _Rejected as exc:
        return [Finding("rejected", "translate", str(exc))]
    except Exception as exc:  # noqa: BLE001
        return [_error("translate", exc)]
    try:
        ref = evaluate(forward, **inputs)
    except EqsatError as exc:
        return [Finding("rejected", "interpreter", f"{type(exc).__name__}: {exc}")]
    except Exception as exc:  # noqa: BLE001
        return [_error("interpreter", exc)]
    findings: list[Finding] = []
    tag = "" if st.backend == "numpy" else f"[{st.backend}]"

    def compare(stage: str, expected: Any, call: Callable[[], Any], outcome: str | None,
                reference: Program) -> Any:
        stage += tag
        try:
            got = call()
        except Exception as exc:  # noqa: BLE001
            f = _error(stage, exc)
            findings.append(Finding(f.outcome, f.stage, f.detail, short(expected), f.detail))
            return None
        m = mismatch(expected, got)
        if m is not None:
            what = outcome or m.kind
            if within_rounding(reference, inputs, expected, got):
                what = "ill-conditioned"
            findings.append(Finding(what, stage, m.detail, short(expected), short(got)))
        return got

    for opt in (False, True):
        name = "compile" if opt else "compile(optimize=False)"
        compare(name, ref, lambda opt=opt: st.compiled_fn(opt)(**inputs), None, forward)
    if st.case.generator == "numpy" and kind == "finite":
        _check_numpy(st, inputs, ref, findings)
    wrt = _float_params(forward)
    if not wrt or not _is_scalar(ref) or forward.returns_tuple:
        return findings
    try:
        gp = gradient_program(forward, wrt, as_tuple=True)
        gref = evaluate(gp, **inputs)
    except Exception as exc:  # noqa: BLE001
        findings.append(_error("gradient (interpreter)", exc))
        return findings
    for opt in (False, True):
        name = "grad" if opt else "grad(optimize=False)"
        compare(name, gref, lambda opt=opt: st.grad_fn(opt, wrt)(**inputs), "gradient", gp)
    # stop_gradient's derivative is 0 by definition, not by finite differences
    if fd and kind == "finite" and "stop_gradient(" not in print_program(forward):
        findings.extend(_check_fd(forward, inputs, wrt, gref, float(ref), gp))
    return findings


def _check_numpy(st: _Stages, inputs: dict[str, Any], ref: Any, findings: list[Finding]) -> None:
    """The translation against running the function itself, where NumPy's result is finite."""
    try:
        direct = st.target(**{k: np.copy(v) for k, v in inputs.items()})
    except Exception:  # noqa: BLE001 - NumPy refusing is the generator's problem
        return
    flat = direct if isinstance(direct, tuple) else (direct,)
    try:
        finite = all(np.all(np.isfinite(np.asarray(v, dtype=float))) for v in flat)
    except (TypeError, ValueError):
        return
    if not finite:
        return
    m = mismatch(direct, ref)
    if m is not None:
        # (NumPy sums in its own order, BLAS too: rounding is allowed as for compiled code)
        what = "ill-conditioned" if st.forward is not None and within_rounding(
            st.forward, inputs, ref, direct) else "numpy"
        findings.append(Finding(what, "translate", m.detail, short(direct), short(ref)))


def _check_fd(forward: Program, inputs: dict[str, Any], wrt: tuple[str, ...], gref: tuple,
              f0: float, gp: Program | None = None) -> list[Finding]:
    """The interpreted gradient against Richardson-extrapolated central differences, at the
    components where the function is smooth (one-sided slopes agree, no jump, all finite). A
    non-finite component that the gradient program ``gp`` gives right with every zero absorbing
    inf and nan, or with every inf it makes saturated to a large finite number (``sqrt'(0) *
    (a - a)`` distributed: inf - inf), is the specified ``ieee-gradient``, not an ``fd``
    finding."""
    if not np.isfinite(f0):
        return []
    diagnosed: dict[str, tuple | None] = {}

    def diagnosis(mode: str) -> tuple | None:
        """The gradient program's value with every 0.0 absorbing inf and nan ("absorbs"), or
        with every inf a division, power or function makes saturated ("saturates")."""
        if mode not in diagnosed:
            from ..ir.draws import every_infinity_saturates, every_zero_absorbs
            from ..ir.interpreter import evaluate

            try:
                with every_zero_absorbs() if mode == "absorbs" else every_infinity_saturates(
                        _SATURATION[mode]):
                    diagnosed[mode] = evaluate(gp, **inputs) if gp is not None else None
            except Exception:  # noqa: BLE001 - no diagnosis: the fd finding stands
                diagnosed[mode] = None
        return diagnosed[mode]

    ieee: list[Finding] = []
    rng = np.random.default_rng(0)
    for name, g in zip(wrt, gref, strict=True):
        x0 = np.asarray(inputs[name], dtype=np.float64)
        g = np.asarray(g, dtype=np.float64)
        picks = rng.permutation(x0.size)[:FD_COMPONENTS]
        for k in picks:
            h = 1e-5 * max(1.0, abs(float(x0.ravel()[k])))
            smooth = _estimate(forward, inputs, name, x0, int(k), h, f0)
            if smooth is None:
                continue
            est, noise = smooth
            gk = float(g.ravel()[k])
            if not _close(gk, est, noise):
                # rounding inside the function (cancellations of intermediates far larger
                # than its value) can swamp the differences at h: at 100 h, where it is still
                # smooth, the estimate agreeing is agreement (seed 3001, case 615)
                wider = _estimate(forward, inputs, name, x0, int(k), 100 * h, f0)
                if wider is not None and _close(gk, *wider):
                    continue
            if not _close(gk, est, noise):
                at = np.unravel_index(int(k), x0.shape) if x0.shape else ()
                where = f"d/d{name}{list(map(int, at))}: {gk!r} vs finite differences {est!r}"
                explained = False
                for mode, why in _DIAGNOSES if not np.isfinite(gk) else ():
                    alt = diagnosis(mode)
                    if alt is None:
                        continue
                    ga = float(np.asarray(alt[wrt.index(name)], dtype=np.float64).ravel()[k])
                    # (only an ordinary 0.0 times inf or nan, or an inf minus itself, made
                    # it non-finite)
                    if _close(ga, est, noise):
                        ieee.append(Finding(
                            "ieee-gradient", "gradient (interpreter)",
                            f"{where}; {ga!r} {why} (docs/semantics.md)", repr(est), repr(gk)))
                        explained = True
                        break
                if explained:
                    continue
                return [Finding("fd", "gradient (interpreter)", where, repr(est), repr(gk))]
    return ieee[:1]


_DIAGNOSES = (
    ("absorbs", "with every 0.0 absorbing inf and nan (the chain rule's IEEE 0 * inf or "
                "0 * nan)"),
    ("saturates", "with every inf a division, power or function makes saturated to 1e100 (an "
                  "infinite local derivative meeting an exact cancellation: the chain rule's "
                  "IEEE inf - inf)"),
    # (1 + 1e100 - 1e100 is 0: a moderate saturation keeps the terms added before the
    # cancellation, w + (w - w) ** 0.5's derivative 1 + inf - inf)
    ("saturates moderately", "with every inf a division, power or function makes saturated to "
                             "2 ** 30 (an infinite local derivative meeting an exact "
                             "cancellation: the chain rule's IEEE inf - inf)"),
)
_SATURATION = {"saturates": 1e100, "saturates moderately": 2.0 ** 30}


def _estimate(forward: Program, inputs: dict[str, Any], name: str, x0: np.ndarray, k: int,
              h: float, f0: float) -> tuple[float, float] | None:
    """Richardson-extrapolated central differences of component ``k`` at step ``h`` and their
    rounding noise; None where the function is not smooth within 2h (one-sided slopes or the
    two central ones disagree, a value not finite)."""
    fm2, fm1, fp1, fp2 = (_shifted(forward, inputs, name, x0, k, t * h) for t in (-2, -1, 1, 2))
    vals = np.array([fm2, fm1, f0, fp1, fp2])
    if not np.all(np.isfinite(vals)):
        return None
    left, right = (f0 - fm1) / h, (fp1 - f0) / h
    c1, c2 = (fp1 - fm1) / (2 * h), (fp2 - fm2) / (4 * h)
    mag = max(1.0, abs(c1), float(np.max(np.abs(vals))) * 1e-5)
    if abs(left - right) > 1e-3 * mag or abs(c1 - c2) > 1e-4 * mag:
        return None
    return (4 * c1 - c2) / 3, 50 * np.finfo(float).eps * float(np.max(np.abs(vals))) / h


def _close(g: float, est: float, noise: float) -> bool:
    """A gradient component ``g`` agrees with the finite-difference estimate ``est``."""
    return bool(np.isfinite(g) and abs(g - est) <= 1e-6 * max(1.0, abs(est)) + noise)


def _shifted(forward: Program, inputs: dict[str, Any], name: str, x0: np.ndarray, k: int,
             step: float) -> float:
    """The interpreter's value with component ``k`` of input ``name`` moved by ``step``."""
    from ..ir.interpreter import evaluate

    x = x0.copy()
    x.ravel()[k] += step
    args = dict(inputs)
    args[name] = float(x) if x.ndim == 0 else x
    return float(evaluate(forward, **args))


def outcome_of(findings: list[Finding]) -> str:
    """The most serious outcome among ``findings`` (``agree`` when there are none)."""
    if not findings:
        return "agree"
    return min((f.outcome for f in findings), key=OUTCOMES.index)
