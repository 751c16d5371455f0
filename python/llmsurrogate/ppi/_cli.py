"""The ``llmsurrogate ppi`` command (registered by :mod:`llmsurrogate.cli`): prediction-powered
inference on one file whose rows with a human answer are the labelled sample and whose rows
without one (an empty cell in the ``--y`` column) are the unlabelled sample.

The file is checked in the command line's words before anything is computed (a missing column, no
labelled or no unlabelled rows, an answer that is not a number, an empty or non-finite prediction,
a weight that is not positive, an empty cluster id or regressor, an answer or prediction outside
[0, 1] for a logistic or below 0 for a Poisson regression: each names the option and the file's
data row counted from 1); what the API refuses afterwards (an outcome with one value on every
labelled row, perfectly separated logistic data, dependent regressors) is reported in the same
words. The numbers are the API's (:func:`llmsurrogate.ppi.mean`,
``quantile``, ``ols``, ``logistic``, ``poisson``, ``feols``); the regressions' design comes from
``--formula`` by the package's formula machinery (:func:`llmsurrogate.fe.feols`'s, so ``C(g)``,
``log(x)``, ``I(x**2)``, ``- 1`` work as there), built on both samples together so that a
categorical regressor has the same dummies in both. Writes ``ppi_table.csv`` (the result's
``tidy()``), ``ppi_result.json`` (its JSON, read back by ``PPIResult.from_json``),
``ppi_plot.png`` (the PPI and classical intervals side by side) and ``run.json``.
"""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from .._atomic import check_output_dir, save_figure, write_frame, write_text
from .._cli_support import (RUN_JSON, FiniteFloat, cli_names, cli_warnings, data_column, handle_errors, read_table,
                            start_run, use_agg_backend, write_run_json)
from ..exceptions import ColumnNotFoundError, InvalidArgumentError

__all__ = ["OUTPUTS", "ppi_command"]

#: the files the command writes into ``--out``
OUTPUTS = ("ppi_table.csv", "ppi_result.json", "ppi_plot.png", RUN_JSON)
ESTIMANDS = ("mean", "quantile", "ols", "logistic", "poisson")
REGRESSIONS = ("ols", "logistic", "poisson")


def _row(frame, i: int) -> str:
    """How the command names row position ``i`` of the file: its data row counted from 1."""
    return f"data row {int(frame.index[i]) + 1} (counted from 1 after the header)"


def _value(v):
    return v.item() if isinstance(v, np.generic) else v


def _need_column(frame, col: str, option: str, data_path: Path) -> None:
    if col not in frame.columns:
        cols = ", ".join(repr(str(c)) for c in list(frame.columns)[:12])
        raise ColumnNotFoundError(f"{option} {col!r} is not a column of --data {data_path.name}; its columns: {cols}"
                                  f"{' ...' if frame.shape[1] > 12 else ''}")


def _numbers(frame, col: str, option: str, data_path: Path, *, allow_empty: bool, what: str) -> np.ndarray:
    """Column ``col`` as floats; a cell that is not a number (or, unless ``allow_empty``, an empty
    or non-finite one) is an error naming ``option`` and the data row."""
    import pandas as pd

    raw = frame[col]
    if raw.dtype == bool:
        raw = raw.astype(float)
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    text = np.flatnonzero(np.isnan(values) & raw.notna().to_numpy())
    if text.size:
        i = int(text[0])
        raise InvalidArgumentError(f"{option} {col!r}: {_row(frame, i)} of --data {data_path.name} holds "
                                   f"{_value(raw.iloc[i])!r}, not a number; {what}")
    bad = np.flatnonzero(~np.isfinite(values)) if not allow_empty else np.flatnonzero(np.isinf(values))
    if bad.size:
        i = int(bad[0])
        shown = "an empty cell" if np.isnan(values[i]) else repr(_value(raw.iloc[i]))
        raise InvalidArgumentError(f"{option} {col!r}: {_row(frame, i)} of --data {data_path.name} holds {shown}; "
                                   f"{what}")
    return values


