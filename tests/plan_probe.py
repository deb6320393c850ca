"""Run generated code line by line and measure what each line allocates (tracemalloc).

NumPy's ufunc buffers (up to ``np.getbufsize()`` elements per operand of a strided or broadcast
reduction) are set small while measuring, so that what a line allocates is its arrays."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def line_peaks(fn: Callable[..., Any], args: Sequence[Any]) -> dict[int, int]:
    """Source line of ``fn`` → the most bytes allocated at once while that line ran (above what
    was allocated when it started), over one call ``fn(*args)`` after a warm-up call."""
    code = fn.__code__
    peaks: dict[int, int] = {}
    state: dict[str, int | None] = {"line": None, "base": 0}

    def local(frame, event, arg):  # noqa: ANN001, ANN202 - the sys.settrace protocol
        if event in ("line", "return"):
            _, peak = tracemalloc.get_traced_memory()
            line = state["line"]
            if line is not None:
                peaks[line] = max(peaks.get(line, 0), peak - int(state["base"] or 0))
            tracemalloc.reset_peak()
            state["base"] = tracemalloc.get_traced_memory()[0]
            state["line"] = frame.f_lineno if event == "line" else None
        return local

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        return local if frame.f_code is code else None

    old = np.setbufsize(512)
    fn(*args)  # warm up: first calls fill caches (NumPy's type resolution, imports)
    tracemalloc.start()
    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
        tracemalloc.stop()
        np.setbufsize(old)
    return peaks
