"""The fused loop backend on the fuzzer's programs (eqsat_ad.fuzz's generators, a small seeded
count): wherever the NumPy backend agrees with the reference interpreter, on finite, extreme
and non-finite inputs, the Numba backend agrees too (values, and nan/inf patterns exactly:
the fuzzer's own comparison), for the forward program and its gradient."""

from __future__ import annotations

import runpy
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.api import gradient_program
from eqsat_ad.fuzz import Case, check_case, make_case, outcome_of
from eqsat_ad.fuzz.case import INPUT_KINDS, draw_inputs
from eqsat_ad.fuzz.check import Finding, load_target
from eqsat_ad.fuzz.compare import mismatch
from eqsat_ad.fuzz.reduce import Reduced
from eqsat_ad.fuzz.report import write_reproducer
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Program

pytest.importorskip("numba")

SEED = 15
CASES = 24
ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.usefixtures("numba_cache")


@pytest.mark.parametrize("number", range(CASES))
def test_numba_agrees_with_the_interpreter_where_numpy_does(number: int) -> None:
    case, inputs_by_kind = make_case(SEED, number, ("index",))
    prog = load_target(case)
    assert isinstance(prog, Program)
    float_params = tuple(p.name for p in prog.params if p.kind == "tensor")
    compared = 0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        f_np, f_nb = ea.compile(prog), ea.compile(prog, backend="numba")
        first = evaluate(prog, **inputs_by_kind["finite"])
        g_np = g_nb = None
        if float_params and not prog.returns_tuple and np.ndim(first) == 0:
            g_np = ea.grad(prog, float_params)
            g_nb = ea.grad(prog, float_params, backend="numba")
            gradient = gradient_program(prog, float_params, as_tuple=True)  # the naive adjoint
        for kind, inputs in inputs_by_kind.items():
            pairs = [(f_np, f_nb, evaluate(prog, **inputs))]
            if g_np is not None:
                pairs.append((g_np, g_nb, evaluate(gradient, **inputs)))
            for a, b, ref in pairs:
                m_np, m_nb = mismatch(ref, a(**inputs)), mismatch(ref, b(**inputs))
                # (where the NumPy backend disagrees, a defect the fuzzer reports, the Numba
                # backend is held to nothing here)
                assert m_nb is None or m_np is not None, (kind, case.source, m_nb)
                compared += m_nb is None
    assert compared > 0  # the Numba backend agreed with the interpreter somewhere


# --- the fuzzer itself on the Numba backend (python -m eqsat_ad.fuzz --backend numba) ----------
SMALL = Case("index", "def f(x: [N], w: []):\n    return w * Sum[i: N](exp(x[i]) * x[i])\n",
             {"x": ("N",), "w": ()}, {"N": 3})


def test_the_fuzzers_check_runs_the_backend_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_case(backend="numba") compiles with the fused loop backend: a wrong result from it
    is a finding at its compiled stages (named so), and the NumPy check never runs it."""
    from eqsat_ad.backend.fused.program import NumbaProgram

    inputs = {"finite": draw_inputs(SMALL, "finite", np.random.default_rng(1))}
    assert outcome_of(check_case(SMALL, inputs, backend="numba")["finite"]) == "agree"
    real = NumbaProgram.__call__

    def wrong(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        out = real(self, *args, **kwargs)
        return out if isinstance(out, tuple) else out * (1 + 1e-4) + 1e-4

    monkeypatch.setattr(NumbaProgram, "__call__", wrong)
    found = {(f.outcome, f.stage) for f in check_case(SMALL, inputs, backend="numba")["finite"]}
    assert {("value", "compile[numba]"), ("value", "compile(optimize=False)[numba]")} <= found
    assert outcome_of(check_case(SMALL, inputs)["finite"]) == "agree"  # NumPy: not run


def test_a_reproducer_reruns_on_the_backend_that_found_it(tmp_path: Path) -> None:
    finding = Finding("value", "compile[numba]", "at (): 1.0 vs 2.0", "1.0", "2.0")
    inputs = draw_inputs(SMALL, "finite", np.random.default_rng(1))
    path = write_reproducer(tmp_path, Reduced(SMALL, inputs, finding, 1, 1), "finite",
                            "a test", 0, backend="numba")
    assert runpy.run_path(str(path))["BACKEND"] == "numba"
    assert "backend=BACKEND" in path.read_text()


def test_a_seeded_numba_run_from_the_command_line_finds_no_defect(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "eqsat_ad.fuzz", "--n", "4", "--seed", "11", "--backend",
         "numba", "--out", str(tmp_path)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert "4 programs, seed 11, backend numba" in proc.stdout, proc.stdout + proc.stderr
    runs = 4 * len(INPUT_KINDS)  # every run agreed
    assert f"| all | all | {runs} | {runs} |" in proc.stdout, proc.stdout
    assert proc.returncode == 0 and not list(tmp_path.glob("*.py"))
