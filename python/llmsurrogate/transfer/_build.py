"""Building transfer-error tables by fitting a model on subsets of domains (``docs/methods/transfer.md`` A1).

For every unordered training set ``T`` of ``r`` domains the model is fitted once on the pooled
observations of ``T`` (pooled least squares = sample-size-weighted mean of the per-domain losses,
docs/methods/transfer.md §1.2) and evaluated on every other domain ``d``: ``e(f_T, S_d)`` is the mean squared error
(``metric="mse"``) or its square root (``"rmse"``, the scale of the paper's tables and of the
published matrices). Unordered sets give the same quantiles, weighted quantiles and LPs as the
paper's ordered tuples (§1.4) with ``r!`` times fewer fits.

Normalisations (docs/methods/transfer.md §1.3): ``"deterioration"`` divides by the same model's in-sample error on the
test domain (the fit on ``S_d`` evaluated on ``S_d``), ``"shortfall"`` by the smallest in-sample
error on the test domain over a set of models (the model itself and ``shortfall_models``).

Parametric models (:class:`~llmsurrogate.transfer.EU`, :class:`~llmsurrogate.transfer.CPT`) are
fitted in the Rust core, many subsets per call, in parallel. Any other object with
``fit(X, y)``/``predict(X)`` (scikit-learn estimators included) is fitted through joblib, so
``joblib.parallel_backend("dask")`` (or ``"ray"``) distributes the fits. With ``cache=<directory>``
every finished subset is written to disk at once and a rerun (after an interruption) only fits
what is missing.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from joblib import delayed
from joblib.parallel import get_active_backend

from .._deprecation import deprecated_arguments
from .._positions import at, located
from .._progress import progress_reporter
from .._validation import (
    as_frame,
    check_choice,
    check_int,
    check_n_jobs,
    require_columns,
)
from .._workers import parallel, resolve_n_jobs
from ..exceptions import (
    ComputationError,
    EmptyInputError,
    InvalidArgumentError,
    LLMSurrogateWarning,
    NonFiniteError,
    ShapeError,
)
from ._dispatch import (  # noqa: F401 - make_model, MODEL_NAMES, DomainCV: importable from here as before
    MODEL_NAMES,
    DomainCV,
    _check_model,
    _fit_eval_generic,
    _fresh,
    _model_key,
    _resolve,
    make_model,
)
from ._fit_cache import CacheStats, _Cache, _count, collect_cache_stats  # noqa: F401 - re-exported
from ._models import CPT, _NLSModel  # noqa: F401 - CPT for the docstring example
from ._table import ErrorTable, _labels

__all__ = ["error_table", "error_tables", "in_sample_errors", "within_domain_cv", "cv_ratio"]


_FEATURES = ("z1", "z2", "p1")
_METRICS = ("mse", "rmse")
_NORMALIZE = ("deterioration", "shortfall")


# ------------------------------------------------------------------------------------------------
# Samples
# ------------------------------------------------------------------------------------------------
class _Samples:
    """Domain samples as one sorted feature matrix with per-domain offsets."""

    def __init__(self, samples: Any, domain: str, features: Sequence[str], target: str, arg: str = "samples"):
        features = list(features)
        if not features:
            raise InvalidArgumentError("argument `features` must name at least one column")
        if isinstance(samples, Mapping) and samples and all(
                hasattr(v, "columns") or isinstance(v, Mapping) for v in samples.values()):
            labels = list(samples.keys())
            frames = []
            for lab in labels:
                f = as_frame(samples[lab], f"{arg}[{lab!r}]")
                require_columns(f, [*features, target], name=f"{arg}[{lab!r}]")
                frames.append(f)
        else:
            frame = as_frame(samples, arg)
            require_columns(frame, [domain, *features, target], name=arg)
            col = frame[domain]
            if col.isna().any():
                raise InvalidArgumentError(f"argument `{arg}`: column {domain!r} has missing domain labels")
            if isinstance(col.dtype, pd.CategoricalDtype):
                present = set(col.unique())
                labels = [c for c in col.cat.categories if c in present]
            else:
                labels = _labels(col.tolist())
            groups = {k: g for k, g in frame.groupby(domain, sort=False, observed=True)}
            frames = [groups[lab] for lab in labels]
        if len(labels) < 2:
            raise InvalidArgumentError(f"argument `{arg}`: need at least 2 domains; got {len(labels)}")
        xs, ys = [], []
        for lab, f in zip(labels, frames):
            if len(f) == 0:
                raise EmptyInputError(f"argument `{arg}`: domain {lab!r} has no observations")
            try:
                x = f[features].to_numpy(dtype=np.float64, na_value=np.nan)
                y = f[target].to_numpy(dtype=np.float64, na_value=np.nan)
            except (TypeError, ValueError) as err:
                raise InvalidArgumentError(f"argument `{arg}`: columns {[*features, target]} must hold numbers "
                                           f"(domain {lab!r}); {err}") from err
            bad = ~np.isfinite(x).all(axis=1) | ~np.isfinite(y)
            if bad.any():
                raise NonFiniteError(located(f"argument `{arg}`: domain {lab!r} has a missing or non-finite value in "
                                             f"{[*features, target]} (", at(np.flatnonzero(bad)[0], "row"),
                                             f" of domain {lab!r}); drop or impute it first"))
            xs.append(x)
            ys.append(y)
        self.labels = labels
        self.features = features
        self.X = np.ascontiguousarray(np.concatenate(xs))
        self.y = np.ascontiguousarray(np.concatenate(ys))
        sizes = np.array([len(v) for v in ys], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.sizes = sizes
        h = hashlib.sha256()
        h.update(repr([str(v) for v in labels]).encode())
        h.update(repr(features).encode())
        h.update(self.X.tobytes())
        h.update(self.y.tobytes())
        h.update(self.offsets.tobytes())
        self.hash = h.hexdigest()[:16]

    @property
    def n(self) -> int:
        return len(self.labels)

    def rows(self, domains) -> slice | np.ndarray:
        if len(domains) == 1:
            d = domains[0]
            return slice(int(self.offsets[d]), int(self.offsets[d + 1]))
        return np.concatenate([np.arange(self.offsets[d], self.offsets[d + 1]) for d in sorted(domains)])

    def lottery_columns(self):
        if self.X.shape[1] != 3:
            raise InvalidArgumentError(f"EU/CPT models need exactly three features (z1, z2, p); got {self.features}")
        p = self.X[:, 2]
        if np.any((p < 0) | (p > 1)):
            raise InvalidArgumentError(f"feature {self.features[2]!r} must be a probability in [0, 1]")
        return tuple(np.ascontiguousarray(self.X[:, j]) for j in range(3))


# ------------------------------------------------------------------------------------------------
# Fitting many subsets
# ------------------------------------------------------------------------------------------------
def _fit_subsets(model: Any, data: _Samples, subsets: list[tuple[int, ...]], n_jobs, cache_dir, progress,
                 label: str) -> np.ndarray:
    """MSE matrix ``(len(subsets), n)``: model fitted on each subset, evaluated on every domain."""
    cache = _Cache(cache_dir, _model_key(model), data.hash)
    out = np.full((len(subsets), data.n), np.nan)
    todo = []
    for i, s in enumerate(subsets):
        hit = cache.get(s, data.n)
        if hit is not None:
            out[i] = hit
        else:
            todo.append(i)
    _count("hits", len(subsets) - len(todo))
    _count("computed", len(todo))
    _count("rejected", cache.rejected)
    if cache.rejected:
        warnings.warn(f"{label}: {cache.rejected} cached fit(s) in {cache.dir} were damaged or came from another "
                      "llmsurrogate/numpy/scikit-learn version; refitted", LLMSurrogateWarning, stacklevel=3)
    with progress_reporter(progress) as report:
        done = len(subsets) - len(todo)
        report(label, done, len(subsets))
        if not todo:
            return out
        if isinstance(model, _NLSModel):
            z1, z2, p = data.lottery_columns()
            # each call groups the data by lottery once (a sort of all rows): batches of >= 64
            # training sets keep that cost small; about 100 batches give progress and resume points
            threads = resolve_n_jobs(n_jobs)
            chunk = max(64, len(todo) // 100)
            not_converged = []
            for start in range(0, len(todo), chunk):
                idx = todo[start:start + chunk]
                sub = np.array([subsets[i] for i in idx], dtype=np.int64)
                res = model._fit_domains(z1, z2, p, data.y, data.offsets, sub, n_jobs=threads)
                not_converged.extend(subsets[idx[j]] for j in np.flatnonzero(~res["converged"]))
                for j, i in enumerate(idx):
                    out[i] = res["mse"][j]
                    cache.put(subsets[i], out[i])
                done += len(idx)
                report(label, done, len(subsets))
            if not_converged:
                first = [data.labels[d] for d in not_converged[0]]
                warnings.warn(f"{label}: {len(not_converged)} of {len(todo)} fits stopped without meeting a "
                              f"convergence test (first: training set {first}); raise `max_iter` or check the "
                              "data", LLMSurrogateWarning, stacklevel=3)
        else:
            jobs = check_n_jobs(n_jobs)
            workers = resolve_n_jobs(jobs)
            chunk = max(2 * workers, 4)
            # local pools capped at the cores; loky workers exit if this process dies
            with parallel(_joblib_n_jobs(jobs)) as pool:
                for start in range(0, len(todo), chunk):
                    idx = todo[start:start + chunk]
                    res = pool(delayed(_fit_eval_generic)(model, data.X, data.y, data.offsets,
                                                              data.rows(subsets[i])) for i in idx)
                    for j, i in enumerate(idx):
                        out[i] = res[j]
                        cache.put(subsets[i], out[i])
                    done += len(idx)
                    report(label, done, len(subsets))
    return out


def _joblib_n_jobs(n_jobs: int | None) -> int:
    """``n_jobs`` for ``joblib.Parallel``: ``None`` is the enclosing ``joblib.parallel_config``'s
    n_jobs, else every core (-1; on Dask or Ray: every worker), as :func:`~llmsurrogate._workers.resolve_n_jobs`
    reads it."""
    if n_jobs is not None:
        return n_jobs
    configured = get_active_backend()[1]
    return configured if configured is not None else -1


def _apply_metric(mse: np.ndarray, metric: str) -> np.ndarray:
    return np.sqrt(mse) if metric == "rmse" else mse


def _subset_list(n: int, r: int, subsets: Any, seed: Any) -> tuple[list[tuple[int, ...]], bool]:
    total = math.comb(n, r)
    if isinstance(subsets, str):
        check_choice(subsets, "subsets", ["all"])
        if total > 5_000_000:
            raise InvalidArgumentError(f"argument `subsets`: C({n}, {r}) = {total} training sets is too many to fit; "
                                       "pass an integer to fit a seeded random sample of them")
        return list(itertools.combinations(range(n), r)), True
    k = check_int(subsets, "subsets", minimum=1)
    if k >= total:
        return list(itertools.combinations(range(n), r)), True
    rng = np.random.default_rng(seed)
    if total <= 2_000_000:
        pick = np.sort(rng.choice(total, size=k, replace=False))
        combos = []
        it = itertools.combinations(range(n), r)
        last = 0
        for idx in pick:
            combos.append(next(itertools.islice(it, int(idx) - last, None)))
            last = int(idx) + 1
        return combos, False
    seen: set = set()
    while len(seen) < k:
        seen.add(tuple(sorted(rng.choice(n, size=r, replace=False).tolist())))
    return sorted(seen), False


def _normalise_models(models: Any, seed: Any = 0) -> dict:
    if isinstance(models, str):
        models = [models]
    if isinstance(models, Mapping):
        out = {str(k): _resolve(v, seed) for k, v in models.items()}
    else:
        out = {}
        for i, m in enumerate(models):
            key = m if isinstance(m, str) else (getattr(m, "name", None) or f"model{i + 1}")
            out[key] = _resolve(m, seed)
    if not out:
        raise InvalidArgumentError("argument `models` is empty; pass at least one model")
    for name, m in out.items():
        try:
            _check_model(m)
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"model {name!r}: {err}") from err
    return out


def _build(data: _Samples, models: dict, r: int, metric: str, subsets: Any, n_jobs, cache, progress,
           seed, need_in_sample: bool):
    """Raw MSE per model over the subsets, and in-sample MSE per model (length n) if needed."""
    combos, complete = _subset_list(data.n, r, subsets, seed)
    raw, ins = {}, {}
    for name, model in models.items():
        mse = _fit_subsets(model, data, combos, n_jobs, cache, progress, f"{name}: fits")
        raw[name] = mse
        if need_in_sample:
            if r == 1 and complete:
                ins[name] = np.array([mse[d, d] for d in range(data.n)])
            else:
                single = _fit_subsets(model, data, [(d,) for d in range(data.n)], n_jobs, cache, progress,
                                      f"{name}: in-sample fits")
                ins[name] = np.diag(single).copy()
    return combos, complete, raw, ins


def _assemble(data: _Samples, combos, complete: bool, values_by_subset: np.ndarray, *, name: str, metric: str):
    """ErrorTable (complete design) or long DataFrame (sampled subsets) from a (subsets, n) matrix."""
    n = data.n
    r = len(combos[0])
    tests, trains, vals = [], [], []
    for i, s in enumerate(combos):
        mask = np.ones(n, dtype=bool)
        mask[list(s)] = False
        ds = np.flatnonzero(mask)
        tests.append(ds)
        trains.append(np.repeat(np.array(s, dtype=np.int64)[None, :], ds.size, axis=0))
        vals.append(values_by_subset[i, ds])
    test = np.concatenate(tests).astype(np.int64)
    train = np.concatenate(trains).astype(np.int64)
    values = np.concatenate(vals).astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        i = bad[0]
        raise ComputationError(
            f"model {name!r} produced a non-finite error ({values[i]}) for train={[data.labels[j] for j in train[i]]}, "
            f"test={data.labels[test[i]]!r}: its predictions are undefined or overflow on that domain")
    if complete:
        return ErrorTable._from_arrays(values, test, train, list(data.labels), name=name, metric=metric, arg="samples")
    labels = np.asarray(data.labels, dtype=object)
    cols = {"train": labels[train[:, 0]]} if r == 1 else {f"train_{k + 1}": labels[train[:, k]] for k in range(r)}
    cols["test"] = labels[test]
    cols["error"] = values
    out = pd.DataFrame(cols)
    out.attrs.update({"name": name, "metric": metric, "sampled_training_sets": len(combos)})
    return out


def _metric_label(metric: str, kind: str) -> str:
    scale = "RMSE" if metric == "rmse" else "MSE"
    return {"raw": f"raw transfer error ({scale})", "deterioration": f"transfer deterioration ({scale} ratio)",
            "shortfall": f"transfer shortfall ({scale} ratio)"}[kind]


def _common_args(samples, r, metric, n_jobs, domain, features, target):
    r = check_int(r, "r", minimum=1)
    metric = check_choice(metric, "metric", list(_METRICS))
    check_n_jobs(n_jobs)
    data = _Samples(samples, domain, features, target)
    if data.n <= r:
        raise InvalidArgumentError(f"argument `r`: need more domains than training domains (n > r); got n = {data.n}, r = {r}")
    return r, metric, data


@deprecated_arguments(renamed={"random_state": "seed"}, positional=2)
def error_tables(samples: Any, models: Any, *, r: int = 1, metric: str = "mse", subsets: Any = "all",
                 n_jobs: int | None = None, kinds: Sequence[str] = ("raw", "deterioration", "shortfall"),
                 domain: str = "domain", features: Sequence[str] = _FEATURES, target: str = "ce",
                 cache: Any = None, progress: Any = None, seed: Any = 0) -> dict:
    """Transfer-error tables of several models at once: ``{model: {kind: ErrorTable}}``.

    ``kinds`` picks among ``"raw"``, ``"deterioration"`` and ``"shortfall"``; the shortfall divides
    by the smallest in-sample error on the test domain over **all** the given models (the paper's
    model set). Each model is fitted once per training set. Other arguments as in
    :func:`error_table`.

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> ce = datasets.load_certainty_equivalents(domains=[7, 8, 9])  # three small subject pools
    >>> tabs = error_tables(ce, {"EU": "eu", "CPT": "cpt"}, kinds=("raw", "shortfall"), metric="rmse", n_jobs=1)
    >>> sorted(tabs), sorted(tabs["CPT"]), tabs["CPT"]["shortfall"].N
    (['CPT', 'EU'], ['raw', 'shortfall'], 6)
    >>> tabs["EU"]["shortfall"].values.round(3).tolist()
    [1.409, 1.984, 1.182, 2.341, 1.508, 1.279]
    """
    kinds = [check_choice(k, "kinds", ["raw", *_NORMALIZE]) for k in kinds]
    r, metric, data = _common_args(samples, r, metric, n_jobs, domain, features, target)
    models = _normalise_models(models, seed)
    combos, complete, raw, ins = _build(data, models, r, metric, subsets, n_jobs, cache, progress, seed,
                                        need_in_sample=any(k in _NORMALIZE for k in kinds))
    best = None
    if "shortfall" in kinds:
        best = np.min(np.vstack([_apply_metric(v, metric) for v in ins.values()]), axis=0)
    out = {}
    for name in models:
        e = _apply_metric(raw[name], metric)
        tabs = {}
        for kind in kinds:
            if kind == "raw":
                vals = e
            elif kind == "deterioration":
                vals = e / _apply_metric(ins[name], metric)[None, :]
            else:
                vals = e / best[None, :]
            tabs[kind] = _assemble(data, combos, complete, vals, name=name, metric=_metric_label(metric, kind))
        out[name] = tabs
    return out


@deprecated_arguments(renamed={"random_state": "seed"}, positional=2)
def error_table(samples: Any, model: Any, *, r: int = 1, metric: str = "mse", normalize: str | None = None,
                subsets: Any = "all", n_jobs: int | None = None, shortfall_models: Any = None,
                domain: str = "domain", features: Sequence[str] = _FEATURES, target: str = "ce",
                cache: Any = None, progress: Any = None, seed: Any = 0, name: str | None = None):
    """Fit ``model`` on every ``r``-subset of domains and tabulate its transfer errors.

    Parameters
    ----------
    samples : DataFrame or mapping
        A frame with a ``domain`` column, the ``features`` and the ``target``; or a mapping
        ``domain label -> frame``. pandas, polars or mappings of columns.
    model : EU, CPT, scikit-learn estimator, any object with ``fit(X, y)`` and ``predict(X)``, or a name
        Fitted afresh (cloned) for every training set. Names as in :func:`make_model` (``"cpt:g"``,
        ``"eu"``, ``"rf"``, ...).
    r : int
        Training domains per fit (``n > r``).
    metric : {"mse", "rmse"}
        Error of a rule on a sample: mean squared error or its square root (the paper's reported
        scale, and the scale of the published matrices). Ratios depend on it (docs/methods/transfer.md §9 A1).
    normalize : None, "deterioration" or "shortfall"
        Raw transfer error, or divided by the in-sample error on the test domain of the same model
        (deterioration) or the smallest one over ``model`` and ``shortfall_models`` (shortfall).
    subsets : "all" or int
        All ``C(n, r)`` training sets, or a seeded random sample of this many (``seed``);
        a sample returns a long DataFrame (``train...``, ``test``, ``error``), because an
        :class:`ErrorTable` needs every training set.
    n_jobs : int, optional
        Workers/threads (None: see :func:`llmsurrogate.num_threads`): threads for EU/CPT (Rust) or
        joblib workers for other models. The active joblib backend is used (e.g. Dask).
    shortfall_models : sequence or mapping, optional
        The other models of the shortfall's model set; each a model or an array of its ``n``
        in-sample errors (on the ``metric`` scale, domains in table order).
    domain, features, target : str
        Column names (defaults for :func:`llmsurrogate.datasets.load_certainty_equivalents`).
    cache : folder path or :class:`~llmsurrogate.llm.cache.Cache`, optional
        Directory for per-training-set results (a Cache: its folder); an interrupted build resumes from it.
    progress : None, bool or callable
        ``None`` (default): a progress bar on stderr in an interactive session; ``True`` always,
        ``False`` never; or ``progress(label, done, total)`` after each batch of fits
        (:mod:`llmsurrogate._progress`).
    seed : int
        Seed of the sampled training sets (``subsets=<int>``) and of models given by name (``"rf"``).
    name : str, optional
        The table's name (default: the model's name or class).

    Returns
    -------
    ErrorTable (or a long DataFrame for a sample of training sets).

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> ce = datasets.load_certainty_equivalents(domains=[3, 10, 12])
    >>> t = error_table(ce, CPT("g"), metric="rmse")
    >>> t.n, t.N, round(float(t.values.max()), 3)
    (3, 6, 16174.577)
    """
    if normalize is not None:
        check_choice(normalize, "normalize", list(_NORMALIZE))
    label = model if isinstance(model, str) else None
    model = _resolve(model, seed)
    _check_model(model)
    r, metric, data = _common_args(samples, r, metric, n_jobs, domain, features, target)
    name = name if name is not None else (label or type(model).__name__)
    others = {}
    given = {}
    if shortfall_models is not None:
        if normalize != "shortfall":
            raise InvalidArgumentError("argument `shortfall_models` is only used with normalize='shortfall'")
        items = shortfall_models.items() if isinstance(shortfall_models, Mapping) else \
            ((f"model{i + 1}", m) for i, m in enumerate(shortfall_models))
        for key, m in items:
            if isinstance(m, str):
                key, m = m, _resolve(m, seed)
            if hasattr(m, "fit") and hasattr(m, "predict"):
                others[key] = m
            else:
                arr = np.asarray(m, dtype=np.float64).reshape(-1)
                if arr.shape != (data.n,):
                    raise ShapeError(f"shortfall model {key!r}: in-sample errors need {data.n} values (one per domain); "
                                     f"got {arr.size}")
                if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                    raise InvalidArgumentError(f"shortfall model {key!r}: in-sample errors must be finite and > 0")
                given[key] = arr
    combos, complete, raw, ins = _build(data, {name: model}, r, metric, subsets, n_jobs, cache, progress,
                                        seed, need_in_sample=normalize is not None)
    e = _apply_metric(raw[name], metric)
    kind = normalize or "raw"
    if normalize == "deterioration":
        e = e / _apply_metric(ins[name], metric)[None, :]
    elif normalize == "shortfall":
        cands = [_apply_metric(ins[name], metric)]
        for key, m in others.items():
            single = _fit_subsets(m, data, [(d,) for d in range(data.n)], n_jobs, cache, progress, f"{key}: in-sample")
            cands.append(_apply_metric(np.diag(single).copy(), metric))
        cands.extend(given.values())
        e = e / np.min(np.vstack(cands), axis=0)[None, :]
    return _assemble(data, combos, complete, e, name=name, metric=_metric_label(metric, kind))


@deprecated_arguments(positional=2)
def in_sample_errors(samples: Any, model: Any, *, metric: str = "mse", n_jobs: int | None = None,
                     domain: str = "domain", features: Sequence[str] = _FEATURES, target: str = "ce",
                     cache: Any = None):
    """Error of ``model`` fitted on each domain and evaluated on the same domain (a Series).

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> ce = datasets.load_certainty_equivalents(domains=[7, 8, 9])  # three small subject pools
    >>> s = in_sample_errors(ce, "cpt", metric="rmse", n_jobs=1)
    >>> s.name, s.round(3).tolist()
    ('in_sample_error', [4.417, 1.172, 4.41])
    """
    model = _resolve(model)
    _check_model(model)
    _, metric, data = _common_args(samples, 1, metric, n_jobs, domain, features, target)
    single = _fit_subsets(model, data, [(d,) for d in range(data.n)], n_jobs, cache, False, "in-sample")
    return pd.Series(_apply_metric(np.diag(single).copy(), metric), index=pd.Index(data.labels, name="domain"),
                     name="in_sample_error")


# ------------------------------------------------------------------------------------------------
# Within-domain k-fold cross-validation (Table 1)
# ------------------------------------------------------------------------------------------------
@deprecated_arguments(renamed={"random_state": "seed"}, positional=2)
def within_domain_cv(samples: Any, models: Any, *, k: int = 10, metric: str = "mse", n_jobs: int | None = None,
                     seed: int = 0, domain: str = "domain", features: Sequence[str] = _FEATURES,
                     target: str = "ce", progress: Any = None):
    """k-fold cross-validated error of each model within each domain (paper Section 5.3, Table 1).

    Each domain's observations are split at random into ``k`` folds
    (``sklearn.model_selection.KFold(k, shuffle=True, random_state=seed)``, as the authors'
    code does); the model is trained on ``k - 1`` folds and scored on the last; the CV error is the
    mean of the ``k`` fold MSEs (``metric="rmse"``: its square root).

    Returns a DataFrame, one row per domain and one column per model. See :func:`cv_ratio` for
    Table 1's summary. ``progress``: ``None`` (a bar in an interactive session), ``True`` (a bar), ``False``
    or ``progress(label, done, total)`` per model.

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> ce = datasets.load_certainty_equivalents(domains=[7, 8, 9])  # three small subject pools
    >>> cv = within_domain_cv(ce, {"EU": "eu", "CPT": "cpt"}, k=3, metric="rmse", n_jobs=1)
    >>> cv.shape, cv.columns.tolist(), cv["EU"].round(3).tolist()
    ((3, 2), ['EU', 'CPT'], [4.431, 1.189, 4.412])
    """
    from sklearn.model_selection import KFold

    k = check_int(k, "k", minimum=2)
    _, metric, data = _common_args(samples, 1, metric, n_jobs, domain, features, target)
    models = _normalise_models(models, seed)
    small = [lab for lab, s in zip(data.labels, data.sizes) if s < k]
    if small:
        raise InvalidArgumentError(f"argument `k`: domain {small[0]!r} has fewer than k = {k} observations")
    # fold assignment per domain -> a "pseudo-domain" sample per (domain, fold)
    order, offs = [], [0]
    for d in range(data.n):
        lo = int(data.offsets[d])
        kf = KFold(n_splits=k, shuffle=True, random_state=seed)
        for _, test_idx in kf.split(np.arange(data.sizes[d])):
            order.append(lo + test_idx)
            offs.append(offs[-1] + test_idx.size)
    order = np.concatenate(order)
    X, y = data.X[order], data.y[order]
    offsets = np.array(offs, dtype=np.int64)
    subsets = [tuple(d * k + f for f in range(k) if f != g) for d in range(data.n) for g in range(k)]
    held = np.array([d * k + g for d in range(data.n) for g in range(k)])
    out = {}
    with progress_reporter(progress) as report:
        report("within-domain CV: models", 0, len(models))
        for name, model in models.items():
            out[name] = _apply_metric(_within_cv(model, X, y, offsets, subsets, held, data, k, n_jobs), metric)
            report("within-domain CV: models", len(out), len(models))
    return pd.DataFrame(out, index=pd.Index(data.labels, name="domain"))


def _within_cv(model, X, y, offsets, subsets, held, data, k, n_jobs) -> np.ndarray:
    """The k-fold CV error (mean of the fold MSEs) of ``model`` within each domain."""
    if isinstance(model, _NLSModel):
        if X.shape[1] != 3:
            raise InvalidArgumentError(f"EU/CPT models need exactly three features (z1, z2, p); got {data.features}")
        cols = [np.ascontiguousarray(X[:, j]) for j in range(3)]
        res = model._fit_domains(*cols, np.ascontiguousarray(y), offsets, np.array(subsets, dtype=np.int64),
                                 n_jobs=resolve_n_jobs(n_jobs))
        fold = res["mse"][np.arange(len(subsets)), held]
    else:
        jobs = check_n_jobs(n_jobs)

        def rows(s):
            return np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in s])

        def one(s, g):
            est = _fresh(model)
            tr = rows(s)
            est.fit(X[tr], y[tr])
            te = slice(int(offsets[g]), int(offsets[g + 1]))
            return float(np.mean((np.asarray(est.predict(X[te]), dtype=np.float64).reshape(-1) - y[te]) ** 2))

        fold = np.array(parallel(_joblib_n_jobs(jobs))(
            delayed(one)(s, g) for s, g in zip(subsets, held)))
    return fold.reshape(data.n, k).mean(axis=1)


def cv_ratio(cv: Any, reference: str = "RF"):
    """Table 1: the mean over domains of each model's CV error divided by ``reference``'s.

    Examples
    --------
    >>> import pandas as pd
    >>> cv = pd.DataFrame({"EU": [2.0, 6.0], "CPT": [1.5, 2.0], "RF": [1.0, 2.0]})  # one row per domain
    >>> cv_ratio(cv).to_dict()
    {'EU': 2.5, 'CPT': 1.25}
    """
    frame = as_frame(cv, "cv")
    require_columns(frame, [reference], name="cv")
    ratios = frame.div(frame[reference], axis=0)
    return ratios.drop(columns=[reference]).mean(axis=0).rename("mean_ratio_to_" + reference)
