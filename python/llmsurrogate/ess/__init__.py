"""Equivalent sample size (ESS): how many domain observations is a fixed prediction rule worth?

Gao, Han & Liang (2026), "How Well Do LLMs Predict Human Behavior? A Measure of their Pretrained
Knowledge"; the reference is ``shared/specs/ess.md``.

* :func:`error_curve` -- block-out CV error curve N -> e_N with pointwise CIs (fixed-N, fixed-B or
  hybrid variance).
* :func:`equivalent_sample_size` -- one-sided tests of H_{0,N}: e_N <= e^LLM on the difference loss
  and the sequential lower confidence bound for N* (Algorithm 3.1).
* :func:`cate_ess` -- the ESS of an LLM's treatment-effect predictions via the IPW transformed
  outcome Y* = Y (D - pi) / (pi (1 - pi)) (spec §7).

Procedure: the data are permuted once with the documented SplitMix64/Fisher-Yates permutation of
``seed`` (``seed=None`` keeps the data's order); for each grid size N the first B*N rows are cut into
B = floor(n/N) blocks; the algorithm is fitted on each block (joblib over blocks; any joblib backend,
e.g. Dask) and evaluated on the complement; the Rust core streams the losses into the block errors
and the observation-level out-of-block losses and computes the variance components.

>>> import numpy as np, pandas as pd
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame({"y": rng.normal(size=400)})
>>> df["llm"] = 0.3                              # a constant "LLM" prediction, off by 0.3
>>> res = equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=[1, 2, 5, 10, 20], seed=1)
>>> res.lower_bound >= 1
True
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .._validation import check_choice, check_flag, check_int, check_n_jobs, check_probability
from ..exceptions import InvalidArgumentError
from . import _engine
from ._engine import HYBRID_MIN_BLOCKS, LOSSES, REGIMES, TUNINGS, VARIANCES, default_grid
from ._learners import RF_GRID, LOGIT_C_GRID, Learner, block_seed, resolve_learner
from ._results import ErrorCurve, EssResult

__all__ = ["error_curve", "equivalent_sample_size", "cate_ess", "arm_ess", "transformed_outcome", "permutation",
           "ErrorCurve", "EssResult", "default_grid", "LOSSES", "REGIMES", "TUNINGS", "VARIANCES",
           "RF_GRID", "LOGIT_C_GRID"]


def permutation(n: int, seed: int) -> np.ndarray:
    """The permutation used for ``seed`` (row k of the permuted data is row ``perm[k]``).

    SplitMix64 (state += 0x9E3779B97F4A7C15; z = (z ^ z>>30) * 0xBF58476D1CE4E5B9;
    z = (z ^ z>>27) * 0x94D049BB133111EB; z ^ z>>31) seeded with ``seed``, then Fisher-Yates from the
    top: for i = n-1..1 swap i with j, j uniform on 0..i by rejection (draw r until
    r >= (2^64 - (i+1)) mod (i+1), j = r mod (i+1)).
    """
    from .. import _core

    n = check_int(n, "n", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    return _core.ess_permutation(n, seed)


def _versions() -> dict:
    import platform

    import joblib
    import sklearn

    from .. import __version__

    return {"llmsurrogate": __version__, "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "joblib": joblib.__version__, "python": platform.python_version()}


def _algo_name(algorithm: Any) -> str:
    return algorithm if isinstance(algorithm, str) else type(algorithm).__name__


def _common_checks(alpha, regime, tuning, n_jobs, hybrid_min_blocks):
    alpha = check_probability(alpha, "alpha", low=0.0, high=0.5, high_open=False)
    regime = check_choice(regime, "regime", REGIMES)
    tuning = check_choice(tuning, "tuning", TUNINGS)
    n_jobs = check_n_jobs(n_jobs)
    hmb = check_int(hybrid_min_blocks, "hybrid_min_blocks", minimum=3)
    return alpha, regime, tuning, n_jobs, hmb


_BIAS_NOTE = ("Fixed-N variances bias-corrected: + 2 V_test / (B - 1) (spec §4.6; an extension, not in the "
              "paper).")


def _run_points(prep, learner, grid, tuning, seed, n_jobs, with_llm, progress=None, cache=None, on_point=None):
    points = []
    pending = [int(N) for N in grid if cache is None or int(N) not in cache]
    tuned = _engine.tune_grid(prep, learner, pending, tuning, seed, n_jobs)
    for N in grid:
        key = int(N)
        if cache is not None and key in cache:
            points.append(cache[key])
            if progress is not None:
                progress("cached", key, 1, 1)
            continue
        cb = None if progress is None else (lambda done, total, _N=key: progress("blocks", _N, done, total))
        pt = _engine.run_point(prep, learner, key, tuning, seed, n_jobs, with_llm, cb, params=tuned.get(key))
        if on_point is not None:
            on_point(pt)
        points.append(pt)
    return points


def _perm_field(prep):
    if prep.perm is None or prep.n > 200_000:
        return None
    return np.asarray(prep.perm, dtype=np.int64)


def _checked_grid(grid, n, regime, hmb):
    """The validated grid; with ``regime="fixed_N"`` every grid size must leave enough blocks."""
    grid = _engine.check_grid(grid, n)
    if regime == "fixed_N":
        for N in grid:
            _engine.uses_fixed_n(regime, n // N, hmb)
    return grid


def error_curve(data, outcome: str, features=None, algorithm: Any = "rf", grid=None, loss: Any = "squared",
                regime: str = "hybrid", tuning: str = "per_n_subset", seed: int | None = 0,
                n_jobs: int | None = None, *, alpha: float = 0.05, hybrid_min_blocks: int = HYBRID_MIN_BLOCKS,
                algorithm_options: dict | None = None, progress: Callable | None = None, missing: str = "error",
                bias_correct: bool = False, _cache: dict | None = None, _on_point: Callable | None = None) -> ErrorCurve:
    """Block-out CV error curve of ``algorithm`` on ``data`` (spec §2-§5).

    ``algorithm``: "rf", "lasso", "logit_l1" (paper App. C, per-N tuning grids and small-N
    safeguards), "mean"/"majority" (native learners for validation) or any scikit-learn estimator.
    ``loss``: "squared", "absolute", "zero_one", "brier", "log" (clipped at 1e-6) or a callable
    ``loss(pred, y) -> per-observation losses``. ``regime``: "hybrid" (fixed-N variance (4.5) when
    B >= ``hybrid_min_blocks``, our provisional default 40, else fixed-B (B.2)), "fixed_N" or
    "fixed_B". ``tuning``: "per_n_subset" (paper: tune on a random subset of size N, reuse for all
    blocks), "per_block" (nested CV inside each block) or "none". The table has one row per grid
    point with ``error``, ``se_fixed_n``, ``se_fixed_b``, ``se`` (the regime's), the two-sided
    (1 - alpha) CI, the variance components and, for squared loss, the RMSE with a delta-method SE.
    ``bias_correct=True`` adds 2 V_test / (B - 1) to the fixed-N variance (spec §4.6: (4.5)
    underestimates it when B is small; an extension, not in the paper).
    """
    alpha, regime, tuning, n_jobs, hmb = _common_checks(alpha, regime, tuning, n_jobs, hybrid_min_blocks)
    bias_correct = check_flag(bias_correct, "bias_correct")
    prep = _engine.prepare(data, outcome, None, features, loss, seed, missing=missing)
    learner = resolve_learner(algorithm, prep.loss_name, algorithm_options)
    grid = _checked_grid(grid, prep.n, regime, hmb)
    points = _run_points(prep, learner, grid, tuning, seed, n_jobs, False, progress, _cache, _on_point)
    if bias_correct:
        points = _engine.bias_corrected(points)
    table = _engine.curve_table(points, alpha, regime, hmb, prep.loss_name)
    table["params"] = [str(p.get("params", {})) for p in points]
    viol = _engine.monotonicity_violations(table)
    notes = ["Hybrid threshold (B >= %d uses fixed-N) is the package's provisional choice; the paper's value "
             "was lost in extraction." % hmb] if regime == "hybrid" else []
    if bias_correct:
        notes.append(_BIAS_NOTE)
    return ErrorCurve(title=f"Error curve: {_algo_name(algorithm)}, {prep.loss_name} loss, n = {prep.n}",
                      table=table, algorithm=_algo_name(algorithm), loss=prep.loss_name, regime=regime,
                      alpha=alpha, n=prep.n, seed=seed, grid=list(grid), tuning=tuning,
                      permutation_hash=_engine.permutation_hash(prep.perm, prep.n), permutation=_perm_field(prep),
                      versions=_versions(), monotonicity_violations=viol, notes=notes, bias_correct=bias_correct)


def equivalent_sample_size(data, outcome: str, prediction, features=None, algorithm: Any = "rf", grid=None,
                           loss: Any = "squared", alpha: float = 0.05, variance: str = "difference",
                           regime: str = "hybrid", tuning: str = "per_n_subset", seed: int | None = 0,
                           n_jobs: int | None = None, *, hybrid_min_blocks: int = HYBRID_MIN_BLOCKS,
                           algorithm_options: dict | None = None, progress: Callable | None = None,
                           missing: str = "error", bias_correct: bool = False, _cache: dict | None = None,
                           _on_point: Callable | None = None, _y: np.ndarray | None = None,
                           _exclude: tuple = ()) -> EssResult:
    """ESS of the fixed rule ``prediction`` against ``algorithm`` (Algorithm 3.1 of the paper).

    ``prediction``: a column of ``data``, an array aligned with ``data``, or an object with
    ``predict(frame)`` (called once on ``data``). For each grid size N the one-sided z-test of
    H_{0,N}: e_N <= e^LLM uses the block-out estimate of the difference loss on the retained
    B*N rows; ``variance="difference"`` uses (4.6) / fixed-B (B.2) on the difference losses,
    ``variance="sum"`` the conservative sigma^2_N + sigma^2_LLM (4.7). The scan stops at the first
    non-rejection k and returns lower_bound = N_{k-1} + 1 (N_0 = 0); a valid one-sided (1 - alpha)
    CI [lower_bound, inf) for N* when the error curve is nonincreasing. ``missing="drop"`` removes
    rows with a missing or infinite outcome, prediction or feature (with a warning; valid only when
    missingness is unrelated to the data, e.g. unparseable LLM answers at random); the default
    raises. ``bias_correct=True`` corrects the fixed-N variances of both losses as in
    :func:`error_curve`. All other arguments as in :func:`error_curve`.
    """
    alpha, regime, tuning, n_jobs, hmb = _common_checks(alpha, regime, tuning, n_jobs, hybrid_min_blocks)
    variance = check_choice(variance, "variance", VARIANCES)
    bias_correct = check_flag(bias_correct, "bias_correct")
    if prediction is None:
        raise InvalidArgumentError("argument `prediction` is required: a column name, an array, or an object with predict()")
    prep = _engine.prepare(data, outcome, prediction, features, loss, seed, exclude=_exclude, y_override=_y,
                           missing=missing)
    learner = resolve_learner(algorithm, prep.loss_name, algorithm_options)
    grid = _checked_grid(grid, prep.n, regime, hmb)
    points = _run_points(prep, learner, grid, tuning, seed, n_jobs, True, progress, _cache, _on_point)
    if bias_correct:
        points = _engine.bias_corrected(points)
    table, seq = _engine.ess_inference(points, alpha, regime, hmb, variance)
    table["params"] = [str(p.get("params", {})) for p in points]
    llm = prep.llm_loss
    llm_error = float(np.mean(llm))
    llm_se = float(np.std(llm, ddof=1) / math.sqrt(prep.n))
    stop = seq["stop_index"]
    if stop is None:
        status = "all_rejected"
    elif stop == 0:
        status = "not_rejected_at_first_grid_point"
    else:
        status = "stopped"
    below = table.index[table["diff"] <= 0]
    plugin = float(table.loc[below[0], "n_train"]) if len(below) else math.inf
    curve_like = table.rename(columns={"algo_error": "error", "algo_ci_low": "ci_low", "algo_ci_high": "ci_high"})
    viol = _engine.monotonicity_violations(curve_like)
    notes = []
    if regime == "hybrid":
        notes.append(f"Hybrid variance: fixed-N (4.6) when B >= {hmb}, else fixed-B (B.2); the threshold is "
                     "the package's provisional choice (the paper's value was lost in extraction).")
    if bias_correct:
        notes.append(_BIAS_NOTE)
    if variance == "sum":
        notes.append("variance='sum' (Remark 4.2) is conservative only when the algorithm's and the LLM's losses "
                     "covary positively; it is usually very conservative.")
    if plugin == math.inf:
        notes.append("plug-in: the estimated curve stays above the LLM error on the whole grid.")
    return EssResult(
        title=f"ESS of the fixed rule vs {_algo_name(algorithm)}, {prep.loss_name} loss, n = {prep.n}",
        table=table, lower_bound=int(seq["lower_bound"]), plugin=plugin, llm_error=llm_error, llm_se=llm_se,
        status=status, stop_n_train=None if stop is None else int(grid[stop]),
        no_llm_advantage_at_N1=bool(stop == 0 and grid[0] == 1), algorithm=_algo_name(algorithm),
        loss=prep.loss_name, alpha=alpha, variance=variance, regime=regime, tuning=tuning, n=prep.n, seed=seed,
        grid=list(grid), permutation_hash=_engine.permutation_hash(prep.perm, prep.n),
        permutation=_perm_field(prep), versions=_versions(), monotonicity_violations=viol, notes=notes,
        bias_correct=bias_correct)


def transformed_outcome(y, treatment, propensity) -> np.ndarray:
    """IPW transformed outcome Y* = Y (D - pi) / (pi (1 - pi)), with E[Y* | X] = tau(X) (spec §7.4)."""
    from .._validation import as_float_array

    y = as_float_array(y, "outcome", allow_nan=False)
    d = as_float_array(treatment, "treatment", allow_nan=False)
    pi = np.broadcast_to(as_float_array(propensity, "propensity", allow_nan=False), y.shape) \
        if np.ndim(propensity) == 0 or len(np.atleast_1d(propensity)) == 1 else as_float_array(propensity, "propensity", allow_nan=False)
    if d.shape != y.shape or pi.shape != y.shape:
        from ..exceptions import ShapeError

        raise ShapeError(f"outcome ({y.shape[0]}), treatment ({d.shape[0]}) and propensity ({pi.shape[0]}) must align")
    if not np.isin(d, (0.0, 1.0)).all():
        raise InvalidArgumentError("argument `treatment` must be binary (0/1)")
    if ((pi <= 0) | (pi >= 1)).any():
        raise InvalidArgumentError("argument `propensity` must lie strictly between 0 and 1 (overlap)")
    return y * (d - pi) / (pi * (1 - pi))


def cate_ess(data, outcome: str, treatment: str, prediction, propensity=None, features=None,
             algorithm: Any = "rf", grid=None, alpha: float = 0.05, variance: str = "difference",
             regime: str = "hybrid", tuning: str = "per_n_subset", seed: int | None = 0, n_jobs: int | None = None,
             **kwargs) -> EssResult:
    """ESS of an LLM's CATE predictions tau^LLM(x) (spec §7): the ESS pipeline on the transformed
    outcome Y* with squared loss; the learner predicts Y* from the covariates (not the treatment).

    ``propensity``: a number, a column name or an array (known in an RCT); ``None`` uses the
    treated share (a constant-propensity RCT; with an estimated propensity the risk identity holds
    only approximately).
    """
    from .._validation import as_frame, require_columns

    frame = as_frame(data)
    require_columns(frame, [outcome, treatment])
    prop_col = propensity if isinstance(propensity, str) else None
    if propensity is None:
        d = np.asarray(frame[treatment], dtype=float)
        propensity = float(np.mean(d))
    elif isinstance(propensity, str):
        require_columns(frame, [propensity])
        propensity = frame[propensity].to_numpy(dtype=float)
    ystar = transformed_outcome(frame[outcome], frame[treatment], propensity)
    exclude = (treatment,) + ((prop_col,) if prop_col else ())
    if features is None:
        skip = {outcome, treatment} | ({prediction} if isinstance(prediction, str) else set()) | set(exclude)
        features = [c for c in frame.columns if c not in skip]
    res = equivalent_sample_size(frame, outcome, prediction, features=features, algorithm=algorithm, grid=grid,
                                 loss="squared", alpha=alpha, variance=variance, regime=regime, tuning=tuning,
                                 seed=seed, n_jobs=n_jobs, _y=ystar, _exclude=exclude, **kwargs)
    return res


def arm_ess(data, outcome: str, treatment: str, arm: Any, prediction, features=None, **kwargs) -> EssResult:
    """Arm-specific (potential-outcome) ESS of spec §7.2: block-out CV and the sequential test within
    the subsample with ``treatment == arm``, the rule being the LLM's prediction of Y(arm).

    Under unconfoundedness the risk is E[(Y(d) - f(X))^2 | D = d]; in an RCT it equals the marginal
    risk of predicting Y(d). The treatment column is not used as a feature. Other arguments as in
    :func:`equivalent_sample_size`.
    """
    from .._validation import as_frame, require_columns

    frame = as_frame(data)
    require_columns(frame, [outcome, treatment])
    keep = (frame[treatment] == arm).to_numpy()
    if not keep.any():
        raise InvalidArgumentError(f"no rows with {treatment} == {arm!r}; choose an arm that occurs in the data")
    sub = frame.loc[keep].reset_index(drop=True)
    if not isinstance(prediction, str) and not hasattr(prediction, "predict"):
        prediction = np.asarray(prediction)
        if prediction.shape[0] != len(frame):
            from ..exceptions import ShapeError

            raise ShapeError(f"argument `prediction` has {prediction.shape[0]} values but `data` has {len(frame)} rows")
        prediction = prediction[keep]
    if features is None:
        skip = {outcome, treatment} | ({prediction} if isinstance(prediction, str) else set())
        features = [c for c in sub.columns if c not in skip]
    return equivalent_sample_size(sub, outcome, prediction, features=features, **kwargs)
