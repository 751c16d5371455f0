"""Reference cases for ``llmsurrogate.ppi.crossfit`` from ppi_py 0.2.3's cross-prediction functions
(``crossppi_mean_ci``, ``crossppi_ols_ci``, ``crossppi_logistic_ci`` and their point estimates):
tests/ppi/data/crossppi_cases.json.

Run with the interpreter of the venv that holds ppi_py (``make ppi-venv``)::

    .venv-ppi/bin/python tests/ppi/make_crossppi_cases.py

ppi_py's functions take the cross-fitted predictions as given (``Yhat``: each labelled row's
out-of-fold prediction; ``Yhat_unlabeled``: N x K, one column per fold model); this script makes
them the way the paper describes (Zrnic & Candès 2024): the data are drawn from the case's seed by
:func:`make_inputs`, the labelled rows dealt to K folds by :func:`fold_ids`, and for each fold a
scikit-learn model (``LinearRegression``, or ``LogisticRegression`` with a tight tolerance) is
fitted on the other folds. The test draws the same data and folds, runs ``ppi.crossfit`` with the
same model and the fold ids, and compares: the predictions (through their sums, stored here), the
point estimate and the interval. The fixture holds no data.

No ppi_py code is copied into llmsurrogate; this script only calls it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "data" / "crossppi_cases.json"
PPI_PY_VERSION = "0.2.3"


def make_inputs(spec: dict) -> dict:
    """Features ``X`` (n x p), answers ``y`` (n) and features ``X_unlabeled`` (N x p) drawn from
    ``spec["seed"]``; for ``kind="logistic"`` 0/1 answers, else a linear outcome with noise. The
    regressions regress ``y`` on ``Z`` = a constant and the first two features."""
    rng = np.random.default_rng(spec["seed"])
    n, N, p = spec["n"], spec["N"], spec.get("p", 4)
    m = n + N
    X = rng.normal(size=(m, p))
    beta = np.array([1.0, -0.5, 0.5, 0.25, 0.1, -0.2][:p])
    eta = X @ beta + (0.3 * X[:, 0] ** 2 if spec.get("nonlinear") else 0.0)
    if spec["kind"] == "logistic":
        y = rng.binomial(1, 1 / (1 + np.exp(-eta))).astype(float)
    else:
        y = eta + rng.normal(0, spec.get("noise", 1.0), m)
    Z = np.column_stack([np.ones(m), X[:, :2]])
    return {"X": X[:n], "y": y[:n], "X_unlabeled": X[n:], "Z": Z[:n], "Z_unlabeled": Z[n:]}


def fold_ids(spec: dict) -> np.ndarray:
    """The fold (0..K-1) of each labelled row: a permutation from ``seed + 1`` dealt round robin."""
    return np.random.default_rng(spec["seed"] + 1).permutation(spec["n"]) % spec["K"]


def model(spec: dict):
    from sklearn.linear_model import LinearRegression, LogisticRegression

    if spec["kind"] == "logistic":
        return LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000)
    return LinearRegression()


def _cross_fit(spec: dict, a: dict) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.base import clone

    codes = fold_ids(spec)
    n, K = spec["n"], spec["K"]
    yhat = np.empty(n)
    Yhat_u = np.empty((a["X_unlabeled"].shape[0], K))
    for k in range(K):
        m = clone(model(spec)).fit(a["X"][codes != k], a["y"][codes != k])
        if spec["kind"] == "logistic":
            yhat[codes == k] = m.predict_proba(a["X"][codes == k])[:, 1]
            Yhat_u[:, k] = m.predict_proba(a["X_unlabeled"])[:, 1]
        else:
            yhat[codes == k] = m.predict(a["X"][codes == k])
            Yhat_u[:, k] = m.predict(a["X_unlabeled"])
    return yhat, Yhat_u


def _cases() -> list[dict]:
    return [
        {"id": "mean_linear", "data": {"kind": "linear", "estimand": "mean", "seed": 11, "n": 200, "N": 3000, "K": 10},
         "alpha": 0.1},
        {"id": "mean_nonlinear_k5", "data": {"kind": "linear", "estimand": "mean", "seed": 12, "n": 150, "N": 2000,
                                              "K": 5, "nonlinear": True, "noise": 2.0}, "alpha": 0.05},
        {"id": "mean_binary", "data": {"kind": "logistic", "estimand": "mean", "seed": 13, "n": 240, "N": 2500,
                                        "K": 10}, "alpha": 0.1},
        {"id": "ols_k10", "data": {"kind": "linear", "estimand": "ols", "seed": 14, "n": 300, "N": 4000, "K": 10},
         "alpha": 0.1},
        {"id": "ols_k3", "data": {"kind": "linear", "estimand": "ols", "seed": 15, "n": 120, "N": 1500, "K": 3,
                                   "p": 5}, "alpha": 0.05},
        {"id": "logistic_k10", "data": {"kind": "logistic", "estimand": "logistic", "seed": 16, "n": 400, "N": 3000,
                                         "K": 10}, "alpha": 0.1},
    ]


def main() -> None:
    from importlib.metadata import version

    import ppi_py

    if version("ppi-python") != PPI_PY_VERSION:
        sys.exit(f"ppi-python {version('ppi-python')} installed; these cases are for {PPI_PY_VERSION}")
    out = []
    for case in _cases():
        spec = case["data"]
        a = make_inputs(spec)
        yhat, Yhat_u = _cross_fit(spec, a)
        alpha = case["alpha"]
        if spec["estimand"] == "mean":
            est = ppi_py.crossppi_mean_pointestimate(a["y"], yhat, Yhat_u)
            ci = ppi_py.crossppi_mean_ci(a["y"], yhat, Yhat_u, alpha=alpha)
        elif spec["estimand"] == "ols":
            est = ppi_py.crossppi_ols_pointestimate(a["Z"], a["y"], yhat, a["Z_unlabeled"], Yhat_u)
            ci = ppi_py.crossppi_ols_ci(a["Z"], a["y"], yhat, a["Z_unlabeled"], Yhat_u, alpha=alpha)
        else:
            opts = {"ftol": 1e-15}
            est = ppi_py.crossppi_logistic_pointestimate(a["Z"], a["y"], yhat, a["Z_unlabeled"], Yhat_u, opts)
            ci = ppi_py.crossppi_logistic_ci(a["Z"], a["y"], yhat, a["Z_unlabeled"], Yhat_u, alpha=alpha,
                                             optimizer_options=opts)
        out.append({**case, "predictions": {"yhat_sum": float(yhat.sum()), "yhat_sq_sum": float((yhat ** 2).sum()),
                                            "Yhat_unlabeled_col_sums": Yhat_u.sum(axis=0).tolist()},
                    "expected": {"estimate": np.atleast_1d(est).astype(float).tolist(),
                                 "ci_low": np.atleast_1d(ci[0]).astype(float).tolist(),
                                 "ci_high": np.atleast_1d(ci[1]).astype(float).tolist()}})
    OUT.write_text(json.dumps({"ppi_python": PPI_PY_VERSION, "generator": "tests/ppi/make_crossppi_cases.py",
                               "cases": out}, indent=1) + "\n")
    print(f"wrote {len(out)} cases to {OUT}")


if __name__ == "__main__":
    main()
