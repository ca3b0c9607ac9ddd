"""The statistics every reported number goes through."""

import random
import statistics
import time

import pytest
import torch

from gnnbench.measure import stats, timer


def test_summary_matches_reference_quantiles():
    samples = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.8]
    s = stats.summarize(samples)
    expected = statistics.quantiles(samples, n=4, method="inclusive")  # numpy's 'linear'
    assert (s["q1"], s["median"], s["q3"]) == pytest.approx(expected)
    assert s["iqr"] == pytest.approx(expected[2] - expected[0])
    assert s["n"] == 7 and s["min"] == 0.1 and s["max"] == 0.9
    assert s["mean"] == pytest.approx(0.5) and s["std"] == pytest.approx(statistics.stdev(samples))


def test_empty_summary_is_explicit():
    assert stats.summarize([])["median"] is None


def test_timed_measures_the_call():
    result, seconds = timer.timed(lambda: time.sleep(0.05) or 7, torch.device("cpu"))
    assert result == 7 and 0.05 <= seconds < 0.5


def test_bootstrap_ci_covers_the_true_speedup():
    rng = random.Random(1)
    eager = [10 + rng.gauss(0, 0.5) for _ in range(200)]
    compiled = [5 + rng.gauss(0, 0.5) for _ in range(200)]
    lo, hi = stats.bootstrap_ratio_ci(eager, compiled)
    assert lo < 2.0 < hi and hi - lo < 0.2
    point = statistics.median(eager) / statistics.median(compiled)
    assert lo <= point <= hi


def test_median_ci_over_rounds_is_as_wide_as_the_rounds_disagree():
    """The overhead benchmark's rounds: a tight set gives a tight interval around its
    median, a scattered one an interval that says so."""
    tight = [3.0, 3.1, 2.9, 3.0, 3.05, 2.95, 3.0, 3.02]
    lo, hi = stats.bootstrap_median_ci(tight)
    assert lo <= statistics.median(tight) <= hi and hi - lo <= 0.1
    scattered = [-24.0, -5.0, 0.0, 2.0, 3.0, 6.0, 15.0, 27.0]
    lo, hi = stats.bootstrap_median_ci(scattered)
    assert lo < 0 < 3 < hi


def test_epoch_timer_adds_up_regions_of_one_name():
    t = timer.EpochTimer(torch.device("cpu"))
    for _ in range(3):
        assert t.measure("sample_s", lambda: time.sleep(0.01) or 1) == 1
    t.measure("compute_s", lambda: time.sleep(0.02))
    seconds = t.read()
    assert 0.03 <= seconds["sample_s"] < 0.3 and 0.02 <= seconds["compute_s"] < 0.3


def test_epoch_timer_read_starts_the_next_epoch():
    t = timer.EpochTimer(torch.device("cpu"))
    t.measure("train_s", lambda: time.sleep(0.02))
    assert t.read()["train_s"] >= 0.02
    t.measure("eval_s", lambda: None)
    assert set(t.read()) == {"eval_s"}


def test_too_few_epochs_give_a_speedup_but_no_interval():
    few = stats.speedup([2.0, 2.2], [1.0, 1.1], compile_overhead_s=3.0)
    assert few["speedup"] == pytest.approx(2.1 / 1.05)
    assert few["speedup_ci95"] == [None, None] and few["n_eager"] == 2
    enough = stats.speedup([2.0, 2.2, 2.1, 1.9, 2.0], [1.0, 1.1, 1.0, 0.9, 1.0], 3.0)
    assert None not in enough["speedup_ci95"]

