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