def _check_range(frame, labelled, y, yhat, estimand: str, y_col: str, pred_col: str, data_path: Path) -> None:
    """The values a logistic (in [0, 1]) or a Poisson (>= 0) regression cannot take, in --y on the
    labelled rows and in --prediction on every row: an error naming the option and the data row."""
    if estimand == "logistic":
        bad_value, what = (lambda v: (v < 0) | (v > 1)), "in [0, 1] for --estimand logistic (0/1 answers or probabilities)"
    else:
        bad_value, what = (lambda v: v < 0), ">= 0 for --estimand poisson (counts or rates)"
    for option, col, values, rows in (("--y", y_col, y, labelled), ("--prediction", pred_col, yhat, None)):
        with np.errstate(invalid="ignore"):
            bad = bad_value(values)
        bad = np.flatnonzero(bad if rows is None else bad & rows)
        if bad.size:
            i = int(bad[0])
            raise InvalidArgumentError(f"{option} {col!r}: {_row(frame, i)} of --data {data_path.name} holds "
                                       f"{_value(frame[col].iloc[i])!r}; the values must be {what}")


def _split(frame, y_col: str, data_path: Path):
    """The labelled rows (an answer in ``y_col``) and the unlabelled rows (an empty cell), with the
    answers as numbers."""
    y = _numbers(frame, y_col, "--y", data_path, allow_empty=True,
                 what="the human answers must be numbers (code a yes/no answer as 1/0), an empty cell marking a row "
                      "without one")
    labelled = ~np.isnan(y)
    n, N = int(labelled.sum()), int((~labelled).sum())
    if n == 0:
        raise InvalidArgumentError(f"--y {y_col!r}: every row of --data {data_path.name} has an empty answer, so "
                                   "there are no labelled rows; PPI needs some rows with the human answer")
    if N == 0:
        raise InvalidArgumentError(f"--y {y_col!r}: every row of --data {data_path.name} has an answer, so there "
                                   "are no unlabelled rows; PPI needs rows with the prediction only (leave --y empty "
                                   "there), or use a classical estimate on the labelled rows")
    if n < 2:
        raise InvalidArgumentError(f"--y {y_col!r}: --data {data_path.name} has 1 labelled row; PPI needs at least two")
    return labelled, y


def _regression_inputs(frame, labelled, formula, y_col, data_path):
    """The formula's parsed form and the design of both samples (``None`` with fixed effects,
    which :func:`llmsurrogate.ppi.feols` builds itself): its regressors' cells checked first."""
    from .. import fe

    with cli_names(fml="--formula", formula="--formula"):
        form = fe.parse_formula(formula)
    if form.outcome_column != y_col:
        raise InvalidArgumentError(f"--formula {formula!r}: its outcome {form.outcome!r} must be the --y column "
                                   f"{y_col!r} (the human answers; empty cells mark the unlabelled rows)")
    used = [v for v in dict.fromkeys([*form.variables, *(c for g in form.fixef for c in g)]) if v != y_col]
    for col in used:
        _need_column(frame, col, "--formula: the column", data_path)
        empty = np.flatnonzero(frame[col].isna().to_numpy())
        if empty.size:
            raise InvalidArgumentError(f"--formula: {data_column(col, data_path)} is empty at {_row(frame, int(empty[0]))}; "
                                       "drop or fill the incomplete rows first (PPI drops none for you)")
    if form.fixef:
        return form, None, None
    pooled = frame.copy()
    pooled[y_col] = 0.0  # the design does not depend on the outcome; both samples in one design
    with cli_names(fml="--formula", formula="--formula", data=f"--data {data_path.name}"):
        fit = fe.feols(formula, pooled, fixef_rm="none")
    if fit.nobs != len(frame):
        raise InvalidArgumentError(f"--formula {formula!r}: {len(frame) - fit.nobs} rows of --data {data_path.name} "
                                   "have no value of a regressor (log of a non-positive number?); drop them first")
    X = fit.model_matrix()
    return form, X[labelled].reset_index(drop=True), X[~labelled].reset_index(drop=True)


@click.command("ppi")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file: the labelled rows (with the human answer in --y) and the unlabelled rows "
              "(that cell empty), each with the LLM's answer in --prediction.")
@click.option("--y", "y_col", default=None, metavar="COLUMN",
              help="Column of the human answers (numbers; 0/1 for a yes/no answer); an empty cell marks an "
              "unlabelled row. Default: the outcome of --formula.")
@click.option("--prediction", "pred_col", required=True, metavar="COLUMN",
              help="Column of the LLM's answers (numbers), on every row.")
@click.option("--estimand", type=click.Choice(ESTIMANDS), default=None,
              help="mean (default), quantile (--q), or the regression of --formula: ols (with fixed effects after "
              "'|': ppi.feols), logistic, poisson (default with --formula: ols).")
