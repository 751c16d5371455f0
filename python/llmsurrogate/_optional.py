"""Lazy access to optional heavy dependencies.

``import llmsurrogate`` never imports torch, transformers, vllm, rpy2, dask, ray or polars. Code
that needs one calls :func:`require` at the point of use, which raises a
:class:`~llmsurrogate.exceptions.MissingDependencyError` that says which extra to install, or,
when the module is there but its import fails (a broken install, a library that cannot load, a
memory limit), the import's own error.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .exceptions import MissingDependencyError

# module -> the pip extra that provides it
EXTRAS = {
    "torch": "hf",
    "transformers": "hf",
    "tokenizers": "hf",
    "vllm": "vllm",
    "rpy2": "r",
    "dask": "dask",
    "distributed": "dask",
    "joblib": "dask",
    "ray": "ray",
    "polars": "polars",
    "openai": "openai",
    "llama_cpp": "serve",
}


def require(module: str, *, purpose: str = "") -> ModuleType:
    """Import ``module`` or raise an error that names the extra to install.

    >>> require("json").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        how = f"pip install 'llmsurrogate[{extra}]'" if extra else f"pip install {top}"
        why = f" (needed for {purpose})" if purpose else ""
        missing = getattr(err, "name", None)
        if isinstance(err, ModuleNotFoundError) and missing and (module + ".").startswith(missing + "."):
            raise MissingDependencyError(f"the optional dependency {top!r} is not installed{why}; run: {how}") from err
        raise MissingDependencyError(f"the optional dependency {top!r} failed to import{why}: "
                                     f"{type(err).__name__}: {err}") from err
