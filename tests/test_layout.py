"""The package's layout rules, checked on its import graph (read from the source with ``ast``).

* No import cycle among module-level imports.
* Layers: shared machinery (``llm``, ``quantiles``, ``results``, ``_validation``, ``_cli_support``
  -- the helpers every command is built from --, ...) imports no capability; a capability imports
  no other capability and never the adapters on top (the ``cli`` package: the command registry and
  the general commands; the demo runner ``demo``; the ``rbridge`` package); nothing but ``cli``
  imports a capability's ``_cli`` module. These hold for imports inside functions as well.
* Every capability has the same shape: a public ``__init__`` with ``__all__``, ``_results``,
  ``_cli`` and ``demo`` where it has results, commands or a demo.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "python" / "llmsurrogate"
CAPABILITIES = ("ess", "transfer", "risk", "lookahead")
# the adapters on top: the command line, the demo runner and the R bridge may import capabilities
# (``_cli_support``, the commands' shared helpers, is shared machinery below them)
TOP = ("cli", "demo", "rbridge")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        if not is_pkg:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    # `from . import x` may name a submodule
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _imports(modules: dict[str, Path]) -> dict[str, dict[str, bool]]:
    """module -> {imported module: True if imported at module level}."""
    graph: dict[str, dict[str, bool]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_pkg = path.name == "__init__.py"
        top_level = {id(n) for n in tree.body}
        # imports under `if TYPE_CHECKING:` or `try:` at module level count as module level too
        for n in tree.body:
            if isinstance(n, (ast.If, ast.Try)):
                top_level |= {id(c) for c in ast.walk(n)}
        edges: dict[str, bool] = {}
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = _resolve(name, is_pkg, node)
            for t in targets:
                if t in modules and t != name:
                    edges[t] = edges.get(t, False) or id(node) in top_level
        graph[name] = edges
    return graph


MODULES = _modules()
GRAPH = _imports(MODULES)


def _capability(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in CAPABILITIES else None


def test_graph_is_read():
    assert "llmsurrogate.ess._estimators" in GRAPH["llmsurrogate.ess"]
    assert GRAPH["llmsurrogate.cli"]["llmsurrogate.ess._cli"] is True


def test_no_import_cycle_at_module_level():
    graph = {m: [t for t, top in e.items() if top] for m, e in GRAPH.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in graph[m]:
            # a package's __init__ importing its own submodules is not a cycle through the package
            if t.startswith(m + "."):
                continue
            if state.get(t) == 1:
                cycle = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in graph:
        if m not in state:
            visit(m)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers(module):
    own = _capability(module)
    top = module.split(".")[1] if "." in module else ""
    for target in GRAPH[module]:
        cap = _capability(target)
        if top in TOP:
            continue
        if own is None:
            assert cap is None, f"{module} (shared machinery) imports the capability module {target}"
        else:
            assert cap in (None, own), f"{module} imports another capability's module {target}"
        assert target == "llmsurrogate" or target.split(".")[1] not in TOP, \
            f"{module} imports the command line or the demo runner ({target})"
        if target.endswith("._cli"):
            pytest.fail(f"{module} imports {target}; only llmsurrogate.cli registers commands")


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_capabilities_have_one_shape(capability):
    pkg = ROOT / capability
    assert (pkg / "__init__.py").is_file()
    init = ast.parse((pkg / "__init__.py").read_text())
    assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in n.targets)
               for n in init.body), f"{capability}/__init__.py has no __all__"
    for role in ("_results.py", "_cli.py"):
        assert (pkg / role).is_file(), f"{capability}/ has no {role}"
    public = [p.name for p in pkg.glob("*.py") if not p.name.startswith("_") and p.name != "demo.py"]
    assert public == [], f"{capability}/ has public modules {public}; modules are private by role"


def test_public_api_imports():
    import importlib

    for capability in CAPABILITIES:
        mod = importlib.import_module(f"llmsurrogate.{capability}")
        missing = [n for n in mod.__all__ if not hasattr(mod, n)]
        assert missing == [], f"llmsurrogate.{capability}.__all__ names missing attributes {missing}"
