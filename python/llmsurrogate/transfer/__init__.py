"""Transfer performance: how well a model estimated on some domains predicts a new one.

Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer Performance of Economic Models" (2025);
``shared/specs/transfer.md``.

* :class:`ErrorTable` -- the canonical transfer-error table (matrix, long frame or table in).
"""

from .table import ErrorTable

__all__ = ["ErrorTable"]
