"""Every result's figure (issue 25, items 4 and 5).

* One convention: each result class with a plot returns a matplotlib Figure, draws into ``ax=``
  when given (and returns ``ax.figure``), and a multi-panel figure refuses ``ax=`` by name.
* The referee's fixes: a log y axis when the values span decades (the worst-case curve's 42,510),
  plain tick labels on log axes (never ``4 × 10^0``), forecast-interval legends off the bars, the
  bootstrap figure titled with the scheme actually used, group names (not codes) in the
  calibration legend, the groups drawn by ``RiskEvaluation.plot()``, and a ROC curve whose points
  are scikit-learn's ``roc_curve``.
"""

from __future__ import annotations

import importlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from llmsurrogate import datasets, ess, ppi, risk, transfer
from llmsurrogate import results as results_module
from llmsurrogate._plotting import plain_log_ticks, spans_decades
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.lookahead import bootstrap
from llmsurrogate.lookahead.demo import small_panel
from llmsurrogate.risk._plots import plot_roc, roc_table
from llmsurrogate.risk._results import RiskScores
from matplotlib.figure import Figure
from sklearn.metrics import roc_auc_score, roc_curve


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# --- one instance of every result class that draws a figure ------------------------------------

def _scored(n=600, seed=3):
    """Labels, scores with ties (rounded to 0.05) and a 1/2-coded group, as the census has."""
    rng = np.random.default_rng(seed)
    sex = rng.integers(1, 3, n)
    p = 1 / (1 + np.exp(-(rng.normal(size=n) + 0.4 * (sex == 1))))
    y = (rng.random(n) < p).astype(int)
    r = np.clip(np.round((0.15 + 0.6 * p + rng.normal(0, 0.05, n)) * 20) / 20, 0, 1)
    return y, r, sex


def _ess_frame():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(800, 2))
    y = x @ [1.0, -0.5] + rng.normal(size=800)
    return pd.DataFrame({"y": y, "x1": x[:, 0], "x2": x[:, 1], "rule": x @ [0.9, -0.4]})


def _errors():
    return {m: datasets.load_transfer_errors(m) for m in ("EU_iso", "RF")}


def _risk_scores():
    y, r, _ = _scored()
    return RiskScores(table=pd.DataFrame({"row": np.arange(len(r)), "score": r, "answer_mass": 1.0, "label": y}),
                      meta={"task": "test"})


def _k_answers():
    """Three ordered answer options: human answers y, the LLM's probabilities, an age band, weights."""
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([2.0, 3.0, 1.5], size=400)
    y = np.array([rng.choice(3, p=p) for p in probs])
    return y, probs, rng.choice(["18-34", "35-64", "65+"], size=400), rng.uniform(0.5, 2.0, size=400)


FACTORIES = {
    "ErrorCurve": lambda: ess.error_curve(_ess_frame(), "y", ["x1", "x2"], algorithm="mean", grid=[1, 10, 100],
                                          n_jobs=1),
    "EssResult": lambda: ess.equivalent_sample_size(_ess_frame(), "y", "rule", ["x1", "x2"], algorithm="mean",
                                                    grid=[1, 5, 50, 200], n_jobs=1),
    "ForecastIntervals": lambda: transfer.forecast_intervals(_errors(), level=[0.8, 0.9]),
    "WorstCaseCurve": lambda: transfer.worst_case_curve(_errors()["RF"], tau=[0.5, 0.9]),
    "TransferApplication": lambda: importlib.import_module("llmsurrogate.transfer.demo").run_transfer_application(
        level=(0.9,), taus=[0.9]),
    "IntervalTable": lambda: importlib.import_module("llmsurrogate.transfer.demo").run_demo(),
    "RiskEvaluation": lambda: _risk_scores().evaluate(groups=_scored()[2], n_boot=20),
    "MulticlassEvaluation": lambda: risk.evaluate_multiclass(*_k_answers()[:2], ordered=True, n_boot=20),
    "AnswerComparison": lambda: risk.compare_answers(*_k_answers()[:3], weights=_k_answers()[3], ordered=True,
                                                     n_boot=20),
    "RiskScores": _risk_scores,
    "LookaheadBootstrap": lambda: bootstrap(small_panel(), "ret", "llm", "lap", n_boot=40, seed=1, n_jobs=1),
    "PPIResult": lambda: _ppi_result(),
}


