"""The package's layout rules, checked on its import graph (read from the source with ``ast``).

* No import cycle among module-level imports.
* Layers: shared machinery (``llm``, ``quantiles``, ``results``, ``_validation``, ``_cli_support``
  -- the helpers every command is built from --, ...) imports no capability; a capability imports
  no other capability and never the adapters on top (the ``cli`` package: the command registry and
  the general commands; the demo runner ``demo``; the ``rbridge`` package); nothing but ``cli``
  imports a capability's ``_cli`` module. These hold for imports inside functions as well.
* Every capability has the same shape: a public ``__init__`` with ``__all__``, ``_results``,
  ``_cli`` and ``demo`` where it has results, commands or a demo.
* No private module or private name is imported across packages: a package (a capability, ``fe``,
  ``llm``, an adapter) imports another package's public names only (``from ..fe import feols``, not
  ``from ..fe._demean import x`` nor ``from ..llm.scoring import _identity``). The top-level private
  modules (``_validation``, ``_core``, ``_workers``, ...) are shared machinery, meant for every
  package; the one seam is the command registry ``cli`` importing each capability's ``_cli``.
  ``docs/developers.md`` explains the rules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "python" / "llmsurrogate"
CAPABILITIES = ("ess", "transfer", "risk", "lookahead", "ppi")
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
    assert GRAPH["llmsurrogate.cli"]["llmsurrogate._cli_support"] is True


def test_command_registry_names_real_command_modules():
    """The command line's registry imports each command's module by name when the command runs
    (``llmsurrogate.cli.COMMANDS``): every entry is a module of the tree, either a capability's
    ``_cli`` or one of the command line's own modules."""
    from llmsurrogate.cli import COMMANDS

    for name, (module, _, _) in COMMANDS.items():
        assert module in GRAPH, (name, module)
        assert module.startswith("llmsurrogate.cli.") or (
            module.endswith("._cli") and _capability(module) is not None), (name, module)


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


def _package(module: str) -> str:
    """The package a module belongs to: ``llmsurrogate.fe._demean`` -> ``fe``; a top-level module
    is its own package (``llmsurrogate.quantiles`` -> ``quantiles``); the root -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private_imports(module: str, source: str, is_pkg: bool, modules) -> list[str]:
    """The imports in ``source`` (module level or inside functions) of another package's private
    module or private name, as ``"line: target"``."""
    own = _package(module)
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            pairs = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_pkg, node)[0]
            pairs = [(base, a.name) for a in node.names]
        else:
            continue
        for base, name in pairs:
            if base != "llmsurrogate" and not base.startswith("llmsurrogate."):
                continue
            target = f"{base}.{name}" if name is not None and f"{base}.{name}" in modules else base
            pkg = _package(target)
            if pkg in (own, "") or pkg.startswith("_"):
                continue  # the same package, the root, or shared machinery (_validation, _core, ...)
            private_module = any(p.startswith("_") for p in target.split(".")[2:])
            private_name = target == base and name is not None and name.startswith("_") and not name.startswith("__")
            if own == "cli" and pkg in CAPABILITIES and target == f"llmsurrogate.{pkg}._cli":
                continue  # the command registry: the one sanctioned seam (see test_layers)
            if private_module or private_name:
                found.append(f"{node.lineno}: {target}" + (f" ({name})" if private_name else ""))
    return found


def test_private_imports_are_found():
    modules = {"llmsurrogate.fe", "llmsurrogate.fe._demean", "llmsurrogate.llm", "llmsurrogate.llm.scoring",
               "llmsurrogate.lookahead", "llmsurrogate.lookahead._bootstrap", "llmsurrogate._validation"}
    src = "\n".join([
        "from ..fe import feols",                 # public name: fine
        "from .._validation import _is_polars",   # shared machinery: fine
        "from . import _results",                 # own package: fine
        "from ..fe._demean import demean",        # private module
        "from ..fe import _demean",               # private module, named as a name
        "from ..llm.scoring import _identity",    # private name
        "import llmsurrogate.fe._demean",         # absolute import of a private module
        "def f():\n    from ..llm.scoring import _identity",  # inside a function
    ])
    found = _private_imports("llmsurrogate.lookahead._bootstrap", src, False, modules)
    assert [f.split(":")[0] for f in found] == ["4", "5", "6", "7", "9"], found


def test_no_private_module_is_imported_across_packages():
    bad = []
    for name, path in sorted(MODULES.items()):
        bad += [f"{name}:{hit}" for hit in _private_imports(name, path.read_text(), path.name == "__init__.py", MODULES)]
    assert bad == [], "private modules or names imported across packages (use the package's public API):\n" + "\n".join(bad)


def test_tests_mirror_the_package():
    """tests/<package>/ for each package of llmsurrogate (plus common/ for the shared top-level
    modules and package/ for the whole package: layout, docs, wheel, hostile inputs); no test file
    flat in tests/ (only the shared helpers and conftest.py); basenames unique (pytest's default
    import mode puts each folder on sys.path)."""
    tests = Path(__file__).resolve().parents[1]
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    folders = {p.name for p in tests.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))}
    assert folders - {"common", "package"} <= packages, sorted(folders - {"common", "package"} - packages)
    flat = [p.name for p in tests.glob("test_*.py")]
    assert not flat, f"test files belong in tests/<package>/: {flat}"
    names = [p.name for p in tests.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    # what two test files share is a helper module at the top of tests/, never one test file
    # imported by another (that worked only when both sat in one folder, or in collection order)
    borrowed = []
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            borrowed += [f"{path.relative_to(tests)}: {m}" for m in mods
                         if m.startswith("test_") and m != path.stem]
    assert not borrowed, borrowed
