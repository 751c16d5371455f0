"""Prompt variations with inference across them, and permutation feature importance (issue 25's
folktexts gap): against scikit-learn and NumPy on the same bootstrap resamples, closed forms, and the cache."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from llmsurrogate import _core, testing
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm import CallableBackend
from llmsurrogate.llm import prompts as P
from llmsurrogate.risk import (PromptVariations, permutation_importance, prompt_variants, prompt_variations,
                               risk_scores)

TASK = testing.synthetic_income_task()
ROWS = testing.synthetic_census(400, seed=4)


def answer(prompt, p):
    """Next-token log-probabilities putting ``p`` on the option "Above $50,000", whatever its letter."""
    above = "A" if "A. Above" in prompt else "B"
    below = "B" if above == "A" else "A"
    return {" " + above: math.log(p), " " + below: math.log(1 - p)}


def row_text(prompt):
    return prompt.split("Information:")[-1].split("Question:")[0]


def educated(prompt):
    text = row_text(prompt)
    return "Bachelor" in text or "Master" in text


def steady(prompt):
    """Reads the facts only: the same score under every wording."""
    return answer(prompt, 0.8 if educated(prompt) else 0.3)


def wording_sensitive(prompt):
    """Surer of itself when the lines read "is:" (the original and the reordered variants)."""
    p = 0.8 if educated(prompt) else 0.3
    return answer(prompt, p if " is: " in row_text(prompt) else 0.5 + (p - 0.5) / 2)


def ece_reference(y, r, bins=10):
    """Equal-width ECE with right-closed last bin, in NumPy (docs/methods/risk.md §2.3)."""
    idx = np.minimum((r * bins).astype(int), bins - 1)
    total = sum(abs(y[idx == b].mean() - r[idx == b].mean()) * (idx == b).sum() for b in range(bins) if (idx == b).any())
    return total / len(y)


def test_variants_say_the_same_facts_differently():
    variants = prompt_variants(TASK, shuffles=3, seed=1)
    assert list(variants) == ["original", "colon", "equals", "reversed", "shuffled 1", "shuffled 2", "shuffled 3"]
    row = ROWS.iloc[0].to_dict()
    texts = {name: P.information_block(t, row).splitlines()[1:] for name, t in variants.items()}
    values = [TASK.column(c).render(row[c]) for c in TASK.features]
    assert texts["original"] == [f"- The {TASK.column(c).description} is: {v}." for c, v in zip(TASK.features, values)]
    assert texts["colon"] == [f"- {TASK.column(c).description}: {v}" for c, v in zip(TASK.features, values)]
    assert texts["equals"] == [f"- {TASK.column(c).description} = {v}" for c, v in zip(TASK.features, values)]
    assert texts["reversed"] == texts["original"][::-1]
    orders = [variants[f"shuffled {i}"].features for i in (1, 2, 3)]
    assert all(sorted(o) == sorted(TASK.features) for o in orders)
    assert len({*orders, TASK.features, TASK.features[::-1]}) == 5  # new orders, each different
    assert prompt_variants(TASK, shuffles=3, seed=1)["shuffled 2"] == variants["shuffled 2"]  # by seed
    # everything but the information block is unchanged
    for t in variants.values():
        a, b = P.multiple_choice_prompt(TASK, row), P.multiple_choice_prompt(t, row)
        assert a.split("Information:")[0] == b.split("Information:")[0]
        assert a.split("Question:")[1] == b.split("Question:")[1]


def test_spread_and_its_interval_against_sklearn_on_the_same_resamples():
    n_boot, seed = 60, 7
    res = prompt_variations(ROWS, TASK, CallableBackend(wording_sensitive), n_boot=n_boot, seed=seed, level=0.9)
    assert isinstance(res, PromptVariations) and res.meta["variants"][0] == "original"
    y = ROWS["PINCP>50000"].to_numpy()
    S = np.column_stack([risk_scores(ROWS, t, CallableBackend(wording_sensitive)).scores
                         for t in prompt_variants(TASK).values()])
    np.testing.assert_allclose(res.scores.drop(columns="label").to_numpy(), S, atol=1e-12)
    auc = np.array([roc_auc_score(y, S[:, v]) for v in range(S.shape[1])])
    ece = np.array([ece_reference(y, S[:, v]) for v in range(S.shape[1])])
    m = res.metrics.set_index(["variant", "metric"])
    np.testing.assert_allclose(m.xs("roc_auc", level="metric")["value"], auc, atol=1e-12)
    np.testing.assert_allclose(m.xs("ece", level="metric")["value"], ece, atol=1e-12)
    # the bootstrap, rebuilt: the same resamples for every variant, statistics across variants per resample
    idx = [np.asarray(_core.risk_bootstrap_indices(len(y), seed, b), dtype=np.int64) for b in range(n_boot)]
    boot_ece = np.array([[ece_reference(y[i], S[i, v]) for v in range(S.shape[1])] for i in idx])
    sd = boot_ece.std(axis=1, ddof=1)
    spread = res.spread.set_index(["metric", "statistic"])
    assert spread.loc[("ece", "sd"), "value"] == pytest.approx(ece.std(ddof=1), abs=1e-12)
    assert spread.loc[("ece", "range"), "value"] == pytest.approx(ece.max() - ece.min(), abs=1e-12)
    assert spread.loc[("ece", "sd"), "ci_low"] == pytest.approx(np.quantile(sd, 0.05), abs=1e-12)
    assert spread.loc[("ece", "sd"), "ci_high"] == pytest.approx(np.quantile(sd, 0.95), abs=1e-12)
    diff = boot_ece[:, 1] - boot_ece[:, 0]  # colon minus original, paired
    assert m.loc[("colon", "ece"), "diff_ci_low"] == pytest.approx(np.quantile(diff, 0.05), abs=1e-12)
    assert m.loc[("colon", "ece"), "diff_ci_low"] > 0  # this wording moves the calibration ...
    boot_auc = np.array([[roc_auc_score(y[i], S[i, v]) for v in range(S.shape[1])] for i in idx])
    rng = boot_auc.max(axis=1) - boot_auc.min(axis=1)
    assert spread.loc[("roc_auc", "range"), "ci_high"] == pytest.approx(np.quantile(rng, 0.95), abs=1e-12)
    assert spread.loc[("roc_auc", "range"), "value"] == pytest.approx(0, abs=1e-12)  # ... not the ranking
    row_sd = spread.loc[("row_score", "sd")]
    assert row_sd["value"] == pytest.approx(S.std(axis=1, ddof=1).mean(), abs=1e-12)
    assert "Spread across variants" in str(res)


def test_a_model_that_ignores_the_wording_has_no_spread():
    res = prompt_variations(ROWS, TASK, CallableBackend(steady), n_boot=40)
    assert np.allclose(res.spread[["value", "ci_low", "ci_high"]].to_numpy(), 0, atol=1e-12)
    assert np.allclose(res.metrics[["diff", "diff_ci_low", "diff_ci_high"]].to_numpy(), 0, atol=1e-12)
    back = PromptVariations.from_json(res.to_json())
    assert back == res


def test_variations_and_importance_are_cached(tmp_path):
    first = prompt_variations(ROWS.head(60), TASK, CallableBackend(wording_sensitive), cache=tmp_path, n_boot=20)

    def refuse(prompt):
        raise AssertionError("the model was asked again")

    again = prompt_variations(ROWS.head(60), TASK, CallableBackend(refuse), cache=tmp_path, n_boot=20)
    pd.testing.assert_frame_equal(again.metrics, first.metrics)
    imp = permutation_importance(ROWS.head(60), TASK, CallableBackend(steady, name="steady"), cache=tmp_path / "imp",
                                 n_boot=20)
    imp2 = permutation_importance(ROWS.head(60), TASK, CallableBackend(refuse, name="steady"), cache=tmp_path / "imp",
                                  n_boot=20)
    pd.testing.assert_frame_equal(imp2.importance, imp.importance)


def test_permutation_importance_against_closed_forms():
    rows = testing.synthetic_census(1500, seed=8)
    res = permutation_importance(rows, TASK, CallableBackend(steady), n_repeats=2, n_boot=60, seed=3)
    imp = res.importance.set_index(["feature", "metric"])
    assert res.meta["features"] == list(TASK.features)
    for feat in ("AGEP", "WKHP", "SEX"):  # the model does not read them: nothing moves
        assert imp.loc[(feat, "score_shift"), "drop"] == 0 and imp.loc[(feat, "roc_auc"), "drop"] == 0
    # SCHL: a row's score moves by 0.5 exactly when the permuted value crosses the education line, which
    # happens with probability 2q(1 - q) (q: the share reading Bachelor's or Master's)
    q = rows["SCHL"].isin([21, 22]).mean()
    shift = imp.loc[("SCHL", "score_shift")]
    assert shift["drop"] == pytest.approx(0.5 * 2 * q * (1 - q), abs=0.03)
    assert shift["ci_low"] < shift["drop"] < shift["ci_high"]
    # the permuted scores carry no information: AUC about 1/2, the drop the original AUC minus 1/2
    y, r = rows["PINCP>50000"].to_numpy(), np.where(rows["SCHL"].isin([21, 22]), 0.8, 0.3)
    auc = imp.loc[("SCHL", "roc_auc")]
    assert auc["original"] == pytest.approx(roc_auc_score(y, r), abs=1e-12)
    assert auc["permuted"] == pytest.approx(0.5, abs=0.04) and auc["ci_low"] > 0


def test_bad_arguments_are_named():
    backend = CallableBackend(steady)
    with pytest.raises(InvalidArgumentError, match="`variants`"):
        prompt_variations(ROWS, TASK, backend, variants={"only": TASK})
    with pytest.raises(InvalidArgumentError, match="`variants`"):
        prompt_variations(ROWS, TASK, backend, variants=[TASK, TASK])
    with pytest.raises(InvalidArgumentError, match="label"):
        prompt_variations(ROWS.drop(columns="PINCP>50000"), TASK, backend)
    with pytest.raises(InvalidArgumentError, match="`features`.*OCCP"):
        permutation_importance(ROWS, TASK, backend, features=["OCCP"])
    with pytest.raises(InvalidArgumentError, match="`shuffles`"):
        prompt_variants(TASK, shuffles=-1)
