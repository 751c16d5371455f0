"""The ESS estimators: :func:`error_curve`, :func:`equivalent_sample_size`, :func:`cate_ess`,
:func:`arm_ess`, and the internal entry points :func:`run_error_curve` / :func:`run_ess` that carry
the plumbing the public functions hide (a cache of finished grid points, a hook called as each
point finishes, an outcome override and excluded columns), for the command line and for
:func:`cate_ess`. The method: docs/methods/ess.md."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import platform
import warnings
from typing import Any, Callable

import joblib
import numpy as np
import pandas as pd

from .. import __version__, _core
from .._deprecation import deprecated_arguments, warn_deprecated
from .._progress import progress_reporter
from .._validation import (
    align_by_label,
    as_float_array,
    as_frame,
    check_allocation,
    check_choice,
    check_flag,
    check_int,
    check_n_jobs,
    check_probability,
    require_columns,
)
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning, ShapeError
from . import _engine
from ._engine import HYBRID_MIN_BLOCKS, REGIMES, TUNINGS, VARIANCES
from ._learners import resolve_learner
from ._results import ErrorCurve, EssResult


def permutation(n: int, seed: int) -> np.ndarray:
    """The permutation used for ``seed`` (row k of the permuted data is row ``perm[k]``).

    SplitMix64 (state += 0x9E3779B97F4A7C15; z = (z ^ z>>30) * 0xBF58476D1CE4E5B9;
    z = (z ^ z>>27) * 0x94D049BB133111EB; z ^ z>>31) seeded with ``seed``, then Fisher-Yates from the
    top: for i = n-1..1 swap i with j, j uniform on 0..i by rejection (draw r until
    r >= (2^64 - (i+1)) mod (i+1), j = r mod (i+1)).

    Examples
    --------
    >>> permutation(10, seed=1).tolist()
    [4, 2, 8, 1, 9, 3, 0, 6, 7, 5]
    """
    n = check_int(n, "n", minimum=0)
    seed = check_int(seed, "seed", minimum=0, maximum=2**64 - 1)
    check_allocation(16.0 * n, "n", n, "the permutation")
    return _core.ess_permutation(n, seed)


def _refuse_weights(weights: Any) -> None:
    """Survey weights are refused: neither the ESS estimate nor its variance holds with them
    (docs/methods/survey.md §5)."""
    if weights is not None:
        raise InvalidArgumentError(
            "argument `weights`: survey weights are not supported for the equivalent sample size: the ESS "
            "counts i.i.d. draws from the population, and block-out cross-validation trains on rows of the "
            "sample, so neither the estimate nor its variance (Gao, Han & Liang 2026, Theorem 4.2) holds with "
            "weights; see docs/methods/survey.md §5. Without weights the ESS describes the population as sampled")


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    try:  # the installed version, without importing scikit-learn (heavy) where no learner needs it
        sklearn_version = version("scikit-learn")
    except PackageNotFoundError:  # pragma: no cover - a dependency
        sklearn_version = None
    return {"llmsurrogate": __version__, "numpy": np.__version__, "scikit-learn": sklearn_version,
            "joblib": joblib.__version__, "python": platform.python_version()}


def _algo_name(algorithm: Any) -> str:
    return algorithm if isinstance(algorithm, str) else type(algorithm).__name__


def _common_checks(regime, tuning, n_jobs, hybrid_min_blocks):
    regime = check_choice(regime, "regime", REGIMES)
    tuning = check_choice(tuning, "tuning", TUNINGS)
    n_jobs = check_n_jobs(n_jobs)
    hmb = check_int(hybrid_min_blocks, "hybrid_min_blocks", minimum=3)
    return regime, tuning, n_jobs, hmb


_BIAS_NOTE = ("Fixed-N variances bias-corrected: + 2 V_test / (B - 1) (docs/methods/ess.md §4.6; an extension, "
              "not in the paper).")


def _hybrid_note(hmb: int) -> str:
    return (f"Hybrid variance: fixed-N when B >= {hmb} blocks, else fixed-B; the paper gives no number for the "
            f"switch, so {hmb} is the package's choice (docs/methods/ess.md §5.5).")


@dataclasses.dataclass(frozen=True)
class Plumbing:
    """What the internal entry points take besides the user's arguments.

    ``cache``: grid size N -> a finished point (reused, not recomputed); ``on_point``: called with
    each newly computed point (the command line saves it); ``y``: an outcome that replaces the
    ``outcome`` column (CATE-ESS's transformed outcome); ``exclude``: columns never used as features.
    """

    cache: dict | None = None
    on_point: Callable | None = None
    y: np.ndarray | None = None
    exclude: tuple = ()


def _run_points(prep, learner, grid, tuning, seed, n_jobs, with_llm, progress, plumbing: Plumbing):
    """Every grid point, reporting ``progress("tuning: training sizes", k, K)`` while the sizes are
    tuned, ``progress("grid points", k, K)`` and, per point, ``progress("N = <N>: blocks", done, B)``.
    A bar (``progress=None`` in an interactive session, or ``True``) first says how many fits the run
    will make (:func:`_engine.describe_work`)."""
    cache = plumbing.cache
    points = []
    pending = [int(N) for N in grid if cache is None or int(N) not in cache]
    notice = functools.partial(_engine.describe_work, learner, prep.n, pending, tuning)
    with progress_reporter(progress, notice=notice) as report:
        tuned = _engine.tune_grid(prep, learner, pending, tuning, seed, n_jobs,
                                  lambda done, total: report("tuning: training sizes", done, total))
        report("grid points", 0, len(grid))
        for N in grid:
            key = int(N)
            if cache is not None and key in cache:
                pt = cache[key]
            else:
                label = f"N = {key}: blocks"
                pt = _engine.run_point(prep, learner, key, tuning, seed, n_jobs, with_llm,
                                       lambda done, total, _label=label: report(_label, done, total),
                                       params=tuned.get(key), later_fits=_later_fits(prep.n, key, pending))
                if plumbing.on_point is not None:
                    plumbing.on_point(pt)
            points.append(pt)
            report("grid points", len(points), len(grid))
    return points


def _later_fits(n: int, N: int, pending: list[int]) -> int:
    """The block fits (``n // M`` at a size M) of the sizes in ``pending`` larger than ``N``, which
    run after it."""
    return sum(n // M for M in pending if M > N)


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


def _check_level(level: Any) -> float:
    """The confidence level of the error curve's two-sided intervals, in [0.5, 1] (1 - alpha for the
    paper's alpha in (0, 0.5]; 1 itself is reached only through a deprecated alpha below 1e-16)."""
    return check_probability(level, "level", low=0.5, high=1.0, low_open=False, high_open=False)


def _alpha_as_level(func):
    """:func:`error_curve`'s old ``alpha`` (1 - the level of its intervals): accepted for one release,
    with a ``FutureWarning``, as ``level = 1 - alpha``; ``alpha`` and ``level`` together are an error."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if "alpha" in kwargs:
            if "level" in kwargs:
                raise InvalidArgumentError("error_curve(): arguments `alpha` and `level` were both given; `alpha` is "
                                           "now `level` (level = 1 - alpha): pass only `level`")
            warn_deprecated("error_curve(): argument `alpha` is now `level` (level = 1 - alpha)", stacklevel=4)
            alpha = check_probability(kwargs.pop("alpha"), "alpha", low=0.0, high=0.5, high_open=False)
            kwargs["level"] = 1 - alpha
        return func(*args, **kwargs)

    return wrapper


#: error_curve's parameters in their order before ``alpha`` became ``level``: a value passed by
#: position in alpha's place (deprecated) is an alpha.
_ERROR_CURVE_ORDER = ("data", "outcome", "features", "algorithm", "grid", "loss", "regime", "tuning", "seed", "n_jobs",
                      "alpha", "hybrid_min_blocks", "algorithm_options", "progress", "missing", "bias_correct")


@deprecated_arguments(positional=3, order=_ERROR_CURVE_ORDER)
@_alpha_as_level
def error_curve(data, outcome: str, features=None, *, algorithm: Any = "rf", grid=None, loss: Any = "squared",
                regime: str = "hybrid", tuning: str = "per_n_subset", seed: int | None = 0,
                n_jobs: int | None = None, level: float = 0.95, hybrid_min_blocks: int = HYBRID_MIN_BLOCKS,
                algorithm_options: dict | None = None, progress: Any = None, missing: str = "error",
                bias_correct: bool = False, weights: Any = None, options: Any = None) -> ErrorCurve:
    """Block-out CV error curve of ``algorithm`` on ``data`` (docs/methods/ess.md §2-§5).

    ``algorithm``: "rf", "lasso", "logit_l1" (paper App. C, per-N tuning grids and small-N
    safeguards), "mean"/"majority" (native learners for validation) or any scikit-learn estimator.
    ``loss``: "squared", "absolute", "zero_one", "brier", "log" (clipped at 1e-6), a callable
    ``loss(pred, y) -> per-observation losses``, or a loss of K class probabilities for a
    categorical outcome: "multiclass_log" (-log p of the observed class, clipped at 1e-6) or
    "multiclass_brier" (the Brier score summed over the K classes), docs/methods/ess.md §1.6. The
    learner then predicts the K probabilities (``predict_proba`` of a scikit-learn classifier; a
    class missing from a training block gets probability 0, clipped as above); the classes are
    ``options`` (a list of labels), else a categorical outcome's categories, else the outcome's
    sorted distinct values. ``regime``: "hybrid" (fixed-N variance (4.5) when
    B >= ``hybrid_min_blocks``, our provisional default 40, else fixed-B (B.2)), "fixed_N" or
    "fixed_B". ``tuning``: "per_n_subset" (paper: tune on a random subset of size N, reuse for all
    blocks), "per_block" (nested CV inside each block) or "none". The table has one row per grid
    point with ``error``, ``se_fixed_n``, ``se_fixed_b``, ``se`` (the regime's), the two-sided
    ``level`` CI, the variance components and, for squared loss, the RMSE with a delta-method SE.
    ``progress``: ``None`` (the default: a progress bar on stderr in an interactive session --
    a terminal or Jupyter -- after one line saying how many fits the run makes; nothing when
    stderr is piped or captured), ``False`` (silent), ``True`` (a bar always) or a callable
    ``progress(label, done, total)`` (:mod:`llmsurrogate._progress`).

    Cost: n // N block fits at each grid size N, and with ``tuning="per_n_subset"`` a grid search
    at each size. The default ``algorithm="rf"`` grows 300 trees per fit and compares 12 settings
    (``max_depth`` x ``min_samples_leaf``) by 3-fold CV: 36 forests per size. On 1,000 rows with
    grid [5, 20, 50] (270 block fits, up to 96 tuning fits) that took 167 s on 2 busy cores; with
    ``algorithm_options={"n_estimators": 100, "param_grid": {"min_samples_leaf": [1, 5]}}``
    (100 trees, 6 tuning fits per size) 13 s, ``algorithm="lasso"`` 0.5 s, with the same lower
    bound. ``tuning="none"`` is not cheaper: scikit-learn's default forest grows full-depth trees
    (docs/methods/ess.md §8.3 has the table).

    ``bias_correct=True`` adds 2 V_test / (B - 1) to the fixed-N
    variance (§4.6: (4.5) underestimates it when B is small; an extension, not in the paper).
    ``level``: the confidence level of the two-sided intervals, between 0.5 and 1 (0.95: 95% CIs;
    the curve columns of :func:`equivalent_sample_size`, whose ``alpha`` is the paper's
    significance level of its one-sided tests, are at level 1 - alpha). ``alpha`` (1 - level), this
    argument's earlier spelling, still works until 0.3 as ``level = 1 - alpha``, with a
    ``FutureWarning``. ``n_jobs``: workers/threads (None: see :func:`llmsurrogate.num_threads`): the block
    fits and the per-N tuning run in a joblib pool of that size (any joblib backend, e.g.
    ``joblib.parallel_config(backend="dask")``, which then schedules on its own), the Rust
    accumulation in as many threads; no number depends on it. Arguments after ``features`` are
    keyword-only (passing them by position still works until 0.3, with a ``FutureWarning``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=200)})
    >>> df["y"] = (rng.random(200) < 1 / (1 + np.exp(-2 * df["x"]))).astype(int)
    >>> curve = error_curve(df, "y", ["x"], algorithm=LogisticRegression(), grid=[10, 50], loss="brier",
    ...                     tuning="none", n_jobs=1)
    >>> curve.table[["n_train", "n_blocks", "error", "ci_low", "ci_high"]].round(3)
       n_train  n_blocks  error  ci_low  ci_high
    0       10        20  0.199   0.182    0.215
    1       50         4  0.164   0.139    0.189
    """
    _refuse_weights(weights)
    return run_error_curve(Plumbing(), data, outcome, features, algorithm, grid, loss, regime, tuning, seed, n_jobs,
                           level=level, hybrid_min_blocks=hybrid_min_blocks, algorithm_options=algorithm_options,
                           progress=progress, missing=missing, bias_correct=bias_correct, options=options)


def _params_json(point: dict) -> str:
    """The tuned hyperparameters of a grid point as JSON (``{"alpha": null}``), readable in any
    language (the R package turns it into one column per hyperparameter)."""
    return json.dumps(point.get("params") or {}, sort_keys=True, default=str)


def _class_note(prep) -> list[str]:
    """The classes of a multiclass loss (in the order of the prediction's columns, where there is one)."""
    if prep.classes is None:
        return []
    order = ", in the order of the prediction's columns" if prep.llm_pred is not None else ""
    return [f"Classes (K = {len(prep.classes)}{order}): "
            f"{', '.join(repr(c) for c in prep.classes[:20])}{', ...' if len(prep.classes) > 20 else ''}."]


def _learner(algorithm, prep, algorithm_options):
    return resolve_learner(algorithm, prep.loss_name, algorithm_options,
                           n_classes=0 if prep.classes is None else len(prep.classes))


def run_error_curve(plumbing: Plumbing, data, outcome, features, algorithm, grid, loss, regime, tuning, seed, n_jobs, *,
                    level, hybrid_min_blocks, algorithm_options, progress, missing, bias_correct,
                    options=None) -> ErrorCurve:
    """:func:`error_curve` with the internal :class:`Plumbing`."""
    level = _check_level(level)
    regime, tuning, n_jobs, hmb = _common_checks(regime, tuning, n_jobs, hybrid_min_blocks)
    bias_correct = check_flag(bias_correct, "bias_correct")
    prep = _engine.prepare(data, outcome, None, features, loss, seed, missing=missing, options=options)
    learner = _learner(algorithm, prep, algorithm_options)
    _engine.check_learner_outcome(learner, prep.y, f"outcome {outcome!r}")
    grid = _checked_grid(grid, prep.n, regime, hmb)
    points = _run_points(prep, learner, grid, tuning, seed, n_jobs, False, progress, plumbing)
    if bias_correct:
        points = _engine.bias_corrected(points)
    table = _engine.curve_table(points, level, regime, hmb, prep.loss_name)
    table["params"] = [_params_json(p) for p in points]
    viol = _engine.monotonicity_violations(table)
    notes = [_hybrid_note(hmb)] if regime == "hybrid" else []
    if bias_correct:
        notes.append(_BIAS_NOTE)
    notes += _class_note(prep)
    return ErrorCurve(title=f"Error curve: {_algo_name(algorithm)}, {prep.loss_name} loss, n = {prep.n}",
                      table=table, algorithm=_algo_name(algorithm), loss=prep.loss_name, regime=regime,
                      level=level, n=prep.n, seed=seed, grid=list(grid), tuning=tuning,
                      permutation_hash=_engine.permutation_hash(prep.perm, prep.n), permutation=_perm_field(prep),
                      versions=_versions(), monotonicity_violations=viol, notes=notes, bias_correct=bias_correct)


@deprecated_arguments(positional=4)
def equivalent_sample_size(data, outcome: str, prediction, features=None, *, algorithm: Any = "rf", grid=None,
                           loss: Any = "squared", alpha: float = 0.05, variance: str = "difference",
                           regime: str = "hybrid", tuning: str = "per_n_subset", seed: int | None = 0,
                           n_jobs: int | None = None, hybrid_min_blocks: int = HYBRID_MIN_BLOCKS,
                           algorithm_options: dict | None = None, progress: Any = None,
                           missing: str = "error", bias_correct: bool = False, weights: Any = None,
                           options: Any = None) -> EssResult:
    """ESS of the fixed rule ``prediction`` against ``algorithm`` (Algorithm 3.1 of the paper).

    ``prediction``: a column of ``data``, an array aligned with ``data``, or an object with
    ``predict(frame)`` (called once on ``data``). Under ``loss="multiclass_log"`` or
    ``"multiclass_brier"`` (a categorical outcome, docs/methods/ess.md §1.6) it is the LLM's K class
    probabilities: an n x K array, a DataFrame whose columns are the class labels (paired with
    ``data`` by row label), or an object with ``predict_proba(frame)``; ``options`` labels the
    columns where they are not named (a predictor's ``classes_`` label its ``predict_proba`` columns,
    as :class:`~llmsurrogate.llm.LLMPredictor` and scikit-learn classifiers have them). Rows must sum to 1 (within 1e-6); every outcome value must be one
    of the labels. For each grid size N the one-sided z-test of
    H_{0,N}: e_N <= e^LLM uses the block-out estimate of the difference loss on the retained
    B*N rows; ``variance="difference"`` uses (4.6) / fixed-B (B.2) on the difference losses,
    ``variance="sum"`` the conservative sigma^2_N + sigma^2_LLM (4.7). The scan stops at the first
    non-rejection k and returns lower_bound = N_{k-1} + 1 (N_0 = 0); a valid one-sided (1 - alpha)
    CI [lower_bound, inf) for N* when the error curve is nonincreasing. ``missing="drop"`` removes
    rows with a missing or infinite outcome, prediction or feature (with a warning; valid only when
    missingness is unrelated to the data, e.g. unparseable LLM answers at random); the default
    raises. ``bias_correct=True`` corrects the fixed-N variances of both losses as in
    :func:`error_curve`. ``alpha`` is the paper's significance level of each one-sided test of
    H_{0,N} (Algorithm 3.1), hence the name (not the package's ``level``, a confidence level):
    [lower_bound, inf) is a (1 - alpha) confidence interval. All other arguments as in
    :func:`error_curve` (keyword-only after ``features``).

    Cost: the default ``algorithm="rf"`` is the slowest choice -- 300 trees per fit, n // N block
    fits at each grid size N, and 12 settings x 3-fold CV = 36 forests to tune each size -- and in
    a terminal a progress bar (``progress=None``) first says how many fits the run will make.
    ``algorithm_options={"n_estimators": 100, "param_grid": {"min_samples_leaf": [1, 5]}}`` cut a
    167 s run to 13 s with the same bound, ``algorithm="lasso"`` to 0.5 s (:func:`error_curve`,
    docs/methods/ess.md §8.3).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=200)})
    >>> df["y"] = (rng.random(200) < 1 / (1 + np.exp(-2 * df["x"]))).astype(int)
    >>> df["llm"] = 1 / (1 + np.exp(-df["x"]))          # the rule: right direction, too flat
    >>> res = equivalent_sample_size(df, "y", "llm", ["x"], algorithm=LogisticRegression(), grid=[10, 50],
    ...                              loss="brier", tuning="none", n_jobs=1)
    >>> res.lower_bound, res.status, res.plugin
    (11, 'stopped', 50.0)

    K class probabilities (here the true distribution of a three-class outcome, columns named by class):

    >>> z = np.column_stack([np.zeros(200), df["x"], -df["x"]])
    >>> truth = pd.DataFrame(np.exp(z) / np.exp(z).sum(axis=1, keepdims=True), columns=["a", "b", "c"])
    >>> df["choice"] = [rng.choice(["a", "b", "c"], p=p) for p in truth.to_numpy()]
    >>> res = equivalent_sample_size(df, "choice", truth, ["x"], algorithm=LogisticRegression(), grid=[10, 50],
    ...                              loss="multiclass_log", tuning="none", n_jobs=1)
    >>> res.loss, res.status, round(res.llm_error, 3)
    ('multiclass_log', 'all_rejected', 0.829)
    """
    _refuse_weights(weights)
    return run_ess(Plumbing(), data, outcome, prediction, features, algorithm, grid, loss, alpha, variance, regime,
                   tuning, seed, n_jobs, hybrid_min_blocks=hybrid_min_blocks, algorithm_options=algorithm_options,
                   progress=progress, missing=missing, bias_correct=bias_correct, options=options)


def run_ess(plumbing: Plumbing, data, outcome, prediction, features, algorithm, grid, loss, alpha, variance, regime,
            tuning, seed, n_jobs, *, hybrid_min_blocks, algorithm_options, progress, missing, bias_correct,
            options=None) -> EssResult:
    """:func:`equivalent_sample_size` with the internal :class:`Plumbing`."""
    alpha = check_probability(alpha, "alpha", low=0.0, high=0.5, high_open=False)
    regime, tuning, n_jobs, hmb = _common_checks(regime, tuning, n_jobs, hybrid_min_blocks)
    variance = check_choice(variance, "variance", VARIANCES)
    bias_correct = check_flag(bias_correct, "bias_correct")
    if prediction is None:
        raise InvalidArgumentError("argument `prediction` is required: a column name, an array, or an object with predict()")
    prep = _engine.prepare(data, outcome, prediction, features, loss, seed, exclude=plumbing.exclude,
                           y_override=plumbing.y,
                           missing=missing, options=options)
    learner = _learner(algorithm, prep, algorithm_options)
    _engine.check_learner_outcome(learner, prep.y, f"outcome {outcome!r}" if plumbing.y is None else
                                  f"the transformed outcome Y* of {outcome!r}")
    grid = _checked_grid(grid, prep.n, regime, hmb)
    points = _run_points(prep, learner, grid, tuning, seed, n_jobs, True, progress, plumbing)
    if bias_correct:
        points = _engine.bias_corrected(points)
    table, seq = _engine.ess_inference(points, alpha, regime, hmb, variance)
    table["params"] = [_params_json(p) for p in points]
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
        notes.append(_hybrid_note(hmb))
    if bias_correct:
        notes.append(_BIAS_NOTE)
    if variance == "sum":
        notes.append("variance='sum' (Remark 4.2) is conservative only when the algorithm's and the LLM's losses "
                     "covary positively; it is usually very conservative.")
    if plugin == math.inf:
        notes.append("plug-in: the estimated curve stays above the LLM error on the whole grid.")
    notes += _class_note(prep)
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
    """IPW transformed outcome Y* = Y (D - pi) / (pi (1 - pi)), with E[Y* | X] = tau(X) (docs/methods/ess.md §7.4).

    Examples
    --------
    >>> transformed_outcome([1.0, 1.0, 2.0], [1, 0, 1], 0.5).tolist()
    [2.0, -2.0, 4.0]
    """
    y, treatment, propensity = align_by_label(("y", y), ("treatment", treatment), ("propensity", propensity))
    y = as_float_array(y, "outcome", allow_nan=False)
    d = as_float_array(treatment, "treatment", allow_nan=False)
    pi = np.broadcast_to(as_float_array(propensity, "propensity", allow_nan=False), y.shape) \
        if np.ndim(propensity) == 0 or len(np.atleast_1d(propensity)) == 1 else as_float_array(propensity, "propensity", allow_nan=False)
    if d.shape != y.shape or pi.shape != y.shape:
        raise ShapeError(f"outcome ({y.shape[0]}), treatment ({d.shape[0]}) and propensity ({pi.shape[0]}) must align")
    if not np.isin(d, (0.0, 1.0)).all():
        raise InvalidArgumentError("argument `treatment` must be binary (0/1)")
    if ((pi <= 0) | (pi >= 1)).any():
        raise InvalidArgumentError("argument `propensity` must lie strictly between 0 and 1 (overlap)")
    return y * (d - pi) / (pi * (1 - pi))


@deprecated_arguments(positional=4)
def cate_ess(data, outcome: str, treatment: str, prediction, *, propensity=None, features=None,
             algorithm: Any = "rf", grid=None, alpha: float = 0.05, variance: str = "difference",
             regime: str = "hybrid", tuning: str = "per_n_subset", seed: int | None = 0, n_jobs: int | None = None,
             **kwargs) -> EssResult:
    """ESS of an LLM's CATE predictions tau^LLM(x) (docs/methods/ess.md §7): the ESS pipeline on the transformed
    outcome Y* with squared loss; the learner predicts Y* from the covariates (not the treatment).

    ``propensity``: a number, a column name or an array (known in an RCT); ``None`` uses the
    treated share (a constant-propensity RCT; with an estimated propensity the risk identity holds
    only approximately).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=400), "d": rng.integers(0, 2, 400)})
    >>> df["tau_llm"] = 1 + df["x"]                     # the LLM's CATE prediction (here: the truth)
    >>> df["y"] = df["d"] * df["tau_llm"] + rng.normal(size=400)
    >>> res = cate_ess(df, "y", "d", "tau_llm", propensity=0.5, features=["x"], algorithm="mean", grid=[2, 10])
    >>> res.loss, res.n, res.lower_bound, res.status
    ('squared', 400, 11, 'all_rejected')
    """
    frame = as_frame(data)
    require_columns(frame, [outcome, treatment])
    prop_col = propensity if isinstance(propensity, str) else None
    if prop_col:
        require_columns(frame, [prop_col])
    if kwargs.get("missing", "error") == "drop":
        frame, prediction, propensity = _drop_cate_missing(frame, outcome, treatment, prediction, propensity)
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
    opts = {"hybrid_min_blocks": HYBRID_MIN_BLOCKS, "algorithm_options": None, "progress": None, "missing": "error",
            "bias_correct": False}
    _refuse_weights(kwargs.pop("weights", None))
    unknown = sorted(set(kwargs) - set(opts))
    if unknown:
        raise InvalidArgumentError(f"cate_ess() got unexpected argument(s) {unknown}; allowed: {sorted(opts)}")
    opts.update(kwargs)
    return run_ess(Plumbing(y=ystar, exclude=exclude), frame, outcome, prediction, features, algorithm, grid, "squared",
                   alpha, variance, regime, tuning, seed, n_jobs, **opts)


def _drop_cate_missing(frame, outcome, treatment, prediction, propensity):
    """``missing="drop"`` for :func:`cate_ess`: rows with a missing or infinite outcome, treatment or
    propensity go before the transformed outcome is computed (the other drops happen in prepare)."""
    def bad(values) -> np.ndarray:
        num = pd.to_numeric(pd.Series(np.asarray(values, dtype=object)), errors="coerce")
        return ~np.isfinite(num.to_numpy(dtype=np.float64, na_value=np.nan))

    mask = bad(frame[outcome]) | bad(frame[treatment])
    prop_array = None
    if isinstance(propensity, str):
        mask |= bad(frame[propensity])
    elif propensity is not None and not np.isscalar(propensity):
        prop_array = np.asarray(propensity, dtype=object).ravel()
        if prop_array.shape[0] != len(frame):
            raise ShapeError(f"argument `propensity` has {prop_array.shape[0]} values but `data` has {len(frame)} rows")
        mask |= bad(prop_array)
    dropped = int(mask.sum())
    if not dropped:
        return frame, prediction, propensity
    warnings.warn(f"missing='drop': removed {dropped} of {len(frame)} rows with a missing or infinite outcome, "
                  "treatment or propensity; valid only if missingness is unrelated to (X, Y)",
                  LLMSurrogateWarning, stacklevel=3)
    keep = ~mask
    if prediction is not None and not isinstance(prediction, str) and not hasattr(prediction, "predict"):
        pred = np.asarray(prediction)
        if pred.shape[0] != len(frame):
            raise ShapeError(f"argument `prediction` has {pred.shape[0]} values but `data` has {len(frame)} rows; "
                             "pass one prediction per row, in the same order")
        prediction = pred[keep]
    if prop_array is not None:
        propensity = prop_array[keep].astype(float)
    return frame.loc[keep].reset_index(drop=True), prediction, propensity


def arm_ess(data, outcome: str, treatment: str, arm: Any, prediction, features=None, **kwargs) -> EssResult:
    """Arm-specific (potential-outcome) ESS of docs/methods/ess.md §7.2: block-out CV and the sequential test within
    the subsample with ``treatment == arm``, the rule being the LLM's prediction of Y(arm).

    Under unconfoundedness the risk is E[(Y(d) - f(X))^2 | D = d]; in an RCT it equals the marginal
    risk of predicting Y(d). The treatment column is not used as a feature. Other arguments as in
    :func:`equivalent_sample_size`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.normal(size=600), "d": rng.integers(0, 2, 600)})
    >>> df["y"] = df["x"] + df["d"] + rng.normal(scale=0.5, size=600)
    >>> df["llm_y1"] = df["x"] + 1                      # the LLM's prediction of Y(1)
    >>> res = arm_ess(df, "y", "d", 1, "llm_y1", algorithm="mean", grid=[2, 10], n_jobs=1)
    >>> res.n == int((df["d"] == 1).sum()), res.status
    (True, 'all_rejected')
    """
    frame = as_frame(data)
    require_columns(frame, [outcome, treatment])
    keep = (frame[treatment] == arm).to_numpy()
    if not keep.any():
        raise InvalidArgumentError(f"no rows with {treatment} == {arm!r}; choose an arm that occurs in the data")
    sub = frame.loc[keep].reset_index(drop=True)
    multiclass = kwargs.get("loss") in _engine.MULTICLASS_LOSSES
    if multiclass and not isinstance(prediction, str) and not hasattr(prediction, "predict_proba"):
        # K class probabilities: the arm's rows, columns (and a DataFrame's class labels) kept
        frame, prediction = align_by_label(("data", frame), ("prediction", prediction))  # pandas: by label
        if len(prediction) != len(frame):
            raise ShapeError(f"argument `prediction` has {len(prediction)} rows but `data` has {len(frame)}; pass "
                             "one row of class probabilities per row of `data`")
        prediction = prediction.loc[keep].reset_index(drop=True) if isinstance(prediction, pd.DataFrame) \
            else np.asarray(prediction)[keep]
    elif not multiclass and not isinstance(prediction, str) and not hasattr(prediction, "predict"):
        frame, prediction = align_by_label(("data", frame), ("prediction", prediction))  # pandas: by label
        prediction = np.asarray(prediction)
        if prediction.ndim != 1 or prediction.shape[0] != len(frame):
            raise ShapeError(f"argument `prediction` must hold one value per row of `data` ({len(frame)}); got shape "
                             f"{prediction.shape}")
        prediction = prediction[keep]
    if features is None:
        skip = {outcome, treatment} | ({prediction} if isinstance(prediction, str) else set())
        features = [c for c in sub.columns if c not in skip]
    return equivalent_sample_size(sub, outcome, prediction, features=features, **kwargs)
