"""Test-wide settings: the on-disk optimization cache is off (tests that use it turn it on with
a temporary directory), so every test runs the optimizer it is testing."""

from __future__ import annotations

import os

os.environ["EQSAT_AD_CACHE"] = "0"
