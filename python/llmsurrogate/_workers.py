"""The package's joblib worker pools: sized sensibly, and never outliving the process that asked for them.

Every ``joblib.Parallel`` the package opens (ESS block fits and tuning, transfer-table fits) is
built by :func:`parallel`, which adds two things to what joblib does and changes no number:

* **Workers exit when their parent dies.** joblib's default backend, loky, keeps a reusable pool
  of worker processes alive for 300 s of idleness. When the process that started them is killed
  (SIGKILL, the OOM killer), nothing tells them: they lived on for minutes, holding the caller's
  stdout/stderr pipes open (a shell pipeline or ``subprocess.run(capture_output=True)`` then
  waits for them) and keeping loky's resource tracker alive. Each loky worker now runs a
  watchdog thread, started by a loky initializer, that ends the worker as soon as its parent is
  gone (Linux: it sleeps on a pidfd of the parent; elsewhere it polls ``os.getppid()`` every
  0.5 s). The initializer is one module-level function with the same arguments on every call, so
  loky keeps reusing the same pool. ``PR_SET_PDEATHSIG`` is not used: it fires when the *thread*
  that spawned a worker exits, and loky spawns workers from whichever thread submits work.
  loky's resource tracker exits by itself once every process holding its pipe (the parent and
  the workers) is gone.
* **Local pools are sized by the package's one rule and capped.** With the threading, loky or
  multiprocessing backend, ``n_jobs`` is resolved by :func:`resolve_n_jobs` (``None``: an
  enclosing ``joblib.parallel_config``'s ``n_jobs``, else ``LLMSURROGATE_NUM_THREADS``, else every
  core this process may use), the rule that also sizes the Rust kernels' thread pools, and a count
  above :func:`max_local_workers` is lowered to it (``_core.max_threads()``: twice the logical
  cores this process may use, at least 4). ``n_jobs=1000`` started 1,000 threads or processes
  (under a memory cap, ``multiprocessing.dummy`` then failed with an ``AttributeError`` while
  cleaning up the threads it could not start). Other backends (Dask, Ray) schedule on their own
  and get ``n_jobs`` unchanged.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import Any

from . import _core
from ._validation import check_n_jobs

# joblib (a required dependency, ~170 ms to import) is imported inside the functions that open
# pools: resolve_n_jobs also sizes the Rust kernels' threads for llmsurrogate.quantiles and
# llmsurrogate.num_threads, which stay free of it.

__all__ = ["exit_with_parent", "local_n_jobs", "max_local_workers", "parallel", "resolve_n_jobs"]

_POLL_S = 0.5


def max_local_workers() -> int:
    """The most workers a local joblib pool (threads or processes on this machine) gets: the Rust
    thread pools' cap, twice the logical cores this process may use and at least 4."""
    return int(_core.max_threads())


def resolve_n_jobs(n_jobs: int | None) -> int:
    """The package's one meaning of ``n_jobs``, as a positive worker count.

    ``None``: the ``n_jobs`` of an enclosing ``joblib.parallel_config(n_jobs=...)``, otherwise the
    ``LLMSURROGATE_NUM_THREADS`` environment variable, otherwise every core this process may use.
    A positive count is used as given; ``-1`` is every core, ``-k`` every core but ``k - 1``
    (joblib's convention). The result is capped at :func:`max_local_workers`. The same rule sizes
    local joblib pools (ESS block fits and tuning, transfer fits; :func:`parallel`) and the Rust
    kernels' thread pools. No number the package computes depends on it.

    >>> resolve_n_jobs(2)
    2
    >>> import joblib
    >>> with joblib.parallel_config(n_jobs=3):
    ...     resolve_n_jobs(None)
    3
    """
    n_jobs = check_n_jobs(n_jobs)
    # joblib.parallel_config lives in joblib.parallel: while that is not imported, none is active
    joblib_parallel = sys.modules.get("joblib.parallel")
    if n_jobs is None and joblib_parallel is not None:
        n_jobs = check_n_jobs(joblib_parallel.get_active_backend()[1])
    return int(_core.resolve_threads(n_jobs))


def _active_backend(kwargs: dict) -> tuple[Any, Any]:
    from joblib.parallel import get_active_backend

    return get_active_backend(**{k: kwargs[k] for k in ("prefer", "require") if kwargs.get(k) is not None})


def _is_local(backend: Any) -> bool:
    from joblib._parallel_backends import LokyBackend, MultiprocessingBackend, ThreadingBackend

    return isinstance(backend, (LokyBackend, MultiprocessingBackend, ThreadingBackend))


def runs_here(backend: Any) -> bool:
    """Whether joblib's ``backend`` runs its tasks on this machine (threads, loky or
    multiprocessing processes, or in sequence), so that a task may be timed in this process to
    price a pool; Dask, Ray (whose backend subclasses joblib's multiprocessing one) and other
    backends are the user's choice of where every task runs."""
    from joblib._parallel_backends import LokyBackend, MultiprocessingBackend, SequentialBackend, ThreadingBackend

    return isinstance(backend, (LokyBackend, ThreadingBackend, SequentialBackend)) or \
        type(backend) is MultiprocessingBackend


