"""R adapters of :mod:`llmsurrogate.risk`: R's ``risk_scores()``, ``evaluate_risk_scores()`` and
``compare_answers()`` (the table forms of the API, which take names and plain columns).

R checks its arguments in R's words (1-based rows, R's type names) before it calls here; the
adapters put R's columns back together: the K probability columns of a data frame as a pandas
DataFrame, survey weights and groups as lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .. import risk

__all__ = ["R_FUNCTIONS", "r_compare_answers", "r_evaluate_multiclass", "r_evaluate_table"]


def _probs(probs: Mapping[str, list], options: Any) -> tuple[pd.DataFrame, list]:
    """R's K probability columns (``{column: list}``, in R's order) and the options they stand for."""
    frame = pd.DataFrame({k: pd.Series(v, dtype=float) for k, v in probs.items()})
    opts = [str(o) for o in (options if isinstance(options, (list, tuple)) else [options])]
    return frame, opts


def r_evaluate_multiclass(y, probs, *, options, weights=None, ordered: bool = False, n_boot: int = 200,
                          seed: int = 42, level: float = 0.95):
    """R's ``evaluate_risk_scores()`` with K probability columns: :func:`llmsurrogate.risk.evaluate_multiclass`
    on R's columns (``probs``: ``{column: list}``, one column per option in ``options``; ``y``: the
    answers as option labels).

    Examples
    --------
    >>> ev = r_evaluate_multiclass(["a", "b", "c"], {"a": [.7, .2, .1], "b": [.2, .6, .2], "c": [.1, .2, .7]},
    ...                            options=["a", "b", "c"], n_boot=0)
    >>> ev.metric("accuracy"), ev.meta["options"]
    (1.0, ['a', 'b', 'c'])
    """
    frame, opts = _probs(probs, options)
    return risk.evaluate_multiclass(y, frame, weights=weights, options=opts, ordered=ordered, n_boot=n_boot,
                                    seed=seed, level=level)


def r_compare_answers(y, probs, groups=None, *, options, weights=None, ordered: bool = False, values=None,
                      llm_answer: str = "probabilities", interval: str = "hull", n_boot: int = 200, seed: int = 42,
                      level: float = 0.95):
    """R's ``compare_answers()``: :func:`llmsurrogate.risk.compare_answers` on R's columns (as
    :func:`r_evaluate_multiclass`).

    Examples
    --------
    >>> cmp = r_compare_answers(["a", "b", "b", "c"], {"a": [.6, .2, .1, .1], "b": [.3, .5, .8, .2],
    ...                         "c": [.1, .3, .1, .7]}, options=["a", "b", "c"], n_boot=0)
    >>> round(cmp.distance("tv"), 4)
    0.05
    """
    frame, opts = _probs(probs, options)
    return risk.compare_answers(y, frame, groups, weights=weights, options=opts, ordered=ordered, values=values,
                                llm_answer=llm_answer, interval=interval, n_boot=n_boot, seed=seed, level=level)


def r_evaluate_table(y, scores, groups=None, *, weights=None, threshold: float = 0.5, n_boot: int = 200,
                     seed: int = 42, level: float = 0.95) -> dict:
    """R's ``evaluate_risk_scores()`` with one score per row: :func:`llmsurrogate.risk.evaluate` (with
    ``level=``, and ``weights=``, survey weights) as the plain tables of
    :func:`~llmsurrogate.risk.evaluate_table`.

    Examples
    --------
    >>> out = r_evaluate_table([0, 0, 1, 1], [.2, .6, .7, .9], n_boot=0)
    >>> sorted(out), float(out["metrics"].set_index("metric").loc["accuracy", "value"])
    (['calibration', 'group_summary', 'groups', 'metrics'], 0.75)
    """
    ev = risk.evaluate(y, scores, groups, weights=weights, threshold=threshold, n_boot=n_boot, seed=seed, level=level)
    return {"metrics": ev.metrics, "groups": ev.groups, "group_summary": ev.group_summary,
            "calibration": ev.calibration}


#: What R may call here (``.call("risk.<name>")``): the public functions themselves where R's words and
#: values cross unchanged (``evaluate_table`` for the R package of an earlier release), the adapters above
#: where R's columns need putting back together.
R_FUNCTIONS = {
    **{name: getattr(risk, name) for name in ("score_table", "evaluate_table")},
    "evaluate": r_evaluate_table,
    "evaluate_multiclass": r_evaluate_multiclass,
    "compare_answers": r_compare_answers,
}
