"""The loop's rewards (evokernel/loop/_rewards.py)."""

from __future__ import annotations

import math

from evokernel.loop import TIMING_TIE, draft_reward, refine_reward


def test_draft_reward_is_the_verdict():
    assert draft_reward(True) == 1.0 and draft_reward(False) == -1.0


def test_refine_reward_is_whether_the_task_got_faster_not_by_how_much():
    assert refine_reward(True, 0.9, 1.0) == refine_reward(True, 0.1, 1.0) == 1.0
    # Slower is not progress; the size of the loss does not matter either.
    assert refine_reward(True, 1.02, 1.0) == refine_reward(True, 50.0, 1.0) == -1.0
    assert refine_reward(False, 0.1, 1.0) == -1.0


def test_a_refinement_within_timing_noise_of_the_best_is_a_tie():
    # As fast as the best, or faster or slower by less than TIMING_TIE (1%): noise, not a new best.
    assert refine_reward(True, 1.0, 1.0) == refine_reward(True, 0.995, 1.0) == refine_reward(True, 1.005, 1.0) == 0.0
    assert TIMING_TIE == 0.01
    assert refine_reward(True, 0.985, 1.0) == 1.0 and refine_reward(True, 1.015, 1.0) == -1.0
    # The tie is a share of the best: the same at any scale, and a caller can set it.
    assert refine_reward(True, 0.995e-3, 1e-3) == 0.0 and refine_reward(True, 0.995, 1.0, tie=0.001) == 1.0
    assert refine_reward(True, 0.9999, 1.0, tie=0.0) == 1.0 and refine_reward(True, 1.0, 1.0, tie=0.0) == 0.0


def test_a_refinement_without_a_comparable_time_neither_gains_nor_loses():
    assert refine_reward(True, None, 1.0) == 0.0  # compile-only
    assert refine_reward(True, 0.5, None) == 0.0  # no timed best to compare with
    assert refine_reward(True, math.inf, 1.0) == 0.0
    assert refine_reward(False, None, None) == -1.0
