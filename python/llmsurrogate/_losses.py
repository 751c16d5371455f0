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
