"""The plain-value side of the R bridge (no R needed)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import rbridge
from llmsurrogate.exceptions import InvalidArgumentError


def test_to_r_columns_handles_missing_categoricals_and_numpy_types():
    frame = pd.DataFrame({"x": [1.5, np.nan], "n": np.array([1, 2], dtype=np.int64),
                          "g": pd.Categorical(["a", None]), "b": [True, False]})
    cols = rbridge.to_r_columns(frame)
    assert cols == {"x": [1.5, None], "n": [1, 2], "g": ["a", None], "b": [True, False]}
    assert all(type(v) in (float, int, str, bool, type(None)) for col in cols.values() for v in col)


def test_call_returns_plain_values_only():
    out = rbridge.call("quantiles.upper_quantile", [1.0, 2.0, 3.0], [0.5, 1.0])
    assert out == [2.0, 3.0] and all(type(v) is float for v in out)
    assert rbridge.call("quantiles.quantile_interval", [1.0, 2.0, 3.0], 0.9) == [1.0, 3.0]
    assert rbridge.call("quantiles.weighted_upper_quantile", [1.0], [1.0], 0.9, inf_weight=1.0) == math.inf
    res = rbridge.call("demo.run_demo")
    assert res["__result__"] == "IntervalTable" and len(res["tidy"]["__frame__"]["model"]) == 21
    mat = rbridge.call("datasets.load_transfer_errors", "RF")
    assert list(mat["__frame__"])[0] == "train" and len(mat["__frame__"]) == 45


def test_call_refuses_unlisted_functions():
    with pytest.raises(InvalidArgumentError, match="not callable from R"):
        rbridge.call("os.system", "true")


def test_bad_frames_are_named():
    with pytest.raises(InvalidArgumentError, match="`data` must be a pandas or polars DataFrame"):
        rbridge.to_r_columns(42)
    from llmsurrogate.exceptions import ShapeError

    with pytest.raises(ShapeError, match="same length"):
        rbridge.to_r_columns({"a": [1, 2], "b": [1]})


def test_large_integers_cross_as_doubles():
    # reticulate 1.28 would turn 2**40 into 0L and 2**31 into NA
    out = rbridge.to_plain({"small": np.int64(7), "big": np.int64(2**40), "edge": 2**31, "flag": np.bool_(True)})
    assert out == {"small": 7, "big": float(2**40), "edge": float(2**31), "flag": True}
    assert type(out["small"]) is int and type(out["big"]) is float and type(out["flag"]) is bool


def _r_package_calls() -> set[str]:
    """Every ``"module.function"`` the R package's code hands to ``.call()`` / ``.call_in()``."""
    import re
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "r-bridge" / "llmsurrogate" / "R"
    text = "\n".join(p.read_text() for p in src.glob("*.R"))
    return set(re.findall(r'\.call(?:_in)?\((?:list\()?(?:call, )?"([a-z_]+\.[a-z_]+)"', text))


def test_every_function_the_r_package_calls_is_an_adapter_module_entry():
    from llmsurrogate.rbridge import ADAPTERS, r_functions

    calls = _r_package_calls()
    assert len(calls) > 25 and {"fe.feols", "lookahead.bootstrap", "transfer.forecast_interval"} <= calls
    available = r_functions()
    assert calls <= set(available), sorted(calls - set(available))
    # one convention: each entry is the public function itself or the adapter module's r_<name>
    import importlib

    for key, fn in available.items():
        module, _, name = key.partition(".")
        assert module in ADAPTERS
        adapter = importlib.import_module(f"llmsurrogate.rbridge.{module}")
        public = getattr(importlib.import_module(f"llmsurrogate.{module}"), name, None)
        assert fn is public or (fn.__name__.startswith("r_") and getattr(adapter, fn.__name__) is fn), key


def test_adapters_stay_importable_from_the_bridge_and_by_their_earlier_names():
    from llmsurrogate.rbridge import fe, lookahead

    assert rbridge.r_feols is fe.r_feols and rbridge.r_etable is fe.r_etable
    assert rbridge.r_lookahead_bootstrap is lookahead.r_lookahead_bootstrap and rbridge.r_lap is lookahead.r_lap
    assert {"feols", "etable"} <= rbridge.R_CALLABLE["fe"]
    with pytest.raises(InvalidArgumentError) as new:
        rbridge.call("fe.etable", [], type="text")
    with pytest.raises(InvalidArgumentError) as old:  # the name the R package of the previous release calls
        rbridge.call("rbridge.r_etable", [], type="text")
    assert str(old.value) == str(new.value)


def test_transferuq_interval_adapters_take_and_name_coverage():
    errors = {"train": [1, 2, 1, 3, 2, 3], "test": [2, 1, 3, 1, 3, 2], "error": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}
    from llmsurrogate import transfer
    from llmsurrogate.exceptions import CoverageWarning

    with pytest.warns(CoverageWarning):
        assert rbridge.call("transfer.forecast_interval", errors, 0.5, side="two", pooled=True) == \
            list(transfer.forecast_interval(errors, 0.5, side="two", pooled=True))
    with pytest.raises(InvalidArgumentError, match="argument `coverage` must lie in"):
        rbridge.call("transfer.forecast_interval", errors, 1.5, side="two", pooled=True)


def test_r_first_call_imports_only_what_it_needs():
    """R's first call imports llmsurrogate.rbridge: that loads neither numpy nor pandas nor a
    capability, and upper_quantile() from R loads no pandas (issue 26, item 3: a slow first call)."""
    import subprocess
    import sys

    code = ("import sys, llmsurrogate.rbridge as rb\n"
            "heavy = ('numpy', 'pandas', 'scipy', 'llmsurrogate.results', 'llmsurrogate.transfer', 'llmsurrogate.ess')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n"
            "print(rb.r_call('quantiles.upper_quantile', [1.0, 2.0, 3.0], [0.5])['value'])\n"
            "print(sorted(m for m in ('pandas', 'scipy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "[2.0]", "[]"]