#: What sending a batch job's tasks to a cluster costs beyond the tasks themselves, measured in
#: ``benchmarks/results/scale_build_backends.json`` (a transfer table of 200 LinearRegression fits on
#: 2 workers; one job 0.23 s): Dask's first job on a running cluster took 2.4 s (its workers import
#: the package and receive the data), a later one 0.29 s; Ray 3.4-3.8 s every job (each joblib call
#: starts a pool of actors).
DASK_COLD_S = 2.0
DASK_WARM_S = 0.1
RAY_S = 3.0
#: The Dask schedulers this process has sent tasks to (:func:`used_cluster`).
_warm_dask: set = set()


def cluster_start_s(backend: Any, used: bool = False) -> float | None:
    """What a job on joblib's cluster ``backend`` costs to start beyond its tasks: Dask
    :data:`DASK_COLD_S` on a cluster this process has not sent tasks to yet, else
    :data:`DASK_WARM_S`; Ray :data:`RAY_S`; None for another backend (unknown). ``used``: the
    price of a job after this process has sent tasks to it (Dask's warm price; Ray's every job)."""
    kind = type(backend).__name__
    if kind == "DaskDistributedBackend":
        return DASK_WARM_S if used or _dask_key(backend) in _warm_dask else DASK_COLD_S
    if kind == "RayBackend":
        return RAY_S
    return None


def used_cluster(backend: Any) -> None:
    """Record that tasks ran on ``backend``: a Dask cluster's next job is priced warm."""
    if type(backend).__name__ == "DaskDistributedBackend":
        _warm_dask.add(_dask_key(backend))


def _dask_key(backend: Any) -> Any:
    client = getattr(backend, "client", None)
    return getattr(getattr(client, "scheduler", None), "address", None) or id(client)


def joblib_n_jobs(n_jobs: int | None) -> int:
    """``n_jobs`` for ``joblib.Parallel``: ``None`` is the enclosing ``joblib.parallel_config``'s
    n_jobs, else every core (-1; on Dask or Ray: every worker), as :func:`resolve_n_jobs` reads it."""
    if n_jobs is not None:
        return n_jobs
    from joblib.parallel import get_active_backend

    configured = get_active_backend()[1]
    return configured if configured is not None else -1


def in_task():
    """The joblib context a task of the package runs in, in this process or in a worker: joblib
    calls inside it (a random forest's trees and predictions, a grid search) run on threads with
    their own ``n_jobs`` (None: one, in order), as they do in a worker process -- not as nested
    tasks of the active backend. On Dask the nested backend was Dask itself: a forest's trees
    became cluster tasks and its predictions were summed by two threads in the order they
    finished, so a transfer table changed from build to build, and slower (60 trees, 12 domains:
    2.7-4.7 s against 0.8-1.0 s)."""
    from joblib import parallel_config

    return parallel_config(backend="threading", n_jobs=1)


def local_n_jobs(n_jobs: int | None, **kwargs: Any) -> int | None:
    """The worker count :func:`parallel` gives joblib: for a local backend (threads or processes on
    this machine) the package's count :func:`resolve_n_jobs` (``None``: ``joblib.parallel_config``'s
    ``n_jobs``, else ``LLMSURROGATE_NUM_THREADS``, else every core; capped); other backends (Dask,
    Ray, sequential) get ``n_jobs`` unchanged. ``kwargs``: ``prefer``/``require`` as given to
    ``Parallel``."""
    return _sized(n_jobs, _active_backend(kwargs)[0])


def _sized(n_jobs: int | None, backend: Any) -> int | None:
    return resolve_n_jobs(n_jobs) if _is_local(backend) else n_jobs


def parallel(n_jobs: int | None, **kwargs: Any):
    """``joblib.Parallel(n_jobs, **kwargs)`` with the local pool capped and, on loky, workers that
    exit when this process dies. Raises what ``joblib.Parallel`` raises (e.g. ``ValueError`` for a
    ``return_as`` the active backend lacks)."""
    from joblib import Parallel
    from joblib._parallel_backends import LokyBackend

    backend, _ = _active_backend(kwargs)
    n_jobs = _sized(n_jobs, backend)
    if isinstance(backend, LokyBackend) and "initializer" not in kwargs:
        kwargs = {**kwargs, "initializer": exit_with_parent, "initargs": (os.getpid(),)}
    return Parallel(n_jobs=n_jobs, **kwargs)


def exit_with_parent(parent_pid: int) -> None:
    """loky worker initializer: end this process as soon as ``parent_pid`` (its parent) is gone."""
    if os.getppid() != parent_pid:  # the parent died before the worker got here
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="llmsurrogate-parent-watch",
                     daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    fd = None
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            fd = pidfd_open(parent_pid)
        except OSError:  # old kernel, seccomp: poll instead
            fd = None
    # still our parent after the pidfd was opened: the pidfd is the parent's, not a reused pid's
    if fd is not None and os.getppid() == parent_pid:
        try:
            select.select([fd], [], [])  # readable once the parent has exited
        except OSError:
            pass
    while os.getppid() == parent_pid:
        time.sleep(_POLL_S)
    os._exit(1)
