"""Fixtures shared across test files."""

from __future__ import annotations

import gc

import pytest
import torch

# Three test processes share two cores with the workers they start (which run one thread
# each): a second intra-op thread per test process only contends with them.
torch.set_num_threads(1)

# Planning a model (dynamo, torch.fx, the generator's ASTs) makes millions of short-lived objects
# beside the large heap torch, triton and the test modules keep alive. At the default thresholds
# (700, 10, 10) the collector's scans of that heap took about 40% of planning time (measured on
# the level3 suite's models: 58 s at the defaults, 30 s at these); they only collect less often.
gc.set_threshold(10_000, 20, 20)


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
