"""How much work an ESS run says it will do, against the fits it makes (issue 25, item 1).

The notice above the progress bar counts block fits (n // N at each size) and tuning fits
(settings x folds); here an estimator that counts its own ``fit`` calls is the reference.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import ess
from llmsurrogate.ess._engine import describe_work, work_plan
from llmsurrogate.ess._learners import Learner, resolve_learner
from sklearn.linear_model import Ridge

ROOT = Path(__file__).resolve().parents[2]
FITS: list[int] = []


class CountingRidge(Ridge):
    """Ridge that records every fit (the block fits and each fold of each tuning setting)."""

    def fit(self, X, y, sample_weight=None):
        FITS.append(len(y))
        return super().fit(X, y, sample_weight)


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n)})
    df["y"] = df["x"] + rng.normal(size=n)
    df["llm"] = 0.5 * df["x"]
    return df


@pytest.mark.parametrize("tuning", ["per_n_subset", "per_block", "none"])
def test_the_plan_counts_the_fits_made(tuning):
    df = _frame()
    grid = [2, 5, 20, 50]
    options = {"param_grid": {"alpha": [0.1, 1.0, 10.0]}}
    FITS.clear()
    ess.equivalent_sample_size(df, "y", "llm", ["x", "z"], algorithm=CountingRidge(), grid=grid, tuning=tuning,
                               n_jobs=1, progress=False, algorithm_options=options)
    learner = resolve_learner(CountingRidge(), "squared", options)
    plan = work_plan(learner, len(df), grid, tuning)
    assert plan["block_fits"] == sum(300 // N for N in grid) == 150 + 60 + 15 + 6
    assert len(FITS) == plan["block_fits"] + plan["tuning_fits"], (len(FITS), plan)
    if tuning == "none":
        assert plan["tuning_fits"] == 0
    else:
        assert plan["tuning_fits"] > 0


def test_the_default_forest_plan():
    """12 settings x 3 folds = 36 forests per size (2 folds at N = 5, none at N = 2 or below)."""
    plan = work_plan(Learner("rf", "value"), 4000, [1, 2, 5, 10, 20], "per_n_subset")
    assert plan == {"sizes": 5, "block_fits": 4000 + 2000 + 800 + 400 + 200, "tuning_fits": 24 + 36 + 36,
                    "settings": 12, "per_size": [0, 0, 24, 36, 36]}
    small = Learner("rf", "value", options={"n_estimators": 100, "param_grid": {"min_samples_leaf": [1, 5]}})
    assert small.tuning_settings() == 2 and "100 trees" in small.describe()


def test_the_notice_in_the_methods_doc_is_the_one_a_run_prints():
    text = (ROOT / "docs/methods/ess.md").read_text()
    line = re.search(r"```text\n(Block-out CV: .*?)\n```", text).group(1)
    assert line == describe_work(Learner("rf", "value"), 1000, [5, 20, 50], "per_n_subset")


def test_progress_reports_the_tuning_then_the_blocks():
    df = _frame()
    seen = []
    ess.equivalent_sample_size(df, "y", "llm", ["x", "z"], algorithm="lasso", grid=[5, 20], n_jobs=1,
                               progress=lambda label, done, total: seen.append((label, done, total)))
    labels = [s[0] for s in seen]
    assert seen[0] == ("tuning: training sizes", 0, 2) and ("tuning: training sizes", 2, 2) in seen
    assert labels.index("grid points") > max(i for i, s in enumerate(labels) if s.startswith("tuning"))
    assert ("N = 5: blocks", 60, 60) in seen and ("N = 20: blocks", 15, 15) in seen
    assert seen[-1] == ("grid points", 2, 2)
