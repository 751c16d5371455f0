"""Prediction-powered inference: valid confidence intervals that combine a small labelled sample
(human answers ``y`` with the LLM's ``yhat`` on the same rows) with many LLM answers
(``yhat_unlabeled``) -- unbiased however wrong the LLM is, narrower when it is good
(Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, Science 2023; PPI++: Angelopoulos, Duchi & Zrnic
2023; the method as implemented: ``docs/methods/ppi.md``).

* :func:`mean` -- a mean, or the K answer shares of a K-option question; lambda tuned over all
  columns or per column (``lam_mode``), weights.
* :func:`quantile` -- a quantile with the exact interval over the data's own values (a sort and
  one sweep).
* :func:`ols`, :func:`logistic`, :func:`poisson` -- regressions (OLS by weighted least squares,
  the GLMs by Newton's method), ``coord`` to tune lambda for one coefficient, weights.
* :func:`feols` -- fixed-effects regressions ``"y ~ x | firm + year"`` on data frames, on the
  package's fixed-effects machinery (``llmsurrogate.fe``), ``vcov="hetero"`` or ``{"CRV1": col}``.
* ``cluster=`` / ``cluster_unlabeled=`` on the mean and the regressions: cluster-robust PPI.
* :func:`crossfit` -- cross-prediction-powered inference: the prediction is your own
  scikit-learn model, cross-fitted on the labelled rows (Zrnic & Candès 2024).
* :func:`sample_size`, :func:`power` -- planning from a pilot: the labels (and LLM answers) a
  target half-width or power needs, at given costs (a :class:`PPIPlan`).
* :func:`from_scores` -- PPI straight from a ``RiskScores`` or a frame of scores, the rows with a
  human answer labelled, paired by row label.

Every estimator takes ppi_py's arguments in ppi_py's order and ``method="classical" | "ppi" |
"ppi++"``, and returns a :class:`PPIResult` (print it, ``tidy()``, ``p_value(null)``,
``effective_n``, JSON round trip). The numbers equal ppi_py 0.2.3's (tests/ppi) except where
ppi_py is wrong: the mean's p-value ignored the clip of lambda, and the logistic and Poisson
regressions ignored ``coord`` (docs/methods/ppi.md §7).

Modules by role: ``_inputs`` (checks and pairing), ``_stats`` (the per-row statistics: gradients,
Hessian, lambda-hat, sandwich, the CDF sweep), ``_glm`` (the fits), ``_mean``, ``_quantile``,
``_regression``, ``_results``.

Examples
--------
>>> import numpy as np
>>> from llmsurrogate import ppi
>>> rng = np.random.default_rng(0)
>>> y = rng.normal(size=300); yhat = y + rng.normal(scale=0.5, size=300)
>>> yhat_unlabeled = rng.normal(size=20_000) + rng.normal(scale=0.5, size=20_000)
>>> res = ppi.mean(y, yhat, yhat_unlabeled)
>>> print(res.summary().as_text().splitlines()[0])
Prediction-powered inference: mean (PPI++)
"""

from ._crossfit import crossfit
from ._feols import feols
from ._from_scores import from_scores
from ._mean import mean
from ._power import PPIPlan, power, sample_size
from ._quantile import quantile
from ._regression import logistic, ols, poisson
from ._results import PPIResult

__all__ = ["PPIPlan", "PPIResult", "crossfit", "feols", "from_scores", "logistic", "mean", "ols", "poisson", "power",
           "quantile", "sample_size"]
