"""Turn pyfixest's own feols test cases into data: tests/fe/data/pyfixest_feols_cases.json.

Reads pyfixest's test files at tag v0.60.0 from a clone of https://github.com/py-econometrics/pyfixest
(its git directory as the first argument) and, with Python's ``ast`` (no pyfixest code is run or
copied), writes for every ``test_*`` function of the files in ``FILES`` that calls ``feols``:

* its ``pytest.mark.parametrize`` values (formulas, vcov types, weights, ssc settings, split,
  data-generator settings: ``N``, ``seed``, ``beta_type``, ``error_type``, ``dropna``, ``f3_type``),
  the module-level formula lists they name resolved (``ols_fmls + ols_but_not_poisson_fml``);
* the arguments of each ``feols(...)`` call that are literals, parameters or ``ssc(...)`` of
  literals and parameters (a call with another non-literal argument is left out and counted);
* the data generator of the call: ``get_data(...)`` in the function or its fixture
  (``data_feols``: ``get_data(N=1000, seed=76540251, beta_type="2", error_type="2")``), and
  whether the frame is ``.dropna()``-ed.

Each case is one combination of the parameters its call reads (the others, e.g. pyfixest's
demeaner backends, do not change the numbers), deduplicated. Run::

    git clone https://github.com/py-econometrics/pyfixest /tmp/pyfixest   # any clone with tag v0.60.0
    python tests/fe/make_pyfixest_cases.py /tmp/pyfixest                  # or PYFIXEST_GIT=/tmp/pyfixest

tests/fe/test_fe_pyfixest_cases.py runs the cases through both packages.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

TAG = "v0.60.0"
FILES = ["tests/test_vs_fixest.py", "tests/test_ses.py", "tests/test_wls_types.py", "tests/test_predict_resid_fixef.py",
         "tests/test_i.py", "tests/test_multicollinearity.py", "tests/test_others.py", "tests/test_confint.py",
         "tests/test_hac_vs_fixest.py", "tests/test_feols_compressed.py", "tests/test_ssc_backward_compatibility.py",
         "tests/test_api.py", "tests/test_crv1_vcov.py"]
#: the arguments of feols a case records (the data are described by `data`)
ARGS = ("fml", "vcov", "weights", "weights_type", "ssc", "fixef_rm", "collin_tol", "drop_intercept", "split", "fsplit",
        "vcov_kwargs", "use_compression", "reps", "seed_compression", "lean")
DATA_KEYS = ("N", "seed", "beta_type", "error_type", "model")
OUT = Path(__file__).parent / "data" / "pyfixest_feols_cases.json"


class Unresolved(Exception):
    pass


def literal(node, env):
    """The value of ``node`` from literals and the names in ``env`` (params: ("param", name))."""
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        raise Unresolved(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left, env), literal(node.right, env)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        raise Unresolved("+")
    if isinstance(node, ast.Call):
        fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if fn == "ssc":
            return {"__ssc__": {k.arg: literal(k.value, env) for k in node.keywords}}
        if fn == "param":  # pytest.param(value, ...): the value
            return literal(node.args[0], env) if len(node.args) == 1 else [literal(a, env) for a in node.args]
        raise Unresolved(fn)
    return ast.literal_eval(node)


def module_env(tree) -> dict:
    env = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                env[node.targets[0].id] = literal(node.value, env)
            except (Unresolved, ValueError, SyntaxError, TypeError):
                pass
    return env


def fixtures(tree) -> dict:
    """Fixture name -> the get_data keywords of its defaults (data_feols(N=1000, seed=...))."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any("fixture" in ast.unparse(d) for d in node.decorator_list):
            args = node.args
            defaults = dict(zip([a.arg for a in args.args][-len(args.defaults):] if args.defaults else [],
                                args.defaults))
            gd = {}
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("get_data"):
                    for k in call.keywords:
                        v = k.value
                        if isinstance(v, ast.Name) and v.id in defaults:
                            v = defaults[v.id]
                        try:
                            gd[k.arg] = ast.literal_eval(v)
                        except (ValueError, SyntaxError):
                            pass
                    dropna = ".dropna()" in ast.unparse(node)
                    out[node.name] = dict(gd, dropna=dropna)
    return out