def _ppi_result():
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(300), rng.normal(size=300)])
    X_u = np.column_stack([np.ones(3000), rng.normal(size=3000)])
    y = X @ [1.0, 2.0] + rng.normal(size=300)
    return ppi.ols(X, y, y + rng.normal(size=300), X_u, X_u @ [1.0, 2.0] + rng.normal(size=3000))
#: figures of several panels: ``ax=`` is refused
MULTI_PANEL = {"TransferApplication", "IntervalTable"}


def _plotting_classes() -> set[str]:
    for module in results_module._RESULT_MODULES:
        importlib.import_module(module)
    return {name for name, cls in results_module._REGISTRY.items() if cls.plot is not results_module.Result.plot}


def test_every_result_with_a_plot_is_checked_here():
    assert _plotting_classes() == set(FACTORIES)


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_plot_returns_a_figure(kind, tmp_path):
    res = FACTORIES[kind]()
    assert type(res).__name__ == kind
    fig = res.plot()
    assert isinstance(fig, Figure) and fig.axes
    fig.savefig(tmp_path / "f.png")  # the README's `fig.savefig` works on every result
    assert (tmp_path / "f.png").stat().st_size > 5_000


@pytest.mark.parametrize("kind", sorted(set(FACTORIES) - MULTI_PANEL))
def test_plot_draws_into_the_given_axes(kind):
    res = FACTORIES[kind]()
    fig, (left, right) = plt.subplots(1, 2)
    out = res.plot(ax=right)
    assert out is fig and len(fig.axes) == 2  # no new figure, no new axes
    drawn = lambda a: len(a.lines) + len(a.patches) + len(a.collections) + len(a.containers)
    assert drawn(right) > 0 and drawn(left) == 0


@pytest.mark.parametrize("kind", sorted(MULTI_PANEL))
def test_multi_panel_figures_refuse_ax(kind):
    res = FACTORIES[kind]()
    _, ax = plt.subplots()
    with pytest.raises(InvalidArgumentError, match="argument `ax`"):
        res.plot(ax=ax)


# --- log scales and their tick labels --------------------------------------------------------------

def test_spans_decades():
    assert spans_decades([1.0, 42510.0]) and spans_decades([1, 30])
    assert not spans_decades([1, 29]) and not spans_decades([0.0, 100.0]) and not spans_decades([])


def test_worst_case_curve_is_on_a_log_axis_when_its_values_span_decades():
    curve = FACTORIES["WorstCaseCurve"]()
    assert curve.steps["value"].max() > 42_000 and curve.steps["value"].min() < 2  # the RF pool's outlier
    ax = curve.plot().axes[0]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    E = np.array([[np.nan, 1, 2], [3, np.nan, 4], [5, 6, np.nan]])  # values 1..6: a linear axis
    assert transfer.worst_case_curve(E, tau=0.8).plot().axes[0].get_yscale() == "linear"


def _tick_texts(fig):
    fig.canvas.draw()
    ax = fig.axes[0]
    return [t.get_text() for axis in (ax.xaxis, ax.yaxis) for t in axis.get_ticklabels(which="both") if t.get_text()]


def test_log_axes_have_plain_tick_labels():
    """The ESS figure's N axis (1..200) and the demo's log y axis over one decade label ticks
    ``1``, ``10``, ``4``, never ``10^0`` or ``4 × 10^0``."""
    fig = FACTORIES["EssResult"]().plot()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    ax.set_ylim(3, 45)
    plain_log_ticks(ax, "y")  # as ess/demo.py does
    texts = _tick_texts(fig)
    assert {"1", "10", "100"} <= set(texts) and {"5", "20"} <= set(texts)
    assert not [t for t in texts if "times" in t or "^" in t or "×" in t], texts


# --- legends ---------------------------------------------------------------------------------------

def test_forecast_interval_legend_covers_no_bar():
    for fig in (FACTORIES["ForecastIntervals"]().plot(), FACTORIES["TransferApplication"]()):
        if not isinstance(fig, Figure):
            fig = fig.plot()
        fig.canvas.draw()
        ax = fig.axes[0]
        legend = ax.get_legend()
        assert legend is not None
        assert not legend.get_window_extent().overlaps(ax.get_window_extent())
        assert "nominal level" in legend.get_title().get_text()


