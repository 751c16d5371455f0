"""R's column types across the bridge, with their missing values as missing (issue 10, defect 1).

* :func:`llmsurrogate.rbridge.from_r` decodes the typed columns the R package sends (no R needed).
* Property test across the real route: R generates frames of every column type with and without
  ``NA``, sends them through the R package's ``.frame_arg()`` and reticulate, and the frame Python
  builds agrees, column by column, with rpy2's reading of the same R objects
  (:func:`llmsurrogate.rbridge.r_to_pandas`, which also had integer ``NA`` as -2147483648).
* ``ess()`` from R on R data with ``NA`` and factor outcomes: an error by default, and with
  ``missing = "drop"`` Python's numbers on the complete rows.
"""

from __future__ import annotations

import datetime
import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import rbridge
from llmsurrogate.exceptions import InvalidArgumentError

# the R-package fixtures of the main R bridge tests (Rscript found, package installed in a temp lib)
from _r import _rscript, _show, r_env, rpy2_robjects, rscript  # noqa: F401

INT_NA = -(2**31)  # what reticulate makes of R's NA_integer_


# ---- from_r: decoding, no R needed ------------------------------------------------------------

def test_from_r_puts_none_at_the_missing_positions_of_every_kind():
    frame = {"__rframe__": {"names": ["i", "d", "l", "s", "day", "t", "big"], "columns": [
        {"kind": "integer", "values": [1, INT_NA, 3], "na": 1},
        {"kind": "double", "values": [0.5, float("nan"), float("inf")], "na": [1]},
        {"kind": "logical", "values": [True, True, False], "na": [0]},
        {"kind": "character", "values": ["a", "NA", "NA"], "na": [2]},
        {"kind": "date", "values": [19000.0, float("nan"), -1.0], "na": [1]},
        {"kind": "datetime", "values": [0.5, 86400.0, float("nan")], "na": [2]},
        {"kind": "int64", "values": ["4611686018427387904", "NA", "-3"], "na": [1]},
    ]}}
    out = rbridge.from_r(frame)
    assert out == {
        "i": [1, None, 3],
        "d": [0.5, None, math.inf],
        "l": [None, True, False],
        "s": ["a", "NA", None],  # the string "NA" is a value, R's NA is missing
        "day": [datetime.date(2022, 1, 8), None, datetime.date(1969, 12, 31)],
        "t": [datetime.datetime(1970, 1, 1, 0, 0, 0, 500000, tzinfo=datetime.timezone.utc),
              datetime.datetime(1970, 1, 2, tzinfo=datetime.timezone.utc), None],
        "big": [2**62, None, -3],
    }
    assert type(out["big"][0]) is int
    frame = pd.DataFrame(out)
    assert frame.isna().sum().to_dict() == {"i": 1, "d": 1, "l": 1, "s": 1, "day": 1, "t": 1, "big": 1}


def test_from_r_takes_reticulates_scalars_and_empty_lists():
    # an R vector of length 1 arrives as a scalar, one of length 0 as []
    one = {"__rframe__": {"names": "x", "columns": [{"kind": "integer", "values": INT_NA, "na": 0}]}}
    assert rbridge.from_r(one) == {"x": [None]}
    empty = {"__rframe__": {"names": ["x"], "columns": [{"kind": "character", "values": [], "na": []}]}}
    assert rbridge.from_r(empty) == {"x": []}
    assert rbridge.from_r({"__rvector__": {"kind": "double", "values": 2.5, "na": []}}) == [2.5]
    assert rbridge.from_r([1, 2]) == [1, 2] and rbridge.from_r("y") == "y"


def test_from_r_errors_name_the_column():
    with pytest.raises(InvalidArgumentError, match="column 'x': unknown column kind 'complex'"):
        rbridge.from_r({"__rframe__": {"names": ["x"], "columns": [{"kind": "complex", "values": [1]}]}})
    with pytest.raises(InvalidArgumentError, match="column 'd': a date value is outside Python's range"):
        rbridge.from_r({"__rframe__": {"names": ["d"], "columns": [{"kind": "date", "values": [1e9], "na": []}]}})


