"""ESS against designs with known answers (docs/methods/ess.md §10.2-10.8). Monte Carlo tolerances are set
from the replication counts (MC standard errors in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom

from llmsurrogate import _core, ess


def _mean_learner_run(y, N, llm_loss=None):
    """Block-out CV of the block-mean learner through the Rust accumulator (rows are constants)."""
    acc = _core.BlockOutAccumulator(y, N, "squared", llm_loss)
    B, n = acc.blocks, acc.n_used
    means = y[: B * N].reshape(B, N).mean(axis=1)
    acc.add_blocks(0, np.ascontiguousarray(np.repeat(means[:, None], n - N, axis=1)), 1)
    return acc.finalize()


# --- DGP A: mean estimation, squared loss ------------------------------------------------------

def test_dgp_a_unbiased_exact_variance_and_component_expectations():
    rng = np.random.default_rng(2026)
    N, B, R = 5, 40, 3000
    n = N * B
    ecv, s2n, s2b = np.empty(R), np.empty(R), np.empty(R)
    for r in range(R):
        out = _mean_learner_run(rng.normal(size=n), N)
        ecv[r], s2n[r], s2b[r] = out["plain"]["ecv"], out["plain"]["sigma2_fixed_n"], out["plain"]["sigma2_fixed_b"]
    # e_N = s^2 (1 + 1/N) = 1.2; sd(ecv) ~ sqrt(3.24/200) = 0.127 -> MC se 0.0023
    assert ecv.mean() == pytest.approx(1.2, abs=0.01)
    # exact n Var = 2(1 + 3/N) + 8/(N(B-1)) = 3.241; MC relative se ~ sqrt(2/R) * 1.1 = 2.8%
    assert n * ecv.var(ddof=1) == pytest.approx(2 * (1 + 3 / N) + 8 / (N * (B - 1)), rel=0.09)
    # docs/methods/ess.md §10.2: E[(4.5)] = 3.14, E[(B.2)] = 2.02 at (N, B) = (5, 40)
    assert s2n.mean() == pytest.approx(3.14, rel=0.04)
    assert s2b.mean() == pytest.approx(2.02, rel=0.03)


def test_dgp_a_bias_correction_removes_the_small_b_underestimate():
    """Spec §4.6: with few blocks (4.5) underestimates n Var(ecv) by about 2 V_test / (B - 1); the
    optional correction adds that back. DGP A, N = 10, B = 5: exact n Var = 2.8."""
    from llmsurrogate.ess import _engine

    rng = np.random.default_rng(11)
    N, B, R = 10, 5, 3000
    n = N * B
    raw, corrected = np.empty(R), np.empty(R)
    for r in range(R):
        out = _mean_learner_run(rng.normal(size=n), N)
        raw[r] = out["plain"]["sigma2_fixed_n"]
        corrected[r] = _engine.bias_corrected([{"plain": dict(out["plain"])}])[0]["plain"]["sigma2_fixed_n"]
    exact = 2 * (1 + 3 / N) + 8 / (N * (B - 1))
    # MC relative se of either mean ~1.5%; uncorrected ~1.87 (-33%), corrected ~2.91 (+4%)
    assert raw.mean() < 0.75 * exact
    assert corrected.mean() == pytest.approx(exact, rel=0.08)


def test_dgp_a_ci_coverage_fixed_n_many_blocks():
    rng = np.random.default_rng(7)
    N, B, R = 10, 200, 1200
    n = N * B
    z = 1.959963984540054
    hits = 0
    for _ in range(R):
        out = _mean_learner_run(rng.normal(size=n), N)["plain"]
        se = math.sqrt(out["sigma2_fixed_n"] / n)
        hits += abs(out["ecv"] - 1.1) <= z * se
    # MC se = 0.0063; reference MC 0.9515
    assert 0.93 <= hits / R <= 0.97


def test_dgp_a_boundary_test_size_and_power():
    """DGP A': s = 1, d = 0.1, N* = 100. Size at N = 100 (B = 100) and power at N = 50 (B = 200)."""
    rng = np.random.default_rng(99)
    n, R = 10_000, 600
    rej_size = rej_pow = 0
    for _ in range(R):
        y = rng.normal(size=n)
        llm_loss = (y - 0.1) ** 2
        for N in (50, 100):
            d = _mean_learner_run(y, N, llm_loss)["diff"]
            t = d["ecv"] / math.sqrt(d["sigma2_fixed_n"] / d["n_used"])
            if N == 100:
                rej_size += t > 1.6448536269514722
            else:
                rej_pow += t > 1.6448536269514722
    # docs/methods/ess.md: size 0.0605 (MC se here 0.0097), power 0.975 (se 0.0064)
    assert 0.03 <= rej_size / R <= 0.095
    assert rej_pow / R >= 0.94


