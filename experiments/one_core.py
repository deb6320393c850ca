"""The benchmarks' set-up, before NumPy starts: one thread per library, every library on the
CPU's own vector kernels, freed memory kept in the process.

Every timing experiment measures one pinned core: OpenMP, OpenBLAS, MKL, Numba and XLA get one
thread each. OpenBLAS also reads ``OPENBLAS_CORETYPE``, which forces one family of kernels
whatever the CPU. The machine of the committed results sets ``OPENBLAS_CORETYPE=Haswell``
(AVX2) for every process, on a CPU with AVX-512 (AMD family 0x1A) that XLA and Numba's LLVM
use: NumPy's products then ran 1.3-1.7x slower than with the kernels OpenBLAS detects for it
(SkylakeX; one thread, float64: 512 x 512 x 512 4.9 against 3.0 ms, 128 x 256 x 512 0.67
against 0.37 ms, 1024 x 768 x 16 0.66 against 0.44 ms). So the experiments drop the variable,
and every system runs the CPU's own vector width; ``EQSAT_AD_KEEP_BLAS_CORE=1`` keeps it.
:func:`blas_core` names the kernels OpenBLAS runs and :func:`cpu` the processor, printed with
the results: ratios measured on one machine do not carry over to another (the same code ran
blur's gradient at 0.6x JAX jit's time on a Zen 5 and 0.68-0.89x on a Zen 4, experiments/
results/numba.md).
"""

from __future__ import annotations

import ctypes
import glob
import os

__all__ = ["blas_core", "configure", "cpu"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


def configure(xla: bool = True, keep_freed_memory: bool | None = None) -> None:
    """One thread each (``xla``: XLA's CPU client too), OpenBLAS's kernels detected, not
    forced, and freed memory kept in the process (``keep_freed_memory``; default: unless
    ``EQSAT_AD_DEFAULT_ALLOCATOR=1``). Call before NumPy is imported (child processes inherit
    the thread and BLAS settings, not the allocator's).

    The allocator: glibc gives freed blocks of 128 KiB or more back to the system, so a
    program's next call faults new pages in, and how often depends on what the process did
    before (the NumPy backend's mlp gradient: 3.2-5.6 ms with 608 page faults per call,
    2.0-2.2 ms with none, results/freed_memory.md). JAX's and PyTorch's own allocators keep
    their memory; :func:`eqsat_ad.keep_freed_memory` makes glibc do the same, so every system
    is measured computing, not faulting pages in."""
    for var in THREAD_VARIABLES:
        os.environ.setdefault(var, "1")
    if xla:
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                              "intra_op_parallelism_threads=1")
    if os.environ.get("EQSAT_AD_KEEP_BLAS_CORE") != "1":
        os.environ.pop("OPENBLAS_CORETYPE", None)
    if keep_freed_memory is None:
        keep_freed_memory = os.environ.get("EQSAT_AD_DEFAULT_ALLOCATOR") != "1"
    if keep_freed_memory:
        from eqsat_ad.backend.memory import keep_freed_memory as keep

        keep()


def blas_core() -> str:
    """The kernels NumPy's OpenBLAS runs (its core name), or ``"unknown"``."""
    import numpy as np

    libs = os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*")
    for path in glob.glob(libs):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename",
                     "openblas_get_corename64_", "openblas_get_corename"):
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    return "unknown"


def cpu() -> str:
    """The processor, as ``/proc/cpuinfo`` names it with its family and model, its cores, and
    the target LLVM (Numba, XLA) compiles for: ``AMD EPYC (family 25, model 17; 2 cores;
    LLVM znver4)``; ``"unknown"`` where none of it can be read."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    parts = [f"family {fields['cpu family']}, model {fields['model']}"] \
        if "cpu family" in fields and "model" in fields else []
    parts.append(f"{os.cpu_count()} cores")
    try:
        import llvmlite.binding as llvm

        parts.append(f"LLVM {llvm.get_host_cpu_name()}")
    except Exception:  # noqa: BLE001 - llvmlite absent or too old: the rest still names it
        pass
    return f"{fields.get('model name', 'unknown')} ({'; '.join(parts)})"
