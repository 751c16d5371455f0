"""ESS with K-class predictions (issue 27 item 5; docs/methods/ess.md §1.6): loss="multiclass_log" and
loss="multiclass_brier", the LLM's K class probabilities against scikit-learn classifiers'
``predict_proba``. References: scikit-learn's ``log_loss`` / per-class ``brier_score_loss``, the
binary losses at K = 2, a brute-force block-out error curve refitted by hand, and a simulation whose
true conditional distribution is known."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import brier_score_loss, log_loss

from llmsurrogate import ess
from llmsurrogate.ess._engine import LOG_EPS, multiclass_losses
from llmsurrogate.ess._fast_predict import fast_predict
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning, NonFiniteError, ShapeError

CLASSES = ["a", "b", "c"]
TABLE = ["n_train", "n_blocks", "n_used", "algo_error", "algo_se", "llm_error", "diff", "diff_se", "z"]


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _three_class(n=300, seed=0):
    """Two features; the outcome drawn from a known softmax distribution over "a", "b", "c"."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    truth = _softmax(np.column_stack([np.zeros(n), 1.5 * X[:, 0], -1.0 * X[:, 0] + 1.2 * X[:, 1]]))
    codes = np.array([rng.choice(3, p=p) for p in truth])
    df = pd.DataFrame(X, columns=["x1", "x2"])
    df["y"] = np.array(CLASSES, dtype=object)[codes]
    return df, pd.DataFrame(truth, columns=CLASSES), codes


def _run(df, pred, loss="multiclass_log", **kw):
    opts = dict(algorithm=LogisticRegression(), grid=[10, 30], tuning="none", n_jobs=1)
    opts.update(kw)
    return ess.equivalent_sample_size(df, "y", pred, ["x1", "x2"], loss=loss, **opts)


# --- per-row losses against scikit-learn -----------------------------------------------------------

def test_row_losses_match_sklearn():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet([1.0, 2.0, 0.5, 1.0], size=40)
    codes = rng.integers(0, 4, size=40)
    rows = multiclass_losses("multiclass_log", LOG_EPS, probs, codes.astype(float))
    ref = [log_loss([codes[i]], probs[i:i + 1], labels=range(4)) for i in range(40)]
    np.testing.assert_allclose(rows, ref, rtol=1e-12)
    brier = multiclass_losses("multiclass_brier", LOG_EPS, probs, codes.astype(float))
    per_class = sum(brier_score_loss(codes == k, probs[:, k]) for k in range(4))  # the per-class Brier scores, summed
    assert brier.mean() == pytest.approx(per_class, rel=1e-12)
    np.testing.assert_allclose(brier, ((probs - np.eye(4)[codes]) ** 2).sum(axis=1), rtol=1e-12)
    # clipping at the ESS's eps (1e-6), as the binary log loss
    hard = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(multiclass_losses("multiclass_log", LOG_EPS, hard, np.array([1.0, 1.0])),
                               [-np.log(1e-6), -np.log(1 - 1e-6)], rtol=1e-12)


def test_llm_error_is_sklearn_log_loss_with_columns_and_rows_paired_by_label():
    df, truth, codes = _three_class(n=120)
    df.index = np.arange(120)[::-1] + 1000
    shuffled = truth.set_axis(df.index)[["c", "a", "b"]].sample(frac=1.0, random_state=0)  # other order, by label
    res = _run(df, shuffled, grid=[10])
    assert res.llm_error == pytest.approx(log_loss(codes, truth.to_numpy(), labels=range(3)), rel=1e-12)
    assert any("'c', 'a', 'b'" in note for note in res.notes)
    res_b = _run(df, shuffled, loss="multiclass_brier", grid=[10])
    assert res_b.llm_error == pytest.approx(((truth.to_numpy() - np.eye(3)[codes]) ** 2).sum(axis=1).mean(), rel=1e-12)


# --- K = 2 is the binary loss --------------------------------------------------------------------------