def test_dgp_a_pipeline_sequential_bound():
    """Full pipeline (equivalent_sample_size, algorithm='mean') on DGP A with N* = 100."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"y": rng.normal(size=20_000)})
    df["llm"] = 0.1
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm="mean", grid=list(range(10, 301, 10)),
                                     regime="fixed_N", seed=3)
    # docs/methods/ess.md: 5/50/95% quantiles of the bound at n = 10^4 are 51/71/91; n = 2*10^4 is tighter
    assert 30 <= res.lower_bound <= 100
    assert res.status == "stopped"
    assert res.plugin == pytest.approx(100, abs=60)


# --- DGP B: 0-1 loss, majority vote -----------------------------------------------------------

def _P1(N, p):
    k = np.arange(N + 1)
    pm = binom.pmf(k, N, p)
    return pm[k > N / 2].sum() + 0.5 * pm[k == N / 2].sum()


def test_dgp_b_no_covariate_exact_variance():
    p, N, B, R = 0.7, 4, 200, 800
    P1 = _P1(N, p)
    e_N = (1 - p) * P1 + p * (1 - P1)
    assert e_N == pytest.approx(0.3864, abs=1e-4)
    rng = np.random.default_rng(4)
    n = N * B
    vals = np.empty(R)
    for r in range(R):
        y = (rng.random(n) < p).astype(float)
        acc = _core.BlockOutAccumulator(y, N, "zero_one")
        s = y.reshape(B, N).sum(axis=1)
        lab = np.where(s > N / 2, 1.0, np.where(s < N / 2, 0.0, (rng.random(B) < 0.5).astype(float)))
        acc.add_blocks(0, np.ascontiguousarray(np.repeat(lab[:, None], n - N, axis=1)), 1)
        vals[r] = acc.finalize()["plain"]["ecv"]
    assert vals.mean() == pytest.approx(e_N, abs=0.004)          # MC se 0.0007
    assert n * vals.var(ddof=1) == pytest.approx(0.2964, rel=0.15)  # MC rel se ~5%


class CellMajority:
    """Majority vote per covariate cell (x in {0, 1}); empty cell or tie: a fair coin (docs/methods/ess.md §10.5)."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def get_params(self, deep=True):
        return {"random_state": self.random_state}

    def set_params(self, **kw):
        self.__dict__.update(kw)
        return self

    def fit(self, X, y):
        rng = np.random.default_rng(self.random_state)
        self.label_ = {}
        for cell in (0.0, 1.0):
            yy = y[X[:, 0] == cell]
            ones, zeros = (yy == 1).sum(), (yy == 0).sum()
            self.label_[cell] = float(rng.integers(0, 2)) if ones == zeros else float(ones > zeros)
        return self

    def predict(self, X):
        return np.where(X[:, 0] == 1.0, self.label_[1.0], self.label_[0.0])


def _dgp_b_cov(n, rng):
    x = (rng.random(n) < 0.5).astype(float)
    y = (rng.random(n) < np.where(x == 1, 0.8, 0.4)).astype(float)
    return pd.DataFrame({"x": x, "y": y})


def test_dgp_b_covariate_exact_curve_and_ess():
    # exact e_N from the formula of docs/methods/ess.md §10.5
    def err(k, q):
        if k == 0:
            return 0.5
        P1 = _P1(k, q)
        return (1 - q) * P1 + q * (1 - P1)

    def e(N):
        m = np.arange(N + 1)
        w = binom.pmf(m, N, 0.5)
        return float(sum(w[i] * (0.5 * err(N - i, 0.4) + 0.5 * err(i, 0.8)) for i in m))

    np.testing.assert_allclose([e(N) for N in (1, 2, 3, 4, 10)], [0.45, 0.425, 0.4083, 0.39575, 0.35576], atol=6e-6)
    rng = np.random.default_rng(12)
    df = _dgp_b_cov(12_000, rng)
    df["llm"] = 1.0                    # "always predict 1": e_LLM = 0.40, N* = 4
    curve = ess.error_curve(df, "y", algorithm=CellMajority(), grid=[1, 2, 4, 10], loss="zero_one", seed=5,
                            tuning="none")
    for N, got in zip(curve.table["n_train"], curve.table["error"]):
        assert got == pytest.approx(e(N), abs=0.015)   # se of one run <= 0.005
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm=CellMajority(), grid=list(range(1, 11)),
                                     loss="zero_one", seed=5, tuning="none")
    assert 2 <= res.lower_bound <= 4   # N* = 4; reference quantiles 3/4/4