def test_call_decodes_every_argument():
    values = {"__rvector__": {"kind": "integer", "values": [3, 1, 2], "na": []}}
    assert rbridge.call("quantiles.upper_quantile", values, 0.5) == 2.0
    frame = {"__rframe__": {"names": ["y", "llm"], "columns": [
        {"kind": "double", "values": [0.1, 0.5, float("nan"), 2.0, 1.0, 0.3, 0.7, 1.1], "na": [2]},
        {"kind": "integer", "values": [0, 1, 1, 2, 1, 0, 1, INT_NA], "na": [7]}]}}
    with pytest.raises(Exception, match="non-finite|missing"):
        rbridge.call("ess.equivalent_sample_size", frame, "y", "llm", algorithm="mean", grid=[1, 2])
    with pytest.warns(Warning, match="missing='drop': removed 2 of 8 rows"):
        res = rbridge.call("ess.equivalent_sample_size", frame, "y", "llm", algorithm="mean", grid=[1, 2],
                           missing="drop")
    fields = json.loads(res["json"])["fields"]
    assert fields["n"] == 6
    assert fields["llm_error"] == pytest.approx(np.mean((np.array([0.1, 0.5, 2.0, 1.0, 0.3, 0.7])
                                                         - np.array([0, 1, 2, 1, 0, 1])) ** 2))


def test_synthetic_census_is_callable_from_r():
    out = rbridge.call("testing.synthetic_census", 50, seed=3)
    cols = out["__frame__"]
    assert len(cols["AGEP"]) == 50 and None in cols["WKHP"]


# ---- across the real route (R, reticulate, rpy2) -----------------------------------------------

# R code generating frames of every column type, with and without NA; each frame is saved as RDS
# (read back by rpy2) and sent through .frame_arg() + from_r() (pickled by Python).
R_GENERATE = r"""
library(llmsurrogate)
set.seed(11)
out <- Sys.getenv("OUT_DIR")
gen <- list(
  integer = function(n) sample(c(-5L, 0L, 7L, .Machine$integer.max, -.Machine$integer.max), n, TRUE),
  double = function(n) sample(c(-1.5, 0, 1 / 3, 1e300, -Inf, Inf), n, TRUE),
  logical = function(n) sample(c(TRUE, FALSE), n, TRUE),
  character = function(n) sample(c("a", "NA", "", "caf\u00e9"), n, TRUE),
  factor = function(n) factor(sample(c("no", "yes", "NA"), n, TRUE), levels = c("yes", "no", "NA", "unused")),
  Date = function(n) as.Date("2020-02-28") + sample(c(-40000L, -1L, 0L, 30000L), n, TRUE),
  POSIXct = function(n) as.POSIXct("2021-03-04 05:06:07", tz = "UTC") + sample(c(-1e9, 0, 1.5, 3600), n, TRUE),
  integer64 = function(n) bit64::as.integer64(sample(c("-9007199254740993", "0", "42", "4611686018427387904"), n, TRUE))
)
rb <- reticulate::import("llmsurrogate.rbridge", convert = FALSE)
pickle <- reticulate::import("pickle", convert = FALSE)
builtins <- reticulate::import_builtins(convert = FALSE)
k <- 0L
for (n in c(1L, 3L, 25L)) for (share in c(0, 0.4, 1)) {
  k <- k + 1L
  df <- data.frame(row = seq_len(n))
  for (type in names(gen)) {
    x <- gen[[type]](n)
    if (share > 0) x[sample.int(n, max(1L, round(share * n)))] <- NA
    df[[type]] <- x
  }
  saveRDS(df, file.path(out, sprintf("frame%02d.rds", k)))
  f <- builtins$open(file.path(out, sprintf("frame%02d.pkl", k)), "wb")
  pickle$dump(rb$from_r(llmsurrogate:::.frame_arg(df)), f)
  f$close()
}
cat("FRAMES=", k, "\n", sep = "")
"""


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, pd.Timestamp):
        a = a.to_pydatetime()
    if isinstance(b, pd.Timestamp):
        b = b.to_pydatetime()
    return a == b


def test_every_column_type_crosses_from_r_with_missing_as_missing(rscript, r_env, rpy2_robjects, tmp_path):
    env = dict(r_env, OUT_DIR=str(tmp_path))
    proc = _rscript(rscript, env, R_GENERATE)
    assert proc.returncode == 0, _show(proc)
    n_frames = int(proc.stdout.strip().splitlines()[-1].split("=")[1])
    assert n_frames == 9
    ro = rpy2_robjects
    for k in range(1, n_frames + 1):
        r_frame = ro.r["readRDS"](str(tmp_path / f"frame{k:02d}.rds"))
        r_missing = {name: list(ro.r["is.na"](r_frame.rx2(name))) for name in r_frame.names}
        via_reticulate = pd.DataFrame(pickle.loads((tmp_path / f"frame{k:02d}.pkl").read_bytes()))
        via_rpy2 = rbridge.r_to_pandas(r_frame)
        assert list(via_reticulate.columns) == list(via_rpy2.columns) == list(r_frame.names)
        for col in via_reticulate.columns:
            info = f"frame {k}, column {col}"
            assert via_reticulate[col].isna().tolist() == r_missing[col], info
            assert via_rpy2[col].isna().tolist() == r_missing[col], info
            a = via_reticulate[col].astype(object).tolist()
            b = via_rpy2[col].astype(object).tolist()
            for i, missing in enumerate(r_missing[col]):
                if not missing:
                    assert _same(a[i], b[i]), f"{info}, row {i + 1}: {a[i]!r} != {b[i]!r}"
        # no value is R's integer NA in disguise
        for col in ("integer", "row"):
            assert INT_NA not in via_reticulate[col].dropna().tolist()
        big = via_reticulate["integer64"]
        if not big.isna().any():
            assert all(type(v) is int for v in big.tolist())  # exact beyond 2**53


