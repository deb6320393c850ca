"""The fuzzer (eqsat_ad.fuzz): its generators, its comparison, that it catches a wrong backend,
that the minimizer shrinks, a seeded run, and the defects it found (xfail until fixed)."""

from __future__ import annotations

import ast
import os
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fuzz_reproducers import FIXED_REPRODUCERS, IEEE_GRADIENTS, KNOWN_REPRODUCERS, REPROS

import eqsat_ad as ea
from eqsat_ad.backend.numpy import CompiledProgram
from eqsat_ad.fuzz import Case, Runner, check_case, fuzz, make_case, outcome_of, reduce_case
from eqsat_ad.fuzz.case import INPUT_KINDS, SIGNED_ZEROS, draw_inputs
from eqsat_ad.fuzz.check import Finding, load_target
from eqsat_ad.fuzz.compare import mismatch
from eqsat_ad.fuzz.index_gen import generate_index
from eqsat_ad.fuzz.numpy_gen import generate_numpy
from eqsat_ad.fuzz.reduce import Reduced
from eqsat_ad.fuzz.report import DEFECTS, summary_table, write_reproducer

ROOT = Path(__file__).resolve().parents[1]


# --- the comparison ---------------------------------------------------------------------------
def test_mismatch_is_exact_on_nonfinite_and_close_on_finite() -> None:
    a = np.array([1.0, np.nan, np.inf])
    assert mismatch(a, a + np.array([1e-12, 0.0, 0.0])) is None
    assert mismatch(np.array([np.nan]), np.array([0.0])).kind == "nan-pattern"
    assert mismatch(np.array([np.inf]), np.array([-np.inf])).kind == "nan-pattern"
    assert mismatch(np.array([np.inf]), np.array([1e308])).kind == "nan-pattern"
    assert mismatch(1.0, 1.001).kind == "value"
    assert mismatch((1.0, np.zeros(2)), (1.0, np.zeros(3))).kind == "value"
    assert mismatch((1.0, 2.0), 1.0).kind == "value"


# --- the generators ---------------------------------------------------------------------------
@pytest.mark.parametrize("generate", [generate_index, generate_numpy])
def test_generators_are_deterministic_and_write_valid_programs(generate) -> None:
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(25):
        a, b = generate(rng_a), generate(rng_b)
        assert a == b
        ast.parse(a.source)
        if a.generator == "index":
            ea.parse(a.source)  # the library accepts what the generator writes
        else:  # NumPy runs it, and the translator accepts it
            fn = load_target(a)
            inputs = draw_inputs(a, "finite", np.random.default_rng(0))
            with np.errstate(all="ignore"):
                fn(**inputs)
            ea.translate(fn, {k: np.shape(v) for k, v in inputs.items()})


def test_generators_cover_the_language() -> None:
    """Across a few dozen programs every construct the task names appears."""
    rng = np.random.default_rng(0)
    index = "".join(generate_index(rng).source for _ in range(150))
    numpy = "".join(generate_numpy(rng).source for _ in range(150))
    for fn in ea.ir.functions.BUILTINS:
        assert f"{fn}(" in index, fn
    for token in ("Sum[", " and ", "rel[", "/2]", "/ ", "**", "return t", ", t", " - 1 - "):
        assert token in index, token
    for token in ("for i in range(", "if i", "np.where(", "np.maximum(", "axis=", "keepdims",
                  "np.einsum(", " @ ", "[1:]", "[::2]", ".T", "np.exp(", "np.diag("):
        assert token in numpy, token


# --- the fuzzer finds what is wrong -----------------------------------------------------------
SMALL = Case("index", "def f(x: [N], w: []):\n    return w * Sum[i: N](exp(x[i]) * x[i])\n",
             {"x": ("N",), "w": ()}, {"N": 3})


def make_case_inputs(case: Case) -> dict:
    rng = np.random.default_rng(1)
    return {kind: draw_inputs(case, kind, rng) for kind in ("finite", "nonfinite")}


