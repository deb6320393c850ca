"""Sparse relations and index arrays: eqsat_ad's gradients vs hand-written NumPy/SciPy ones.

Workloads (issue 13): the masked graph Laplacian Σ_{i,j} M[i, j] (x[i] - x[j])² with M as CSR
and the same written with an edge list in the NumPy front end, both vs a hand-written
``np.bincount`` gradient; a GCN layer Σ tanh(Â H W) (gradient wrt H and W) vs hand-written SciPy;
a mesh edge-length energy from an edge list; sparse softmax attention over a relation; a
scaling run N = 10³ .. 10⁶ at 8 edges per node (log-log slope). Peak memory by tracemalloc.

One pinned core, one BLAS thread, float64, medians of repeats timed in alternation (eqsat_ad
and the hand-written gradient take turns), so ratios are measured under the same load.
Peer: JAX (CPU, float64, one thread), ``jax.jit(jax.grad(loss))`` of the same losses written
the JAX way: gathers ``x[src]`` (whose adjoint is a scatter-add) and ``jax.ops.segment_sum``
for the GCN's aggregation; timed when importable (the script installs nothing). PyTorch
2.13 (CPU, one thread) runs in a child process under the side venv's Python 3.11
(``--torch-python``, default ``.venv-torch/bin/python`` when it exists; see torch_peer.py): the
Laplacian with ``index_select`` (its backward is ``index_add_``) and with the relation as a
``torch.sparse`` CSR tensor, the GCN with ``torch.sparse.mm``; the child checks its gradient
against the hand-written one before timing it on the inherited pinned core, and its median is
divided by the hand-written gradient's median measured just before and after, in the same run.

    taskset -c 0 .venv/bin/python experiments/sparse_bench.py --out experiments/results
    .venv/bin/python experiments/sparse_bench.py --quick      # a smoke run
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from torch_peer import Protocol, default_torch_python, torch_time  # noqa: E402

import eqsat_ad as ea  # noqa: E402

LAP = ea.parse("""
def lap(x: [N], M: rel[N, N]):
    return Sum[i: N, j: N](M[i, j] * (x[i] - x[j]) ** 2)
""")
GCN = ea.parse("""
def gcn(H: [N, F], W: [F, G], A: rel[N, N]):
    Z[i: N, g: G] = Sum[j: N, f: F](A[i, j] * H[j, f] * W[f, g])
    return Sum[i: N, g: G](tanh(Z[i, g]))
""")
ATT = ea.parse("""
def att(q: [N, D], k: [N, D], v: [N], M: rel[N, N]):
    z[i: N] = Sum[j: N](M[i, j] * exp(Sum[d: D](q[i, d] * k[j, d])))
    o[i: N] = Sum[j: N](M[i, j] * exp(Sum[d: D](q[i, d] * k[j, d])) * v[j]) / z[i]
    return Sum[i: N](o[i] ** 2)
""")


def energy(x, src, dst):
    d = x[src] - x[dst]
    return np.sum(d ** 2)


def mesh(p, a, b):
    e = p[a] - p[b]
    length = np.sqrt(np.sum(e ** 2, axis=1))
    return np.sum((length - 1.0) ** 2)


def pin() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def paired(*fns: Callable[[], Any], repeats: int) -> list[float]:
    """Medians of the functions timed in alternation (a load change on the shared machine
    hits every one of them alike, so the ratios hold)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def ratio_of(peer: Callable[[], Any], hand: Callable[[], Any], repeats: int) -> float:
    """A peer's time over the hand-written one's, timed in alternation on their own (a peer
    that allocates much, as XLA does, would otherwise slow whatever runs after it)."""
    t_peer, t_hand = paired(peer, hand, repeats=repeats)
    return t_peer / t_hand


