"""Regression tests of issue 22 (reliability, third round), items 2-5 and the polars half of 7.

Each test is named after the defect it pins and failed before its fix: user templates that walked
object attributes (item 2), raw exceptions where the package promises its own (item 3), meaningless
inputs accepted (item 4), a forecast interval whose guaranteed coverage is far below the nominal one
without a word (item 5), and polars frames and series with nulls on every entry point that takes a
table (item 7): a clear error, or the documented missing-value rule with the numbers of the same
call on pandas with the rows dropped.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from llmsurrogate import fe, lookahead, quantiles, risk, transfer
from llmsurrogate.exceptions import (
    CoverageWarning,
    InvalidArgumentError,
    LLMSurrogateError,
    LLMSurrogateWarning,
)
from llmsurrogate.llm.factory import load_task
from llmsurrogate.llm.prompts import persona_prompt
from llmsurrogate.llm.tasks import Column

TASK_HEAD = 'name = "T"\ntarget = "Y"\n'
QUESTION = '[question]\ntext = "Q?"\noptions = [{text = "No", value = 0}, {text = "Yes", value = 1}]\n'
COLUMN = '[[columns]]\nname = "AGE"\ndescription = "age"\nformat = "{} years old"\n'


def write_task(tmp_path, text: str | bytes):
    path = tmp_path / "task.toml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# ---- item 2: templates walk object attributes -------------------------------------------------------

def test_task_file_column_format_cannot_walk_attributes(tmp_path):
    path = write_task(tmp_path, TASK_HEAD + QUESTION + COLUMN.replace("{} years old", "{0.__class__.__mro__}"))
    with pytest.raises(InvalidArgumentError, match=r"argument `task`.*column 'AGE'.*`format`.*attribute or index"):
        load_task(str(path))
    for fmt in ("{0[0]}", "{0!r}", "{:{}}", "{1}", "{x}", "{} {}"):
        with pytest.raises(InvalidArgumentError, match="`format`"):
            Column("AGE", "age", ("int", fmt))
    assert Column("AGE", "age", ("int", "{0:>3} years")).render(7) == "  7 years"


def test_recall_prompt_template_cannot_walk_attributes():
    with pytest.raises(InvalidArgumentError, match=r"argument `template`.*attribute or index"):
        lookahead.recall_prompt("2020-07-28", "Acme", "ACME", template="{date.__class__.__mro__}")
    with pytest.raises(InvalidArgumentError, match="argument `template`"):
        lookahead.recall_prompt("2020-07-28", "Acme", "ACME", template="{date!r} {ticker}")
    assert lookahead.recall_prompt("2020-07-28", "Acme", "ACME", template="{date:%d.%m.%Y} {ticker:>6}") == \
        "28.07.2020   ACME"


@pytest.mark.parametrize("template", ["{AGE.__class__.__mro__}", "{AGE[0]}", "{AGE!a}", "{AGE:{SEX}}"])
def test_persona_prompt_template_cannot_walk_attributes(template):
    with pytest.raises(InvalidArgumentError, match="argument `template`"):
        persona_prompt(template, {"AGE": 37.0, "SEX": "male"})


# ---- item 3: raw exceptions where the package promises its own ---------------------------------------

def test_load_task_on_a_non_utf8_file_is_our_error(tmp_path):
    path = write_task(tmp_path, (TASK_HEAD + QUESTION + COLUMN).encode().replace(b'"T"', b'"T\xff"'))
    with pytest.raises(InvalidArgumentError, match=r"argument `task`.*not UTF-8"):
        load_task(str(path))


def test_task_file_without_question_options_is_our_error(tmp_path):
    path = write_task(tmp_path, TASK_HEAD + '[question]\ntext = "Q?"\n' + COLUMN)
    with pytest.raises(InvalidArgumentError, match=r"argument `task`.*\[question\] has no `options`"):
        load_task(str(path))


def test_task_file_column_without_name_is_our_error(tmp_path):
    path = write_task(tmp_path, TASK_HEAD + QUESTION + COLUMN.replace('name = "AGE"\n', ""))
    with pytest.raises(InvalidArgumentError, match=r"argument `task`.*\[\[columns\]\] entry 1 has no `name`"):
        load_task(str(path))


def test_news_prompt_on_nat_is_our_error():
    with pytest.raises(InvalidArgumentError, match="argument `date`"):
        lookahead.news_prompt("Kodak soars.", pd.NaT, "Eastman Kodak Company", "KODK")


def test_persona_prompt_with_an_unclosed_brace_is_our_error():
    with pytest.raises(InvalidArgumentError, match="argument `template` is not a valid template"):
        persona_prompt("You are {AGE", {"AGE": 37})


def test_persona_prompt_with_a_huge_width_is_refused_before_allocating():
    with pytest.raises(InvalidArgumentError, match=r"argument `template`.*width or precision above 10,000"):
        persona_prompt("{AGE:>3000000000}", {"AGE": 37})
    assert persona_prompt("{AGE:>4}", {"AGE": 37}) == "  37"


def test_demean_of_a_3d_array_is_our_error():
    with pytest.raises(InvalidArgumentError, match="argument `x`"):
        fe.demean(np.ones((2, 2, 2)), [np.array([0, 1])])


def test_lap_from_logprobs_on_strings_is_our_error():
    with pytest.raises(InvalidArgumentError, match="argument `logprobs`"):
        lookahead.lap_from_logprobs((np.array(["a", "b"]), [0, 2]))


# ---- item 4: meaningless inputs accepted -------------------------------------------------------------

def test_lap_from_logprobs_refuses_positive_logprobs():
    with pytest.raises(InvalidArgumentError, match="argument `logprobs` holds a positive log-probability"):
        lookahead.lap_from_logprobs((np.array([np.nan, 2.0, 2.0]), [0, 3]))
    assert lookahead.lap_from_logprobs((np.array([np.nan, 0.0, -1.0]), [0, 3]), k=1.0)[0] == \
        pytest.approx(math.exp(-0.5))


@pytest.mark.parametrize("values, offsets", [([-9.0, np.nan, -1, -2], [1, 4]), ([np.nan, -1, -2, -9.0], [0, 3])],
                         ids=["before-first", "after-last"])
def test_lap_from_logprobs_refuses_values_outside_every_text(values, offsets):
    with pytest.raises(InvalidArgumentError, match="argument `offsets` must run from 0 to the number of values"):
        lookahead.lap_from_logprobs((np.array(values), offsets))


def test_lap_from_logprobs_refuses_fractional_offsets():
    values = np.array([np.nan, -1, -2, -3.0])
    with pytest.raises(InvalidArgumentError, match="argument `offsets` must hold whole numbers"):
        lookahead.lap_from_logprobs((values, [0.0, 2.7, 4.0]))
    np.testing.assert_array_equal(lookahead.lap_from_logprobs((values, [0.0, 2.0, 4.0])),   # R's doubles
                                  lookahead.lap_from_logprobs((values, [0, 2, 4])))


def test_lap_from_logprobs_refuses_complex_values():
    with pytest.raises(InvalidArgumentError, match="argument `logprobs` holds complex numbers"):
        lookahead.lap_from_logprobs((np.array([np.nan, -1 + 1j, -2]), [0, 3]))


def test_masked_arrays_are_refused_not_unmasked():
    masked = np.ma.array([1.0, 100.0, 2.0], mask=[0, 1, 0])
    with pytest.raises(InvalidArgumentError, match=r"argument `values` is a masked array with 1 masked entries"):
        quantiles.upper_quantile(masked, 1.0)
    E = np.array([[0.0, 1, 2], [3, 0, 4], [5, 6, 0]])
    with pytest.raises(InvalidArgumentError, match="masked array"):
        transfer.forecast_interval(np.ma.masked_greater(E, 5), tau=0.8)
    assert quantiles.upper_quantile(np.ma.array([1.0, 100.0, 2.0]), 1.0) == 100.0   # nothing masked: the data
    assert quantiles.upper_quantile(masked.compressed(), 1.0) == 2.0


def test_demean_refuses_nan_codes():
    with pytest.raises(InvalidArgumentError, match=r"argument `codes\[0\]` has a non-finite value"):
        fe.demean(np.ones(3), [np.array([0.0, np.nan, 1.0])])
    assert fe.demean(np.array([1.0, 3.0, 5.0]), [np.array([0.0, 0.0, 1.0])]).values.ravel().tolist() == [-1.0, 1.0, 0.0]


def test_demean_refuses_negative_codes():
    with pytest.raises(InvalidArgumentError, match=r"argument `codes\[0\]` must hold codes 0..G-1.*got -1 at position 1"):
        fe.demean(np.ones(3), [np.array([0, -1, 1])])


def test_first_words_refuses_a_negative_count():
    with pytest.raises(InvalidArgumentError, match="argument `n` must be >= 1"):
        lookahead.first_words("a b c d", -2)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 on this platform")
def test_longdouble_refused_where_float64_would_round_it():
    values = np.array([1.0, 1.0], dtype=np.longdouble)
    values[1] += np.longdouble(2) ** -60
    with pytest.raises(InvalidArgumentError, match=r"argument `values` holds float128 \(long double\) numbers"):
        quantiles.upper_quantile(values, 1.0)
    with pytest.raises(InvalidArgumentError, match="argument `logprobs`"):
        lookahead.lap_from_logprobs((-values, [0, 2]))
    exact = np.array([1.5, 2.0, -3.25], dtype=np.longdouble)   # float64 holds these: accepted, same answer
    assert quantiles.upper_quantile(exact, 0.5) == quantiles.upper_quantile(exact.astype(float), 0.5)


def test_bootstrap_pvalue_counts_the_draws_it_leaves_out():
    with pytest.warns(LLMSurrogateWarning, match=r"1 of 3 values of `draws` are not finite"):
        assert lookahead.bootstrap_p_value([np.nan, 1.0, -1.0]) == 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lookahead.bootstrap_p_value([1.0, -1.0]) == 0.5


def test_magnitudes_refuse_a_zero_standard_deviation():
    with pytest.raises(InvalidArgumentError, match="argument `lap_sd` must be > 0"):
        lookahead.magnitudes(0.1, 2.0, 0.07, 0.0)
    with pytest.raises(InvalidArgumentError, match="argument `signal_sd` must be > 0"):
        lookahead.magnitudes(0.1, 2.0, 0.07, 0.03, gamma_baseline=0.2, signal_sd=0.0)


# ---- item 5: guarantees far below what was asked -----------------------------------------------------

def test_forecast_interval_warns_when_the_guarantee_is_far_below_the_nominal_coverage():
    E = np.array([[np.nan, 1.0], [2.0, np.nan]])
    with pytest.warns(CoverageWarning, match=r"guaranteed coverage is 0\.3, well below the nominal 0\.9"):
        interval = transfer.forecast_interval(E, level=0.9)
    assert interval == (1.0, 2.0) and interval.guaranteed == pytest.approx(transfer.coverage_bound(2, 1, 0.95))
    with pytest.warns(CoverageWarning, match=r"0\.3, well below the nominal 0\.9"):   # tau: nominal 2 tau - 1
        assert transfer.forecast_interval(E, tau=0.95, mode="transferUQ").guaranteed == pytest.approx(0.3)


def test_forecast_interval_is_quiet_where_the_guarantee_is_near_the_nominal_coverage():
    from llmsurrogate import datasets

    E = datasets.load_transfer_errors("abdg")   # n = 44 domains, r = 1: the paper's design
    with warnings.catch_warnings():
        warnings.simplefilter("error", CoverageWarning)
        interval = transfer.forecast_interval(E, level=0.9)
        corrected = transfer.forecast_interval(E, level=0.9, correction=True)
    assert interval.guaranteed == pytest.approx(0.9 * 43 / 45) and corrected.guaranteed == pytest.approx(0.9)
    table = transfer.forecast_intervals({"RF": E}, level=0.9).table
    assert (table["lower"][0], table["upper"][0]) == tuple(interval)   # numbers unchanged


# ---- item 7: polars frames and series with nulls -----------------------------------------------------

pl = pytest.importorskip("polars")


def _frame(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n), "llm": rng.normal(size=n),
                         "firm": rng.integers(0, 6, n), "date": rng.integers(0, 5, n), "lap": rng.uniform(size=n),
                         "b": rng.normal(size=n) > 0})


def _null(frame: pd.DataFrame, column: str, row: int = 3):
    """``frame`` as polars with a null at ``row`` of ``column`` (its dtype kept)."""
    p = pl.from_pandas(frame)
    values = p[column].to_list()
    values[row] = None
    return p.with_columns(pl.Series(column, values, dtype=p[column].dtype))


@pytest.mark.parametrize("column", ["y", "x", "firm", "b"])
def test_polars_nulls_in_feols_drop_the_rows_as_pandas(column):
    df = _frame()
    with pytest.warns(LLMSurrogateWarning, match="1 row"):
        fit = fe.feols("y ~ x + b | firm", _null(df, column))
    ref = fe.feols("y ~ x + b | firm", df.drop(index=3))
    assert fit.nobs == ref.nobs == 59
    np.testing.assert_allclose(fit.coef().to_numpy(), ref.coef().to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("column", ["y", "llm", "lap", "firm"])
def test_polars_nulls_in_the_lookahead_test_drop_the_rows_as_pandas(column):
    df = _frame()
    with pytest.warns(LLMSurrogateWarning, match="1 row"):
        res = lookahead.lookahead_test(_null(df, column), "y", "llm", "lap")
    assert res.estimate == pytest.approx(lookahead.lookahead_test(df.drop(index=3), "y", "llm", "lap").estimate,
                                         rel=1e-12)


@pytest.mark.parametrize("column, name", [("y", "outcome"), ("llm", "prediction"), ("x", "feature 'x'")])
def test_polars_nulls_in_ess_are_an_error_or_dropped_when_asked(column, name):
    from llmsurrogate import ess

    df = _frame()
    kw = {"algorithm": "mean", "features": ["x"], "grid": [10, 20], "n_jobs": 1}
    with pytest.raises(LLMSurrogateError, match=f"{name}.*missing='drop'"):
        ess.equivalent_sample_size(_null(df, column), "y", "llm", **kw)
    with pytest.warns(LLMSurrogateWarning):
        got = ess.equivalent_sample_size(_null(df, column), "y", "llm", missing="drop", **kw)
    want = ess.equivalent_sample_size(df.drop(index=3).reset_index(drop=True), "y", "llm", **kw)
    assert got.lower_bound == pytest.approx(want.lower_bound, rel=1e-12)


def test_polars_nulls_in_risk_evaluation_are_errors():
    y, s = [0, 1, 0, 1, 0, 1], [0.1, 0.8, 0.3, 0.6, 0.2, 0.7]
    with pytest.raises(LLMSurrogateError, match="argument `y`"):
        risk.evaluate(pl.Series([0, 1, None, 1, 0, 1]), s, n_boot=0)
    with pytest.raises(LLMSurrogateError, match="argument `y`"):
        risk.evaluate(pl.Series([True, False, None, True, False, True]), s, n_boot=0)
    with pytest.raises(LLMSurrogateError, match="argument `scores`"):
        risk.evaluate_table(y, pl.Series([0.1, 0.8, None, 0.6, 0.2, 0.7]), n_boot=0)


@pytest.mark.parametrize("groups", [pl.Series(["a", None, "a", "b", "b", "a"]), pd.Series(["a", np.nan, "a", "b", "b", "a"])],
                         ids=["polars-null", "pandas-nan"])
def test_missing_group_labels_are_an_error_not_a_group(groups):
    """Before: the rows with a missing label made a group of their own, named None (or nan)."""
    with pytest.raises(InvalidArgumentError, match=r"argument `groups` has 1 missing label\(s\).*position 1"):
        risk.evaluate_table([0, 1, 0, 1, 0, 1], [0.1, 0.8, 0.3, 0.6, 0.2, 0.7], groups, n_boot=0)


def test_polars_nulls_in_transfer_tables_are_errors():
    E = pl.DataFrame({"train": ["a", "a", "b", "b", "c", "c"], "test": ["b", "c", "a", "c", "a", "b"],
                      "error": [1.0, 2, 3, 4, 5, 6]})
    assert transfer.forecast_interval(E, tau=0.8) == transfer.forecast_interval(E.to_pandas(), tau=0.8)
    for column in ("train", "test", "error"):
        values = E[column].to_list()
        values[1] = None
        with pytest.raises(LLMSurrogateError, match="argument `err`"):
            transfer.forecast_interval(E.with_columns(pl.Series(column, values)), tau=0.8)
    # transferUQ's reading (pooled=True) takes the errors given, with a warning: the documented rule
    values = E["error"].to_list()
    values[1] = None
    with pytest.warns(LLMSurrogateWarning, match="1 of its 6 errors are missing"):
        got = transfer.forecast_interval(E.with_columns(pl.Series("error", values)), tau=0.8, pooled=True)
    assert got == transfer.forecast_interval(E.to_pandas().drop(index=1), tau=0.8, pooled=True)
    rng = np.random.default_rng(1)
    samples = pd.DataFrame({"domain": np.repeat(["a", "b", "c"], 10), "x": rng.normal(size=30), "y": rng.normal(size=30)})
    for column in ("domain", "x", "y"):
        with pytest.raises(LLMSurrogateError, match="argument `samples`"):
            transfer.error_table(_null(samples, column, 4), "rf", domain="domain", features=["x"], target="y", n_jobs=1)


def test_pandas_na_renders_as_missing_in_prompts():
    """Before: ``Column.render(pd.NA)`` raised TypeError (a nullable Int64 column, or polars with nulls)."""
    from llmsurrogate.llm.tasks import acs_income_task

    task = acs_income_task()
    assert task.column("SEX").render(pd.NA) == task.column("SEX").render(float("nan")) == "N/A"


def test_polars_nulls_in_score_table_render_as_missing(tmp_path):
    pytest.importorskip("torch")
    from llmsurrogate import datasets, testing
    from llmsurrogate.risk._scores import score_table

    rows = datasets.load_acs_income_rows().head(3)
    frame = _null(rows, "AGEP", 1)
    for column in ("SEX", "COW"):
        values = frame[column].to_list()
        values[1] = None
        frame = frame.with_columns(pl.Series(column, values, dtype=frame[column].dtype))
    nan_rows = rows.copy()
    nan_rows.loc[nan_rows.index[1], ["AGEP", "SEX", "COW"]] = np.nan
    model = str(testing.build_model(tmp_path / "model"))
    got = score_table(frame, "ACSIncome", model, device="cpu")
    want = score_table(nan_rows, "ACSIncome", model, device="cpu")
    np.testing.assert_array_equal(got["score"].to_numpy(), want["score"].to_numpy())


def test_polars_frames_in_lookahead_forecast_render_like_pandas_and_nulls_are_errors():
    """Before: a polars frame was read as a list of prompts ("prompt 0 is a Series, not a string")."""
    import datetime

    from llmsurrogate.llm.base import CallableBackend

    backend = CallableBackend(lambda prompt: {" A": 0.0})
    frame = pl.DataFrame({"headline": ["Up.", "Down."], "date": [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)],
                          "company_name": ["Acme", "Bolt"], "ticker": ["ACME", "BOLT"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)   # the toy backend's answers have no label
        got = lookahead.forecast(frame, backend, max_new_tokens=2)
        pd.testing.assert_frame_equal(got, lookahead.forecast(frame.to_pandas(), backend, max_new_tokens=2))
    for column in ("headline", "date", "ticker"):
        with pytest.raises(InvalidArgumentError, match=f"row 1 of the data frame: argument `{column}`"):
            lookahead.forecast(frame.with_columns(pl.Series(column, [frame[column][0], None])), backend)