def test_a_correct_backend_agrees() -> None:
    findings = check_case(SMALL, make_case_inputs(SMALL))
    assert all(outcome_of(f) == "agree" for f in findings.values()), findings


@pytest.mark.parametrize("perturb, outcome", [
    (lambda y: y * (1 + 1e-4) + 1e-4, "value"),
    (lambda y: np.full_like(np.asarray(y, dtype=float), np.nan), "nan-pattern"),
])
def test_a_wrong_backend_is_caught(monkeypatch: pytest.MonkeyPatch, perturb, outcome) -> None:
    real = CompiledProgram.__call__

    def wrong(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        if self.program.name.endswith("_grad"):
            return out
        return perturb(out)

    monkeypatch.setattr(CompiledProgram, "__call__", wrong)
    findings = check_case(SMALL, {"finite": make_case_inputs(SMALL)["finite"]})["finite"]
    stages = {f.stage for f in findings if f.outcome == outcome}
    assert stages == {"compile", "compile(optimize=False)"}, findings


def test_a_wrong_gradient_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled gradient off by a little, and an AD rule that is wrong (so the interpreted
    gradient disagrees with finite differences)."""
    real = CompiledProgram.__call__

    def wrong(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        return tuple(g * 1.001 for g in out) if self.program.name.endswith("_grad") else out

    monkeypatch.setattr(CompiledProgram, "__call__", wrong)
    findings = check_case(SMALL, {"finite": make_case_inputs(SMALL)["finite"]})["finite"]
    assert {f.stage for f in findings if f.outcome == "gradient"} == {"grad",
                                                                      "grad(optimize=False)"}
    monkeypatch.setattr(CompiledProgram, "__call__", real)
    import eqsat_ad.ir.interpreter as interpreter

    evaluate = interpreter.evaluate

    def wrong_ad(prog, *args, **kwargs):  # as if the AD stage had a wrong derivative rule
        out = evaluate(prog, *args, **kwargs)
        return tuple(g * 1.001 for g in out) if prog.name.endswith("_grad") else out

    monkeypatch.setattr(interpreter, "evaluate", wrong_ad)
    findings = check_case(SMALL, {"finite": make_case_inputs(SMALL)["finite"]})["finite"]
    assert any(f.outcome == "fd" for f in findings), findings


def test_rounding_that_swamps_the_finite_differences_is_no_finding() -> None:
    """Seed 3001, case 615 (a NumPy function): at h = 1e-5 the differences of B[0, 2] carry
    the rounding of intermediates far larger than the value (0.0710588 against the exact
    0.0710606; at 1e-3 they give 0.0710606). A 100x wider step, where the function is still
    smooth, agrees: no ``fd`` finding (a 0.1 % wrong derivative still is one, above)."""
    case, inputs = make_case(3001, 615, ("index", "numpy"))
    assert check_case(case, {"finite": inputs["finite"]})["finite"] == []


def test_the_chain_rules_ieee_zero_times_inf_is_its_own_outcome(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Class 2 (docs/semantics.md, "The chain rule is IEEE too"): ``t1[N]`` reads outside
    ``t1``, so its stored adjoint is 0.0, times ``1 / (false bracket)`` = inf: the interpreted
    gradient is nan where finite differences give 0. With every zero absorbing it is 0, so the
    finding is ``ieee-gradient``, not a defect. A nan gradient that zeros absorbing does not
    explain (a wrong derivative rule) stays ``fd``."""
    case = Case("index", "def f(w: [], x: [N]):\n    t1[i: N] = 1 / (i > N) * w\n"
                "    return t1[N] + w * x[0]\n", {"w": (), "x": ("N",)}, {"N": 2})
    inputs = {"w": 1.3, "x": np.array([0.7, -0.4])}
    (f,) = check_case(case, {"finite": inputs})["finite"]
    assert (f.outcome, f.actual) == ("ieee-gradient", "nan") and "ieee-gradient" not in DEFECTS
    assert outcome_of([f]) == "ieee-gradient"
    import eqsat_ad.ir.interpreter as interpreter

    evaluate = interpreter.evaluate

    def wrong_ad(prog, *args, **kwargs):  # a derivative rule that makes nan
        out = evaluate(prog, *args, **kwargs)
        return tuple(g * np.nan for g in out) if prog.name.endswith("_grad") else out

    monkeypatch.setattr(interpreter, "evaluate", wrong_ad)
    findings = check_case(case, {"finite": inputs})["finite"]
    assert "fd" in {f.outcome for f in findings}, findings


def test_rounding_at_an_ill_conditioned_point_is_its_own_outcome(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``1.5 x · 1`` at ``x = [1e154, 1, -1e154]`` (fuzz seed 31): the interpreter's einsum
    gives 1.5, the generated code's sum in order 0.0; a 1e-13 relative move of the inputs moves
    the interpreter's value by ~1e141, so this is rounding (allowed, docs/semantics.md), not a
    defect. A wrong backend on the same program at a well-conditioned point stays ``value``."""
    case = _numpy_case("    return np.dot(np.full(x.shape, 1.5), x)\n", {"x": ("N",)}, {"N": 3})
    extreme = {"x": np.array([1e154, 1.0, -1e154])}
    findings = check_case(case, {"extreme": extreme})["extreme"]
    assert {f.outcome for f in findings} == {"ill-conditioned"}, findings
    assert "ill-conditioned" not in DEFECTS
    real = CompiledProgram.__call__

    def wrong(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        return out if isinstance(out, tuple) else out * 1.001

    monkeypatch.setattr(CompiledProgram, "__call__", wrong)
    small = Case("index", "def f(x: [N]):\n    y[i: N] = 1.5 * x[i]\n    return y\n", {"x": ("N",)},
                 {"N": 3})
    finite = {"x": np.array([0.5, 1.0, -1.5])}
    assert "value" in {f.outcome for f in check_case(small, {"finite": finite})["finite"]}


def test_a_hang_is_a_timeout_and_the_runner_recovers() -> None:
    case, inputs = make_case(0, 0)
    with Runner(time_limit=0.01) as runner:  # shorter than the worker's start-up
        assert {outcome_of(f) for f in runner.run(case, inputs).values()} == {"timeout"}
        runner.time_limit = 120
        assert "timeout" not in {outcome_of(f) for f in runner.run(case, inputs).values()}


def test_the_minimizer_shrinks(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a backend that is wrong exactly when a program uses sin, the reducer keeps the sin
    and drops the rest."""
    real = CompiledProgram.__call__

    def wrong(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        return out + 1.0 if "np.sin" in self.source and not isinstance(out, tuple) else out

    monkeypatch.setattr(CompiledProgram, "__call__", wrong)
    source = (
        "def f(A: [N, M], x: [M], w: []):\n"
        "    y[i: N] = Sum[j: M](A[i, j] * exp(x[j]))\n"
        "    z[i: N] = (i + 1 < N) * (y[i + 1] - y[i]) + w\n"
        "    u = Sum[i: N](tanh(z[i]) * y[i])\n"
        "    return u + w * sin(Sum[j: M](x[j] * x[j]))\n"
    )
    case = Case("index", source, {"A": ("N", "M"), "x": ("M",), "w": ()}, {"N": 4, "M": 3})
    inputs = make_case_inputs(case)["finite"]
    runner = Runner(isolate=False)
    (finding,) = [f for f in check_case(case, {"finite": inputs})["finite"]
                  if f.stage == "compile"]
    reduced = reduce_case(runner, case, "finite", inputs, finding)
    assert reduced.finding.signature == finding.signature
    assert "sin(" in reduced.case.source
    assert len(reduced.case.source) < len(source) / 3, reduced.case.source
    assert "exp" not in reduced.case.source and "tanh" not in reduced.case.source
    assert reduced.case.sizes.get("N", 1) <= 1 and reduced.case.sizes.get("M", 1) <= 1


def test_summary_table_counts_per_generator_and_input_kind() -> None:
    table = summary_table({("index", "finite", "agree"): 3, ("index", "finite", "value"): 1,
                           ("numpy", "nonfinite", "agree"): 2})
    assert "| index | finite | 1 | 3 | 4 |" in table
    assert "| all | all | 1 | 5 | 6 |" in table


def test_a_reproducer_holds_its_case_and_inputs_exactly(tmp_path: Path) -> None:
    """Special values (nan, +-inf, -0.0, subnormals), empty and boolean arrays round-trip."""
    case = Case("index", "def f(x: [N], R: rel[N], A: [N, M], w: []):\n    return w\n",
                {"x": ("N",), "R": ("N",), "A": ("N", "M"), "w": ()}, {"N": 3, "M": 0},
                frozenset({"R"}))
    inputs = {"x": np.array([np.nan, -0.0, 5e-324]), "R": np.array([True, False, True]),
              "A": np.zeros((3, 0)), "w": -np.inf}
    finding = Finding("value", "compile", "at (): 1.0 vs 2.0", "1.0", "2.0")
    path = write_reproducer(tmp_path, Reduced(case, inputs, finding, 3, 9), "nonfinite",
                            "a test", 0)
    assert path.name == "value_index_compile_000.py"
    ns = runpy.run_path(str(path))
    assert ns["CASE"] == case and ns["KIND"] == "nonfinite" and ns["ACTUAL"] == "2.0"
    for k, v in inputs.items():
        got = ns["INPUTS"][k]
        assert np.asarray(got).dtype == np.asarray(v).dtype and np.shape(got) == np.shape(v)
        assert np.array_equal(np.signbit(got), np.signbit(v))
        assert np.array_equal(got, v, equal_nan=True)



def test_the_zeros_kind_draws_both_signs_of_zero() -> None:
    """The ``zeros`` input kind: every entry from SIGNED_ZEROS, both zeros present in a long
    vector (their signs decide a division), relations still booleans; the kinds before it keep
    their draws (a case's finite, extreme and nonfinite inputs are those of earlier runs)."""
    case = Case("index", "def f(x: [N], R: [N, N]):\n    return Sum[i: N](x[i])\n",
                {"x": ("N",), "R": ("N", "N")}, {"N": 400}, frozenset({"R"}))
    x = draw_inputs(case, "zeros", np.random.default_rng(3))["x"]
    assert set(np.unique(x)) <= set(SIGNED_ZEROS)
    zeros = x[x == 0]
    assert np.signbit(zeros).any() and not np.signbit(zeros).all()
    assert draw_inputs(case, "zeros", np.random.default_rng(3))["R"].dtype == bool
    assert INPUT_KINDS[:3] == ("finite", "extreme", "nonfinite")

# --- a seeded run -----------------------------------------------------------------------------
def test_seeded_run_finds_no_defect() -> None:
    """What CI runs: a small seeded count, both generators, every input kind."""
    result = fuzz(16, seed=0, out=None, log=None)
    assert result.programs == 16 and sum(result.counts.values()) == 16 * len(INPUT_KINDS)
    assert result.count("rejected") == 0  # the generators write valid programs
    assert [(k, kind, f.outcome, f.stage, f.detail) for k, kind, f in result.defects] == []


def test_a_finding_is_logged_when_it_happens() -> None:
    """A long run that is stopped early still names each finding's case, so it can be
    regenerated with ``make_case(seed, k)`` without waiting for the run's end."""

    class OneWrongCase:
        def run(self, case: Case, inputs: dict) -> dict[str, list[Finding]]:
            wrong = case.generator == "numpy"  # cases alternate index, numpy, index
            out = Finding("value", "compile", "1.0 vs 2.0") if wrong else Finding("agree", "")
            return {kind: [out] for kind in inputs}

    lines: list[str] = []
    result = fuzz(3, seed=5, out=None, runner=OneWrongCase(), log=lines.append)  # type: ignore[arg-type]
    logged = [line for line in lines if line.startswith("# finding:")]
    # case 1 (numpy generator), each input kind
    assert len(logged) == len(result.defects) == len(INPUT_KINDS)
    assert all(line.startswith("# finding: case 1 (numpy, ") for line in logged), logged
    assert "value at compile: 1.0 vs 2.0" in logged[0]


def test_seeded_run_writes_reproducers(tmp_path: Path) -> None:
    """The command-line tool end to end on a few programs: the table, and for every finding a
    standalone reproducer that shows the same finding when run."""
    proc = subprocess.run(
        [sys.executable, "-m", "eqsat_ad.fuzz", "--n", "4", "--seed", "3", "--out",
         str(tmp_path), "--reduce-seconds", "20", "--max-reductions", "1"],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert "| all | all |" in proc.stdout, proc.stdout + proc.stderr
    assert "4 programs, seed 3" in proc.stdout
    files = sorted(tmp_path.glob("*.py"))
    assert proc.returncode == (1 if files else 0)
    for path in files:
        out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                             cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert any(o in out.stdout for o in DEFECTS), out.stdout + out.stderr


# --- front-end defects the fuzzer found (fixed; regression tests) -----------------------------
def test_returning_a_shortened_slice_of_a_statement() -> None:
    """``t[:-1]`` of an earlier statement reads it with the same indices over a shorter extent;
    it was returned as the whole ``t`` (fuzzer: NumPy gave shape (2, 4), the translation
    (3, 4))."""
    def f(A):
        t1 = np.clip(A.T * 0.5, -1.0, 1.0)
        return t1[:-1], t1[:2], t1

    A = np.arange(12.0).reshape(4, 3) - 5.0
    for optimize in (False, True):
        got = ea.compile(f, optimize=optimize)(A)
        assert [g.shape for g in got] == [(2, 4), (2, 4), (3, 4)]
        for g, want in zip(got, f(A), strict=True):
            np.testing.assert_allclose(g, want)


# --- defects the fuzzer found outside the front ends (fixed: regression tests) -------------
# Minimized by the fuzzer (experiments/results/fuzz.md lists them with the stage to route to).
def _numpy_case(body: str, shapes: dict, sizes: dict) -> Case:
    return Case("numpy", f"import numpy as np\n\n\ndef f({', '.join(shapes)}):\n{body}", shapes,
                sizes)


KNOWN_DEFECTS = [
    pytest.param(
        Case("index", "def f(x: [N]):\n    return Sum[i: N](x[i]) + 0.0 ** (-2)\n",
             {"x": ("N",)}, {"N": 2}),
        "finite", {"x": np.array([1.0, 2.0])},
        # fixed: backend: a constant 0.0 ** -2 runs as Python float arithmetic in the generated
        # code and raises ZeroDivisionError; the interpreter gives inf
        id="constant-power-of-zero"),
    pytest.param(
        _numpy_case("    return np.mean(np.min(A / 0.0, axis=0))\n", {"A": ("N", "N")}, {"N": 1}),
        "finite", {"A": np.array([[1.0]])},
        # fixed: backend: the gradient of x / 0.0 divides Python floats 1 / 0.0 in the generated
        # code (ZeroDivisionError, optimize=False and optimized); the interpreter gives inf
        id="gradient-divides-by-constant-zero"),
    pytest.param(
        Case("index", "def f(x: [N], w: []):\n    return Sum[i: N](w * x[i])\n",
             {"x": ("N",), "w": ()}, {"N": 2}),
        "nonfinite", {"x": np.array([1.0, -1.0]), "w": np.inf},
        # fixed: rules: factoring w out of the sum (w * Sum x) gives inf * 0 = 0 under strong
        # zero; the interpreter sums inf + -inf = nan (issue 12 item 2)
        id="factor-out-of-sum-nonfinite"),
    pytest.param(
        _numpy_case("    return np.tanh(np.dot(x[::2], x[::2]))\n", {"x": ("N",)}, {"N": 2}),
        "nonfinite", {"x": np.array([-np.inf, 1.0])},
        # fixed: optimizer: the optimized gradient is nan where the interpreted one is 0
        # (tanh'(inf) = 0 times 2x = -inf: strong zero in the interpreter, not after rewriting)
        id="gradient-strong-zero-lost"),
    pytest.param(
        _numpy_case("    t2 = np.where(b >= 1.0, 0.0, A)\n    return A / t2\n",
                    {"A": ("N",), "b": ()}, {"N": 1}),
        "finite", {"A": np.array([-1.0]), "b": 2.0},
        # fixed: backend: the sign of zero: np.where(c, 0.0, A) is +0.0 in the interpreter and
        # -0.0 in the compiled code, so A / t2 is -inf against +inf
        id="signed-zero"),
    pytest.param(
        _numpy_case("    return np.where(np.where(z >= np.trace(B) * np.trace(B), np.trace(B), "
                    "x * np.trace(B)) > x, 0.0,\n        np.where(x > np.sum(B[1:]), 1.0, 1.0))\n",
                    {"x": (), "B": ("N", "N"), "z": ()}, {"N": 2}),
        "nonfinite", {"x": 1e-300, "z": -0.8154767066329334,
                      "B": np.array([[-0.0, -1.4509516941427603],
                                     [-0.8851977487725773, 1.4157664389185567]])},
        # fixed: rules: factoring rewrites g*x*t + (1-g)*t into t*(g*(x - 1) + 1), which loses x =
        # 1e-300 entirely; the data comparison after it flips (0.0 against 1.0)
        id="factoring-cancels-a-tiny-term"),
    pytest.param(
        _numpy_case("    return np.sum(np.where(np.log(x) >= 0.0, 1.0, 2.0))\n", {"x": ("N",)},
                    {"N": 2}),
        "finite", {"x": np.array([-1.0, 2.0])},
        # fixed: NumPy front end: a data comparison a >= b is written 1 - gt0(b - a), which is
        # true where a or b is nan (NumPy: false); needs a comparison built-in (ir/functions.py)
        id="comparison-with-nan"),
]


@pytest.mark.parametrize("case, kind, inputs", KNOWN_DEFECTS)
def test_known_defect(case: Case, kind: str, inputs: dict) -> None:
    findings = check_case(case, {kind: inputs})[kind]
    assert [f for f in findings if f.outcome in DEFECTS] == []


@pytest.mark.parametrize("name", [
    pytest.param(n, id=n.removesuffix(".py")) if n in FIXED_REPRODUCERS else
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=r), id=n.removesuffix(".py"))
    for n, r in KNOWN_REPRODUCERS.items()
])
def test_known_reproducer(name: str) -> None:
    ns = runpy.run_path(str(REPROS / name))
    backend = ns.get("BACKEND", "numpy")  # a Numba run's reproducer is checked on Numba
    if backend == "numba":
        pytest.importorskip("numba")
    findings = check_case(ns["CASE"], {ns["KIND"]: ns["INPUTS"]}, backend=backend)[ns["KIND"]]
    if name in IEEE_GRADIENTS:  # class 2: the chain rule's 0 * inf, nan as IEEE (and JAX)
        ieee = [f for f in findings if f.outcome == "ieee-gradient"]
        assert ieee and all(f.actual == "nan" for f in ieee)
    assert [f for f in findings if f.outcome in DEFECTS] == []


def test_every_reproducer_is_classified() -> None:
    """Each reproducer of the recorded run is an xfail here, covered by KNOWN_DEFECTS, or noted
    in experiments/results/fuzz.md as a duplicate or not a defect."""
    notes = (ROOT / "experiments" / "results" / "fuzz.md").read_text()
    for path in REPROS.glob("*.py"):
        assert path.name in KNOWN_REPRODUCERS or path.name in notes, path.name
