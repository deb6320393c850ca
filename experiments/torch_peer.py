"""The PyTorch peer, measured in a subprocess under a Python that has torch.

The only allowed PyTorch build (torch 2.13.0, CPU) exists here as a wheel for Python 3.11, while
eqsat_ad needs Python 3.12: so the benchmarks run the PyTorch workloads in a child process under
the side venv's interpreter (``.venv-torch/bin/python`` by default, ``--torch-python PATH``).
This file is both sides: the parent calls :func:`torch_time`; the child runs ``main`` (stdlib,
NumPy and torch only, no eqsat_ad). Arrays and the expected gradient travel in a temporary .npz;
the child checks its gradient against it before timing, with the same repeat protocol as the
parent, on the core it inherits (the parent is pinned to one), and prints one JSON line.

Install the side venv (see experiments/README.md)::

    python3.11 -m venv .venv-torch
    .venv-torch/bin/python -m pip install torch==2.13.0 numpy
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TORCH_PYTHON = ROOT / ".venv-torch" / "bin" / "python"


def default_torch_python() -> str | None:
    """The side venv's interpreter when it exists (else None: PyTorch is skipped)."""
    return str(DEFAULT_TORCH_PYTHON) if DEFAULT_TORCH_PYTHON.exists() else None


@dataclass(frozen=True)
class Protocol:
    """How to repeat: warm-up call, then at least ``min_reps`` and at most ``max_reps`` timed calls
    while under ``budget`` seconds; a warm-up slower than ``slow`` seconds is the time itself."""

    budget: float
    min_reps: int = 3
    max_reps: int = 100
    warmup: bool = True
    slow: float = 2.0


