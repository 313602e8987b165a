"""The directory one test session shares across test modules and pytest-xdist workers.

Under xdist every worker has its own basetemp (.../pytest-N/popen-gwK), so a build cache
kept there is built once per worker; one level up is the session's, common to all workers.
Builds in it are safe to share: the Ascend C builder takes a file lock per build and
renames a finished library into place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def session_basetemp(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
