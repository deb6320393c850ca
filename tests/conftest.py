"""Test-wide settings: the on-disk optimization cache is off (tests that use it turn it on with
a temporary directory), so every test runs the optimizer it is testing; hypothesis runs
derandomized, so a run of the suite is repeatable (`make fuzz` is the randomized search)."""

from __future__ import annotations

import os

from hypothesis import settings

os.environ["EQSAT_AD_CACHE"] = "0"
settings.register_profile("repeatable", derandomize=True)
settings.load_profile("repeatable")