def _binary(n=400, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    p = 1 / (1 + np.exp(-(1.2 * X[:, 0] - 0.6 * X[:, 1])))
    df = pd.DataFrame(X, columns=["x1", "x2"])
    df["y"] = (rng.random(n) < p).astype(int)
    llm = np.clip(1 / (1 + np.exp(-0.8 * X[:, 0])), 0, 1)
    llm[:3] = [0.0, 1.0, 1.0]  # hard probabilities: clipped alike
    return df, llm


@pytest.mark.parametrize("algorithm, tuning", [(LogisticRegression(), "none"), ("mean", "none"), ("rf", "per_n_subset"),
                                               ("logit_l1", "per_n_subset")])
def test_two_classes_equal_the_binary_log_loss_ess(algorithm, tuning):
    df, llm = _binary()
    kw = dict(algorithm=algorithm, grid=[5, 20, 50, 100], tuning=tuning, seed=3,
              algorithm_options={"n_estimators": 15, "param_grid": {"min_samples_leaf": [1, 5]}} if algorithm == "rf"
              else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)  # the hard 0/1 predictions
        binary = _run(df, llm, loss="log", **kw)
        multi = _run(df, np.column_stack([1 - llm, llm]), loss="multiclass_log", **kw)
    pd.testing.assert_frame_equal(multi.table[TABLE], binary.table[TABLE], rtol=1e-9, atol=1e-12)
    assert (multi.lower_bound, multi.status, multi.plugin) == (binary.lower_bound, binary.status, binary.plugin)
    assert multi.table["params"].tolist() == binary.table["params"].tolist()
    # the K-class Brier score is the sum over both classes: twice the binary one, with the same z-tests
    brier = _run(df, llm, loss="brier", **kw)
    multi_b = _run(df, np.column_stack([1 - llm, llm]), loss="multiclass_brier", **kw)
    np.testing.assert_allclose(multi_b.table["algo_error"], 2 * brier.table["algo_error"], rtol=1e-9)
    np.testing.assert_allclose(multi_b.table["z"], brier.table["z"], rtol=1e-7)
    assert multi_b.lower_bound == brier.lower_bound


# --- brute force: refit by hand at each training size ----------------------------------------------------

def _brute_force_curve(df, codes, N, seed, fit):
    """Block-out CV (docs/methods/ess.md §2.1) written out: permute with the documented permutation,
    train on each block of N rows, score the K probabilities on the other retained rows."""
    n = len(df)
    perm = ess.permutation(n, seed)
    X, c = df[["x1", "x2"]].to_numpy()[perm], codes[perm]
    B = n // N
    used = B * N
    errors, lacking, single = [], 0, 0
    for b in range(B):
        train = np.arange(b * N, (b + 1) * N)
        test = np.setdiff1d(np.arange(used), train)
        probs = np.zeros((len(test), 3))
        if len(np.unique(c[train])) == 1:  # one class in the block: it gets probability 1 (§8.5)
            probs[:, c[train][0]] = 1.0
            single += 1
        else:
            fitted, proba = fit(X[train], c[train], X[test])
            probs[:, fitted] = proba  # a class absent from the block: probability 0, clipped by the loss
        lacking += len(np.unique(c[train])) < 3
        p_obs = np.clip(probs[np.arange(len(test)), c[test]], 1e-6, 1 - 1e-6)
        errors.append(np.mean(-np.log(p_obs)))
    return float(np.mean(errors)), lacking, single


def test_error_curve_equals_brute_force_refits():
    df, _, codes = _three_class(n=36, seed=4)

    def logistic(Xtr, ytr, Xte):
        model = LogisticRegression(C=0.5).fit(Xtr, ytr)
        return model.classes_, model.predict_proba(Xte)

    def shares(Xtr, ytr, Xte):  # the "mean" learner: the block's class shares
        counts = np.bincount(ytr, minlength=3) / len(ytr)
        return np.arange(3), np.tile(counts, (len(Xte), 1))

    grid = [3, 4, 9]
    curve = ess.error_curve(df, "y", ["x1", "x2"], algorithm=LogisticRegression(C=0.5), grid=grid,
                            loss="multiclass_log", tuning="none", seed=5, n_jobs=1)
    ref = [_brute_force_curve(df, codes, N, 5, logistic) for N in grid]
    np.testing.assert_allclose(curve.table["error"], [r[0] for r in ref], rtol=1e-10)
    # blocks that lack a class (probability 0 there, clipped) occur at every size but the largest
    assert [r[1] > 0 for r in ref] == [True, True, False]
    assert curve.table["constant_blocks"].tolist() == [r[2] for r in ref] == [1, 0, 0]
    mean_curve = ess.error_curve(df, "y", ["x1", "x2"], algorithm="mean", grid=grid, loss="multiclass_log",
                                 tuning="none", seed=5, n_jobs=1)
    np.testing.assert_allclose(mean_curve.table["error"], [_brute_force_curve(df, codes, N, 5, shares)[0] for N in grid],
                               rtol=1e-10)


def test_forest_fast_path_equals_predict_proba_for_three_classes():
    df, _, codes = _three_class(n=200, seed=6)
    X = df[["x1", "x2"]].to_numpy()
    forest = RandomForestClassifier(n_estimators=7, n_jobs=1, random_state=0).fit(X[:100], codes[:100].astype(float))
    np.testing.assert_array_equal(fast_predict(forest, X[100:], "probs"), forest.predict_proba(X[100:]))


# --- the LLM is the truth vs noise ------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["multiclass_log", "multiclass_brier"])
def test_true_distribution_has_a_larger_ess_than_noise(loss):
    df, truth, _ = _three_class(n=400, seed=7)
    noise = np.random.default_rng(8).dirichlet([1.0, 1.0, 1.0], size=400)
    grid = [4, 20, 100]
    good = _run(df, truth, loss=loss, grid=grid, seed=1)
    bad = _run(df, noise, loss=loss, grid=grid, seed=1, options=CLASSES)
    assert good.lower_bound > bad.lower_bound
    assert good.plugin > bad.plugin
    assert good.llm_error < bad.llm_error


# --- inputs -------------------------------------------------------------------------------------------------

class _Predictor:
    """An LLM-like rule: predict_proba(frame) in the question's option order."""

    def __init__(self, probs, as_frame=False):
        self.probs, self.as_frame = probs, as_frame
        self.calls = 0

    def predict_proba(self, frame):
        self.calls += 1
        return pd.DataFrame(self.probs, columns=["A", "B", "C"]) if self.as_frame else self.probs


def test_predictor_object_options_categorical_and_codes_agree():
    df, truth, codes = _three_class(n=150, seed=9)
    ref = _run(df, truth, grid=[10])
    pred = _Predictor(truth.to_numpy())
    res = _run(df, pred, grid=[10], options=CLASSES)
    assert pred.calls == 1
    pd.testing.assert_frame_equal(res.table[TABLE], ref.table[TABLE])
    # a DataFrame from predict_proba whose columns name other labels: options= does not relabel them
    # (issue 34 §2: an error naming both); the same labels in another order are matched by name
    with pytest.raises(InvalidArgumentError, match=r"`options` \(\['a', 'b', 'c'\]\) and `prediction` \(its columns: "
                                                   r"\['A', 'B', 'C'\]\)"):
        _run(df, _Predictor(truth.to_numpy(), as_frame=True), grid=[10], options=CLASSES)
    res = _run(df, truth[["c", "a", "b"]], grid=[10], options=CLASSES)
    pd.testing.assert_frame_equal(res.table[TABLE], ref.table[TABLE])
    with pytest.raises(InvalidArgumentError, match=r"not one of the K = 3 classes \['A', 'B', 'C'\] \(the columns"):
        _run(df, _Predictor(truth.to_numpy(), as_frame=True), grid=[10])
    # a categorical outcome: its categories label the columns of an array
    cat = df.assign(y=pd.Categorical(df["y"], categories=CLASSES))
    pd.testing.assert_frame_equal(_run(cat, truth.to_numpy(), grid=[10]).table[TABLE], ref.table[TABLE])
    # integer codes 0..K-1 and an array: the columns are the codes
    ints = df.assign(y=codes)
    pd.testing.assert_frame_equal(_run(ints, truth.to_numpy(), grid=[10]).table[TABLE], ref.table[TABLE])
    # arm_ess keeps the arm's rows of the K columns
    arm = df.assign(d=np.arange(150) % 2)
    sub = arm[arm["d"] == 1].reset_index(drop=True)
    res = ess.arm_ess(arm, "y", "d", 1, truth, ["x1", "x2"], loss="multiclass_log", algorithm=LogisticRegression(),
                      grid=[10], tuning="none", n_jobs=1)
    ref_arm = _run(sub, truth[arm["d"].to_numpy() == 1].reset_index(drop=True), grid=[10])
    pd.testing.assert_frame_equal(res.table[TABLE], ref_arm.table[TABLE])


def test_missing_drop_removes_rows_with_a_missing_probability():
    df, truth, _ = _three_class(n=150, seed=10)
    holed = truth.copy()
    holed.iloc[[3, 70], 1] = np.nan
    with pytest.raises(NonFiniteError, match=r"argument `prediction` has a non-finite value .* row 3"):
        _run(df, holed, grid=[10])
    with pytest.warns(LLMSurrogateWarning, match="removed 2 of 150 rows"):
        res = _run(df, holed, grid=[10], missing="drop")
    keep = ~holed.isna().any(axis=1).to_numpy()
    ref = _run(df[keep].reset_index(drop=True), truth[keep].reset_index(drop=True), grid=[10])
    pd.testing.assert_frame_equal(res.table[TABLE], ref.table[TABLE])


def test_bad_inputs_name_the_argument():
    df, truth, _ = _three_class(n=60, seed=11)
    arr = truth.to_numpy()
    cases = [
        (ShapeError, r"argument `prediction` has 59 rows but `data` has 60", arr[:59], {}),
        (ShapeError, r"argument `prediction`: .* needs an n x K array", arr[:, 0], {}),
        (ShapeError, r"argument `prediction` has 3 columns but argument `options` names 4 classes", arr,
         {"options": ["a", "b", "c", "d"]}),
        (InvalidArgumentError, r"argument `prediction`: each row must sum to 1 .* row 0 .* sums to 0\.9", arr * 0.9,
         {"options": CLASSES}),
        (InvalidArgumentError, r"argument `prediction` must hold probabilities in \[0, 1\]",
         np.column_stack([arr[:, 0] + 0.5, arr[:, 1] - 0.5, arr[:, 2]]), {"options": CLASSES}),
        (InvalidArgumentError, r"argument `outcome`: 'y' has the value '[abc]' .* not one of the K = 3 classes .*"
                               r"options=", arr, {}),
        (InvalidArgumentError, r"argument `outcome`: 'y' has the value 'c' .*\(argument `options`\)", arr,
         {"options": ["a", "b", "z"]}),
        (InvalidArgumentError, r"argument `options`: a multiclass loss needs K >= 2 classes; got 1", arr[:, :1],
         {"options": ["a"]}),
        (InvalidArgumentError, r"`prediction` \(an array\): a multiclass loss needs K >= 2 classes; got 1",
         arr[:, :1] / arr[:, :1], {}),
        (InvalidArgumentError, r"argument `options` .* duplicated class labels", arr, {"options": ["a", "b", "a"]}),
        (InvalidArgumentError, r"argument `prediction`: .* a column name gives one value per row", "x1", {}),
        (InvalidArgumentError, r"argument `prediction`: under loss 'multiclass_log' a predictor needs predict_proba",
         LinearRegression().fit(df[["x1"]], df["x1"]), {}),
        (InvalidArgumentError, r"argument `algorithm`: loss 'multiclass_log' .* LinearRegression has no predict_proba",
         truth, {"algorithm": LinearRegression()}),
        (InvalidArgumentError, r"algorithm='lasso' is a regression", truth, {"algorithm": "lasso"}),
        (InvalidArgumentError, r"argument `weights`: survey weights are not supported", truth,
         {"weights": np.ones(60)}),
    ]
    for exc, msg, pred, kw in cases:
        with pytest.raises(exc, match=msg):
            _run(df, pred, grid=[10], **kw)
    with pytest.raises(InvalidArgumentError, match=r"argument `options` labels the K classes of a multiclass loss"):
        ess.equivalent_sample_size(df.assign(y=arr[:, 0]), "y", arr[:, 1], ["x1"], loss="squared", options=CLASSES)
    with pytest.raises(InvalidArgumentError, match=r"outcome 'y': a multiclass loss needs K >= 2 classes"):
        ess.error_curve(df.assign(y="a"), "y", ["x1"], loss="multiclass_brier", grid=[10])
    with pytest.raises(InvalidArgumentError, match=r"argument `weights`"):
        ess.error_curve(df, "y", ["x1"], loss="multiclass_brier", grid=[10], weights=np.ones(60))


def test_hard_probabilities_warn_under_log_loss_only():
    df, truth, codes = _three_class(n=60, seed=12)
    hard = np.eye(3)[codes]
    with pytest.warns(LLMSurrogateWarning, match=r"probabilities 0 or 1 of the observed class .* clipped"):
        res = _run(df, hard, grid=[10], options=CLASSES)
    assert res.llm_error == pytest.approx(-np.log(1 - 1e-6), rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LLMSurrogateWarning)
        assert _run(df, hard, loss="multiclass_brier", grid=[10], options=CLASSES).llm_error == 0.0


# --- the command line -----------------------------------------------------------------------------------------

def test_cli_reads_k_probability_columns_and_matches_the_api(tmp_path):
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = shutil.which("llmsurrogate", path=str(Path(sys.executable).parent))
    df, truth, codes = _three_class(n=120, seed=13)
    file = df.assign(y=codes + 1, p1=truth["a"], p2=truth["b"], p3=truth["c"])  # classes written 1, 2, 3
    path = tmp_path / "d.csv"
    file.to_csv(path, index=False)
    base = ["ess", "--data", str(path), "--outcome", "y", "--loss", "multiclass_log", "--algorithm", "mean",
            "--grid", "5,20", "--no-plot"]
    r = subprocess.run([exe, *base, "--prediction", "p1,p2,p3", "--options", "1,2,3", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "x1, x2" in r.stderr  # the default features leave the K probability columns out
    summary = json.loads((tmp_path / "o" / "ess_summary.json").read_text())
    api = ess.equivalent_sample_size(df, "y", truth, ["x1", "x2"], loss="multiclass_log", algorithm="mean",
                                     grid=[5, 20])
    assert summary["lower_bound"] == api.lower_bound
    assert summary["llm_error"] == pytest.approx(api.llm_error, rel=1e-12)
    table = pd.read_csv(tmp_path / "o" / "ess_table.csv")
    np.testing.assert_allclose(table["algo_error"], api.table["algo_error"], rtol=1e-12)
    # without --options the labels are the column names, which the outcome does not use: an error in CLI words
    r = subprocess.run([exe, *base, "--prediction", "p1,p2,p3", "--out", str(tmp_path / "o2")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "has the value '2' at row 0" in r.stderr and "(the columns of --prediction p1,p2,p3)" in r.stderr, r.stderr
    r = subprocess.run([exe, *base, "--prediction", "p1,p2", "--options", "1,2,3", "--out", str(tmp_path / "o3")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "--options has 3 class labels but --prediction names 2 columns" in r.stderr
    r = subprocess.run([exe, *base[:6], "squared", *base[7:], "--options", "1,2", "--out", str(tmp_path / "o4")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "--options labels the --prediction columns of a multiclass --loss" in r.stderr


class _Labelled:
    """A classifier-like rule whose ``classes_`` label its ``predict_proba`` columns."""

    def __init__(self, probs, classes):
        self.probs, self.classes_ = probs, np.array(classes)

    def predict_proba(self, frame):
        return self.probs


def test_boolean_outcome_pairs_with_false_true_labels():
    """Issue 34 item 4: a boolean outcome with probability columns labelled ``[False, True]`` (a
    DataFrame's columns, ``options=``, a predictor's ``classes_``) failed with "the value
    np.int64(1) ... is not one of the classes [False, True]": the outcome was turned into 0/1
    before it was matched with the labels. Reference: the same rows with the outcome as 0/1 codes
    and the probabilities as an unlabelled array (columns 0, 1)."""
    df, llm = _binary()
    probs = np.column_stack([1 - llm, llm])
    kw = dict(grid=[10, 50], algorithm=LogisticRegression())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)  # the hard 0/1 predictions
        ref = _run(df, probs, **kw)
        flags = df.assign(y=df["y"].astype(bool))
        assert flags["y"].dtype == bool
        frame = pd.DataFrame(probs, columns=[False, True])
        for pred, extra in [(frame, {}), (frame.iloc[:, ::-1], {}), (probs, {"options": [False, True]}),
                            (frame, {"options": [False, True]}), (probs, {}),
                            (_Labelled(probs, [False, True]), {})]:
            res = _run(flags, pred, **kw, **extra)
            pd.testing.assert_frame_equal(res.table[TABLE], ref.table[TABLE])
        # 0/1 codes against [False, True] labels: the same classes
        pd.testing.assert_frame_equal(_run(df, frame, **kw).table[TABLE], ref.table[TABLE])
        # a label the data never hold: the message shows the outcome's own value, not a code
        with pytest.raises(InvalidArgumentError, match=r"has the value (False|True) at row \d+ .*\['no', 'yes'\]") as err:
            _run(flags, pd.DataFrame(probs, columns=["no", "yes"]), **kw)
        assert "np." not in str(err.value)
