"""Measure one sweep program (runs in a child process of experiments/sweep.py).

Every figure is printed as one JSON line ``{"key": ..., "value": ...}`` the moment it is known,
so a child killed for time or memory still hands back what it measured before. Order: first-call
latency, correctness at small sizes (naive, optimized and hand-written gradients against each
other and against central differences), the report's prices at the benchmark sizes, one probe
call of each variant (hand, optimized, naive, the Numba backend's gradient where Numba is
installed, JAX jit's gradient of the same function where JAX can trace it, the function),
interleaved repeated calls (medians), peak memory, and for matrix chains
the contraction cost of ``np.einsum_path(..., optimize="optimal")``.
"""

from __future__ import annotations

import gc
import json
import math
import sys
import time
import tracemalloc
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np
from sweep_jax import JaxUnavailable, jax_gradient
from sweep_programs import SweepProgram

import eqsat_ad as ea
from eqsat_ad.plan.same_code import same_code as same_source

__all__ = ["einsum_optimal_cost", "measure", "report_prices", "same_code"]

SINGLE_CALL_S = 10.0
"""A variant whose first timed call takes longer is timed once only (and not traced)."""


def emit(key: str, value: Any) -> None:
    print(json.dumps({"key": key, "value": value}), flush=True)


# ================================================================================================
# Reading the cost report
# ================================================================================================


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int | float | Fraction):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _price(column: Any) -> float | None:
    """A priced column's value at the report's sizes, whatever the report's version.

    The current report prices each column from the plan the backend runs: its "value" is what a
    timing measures. An older report priced programs twice, as written ("value") and as run
    ("lowered"); the run price is then read.
    """
    if not isinstance(column, Mapping):
        return _number(column)
    for key in ("lowered", "plan", "backend"):
        sub = column.get(key)
        if isinstance(sub, Mapping) and _number(sub.get("value")) is not None:
            return _number(sub.get("value"))
    for key in ("price", "cost_at_sizes", "value"):
        if _number(column.get(key)) is not None:
            return _number(column.get(key))
    return None


def _largest(column: Any) -> float | None:
    if not isinstance(column, Mapping):
        return None
    for key in ("largest_intermediate", "largest", "largest_allocation"):
        lg = column.get(key)
        if isinstance(lg, Mapping):
            for k in ("value", "elements_at_sizes", "elements"):
                if _number(lg.get(k)) is not None:
                    return _number(lg.get(k))
        elif _number(lg) is not None:
            return _number(lg)
    return None


