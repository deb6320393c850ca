"""The cost report of a ``backend="numba"`` gradient says where each statement runs and what
its first call spent compiling (issue: the fused backend's compile time is part of the report)."""

from __future__ import annotations

import numpy as np
import pytest

import eqsat_ad as ea

pytest.importorskip("numba")

_PREFIX = ("def f(x: [N]):\n    c[i: N] = Sum[j: N]((j <= i) * x[j])\n"
           "    return Sum[i: N](c[i] * c[i])\n")


def test_the_report_lists_the_schedule_and_the_first_calls_compile_time() -> None:
    g = ea.grad(ea.parse(_PREFIX), "x", backend="numba")
    x = np.linspace(0.0, 1.0, 50)
    g(x=x)
    before = g.report.backend
    assert before is not None and before.compile_seconds.keys() == {"d"}
    schedule = g.compiled.schedule.placement
    assert dict(before.placement) == dict(schedule) and "loop" in schedule.values()
    text = str(g.report)
    assert "backend numba: where each statement runs" in text
    for name, where in schedule.items():
        assert any(line.split()[:2] == [name, where] for line in text.splitlines()), name
    assert f"float64 {g.compile_seconds['d']:.2f} s" in text
    g(x=x.astype(np.float32))  # a second float type: its own compile time joins the report
    d = g.report.to_dict()["backend"]
    assert d["name"] == "numba" and set(d["compile_seconds"]) == {"float64", "float32"}
    assert d["compile_seconds"]["float32"] == g.compile_seconds["f"] > 0


def test_the_numpy_backends_report_has_no_backend_section() -> None:
    g = ea.grad(ea.parse(_PREFIX), "x")
    g(x=np.linspace(0.0, 1.0, 50))
    assert g.report.backend is None and "backend numba" not in str(g.report)
    assert "backend" not in g.report.to_dict()


def test_the_notebook_view_shows_the_backend_section() -> None:
    g = ea.grad(ea.parse(_PREFIX), "x", backend="numba")
    g(x=np.linspace(0.0, 1.0, 50))
    html = g.report._repr_html_()
    assert "<h4>backend numba</h4>" in html and "float64" in html
    assert all(f"<code>{name}</code>" in html for name in g.compiled.schedule.placement)
