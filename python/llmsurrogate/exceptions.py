"""The exception hierarchy of llmsurrogate.

Every error the package raises on purpose derives from :class:`LLMSurrogateError`. Each class also
derives from the matching builtin, so ``except ValueError`` keeps working::

    >>> from llmsurrogate import quantiles
    >>> from llmsurrogate.exceptions import LLMSurrogateError
    >>> try:
    ...     quantiles.upper_quantile([1.0, float("nan")], 0.5)
    ... except ValueError as err:
    ...     isinstance(err, LLMSurrogateError)
    True

Errors raised inside the Rust core are mapped to these classes in one place
(``rust/bindings/errors.rs`` looks a class up here by name).
"""

from __future__ import annotations

__all__ = [
    "LLMSurrogateError",
    "InvalidArgumentError",
    "ShapeError",
    "EmptyInputError",
    "NonFiniteError",
    "ColumnNotFoundError",
    "MissingDependencyError",
    "ResourceError",
    "ComputationError",
    "ConvergenceError",
    "LLMSurrogateWarning",
    "CoverageWarning",
]


class LLMSurrogateError(Exception):
    """Base class of every llmsurrogate error. ``positions``: the 0-based positions the message
    names, as ``[(word, index)]`` (a message built with :func:`llmsurrogate._positions.located`;
    empty otherwise)."""

    @property
    def positions(self) -> list[tuple[str, int]]:
        return list(getattr(self.args[0], "positions", ())) if len(self.args) == 1 else []


class InvalidArgumentError(LLMSurrogateError, ValueError):
    """An argument has the wrong type or lies outside its allowed range."""


class ShapeError(InvalidArgumentError):
    """Arrays that must be aligned have different lengths or shapes."""


class EmptyInputError(InvalidArgumentError):
    """An input that needs at least one element is empty."""


class NonFiniteError(InvalidArgumentError):
    """An input holds NaN (missing) or infinite values where only finite numbers make sense."""


class ResourceError(InvalidArgumentError, MemoryError):
    """An argument sets the size of an allocation this process cannot make (``n``, ``bins``,
    ``n_boot``, ...). Raised before the work starts, naming the argument and the memory it would
    need; it is also a :class:`MemoryError`."""


class ColumnNotFoundError(LLMSurrogateError, KeyError):
    """A named column is not in the data frame."""

    def __str__(self) -> str:  # KeyError would wrap the message in quotes
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(LLMSurrogateError, ImportError):
    """An optional dependency (torch, transformers, vllm, rpy2, dask, polars, ...) is not installed."""


class ComputationError(LLMSurrogateError, RuntimeError):
    """A computation could not be carried out (resources, numerical failure)."""


class ConvergenceError(ComputationError):
    """An iterative fit did not converge."""


class LLMSurrogateWarning(UserWarning):
    """Warnings issued by llmsurrogate."""


class CoverageWarning(LLMSurrogateWarning):
    """The coverage an interval guarantees is well below the nominal coverage asked for (more than
    0.05 under), e.g. :func:`~llmsurrogate.transfer.forecast_interval` on few domains. The message
    names both numbers; the guaranteed one is also on the result."""