def test_bootstrap_figure_is_titled_with_the_scheme_used():
    panel = small_panel()
    blocks = bootstrap(panel, "ret", "llm", "lap", n_boot=30, seed=1, resample="date", n_jobs=1)
    title = blocks.plot().axes[0].get_title()
    assert "Pairs" not in title and title.startswith("Date-block bootstrap")
    assert f"({panel['date'].nunique()} blocks)" in title and "30 replications" in title
    assert "Date-block bootstrap" in str(blocks)  # the summary says the same
    pairs = bootstrap(panel, "ret", "llm", "lap", n_boot=30, seed=1, n_jobs=1)
    assert pairs.plot().axes[0].get_title().startswith("Pairs bootstrap")


def _legend(fig, i=0):
    return [t.get_text() for t in fig.axes[i].get_legend().get_texts()]


def test_calibration_legend_names_the_groups_not_their_codes():
    y, r, sex = _scored()
    assert _legend(risk.plot_calibration(y, r, groups=sex, labels={1: "male", 2: "female"})) == ["all", "female", "male"]
    # codes read from a CSV as text still find their label
    assert _legend(risk.plot_calibration(y, r, groups=sex.astype(str), labels={1: "male", 2: "female"})) == [
        "all", "female", "male"]
    assert _legend(risk.plot_calibration(y, r, groups=sex)) == ["all", "1", "2"]  # no labels: the codes
    fig = risk.plot_score_histogram(r, sex, labels=lambda code: {1: "male", 2: "female"}[code])
    assert _legend(fig) == ["female", "male"]


def test_risk_evaluation_plot_draws_the_groups():
    y, r, sex = _scored()
    names = pd.Series(sex).map({1: "male", 2: "female"})
    ev = _risk_scores().evaluate(groups=names, n_boot=20)
    ax = ev.plot().axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["all", "female", "male"]
    assert len(ax.containers) == 3  # one errorbar per curve
    for lab, container in zip(["female", "male"], ax.containers[1:]):
        m = (names == lab).to_numpy()
        want = risk.calibration_curve(y[m], r[m], bins=10, seed=42)
        # the points are the group's own calibration table (dodged along x by < 0.01 so CIs stay apart)
        xy = container.lines[0].get_xydata()
        np.testing.assert_allclose(xy[:, 1], want["fraction_positive"])
        np.testing.assert_allclose(xy[:, 0], want["mean_score"], atol=0.01)


def test_evaluate_keeps_the_curves_it_draws():
    y, r, sex = _scored()
    ev = risk.evaluate(y, r, sex, n_boot=20)
    assert ev.roc is not None and ev.group_calibration is not None and len(ev.group_calibration)


# --- ROC -------------------------------------------------------------------------------------------

def test_roc_points_are_sklearns():
    y, r, _ = _scored()
    assert len(np.unique(r)) < len(r) / 10  # many ties
    for drop in (True, False):
        t = roc_table(y, r, drop_intermediate=drop)
        fpr, tpr, thr = roc_curve(y, r, drop_intermediate=drop)
        np.testing.assert_array_equal(t["threshold"], thr)
        np.testing.assert_allclose(t["fpr"], fpr, rtol=0, atol=1e-15)
        np.testing.assert_allclose(t["tpr"], tpr, rtol=0, atol=1e-15)
    # continuous scores: collinear points dropped as scikit-learn does, and the trapezoids' area is the AUC
    rc = np.random.default_rng(0).random(len(y))
    t = roc_table(y, rc)
    assert len(t) < len(roc_table(y, rc, drop_intermediate=False)) == len(y) + 1
    np.testing.assert_allclose(t[["fpr", "tpr"]].to_numpy(), np.c_[roc_curve(y, rc)[:2]], atol=1e-15)
    assert np.sum(np.diff(t["fpr"]) * (t["tpr"].to_numpy()[1:] + t["tpr"].to_numpy()[:-1]) / 2) == pytest.approx(
        roc_auc_score(y, rc), abs=1e-12)
    with pytest.raises(InvalidArgumentError, match="both classes"):
        roc_table([1, 1], [0.2, 0.3])


