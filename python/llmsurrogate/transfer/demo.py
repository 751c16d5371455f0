"""The transfer capability's demo on the bundled data: the paper's Table 5 and its application.

Andrews, Fudenberg, Lei, Liang & Wu (2025). :func:`run_demo` reproduces Table 5: two-sided
forecast intervals for the error of a model trained on one subject pool and used on a new one,
from the authors' published 44×44 transfer-error matrices. With n = 44 domains, r = 1 training
domain and τ = 0.95, Proposition 1 guarantees coverage (2τ − 1)(n − r)/(n + 1) = 86%.
:func:`run_transfer_application` adds the application of Sections 5.4–5.5 (Table 2): forecast
intervals and worst-case / everywhere dominance for EU, CPT and a random forest.
:func:`write_demo` runs both and writes their tables and figures.

>>> res = run_demo()
>>> row = res.table.query("model == 'Random forest' and metric == 'raw transfer error'").iloc[0]
>>> float(round(row["lower"], 2)), float(round(row["upper"], 2))
(2.71, 31.39)
>>> app = run_transfer_application()
>>> d = app.dominance.query("model == 'CPT' and other == 'RF' and metric == 'raw transfer error'")
>>> bool(d.worst_case.all()), bool(d.everywhere.any()), float(d[d.everywhere_paper].tau.min())
(True, False, 0.96)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import datasets, quantiles
from .._atomic import check_output_dir, save_figure, write_frame, write_text
from .._deprecation import deprecated_arguments
from .._progress import ProgressCallback
from . import _dominance, _intervals
from ._common import DEFAULT_TAULIST
from ._results import IntervalTable, TransferApplication
from ._table import ErrorTable

__all__ = ["TABLE5_MODELS", "METRICS", "run_demo", "application_tables", "run_transfer_application", "write_demo"]

METRICS = ("raw transfer error", "transfer shortfall", "transfer deterioration")

# Table 5's rows: display name -> file name in datasets.load_transfer_errors
TABLE5_MODELS = {
    "CPT γ": "g",
    "CPT α,β": "ab",
    "CPT δ,γ": "dg",
    "CPT α,β,γ": "abg",
    "CPT α,β,δ,γ": "abdg",
    "EU": "EU_iso",
    "Random forest": "RF",
}
def _off_diagonal(matrix: np.ndarray) -> np.ndarray:
    mask = ~np.eye(matrix.shape[0], dtype=bool)
    vals = matrix[mask]
    return vals[np.isfinite(vals)]


def _metric_values(model: str, metric: str) -> np.ndarray:
    raw = datasets.load_transfer_errors(model, "unnormalized").to_numpy()
    if metric == "raw transfer error":
        return _off_diagonal(raw)
    if metric == "transfer shortfall":
        return _off_diagonal(datasets.load_transfer_errors(model, "normalized").to_numpy())
    # deterioration: each test column divided by the model's own in-sample error on that domain
    return _off_diagonal(raw / np.diag(raw)[None, :])


def run_demo(tau: float = 0.95, progress: ProgressCallback | None = None) -> IntervalTable:
    """Forecast intervals [Q̲_{1-τ}, Q̄_τ] of the pooled r = 1 transfer errors, per model and metric.

    Examples
    --------
    >>> res = run_demo(tau=0.95)
    >>> list(res.table.columns), res.meta["guaranteed coverage (Prop. 1)"]
    (['model', 'metric', 'n_errors', 'lower', 'upper'], 0.86)
    """
    rows = []
    if progress is not None:
        progress("forecast intervals per model", 0, len(TABLE5_MODELS))
    for i, (name, model) in enumerate(TABLE5_MODELS.items()):
        for metric in METRICS:
            values = _metric_values(model, metric)
            lo, hi = quantiles.quantile_interval(values, tau)
            rows.append({"model": name, "metric": metric, "n_errors": int(values.size), "lower": lo, "upper": hi})
        if progress is not None:
            progress("forecast intervals per model", i + 1, len(TABLE5_MODELS))
    n, r = 44, 1
    coverage = (2 * tau - 1) * (n - r) / (n + 1)
    return IntervalTable(
        title=f"Transfer forecast intervals, 44 subject pools, r = 1, tau = {tau:g}",
        table=pd.DataFrame(rows),
        meta={"domains (n)": n, "training domains (r)": r, "tau": tau,
              "guaranteed coverage (Prop. 1)": round(coverage, 4)},
        notes=(
            "Errors: the authors' published matrices (transferUQ, MIT licence); raw error as stored, "
            "shortfall = raw / best in-sample error across models, deterioration = raw / the model's "
            "own in-sample error on the test pool.",
            "Reproduces Table 5 of Andrews, Fudenberg, Lei, Liang & Wu (2025).",
        ),
    )


MODELS = {"EU": "EU_iso", "CPT": "abdg", "RF": "RF"}
PAIRS = [("CPT", "RF"), ("EU", "RF"), ("CPT", "EU")]
METRICS = ("raw transfer error", "transfer shortfall", "transfer deterioration")


def application_tables() -> dict[str, dict[str, ErrorTable]]:
    """metric -> model -> ErrorTable for EU, CPT (α,β,δ,γ) and RF on the published matrices.

    Examples
    --------
    >>> tabs = application_tables()
    >>> list(tabs), sorted(tabs["raw transfer error"])
    (['raw transfer error', 'transfer shortfall', 'transfer deterioration'], ['CPT', 'EU', 'RF'])
    >>> t = tabs["raw transfer error"]["EU"]
    >>> t.n, t.N
    (44, 1892)
    """
    out: dict[str, dict[str, ErrorTable]] = {m: {} for m in METRICS}
    for label, file in MODELS.items():
        raw = datasets.load_transfer_errors(file, "unnormalized")
        mats = {"raw transfer error": raw, "transfer shortfall": datasets.load_transfer_errors(file, "normalized"),
                "transfer deterioration": raw / np.diag(raw.to_numpy())[None, :]}
        for metric, m in mats.items():
            out[metric][label] = ErrorTable.from_matrix(m, name=label, metric=metric)
    return out


@deprecated_arguments(renamed={"coverage": "level"})
def run_transfer_application(level=(0.8, 0.9, 0.95), taus=None) -> TransferApplication:
    """Forecast intervals (three nominal levels) and worst-case / everywhere dominance (exact and
    the paper's variant) for EU, CPT and RF in all three metrics; ē_0.9(Γ) curves for the figure.

    Examples
    --------
    >>> app = run_transfer_application(level=(0.9,), taus=[0.9])
    >>> d = app.dominance.query("metric == 'transfer deterioration'")  # at tau = 0.9
    >>> d[["model", "other", "everywhere", "everywhere_paper"]].values.tolist()
    [['CPT', 'RF', False, True], ['EU', 'RF', True, True], ['CPT', 'EU', False, False]]
    """
    taus = DEFAULT_TAULIST if taus is None else np.asarray(taus, dtype=float)
    tabs = application_tables()
    intervals = []
    for metric, by_model in tabs.items():
        t = _intervals.forecast_intervals(by_model, level=level).tidy()
        t.insert(1, "metric", metric)
        intervals.append(t)
    dom = []
    for metric, by_model in tabs.items():
        for a, b in PAIRS:
            wc = _dominance.check_worstcase_dominance(by_model[a], by_model[b], taus)
            ev = _dominance.check_everywhere_dominance(by_model[a], by_model[b], taus)
            evp = _dominance.check_everywhere_dominance(by_model[a], by_model[b], taus, mode="paper")
            dom.append(pd.DataFrame({"model": a, "other": b, "metric": metric, "tau": taus, "worst_case": wc.res,
                                     "everywhere": ev.res, "everywhere_paper": evp.res}))
    curves = []
    for label, t in tabs["raw transfer error"].items():
        s = _intervals.worst_case_curve(t, tau=0.9, lower=False).tidy()
        s.insert(0, "model", label)
        curves.append(s)
    return TransferApplication(intervals=pd.concat(intervals, ignore_index=True),
                               dominance=pd.concat(dom, ignore_index=True),
                               worst_case=pd.concat(curves, ignore_index=True))


def write_demo(out_dir: str | Path, tau: float = 0.95, plot: bool = True, progress: ProgressCallback | None = None,
               echo: Callable[[str], None] = print) -> list[str]:
    """Run :func:`run_demo` and :func:`run_transfer_application`, print their summaries with ``echo``
    and write ``transfer_forecast_intervals.{csv,json,png}``, ``transfer_dominance.csv`` and
    ``transfer_application.png`` to ``out_dir``; returns the file names written.

    Examples
    --------
    >>> write_demo("transfer_demo", plot=False, echo=lambda text: None)
    ['transfer_forecast_intervals.csv', 'transfer_forecast_intervals.json', 'transfer_dominance.csv']
    """
    out_dir = check_output_dir(out_dir)
    result = run_demo(tau=tau, progress=progress)
    echo(result.summary().as_text())
    write_frame(out_dir / "transfer_forecast_intervals.csv", result.table)
    write_text(out_dir / "transfer_forecast_intervals.json", result.to_json())
    written = ["transfer_forecast_intervals.csv", "transfer_forecast_intervals.json"]
    if plot:
        save_figure(result.plot(), out_dir / "transfer_forecast_intervals.png", dpi=130)
        written.append("transfer_forecast_intervals.png")
    app = run_transfer_application()
    summary = app.summary()
    echo("\n" + summary.tables[1][0])
    echo(summary.tables[1][1].to_string(index=False))
    for note in summary.notes:
        echo(f"Note: {note}")
    write_frame(out_dir / "transfer_dominance.csv", app.dominance)
    written.append("transfer_dominance.csv")
    if plot:
        save_figure(app.plot(), out_dir / "transfer_application.png", dpi=130)
        written.append("transfer_application.png")
    return written
