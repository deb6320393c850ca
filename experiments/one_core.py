"""The benchmarks' set-up, before NumPy starts: one thread per library, every library on the
CPU's own vector kernels.

Every timing experiment measures one pinned core: OpenMP, OpenBLAS, MKL, Numba and XLA get one
thread each. OpenBLAS also reads ``OPENBLAS_CORETYPE``, which forces one family of kernels
whatever the CPU. The machine of the committed results sets ``OPENBLAS_CORETYPE=Haswell``
(AVX2) for every process, on a CPU with AVX-512 (AMD family 0x1A) that XLA and Numba's LLVM
use: NumPy's products then ran 1.3-1.7x slower than with the kernels OpenBLAS detects for it
(SkylakeX; one thread, float64: 512 x 512 x 512 4.9 against 3.0 ms, 128 x 256 x 512 0.67
against 0.37 ms, 1024 x 768 x 16 0.66 against 0.44 ms). So the experiments drop the variable,
and every system runs the CPU's own vector width; ``EQSAT_AD_KEEP_BLAS_CORE=1`` keeps it.
:func:`blas_core` names the kernels OpenBLAS runs, printed with the results.
"""

from __future__ import annotations

import ctypes
import glob
import os

__all__ = ["blas_core", "configure"]

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


def configure(xla: bool = True) -> None:
    """One thread each (``xla``: XLA's CPU client too), and OpenBLAS's kernels detected, not
    forced. Call before NumPy is imported (child processes inherit the settings)."""
    for var in THREAD_VARIABLES:
        os.environ.setdefault(var, "1")
    if xla:
        os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                              "intra_op_parallelism_threads=1")
    if os.environ.get("EQSAT_AD_KEEP_BLAS_CORE") != "1":
        os.environ.pop("OPENBLAS_CORETYPE", None)


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