def test_risk_evaluation_roc_curve_per_group():
    y, r, sex = _scored()
    ev = _risk_scores().evaluate(groups=sex, n_boot=20)
    fig = ev.plot(kind="roc")
    lines = {ln.get_label(): ln for ln in fig.axes[0].lines if not ln.get_label().startswith("_")}
    assert list(lines) == [f"all (AUC {roc_auc_score(y, r):.3f})"] + [
        f"{g} (AUC {roc_auc_score(y[sex == g], r[sex == g]):.3f})" for g in (1, 2)]
    for (label, line), m in zip(lines.items(), [np.ones_like(y, bool), sex == 1, sex == 2]):
        fpr, tpr, _ = roc_curve(y[m], r[m])
        np.testing.assert_allclose(line.get_xydata(), np.c_[fpr, tpr], atol=1e-15)
    assert ev.metric("roc_auc") == pytest.approx(roc_auc_score(y, r), abs=1e-12)
    both = ev.plot(kind="both")
    assert [a.get_title() for a in both.axes] == ["Calibration (quantile bins, bootstrap CIs)", "ROC curve"]
    with pytest.raises(InvalidArgumentError, match="kind"):
        ev.plot(kind="pr")
    with pytest.raises(InvalidArgumentError, match="kind="):
        ev.plot("roc")
    assert _legend(plot_roc(y, r, sex, labels={1: "male", 2: "female"}))[1:] == [
        f"female (AUC {roc_auc_score(y[sex == 2], r[sex == 2]):.3f})", f"male (AUC {roc_auc_score(y[sex == 1], r[sex == 1]):.3f})"]


# --- issue 34 item 7: what a figure shows must fit in it ------------------------------------------

HOURS_OPTIONS = ("Under 20 hours", "20 to 34 hours", "35 to 44 hours", "45 hours or more")


def _k_option_scores(n=120):
    """Real ``risk_scores`` of a 4-option ordered question (the levels' values 10, 27, 40, 50
    hours) from a stand-in model: the score is the expected level, between 10 and 50."""
    import math
    import zlib

    from llmsurrogate import testing
    from llmsurrogate.llm.base import CallableBackend
    from llmsurrogate.llm.tasks import AnswerOption, MultipleChoiceQuestion, Task, acs_columns

    cols = {c.name: c for c in acs_columns()}
    question = MultipleChoiceQuestion("How many hours does this person usually work per week?",
                                      tuple(AnswerOption(t, v) for t, v in zip(HOURS_OPTIONS, (10, 27, 40, 50))),
                                      ordered=True)
    task = Task("Hours", columns=(cols["AGEP"], cols["SEX"], cols["SCHL"]), target="WKHP", question=question)

    def model(prompt):  # the keys' probabilities vary with the prompt (its row and its option order)
        p = np.random.default_rng(zlib.crc32(prompt.encode())).dirichlet([2, 3, 3, 1])
        return {" " + k: math.log(v) for k, v in zip("ABCD", p)}

    rows = testing.synthetic_census(n, seed=7).drop(columns="WKHP")  # no answers: the scores alone
    return risk.risk_scores(rows, task, CallableBackend(model), orders="cyclic")


def _bars_in_view(ax):
    """The histogram's bars: (their heights, whether each lies inside the x limits)."""
    lo, hi = sorted(ax.get_xlim())
    heights = np.array([b.get_height() for b in ax.patches])
    inside = np.array([lo - 1e-9 <= b.get_x() and b.get_x() + b.get_width() <= hi + 1e-9 for b in ax.patches])
    return heights, inside