def test_r_to_pandas_keeps_missing_values_missing(rpy2_robjects):
    ro = rpy2_robjects
    aq = rbridge.r_to_pandas(ro.r("airquality"))
    assert aq["Ozone"].isna().sum() == 37 and aq["Solar.R"].isna().sum() == 7
    assert aq["Ozone"].min() == 1  # not -2147483648
    assert aq["Temp"].dtype.kind == "i"
    frame = rbridge.r_to_pandas(ro.r(
        "data.frame(f = factor(c('b', NA), levels = c('a', 'b')), d = as.Date(c(NA, '2020-01-01')),"
        " l = c(NA, TRUE))"))
    assert isinstance(frame["f"].dtype, pd.CategoricalDtype) and list(frame["f"].cat.categories) == ["a", "b"]
    assert frame.isna().to_numpy().tolist() == [[False, True, True], [True, False, False]]
    assert frame["d"][1] == datetime.date(2020, 1, 1)
    assert list(rbridge.r_to_pandas(ro.r("mtcars")).index[:1]) == ["Mazda RX4"]


R_ESS = r"""
library(llmsurrogate)
aq <- airquality
aq$rule <- -147 + 2.44 * aq$Temp
err <- tryCatch(ess(aq, "Ozone", "rule", algorithm = "mean", grid = c(2, 5)), llmsurrogate_error = conditionMessage)
res <- ess(aq, "Ozone", "rule", features = c("Solar.R", "Wind", "Temp"), algorithm = "lasso",
           grid = c(2, 5, 10), seed = 1, missing = "drop")
set.seed(9)
x <- rnorm(120)
yes <- x + rnorm(120, sd = 0.5) > 0
d <- data.frame(x = x, y = factor(ifelse(yes, "yes", "no")), rule = as.integer(yes))
fac <- ess(d, "y", "rule", features = "x", algorithm = "mean", loss = "zero_one", grid = c(2, 5), seed = 1)
num <- d
num$y <- as.integer(num$y == "yes")
ref <- ess(num, "y", "rule", features = "x", algorithm = "mean", loss = "zero_one", grid = c(2, 5), seed = 1)
cat(jsonlite::toJSON(list(error = err, n = res$n, llm_error = res$llm_error, lower_bound = res$lower_bound,
                          algo_error = res$table$algo_error, fac_llm_error = fac$llm_error,
                          same_as_01 = identical(fac$table, ref$table)), digits = NA, auto_unbox = TRUE))
"""


def test_ess_from_r_on_airquality_and_a_factor_outcome(rscript, r_env, rpy2_robjects):
    proc = _rscript(rscript, r_env, R_ESS)
    assert proc.returncode == 0, _show(proc)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # integer NA in the outcome: an error naming the column and the (1-based) row, not errors near 1e18
    assert got["error"].startswith("column `Ozone` has a missing value (NA) in row 5")
    # missing = "drop": Python's numbers on the complete rows
    from llmsurrogate.ess import equivalent_sample_size

    aq = rbridge.r_to_pandas(rpy2_robjects.r("airquality"))
    aq["rule"] = -147 + 2.44 * aq["Temp"]
    with pytest.warns(Warning, match="missing='drop'"):
        py = equivalent_sample_size(aq, "Ozone", "rule", features=["Solar.R", "Wind", "Temp"], algorithm="lasso",
                                    grid=[2, 5, 10], seed=1, missing="drop")
    assert got["n"] == py.n == 111
    assert got["lower_bound"] == py.lower_bound
    assert got["llm_error"] == pytest.approx(py.llm_error, rel=1e-14)
    np.testing.assert_allclose(got["algo_error"], py.table["algo_error"].to_numpy(), rtol=1e-12)
    assert max(abs(v) for v in got["algo_error"]) < 1e4
    # a two-level factor outcome with a perfect 0/1 rule: error 0 (was 1), as with the outcome coded 0/1
    assert got["fac_llm_error"] == 0
    assert got["same_as_01"] is True
