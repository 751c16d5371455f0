"""Every public function and class shows a short example that runs, and every example holds.

* ``test_every_public_callable_has_an_example``: each function or class a public module lists in
  ``__all__`` (exceptions aside) carries a ``>>>`` example in its docstring.
* ``test_docstring_examples_hold``: the examples of every module of the package run (doctest, in a
  scratch working directory, so an example that writes a file leaves nothing behind).

The documentation site (``make docs``) renders the same docstrings.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
import pkgutil

import pytest

import llmsurrogate

# The public modules: each lists its API in __all__.
PUBLIC = ["llmsurrogate", "llmsurrogate.quantiles", "llmsurrogate.datasets", "llmsurrogate.results",
          "llmsurrogate.demo", "llmsurrogate.testing", "llmsurrogate.ess", "llmsurrogate.transfer",
          "llmsurrogate.risk", "llmsurrogate.fe", "llmsurrogate.lookahead", "llmsurrogate.llm"]



def _all_modules() -> list[str]:
    names = ["llmsurrogate"]
    for info in pkgutil.walk_packages(llmsurrogate.__path__, prefix="llmsurrogate."):
        if info.name != "llmsurrogate._core":
            names.append(info.name)
    return sorted(names)


def _public_callables(module_name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(module_name)
    out = []
    for name in getattr(module, "__all__", []):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue
        if inspect.isfunction(inspect.unwrap(obj)) or inspect.isclass(obj) or inspect.isbuiltin(obj):  # unwrap: lru_cache
            out.append((name, obj))
    return out


@pytest.mark.parametrize("module_name", PUBLIC)
def test_every_public_callable_has_an_example(module_name):
    missing = [name for name, obj in _public_callables(module_name) if ">>>" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{module_name}: no runnable example in the docstring of {missing}"


def test_the_public_api_is_large():
    """Guard against the example check passing vacuously (an empty __all__ somewhere)."""
    total = sum(len(_public_callables(m)) for m in PUBLIC)
    assert total >= 120, total


@pytest.mark.parametrize("module_name", [m for m in _all_modules()])
def test_docstring_examples_hold(module_name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, module_name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {module_name} failed"
    assert os.getcwd() == str(tmp_path)