def test_risk_scores_plot_of_k_options_shows_every_expected_level():
    """K > 2 options: the score is the expected level (10..50 hours here), not a probability; the
    histogram used fixed [0, 1] bins and drew nothing (every bar 0)."""
    rs = _k_option_scores()
    s = rs.scores
    assert s.min() > 10 and s.max() < 50 and len(rs.meta["option_values"]) == 4
    ax = rs.plot().axes[0]
    heights, inside = _bars_in_view(ax)
    assert heights.sum() == len(s) and inside.all()  # every row counted, every bar in view
    lo, hi = ax.get_xlim()
    assert lo <= 10 and hi >= 50  # the whole scale, so that the figure shows where on it the answers sit
    assert "level" in ax.get_xlabel()
    # by group, densities: each group's histogram integrates to 1 over the scale
    groups = np.where(np.arange(len(s)) % 2 == 0, "even", "odd")
    ax = rs.plot(groups=groups).axes[0]
    for patch in ax.patches:
        xy = patch.get_xy()
        area = np.sum(np.diff(xy[:, 0]) * xy[:-1, 1]) if len(xy) > 2 else 0.0  # a step outline: width x height
        assert area == pytest.approx(1.0, abs=1e-6)
    # the function itself: scores off [0, 1] are not dropped silently
    heights, inside = _bars_in_view(risk.plot_score_histogram(s, bins=8).axes[0])
    assert heights.sum() == len(s) and inside.all()
    for bad in [(0, 1), (30, 50), (50, 10), "10-50"]:
        with pytest.raises(InvalidArgumentError, match="argument `value_range`"):
            risk.plot_score_histogram(s, value_range=bad)
    # binary scores keep their [0, 1] axis
    y, r, _ = _scored()
    ax = _risk_scores().plot().axes[0]
    assert ax.get_xlim() == (0.0, 1.0) and ax.get_xlabel() == "risk score"
    assert sum(b.get_height() for b in ax.patches) == len(r)


def _inside_figure(fig, artist, tol=0.5):
    box, frame = artist.get_window_extent(), fig.bbox
    return frame.x0 - tol <= box.x0 and box.x1 <= frame.x1 + tol and frame.y0 - tol <= box.y0 and box.y1 <= frame.y1 + tol


@pytest.mark.parametrize("distance", ["tv", "w1"])
@pytest.mark.parametrize("names", [None, ("a", "b"), ("Bachelor's degree or higher", "High school or less")])
@pytest.mark.parametrize("weighted", [False, True])
def test_answer_comparison_title_and_labels_are_not_cut(distance, names, weighted):
    """The title gained " (weighted)" and ran past the figure's right edge (by 5 px with no
    groups, 80 px with long group names); long group names pushed the x label out too."""
    y, probs, _, w = _k_answers()
    groups = None if names is None else np.array(names)[np.arange(len(y)) % 2]
    cmp = risk.compare_answers(y, probs, groups, weights=w if weighted else None, ordered=True, n_boot=20)
    fig = cmp.plot(distance=distance)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_title().endswith("(weighted)") == weighted
    for artist in (ax.title, ax.xaxis.label, *ax.get_yticklabels()):
        assert _inside_figure(fig, artist), (artist.get_text(), artist.get_window_extent(), fig.bbox)


def _tick_boxes(fig, ax):
    fig.canvas.draw()
    return sorted((t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()), key=lambda b: b.x0)


@pytest.mark.parametrize("options", [HOURS_OPTIONS, ("Strongly disagree", "Disagree", "Neither agree nor disagree",
                                                      "Agree", "Strongly agree", "Don't know", "Refused to answer")])
@pytest.mark.parametrize("own_axes", [True, False])
def test_plot_distributions_option_texts_do_not_overlap(options, own_axes):
    """Ordinary option texts ("Under 20 hours") overlapped their neighbours under the bars."""
    rng = np.random.default_rng(1)
    k = len(options)
    probs = rng.dirichlet(np.ones(k) * 2, size=300)
    y = np.array(options)[[rng.choice(k, p=p) for p in probs]]
    cmp = risk.compare_answers(y, pd.DataFrame(probs, columns=list(options)), ordered=True, n_boot=0)
    if own_axes:
        fig = cmp.plot_distributions()
    else:
        fig = plt.figure(figsize=(5, 3.2))
        cmp.plot_distributions(ax=fig.add_subplot())
        fig.tight_layout()
    ax = fig.axes[0]
    boxes = _tick_boxes(fig, ax)
    assert [" ".join(t.get_text().split()) for t in ax.get_xticklabels()] == list(options)  # wrapped, not cut
    assert len(boxes) == k
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 <= right.x0, (left, right)
    legend = ax.get_legend().get_window_extent()
    assert not any(legend.overlaps(b) for b in boxes)  # the legend sits under the labels
    for artist in (ax.title, ax.get_legend(), *ax.get_xticklabels()):
        assert _inside_figure(fig, artist), artist
