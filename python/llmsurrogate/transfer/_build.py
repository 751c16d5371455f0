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
what is missing. With ``out=<path>`` the table goes to a Parquet or CSV file as the fits finish
(``_write``), in the fits' order, and is never held in memory.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from joblib import delayed

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
from .._workers import in_task, joblib_n_jobs, parallel, resolve_n_jobs
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
    _fit_eval_batch,
    _fit_eval_generic,
    _fresh,
    _model_key,
    _resolve,
    make_model,
)
from ._fit_cache import CacheStats, _Cache, _count, collect_cache_stats  # noqa: F401 - re-exported
from ._models import CPT, _NLSModel  # noqa: F401 - CPT for the docstring example
from ._table import ErrorTable, _labels, combinations_array, lex_layout
from ._write import WrittenTable, _FitOrderSink, _TidyFile, write_tidy  # noqa: F401 - write_tidy: as before

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
#: Batches of cache hits handed on at once.
_HIT_BATCH = 4096


def _fit_subsets(model: Any, data: _Samples, subsets: list[tuple[int, ...]], n_jobs, cache_dir, progress,
                 label: str, sink=None) -> np.ndarray | None:
    """Fit ``model`` on each subset and evaluate it on every domain: the MSE matrix
    ``(len(subsets), n)``; or, with ``sink``, ``sink(idx, rows)`` for each finished batch (``idx``:
    positions in ``subsets``, ``rows``: their ``(len(idx), n)`` MSEs; cache hits included) and None,
    so that the caller writes each row where it belongs and no matrix is kept."""
    cache = _Cache(cache_dir, _model_key(model), data.hash)
    out = None
    if sink is None:
        out = np.full((len(subsets), data.n), np.nan)

        def sink(idx, rows):
            out[idx] = rows
    todo, hit_idx, hit_rows = [], [], []
    for i, s in enumerate(subsets):
        hit = cache.get(s, data.n)
        if hit is not None:
            hit_idx.append(i)
            hit_rows.append(hit)
            if len(hit_idx) == _HIT_BATCH:
                sink(np.array(hit_idx), np.vstack(hit_rows))
                hit_idx, hit_rows = [], []
        else:
            todo.append(i)
    if hit_idx:
        sink(np.array(hit_idx), np.vstack(hit_rows))
    del hit_rows
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

        def finished(idx, rows):
            nonlocal done
            for j, i in enumerate(idx):
                cache.put(subsets[i], rows[j])
            sink(np.asarray(idx, dtype=np.intp), rows)
            done += len(idx)
            report(label, done, len(subsets))

        if isinstance(model, _NLSModel):
            _fit_nls(model, data, subsets, todo, n_jobs, finished, label)
        else:
            _fit_generic(model, data, subsets, todo, n_jobs, finished)
    return out


def _fit_nls(model, data: _Samples, subsets, todo, n_jobs, finished, label) -> None:
    """EU/CPT fits in the Rust core's threads, a batch of training sets per call."""
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
        finished(idx, res["mse"])
    if not_converged:
        first = [data.labels[d] for d in not_converged[0]]
        warnings.warn(f"{label}: {len(not_converged)} of {len(todo)} fits stopped without meeting a "
                      f"convergence test (first: training set {first}); raise `max_iter` or check the "
                      "data", LLMSurrogateWarning, stacklevel=4)


#: In-process fits timed (at most this long, or 8 fits) to price a fit before choosing how to run the rest.
_PROBE_S = 0.05
#: What starting a local process pool costs (loky: workers importing numpy, scikit-learn and this
#: package; 5.3 s measured on 2 cores), and reusing a running one.
_COLD_POOL_S = 5.0
_WARM_POOL_S = 0.05
#: The least work (seconds of fitting) a task should carry, so that shipping it is a small part.
_TASK_S = 0.2
#: Tasks per worker when the work allows (load balance against fits of uneven cost).
_TASKS_PER_WORKER = 4


