"""R adapters of :mod:`llmsurrogate.lookahead`: R's ``lookahead_test()``, ``lookahead_bootstrap()``
and ``lap()``."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..exceptions import LLMSurrogateWarning
from ..llm.factory import as_backend
from ..lookahead import bootstrap, lap, lookahead_test
from ._convert import _listed, _r_frame, _r_names

__all__ = ["R_FUNCTIONS", "r_lap", "r_lookahead_bootstrap", "r_lookahead_test"]


def _lookahead_sample(data: Mapping, fe: Any, controls: Any) -> tuple:
    return _r_frame(data), _r_names(fe), _r_names(controls)


def _n_jobs(n_jobs: Any) -> int | None:
    return None if n_jobs is None else int(n_jobs)


def r_lookahead_test(data: Mapping, outcome: str, signal: str, lap: str, fe: Any = ("firm", "date"),
                     cluster: Any = "date", controls: Any = (), standardize: bool = False, n_jobs: Any = None) -> dict:
    """:func:`llmsurrogate.lookahead.lookahead_test` for the R package: ``{"test", "regression",
    "baseline"}`` (the test and its two fits, as Results)."""
    frame, fe, controls = _lookahead_sample(data, fe, controls)
    res = lookahead_test(frame, outcome, signal, lap, fe=fe, cluster=cluster, controls=controls,
                         standardize=bool(standardize), n_jobs=_n_jobs(n_jobs))
    return {"test": res, "regression": res.regression, "baseline": res.baseline}


def r_lookahead_bootstrap(data: Mapping, outcome: str, signal: str, lap: str, fe: Any = ("firm", "date"),
                          n_boot: Any = 10_000, seed: Any = None, resample: str = "obs", controls: Any = (),
                          standardize: bool = False, reference: Any = None, n_jobs: Any = None, reps: Any = None):
    """:func:`llmsurrogate.lookahead.bootstrap` for the R package. Without a seed one is drawn below
    2**31 - 1, so that it reaches R as an integer (printed whole, ``seed = 1840237751``, not
    ``1.840238e+09``) and the run can be repeated from R by copying it. ``reps``: the name of
    ``n_boot`` that the R package of the previous release sends."""
    frame, fe, controls = _lookahead_sample(data, fe, controls)
    if reps is not None:
        n_boot = reps
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (2**31 - 1))
    return bootstrap(frame, outcome, signal, lap, fe=fe, n_boot=n_boot, seed=seed, resample=resample,
                     controls=controls, standardize=bool(standardize), reference=reference, n_jobs=_n_jobs(n_jobs))


def r_lap(texts: Any, model: str, k: Any = 0.2, method: str = "min_k", cache: Any = None,
          backend: str = "transformers", batch_size: Any = 16, agg: str = "geometric", details: bool = False,
          device: Any = None):
    """:func:`llmsurrogate.lookahead.lap` with the backend built from its description, as Python reads
    a backend name (:func:`llmsurrogate.llm.factory.as_backend`: ``backend``, ``"transformers"``
    or ``"hf"`` or ``"vllm"``, on the local model folder ``model``)."""
    texts = [str(t) for t in _listed(texts)]
    be = as_backend(backend, model, device=device, batch_size=None if batch_size is None else int(batch_size))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        out = lap(texts, be, k=k, method=method, cache=cache, batch_size=16 if batch_size is None else int(batch_size),
                  agg=agg, details=bool(details))
    for w in caught:  # passed on as they are: a message's positions (llmsurrogate._positions) reach R 1-based
        warnings.warn(w.message, stacklevel=2)
    return out


#: What R may call here (``.call("lookahead.<name>")``).
R_FUNCTIONS = {"lookahead_test": r_lookahead_test, "bootstrap": r_lookahead_bootstrap, "lap": r_lap}