def params_of(func, env) -> tuple[dict, list]:
    params, skipped = {}, []
    for d in func.decorator_list:
        if isinstance(d, ast.Call) and ast.unparse(d.func).endswith("parametrize"):
            names = ast.literal_eval(d.args[0])
            names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
            try:
                values = literal(d.args[1], env)
            except (Unresolved, ValueError, SyntaxError, TypeError):
                if "f3_type" in names and "ALL_F3" in env:  # BACKEND_F3: demeaner objects x ALL_F3
                    params["f3_type"] = [("v", v) for v in env["ALL_F3"]]
                skipped += names
                continue
            if len(names) == 1:
                params[names[0]] = [("v", v) for v in values]
            else:
                key = ",".join(names)
                params[key] = [("t", dict(zip(names, v))) for v in values]
    return params, skipped


def calls_of(func):
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("feols", "pf.feols", "pyfixest.feols"):
            yield node


def resolve(value_node, names, local=None):
    """A template: literal, ("param", name) or ssc of those (a name assigned once in the test
    function, ``ssc_ = ssc(k_adj=k_adj)``, is read through)."""
    local = local or {}
    if isinstance(value_node, ast.Name) and value_node.id in names:
        return ("param", value_node.id)
    if isinstance(value_node, ast.Name) and value_node.id in local:
        return resolve(local[value_node.id], names, {})
    if isinstance(value_node, ast.Call) and ast.unparse(value_node.func).endswith("ssc"):
        return {"__ssc__": {k.arg: resolve(k.value, names, local) for k in value_node.keywords}}
    return ast.literal_eval(value_node)


def locals_of(func) -> dict:
    """Names assigned exactly once in ``func`` (to their value)."""
    found: dict = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            found[name] = None if name in found else node.value
    return {k: v for k, v in found.items() if v is not None}


def fill(t, combo):
    if isinstance(t, tuple) and len(t) == 2 and t[0] == "param":
        return combo[t[1]]
    if isinstance(t, dict):
        return {k: fill(v, combo) for k, v in t.items()}
    return t