def _plan(count: int, workers: int, seconds_per_fit: float | None, start_s: float) -> tuple[int, int]:
    """How to run ``count`` fits: ``(jobs, batch)``, ``jobs == 1`` in this process, else ``jobs``
    workers with ``batch`` fits per task. ``seconds_per_fit`` (None: unknown, as when fits are sent
    to a cluster by request and nothing is fitted here first) prices the work; parallel only when
    it saves more than ``start_s`` (starting the pool, or reaching the cluster) -- never slower than
    one job by the estimate. Tasks carry at least ``_TASK_S`` of work each, about
    ``_TASKS_PER_WORKER`` per worker when there is enough.

    >>> _plan(200, 2, 0.002, 5.0)          # 0.4 s of fits: not worth a pool
    (1, 2)
    >>> _plan(200, 2, 0.2, 5.0)            # 40 s: two workers, 8 tasks of 25 fits
    (2, 25)
    >>> _plan(2000, 4, 0.01, 0.05)         # tasks of >= 0.2 s: 20 fits each
    (4, 125)
    >>> _plan(10, 2, None, 0.0)            # unpriced (workers asked for): every worker busy, small tasks
    (2, 2)
    """
    if count <= 0:
        return 1, 1
    if seconds_per_fit is not None:
        serial = count * seconds_per_fit
        if workers <= 1 or serial - serial / workers <= start_s + _TASK_S:
            return 1, max(1, -(-count // 100))
    batch = -(-count // (_TASKS_PER_WORKER * workers))
    if seconds_per_fit is not None and seconds_per_fit > 0:
        batch = max(batch, min(math.ceil(_TASK_S / seconds_per_fit), -(-count // workers)))
    return workers, batch


def _pool_start_s(backend) -> float | None:
    """What running a build's fits on joblib's ``backend`` costs beyond the fits: threads nothing;
    loky a running pool's reuse, else a cold start; Dask a cluster this process has not used yet
    (its workers import the package) or one it has; Ray a pool of actors every time. None for
    another backend, whose cost is unknown."""
    from joblib._parallel_backends import LokyBackend, ThreadingBackend

    if isinstance(backend, ThreadingBackend):
        return 0.0
    if isinstance(backend, LokyBackend):
        try:
            from joblib.externals.loky import reusable_executor as reusable

            ex = reusable._executor
            if ex is not None and not ex._flags.broken and not ex._flags.shutdown:
                return _WARM_POOL_S
        except Exception:  # noqa: BLE001 - loky internals: price it as a cold start
            pass
        return _COLD_POOL_S
    from .._workers import cluster_start_s, runs_here

    return _COLD_POOL_S if runs_here(backend) else cluster_start_s(backend)


def _probe(model, data: _Samples, subsets, rest: list, wait_s: float | None):
    """Fit the first of ``rest`` here, timed, to price a fit: at least one and two when the first
    is quick, then more while they take under ``_PROBE_S`` in all (at most 8); the indices fitted
    are taken off ``rest``. Returns ``(idx, rows, seconds per fit, late)``. ``wait_s`` (the cluster's
    price): the first two fits run in a thread, and when they have not finished within ``wait_s``
    the fits are costly enough for the cluster to pay; ``late`` is then that thread's future (the
    rest may go out while it finishes) and ``idx``/``rows`` are empty."""
    idx, rows, took = [], [], []

    def fit(i):
        t0 = time.perf_counter()
        with in_task():
            out = _fit_eval_generic(model, data.X, data.y, data.offsets, data.rows(subsets[i]))
        return i, out, time.perf_counter() - t0

    if wait_s is not None:
        from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout

        first = [rest.pop(0) for _ in range(min(2, len(rest)))]
        pool = ThreadPoolExecutor(1, thread_name_prefix="llmsurrogate-probe")
        future = pool.submit(lambda: [fit(i) for i in first])
        pool.shutdown(wait=False)
        try:
            done = future.result(timeout=wait_s)
        except FutureTimeout:
            return [], [], wait_s / len(first), (first, future)
        for i, out, s in done:
            idx.append(i)
            rows.append(out)
            took.append(s)
    while rest and len(idx) < 8 and (sum(took) < _PROBE_S or len(idx) < 2):
        i, out, s = fit(rest.pop(0))
        idx.append(i)
        rows.append(out)
        took.append(s)
    cost = float(np.mean(took[1:])) if len(took) > 1 else took[0]  # the first pays one-off costs
    return idx, rows, cost, None


def _fit_generic(model, data: _Samples, subsets, todo, n_jobs, finished) -> None:
    """Black-box fits (``fit``/``predict``) by cost: a few are fitted here first to price a fit,
    and the rest run in this process unless the workers of the active joblib backend (a local
    pool, a Dask cluster, Ray) are estimated to finish them sooner, their start included
    (:func:`_plan`, :func:`_pool_start_s`); then they go out in batches of fits per task. On a
    cluster the first fits are timed in a thread while the cluster's start price runs out, so that
    costly fits are not held back by the timing. A number of workers asked for on a cluster
    (``n_jobs=2``) gets every fit, as does a backend whose cost is unknown. No result depends on
    where a fit runs."""
    from joblib import effective_n_jobs

    from .._workers import _active_backend, runs_here, used_cluster

    jobs = check_n_jobs(n_jobs)
    backend = _active_backend({})[0]
    here = runs_here(backend)
    rest = list(todo)
    if here:
        workers, start_s = resolve_n_jobs(jobs), _pool_start_s(backend)
    else:
        jobs_now = joblib_n_jobs(jobs)
        workers = max(1, int(effective_n_jobs(jobs_now)))
        start_s = _pool_start_s(backend) if jobs is None else None
    late = None
    if start_s is None:  # the cluster by request: every fit, in small tasks
        _, batch = _plan(len(rest), workers, None, 0.0)
    else:
        idx, rows, cost, late = _probe(model, data, subsets, rest, None if here else start_s)
        if idx:
            finished(idx, np.vstack(rows))
        plan_jobs, batch = _plan(len(rest), workers, cost, start_s)
        if late is not None:
            finished = _LateFirst(finished, *late)
        if plan_jobs == 1:
            for start in range(0, len(rest), batch):
                idx = rest[start:start + batch]
                with in_task():
                    finished(idx, _fit_eval_batch(model, data.X, data.y, data.offsets,
                                                  [data.rows(subsets[i]) for i in idx]))
            rest = []
        elif here:
            jobs_now = plan_jobs
    if rest:
        _fit_out(model, data, subsets, rest, batch, jobs_now, backend, finished)
        used_cluster(backend)
    if late is not None:
        finished.flush()


class _LateFirst:
    """``finished`` that hands on the fits timed in a thread (``first``, ``future``) as soon as
    they are in, before the next batch, so that a sink writing in the fits' order
    (``error_table(out=...)``) is not kept holding every later row until the end."""

    def __init__(self, finished, first, future):
        self.finished, self.first, self.future = finished, first, future

    def __call__(self, idx, rows) -> None:
        if self.future is not None and self.future.done():
            self.flush()
        self.finished(idx, rows)

    def flush(self) -> None:
        """Wait for the timed fits, if not handed on yet, and hand them on."""
        if self.future is not None:
            future, self.future = self.future, None
            self.finished(self.first, np.vstack([out for _, out, _ in future.result()]))


def _fit_out(model, data: _Samples, subsets, rest, batch, jobs_now, backend, finished) -> None:
    """The fits ``rest`` on joblib's workers, ``batch`` fits per task, each batch handed to
    ``finished`` as it comes back."""
    from joblib import effective_n_jobs

    batches = [rest[start:start + batch] for start in range(0, len(rest), batch)]

    def tasks(group):
        return (delayed(_fit_eval_task)(model, data.X, data.y, data.offsets, [data.rows(subsets[i]) for i in idx])
                for idx in group)

    # local pools capped at the cores; loky workers exit if this process dies
    if backend.supports_return_generator:  # results in order as they come
        with parallel(jobs_now, return_as="generator") as pool:
            for idx, rows in zip(batches, pool(tasks(batches))):
                finished(idx, rows)
        return
    with parallel(jobs_now) as pool:  # multiprocessing, Ray: a wave of tasks per call
        wave = 2 * max(1, int(effective_n_jobs(jobs_now)))
        for start in range(0, len(batches), wave):
            group = batches[start:start + wave]
            for idx, rows in zip(group, pool(tasks(group))):
                finished(idx, rows)


def _fit_eval_task(model, X, y, offsets, batch) -> np.ndarray:
    """:func:`_fit_eval_batch` as a joblib task, the model's own joblib calls run as
    :func:`~llmsurrogate._workers.in_task` says."""
    with in_task():
        return _fit_eval_batch(model, X, y, offsets, batch)


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


class _InLayout:
    """The MSEs of a complete design's fits written where the table holds them as the fits finish
    (by test domain, then training set in lexicographic order: :func:`~._table.lex_layout`, the
    order :meth:`ErrorTable._from_arrays`'s sort gives), so that no (training sets x domains)
    matrix, per-subset arrays, concatenation or sort is needed: ``values`` (N,) is the table's.
    ``diag`` (``r = 1``): each domain's in-sample MSE (its own fit on itself), kept on the way."""

    def __init__(self, n: int, r: int):
        self.n, self.r = n, r
        self.k = math.comb(n - 1, r)
        self.values = np.empty(n * self.k)
        self.combos = combinations_array(n, r)  # training set i of the fits (itertools.combinations' order)
        self.diag = np.full(n, np.nan) if r == 1 else None
        self.written = 0
        # C(a, b), a <= n - 2, b <= r: the rank of a training set among those without test domain d
        # (its domains renumbered without d); the entries read are <= C(n - 1, r), the rest capped
        self.binom = np.array([[min(math.comb(a, b), 2**62) for b in range(r + 1)] for a in range(max(n - 1, 1))],
                              dtype=np.int64)
        self.step = max(1, (1 << 20) // (n * r))  # training sets per pass: index temporaries of ~8 MB

    def __call__(self, idx, rows) -> None:
        idx = np.asarray(idx, dtype=np.intp)
        for lo in range(0, idx.size, self.step):
            self._put(self.combos[idx[lo:lo + self.step]], np.asarray(rows[lo:lo + self.step], dtype=np.float64))

    def _put(self, sub: np.ndarray, rows: np.ndarray) -> None:
        n, r = self.n, self.r
        d = np.arange(n, dtype=np.int64)
        if self.diag is not None:
            self.diag[sub[:, 0]] = rows[np.arange(sub.shape[0]), sub[:, 0]]
        # lexicographic rank among the C(n - 1, r) sets without d: C(m, r) - 1 - sum_j C(m - 1 - c_j, r - j),
        # m = n - 1, c the domains renumbered without d (rows with d among them are left out)
        rank = np.full((sub.shape[0], n), self.k - 1, dtype=np.int64)
        member = np.zeros((sub.shape[0], n), dtype=bool)
        for j in range(r):
            col = sub[:, j:j + 1]
            member |= col == d
            rank -= self.binom[np.maximum(n - 2 - (col - (col > d)), 0), r - j]
        keep = ~member
        rank += d * self.k
        self.values[rank[keep]] = rows[keep]
        self.written += int(np.count_nonzero(keep))

    def result(self) -> np.ndarray:
        if self.written != self.values.size:  # every cell once (each training set fitted once)
            raise ComputationError(f"internal error: {self.written} of {self.values.size} errors written")
        return self.values


def _in_sample(model: Any, data: _Samples, n_jobs, cache, progress, label: str) -> np.ndarray:
    """Each domain's in-sample MSE (the model fitted on it, evaluated on it), length n."""
    diag = np.full(data.n, np.nan)

    def keep(idx, rows):
        idx = np.asarray(idx, dtype=np.intp)
        diag[idx] = rows[np.arange(idx.size), idx]  # subset i is domain i

    _fit_subsets(model, data, [(d,) for d in range(data.n)], n_jobs, cache, progress, label, sink=keep)
    return diag


def _build(data: _Samples, models: dict, r: int, metric: str, subsets: Any, n_jobs, cache, progress,
           seed, need_in_sample: bool):
    """Raw MSE per model over the subsets, and in-sample MSE per model (length n) if needed. A
    complete design's MSEs come in the table's layout (:class:`_InLayout`, ``(N,)``); a sample's as
    a (training sets x domains) matrix."""
    combos, complete = _subset_list(data.n, r, subsets, seed)
    raw, ins = {}, {}
    for name, model in models.items():
        layout = None
        if complete:
            layout = _InLayout(data.n, r)
            _fit_subsets(model, data, combos, n_jobs, cache, progress, f"{name}: fits", sink=layout)
            raw[name] = layout.result()
        else:
            raw[name] = _fit_subsets(model, data, combos, n_jobs, cache, progress, f"{name}: fits")
        if need_in_sample:
            if r == 1 and complete:
                ins[name] = layout.diag
            else:
                ins[name] = _in_sample(model, data, n_jobs, cache, progress, f"{name}: in-sample fits")
    return combos, complete, raw, ins


def _metric_of(mse: np.ndarray, metric: str, complete: bool) -> np.ndarray:
    """The raw errors on the ``metric`` scale: a complete design's layout in place (it is the
    table's own array), a sample's matrix as a new array (:func:`_apply_metric`)."""
    if complete and metric == "rmse":
        return np.sqrt(mse, out=mse)
    return _apply_metric(mse, metric)


def _divided(e: np.ndarray, by: np.ndarray, n: int, complete: bool, in_place: bool) -> np.ndarray:
    """``e / by[test domain]``: a complete design's layout (test domain by test domain, in place
    when ``in_place``), or a sample's matrix (``by`` per column)."""
    if not complete:
        return e / by[None, :]
    blocks = e.reshape(n, -1)
    if in_place:
        return np.divide(blocks, by[:, None], out=blocks).reshape(-1)
    return (blocks / by[:, None]).reshape(-1)


def _non_finite(data: _Samples, name: str, value: float, train, test: int) -> ComputationError:
    return ComputationError(
        f"model {name!r} produced a non-finite error ({value}) for train={[data.labels[j] for j in train]}, "
        f"test={data.labels[test]!r}: its predictions are undefined or overflow on that domain")


def _assemble(data: _Samples, combos, complete: bool, values: np.ndarray, *, name: str, metric: str):
    """ErrorTable (complete design: ``values`` in the table's layout, taken as is) or long
    DataFrame (sampled subsets: ``values`` a (subsets, n) matrix)."""
    n = data.n
    r = len(combos[0])
    if complete:
        finite = np.isfinite(values)
        if not finite.all():  # report the first in the fits' order (training set, then test domain), as before
            bad = ~finite.reshape(n, -1)
            del finite
            k = bad.shape[1]
            _, trains = lex_layout(n, r)
            first = None
            for d in np.flatnonzero(bad.any(axis=1)):
                row = int(d) * k + int(np.argmax(bad[d]))
                t = trains[row]
                i = math.comb(n, r) - 1 - sum(math.comb(n - 1 - int(t[q]), r - q) for q in range(r))
                if first is None or (i, int(d)) < first[:2]:
                    first = (i, int(d), row)
            raise _non_finite(data, name, values[first[2]], trains[first[2]], first[1])
        del finite
        return ErrorTable._in_lex_layout(values, n, r, data.labels, name=name, metric=metric)
    sub = np.array(combos, dtype=np.int64)
    mask = np.ones((len(combos), n), dtype=bool)
    mask[np.arange(len(combos))[:, None], sub] = False  # rows: training set, then test domain outside it
    vals = np.ascontiguousarray(values[mask], dtype=np.float64)
    test = np.nonzero(mask)[1].astype(np.int64)
    train = np.repeat(sub, n - r, axis=0)
    bad = np.flatnonzero(~np.isfinite(vals))
    if bad.size:
        i = bad[0]
        raise _non_finite(data, name, vals[i], train[i], test[i])
    labels = np.asarray(data.labels, dtype=object)
    cols = {"train": labels[train[:, 0]]} if r == 1 else {f"train_{k + 1}": labels[train[:, k]] for k in range(r)}
    cols["test"] = labels[test]
    cols["error"] = vals
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
        e = _metric_of(raw.pop(name), metric, complete)
        tabs = {}
        for j, kind in enumerate(kinds):
            if kind == "raw":
                vals = e
            else:  # the last table may take e's memory unless the raw table keeps it
                by = _apply_metric(ins[name], metric) if kind == "deterioration" else best
                vals = _divided(e, by, data.n, complete, in_place=j == len(kinds) - 1 and "raw" not in kinds)
            tabs[kind] = _assemble(data, combos, complete, vals, name=name, metric=_metric_label(metric, kind))
        out[name] = tabs
    return out


@deprecated_arguments(renamed={"random_state": "seed"}, positional=2)
def error_table(samples: Any, model: Any, *, r: int = 1, metric: str = "mse", normalize: str | None = None,
                subsets: Any = "all", n_jobs: int | None = None, shortfall_models: Any = None,
                domain: str = "domain", features: Sequence[str] = _FEATURES, target: str = "ce",
                cache: Any = None, progress: Any = None, seed: Any = 0, name: str | None = None,
                out: Any = None):
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
        joblib workers for other models, on the active joblib backend. Other models' fits go to
        workers only when that is estimated to be faster than one job, a few fits timed here first
        (also on a Dask or Ray cluster); a number (``n_jobs=2``) on a cluster sends every fit there.
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
    out : path, optional
        Write the table to this file as the fits finish instead of returning it: Parquet for
        ``.parquet``/``.pq`` (row groups of 2^20 rows), else CSV in blocks of as many lines
        (``.gz``, ``.bz2``, ``.xz``, ``.zip``, ``.zst``: compressed as it goes). The columns of
        :meth:`ErrorTable.tidy` (``train`` or ``train_1..train_r``, ``test``, ``error``; domain
        labels), one row per error **in the fits' order**: training set by training set (the
        complete design in ``itertools.combinations`` order, a sample in its order), the test domains
        outside each in ascending order -- the order of a sample's long frame.
        ``ErrorTable.from_long(pd.read_parquet(out))`` equals the table returned without ``out``,
        bit for bit (its domains sorted: where the table's are not, a categorical ``domain``
        column's or a mapping's order, the same errors by label). Only the batches of fits that finished before an earlier one (cache hits,
        parallel workers) and one block of rows are held, so a table larger than memory can be
        built. Normalised tables need each test domain's in-sample error before any row is written:
        for ``r >= 2`` (and a sample) those fits (and the ``shortfall_models``') run first; for
        ``r = 1`` they are fits of the table itself, so its ``n (n - 1)`` errors are held until the
        last fit is in. Written atomically: an error (a non-finite error, an interruption) leaves no
        file and no temporary file.

    Returns
    -------
    ErrorTable (or a long DataFrame for a sample of training sets); with ``out``, a
    ``WrittenTable`` (``path``, ``rows``, ``domains``, ``r``, ``training_sets``, ``complete``,
    ``name``, ``metric``) describing the file.

    Examples
    --------
    >>> from llmsurrogate import datasets
    >>> ce = datasets.load_certainty_equivalents(domains=[3, 10, 12])
    >>> t = error_table(ce, CPT("g"), metric="rmse")
    >>> t.n, t.N, round(float(t.values.max()), 3)
    (3, 6, 16174.577)

    Straight to a file (here in a temporary folder; the domains by their ids), rows in the fits'
    order, read back as the table:

    >>> import tempfile, pathlib, pandas as pd
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     f = error_table(ce, CPT("g"), metric="rmse", domain="domain_id", out=pathlib.Path(folder) / "t.parquet")
    ...     long = pd.read_parquet(f.path)
    >>> f.rows, f.path.name, long.columns.tolist(), long[["train", "test"]].values.tolist()
    (6, 't.parquet', ['train', 'test', 'error'], [[3, 10], [3, 12], [10, 3], [10, 12], [12, 3], [12, 10]])
    >>> same = error_table(ce, CPT("g"), metric="rmse", domain="domain_id")
    >>> ErrorTable.from_long(long).values.tolist() == same.values.tolist()
    True
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
    if out is not None:
        return _table_to_file(out, data, model, name=name, r=r, metric=metric, normalize=normalize,
                              subsets=subsets, n_jobs=n_jobs, cache=cache, progress=progress, seed=seed,
                              others=others, given=given)
    combos, complete, raw, ins = _build(data, {name: model}, r, metric, subsets, n_jobs, cache, progress,
                                        seed, need_in_sample=normalize is not None)
    e = _metric_of(raw.pop(name), metric, complete)
    kind = normalize or "raw"
    if normalize == "deterioration":
        e = _divided(e, _apply_metric(ins[name], metric), data.n, complete, in_place=True)
    elif normalize == "shortfall":
        cands = [_apply_metric(ins[name], metric)]
        for key, m in others.items():
            cands.append(_apply_metric(_in_sample(m, data, n_jobs, cache, progress, f"{key}: in-sample"), metric))
        cands.extend(given.values())
        e = _divided(e, np.min(np.vstack(cands), axis=0), data.n, complete, in_place=True)
    return _assemble(data, combos, complete, e, name=name, metric=_metric_label(metric, kind))


def _table_to_file(out: Any, data: _Samples, model: Any, *, name: str, r: int, metric: str, normalize,
                   subsets: Any, n_jobs, cache, progress, seed, others: dict, given: dict) -> WrittenTable:
    """:func:`error_table` with ``out``: the rows written in the fits' order as the fits finish
    (:class:`~._write._FitOrderSink` into a :class:`~._write._TidyFile`). The in-sample errors a
    normalisation divides by are fitted first (the shortfall models' too), except for a complete
    ``r = 1`` design, whose rows are held until its own fits (the in-sample ones among them) are in."""
    file = _TidyFile(out, data.labels, r)  # the format (and pyarrow) checked before any fit
    combos, complete = _subset_list(data.n, r, subsets, seed)
    hold = normalize is not None and complete and r == 1

    def divisor(own_mse, other_mse):
        if normalize is None:
            return None
        own = _apply_metric(own_mse, metric)
        if normalize == "deterioration":
            return own
        return np.min(np.vstack([own, *(_apply_metric(v, metric) for v in other_mse), *given.values()]), axis=0)

    with file:
        other_mse = [_in_sample(m, data, n_jobs, cache, progress, f"{key}: in-sample")
                     for key, m in others.items()] if normalize == "shortfall" else []
        by = None
        if normalize is not None and not hold:
            by = divisor(_in_sample(model, data, n_jobs, cache, progress, f"{name}: in-sample fits"), other_mse)
        sink = _FitOrderSink(file, combinations_array(data.n, r) if complete else np.array(combos, dtype=np.int64),
                             data.n, metric=metric, divisor=by, hold=hold,
                             non_finite=lambda value, train, test: _non_finite(data, name, value, train, test))
        _fit_subsets(model, data, combos, n_jobs, cache, progress, f"{name}: fits", sink=sink)
        if hold:
            sink.release(divisor(sink.diagonal(), other_mse))
        rows = sink.finish()
    return WrittenTable(path=file.path, rows=rows, domains=list(data.labels), r=r, training_sets=len(combos),
                        complete=complete, name=name, metric=_metric_label(metric, normalize or "raw"))


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
    return pd.Series(_apply_metric(_in_sample(model, data, n_jobs, cache, False, "in-sample"), metric), index=pd.Index(data.labels, name="domain"),
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

        fold = np.array(parallel(joblib_n_jobs(jobs))(
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
