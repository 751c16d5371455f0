"""pyfixest 0.60's own feols test cases, as data (tests/fe/data/pyfixest_feols_cases.json, written
by tests/fe/make_pyfixest_cases.py from pyfixest's tests at v0.60.0: formulas, vcov types,
weights, ssc settings, split, data-generator settings), run through pyfixest and llmsurrogate.fe.

Each case ends in one of:

* ``equal``: both fit; same coefficient names, coefficients and standard errors equal to 1e-6
  (relative, or absolute below 1);
* ``refused``: pyfixest fits, llmsurrogate refuses with an InvalidArgumentError that names the
  argument responsible (an option of the case, or ``fml``);
* ``both refuse``: pyfixest raises too (the case tests pyfixest's errors), and ours is an
  InvalidArgumentError (never a TypeError);

and never ``differs`` (a silent difference), ``unclear`` (any other exception of ours, or a
refusal that names none of the case's options) nor ``ours only`` (pyfixest refuses, we fit: no
such case so far). The
test runs a fixed sample (every ``STRIDE``-th case) to stay quick; ``python
tests/fe/test_fe_pyfixest_cases.py`` runs them all and prints the counts.
"""

from __future__ import annotations

import collections
import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from llmsurrogate import fe
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateError

CASES = json.loads((Path(__file__).parent / "data" / "pyfixest_feols_cases.json").read_text())["cases"]
STRIDE = 12
TOL = 1e-6
#: pyfixest's feols keywords at which the case is not the default (what a refusal may name)
DEFAULTS = {"ssc": {"k_adj": True, "k_fixef": "nonnested", "G_adj": True, "G_df": "min"}, "split": None,
            "fsplit": None, "vcov_kwargs": None, "use_compression": False, "drop_intercept": False, "lean": False,
            "weights_type": "aweights", "weights": None, "collin_tol": 1e-9, "fixef_rm": "singleton", "reps": 100}


def make_data(spec: dict):
    import pandas as pd
    import pyfixest as pf

    kw = {k: spec[k] for k in ("N", "seed", "beta_type", "error_type", "model") if k in spec}
    data = pf.get_data(**kw)
    if spec.get("dropna"):
        data = data.dropna()
    data = data.reset_index(drop=True)
    data["id"] = np.arange(len(data))  # test_ses.py's one-row clusters
    f3 = spec.get("f3_type")
    if f3 == "categorical":
        data["f3"] = pd.Categorical(data["f3"])
    elif f3 == "int":
        with np.errstate(invalid="ignore"):
            data["f3"] = data["f3"].astype(float).astype(np.int32)
    elif f3 == "str":
        data["f3"] = data["f3"].astype(str)
    elif f3 == "object":
        data["f3"] = data["f3"].astype(object)
    elif f3 == "float":
        data["f3"] = data["f3"].astype(float)
    return data


def _options(args: dict) -> set:
    """The arguments of a case that are not pyfixest's defaults (and fml, vcov: always nameable)."""
    out = {"fml", "vcov", "data"}
    for k, v in args.items():
        if k in DEFAULTS and v != DEFAULTS[k]:
            out.add(k)
        elif k not in DEFAULTS:
            out.add(k)
    return out


def run_case(case: dict) -> tuple[str, str]:
    """(outcome, detail) of one case (see the module docstring)."""
    import pyfixest as pf

    args = dict(case["args"])
    data = make_data(case["data"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ref = pf.feols(data=data.copy(), demeaner=pf.MapDemeaner(fixef_tol=1e-10), **args)
            ref_error = None if hasattr(ref, "coef") and not hasattr(ref, "all_fitted_models") else "multi"
        except Exception as err:  # pyfixest's own refusal
            ref, ref_error = None, f"{type(err).__name__}: {err}"
        try:
            ours = fe.feols(data=data, **args)
            our_error = None
        except InvalidArgumentError as err:
            ours, our_error = None, str(err)
        except LLMSurrogateError as err:
            return "unclear", f"{type(err).__name__}: {err}"
        except Exception as err:  # noqa: BLE001 - any other exception is the failure this test looks for
            return "unclear", f"{type(err).__name__}: {err}"
    if our_error is not None:
        if ref_error is not None and ref_error != "multi":
            return "both refuse", f"ours: {our_error[:80]} | pyfixest: {ref_error[:80]}"
        named = set(re.findall(r"argument `(\w+)`", our_error))
        if named & _options(args):
            return "refused", f"{sorted(named & _options(args))[0]}: {our_error[:100]}"
        return "unclear", f"refused without naming an option of the case: {our_error[:160]}"
    if ref_error is not None:
        return "ours only", f"pyfixest: {ref_error[:120]}"
    names_o, names_r = list(ours.coef().index), list(ref.coef().index)
    if names_o != names_r:
        return "differs", f"names {names_o} vs {names_r}"
    if ours.nobs != ref._N:
        return "differs", f"nobs {ours.nobs} vs {ref._N}"

    def diff(a, b):
        a, b = np.asarray(a, float), np.asarray(b, float)
        return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0))) if a.size else 0.0

    dc, ds = diff(ours.coef(), ref.coef()), diff(ours.se(), ref.se())
    if dc <= TOL and ds <= TOL:
        return "equal", f"coef {dc:.1e} se {ds:.1e}"
    return "differs", f"coef {dc:.1e} se {ds:.1e}"


SAMPLE = CASES[::STRIDE]


@pytest.mark.parametrize("case", SAMPLE, ids=[f"{i * STRIDE}:{c['args'].get('fml')}" for i, c in enumerate(SAMPLE)])
def test_pyfixest_case(case):
    pytest.importorskip("pyfixest")
    outcome, detail = run_case(case)
    assert outcome in ("equal", "refused", "both refuse"), f"{outcome}: {detail} ({case})"


def test_the_cases_are_pyfixests_tests():
    sources = collections.Counter(c["source"].split("::")[0] for c in CASES)
    assert len(CASES) > 1500 and sources["tests/test_vs_fixest.py"] > 1000
    fmls = {c["args"]["fml"] for c in CASES}
    assert {"Y ~ X1 + i(f1, ref = 1)", "Y ~ X1 + C(f1) | f2 + f3", "log(Y) ~ X1", "Y~X1|f2^f3"} <= fmls


if __name__ == "__main__":  # the whole suite, once: counts and the worst differences
    counts, worst, details = collections.Counter(), {"coef": 0.0, "se": 0.0}, collections.defaultdict(list)
    for i, case in enumerate(CASES):
        outcome, detail = run_case(case)
        counts[outcome] += 1
        details[outcome].append((i, case["args"], detail))
        if outcome == "equal":
            m = re.match(r"coef (\S+) se (\S+)", detail)
            worst["coef"], worst["se"] = max(worst["coef"], float(m[1])), max(worst["se"], float(m[2]))
    print(dict(counts), "worst (equal cases):", worst)
    for outcome in ("differs", "unclear", "ours only"):
        for i, a, d in details[outcome][:40]:
            print(outcome, i, a, d)
    refusals = collections.Counter(d.split(":")[0] for _, _, d in details["refused"])
    print("refused by argument:", dict(refusals))
    for outcome in ("refused", "both refuse"):
        kinds = collections.Counter((a.get("fml") if d.startswith(("fml", "ours: argument `fml`")) else "") + " | "
                                    + d[:110] for _, a, d in details[outcome])
        for k, n in kinds.most_common(60):
            print(outcome, n, k)
    sys.exit(1 if counts["differs"] or counts["unclear"] else 0)
