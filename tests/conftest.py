"""Fixtures shared across test files."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def cpu_executor():
    """One real executor (a CPU worker at the small size) for every test that runs
    real candidates through the loop: a worker starts once, not once per test."""
    from backends import Executor

    executor = Executor(device="cpu", timeout_s=120)  # each job says its size (small: RunOptions on a CPU)
    yield executor
    executor.close()
