"""Reference cases for llmsurrogate.ppi from ppi_py 0.2.3: tests/ppi/data/ppi_py_cases.json.

Run with the interpreter of the venv that holds ppi_py (``make ppi-venv``)::

    .venv-ppi/bin/python tests/ppi/make_ppi_cases.py

Each case names a data recipe (:func:`make_inputs`: a kind, a seed, sizes and the prediction's
quality; the data are drawn again from the seed by the test, so the fixture holds no data, only a
checksum that tells when numpy's streams changed) and one call of ppi_py: the interval
(``ppi_*_ci``, ``exact_grid=True`` for quantiles, the ``classical_*_ci`` baselines), the point
estimate and lambda-hat. ppi_py's intervals do not return lambda-hat; it is recomputed here by
replaying ppi_py's own steps with its own functions (``_calc_lam_glm`` after ``ppi_*_pointestimate``
and ``_*_get_stats``), and the replay is checked against the interval: the interval at the replayed
lambda equals the interval with ``lam=None`` (to 1e-12; 1e-10 for logistic and Poisson, whose
L-BFGS-B path moves with the last bits of lambda), or the case is not written.

Where ppi_py is wrong (docs/methods/ppi.md §7) the case records what ppi_py gives and, from
ppi_py's own pieces, the right value:

* ``mean_pval``: ``ppi_mean_pval`` at the interval's ends with ``lam=None`` (unclipped lambda) and
  with the interval's clipped lambda;
* ``coord``: the logistic and Poisson intervals with ``coord`` (which ppi_py ignores) and the
  interval at lambda-hat tuned for ``coord`` (``_calc_lam_glm(..., coord)`` in both steps).

No ppi_py code is copied into llmsurrogate; this script only calls it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "data" / "ppi_py_cases.json"
PPI_PY_VERSION = "0.2.3"


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def make_inputs(spec: dict) -> dict:
    """The arrays of one case, drawn from ``spec["seed"]`` (numpy's default_rng): ``y``, ``yhat``,
    ``yhat_unlabeled``, for regressions ``X`` and ``X_unlabeled``, and ``w`` / ``w_unlabeled`` when
    ``spec["weights"]``. ``quality``: ``good`` (yhat = y plus noise), ``shrunk`` (half of y plus noise:
    the unclipped lambda-hat is above 1), ``anti`` (minus y: below 0), ``useless`` (noise)."""
    rng = np.random.default_rng(spec["seed"])
    kind, n, N = spec["kind"], spec["n"], spec["N"]
    quality = spec.get("quality", "good")
    out: dict = {}
    m = n + N
    if kind in ("mean", "quantile"):
        k = spec.get("k", 1)
        if k == 1 and spec.get("binary"):
            y = rng.binomial(1, 0.3, m).astype(float)
            yhat = np.clip(0.7 * y + 0.15 + rng.normal(0, 0.35, m), 0, 1)
        elif k == 1 and spec.get("discrete"):
            y = rng.integers(0, 11, m).astype(float)
            yhat = np.clip(y + rng.integers(-2, 3, m), 0, 10).astype(float)
        elif k == 1:
            y = rng.lognormal(0.0, 0.7, m) if kind == "quantile" else rng.normal(1.0, 1.0, m)
            noise = rng.normal(0.0, 0.6, m)
            yhat = {"good": y + noise, "shrunk": 0.5 * y + 0.2 * noise, "anti": -y + noise,
                    "useless": noise}[quality]
        else:
            probs = np.array([0.5, 0.3, 0.2, 0.1, 0.05][:k])
            probs = probs / probs.sum()
            answers = rng.choice(k, size=m, p=probs)
            y = np.eye(k)[answers]
            guess = np.where(rng.uniform(size=m) < 0.6, answers, rng.integers(0, k, m))  # right 60% + chance
            yhat = 0.8 * np.eye(k)[guess] + 0.2 * rng.dirichlet(np.ones(k), size=m)
        out["y"], out["yhat"], out["yhat_unlabeled"] = y[:n], yhat[:n], yhat[n:]
    else:
        d = spec.get("d", 3)
        X = np.column_stack([np.ones(m), rng.normal(size=(m, d - 1))])
        beta = np.array([0.3, 0.8, -0.5, 0.25, 0.1][:d])
        eta = X @ beta
        if kind == "ols":
            y = eta + rng.normal(size=m)
            noise = rng.normal(0.0, 0.8, m)
            yhat = {"good": y + noise, "shrunk": 0.5 * y + noise, "anti": -y + noise, "useless": noise}[quality]
        elif kind == "logistic":
            y = rng.binomial(1, _expit(eta)).astype(float)
            if spec.get("hard"):   # 0/1 answers, right 80% of the time
                flip = rng.uniform(size=m) < 0.2
                yhat = np.where(flip, 1 - y, y)
            else:                  # probabilities
                yhat = _expit(0.5 * eta + (y - 0.5) + rng.normal(0.0, 1.5, m))
        else:
            y = rng.poisson(np.exp(eta)).astype(float)
            yhat = np.maximum(y + rng.normal(0.0, 1.5, m), 0.0)
        out["X"], out["X_unlabeled"] = X[:n], X[n:]
        out["y"], out["yhat"], out["yhat_unlabeled"] = y[:n], yhat[:n], yhat[n:]
    if spec.get("weights"):
        out["w"] = rng.uniform(0.5, 2.0, n)
        out["w_unlabeled"] = rng.uniform(0.5, 2.0, N)
    return out


def checksum(inputs: dict) -> dict:
    """The sum and first value of every array: a changed random stream shows here first."""
    return {k: [float(np.sum(v)), float(np.ravel(v)[0])] for k, v in sorted(inputs.items())}


# --- the cases -------------------------------------------------------------------------------------

def _cases() -> list[dict]:
    cases = []

    def add(case_id, data, **call):
        cases.append({"id": case_id, "data": data, "call": call})

    base = {"kind": "mean", "n": 300, "N": 3000}
    add("mean_good_tuned", {**base, "seed": 1}, method="ppi++", alpha=0.1)
    add("mean_good_tuned_weighted", {**base, "seed": 2, "weights": True}, method="ppi++", alpha=0.05)
    add("mean_good_ppi", {**base, "seed": 3}, method="ppi", alpha=0.1)
    add("mean_good_lam_fixed", {**base, "seed": 4}, method="ppi++", lam=0.5, alpha=0.1)
    add("mean_lam_zero", {**base, "seed": 4}, method="ppi++", lam=0.0, alpha=0.1)
    add("mean_classical", {**base, "seed": 5}, method="classical", alpha=0.1)
    add("mean_classical_weighted", {**base, "seed": 6, "weights": True}, method="classical", alpha=0.05)
    add("mean_anti_clipped_to_0", {**base, "seed": 7, "quality": "anti"}, method="ppi++", alpha=0.1)
    add("mean_shrunk_clipped_to_1", {**base, "seed": 8, "quality": "shrunk"}, method="ppi++", alpha=0.1)
    add("mean_useless", {**base, "seed": 9, "quality": "useless"}, method="ppi++", alpha=0.1)
    add("mean_binary_share", {**base, "seed": 10, "binary": True}, method="ppi++", alpha=0.1)
    add("mean_binary_share_weighted", {**base, "seed": 11, "binary": True, "weights": True}, method="ppi++",
        alpha=0.1)
    kb = {**base, "k": 3}
    add("shares_k3_overall", {**kb, "seed": 12}, method="ppi++", lam_mode="overall", alpha=0.1)
    add("shares_k3_element", {**kb, "seed": 12}, method="ppi++", lam_mode="element", alpha=0.1)
    add("shares_k3_overall_weighted", {**kb, "seed": 13, "weights": True}, method="ppi++", lam_mode="overall",
        alpha=0.05)
    add("shares_k3_element_weighted", {**kb, "seed": 13, "weights": True}, method="ppi++", lam_mode="element",
        alpha=0.05)
    add("shares_k4_element", {**kb, "k": 4, "seed": 14}, method="ppi++", lam_mode="element", alpha=0.1)
    add("shares_k3_ppi", {**kb, "seed": 15}, method="ppi", alpha=0.1)
    add("shares_k3_classical", {**kb, "seed": 15}, method="classical", alpha=0.1)

    qb = {"kind": "quantile", "n": 300, "N": 2000}
    add("quantile_median", {**qb, "seed": 20}, method="ppi", q=0.5, alpha=0.1)
    add("quantile_q90_weighted", {**qb, "seed": 21, "weights": True}, method="ppi", q=0.9, alpha=0.05)
    add("quantile_q25_ties", {**qb, "seed": 22, "discrete": True}, method="ppi", q=0.25, alpha=0.1)
    add("quantile_q75_useless", {**qb, "seed": 23, "quality": "useless"}, method="ppi", q=0.75, alpha=0.1)
    add("quantile_classical_median", {**qb, "seed": 20}, method="classical", q=0.5, alpha=0.1)
    add("quantile_classical_q10", {**qb, "seed": 24}, method="classical", q=0.1, alpha=0.05)

    ob = {"kind": "ols", "n": 300, "N": 3000, "d": 3}
    add("ols_tuned", {**ob, "seed": 30}, method="ppi++", alpha=0.1)
    add("ols_tuned_coord1", {**ob, "seed": 30}, method="ppi++", coord=1, alpha=0.1)
    add("ols_tuned_coord2_weighted", {**ob, "seed": 31, "weights": True}, method="ppi++", coord=2, alpha=0.1)
    add("ols_tuned_weighted", {**ob, "seed": 31, "weights": True}, method="ppi++", alpha=0.05)
    add("ols_ppi", {**ob, "seed": 32}, method="ppi", alpha=0.1)
    add("ols_lam_fixed", {**ob, "seed": 33}, method="ppi++", lam=0.3, alpha=0.1)
    add("ols_lam_zero", {**ob, "seed": 33}, method="ppi++", lam=0.0, alpha=0.1)
    add("ols_classical", {**ob, "seed": 34}, method="classical", alpha=0.1)
    add("ols_classical_weighted", {**ob, "seed": 35, "weights": True}, method="classical", alpha=0.1)
    add("ols_anti", {**ob, "seed": 36, "quality": "anti"}, method="ppi++", alpha=0.1)
    add("ols_d5_shrunk", {**ob, "d": 5, "seed": 37, "quality": "shrunk"}, method="ppi++", alpha=0.1)

    lb = {"kind": "logistic", "n": 400, "N": 3000, "d": 3}
    add("logistic_tuned", {**lb, "seed": 40}, method="ppi++", alpha=0.1)
    add("logistic_tuned_hard_answers", {**lb, "seed": 41, "hard": True}, method="ppi++", alpha=0.1)
    add("logistic_ppi", {**lb, "seed": 42}, method="ppi", alpha=0.1)
    add("logistic_lam_fixed", {**lb, "seed": 43}, method="ppi++", lam=0.4, alpha=0.1)
    add("logistic_classical", {**lb, "seed": 44}, method="classical", alpha=0.1)
    add("logistic_tuned_weighted", {**lb, "seed": 45, "weights": True}, method="ppi++", alpha=0.05)
    add("logistic_coord1", {**lb, "seed": 46}, method="ppi++", coord=1, alpha=0.1)

    pb = {"kind": "poisson", "n": 400, "N": 3000, "d": 3}
    add("poisson_tuned", {**pb, "seed": 50}, method="ppi++", alpha=0.1)
    add("poisson_ppi", {**pb, "seed": 51}, method="ppi", alpha=0.1)
    add("poisson_lam_fixed", {**pb, "seed": 52}, method="ppi++", lam=0.6, alpha=0.1)
    add("poisson_classical", {**pb, "seed": 53}, method="classical", alpha=0.1)
    add("poisson_tuned_weighted", {**pb, "seed": 54, "weights": True}, method="ppi++", alpha=0.05)
    add("poisson_coord2", {**pb, "seed": 55}, method="ppi++", coord=2, alpha=0.1)
    return cases


# --- ppi_py's numbers -----------------------------------------------------------------------------

def _arr(x) -> list:
    return np.atleast_1d(np.asarray(x, dtype=float)).ravel().tolist()


def _mean_case(a: dict, call: dict) -> dict:
    import ppi_py
    from ppi_py import ppi as P
    from ppi_py.utils import construct_weight_vector, reshape_to_2d

    Y, Yh, Yu = a["y"], a["yhat"], a["yhat_unlabeled"]
    w, wu = a.get("w"), a.get("w_unlabeled")
    alpha, method = call["alpha"], call["method"]
    mode = call.get("lam_mode", "overall")
    if method == "classical":
        if Y.ndim == 1:
            lo, hi = ppi_py.classical_mean_ci(Y, w=w, alpha=alpha)
        else:   # ppi_py's classical mean pools all columns of a matrix: its baseline per column
            lo, hi = zip(*[ppi_py.classical_mean_ci(Y[:, j], w=w, alpha=alpha) for j in range(Y.shape[1])])
        return {"ci_low": _arr(lo), "ci_high": _arr(hi), "lam": [0.0]}
    lam = {"ppi": 1.0}.get(method, call.get("lam"))
    out = {}
    if lam is None:   # replay ppi_mean_ci's lambda: one step from the lambda = 1 estimate
        n, N = Y.shape[0], Yu.shape[0]
        w2 = construct_weight_vector(n, w, vectorized=True)
        wu2 = construct_weight_vector(N, wu, vectorized=True)
        Y2, Yh2, Yu2 = reshape_to_2d(Y), reshape_to_2d(Yh), reshape_to_2d(Yu)
        theta = P.ppi_mean_pointestimate(Y2, Yh2, Yu2, lam=1, w=w2, w_unlabeled=wu2)
        lam_hat = P._calc_lam_glm(w2 * (Y2 - theta), w2 * (Yh2 - theta), wu2 * (Yu2 - theta),
                                  np.eye(Y2.shape[1]), coord=None, clip=True, optim_mode=mode)
        lo, hi = P.ppi_mean_ci(Y, Yh, Yu, alpha=alpha, lam=None, w=w, w_unlabeled=wu, lam_optim_mode=mode)
        lo2, hi2 = P.ppi_mean_ci(Y, Yh, Yu, alpha=alpha, lam=lam_hat, w=w, w_unlabeled=wu)
        assert np.allclose(lo, lo2, rtol=0, atol=1e-12) and np.allclose(hi, hi2, rtol=0, atol=1e-12)
        lam = lam_hat
        if Y.ndim == 1:   # the p-value defect: ppi_mean_pval tunes lambda without the clip
            lam_unclipped = P._calc_lam_glm(w2 * (Y2 - theta), w2 * (Yh2 - theta), wu2 * (Yu2 - theta),
                                            np.eye(1), coord=None, clip=False, optim_mode=mode)
            ends = [float(_arr(lo)[0]), float(_arr(hi)[0])]
            out["mean_pval"] = {
                "lam_unclipped": float(np.ravel(lam_unclipped)[0]), "null": ends,
                "ppi_py_lam_none": [float(np.ravel(P.ppi_mean_pval(Y, Yh, Yu, null=e, lam=None, w=w, w_unlabeled=wu,
                                                                  lam_optim_mode=mode))[0]) for e in ends],
                "ppi_py_lam_clipped": [float(np.ravel(P.ppi_mean_pval(Y, Yh, Yu, null=e, lam=lam, w=w,
                                                                     w_unlabeled=wu))[0]) for e in ends]}
    else:
        lo, hi = P.ppi_mean_ci(Y, Yh, Yu, alpha=alpha, lam=lam, w=w, w_unlabeled=wu)
    est = P.ppi_mean_pointestimate(Y, Yh, Yu, lam=lam, w=w, w_unlabeled=wu)
    out.update({"ci_low": _arr(lo), "ci_high": _arr(hi), "lam": _arr(lam), "estimate": _arr(est)})
    return out


def _quantile_case(a: dict, call: dict) -> dict:
    import ppi_py

    Y, Yh, Yu = a["y"], a["yhat"], a["yhat_unlabeled"]
    w, wu = a.get("w"), a.get("w_unlabeled")
    q, alpha = call["q"], call["alpha"]
    if call["method"] == "classical":
        lo, hi = ppi_py.classical_quantile_ci(Y, q, alpha=alpha)
        return {"ci_low": _arr(lo), "ci_high": _arr(hi), "lam": [0.0]}
    lo, hi = ppi_py.ppi_quantile_ci(Y, Yh, Yu, q, alpha=alpha, exact_grid=True, w=w, w_unlabeled=wu)
    est = ppi_py.ppi_quantile_pointestimate(Y, Yh, Yu, q, exact_grid=True, w=w, w_unlabeled=wu)
    return {"ci_low": _arr(lo), "ci_high": _arr(hi), "lam": [1.0], "estimate": _arr(est)}


_GLM = {"ols": ("ppi_ols_pointestimate", "ppi_ols_ci", "_ols_get_stats"),
        "logistic": ("ppi_logistic_pointestimate", "ppi_logistic_ci", "_logistic_get_stats"),
        "poisson": ("ppi_poisson_pointestimate", "ppi_poisson_ci", "_poisson_get_stats")}


def _replay_lam(kind, a, coord):
    """ppi_py's two tuning steps with its own functions; ``coord`` passed to ``_calc_lam_glm``."""
    from ppi_py import ppi as P

    point, _, stats = (getattr(P, f) for f in _GLM[kind])
    X, Y, Yh, Xu, Yu = a["X"], a["y"], a["yhat"], a["X_unlabeled"], a["yhat_unlabeled"]
    n, N = Y.shape[0], Yu.shape[0]
    w = np.ones(n) if a.get("w") is None else a["w"] / a["w"].sum() * n
    wu = np.ones(N) if a.get("w_unlabeled") is None else a["w_unlabeled"] / a["w_unlabeled"].sum() * N
    lam, steps = 1.0, []
    for _ in range(2):
        kw = {"coord": coord} if kind == "ols" else {}
        theta = point(X, Y, Yh, Xu, Yu, lam=lam, w=w, w_unlabeled=wu, **kw)
        g, gh, ghu, inv_h = stats(theta, X.astype(float), Y, Yh, Xu.astype(float), Yu, w, wu, True)
        lam = float(P._calc_lam_glm(g, gh, ghu, inv_h, coord=coord, clip=True))
        steps.append(lam)
    return lam, steps


def _regression_case(kind: str, a: dict, call: dict) -> dict:
    import ppi_py
    from ppi_py import ppi as P

    point, ci, _ = (getattr(P, f) for f in _GLM[kind])
    X, Y, Yh, Xu, Yu = a["X"], a["y"], a["yhat"], a["X_unlabeled"], a["yhat_unlabeled"]
    w, wu = a.get("w"), a.get("w_unlabeled")
    alpha, method, coord = call["alpha"], call["method"], call.get("coord")
    if method == "classical":
        if kind == "ols":
            lo, hi = ppi_py.classical_ols_ci(X, Y, w=w, alpha=alpha)
        else:
            assert w is None, "ppi_py's classical logistic and Poisson intervals take no weights"
            lo, hi = getattr(ppi_py, f"classical_{kind}_ci")(X, Y, alpha=alpha)
        return {"ci_low": _arr(lo), "ci_high": _arr(hi), "lam": [0.0]}
    lam = {"ppi": 1.0}.get(method, call.get("lam"))
    out = {}
    if lam is None:
        lam_ppi, steps = _replay_lam(kind, a, coord if kind == "ols" else None)
        lo, hi = ci(X, Y, Yh, Xu, Yu, alpha=alpha, lam=None, coord=coord, w=w, w_unlabeled=wu)
        lo2, hi2 = ci(X, Y, Yh, Xu, Yu, alpha=alpha, lam=lam_ppi, coord=coord, w=w, w_unlabeled=wu)
        tol = 1e-12 if kind == "ols" else 1e-10   # L-BFGS-B's path moves with the last bits of lambda
        assert np.allclose(lo, lo2, rtol=0, atol=tol) and np.allclose(hi, hi2, rtol=0, atol=tol), kind
        out["lam_steps"] = steps
        if coord is not None and kind != "ols":   # the coord defect: ppi_py ignores it; the right value
            lam_right, steps_right = _replay_lam(kind, a, coord)
            lo_r, hi_r = ci(X, Y, Yh, Xu, Yu, alpha=alpha, lam=lam_right, w=w, w_unlabeled=wu)
            est_r = point(X, Y, Yh, Xu, Yu, lam=lam_right, w=w, w_unlabeled=wu)
            out["coord_defect"] = {"lam_right": lam_right, "lam_steps_right": steps_right, "ci_low_right": _arr(lo_r),
                                   "ci_high_right": _arr(hi_r), "estimate_right": _arr(est_r)}
        lam = lam_ppi
    else:
        lo, hi = ci(X, Y, Yh, Xu, Yu, alpha=alpha, lam=lam, w=w, w_unlabeled=wu)
    est = point(X, Y, Yh, Xu, Yu, lam=lam, w=w, w_unlabeled=wu)
    out.update({"ci_low": _arr(lo), "ci_high": _arr(hi), "lam": [float(lam)], "estimate": _arr(est)})
    return out


def main() -> None:
    from importlib.metadata import version

    import ppi_py  # noqa: F401

    if version("ppi-python") != PPI_PY_VERSION:
        sys.exit(f"ppi_py {version('ppi-python')} is installed; the cases are for {PPI_PY_VERSION}")
    cases = []
    for case in _cases():
        a = make_inputs(case["data"])
        kind = case["data"]["kind"]
        if kind == "mean":
            expect = _mean_case(a, case["call"])
        elif kind == "quantile":
            expect = _quantile_case(a, case["call"])
        else:
            expect = _regression_case(kind, a, case["call"])
        cases.append({**case, "checksum": checksum(a), "expect": expect})
        print(f"{case['id']}: lam {expect['lam']}", flush=True)
    OUT.parent.mkdir(exist_ok=True)
    payload = {"generator": "tests/ppi/make_ppi_cases.py", "ppi_python": PPI_PY_VERSION,
               "numpy": np.__version__, "cases": cases}
    OUT.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"{len(cases)} cases -> {OUT}")


if __name__ == "__main__":
    main()