def torch_time(python: str | None, workload: str, arrays: Sequence[np.ndarray],
               want: Sequence[np.ndarray], protocol: Protocol, rtol: float = 1e-6,
               timeout: float = 600.0) -> tuple[float | None, str]:
    """Median seconds of the PyTorch gradient of ``workload`` (None and a note when skipped)."""
    if python is None or not Path(python).exists():
        return None, "not installed (no --torch-python interpreter)"
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "args.npz"
        np.savez(npz, **{f"a{k}": a for k, a in enumerate(arrays)},
                 **{f"w{k}": w for k, w in enumerate(want)})
        spec = {"workload": workload, "npz": str(npz), "rtol": rtol, **protocol.__dict__}
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        try:
            proc = subprocess.run([python, __file__, json.dumps(spec)], capture_output=True,
                                  text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return None, f"skipped (over {timeout:.0f} s)"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"failed: {tail}"[:120]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out.get("error"):
        return None, out["error"][:120]
    return out["seconds"], "" if out["ok"] else "WRONG GRADIENT"


# ================================================================================================
# Child side: the workloads written for torch
# ================================================================================================


def _workload(torch: Any, name: str) -> Callable[..., Any] | None:
    """The gradient function (arrays -> list of tensors) of ``name``, e.g. ``traces:32``."""

    def grad_wrt(loss: Callable[..., Any], n_wrt: int) -> Callable[..., Any]:
        def run(*arrays: np.ndarray) -> list[Any]:
            ts = [torch.from_numpy(a) for a in arrays]
            for t in ts[:n_wrt]:
                t.requires_grad_(True)
            return list(torch.autograd.grad(loss(*ts), ts[:n_wrt]))

        return run

    def traces(k: int) -> Callable[..., Any]:
        def f(A):
            total = 0.0
            for _ in range(k):
                total = total + torch.trace(A)
            return total

        return grad_wrt(f, 1)

    def loop_squares(x):
        s = torch.zeros((), dtype=x.dtype)
        for i in range(x.shape[0]):
            s = s + x[i] * x[i]
        return s

    def point_reads(k: int) -> Callable[..., Any]:
        def f(x):
            total = 0.0
            for t in range(k):
                total = total + x[t] * x[t]
            return total

        return grad_wrt(f, 1)

    def gather(x, w):
        half = (x.shape[0] + 1) // 2
        return torch.sum(w[:half] * x[::2])

    def mlp(W1, X, b1, W2, b2, Y):
        z = torch.tanh(X @ W1.T + b1) @ W2.T + b2
        return torch.sum(torch.logsumexp(z, 1)) - torch.sum(Y * z)

    def tangent_mlp(W, b, V, c, x, y):
        logp = torch.log_softmax(torch.tanh(x @ W + b) @ V + c, dim=1)
        return -(y * logp).sum(dim=1).mean()

    def halving(x):
        y = x
        for _ in range(100):
            y = torch.where(y.sum() > 1.0, y / 2.0, y)
        return y.sum()

    table: dict[str, Callable[..., Any]] = {
        "loop_squares": grad_wrt(loop_squares, 1),
        "diag": grad_wrt(lambda x, B: torch.sum(torch.diag(x) * B), 1),
        "gather": grad_wrt(gather, 1),
        "mlp": grad_wrt(mlp, 1),
        "chain": grad_wrt(lambda A, B, C: torch.sum(A @ B @ C), 1),
        "tangent_mlp": grad_wrt(tangent_mlp, 4),
        "halving": grad_wrt(halving, 1),
    }
    base, _, k = name.partition(":")
    if base in ("traces", "point_reads") and k.isdigit():
        return (traces if base == "traces" else point_reads)(int(k))
    return table.get(name)


def _sparse_workload(torch: Any, name: str, arrays: Sequence[np.ndarray]
                     ) -> Callable[[], list[Any]] | None:
    """A zero-argument gradient call of the sparse workload ``name`` (issue 13), or None.

    The relation's tensor (CSR, from the CSR arrays the parent sends) is built here, once, as the
    hand-written SciPy gradient gets its matrix prebuilt; everything that depends on the
    differentiated arrays runs in the call."""
    if name == "lap_index":  # x, src, dst: Σ_e (x[src[e]] - x[dst[e]])²; backward: index_add_
        x, src, dst = (torch.from_numpy(a) for a in arrays)

        def lap_index() -> list[Any]:
            xt = x.detach().requires_grad_(True)
            d = xt.index_select(0, src) - xt.index_select(0, dst)
            return list(torch.autograd.grad((d * d).sum(), [xt]))

        return lap_index
    if name == "lap_csr":  # x, indptr, indices: Σ_ij M_ij (x_i - x_j)² by torch.sparse
        x, indptr, indices = (torch.from_numpy(a) for a in arrays)
        n = x.shape[0]
        m = torch.sparse_csr_tensor(indptr, indices, torch.ones(len(indices), dtype=x.dtype),
                                    (n, n))

        def lap_csr() -> list[Any]:
            # Σ_ij M_ij (x_i² + x_j² - 2 x_i x_j) = (out-degree + in-degree)·x² - 2 xᵀ M x
            xt = x.detach().requires_grad_(True)
            degree = (indptr[1:] - indptr[:-1]) + torch.bincount(indices, minlength=n)
            loss = (degree * xt * xt).sum() - 2 * torch.dot(xt, torch.mv(m, xt))
            return list(torch.autograd.grad(loss, [xt]))

        return lap_csr
    if name == "gcn":  # H, W, indptr, indices: Σ tanh(Â H W), Â H by torch.sparse.mm
        h, w, indptr, indices = (torch.from_numpy(a) for a in arrays)
        n = h.shape[0]
        a = torch.sparse_csr_tensor(indptr, indices, torch.ones(len(indices), dtype=h.dtype),
                                    (n, n))

        def gcn() -> list[Any]:
            ht, wt = h.detach().requires_grad_(True), w.detach().requires_grad_(True)
            loss = torch.tanh(torch.sparse.mm(a, ht) @ wt).sum()
            return list(torch.autograd.grad(loss, [ht, wt]))

        return gcn
    return None


def _time(fn: Callable[[], Any], p: Protocol) -> float:
    t0 = time.perf_counter()
    if p.warmup:
        fn()
        if time.perf_counter() - t0 > p.slow:
            return time.perf_counter() - t0
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < p.min_reps or (time.perf_counter() - start < p.budget
                                      and len(times) < p.max_reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        import torch
    except ImportError as exc:
        print(json.dumps({"error": f"torch not importable: {exc}"}))
        return 0
    torch.set_num_threads(1)
    data = np.load(spec.pop("npz"))
    arrays = [data[f"a{k}"] for k in range(sum(1 for n in data.files if n.startswith("a")))]
    want = [data[f"w{k}"] for k in range(sum(1 for n in data.files if n.startswith("w")))]
    name = spec.pop("workload")
    rtol = spec.pop("rtol")
    call = _sparse_workload(torch, name, arrays)
    if call is None:
        fn = _workload(torch, name)
        if fn is None:
            print(json.dumps({"error": f"unknown workload {name!r}"}))
            return 0
        call = lambda: fn(*arrays)  # noqa: E731
    got = [g.detach().numpy() for g in call()]
    ok = len(got) == len(want) and all(
        np.allclose(g, w, rtol=rtol, atol=rtol * 1e-2 * max(1.0, float(np.max(np.abs(w)))))
        for g, w in zip(got, want, strict=True))
    seconds = _time(call, Protocol(**spec))
    print(json.dumps({"seconds": seconds, "ok": ok, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
