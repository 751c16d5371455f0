"""Class-balanced few-shot examples (issue 25, item 8): risk.few_shot_examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import testing
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.risk import few_shot_examples

TASK = testing.synthetic_income_task()
ROWS = testing.synthetic_census(300, seed=2).set_index(np.arange(1000, 1300))  # an index that is not 0..n-1


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_balanced_draws_half_of_each_label_without_replacement(n):
    ex = few_shot_examples(ROWS, TASK, n, seed=3)
    counts = np.bincount(ex["PINCP>50000"], minlength=2)
    assert len(ex) == n and sorted(counts) == [n // 2, n - n // 2]
    assert ex.index.is_unique and ex.index.isin(ROWS.index).all()
    pd.testing.assert_frame_equal(ex, ROWS.loc[ex.index])  # the rows themselves, with their index


def test_the_draw_depends_on_the_seed_only_and_mixes_the_labels():
    a, b = few_shot_examples(ROWS, TASK, 8, seed=1), few_shot_examples(ROWS, TASK, 8, seed=1)
    assert a.index.tolist() == b.index.tolist()
    assert few_shot_examples(ROWS, TASK, 8, seed=2).index.tolist() != a.index.tolist()
    # over many seeds the labels are not in blocks: the first example is label 1 about half the time
    first = [few_shot_examples(ROWS, TASK, 8, seed=s)["PINCP>50000"].iloc[0] for s in range(200)]
    assert 0.35 < np.mean(first) < 0.65
    # and every row of a label is drawn about equally often (uniform within a label)
    ones = np.flatnonzero(ROWS["PINCP>50000"].to_numpy() == 1)
    hits = pd.Series(np.concatenate([few_shot_examples(ROWS, TASK, 2, seed=s).index for s in range(3000)]))
    share = hits[hits.isin(ROWS.index[ones])].value_counts().reindex(ROWS.index[ones], fill_value=0) / 3000
    assert abs(share.mean() - 1 / len(ones)) < 1e-12 and share.max() < 3 / len(ones)


def test_unbalanced_is_a_simple_random_sample():
    # the share of label 1 among plain draws matches its share in the data, not one half
    share = np.mean([few_shot_examples(ROWS, TASK, 10, seed=s, balanced=False)["PINCP>50000"].mean()
                     for s in range(400)])
    assert abs(share - ROWS["PINCP>50000"].mean()) < 0.03 and abs(share - 0.5) > 0.05


def test_errors_name_the_argument():
    few = pd.concat([ROWS[ROWS["PINCP>50000"] == 1].head(1), ROWS[ROWS["PINCP>50000"] == 0].head(9)])
    with pytest.raises(InvalidArgumentError, match=r"argument `n`: 4 class-balanced .* label 1 .* has 1"):
        few_shot_examples(few, TASK, 4)
    assert len(few_shot_examples(few, TASK, 4, balanced=False)) == 4
    with pytest.raises(InvalidArgumentError, match="argument `n`"):
        few_shot_examples(few, TASK, 11, balanced=False)
    with pytest.raises(InvalidArgumentError, match="`n`"):
        few_shot_examples(few, TASK, 0)
