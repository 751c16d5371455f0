"""Per-row losses of K-class probability predictions, shared by the K-option metrics of
``risk`` (docs/methods/survey.md §1) and the K-class losses of the equivalent sample size
(docs/methods/ess.md §1.5).

Every function takes checked arrays: ``codes``, the observed class of each row as an integer
``0..K-1``, and ``probs``, an ``n x K`` array of probabilities whose rows sum to 1 (column ``k``:
class ``k``), and returns one loss per row.

>>> import numpy as np
>>> codes, probs = np.array([0, 2]), np.array([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]])
>>> row_log_loss(codes, probs, eps=1e-6).round(4).tolist()
[0.6931, 0.0]
>>> row_brier(codes, probs).tolist()
[0.375, 0.0]
"""

from __future__ import annotations

import numpy as np

from ._positions import at, located
from .exceptions import InvalidArgumentError, ShapeError

#: row sums of a probability matrix may differ from 1 by at most this much
SUM_TOLERANCE = 1e-6


def probability_rows(probs: np.ndarray, name: str, unit: str = "class") -> np.ndarray:
    """``probs`` (a finite float array) checked as an ``n x K`` matrix of probabilities, one column
    per ``unit`` (``"class"``, the ESS's word; ``"answer option"``, risk's): two dimensions, K >= 2
    columns, entries in [0, 1], rows summing to 1 within :data:`SUM_TOLERANCE`. Errors name the
    argument ``name``.

    >>> probability_rows(np.array([[0.2, 0.8], [0.5, 0.5]]), "prediction").shape
    (2, 2)
    >>> probability_rows(np.array([[0.2, 0.7]]), "prediction")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: argument `prediction`: each row must sum to 1 over the K = 2 classes (within 1e-06); row 0 (0-based) sums to 0.9. Normalise the rows (`p / p.sum(axis=1, keepdims=True)`) if the classes cover every outcome
    """
    units = unit + ("es" if unit.endswith("s") else "s")
    if probs.ndim != 2:
        raise ShapeError(f"argument `{name}` must be an n x K array of probabilities (one column per {unit}); "
                         f"got {probs.ndim} dimension(s)")
    if probs.shape[1] < 2:
        raise ShapeError(f"argument `{name}` must have K >= 2 columns (one per {unit}); got {probs.shape[1]}")
    bad = np.argwhere((probs < 0) | (probs > 1))
    if bad.size:
        i, k = bad[0]
        raise InvalidArgumentError(located(f"argument `{name}` must hold probabilities in [0, 1]; got "
                                           f"{float(probs[i, k]):.10g} at ", at(i, "row", marked=True), ", ",
                                           at(k, "column")))
    sums = probs.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > SUM_TOLERANCE)
    if bad.size:
        raise InvalidArgumentError(located(
            f"argument `{name}`: each row must sum to 1 over the K = {probs.shape[1]} {units} (within "
            f"{SUM_TOLERANCE:g}); ", at(bad[0], "row", marked=True), f" sums to {float(sums[bad[0]]):.10g}. "
                                   f"Normalise the rows (`p / p.sum(axis=1, keepdims=True)`) if the {units} cover "
                                   "every outcome"))
    return probs


def row_log_loss(codes: np.ndarray, probs: np.ndarray, eps: float) -> np.ndarray:
    """-log p_{i, y_i}, the probability of the observed class clipped to [eps, 1 - eps] (scikit-learn's
    ``log_loss`` per row)."""
    return -np.log(np.clip(probs[np.arange(len(codes)), codes], eps, 1 - eps))


def row_brier(codes: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """sum_k (p_{ik} - 1{y_i = k})^2, the Brier score summed over the K classes (twice the binary
    Brier score when K = 2)."""
    d = probs.copy()
    d[np.arange(len(codes)), codes] -= 1.0
    return np.sum(d * d, axis=1)


def row_rps(codes: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """The ranked probability score of ordered classes: the squared distance between the predicted and
    the observed cumulative distributions, over the K - 1 cut points, divided by K - 1."""
    k = probs.shape[1]
    cum_p = np.cumsum(probs, axis=1)[:, :-1]
    cum_o = (codes[:, None] <= np.arange(k - 1)[None, :]).astype(float)
    return np.sum((cum_p - cum_o) ** 2, axis=1) / (k - 1)