@click.option("--formula", default=None, help="The regression, e.g. \"y ~ x1 + x2\" or \"y ~ x1 + x2 | firm\" (fixed "
              "effects, --estimand ols only); an intercept is included unless '- 1'. Its outcome is the --y column.")
@click.option("--q", "q", type=FiniteFloat(0, 1, min_open=True, max_open=True), default=None,
              help="--estimand quantile: the quantile, in (0, 1) [0.5].")
@click.option("--method", type=click.Choice(["ppi++", "ppi", "classical"]), default=None,
              help="ppi++ (lambda tuned; the default), ppi (lambda = 1) or classical (the labelled rows alone). "
              "A quantile has no tuning: ppi (its default) or classical.")
@click.option("--level", type=FiniteFloat(0, 1, min_open=True, max_open=True), default=0.95, show_default=True,
              help="Confidence level of the intervals.")
@click.option("--coord", default=None, metavar="TERM",
              help="A regression with --method ppi++: the coefficient lambda is tuned for (default: all together).")
@click.option("--weights", "weight_col", default=None, metavar="COLUMN",
              help="Column of positive survey weights, on every row (rescaled to sum to n and N).")
@click.option("--cluster", "cluster_col", default=None, metavar="COLUMN",
              help="Column of cluster ids (schools, firms) for cluster-robust intervals; the same id among labelled "
              "and unlabelled rows is one cluster (docs/methods/ppi.md §8).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("ppi-output"),
              show_default=True, help="Folder for ppi_table.csv, ppi_result.json, ppi_plot.png and run.json.")
