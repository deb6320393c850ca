"""Test-wide settings: the on-disk optimization cache is off (tests that use it turn it on with
a temporary directory), so every test runs the optimizer it is testing; hypothesis runs
derandomized, so a run of the suite is repeatable (`make fuzz` is the randomized search); the
``without_numba`` fixture makes importing Numba fail, whether or not it is installed."""

from __future__ import annotations

import builtins
import os

import pytest
from hypothesis import settings

os.environ["EQSAT_AD_CACHE"] = "0"
settings.register_profile("repeatable", derandomize=True)
settings.load_profile("repeatable")


@pytest.fixture
def without_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def no_numba(name: str, *args: object, **kwargs: object) -> object:
        if name == "numba" or name.startswith("numba."):
            raise ImportError("No module named 'numba'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_numba)


@pytest.fixture
def numba_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the Numba tests' one cache folder: a generated module is imported once per process)
    monkeypatch.setenv("EQSAT_AD_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "numba-cache"))