def _column(d: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` found at the top level or under a "columns" mapping."""
    for where in (d, d.get("columns") if isinstance(d.get("columns"), Mapping) else {}):
        for n in names:
            if n in where:
                return where[n]
    return None


def report_prices(report: Any) -> dict[str, float | None]:
    """Naive, optimized (and eager-AD, when the report has that column) prices at the report's
    sizes and each program's largest intermediate, read from ``report.to_dict()``."""
    if report is None:
        return {}
    d = report.to_dict()
    naive = _column(d, "naive", "naive_adjoint")
    opt = _column(d, "optimized")
    eager = _column(d, "eager", "eager_ad", "eager AD", "eager_AD")
    out = {
        "naive": _price(naive), "optimized": _price(opt), "eager": _price(eager),
        "largest_naive": _largest(naive), "largest_optimized": _largest(opt),
        "largest_eager": _largest(eager),
    }
    # The predicted speed-up is naive price / optimized price; the report's own figure only
    # where a price is missing.
    if out["naive"] is not None and out["optimized"]:
        out["speedup"] = out["naive"] / out["optimized"]
    else:
        out["speedup"] = _number(d.get("speedup"))
    return out


# ================================================================================================
# Contraction cost of numpy's optimal einsum path, in the cost model's units
# ================================================================================================


def einsum_optimal_cost(shapes: list[tuple[int, ...]]) -> dict[str, float]:
    """For the chain ``Σ A0 A1 .. A(L-1)``: numpy's optimal path, priced as eqsat_ad prices a
    contraction (its iteration space plus the entries it writes), and numpy's own FLOP count."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    terms = [letters[k] + letters[k + 1] for k in range(len(shapes))]
    size = {letters[k]: s[0] for k, s in enumerate(shapes)}
    size[letters[len(shapes)]] = shapes[-1][1]
    ops = [np.empty(s) for s in shapes]
    path, text = np.einsum_path(",".join(terms) + "->", *ops, optimize="optimal")
    flops = next(float(line.split(":")[1]) for line in text.splitlines()
                 if "Optimized FLOP count" in line)
    cost = 0.0
    live = list(terms)
    for step in path[1:]:
        picked = [live[k] for k in step]
        live = [t for k, t in enumerate(live) if k not in step]
        used = set("".join(picked))
        keep = "".join(sorted(c for c in used if any(c in t for t in live)))
        cost += math.prod(size[c] for c in used) + math.prod(size[c] for c in keep)
        live.append(keep)
    return {"cost": cost, "numpy_flops": flops}


# ================================================================================================
# Measuring
# ================================================================================================


def _as_tuple(out: Any) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(g, dtype=float) for g in (out if isinstance(out, tuple) else (out,)))


def central_differences(f: Callable[..., float], inputs: dict[str, Any], name: str,
                        h: float = 1e-6) -> np.ndarray:
    """Central differences of ``f`` in the argument ``name`` (step ``h``)."""
    x = np.array(inputs[name], dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        old = x[k]
        x[k] = old + h
        up = f(**{**inputs, name: x.copy()})
        x[k] = old - h
        down = f(**{**inputs, name: x.copy()})
        x[k] = old
        g[k] = (up - down) / (2 * h)
    return g


def _rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def check(sp: SweepProgram, naive: Any, opt: Any) -> dict[str, Any]:
    """Naive, optimized and hand gradients agree at small sizes, and with central differences."""
    inputs = sp.inputs(sp.small, seed=1)
    got = {"naive": _as_tuple(naive(**inputs)), "optimized": _as_tuple(opt(**inputs))}
    hand = sp.hand(**inputs)
    errors: dict[str, float] = {}
    for k, name in enumerate(sp.wrt):
        fd = central_differences(sp.f, inputs, name)
        errors[f"hand-fd:{name}"] = _rel_err(hand[name], fd)
        for which, g in got.items():
            errors[f"{which}-hand:{name}"] = _rel_err(g[k], hand[name])
            errors[f"{which}-fd:{name}"] = _rel_err(g[k], fd)
    worst = max(errors, key=lambda k: errors[k])
    ok = all(v < (1e-5 if "fd" in k else 1e-8) for k, v in errors.items())
    return {"ok": ok, "worst": worst, "worst_err": errors[worst]}


def same_code(naive: str, optimized: str) -> bool:
    """Whether the naive and optimized gradients run the same code, up to the names of
    temporaries, the order of independent lines and einsum letters (then any measured difference
    between them is the machine's, not the optimizer's; the library itself runs the naive code
    for such a call: eqsat_ad.plan.same_code)."""
    return same_source(naive, optimized)


def check_against_hand(sp: SweepProgram, g: Any) -> dict[str, Any]:
    """A gradient (the Numba backend's) against the hand-written one at small sizes."""
    inputs = sp.inputs(sp.small, seed=1)
    got, hand = _as_tuple(g(**inputs)), sp.hand(**inputs)
    err = max(_rel_err(got[k], hand[name]) for k, name in enumerate(sp.wrt))
    return {"ok": err < 1e-8, "worst_err": err}


def _once(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _peak(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return int(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def _short(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".splitlines()[0] if str(e) else type(e).__name__
    return text[:160]


def _emit_prices(key: str, compiled: Any) -> None:
    try:
        emit(key, report_prices(compiled.report))
    except Exception as e:  # noqa: BLE001 - a report that cannot be read is a recorded failure
        emit(f"error:{key}", _short(e))


def measure(sp: SweepProgram, sizes: Mapping[str, int], budget: float, max_repeats: int) -> None:
    """Print every figure of ``sp`` at ``sizes`` as JSON lines (see the module docstring)."""
    emit("sizes", dict(sizes))
    index = sp.frontend == "index"
    opts = {"sizes": dict(sizes)} if index else {}
    small = sp.inputs(sp.small, seed=1)

    target = sp.program()
    built: dict[str, Any] = {}
    for name, build in (
        ("opt", lambda: ea.grad(target, wrt=sp.wrt, **opts)),
        ("naive", lambda: ea.grad(target, wrt=sp.wrt, optimize=False)),
    ):
        try:
            t0 = time.perf_counter()
            g = build()
            g(**small)  # a NumPy-front-end function is translated and compiled at its first call
            emit("latency_s" if name == "opt" else "latency_naive_s", time.perf_counter() - t0)
            built[name] = g
        except Exception as e:  # noqa: BLE001 - every failure is recorded, none stops the sweep
            emit(f"error:{name}", "small sizes: " + _short(e))
    try:  # the fused loop backend, where Numba is installed
        t0 = time.perf_counter()
        g = ea.grad(target, wrt=sp.wrt, backend="numba", **opts)
        g(**small)
        emit("latency_numba_s", time.perf_counter() - t0)
        built["numba"] = g
        emit("check_numba", check_against_hand(sp, g))
    except ImportError:
        emit("error:numba", "Numba is not installed")
    except Exception as e:  # noqa: BLE001
        emit("error:numba", "small sizes: " + _short(e))
    jax_bind: Callable[[Mapping[str, Any]], Callable[[], Any]] | None = None
    try:  # JAX jit of the same function, where JAX can trace it (sweep_jax)
        jax_bind = jax_gradient(sp)
    except JaxUnavailable as e:
        emit("jax_unavailable", str(e))
    if "numba" in built and "opt" in built:
        try:  # no loop nest: the numba gradient calls the NumPy backend's program itself
            nb = built["numba"].compiled
            emit("same_code_numba", bool(nb.numpy_only)
                 and same_code(nb.numpy.source, built["opt"].source))
        except Exception as e:  # noqa: BLE001
            emit("error:same_code_numba", _short(e))
    if "naive" in built and "opt" in built:
        try:
            emit("same_code", same_code(built["naive"].source, built["opt"].source))
        except Exception as e:  # noqa: BLE001
            emit("error:same_code", _short(e))
        try:
            emit("check", check(sp, built["naive"], built["opt"]))
        except Exception as e:  # noqa: BLE001
            emit("check", {"ok": False, "worst": "error", "worst_err": None, "error": _short(e)})
    if index and "opt" in built:  # priced at the bench sizes already: known even if a run fails
        _emit_prices("prices", built["opt"])

    inputs = sp.inputs(sizes, seed=0)
    forward = ea.compile(target, **opts)
    variants: dict[str, Callable[[], Any]] = {"hand": lambda: sp.hand(**inputs)}
    if "opt" in built:
        variants["opt"] = lambda: built["opt"](**inputs)
    if "naive" in built:
        variants["naive"] = lambda: built["naive"](**inputs)
    if "numba" in built:
        variants["numba"] = lambda: built["numba"](**inputs)
    if jax_bind is not None:
        try:
            variants["jax"] = jax_bind(inputs)
        except Exception as e:  # noqa: BLE001
            emit("jax_unavailable", "at the benchmark sizes: " + _short(e))
    variants["f_hand"] = lambda: sp.f(**inputs)
    variants["f_opt"] = lambda: forward(**inputs)
    probes: dict[str, float] = {}
    for name, fn in variants.items():
        try:
            first = _once(fn)  # compiles a NumPy-front-end function at these shapes
            probes[name] = _once(fn) if first < SINGLE_CALL_S else first
            emit(f"probe:{name}", probes[name])
        except Exception as e:  # noqa: BLE001
            emit(f"error:{name}", _short(e))
        finally:  # the report exists once the call compiled, even when the run failed
            if name == "opt":
                _emit_prices("prices", built["opt"])
            if name == "f_opt" and sp.chain:
                _emit_prices("forward_prices", forward)
    if sp.chain:
        emit("einsum", einsum_optimal_cost([np.shape(inputs[m]) for m in sp.wrt]))

    fast = [n for n, t in probes.items() if t < SINGLE_CALL_S]
    per_round = sum(probes[n] for n in fast)
    rounds = int(min(max_repeats, max(3, budget / per_round if per_round > 0 else max_repeats)))
    times: dict[str, list[float]] = {n: [] for n in fast}
    order = np.random.default_rng(0)
    for _ in range(rounds):
        # Interleaved, in a fresh random order each round: the machine's drift hits all alike,
        # and no variant always follows the same one (a rotation keeps the cyclic order, so
        # one variant always ran right after the NumPy function freed its large arrays, whose
        # allocator state it then paid for: the identical code of the naive and optimized
        # gradients of "chain" once timed 1.4x apart).
        for k in order.permutation(len(fast)):
            times[fast[k]].append(_once(variants[fast[k]]))
    # (a variant slower than SINGLE_CALL_S is not repeated: its probe is its time)
    emit("times", {n: float(np.median(times[n])) if times.get(n) else probes[n]
                   for n in probes})
    emit("times_min", {n: float(np.min(times[n])) if times.get(n) else probes[n]
                       for n in probes})
    emit("rounds", rounds)
    for n in ("opt", "naive", "hand"):
        if n in fast:
            try:
                emit(f"peak:{n}", _peak(variants[n]))
            except Exception as e:  # noqa: BLE001
                emit(f"error:peak:{n}", _short(e))
    emit("done", True)


if __name__ == "__main__":
    sys.exit("run experiments/sweep.py; this module measures one program for it")
