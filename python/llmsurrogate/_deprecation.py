"""Renamed arguments and arguments that became keyword-only: old spellings keep working for one
release, with a :class:`FutureWarning` that names the new spelling.

The package's vocabulary (one name per idea across capabilities) is listed in the developer
guide's vocabulary page; when a public argument is renamed, the function is wrapped here so that
callers' scripts (Python and R) keep running while they are updated.

``FutureWarning`` rather than ``DeprecationWarning``: Python hides ``DeprecationWarning`` outside
``__main__``, and the people who must see these are the scripts' authors (pandas' choice too).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, TypeVar

from .exceptions import InvalidArgumentError

__all__ = ["deprecated_arguments", "warn_deprecated"]

F = TypeVar("F", bound=Callable[..., Any])

#: the release after which the old spellings stop working
REMOVED_IN = "0.3"


def warn_deprecated(message: str, stacklevel: int = 3) -> None:
    """Issue the package's deprecation warning (a :class:`FutureWarning`)."""
    warnings.warn(f"{message}; the old spelling will be removed in llmsurrogate {REMOVED_IN}",
                  FutureWarning, stacklevel=stacklevel)


def deprecated_arguments(renamed: dict[str, str] | None = None, positional: int | None = None,
                         order: list[str] | tuple[str, ...] | None = None) -> Callable[[F], F]:
    """Wrap a public function whose arguments were renamed or made keyword-only.

    Parameters
    ----------
    renamed : mapping of old keyword name to new keyword name. Passing the old name warns and passes
        the value on under the new name; passing both is an error naming both.
    positional : how many leading parameters may still be passed by position. Passing more warns
        and passes the extra values on by name (the signature's order before the change).
    order : the parameter names in the signature's order before the change, where it differs from
        today's (an argument renamed with another meaning keeps its old place, so that a value passed
        by position reaches the function under its old name); default: today's signature.

    Examples
    --------
    >>> import warnings
    >>> @deprecated_arguments(renamed={"reps": "n_boot"})
    ... def f(x, *, n_boot=10):
    ...     return x * n_boot
    >>> f(2, n_boot=3)
    6
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     f(2, reps=4), w[0].category.__name__
    (8, 'FutureWarning')
    """
    renamed = dict(renamed or {})

    def wrap(func: F) -> F:
        sig = inspect.signature(func)
        params = list(sig.parameters.values())
        if order is None:
            names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        else:
            names = list(order)
        n_pos = positional if positional is not None else sum(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        for old, new in renamed.items():
            if new not in sig.parameters:
                raise TypeError(f"{func.__qualname__}: renamed argument {old!r} -> {new!r}: no parameter {new!r}")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > n_pos and positional is not None:
                extra = names[n_pos:len(args)]
                if len(extra) < len(args) - n_pos:
                    raise TypeError(f"{func.__qualname__}() takes at most {len(names)} arguments")
                for name, value in zip(extra, args[n_pos:]):
                    if name in kwargs:
                        raise TypeError(f"{func.__qualname__}() got multiple values for argument {name!r}")
                    kwargs[name] = value
                args = args[:n_pos]
                warn_deprecated(f"{func.__qualname__}(): pass {', '.join(f'`{n}`' for n in extra)} by name "
                                f"(only the first {n_pos} arguments may be given by position)")
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise InvalidArgumentError(
                            f"argument `{old}` was renamed `{new}`; pass only `{new}`, not both")
                    kwargs[new] = kwargs.pop(old)
                    warn_deprecated(f"{func.__qualname__}(): argument `{old}` is now called `{new}`")
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return wrap
