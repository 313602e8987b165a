"""Fixtures shared across test files."""

from __future__ import annotations

import pytest
import torch

# Three test processes share two cores with the workers they start (which run one thread
# each): a second intra-op thread per test process only contends with them.
torch.set_num_threads(1)


@pytest.fixture(scope="session")
def cpu_executor():
    """One real executor (a CPU worker at the small size) for every test that runs
    real candidates through the loop: a worker starts once, not once per test."""
    from backends import Executor

    executor = Executor(device="cpu", timeout_s=120)  # each job says its size (small: RunOptions on a CPU)
    yield executor
    executor.close()


def pytest_collection_modifyitems(config, items):
    """Tests marked slow run first: under xdist the longest ones then overlap the many short ones
    instead of ending the run alone (the suite takes as long as its last worker). A stable sort:
    the order within each group is the collection's, the same in every worker."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
