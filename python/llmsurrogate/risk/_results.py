"""The result objects of risk scoring: :class:`RiskEvaluation` and :class:`RiskScores`."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from ..exceptions import InvalidArgumentError, LLMSurrogateWarning
from ..llm.scoring import binary_probabilities
from ..results import Result, Summary, result_dataclass
from ._metrics import metric_value
from ._plots import curve_tables, plot_evaluation, plot_score_histogram


@result_dataclass
class RiskEvaluation(Result):
    """Metrics of risk scores against labels.

    ``metrics``: one row per metric (``metric``, ``value``, ``se``, ``ci_low``, ``ci_high``;
    bootstrap columns NaN for metrics not bootstrapped); ``groups``: per-group metrics;
    ``group_summary``: ratios and differences across groups; ``calibration``: reliability-diagram
    table; ``meta``: threshold, n, n_boot, seed, bins, level, ``weighted`` (survey weights used) and
    ``n_eff`` (Kish's effective sample size (Σw)²/Σw², ``n`` without weights); ``roc``: the ROC curve's points (``group``
    "all", then each group; ``threshold``, ``fpr``, ``tpr``: ``plot_roc``'s points) and ``group_calibration``:
    each group's reliability-diagram table (``group`` column), both None in an evaluation made
    without them (an earlier version's).

    Made by :func:`~llmsurrogate.risk.evaluate`; ``metric(name)`` reads one value.

    Examples
    --------
    >>> from llmsurrogate.risk import evaluate
    >>> ev = evaluate([0, 0, 1, 1, 0, 1], [.1, .4, .8, .35, .2, .9], n_boot=20)
    >>> ev.metrics.columns.tolist(), ev.meta["n"]
    (['metric', 'value', 'se', 'ci_low', 'ci_high'], 6)
    >>> round(ev.metric("roc_auc"), 4), round(ev.metric("sce"), 4)
    (0.8889, -0.0417)
    """

    metrics: Any
    groups: Any
    group_summary: dict
    calibration: Any
    meta: dict
    roc: Any = None
    group_calibration: Any = None

    def metric(self, name: str) -> float:
        """One metric's value by name (e.g. roc_auc, ece, brier).

        Examples
        --------
        >>> from llmsurrogate.risk import evaluate
        >>> ev = evaluate([0, 0, 1, 1, 0, 1], [.1, .4, .8, .35, .2, .9], n_boot=20)
        >>> round(ev.metric("roc_auc"), 4), round(ev.metric("brier"), 4)
        (0.8889, 0.1138)
        """
        return metric_value(self.metrics, name)

    def tidy(self):
        """The metrics, one row each, with bootstrap CIs (a copy of ``metrics``).

        Examples
        --------
        >>> from llmsurrogate.risk import evaluate
        >>> ev = evaluate([0, 0, 1, 1, 0, 1], [.1, .4, .8, .35, .2, .9], n_boot=20)
        >>> ev.tidy()[["metric", "value"]].head(3).round(3)
             metric  value
        0  accuracy  0.833
        1       tpr  0.667
        2       fnr  0.333
        """
        return self.metrics.copy()

    def summary(self) -> Summary:
        """The evaluation in words and tables (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate.risk import evaluate
        >>> ev = evaluate([0, 0, 1, 1, 0, 1], [.1, .4, .8, .35, .2, .9], n_boot=20)
        >>> print(ev.summary().as_text().splitlines()[0])
        Risk score evaluation
        >>> wev = evaluate([0, 0, 1, 1, 0, 1], [.1, .4, .8, .35, .2, .9], n_boot=20, weights=[1, 1, 1, 1, 1, 5])
        >>> print(next(line for line in wev.summary().as_text().splitlines() if "survey" in line))
        survey weights      : yes (Kish effective sample size 3.3)
        """
        facts = {"rows": self.meta["n"], "threshold": self.meta["threshold"], "bootstrap resamples": self.meta["n_boot"]}
        if self.meta.get("weighted"):
            facts["survey weights"] = f"yes (Kish effective sample size {self.meta['n_eff']:.1f})"
        main = self.metrics[self.metrics["metric"].isin(["accuracy", "balanced_accuracy", "roc_auc", "ece",
                                                         "ece_quantile", "brier", "log_loss", "confidence_bias",
                                                         "sce", "score_mean", "score_sd"])]
        level, bins = self.meta.get("level", 0.95), self.meta.get("bins", 10)
        ci = f"{100 * level:g}% bootstrap CIs" if self.meta["n_boot"] else "no bootstrap CIs: n_boot = 0"
        tables = [(f"Metrics ({ci})", main)]
        if self.groups is not None and len(self.groups):
            tables.append(("By group", self.groups[["group", "n", "accuracy", "roc_auc", "ece", "brier", "sce"]]))
        notes = [f"Accuracy uses r >= threshold; ECE: {bins} equal-width bins on [0, 1]; SCE = mean(r) - mean(y)."]
        return Summary("Risk score evaluation", facts=facts, tables=tables, notes=notes)

    def plot(self, ax=None, kind: str = "calibration", **kwargs):
        """``kind="calibration"``: the reliability diagram (every row in black, each group's curve
        beside it); ``"roc"``: the ROC curve of every row and of each group, AUCs in the legend;
        ``"both"``: the two side by side (a figure of its own: ``ax`` is not taken). On ``ax`` if
        given; returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> from llmsurrogate.risk import evaluate
        >>> y = [0, 0, 1, 1, 0, 1, 0, 0, 1, 0] * 3
        >>> r = [.1, .2, .8, .7, .4, .35, .3, .5, .9, .2] * 3
        >>> ev = evaluate(y, r, bins=2, n_boot=20)
        >>> fig = ev.plot()
        >>> fig.axes[0].get_title()
        'Calibration (quantile bins, bootstrap CIs)'
        >>> fig.savefig("calibration.png")
        """
        return plot_evaluation(self, ax=ax, kind=kind)


@result_dataclass
class RiskScores(Result):
    """Risk scores of each row: ``table``, indexed by the data's row labels (a pandas frame's index,
    else 0..n-1, so that weights and groups taken from the data pair with it by label), with
    ``row`` (position), ``score``, ``answer_mass`` (mean
    next-token mass on the answer tokens, or on digits for numeric), ``label`` (if the data hold the
    target) and, for multiple choice, ``score_order_k`` per answer order; for a question with K > 2
    options (and for ``numeric_scale``) ``prob_<option value>`` per option, the answer
    distribution; ``meta`` records the task, method, options, option orders, backend identity and
    cache statistics.

    Made by :func:`~llmsurrogate.risk.risk_scores`; ``scores`` is the score column as an array,
    ``probabilities`` the answer distribution as a frame, and ``evaluate()`` scores the scores
    against the labels. Rows without an answer in the data are scored like the others, their
    ``label`` is missing, ``evaluate()`` leaves them out and :attr:`unlabelled` counts them.

    Examples
    --------
    >>> import math
    >>> from llmsurrogate import datasets
    >>> from llmsurrogate.llm import CallableBackend, acs_income_task
    >>> from llmsurrogate.risk import risk_scores
    >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
    >>> rs = risk_scores(datasets.load_acs_income_rows().head(4), acs_income_task(), backend)
    >>> rs.scores, rs.meta["method"]  # the 0.7 on key B is averaged with the 0.3 on key A
    (array([0.5, 0.5, 0.5, 0.5]), 'multiple_choice')
    """

    table: Any
    meta: dict

    @property
    def scores(self) -> np.ndarray:
        return self.table["score"].to_numpy(float)

    @property
    def unlabelled(self) -> int:
        """How many scored rows have no answer (a missing label): scored, and left out of :meth:`evaluate`."""
        return int(self.meta.get("unlabelled_rows", 0))

    def _labelled(self):
        """(labels, scores, keep) of the rows with an answer; ``keep`` None when every row has one."""
        labels = self.table["label"]
        keep = labels.notna().to_numpy()
        if keep.all():
            return labels, self.table["score"], None
        if not keep.any():
            raise InvalidArgumentError(f"none of the {len(keep)} scored rows has an answer (every label is missing); "
                                       f"there is nothing to evaluate against")
        warnings.warn(f"{int((~keep).sum())} of {len(keep)} rows have no answer (a missing label): they are "
                      f"scored, and left out of the evaluation", LLMSurrogateWarning, stacklevel=3)
        labels = labels[keep]
        if str(labels.dtype) == "Int64":
            labels = labels.astype("int64")
        return labels, self.table["score"][keep], keep

    @property
    def probabilities(self):
        """The answer distribution: an (n, K) DataFrame, one column per option named by the
        option's value, in the question's order; each row sums to 1. K > 2 options (and
        ``numeric_scale``): the ``prob_<value>`` columns. Binary: derived from the scores, which
        are not changed: the option with the larger numeric value gets the score, the other one
        minus it. Ready for :func:`~llmsurrogate.risk.evaluate_multiclass` and ``compare_answers``.

        Examples
        --------
        >>> import math
        >>> from llmsurrogate import datasets
        >>> from llmsurrogate.llm import CallableBackend, acs_income_task
        >>> from llmsurrogate.risk import risk_scores
        >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.2), " B": math.log(0.8)})
        >>> rs = risk_scores(datasets.load_acs_income_rows().head(2), acs_income_task(), backend,
        ...                  correct_order_bias=False)
        >>> rs.probabilities.round(3)  # "Below $50,000" (value 0) is key A; rows keep the data's labels
             0    1
        1  0.2  0.8
        2  0.2  0.8
        """
        import pandas as pd

        options = self.meta.get("options")
        if options is None:
            raise InvalidArgumentError(
                f"these scores (method {self.meta.get('method')!r}) carry no answer distribution: a numeric "
                f"method on a question with more than 2 options, or scores made by an older version")
        names = [f"prob_{o}" for o in options]
        if all(n in self.table for n in names):
            out = self.table[names].to_numpy(float)
        elif len(options) == 2:
            out = binary_probabilities(self.scores, self.meta["option_values"])
        else:
            raise InvalidArgumentError(f"the scores table has no columns {names}")
        return pd.DataFrame(out, columns=pd.Index(options), index=self.table.index)

    def tidy(self):
        """One row per input row: the score and what it was read from (a copy of ``table``).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate.risk import risk_scores
        >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
        >>> rs = risk_scores(testing.synthetic_census(30, seed=1), testing.synthetic_income_task(), backend)
        >>> rs.tidy()[["score", "label"]].head(3)
           score  label
        0    0.5      1
        1    0.5      1
        2    0.5      1
        """
        return self.table.copy()

    def evaluate(self, groups=None, **kwargs) -> RiskEvaluation:
        """Evaluate the scores against the labels (:func:`llmsurrogate.risk.evaluate`'s arguments).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate.risk import risk_scores
        >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
        >>> rs = risk_scores(testing.synthetic_census(30, seed=1), testing.synthetic_income_task(), backend)
        >>> rs.evaluate(n_boot=0).meta["n"]
        30
        """
        if "label" not in self.table:
            raise InvalidArgumentError("these scores have no labels; pass the data with the target column")
        k = sum(1 for c in self.table.columns if str(c).startswith("prob_"))
        if k > 2:  # the score is an expected level on the options' scale, not a probability of 1
            raise InvalidArgumentError(
                f"these scores answer a question with {k} options: `evaluate()` judges a yes/no question's "
                f"probabilities; use `risk.evaluate_multiclass(rs.table['label'], rs)` (log loss, Brier, RPS, "
                f"accuracy, AUC, ECE over the {k} options) or `risk.compare_answers(...)`")
        from ._evaluation import evaluate  # inside: _evaluation imports this module (a cycle)

        labels, scores, keep = self._labelled()
        if keep is not None:  # the per-row arguments, of every scored row: those of the labelled rows
            groups = _rows(groups, keep, self.table.index)
            if "weights" in kwargs:
                kwargs["weights"] = _rows(kwargs["weights"], keep, self.table.index)
        ev = evaluate(labels, scores, groups, **kwargs)
        if ev.roc is None:  # the curves the figures draw, for an evaluate() that does not keep them
            tables = curve_tables(labels, scores, groups, bins=ev.meta["bins"],
                                  seed=ev.meta["seed"], min_share=kwargs.get("min_group_share", 0.04))
            ev = dataclasses.replace(ev, **tables)
        return ev

    def summary(self) -> Summary:
        """The scores in words (print it, or ``.as_text()``).

        Examples
        --------
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate.risk import risk_scores
        >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
        >>> rs = risk_scores(testing.synthetic_census(30, seed=1), testing.synthetic_income_task(), backend)
        >>> print(rs.summary().as_text().splitlines()[0])
        LLM risk scores
        """
        t = self.table
        facts = {"task": self.meta.get("task"), "method": self.meta.get("method"), "rows": len(t),
                 "mean score": float(t["score"].mean()), "mean answer mass": float(t["answer_mass"].mean()),
                 "rows with answer mass < 0.1": int((t["answer_mass"] < 0.1).sum())}
        if self.unlabelled:
            facts["rows without an answer (scored, left out of evaluate)"] = self.unlabelled
        return Summary("LLM risk scores", facts=facts)

    def plot(self, ax=None, groups=None, bins: int = 20, **kwargs):
        """Histogram of the scores (one density histogram per group if ``groups``; see
        :func:`~llmsurrogate.risk.plot_score_histogram`): on [0, 1] for a binary question, and
        for a question with K > 2 options, whose score is the expected level in the options'
        values, over the scale from the smallest option value to the largest. On ``ax`` if given;
        returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> import math; from llmsurrogate import testing; from llmsurrogate.llm import CallableBackend; from llmsurrogate.risk import risk_scores
        >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
        >>> rs = risk_scores(testing.synthetic_census(30, seed=1), testing.synthetic_income_task(), backend)
        >>> rs.plot().axes[0].get_xlabel()
        'risk score'
        """
        values = self.meta.get("option_values") or []
        if len(values) > 2 and "value_range" not in kwargs:  # the score is the expected level, not a probability
            s = self.scores[np.isfinite(self.scores)]  # an expected level sits within the scale, up to rounding
            kwargs["value_range"] = (min(min(values), s.min(initial=np.inf)), max(max(values), s.max(initial=-np.inf)))
            kwargs.setdefault("xlabel", "score: expected level (option values)")
        return plot_score_histogram(self.scores, groups, bins=bins, ax=ax, **kwargs)


def _rows(values, keep, index):
    """A per-row argument of every scored row (an array, a list, a Series on the table's index)
    restricted to the rows ``keep``; anything else (None, a Series on another index, which is
    paired by label) as given."""
    import pandas as pd

    if values is None or isinstance(values, (str, bytes)):
        return values
    if isinstance(values, (pd.Series, pd.Index)):
        if isinstance(values, pd.Series) and not values.index.equals(index):
            return values
        return values[keep] if isinstance(values, pd.Index) else values.iloc[np.flatnonzero(keep)]
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim >= 1 and len(arr) == len(keep):
        return np.asarray(values)[keep]
    return values
