"""R adapter of :mod:`llmsurrogate.demo`: R's ``llmsurrogate_demo()``."""

from __future__ import annotations

from .. import demo

__all__ = ["R_FUNCTIONS"]

#: What R may call here (``.call("demo.<name>")``): the public functions themselves, R's words and values
#: crossing unchanged.
R_FUNCTIONS = {name: getattr(demo, name) for name in (
    "run_demo",
)}