@click.option("--no-plot", is_flag=True, help="Skip the figure.")
@handle_errors
def ppi_command(data_path, y_col, pred_col, estimand, formula, q, method, level, coord, weight_col, cluster_col,
                out_dir, no_plot):
    """Prediction-powered inference (PPI, PPI++) from one file of labelled and unlabelled rows."""
    from .. import ppi

    estimand = estimand or ("ols" if formula else "mean")
    if estimand in REGRESSIONS and formula is None:
        raise InvalidArgumentError(f"--estimand {estimand} needs --formula, e.g. --formula \"y ~ x1 + x2\"")
    if estimand not in REGRESSIONS and formula is not None:
        raise InvalidArgumentError(f"--formula is for the regressions (--estimand ols, logistic or poisson); "
                                   f"--estimand {estimand} takes --y alone")
    if formula is not None and y_col is None:
        from .. import fe

        with cli_names(fml="--formula", formula="--formula"):
            y_col = fe.parse_formula(formula).outcome_column
        if y_col is None:
            raise InvalidArgumentError(f"--formula {formula!r}: its outcome must be a column (the human answers)")
    if y_col is None:
        raise InvalidArgumentError("--y is missing: give the column of the human answers")
    if q is not None and estimand != "quantile":
        raise InvalidArgumentError(f"--q is the quantile of --estimand quantile; --estimand {estimand} takes none")
    if estimand == "quantile":
        q = 0.5 if q is None else q
        if method == "ppi++":
            raise InvalidArgumentError("--method ppi++: a quantile has no power tuning; use --method ppi (its "
                                       "default) or classical")
        method = method or "ppi"
    method = method or "ppi++"
    if coord is not None and (estimand not in REGRESSIONS or method != "ppi++"):
        raise InvalidArgumentError("--coord chooses the coefficient lambda is tuned for: it needs a regression "
                                   "(--formula) with --method ppi++")
    check_output_dir(out_dir, files=OUTPUTS, inputs=[data_path])
    frame = read_table(data_path)
    if len(frame) == 0:
        raise InvalidArgumentError(f"--data {data_path.name} has no rows")
    for col, option in ((y_col, "--y"), (pred_col, "--prediction"), (weight_col, "--weights"),
                        (cluster_col, "--cluster")):
        if col is not None:
            _need_column(frame, col, option, data_path)
    if len({c for c in (y_col, pred_col) if c is not None}) < 2:
        raise InvalidArgumentError(f"--y and --prediction name the same column {y_col!r}; --prediction is the LLM's "
                                   "answers, --y the human ones")
    labelled, y_all = _split(frame, y_col, data_path)
    yhat_all = _numbers(frame, pred_col, "--prediction", data_path, allow_empty=False,
                        what="the LLM's answer must be a finite number on every row (drop the rows without one)")
    w_all = None
    if weight_col is not None:
        w_all = _numbers(frame, weight_col, "--weights", data_path, allow_empty=False,
                         what="survey weights must be finite positive numbers on every row")
        bad = np.flatnonzero(w_all <= 0)
        if bad.size:
            i = int(bad[0])
            raise InvalidArgumentError(f"--weights {weight_col!r}: {_row(frame, i)} of --data {data_path.name} holds "
                                       f"{_value(frame[weight_col].iloc[i])!r}; survey weights must be positive "
                                       "(drop the rows of weight 0)")
    ids_all = None
    if cluster_col is not None:
        empty = np.flatnonzero(frame[cluster_col].isna().to_numpy())
        if empty.size:
            raise InvalidArgumentError(f"--cluster {cluster_col!r}: {_row(frame, int(empty[0]))} of --data "
                                       f"{data_path.name} has no cluster id (an empty cell)")
        ids_all = frame[cluster_col].to_numpy(object)
    form = X = X_u = None
    if formula is not None:
        form, X, X_u = _regression_inputs(frame, labelled, formula, y_col, data_path)
        if form.fixef and estimand != "ols":
            raise InvalidArgumentError(f"--formula {formula!r}: fixed effects (after '|') are for --estimand ols "
                                       f"(ppi.feols); for --estimand {estimand} write them as C(firm)")
    if estimand in ("logistic", "poisson"):
        _check_range(frame, labelled, y_all, yhat_all, estimand, y_col, pred_col, data_path)
    n, N = int(labelled.sum()), int((~labelled).sum())
    click.echo(f"{n} labelled rows (an answer in --y {y_col!r}) and {N} unlabelled rows (--y empty) in --data "
               f"{data_path.name}", err=True)
    manifest = start_run([("--data", data_path)])
    y, yhat, yhat_u = y_all[labelled], yhat_all[labelled], yhat_all[~labelled]
    w = wu = None
    if w_all is not None:
        w, wu = w_all[labelled], w_all[~labelled]
    cl = clu = None
    if ids_all is not None:
        cl, clu = ids_all[labelled], ids_all[~labelled]
    names = cli_names(y=f"--y {y_col!r}", yhat=f"--prediction {pred_col!r}",
                      yhat_unlabeled=f"--prediction {pred_col!r} (unlabelled rows)", method="--method",
                      level="--level", q="--q", coord="--coord", weights="--weights", weights_unlabeled="--weights",
                      cluster="--cluster", cluster_unlabeled="--cluster", formula="--formula", X="--formula",
                      X_unlabeled="--formula", labeled=f"--data {data_path.name} (labelled rows)",
                      unlabeled=f"--data {data_path.name} (unlabelled rows)", prediction="--prediction",
                      vcov="--cluster", lam="--method")
    with cli_warnings(names), names:
        if estimand == "mean":
            res = ppi.mean(y, yhat, yhat_u, method=method, level=level, weights=w, weights_unlabeled=wu,
                           cluster=cl, cluster_unlabeled=clu)
        elif estimand == "quantile":
            res = ppi.quantile(y, yhat, yhat_u, q, method=method, level=level, weights=w, weights_unlabeled=wu,
                               cluster=cl, cluster_unlabeled=clu)
        elif form.fixef:
            labeled_rows = frame[labelled].reset_index(drop=True)
            unlabeled_rows = frame[~labelled].reset_index(drop=True)
            labeled_rows[y_col] = y
            res = ppi.feols(formula, labeled_rows, unlabeled_rows, prediction=pred_col, method=method, level=level,
                            coord=coord, weights=weight_col,
                            vcov="hetero" if cluster_col is None else {"CRV1": cluster_col})
        else:
            fn = {"ols": ppi.ols, "logistic": ppi.logistic, "poisson": ppi.poisson}[estimand]
            res = fn(X, y, yhat, X_u, yhat_u, method=method, level=level, coord=coord, weights=w,
                     weights_unlabeled=wu, intercept=False, cluster=cl, cluster_unlabeled=clu)
    click.echo(res.summary().as_text())
    write_frame(out_dir / "ppi_table.csv", res.tidy())
    write_text(out_dir / "ppi_result.json", res.to_json())
    written = ["ppi_table.csv", "ppi_result.json"]
    if not no_plot:
        use_agg_backend()
        save_figure(res.plot(), out_dir / "ppi_plot.png", dpi=130)
        written.append("ppi_plot.png")
    write_run_json(out_dir / RUN_JSON, manifest, {"estimand": res.estimand, "method": method, "n": n, "N": N,
                                                  "y": y_col, "prediction": pred_col, "formula": formula})
    written.append(RUN_JSON)
    click.echo(f"\nWrote {', '.join(written)} to {out_dir}/")