def peak(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    fn()
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def graph(n: int, per_node: int, seed: int = 0) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
    """A random directed graph, ``per_node`` distinct out-edges per node, as CSR and COO."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_node)
    cols = rng.integers(0, n, n * per_node)
    m = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    m.sum_duplicates()
    m.data[:] = 1.0
    coo = m.tocoo()
    return m, coo.row.astype(np.int64), coo.col.astype(np.int64)


def hand_lap(x: np.ndarray, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    d = x[r] - x[c]
    n = len(x)
    return 2 * (np.bincount(r, d, n) - np.bincount(c, d, n))


def peers_available(torch_python: str | None) -> dict[str, bool]:
    return {"jax": importlib.util.find_spec("jax") is not None,
            "torch": torch_python is not None and Path(torch_python).exists()}


def jax_module() -> Any:
    """JAX in float64, or None when it is not importable."""
    if importlib.util.find_spec("jax") is None:
        return None
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def jax_lap(r: np.ndarray, c: np.ndarray) -> Callable[[np.ndarray], Any] | None:
    """JAX's gradient of Σ_e (x[r[e]] - x[c[e]])² (edge list; its adjoint is a scatter-add)."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy
    rj, cj = jnp.asarray(r), jnp.asarray(c)
    grad = jax.jit(jax.grad(lambda x: jnp.sum((x[rj] - x[cj]) ** 2)))
    return lambda x: grad(x).block_until_ready()


def jax_gcn(r: np.ndarray, c: np.ndarray, n: int) -> Callable[..., Any] | None:
    """JAX's gradient of Σ tanh(Â H W) with Â H by ``jax.ops.segment_sum`` (rows sorted)."""
    jax = jax_module()
    if jax is None:
        return None
    jnp = jax.numpy
    rj, cj = jnp.asarray(r), jnp.asarray(c)

    def loss(h: Any, w: Any) -> Any:
        ah = jax.ops.segment_sum(h[cj], rj, num_segments=n, indices_are_sorted=True)
        return jnp.sum(jnp.tanh(ah @ w))

    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
    return lambda h, w: jax.block_until_ready(grad(h, w))


def torch_ratios(python: str | None, runs: dict[str, list[np.ndarray]],
                 want: list[np.ndarray], hand: Callable[[], Any], repeats: int
                 ) -> dict[str, float | str]:
    """``ratio_torch_<workload>`` per PyTorch workload (its arrays in ``runs``): the child's
    median over the hand-written gradient's median, timed just before and after the child (the
    two processes cannot alternate call by call); a note instead when skipped or wrong."""
    out: dict[str, float | str] = {}
    for workload, arrays in runs.items():
        before = paired(hand, repeats=repeats)[0]
        seconds, note = torch_time(python, workload, arrays, want,
                                   Protocol(budget=0.0, min_reps=repeats, max_reps=repeats))
        after = paired(hand, repeats=repeats)[0]
        if seconds is None or note:
            out[f"torch_{workload}"] = note
            continue
        out[f"torch_{workload}_s"] = seconds
        out[f"torch_{workload}_hand_s"] = (before + after) / 2
        out[f"ratio_torch_{workload}"] = seconds / ((before + after) / 2)
        print(f"  PyTorch {workload}: {seconds * 1e3:.3g} ms, "
              f"{out[f'ratio_torch_{workload}']:.2f}x hand-written")
    return out


def bench_laplacian(n: int, per_node: int, repeats: int, peers: bool = True,
                    torch_python: str | None = None) -> dict[str, Any]:
    m, r, c = graph(n, per_node)
    x = np.random.default_rng(1).standard_normal(n)
    g = ea.grad(LAP, wrt="x", sizes={"N": n, "nnz_M": m.nnz})
    rel = ea.SparseRelation.of(m)
    np.testing.assert_allclose(g(x, m), hand_lap(x, r, c), rtol=1e-9, atol=1e-9)
    t_hand, t_csr, t_rel = paired(lambda: hand_lap(x, r, c), lambda: g(x, m),
                                  lambda: g(x, rel), repeats=repeats)
    peer_times: dict[str, float] = {}
    peer = jax_lap(r, c) if peers else None
    if peer is not None:
        np.testing.assert_allclose(np.asarray(peer(x)), hand_lap(x, r, c), rtol=1e-9, atol=1e-9)
        peer_times["jax"] = ratio_of(lambda: peer(x), lambda: hand_lap(x, r, c), repeats)
    torch_out = torch_ratios(
        torch_python, {"lap_index": [x, r, c], "lap_csr": [x, m.indptr.astype(np.int64),
                                                             m.indices.astype(np.int64)]},
        [hand_lap(x, r, c)], lambda: hand_lap(x, r, c), repeats) if peers else {}
    return {
        "N": n, "nnz": int(m.nnz), "hand_s": t_hand, "eqsat_csr_s": t_csr, "eqsat_rel_s": t_rel,
        "ratio_csr": t_csr / t_hand, "ratio_rel": t_rel / t_hand,
        **{f"ratio_{k}": v for k, v in peer_times.items()}, **torch_out,
        "peak_hand_MB": peak(lambda: hand_lap(x, r, c)) / 2**20,
        "peak_eqsat_MB": peak(lambda: g(x, m)) / 2**20,
        "source": g.source,
    }


def bench_edges(n: int, per_node: int, repeats: int, torch_python: str | None
                ) -> dict[str, Any]:
    _, r, c = graph(n, per_node)
    x = np.random.default_rng(2).standard_normal(n)
    g = ea.grad(energy)
    np.testing.assert_allclose(g(x, r, c), hand_lap(x, r, c), rtol=1e-9, atol=1e-9)
    t_hand, t_eq = paired(lambda: hand_lap(x, r, c), lambda: g(x, r, c), repeats=repeats)
    peer = jax_lap(r, c)
    jax_ratio = ratio_of(lambda: peer(x), lambda: hand_lap(x, r, c), repeats) if peer else None
    torch_out = torch_ratios(torch_python, {"lap_index": [x, r, c]}, [hand_lap(x, r, c)],
                             lambda: hand_lap(x, r, c), repeats)
    return {"N": n, "E": len(r), "hand_s": t_hand, "eqsat_s": t_eq, "ratio": t_eq / t_hand,
            **({"ratio_jax": jax_ratio} if jax_ratio is not None else {}), **torch_out,
            "peak_hand_MB": peak(lambda: hand_lap(x, r, c)) / 2**20,
            "peak_eqsat_MB": peak(lambda: g(x, r, c)) / 2**20, "source": g.source}


def bench_gcn(n: int, per_node: int, feat: int, repeats: int, torch_python: str | None
              ) -> dict[str, Any]:
    a, _, _ = graph(n, per_node, 3)
    rng = np.random.default_rng(4)
    h = rng.standard_normal((n, feat)) / np.sqrt(feat)
    w = rng.standard_normal((feat, feat)) / np.sqrt(feat)
    g = ea.grad(GCN, wrt=("H", "W"))

    def hand() -> tuple[np.ndarray, np.ndarray]:
        z = a @ (h @ w)
        gz = 1 - np.tanh(z) ** 2
        at_g = a.T @ gz
        return at_g @ w.T, h.T @ at_g

    for mine, ref in zip(g(h, w, a), hand(), strict=True):
        np.testing.assert_allclose(mine, ref, rtol=1e-8, atol=1e-8)
    t_hand, t_eq = paired(hand, lambda: g(h, w, a), repeats=repeats)
    coo = a.tocoo()
    peer = jax_gcn(coo.row.astype(np.int64), coo.col.astype(np.int64), n)
    jax_ratio = None
    if peer is not None:
        for mine, ref in zip(peer(h, w), hand(), strict=True):
            np.testing.assert_allclose(np.asarray(mine), ref, rtol=1e-8, atol=1e-8)
        jax_ratio = ratio_of(lambda: peer(h, w), hand, repeats)
    torch_out = torch_ratios(
        torch_python, {"gcn": [h, w, a.indptr.astype(np.int64), a.indices.astype(np.int64)]},
        list(hand()), hand, repeats)
    return {"N": n, "nnz": int(a.nnz), "features": feat, "hand_s": t_hand, "eqsat_s": t_eq,
            "ratio": t_eq / t_hand,
            **({"ratio_jax": jax_ratio} if jax_ratio is not None else {}), **torch_out,
            "peak_hand_MB": peak(hand) / 2**20,
            "peak_eqsat_MB": peak(lambda: g(h, w, a)) / 2**20, "source": g.source}


def bench_mesh(v: int, e: int, repeats: int) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    p = rng.standard_normal((v, 2))
    a = rng.integers(0, v, e)
    b = (a + rng.integers(1, v, e)) % v  # no edge from a vertex to itself (length 0)
    g = ea.grad(mesh)

    def hand() -> np.ndarray:
        d = p[a] - p[b]
        length = np.sqrt(np.sum(d ** 2, axis=1))
        s = (2 * (length - 1.0) / length)[:, None] * d
        out = np.zeros_like(p)
        for k in range(2):
            out[:, k] = np.bincount(a, s[:, k], v) - np.bincount(b, s[:, k], v)
        return out

    np.testing.assert_allclose(g(p, a, b), hand(), rtol=1e-8, atol=1e-8)
    t_hand, t_eq = paired(hand, lambda: g(p, a, b), repeats=repeats)
    return {"V": v, "E": e, "hand_s": t_hand, "eqsat_s": t_eq, "ratio": t_eq / t_hand,
            "source": g.source}


def bench_attention(n: int, per_node: int, d: int, repeats: int) -> dict[str, Any]:
    m, _, _ = graph(n, per_node, 6)
    m = sp.csr_array(((m + sp.eye_array(n, format="csr")) > 0).astype(float))
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((n, d)) / d, rng.standard_normal((n, d)) / d
    v = rng.standard_normal(n)
    f = ea.compile(ATT)
    g = ea.grad(ATT, wrt=("q", "k", "v"))
    small = slice(0, 300)
    ms = m[small, small]
    want = ea.evaluate(ATT, q[small], k[small], v[small], ms.toarray() > 0)
    assert abs(f(q[small], k[small], v[small], ms) - want) <= 1e-9 * abs(want)
    t_f, t_g = paired(lambda: f(q, k, v, m), lambda: g(q, k, v, m), repeats=repeats)
    return {"N": n, "nnz": int(m.nnz), "D": d, "forward_s": t_f, "grad_s": t_g,
            "grad_over_f": t_g / t_f, "source": g.source}


def scaling(sizes: list[int], per_node: int, repeats: int) -> list[dict[str, Any]]:
    out = []
    for n in sizes:
        row = bench_laplacian(n, per_node, repeats, peers=False)
        row.pop("source")
        out.append(row)
        print(f"  scaling N={n}: eqsat {row['eqsat_csr_s']:.4f}s hand {row['hand_s']:.4f}s")
    return out


def slope(rows: list[dict[str, Any]], key: str) -> float:
    xs = np.log([r["nnz"] for r in rows])
    ys = np.log([r[key] for r in rows])
    return float(np.polyfit(xs, ys, 1)[0])


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["N"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(ns, [r["eqsat_csr_s"] for r in rows], "o-", label="eqsat_ad grad (CSR argument)")
    ax.loglog(ns, [r["eqsat_rel_s"] for r in rows], "s-", label="eqsat_ad grad (SparseRelation)")
    ax.loglog(ns, [r["hand_s"] for r in rows], "^-", label="hand-written np.bincount")
    ax.set_xlabel("N (8 edges per node)")
    ax.set_ylabel("gradient time [s]")
    ax.set_title("Masked graph Laplacian gradient")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="experiments/out")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--torch-python", default=default_torch_python(),
                    help="Python with torch==2.13.0 for the PyTorch peer (default: "
                         ".venv-torch/bin/python when present; PyTorch skipped otherwise)")
    args = ap.parse_args()
    tp = args.torch_python
    pin()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    q = args.quick
    reps = 3 if q else 11
    res: dict[str, Any] = {"peers": peers_available(tp),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    print("laplacian (CSR)")
    res["laplacian"] = bench_laplacian(10**4 if q else 10**5, 8, reps, torch_python=tp)
    print("laplacian (edge list, NumPy front end)")
    res["edges"] = bench_edges(10**4 if q else 10**5, 8, reps, tp)
    print("gcn")
    res["gcn"] = bench_gcn(10**4 if q else 10**5, 10, 16 if q else 64, reps, tp)
    print("mesh")
    res["mesh"] = bench_mesh(10**4 if q else 10**5, 3 * 10**4 if q else 3 * 10**5, reps)
    print("attention")
    res["attention"] = bench_attention(2000 if q else 20000, 8, 16, reps)
    print("scaling")
    rows = scaling([10**3, 10**4] if q else [10**3, 10**4, 10**5, 10**6], 8, reps)
    res["scaling"] = rows
    res["slope_eqsat_csr"] = slope(rows, "eqsat_csr_s")
    res["slope_eqsat_rel"] = slope(rows, "eqsat_rel_s")
    res["slope_hand"] = slope(rows, "hand_s")
    (out / "sparse.json").write_text(json.dumps(res, indent=2, default=str))
    plot(rows, out / "sparse.png")
    for k in ("laplacian", "edges", "gcn", "mesh", "attention"):
        print(k, {a: b for a, b in res[k].items() if a != "source"})
    print("slopes", res["slope_eqsat_csr"], res["slope_eqsat_rel"], res["slope_hand"])


if __name__ == "__main__":
    main()
