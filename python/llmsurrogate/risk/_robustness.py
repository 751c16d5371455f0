"""Does the score move with the wording, and which features carry it? Prompt variations with
inference across them, and permutation feature importance (docs/methods/risk.md §2.9, §2.10).

Every score comes from :func:`~llmsurrogate.risk.risk_scores`, so through the on-disk cache: a
rerun, or a second analysis of the same variants, asks the model nothing again.

Inference is a row bootstrap that is **paired** across variants: replicate ``b`` resamples the same
rows for every variant (the Rust kernel's replicate ``b`` depends on ``seed``, ``b`` and the number
of rows only, so it is :func:`~llmsurrogate.risk.evaluate`'s replicate ``b`` too), and a statistic
across variants (their standard deviation, their range, a variant minus the original) is computed
within each replicate.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import _core
from .._validation import as_frame, check_int, check_real
from .._workers import resolve_n_jobs
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..llm.tasks import Task
from ..results import Result, Summary, result_dataclass
from ._metrics import BOOT_METRICS, EPS, _all_metrics
from ._scores import risk_scores

#: the line formats of the connector variants (folktexts' "connector" variation: "is", ":", "=")
CONNECTORS = {"colon": "- {description}: {value}", "equals": "- {description} = {value}"}

#: the metrics a variation or an importance reports (row-bootstrapped)
ROBUSTNESS_METRICS = ("roc_auc", "ece", "brier", "accuracy")


def prompt_variants(task: Task, *, connectors: bool = True, reverse: bool = True, shuffles: int = 2,
                    seed: int = 0) -> dict[str, Task]:
    """Rewordings of ``task``'s prompt that keep its information: the same facts, said differently.

    ``"original"`` first; with ``connectors`` the feature lines as ``- age: 37 years old`` and
    ``- age = 37 years old`` instead of ``- The age is: 37 years old.`` (folktexts' connector
    variation); with ``reverse`` the features in reverse order; ``shuffles`` random orders of the
    features (drawn with ``seed``; folktexts' order variation). Add your own (another question
    wording, another description) to the dict before passing it to :func:`prompt_variations`.

    Examples
    --------
    >>> from llmsurrogate.llm import prompts
    >>> from llmsurrogate.testing import synthetic_income_task
    >>> variants = prompt_variants(synthetic_income_task(), shuffles=1)
    >>> list(variants)
    ['original', 'colon', 'equals', 'reversed', 'shuffled 1']
    >>> row = {"AGEP": 37, "SCHL": 21, "WKHP": 40, "SEX": 2}
    >>> prompts.information_block(variants["equals"], row).splitlines()[1]
    '- age = 37 years old'
    >>> variants["reversed"].features
    ('SEX', 'WKHP', 'SCHL', 'AGEP')
    """
    if not isinstance(task, Task):
        raise InvalidArgumentError(f"argument `task` must be a Task; got {type(task).__name__}")
    shuffles = check_int(shuffles, "shuffles", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    out = {"original": task}
    if connectors:
        for name, fmt in CONNECTORS.items():
            out[name] = dataclasses.replace(task, name=f"{task.name} ({name})", line_format=fmt)
    k = len(task.columns)
    if reverse and k > 1:
        out["reversed"] = dataclasses.replace(task, name=f"{task.name} (reversed)", columns=task.columns[::-1])
    rng = np.random.default_rng([seed, 4])
    seen = {tuple(range(k)), tuple(range(k))[::-1]}
    for i in range(shuffles):
        order = tuple(int(j) for j in rng.permutation(k))
        for _ in range(100):  # a new order where there is one (k! > the orders already taken)
            if order not in seen:
                break
            order = tuple(int(j) for j in rng.permutation(k))
        seen.add(order)
        out[f"shuffled {i + 1}"] = dataclasses.replace(task, name=f"{task.name} (shuffled {i + 1})",
                                                      columns=tuple(task.columns[j] for j in order))
    return out


def _boot(y: np.ndarray, scores: np.ndarray, n_boot: int, seed: int, threshold: float, bins: int,
          n_jobs) -> np.ndarray:
    """(n_boot, n_columns, len(BOOT_METRICS)): every column of ``scores`` on the same resamples."""
    return np.stack([np.asarray(_core.risk_bootstrap(y, scores[:, j].copy(), n_boot, seed, threshold, bins, EPS,
                                                     n_jobs)) for j in range(scores.shape[1])], axis=1)


def _point(y: np.ndarray, scores: np.ndarray, threshold: float, bins: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        return np.array([[_all_metrics(y, scores[:, j], threshold, bins)[m] for m in BOOT_METRICS]
                         for j in range(scores.shape[1])])


def _interval(draws: np.ndarray, level: float) -> tuple[float, float, float]:
    """(se, ci_low, ci_high) of bootstrap draws (NaN replicates dropped: a resample with one class)."""
    d = draws[np.isfinite(draws)]
    if d.size < 2:
        return float("nan"), float("nan"), float("nan")
    a = (1 - level) / 2
    return float(d.std(ddof=1)), float(np.quantile(d, a)), float(np.quantile(d, 1 - a))


def _labelled_scores(data, variants: Mapping[str, Task], backend, method, score_kwargs):
    """The scores of every variant on the rows of ``data`` with an answer (n, V) and their labels
    (rows without an answer are scored, and left out: their label is missing)."""
    cols, y = [], None
    for name, task in variants.items():
        rs = risk_scores(data, task, backend, method, **score_kwargs)
        if "label" not in rs.table:
            raise InvalidArgumentError(f"argument `data` has no label column ({task.label_name!r} or "
                                       f"{task.target!r}); a variation is judged against the labels")
        lab = rs.table["label"].to_numpy(np.float64, na_value=np.nan)
        if y is not None and not np.array_equal(lab, y, equal_nan=True):
            raise InvalidArgumentError(f"variant {name!r} reads other labels from `data` than the first variant; "
                                       "variants must share the target and threshold")
        y = lab
        cols.append(rs.table["score"].to_numpy(np.float64))
    keep = ~np.isnan(y)
    if not keep.any():
        raise InvalidArgumentError(f"argument `data`: no row has an answer in {task.label_name!r} or {task.target!r}; "
                                   f"a variation is judged against the labels")
    return y[keep], np.column_stack(cols)[keep]


def _variants(task, variants) -> dict[str, Task]:
    if variants is None:
        return prompt_variants(task)
    if isinstance(variants, Mapping):
        out = dict(variants)
    elif isinstance(variants, Sequence) and not isinstance(variants, str):
        out = {}
        for v in variants:
            if not isinstance(v, Task):
                raise InvalidArgumentError(f"argument `variants` must hold Task objects; got {type(v).__name__}")
            if v.name in out:
                raise InvalidArgumentError(f"argument `variants`: two tasks are named {v.name!r}; pass a dict "
                                           "name -> task")
            out[v.name] = v
    else:
        raise InvalidArgumentError("argument `variants` must be a dict name -> Task, a list of Tasks, or None")
    if len(out) < 2:
        raise InvalidArgumentError(f"argument `variants` has {len(out)} prompt variant(s); a spread needs two or more")
    if not all(isinstance(v, Task) for v in out.values()):
        raise InvalidArgumentError("argument `variants` must map names to Task objects")
    return out


@result_dataclass
class PromptVariations(Result):
    """How much the risk scores and their metrics move across prompt variants
    (:func:`prompt_variations`).

    ``metrics``: per variant and metric (``roc_auc``, ``ece``, ``brier``, ``accuracy``) its value
    with a bootstrap CI, and ``diff`` = the variant minus the first (the original) with its paired CI
    (an interval without 0: this rewording moves the metric beyond row sampling noise).
    ``spread``: per metric the standard deviation (``sd``) and the range (``range``, max - min)
    across variants with bootstrap CIs, and ``row_score_sd``, the mean over rows of the sd of a
    row's score across variants (how far one person's score moves). ``scores``: one column per
    variant, one row per data row, and the label. ``meta``: n, variants, n_boot, seed, level.

    The range and the sd across variants are never below 0 and are biased upward in small samples
    (the largest of noisy metrics); read their CI as the size of the spread, and the paired
    ``diff`` CIs as the test of whether a given rewording matters.

    Examples
    --------
    A stand-in model that reads the facts only, whatever the wording: no spread at all.

    >>> import math
    >>> from llmsurrogate import testing
    >>> from llmsurrogate.llm import CallableBackend
    >>> def model(prompt):
    ...     p = 0.7 if "Female" in prompt.split("Information:")[-1] else 0.4
    ...     above = "A" if "A. Above" in prompt else "B"
    ...     return {" " + above: math.log(p), " " + ("B" if above == "A" else "A"): math.log(1 - p)}
    >>> res = prompt_variations(testing.synthetic_census(100, seed=2), testing.synthetic_income_task(),
    ...                         CallableBackend(model), n_boot=20)
    >>> res.spread.columns.tolist()
    ['metric', 'statistic', 'value', 'se', 'ci_low', 'ci_high']
    >>> round(float(res.spread["value"].abs().max()), 12)
    0.0
    >>> PromptVariations.from_json(res.to_json()) == res
    True
    """

    metrics: pd.DataFrame
    spread: pd.DataFrame
    scores: pd.DataFrame
    meta: dict

    def tidy(self) -> pd.DataFrame:
        """The metrics per wording, with the differences to the original (a copy of ``metrics``).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate import risk
        >>> model = CallableBackend(lambda prompt: {" A": math.log(0.6), " B": math.log(0.4)})
        >>> rows, task = testing.synthetic_census(60, seed=2), testing.synthetic_income_task()
        >>> res = risk.prompt_variations(rows, task, model, n_boot=0)
        >>> sorted(set(res.tidy()["variant"]))
        ['colon', 'equals', 'original', 'reversed', 'shuffled 1', 'shuffled 2']
        """
        return self.metrics.copy()

    def summary(self) -> Summary:
        """The spread across wordings in words and tables (print it, or ``.as_text()``).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate import risk
        >>> model = CallableBackend(lambda prompt: {" A": math.log(0.6), " B": math.log(0.4)})
        >>> rows, task = testing.synthetic_census(60, seed=2), testing.synthetic_income_task()
        >>> res = risk.prompt_variations(rows, task, model, n_boot=0)
        >>> print(res.summary().as_text().splitlines()[0])
        Prompt variations
        """
        show = self.spread[self.spread["metric"].isin(["roc_auc", "ece", "row_score"])]
        main = self.metrics[self.metrics["metric"].isin(["roc_auc", "ece"])].pivot(
            index="variant", columns="metric", values="value").reindex(self.meta["variants"]).reset_index()
        lvl = f"{self.meta['level']:.0%}"
        facts = {"rows": self.meta["n"], "variants": len(self.meta["variants"]),
                 "bootstrap resamples": self.meta["n_boot"], "level": self.meta["level"]}
        return Summary("Prompt variations", facts=facts,
                       tables=[("Spread across variants", show), ("By variant", main)],
                       notes=[f"CIs: {lvl} percentile intervals of a row bootstrap paired across variants.",
                              "sd and range are >= 0 and biased upward; a variant's diff (vs the first) CI "
                              "without 0 says that rewording moves the metric."])


def prompt_variations(data, task, backend, method: str = "multiple_choice", *, variants=None, model=None,
                      cache=None, n_boot: int = 200, seed: int = 42, level: float = 0.95, threshold: float = 0.5,
                      bins: int = 10, n_jobs: int | None = None, **score_kwargs) -> PromptVariations:
    """Score ``data`` under several wordings of ``task``'s prompt and report how much the AUC, ECE,
    Brier score and accuracy move, with confidence intervals (docs/methods/risk.md §2.10).

    ``variants``: a dict name -> :class:`~llmsurrogate.llm.tasks.Task` (the first is the reference),
    a list of tasks, or None for :func:`prompt_variants` (original, two connectors, reversed, two
    random orders). Every variant is scored by :func:`risk_scores` with ``method``, ``cache`` and
    ``score_kwargs`` (``batch_size``, ``correct_order_bias``, ``chat``, ``few_shot``, ...), so
    through the cache. CIs come from ``n_boot`` row-bootstrap replicates (seed ``seed``) paired
    across variants.

    Examples
    --------
    A stand-in model whose answer depends on the wording: it is surer of itself when the lines
    read "is:" (the original), so the variants' calibration differs.

    >>> import math
    >>> from llmsurrogate import testing
    >>> from llmsurrogate.llm import CallableBackend
    >>> def model(prompt):
    ...     p = 0.8 if "Bachelor" in prompt else 0.3
    ...     p = p if " is: " in prompt else 0.5 + (p - 0.5) / 2
    ...     above = "A" if "A. Above" in prompt else "B"
    ...     below = "B" if above == "A" else "A"
    ...     return {" " + above: math.log(p), " " + below: math.log(1 - p)}
    >>> rows = testing.synthetic_census(300, seed=1)
    >>> res = prompt_variations(rows, testing.synthetic_income_task(), CallableBackend(model), n_boot=100)
    >>> res.meta["variants"]
    ['original', 'colon', 'equals', 'reversed', 'shuffled 1', 'shuffled 2']
    >>> auc = res.spread.set_index(["metric", "statistic"]).loc[("roc_auc", "range")]
    >>> round(float(auc["value"]), 6)  # the ranking is the same under every wording
    0.0
    >>> ece = res.metrics.set_index(["variant", "metric"]).loc[("colon", "ece")]
    >>> bool(ece["diff_ci_low"] > 0 or ece["diff_ci_high"] < 0)  # the calibration moved
    True
    """
    frame = as_frame(data, "data")
    variants = _variants(task, variants)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    level = check_real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    threshold = check_real(threshold, "threshold", low=0.0, high=1.0)
    bins = check_int(bins, "bins", minimum=1)
    n_jobs = resolve_n_jobs(n_jobs)
    y, S = _labelled_scores(frame, variants, backend, method, dict(model=model, cache=cache, **score_kwargs))
    names = list(variants)
    point = _point(y, S, threshold, bins)                        # (V, M)
    boot = (_boot(y, S, n_boot, seed, threshold, bins, n_jobs) if n_boot
            else np.zeros((0, len(names), len(BOOT_METRICS))))
    rows = []
    for m in ROBUSTNESS_METRICS:
        j = BOOT_METRICS.index(m)
        for v, name in enumerate(names):
            se, lo, hi = _interval(boot[:, v, j], level)
            dse, dlo, dhi = _interval(boot[:, v, j] - boot[:, 0, j], level)
            rows.append({"variant": name, "metric": m, "value": point[v, j], "se": se, "ci_low": lo, "ci_high": hi,
                         "diff": point[v, j] - point[0, j], "diff_ci_low": dlo if v else 0.0,
                         "diff_ci_high": dhi if v else 0.0})
    metrics = pd.DataFrame(rows)
    spread = []
    for m in ROBUSTNESS_METRICS:
        j = BOOT_METRICS.index(m)
        for stat, fn in (("sd", lambda a: np.std(a, axis=-1, ddof=1)), ("range", lambda a: np.ptp(a, axis=-1))):
            value = float(fn(point[:, j]))
            draws = fn(boot[:, :, j]) if n_boot else np.zeros(0)
            se, lo, hi = _interval(draws, level)
            spread.append({"metric": m, "statistic": stat, "value": value, "se": se, "ci_low": lo, "ci_high": hi})
    row_sd = S.std(axis=1, ddof=1)
    draws = np.array([row_sd[np.asarray(_core.risk_bootstrap_indices(len(y), seed, b), dtype=np.int64)].mean()
                      for b in range(n_boot)])
    se, lo, hi = _interval(draws, level)
    spread.append({"metric": "row_score", "statistic": "sd", "value": float(row_sd.mean()), "se": se, "ci_low": lo,
                   "ci_high": hi})
    table = pd.DataFrame(S, columns=names)
    table["label"] = y.astype(np.int64)
    meta = {"n": int(len(y)), "variants": names, "method": method, "n_boot": n_boot, "seed": seed, "level": level,
            "threshold": threshold, "bins": bins,
            "fingerprints": {name: t.fingerprint() for name, t in variants.items()}}
    return PromptVariations(metrics=metrics, spread=pd.DataFrame(spread), scores=table, meta=meta)


@result_dataclass
class FeatureImportance(Result):
    """Permutation feature importance of LLM risk scores (:func:`permutation_importance`).

    ``importance``: per feature and metric the value with the feature's column permuted across the
    rows, ``drop`` = original minus permuted (for ``roc_auc`` and ``accuracy`` a positive drop is
    the information the feature carried; for ``ece`` and ``brier``, lower is better, so a negative
    drop is) with a paired bootstrap CI, and per feature ``score_shift``, the mean absolute change
    of a row's score. ``meta``: n, features, n_repeats, n_boot, seed, level.

    Examples
    --------
    A stand-in model that reads the sex line only: permuting age moves nothing.

    >>> import math
    >>> from llmsurrogate import testing
    >>> from llmsurrogate.llm import CallableBackend
    >>> def model(prompt):
    ...     p = 0.7 if "Female" in prompt.split("Information:")[-1] else 0.4
    ...     above = "A" if "A. Above" in prompt else "B"
    ...     return {" " + above: math.log(p), " " + ("B" if above == "A" else "A"): math.log(1 - p)}
    >>> res = permutation_importance(testing.synthetic_census(100, seed=2), testing.synthetic_income_task(),
    ...                              CallableBackend(model), features=["AGEP"], n_boot=20)
    >>> res.importance.query("metric == 'score_shift'")[["feature", "drop"]].to_dict("records")
    [{'feature': 'AGEP', 'drop': 0.0}]
    """

    importance: pd.DataFrame
    meta: dict

    def tidy(self) -> pd.DataFrame:
        """Per feature and metric the permuted value and the drop (a copy of ``importance``).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate import risk
        >>> model = CallableBackend(lambda prompt: {" A": math.log(0.6), " B": math.log(0.4)})
        >>> rows, task = testing.synthetic_census(60, seed=2), testing.synthetic_income_task()
        >>> res = risk.permutation_importance(rows, task, model, features=["AGEP"], n_boot=0)
        >>> res.tidy().query("metric == 'score_shift'")[["feature", "drop"]].to_dict("records")
        [{'feature': 'AGEP', 'drop': 0.0}]
        """
        return self.importance.copy()

    def summary(self) -> Summary:
        """The importances in words and a table (print it, or ``.as_text()``).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate import risk
        >>> model = CallableBackend(lambda prompt: {" A": math.log(0.6), " B": math.log(0.4)})
        >>> rows, task = testing.synthetic_census(60, seed=2), testing.synthetic_income_task()
        >>> res = risk.permutation_importance(rows, task, model, features=["AGEP"], n_boot=0)
        >>> print(res.summary().as_text().splitlines()[0])
        Permutation feature importance
        """
        auc = self.importance[self.importance["metric"].isin(["roc_auc", "score_shift"])]
        facts = {"rows": self.meta["n"], "repeats": self.meta["n_repeats"], "bootstrap resamples": self.meta["n_boot"]}
        return Summary("Permutation feature importance", facts=facts,
                       tables=[("", auc)],
                       notes=["drop = metric with the data as is - metric with the feature's column permuted across "
                              "rows; CIs from a row bootstrap paired with the unpermuted scores."])


def permutation_importance(data, task, backend, method: str = "multiple_choice", *, features=None, n_repeats: int = 1,
                           model=None, cache=None, n_boot: int = 200, seed: int = 42, level: float = 0.95,
                           threshold: float = 0.5, bins: int = 10, n_jobs: int | None = None,
                           **score_kwargs) -> FeatureImportance:
    """How much each feature matters to the LLM's risk scores: permute one feature column across
    the rows (so the prompts carry another person's value), score again, and compare
    (folktexts' permutation importance; docs/methods/risk.md §2.9).

    ``features``: the task columns to test (default: all); ``n_repeats`` permutations per feature
    (their metrics are averaged; each is one more scoring of every row, through the cache, so a
    rerun is free). CIs: ``n_boot`` row-bootstrap replicates paired between the original and the
    permuted scores.

    Examples
    --------
    A stand-in model that reads the education line only: permuting SCHL costs AUC, SEX costs nothing.

    >>> import math
    >>> from llmsurrogate import testing
    >>> from llmsurrogate.llm import CallableBackend
    >>> def model(prompt):
    ...     row = prompt.split("Information:")[-1]
    ...     p = 0.8 if "Bachelor" in row or "Master" in row else 0.3
    ...     above = "A" if "A. Above" in prompt else "B"
    ...     below = "B" if above == "A" else "A"
    ...     return {" " + above: math.log(p), " " + below: math.log(1 - p)}
    >>> rows = testing.synthetic_census(1000, seed=1)
    >>> res = permutation_importance(rows, testing.synthetic_income_task(), CallableBackend(model),
    ...                              features=["SCHL", "SEX"], n_repeats=2, n_boot=100)
    >>> auc = res.importance.set_index(["feature", "metric"])
    >>> bool(auc.loc[("SCHL", "roc_auc"), "ci_low"] > 0), float(auc.loc[("SEX", "roc_auc"), "drop"])
    (True, 0.0)
    """
    frame = as_frame(data, "data").reset_index(drop=True)
    if not isinstance(task, Task):
        raise InvalidArgumentError(f"argument `task` must be a Task; got {type(task).__name__}")
    features = list(task.features if features is None else features)
    unknown = [f for f in features if f not in task.features]
    if unknown or not features:
        raise InvalidArgumentError(f"argument `features` must name columns of task {task.name!r} "
                                   f"({list(task.features)}); got {unknown or features}")
    n_repeats = check_int(n_repeats, "n_repeats", minimum=1)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    level = check_real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True)
    threshold = check_real(threshold, "threshold", low=0.0, high=1.0)
    bins = check_int(bins, "bins", minimum=1)
    n_jobs = resolve_n_jobs(n_jobs)
    kw = dict(model=model, cache=cache, **score_kwargs)
    y, base = _labelled_scores(frame, {"original": task}, backend, method, kw)
    base = base[:, 0]
    rows = []
    for f_i, feat in enumerate(features):
        permuted = []
        for rep in range(n_repeats):
            rng = np.random.default_rng([seed, 5, f_i, rep])
            shuffled = frame.copy()
            shuffled[feat] = frame[feat].to_numpy()[rng.permutation(len(frame))]
            _, s = _labelled_scores(shuffled, {"permuted": task}, backend, method, kw)
            permuted.append(s[:, 0])
        P = np.column_stack([base] + permuted)                              # (n, 1 + R)
        point = _point(y, P, threshold, bins)                               # (1 + R, M)
        boot = (_boot(y, P, n_boot, seed, threshold, bins, n_jobs) if n_boot
                else np.zeros((0, P.shape[1], len(BOOT_METRICS))))
        for m in ROBUSTNESS_METRICS:
            j = BOOT_METRICS.index(m)
            value = float(point[1:, j].mean())
            drop = float(point[0, j] - value)
            _, lo, hi = _interval(boot[:, 0, j] - boot[:, 1:, j].mean(axis=1), level)
            rows.append({"feature": feat, "metric": m, "original": float(point[0, j]), "permuted": value,
                         "drop": drop, "ci_low": lo, "ci_high": hi})
        shift = np.abs(P[:, 1:] - base[:, None]).mean(axis=1)
        draws = np.array([shift[np.asarray(_core.risk_bootstrap_indices(len(y), seed, b), dtype=np.int64)].mean()
                          for b in range(n_boot)])
        _, lo, hi = _interval(draws, level)
        rows.append({"feature": feat, "metric": "score_shift", "original": 0.0, "permuted": float(shift.mean()),
                     "drop": float(shift.mean()), "ci_low": lo, "ci_high": hi})
    meta = {"n": int(len(y)), "features": features, "method": method, "n_repeats": n_repeats, "n_boot": n_boot,
            "seed": seed, "level": level, "threshold": threshold, "bins": bins}
    return FeatureImportance(importance=pd.DataFrame(rows), meta=meta)