def test_dgp_b_no_advantage_path_gives_trivial_bound():
    rng = np.random.default_rng(13)
    df = _dgp_b_cov(4000, rng)
    df["llm"] = 0.0                    # error 0.6 > e_1 = 0.45
    res = ess.equivalent_sample_size(df, "y", "llm", algorithm=CellMajority(), grid=[1, 2, 5],
                                     loss="zero_one", seed=2, tuning="none")
    assert res.lower_bound == 1 and res.ci == (1, math.inf)
    assert res.status == "not_rejected_at_first_grid_point" and res.no_llm_advantage_at_N1


# --- DGP C: OLS with Gaussian design -----------------------------------------------------------

def test_dgp_c_ols_curve_and_ess():
    from sklearn.linear_model import LinearRegression

    p, s = 5, 1.0
    rng = np.random.default_rng(31)
    n = 12_000
    X = rng.normal(size=(n, p))
    beta = np.array([1.0, -0.5, 0.25, 0.0, 0.5])
    y = X @ beta + s * rng.normal(size=n)
    btilde = beta + np.sqrt(0.1 / p)            # ||btilde - beta||^2 = 0.1 -> N* = 6 + ceil(50) = 56
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(p)])
    df["y"] = y
    df["llm"] = X @ btilde
    ols = LinearRegression(fit_intercept=False)
    curve = ess.error_curve(df, "y", features=[f"x{j}" for j in range(p)], algorithm=ols, grid=[13, 20, 40],
                            seed=1, tuning="none")
    exact = [s**2 * (1 + p / (N - p - 1)) for N in (13, 20, 40)]
    np.testing.assert_allclose(curve.table["error"], exact, rtol=0.04)
    res = ess.equivalent_sample_size(df, "y", "llm", features=[f"x{j}" for j in range(p)], algorithm=ols,
                                     grid=list(range(13, 120, 4)), seed=1, tuning="none")
    assert 20 <= res.lower_bound <= 56


# --- DGP E: CATE via the transformed outcome ---------------------------------------------------

def test_dgp_e_cate_ess():
    rng = np.random.default_rng(41)
    n = 30_000
    x = rng.random(n)
    d = (rng.random(n) < 0.5).astype(float)
    y = np.where(d == 1, 1 + 2 * x, x) + rng.normal(size=n)
    df = pd.DataFrame({"x": x, "d": d, "y": y, "tau_llm": 2.0})
    ystar = ess.transformed_outcome(df["y"], df["d"], 0.5)
    assert ystar.mean() == pytest.approx(1.5, abs=0.06)          # ATE; se 0.019
    assert ystar.var() == pytest.approx(40 / 3 - 2.25, rel=0.03)  # Var(Y*) = 11.083
    res = ess.cate_ess(df, "y", "d", "tau_llm", propensity=0.5, algorithm="mean", grid=list(range(5, 101, 5)),
                       seed=2)
    # N*_tau = ceil(11.083 / 0.25) = 45
    assert 10 <= res.lower_bound <= 45
    assert res.status == "stopped"


def test_arm_specific_ess_uses_only_that_arm():
    rng = np.random.default_rng(43)
    n = 8000
    x = rng.random(n)
    d = (rng.random(n) < 0.5).astype(float)
    y = np.where(d == 1, 1 + 2 * x, x) + rng.normal(size=n)
    df = pd.DataFrame({"x": x, "d": d, "y": y})
    df["llm"] = np.where(df["d"] == 1, 2.0, 0.5)     # constant per arm, off from the arm means
    res = ess.arm_ess(df, "y", "d", 1.0, "llm", algorithm="mean", grid=[2, 5, 10, 20], seed=1)
    sub = df[df["d"] == 1].reset_index(drop=True)
    want = ess.equivalent_sample_size(sub, "y", "llm", features=["x"], algorithm="mean", grid=[2, 5, 10, 20], seed=1)
    pd.testing.assert_frame_equal(res.table, want.table)
    assert res.n == int(d.sum())
    # arm 1: Var(Y(1)) = 1 + 4/12 = 1.333, mean 2.0 -> constant 2.0 is the arm mean: no N beats it
    assert res.llm_error == pytest.approx(4 / 12 + 1, rel=0.05)
    assert res.status == "all_rejected"
