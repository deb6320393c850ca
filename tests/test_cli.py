"""The command line, run in-process through ``eqsat_ad.cli.main`` and once as ``python -m``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eqsat_ad.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"


def test_grad_prints_program_source_and_report(capsys):
    assert main(["grad", str(EXAMPLES / "ktrace.py"), "--sizes", "N=100"]) == 0
    out = capsys.readouterr().out
    assert "A_bar[i: N, j: N] = 2 * (i == j)" in out
    assert "def f_grad(A):" in out
    # the report's three priced columns, at the sizes given on the command line
    assert "Cost report (sizes: N=100; prices of the plans the backend runs)" in out
    assert any(line.split() == ["eager", "AD", "naive", "adjoint", "optimized"]
               for line in out.splitlines())


def test_grad_json_runs_as_printed(capsys, tmp_path):
    f = tmp_path / "sumsq.py"
    f.write_text("import numpy as np\n\ndef helper(v):\n    return v\n\n"
                 "def sumsq(x):\n    return np.sum(x * x)\n")
    assert main(["grad", str(f), "--shape", "x=N", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["program"].splitlines()[1].strip() == "x_bar[i: N] = 2 * x[i]"
    namespace: dict = {}
    from eqsat_ad.backend import runtime

    exec(out["source"], {"np": np, "_rt": runtime}, namespace)  # noqa: S102 - generated code
    x = np.arange(4.0)
    np.testing.assert_allclose(namespace["sumsq_grad"](x), 2 * x)
    assert out["report"]["optimized"]["big_o"] == "O(N)"


def test_grad_wrt_several_and_function_choice(capsys):
    code = main(["grad", str(EXAMPLES / "matrix_chain.py"), "--wrt", "A", "C",
                 "--sizes", "N=100", "R=4"])
    assert code == 0
    out = capsys.readouterr().out
    assert "A_bar" in out and "C_bar" in out and "B_bar" not in out


def test_errors_are_messages_with_exit_status_2(capsys, tmp_path):
    assert main(["grad", str(tmp_path / "missing.py")]) == 2
    assert "cannot read" in capsys.readouterr().err
    f = tmp_path / "np_fn.py"
    f.write_text("def g(x):\n    return x.sum()\n")
    assert main(["grad", str(f)]) == 2
    assert "--shape" in capsys.readouterr().err
    assert main(["grad", str(EXAMPLES / "ktrace.py"), "--function", "nope"]) == 2
    assert "no function 'nope'" in capsys.readouterr().err
    assert main(["grad", str(EXAMPLES / "ktrace.py"), "--sizes", "N"]) == 2
    assert "NAME=VALUE" in capsys.readouterr().err


def test_check_rules_exit_status_says_whether_sound(capsys):
    assert main(["check-rules", "arith"]) == 0
    assert "0 unsound" in capsys.readouterr().out
    assert main(["check-rules", str(ROOT / "tests" / "rules_bad.egg"), "--trials", "8"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_explain_writes_a_page_and_a_picture(capsys, tmp_path):
    html, svg = tmp_path / "k.html", tmp_path / "k.svg"
    assert main(["explain", str(EXAMPLES / "ktrace.py"), "--html", str(html),
                 "--svg", str(svg)]) == 0
    out = capsys.readouterr().out
    assert "Rewrite chains of 'f_grad'" in out
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert svg.read_text().startswith("<svg")


def test_fuzz_is_clear_when_absent(capsys):
    try:
        import eqsat_ad.fuzz  # noqa: F401
    except ModuleNotFoundError:
        assert main(["fuzz"]) == 2
        assert "no eqsat_ad.fuzz" in capsys.readouterr().err
    else:
        pytest.skip("eqsat_ad.fuzz is installed")


@pytest.mark.parametrize("command", ["grad", "check-rules", "explain", "fuzz"])
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert "usage: eqsat-ad " + command in capsys.readouterr().out


def test_python_dash_m(tmp_path):
    done = subprocess.run([sys.executable, "-m", "eqsat_ad", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "check-rules" in done.stdout


def test_grad_backend_numba_prints_the_loop_module(capsys, tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path))
    assert main(["grad", str(EXAMPLES / "ktrace.py"), "--backend", "numba", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "numba"
    assert "import numba as nb" in out["source"] and "def run(" in out["source"]
    # (k traces: the gradient runs as one NumPy part, so the module has no kernel and carries
    # no helper)
    assert "_np_A_bar(" in out["source"] and "@nb.njit" not in out["source"]
    compile(out["source"], "<generated>", "exec")  # the printed module is valid Python


def test_grad_backend_numba_without_numba_names_the_extra(capsys, without_numba):
    assert main(["grad", str(EXAMPLES / "ktrace.py"), "--backend", "numba"]) == 2
    assert "eqsat-ad[numba]" in capsys.readouterr().err
