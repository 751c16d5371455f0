"""Fixed-effects OLS for economists: :func:`feols` with pyfixest's formula syntax and defaults.

Shared machinery (the lookahead-bias test builds on it; it imports no capability)::

    >>> import numpy as np, pandas as pd
    >>> from llmsurrogate import fe
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"firm": rng.integers(0, 20, 400), "date": rng.integers(0, 30, 400),
    ...                    "x": rng.normal(size=400)})
    >>> df["y"] = 2.0 * df["x"] + df["firm"] * 0.1 + rng.normal(size=400)
    >>> fit = fe.feols("y ~ x | firm + date", df, vcov={"CRV1": "firm"})
    >>> round(float(fit.coef()["x"]), 1)
    2.0

* :func:`feols` -- ``"y ~ x1 + x2 + x1:x2 | firm + date"``, with pyfixest's transforms
  (``C(x)``, ``factor(x)``, ``i(x, ref=...)``, ``log()``, ``exp()``, ``I(...)``, ``poly()``, ``- 1``);
  ``vcov`` ``"iid"``, ``"hetero"`` (HC1), ``"HC2"``, ``"HC3"``, ``{"CRV1": "date"}`` or
  ``{"CRV1": "firm+date"}``; analytic or frequency weights; singletons, collinear regressors and
  rows with missing values dropped with a count and a warning.
* :class:`FeolsResult` -- ``coef()``, ``se()``, ``tstat()``, ``pvalue()``, ``confint()``,
  ``tidy()``, ``summary()``, ``predict()``, ``resid()``, ``fixef()``, ``model_matrix()``,
  ``obs_index``, ``nobs``, ``df_resid``, ``r2``, ``r2_within``, ``fe_levels``, ``fixef_names``.
* :func:`bootstrap` -- the pairs (rows) or cluster (blocks of a column) bootstrap of one
  coefficient, in Rust, reproducible by seed for any thread count (:class:`FeolsBootstrap`);
  :func:`bootstrap_counts`, the weights of one replication.
* :func:`etable` -- several models side by side (text, LaTeX or a DataFrame).
* :func:`demean` -- the within transformation alone (Rust, weighted, parallel over columns).

The method, the small-sample corrections, the bootstrap and the demeaning algorithm:
docs/methods/fe.md.
"""

from __future__ import annotations

from ._bootstrap import bootstrap, bootstrap_counts
from ._demean import Demeaned, demean
from ._estimation import feols
from ._formula import Formula, parse_formula
from ._results import FeolsBootstrap, FeolsResult, etable

__all__ = ["feols", "FeolsResult", "bootstrap", "bootstrap_counts", "FeolsBootstrap", "etable", "demean", "Demeaned",
           "Formula", "parse_formula"]