def main(git_dir: str) -> None:
    cases, left_out, seen = [], [], set()
    for path in FILES:
        try:
            text = subprocess.run(["git", "--git-dir", str(Path(git_dir) / ".git") if (Path(git_dir) / ".git").exists()
                                   else git_dir, "show", f"{TAG}:{path}"], check=True, capture_output=True,
                                  text=True).stdout
        except subprocess.CalledProcessError:
            left_out.append({"file": path, "why": f"not in {TAG}"})
            continue
        tree = ast.parse(text)
        env, fx = module_env(tree), fixtures(tree)
        for func in tree.body:
            if not (isinstance(func, ast.FunctionDef) and func.name.startswith("test")):
                continue
            params, skipped = params_of(func, env)
            flat = {}
            for key, values in params.items():
                flat[key] = values
            arg_names = {a.arg for a in func.args.args}
            data_spec = next((dict(v) for k, v in fx.items() if k in arg_names), None)
            for call in ast.walk(func):
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("get_data"):
                    spec = {}
                    for k in call.keywords:
                        spec[k.arg] = ("param", k.value.id) if isinstance(k.value, ast.Name) else \
                            ast.literal_eval(k.value) if not isinstance(k.value, ast.Call) else None
                    data_spec = dict(spec, dropna=".dropna()" in ast.unparse(func))
                    break
            local = locals_of(func)
            frames = {"data", "df"} | {a for a in arg_names if a in fx or a.startswith("data")}
            for call in calls_of(func):
                template, bad = {}, None
                given = next((k.value for k in call.keywords if k.arg == "data"), call.args[1] if len(call.args) > 1
                             else None)
                if isinstance(given, ast.Name) and given.id not in frames or \
                        given is not None and not isinstance(given, (ast.Name, ast.Call, ast.Attribute)):
                    left_out.append({"file": path, "test": func.name,
                                     "why": f"data built in the test ({ast.unparse(given)})"})
                    continue
                if isinstance(given, ast.Call) and not ast.unparse(given).startswith(tuple(frames)):
                    left_out.append({"file": path, "test": func.name,
                                     "why": f"data built in the test ({ast.unparse(given)[:60]})"})
                    continue
                pos = ["fml", "data", "vcov"]
                for j, a in enumerate(call.args):
                    if j < len(pos) and pos[j] != "data":
                        try:
                            template[pos[j]] = resolve(a, set(flat) | {n for k in flat for n in k.split(",")}, local)
                        except (ValueError, SyntaxError):
                            bad = ast.unparse(a)
                for k in call.keywords:
                    if k.arg in ("data", "demeaner", "demeaner_backend", "copy_data", "store_data", "solver",
                                 "fixef_tol", "fixef_maxiter", "context"):
                        continue
                    try:
                        template[k.arg] = resolve(k.value, set(flat) | {n for key in flat for n in key.split(",")},
                                                  local)
                    except (ValueError, SyntaxError):
                        bad = f"{k.arg}={ast.unparse(k.value)}"
                if "fml" not in template:
                    bad = bad or "fml not given"
                if bad is not None or data_spec is None:
                    left_out.append({"file": path, "test": func.name, "why": f"argument {bad} is not data" if bad
                                     else "no data generator found"})
                    continue
                used = set()

                def refs(t):
                    if isinstance(t, tuple) and len(t) == 2 and t[0] == "param":
                        used.add(t[1])
                    elif isinstance(t, dict):
                        for v in t.values():
                            refs(v)
                refs(template)
                refs(data_spec)
                for extra in ("dropna", "f3_type", "fml_multi"):
                    if extra in flat:
                        used.add(extra)
                keys = [k for k in flat if set(k.split(",")) & used]
                for combo_values in itertools.product(*[flat[k] for k in keys]):
                    combo = {}
                    for k, (kind, v) in zip(keys, combo_values):
                        if kind == "v":
                            combo[k] = v
                        else:
                            combo.update(v)
                    if any(n not in combo and n not in used - set(combo) for n in used if n in flat):
                        pass
                    try:
                        args = {k: fill(v, combo) for k, v in template.items()}
                        data = {k: fill(v, combo) for k, v in data_spec.items()}
                    except (KeyError, ValueError, SyntaxError) as missing:
                        left_out.append({"file": path, "test": func.name, "why": f"parameter {missing} not data"})
                        continue
                    if "dropna" in combo:
                        data["dropna"] = bool(combo["dropna"]) or data.get("dropna", False)
                    if "f3_type" in combo:  # pyfixest skips the types of f3 where the formula has no f3
                        data["f3_type"] = combo["f3_type"] if "f3" in str(args.get("fml")) else "str"
                    if isinstance(args.get("ssc"), dict) and "__ssc__" in args["ssc"]:
                        args["ssc"] = {"k_adj": True, "k_fixef": "nonnested", "G_adj": True, "G_df": "min",
                                       **args["ssc"]["__ssc__"]}
                    data = {k: v for k, v in data.items() if k in DATA_KEYS + ("dropna", "f3_type") and v is not None}
                    args = {k: v for k, v in args.items() if v is not None or k in ("weights",)}
                    case = {"source": f"{path}::{func.name}", "args": args, "data": data}
                    key = json.dumps([case["args"], case["data"]], sort_keys=True, default=str)
                    if key in seen:
                        continue
                    seen.add(key)
                    cases.append(case)
    OUT.parent.mkdir(exist_ok=True)
    rows = lambda items: ",\n".join("  " + json.dumps(c, default=str) for c in items)  # one case a line
    OUT.write_text(f'{{"pyfixest": "{TAG}", "generator": "tests/fe/make_pyfixest_cases.py",\n"cases": [\n'
                   f'{rows(cases)}\n],\n"left_out": [\n{rows(left_out)}\n]}}\n')
    print(f"{len(cases)} cases, {len(left_out)} calls left out -> {OUT}")


if __name__ == "__main__":
    source = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PYFIXEST_GIT")
    if not source or not Path(source).exists():
        sys.exit(f"{'pyfixest clone not found at ' + source if source else 'no pyfixest clone given'}: pass a clone "
                 f"of https://github.com/py-econometrics/pyfixest that has tag {TAG} (its folder or git directory) "
                 "as the first argument or in PYFIXEST_GIT")
    main(source)
