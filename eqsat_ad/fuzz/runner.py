"""Running cases in a killable worker process, so that a hang is a finding, not a hang.

The worker (``python -m eqsat_ad.fuzz.runner``) reads length-prefixed pickled requests on stdin
and answers on its own copy of stdout; it runs in a new session, so on a timeout the whole
process group (the optimizer's own saturation workers included) is killed and a fresh worker is
started for the next case. ``Runner(isolate=False)`` runs in this process instead (no time
limit; used by tests that patch the library).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .case import Case
from .check import Finding, check_case

__all__ = ["Runner"]

_HEADER = struct.Struct("<Q")


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


class Runner:
    """Runs :func:`check_case` under a per-case time limit (seconds)."""

    def __init__(self, time_limit: float = 60.0, isolate: bool = True, fd: bool = True,
                 backend: str = "numpy") -> None:
        self.time_limit = time_limit
        self.isolate = isolate
        self.fd = fd
        self.backend = backend
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, case: Case, inputs_by_kind: Mapping[str, Mapping[str, Any]]
            ) -> dict[str, list[Finding]]:
        if not self.isolate:
            return check_case(case, inputs_by_kind, self.fd, self.backend)
        proc = self._worker()
        payload = pickle.dumps((case, dict(inputs_by_kind), self.fd, self.backend))
        try:
            assert proc.stdin is not None
            proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            proc.stdin.flush()
            answer = self._read(proc, time.monotonic() + self.time_limit)
        except (BrokenPipeError, EOFError, OSError) as exc:
            self.close()
            why = "timeout" if isinstance(exc, TimeoutError) else "internal"
            detail = (f"no answer within {self.time_limit:g} s" if why == "timeout"
                      else f"WorkerDied: {exc}")
            return {k: [Finding(why, "worker", detail)] for k in inputs_by_kind}
        return pickle.loads(answer)

    def _worker(self) -> subprocess.Popen[bytes]:
        if self._proc is None or self._proc.poll() is not None:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [_package_root(), *filter(None, [env.get("PYTHONPATH")])])
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "eqsat_ad.fuzz.runner"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                start_new_session=True)
        return self._proc

    @staticmethod
    def _read(proc: subprocess.Popen[bytes], deadline: float) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buf = b""
        need = _HEADER.size
        header_done = False
        while len(buf) < need:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, max(need - len(buf), 1 << 16))
            if not chunk:
                raise EOFError("the worker exited")
            buf += chunk
            if not header_done and len(buf) >= _HEADER.size:
                need = _HEADER.size + _HEADER.unpack(buf[: _HEADER.size])[0]
                header_done = True
        return buf[_HEADER.size:need]

    def close(self) -> None:
        """End the worker and everything it started."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _serve() -> None:
    """The worker's loop: requests on stdin, answers on the original stdout."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the library prints must not corrupt the answers
    inp = sys.stdin.buffer
    while True:
        header = inp.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        case, inputs, fd, backend = pickle.loads(inp.read(_HEADER.unpack(header)[0]))
        answer = pickle.dumps(check_case(case, inputs, fd, backend))
        out.write(_HEADER.pack(len(answer)) + answer)
        out.flush()


if __name__ == "__main__":
    _serve()
