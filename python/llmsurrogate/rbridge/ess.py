"""R adapters of :mod:`llmsurrogate.ess`: R's ``ess()``, ``error_curve()``, ``cate_ess()``.

R checks its arguments in R's words (1-based rows, R's type names) before it calls here. Under a
K-class loss (``loss="multiclass_log"`` or ``"multiclass_brier"``, docs/methods/ess.md §1.6) R
sends the LLM's K probability columns as a data frame (``{label: list}``, ``None`` for ``NA``) and
their class labels as ``options``; :func:`r_equivalent_sample_size` makes them the ``n x K`` array
the Python function takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import ess
from ._convert import _listed

__all__ = ["R_FUNCTIONS", "r_equivalent_sample_size"]


def _class_probabilities(prediction: Any) -> Any:
    """R's K probability columns (``{column: list}``, in R's order; ``None`` for ``NA``) as an ``n x K``
    float array (NaN for ``NA``); any other prediction (a column name, a vector) unchanged."""
    if not isinstance(prediction, Mapping):
        return prediction
    import numpy as np

    return np.column_stack([np.asarray(_listed(col), dtype=np.float64) for col in prediction.values()])


def r_equivalent_sample_size(data, outcome, prediction, *args: Any, **kwargs: Any):
    """R's ``ess()``: :func:`llmsurrogate.ess.equivalent_sample_size`, with R's K probability columns
    (a K-class loss) as the ``n x K`` array, their labels in ``options``.

    >>> data = {"y": ["a", "b", "c", "a"] * 5, "x": [float(i % 7) for i in range(20)]}
    >>> probs = {"a": [0.6, 0.2, 0.2, 0.5] * 5, "b": [0.2, 0.6, 0.2, 0.3] * 5, "c": [0.2, 0.2, 0.6, 0.2] * 5}
    >>> res = r_equivalent_sample_size(data, "y", probs, loss="multiclass_log", options=["a", "b", "c"],
    ...                                algorithm="mean", grid=[2, 5], progress=False)
    >>> round(res.llm_error, 4)  # mean of -log p_y: (3 * -log(0.6) - log(0.5)) / 4
    0.5564
    """
    return ess.equivalent_sample_size(data, outcome, _class_probabilities(prediction), *args, **kwargs)


#: What R may call here (``.call("ess.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged, and the adapter of ``equivalent_sample_size`` (K probability columns).
R_FUNCTIONS = {
    **{name: getattr(ess, name) for name in ("error_curve", "cate_ess", "permutation")},
    "equivalent_sample_size": r_equivalent_sample_size,
}
