"""fe.bootstrap, the pairs and cluster bootstrap of a feols coefficient (docs/methods/fe.md): the
same draws as the lookahead test's bootstrap, which runs through it; equal, replication by
replication, to an independent reference (the published SplitMix64 stream written out in Python,
the rows or clusters resampled with numpy, and the OLS with dummy fixed effects solved by
numpy.linalg.lstsq); the design and missing-value rules of feols; clear errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from llmsurrogate import fe
from llmsurrogate import lookahead as la
from llmsurrogate.exceptions import (
    ColumnNotFoundError,
    InvalidArgumentError,
    LLMSurrogateWarning,
)

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _splitmix(state: int):
    """SplitMix64 (Steele, Lea & Flood 2014) as rust/common/rng.rs documents it: the state
    and the outputs of the generator started at ``state``."""
    while True:
        state = (state + GOLDEN) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def reference_counts(n: int, seed: int, b: int, block_codes=None) -> np.ndarray:
    """The resampling counts of replication ``b``, from the documented stream alone: SplitMix64
    started at the (b + 1)-th output of SplitMix64 seeded with ``seed``; each draw an index by
    Lemire's multiply-shift, ``(u * m) >> 64``, over the n rows or the G blocks."""
    start = next(x for i, x in enumerate(_splitmix(seed)) if i == b)
    gen = _splitmix(start)
    if block_codes is None:
        counts = np.zeros(n)
        for _ in range(n):
            counts[(next(gen) * n) >> 64] += 1
        return counts
    g = int(block_codes.max()) + 1
    per_block = np.zeros(g)
    for _ in range(g):
        per_block[(next(gen) * g) >> 64] += 1
    return per_block[block_codes]


def lstsq_coef(frame: pd.DataFrame, regressors: list[str], fes: list[str], param: str) -> float:
    """OLS of y on the regressors and a dummy per fixed-effect level (the first level of every
    fixed effect but the first dropped), by numpy.linalg.lstsq."""
    cols = [frame[r].to_numpy(float) for r in regressors]
    for j, f in enumerate(fes):
        d = pd.get_dummies(frame[f].astype(str), drop_first=j > 0).to_numpy(float)
        cols += list(d.T)
    if not fes:
        cols.append(np.ones(len(frame)))
    beta = np.linalg.lstsq(np.column_stack(cols), frame["y"].to_numpy(float), rcond=None)[0]
    return float(beta[regressors.index(param)])


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(11)
    n = 60
    d = pd.DataFrame({"firm": rng.integers(0, 6, n), "date": rng.integers(0, 5, n),
                      "x": rng.normal(size=n), "z": rng.normal(size=n)})
    d["y"] = 1.5 * d["x"] - 0.5 * d["z"] + 0.3 * d["firm"] - 0.2 * d["date"] + rng.normal(scale=0.5, size=n)
    return d


def test_the_counts_are_the_published_stream():
    codes = np.array([0, 0, 1, 2, 2, 3, 1, 0])
    for seed, b in [(0, 0), (1, 1), (2024, 7), ((1 << 64) - 1, 3)]:
        np.testing.assert_array_equal(fe.bootstrap_counts(40, seed, b), reference_counts(40, seed, b))
        np.testing.assert_array_equal(fe.bootstrap_counts(8, seed, b, blocks=codes), reference_counts(8, seed, b, codes))
    # the lookahead package re-exports the same function
    assert la.bootstrap_counts is fe.bootstrap_counts


@pytest.mark.parametrize("cluster", [None, "date", "firm"])
@pytest.mark.parametrize("fes", [["firm", "date"], ["firm"], []])
def test_draws_equal_a_brute_force_reference(tiny, cluster, fes):
    fml = "y ~ x + z" + (" | " + " + ".join(fes) if fes else "")
    boot = fe.bootstrap(fml, tiny, param="x", n_boot=8, cluster=cluster, seed=99, n_jobs=1)
    assert boot.estimate == pytest.approx(lstsq_coef(tiny, ["x", "z"], fes, "x"), rel=1e-10)
    blocks = None if cluster is None else pd.factorize(tiny[cluster])[0]
    for b in range(8):
        rows = np.repeat(np.arange(len(tiny)), reference_counts(len(tiny), 99, b, blocks).astype(int))
        want = lstsq_coef(tiny.iloc[rows], ["x", "z"], fes, "x")
        assert boot.draws[b] == pytest.approx(want, rel=1e-9, abs=1e-11), (cluster, fes, b)
    assert boot.n_clusters == (0 if cluster is None else tiny[cluster].nunique())
    assert boot.n_boot == 8 and boot.nobs == len(tiny) and boot.n_singular == boot.n_unconverged == 0


@pytest.mark.parametrize("resample", ["obs", "date"])
def test_the_lookahead_bootstrap_is_fe_bootstrap(resample):
    rng = np.random.default_rng(5)
    n = 800
    d = pd.DataFrame({"firm": rng.integers(0, 40, n), "date": rng.integers(0, 25, n),
                      "llm": rng.choice([-1.0, 0.0, 1.0], n), "lap": rng.uniform(0, 1, n)})
    d["ret"] = (0.1 + 0.5 * d["lap"]) * d["llm"] + rng.normal(scale=0.5, size=n)
    lb = la.bootstrap(d, "ret", "llm", "lap", n_boot=30, seed=17, resample=resample, n_jobs=2)
    fb = fe.bootstrap("ret ~ llm + lap + llm:lap | firm + date", d, param="llm:lap", n_boot=30,
                      cluster=None if resample == "obs" else resample, seed=17, n_jobs=1)
    np.testing.assert_array_equal(lb.draws, fb.draws)
    assert lb.estimate == fb.estimate and lb.n_blocks == fb.n_clusters and lb.nobs == fb.nobs
    assert lb.n_boot == lb.reps == 30


def test_feols_design_rules_and_result(tiny):
    d = tiny.copy()
    d.loc[3, "z"] = np.nan
    d.loc[7, "date"] = None
    with pytest.warns(LLMSurrogateWarning, match="2 row"):
        boot = fe.bootstrap("y ~ x + z | firm", d, param="z", n_boot=20, cluster="date", seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        fit = fe.feols("y ~ x + z | firm", d, vcov={"CRV1": "date"})
    assert boot.nobs == fit.nobs == len(d) - 2
    assert boot.estimate == pytest.approx(float(fit.coef()["z"]), rel=1e-12)
    assert boot.se() == pytest.approx(np.std(boot.draws, ddof=1))
    lo, hi = boot.confint(level=0.9)
    assert (lo, hi) == tuple(np.quantile(boot.draws, [0.05, 0.95]))
    assert list(boot.tidy().columns) == ["term", "estimate", "std_error", "conf_low", "conf_high", "n_boot",
                                         "finite_draws"]
    assert fe.FeolsBootstrap.from_json(boot.to_json()) == boot
    assert "clusters of date" in str(boot)
    # a parsed formula is taken as it is; the draws do not depend on the thread count
    again = fe.bootstrap(fe.parse_formula("y ~ x + z | firm"), d.dropna(), param="z", n_boot=20, cluster="date",
                         seed=3, n_jobs=2)
    np.testing.assert_array_equal(again.draws, boot.draws)


def test_bad_input_is_a_clear_error(tiny):
    with pytest.raises(InvalidArgumentError, match="param"):
        fe.bootstrap("y ~ x + z | firm", tiny, n_boot=2, seed=1)
    with pytest.raises(InvalidArgumentError, match="'w' is not a regressor"):
        fe.bootstrap("y ~ x + z | firm", tiny, param="w", n_boot=2, seed=1)
    with pytest.raises(InvalidArgumentError, match="n_boot"):
        fe.bootstrap("y ~ x | firm", tiny, n_boot=0, seed=1)
    with pytest.raises(InvalidArgumentError, match="seed"):
        fe.bootstrap("y ~ x | firm", tiny, n_boot=2, seed=-1)
    with pytest.raises(ColumnNotFoundError, match="'week'"):
        fe.bootstrap("y ~ x | firm", tiny, n_boot=2, seed=1, cluster="week")
    with pytest.raises(InvalidArgumentError, match="blocks need at least 2"):
        fe.bootstrap("y ~ x | firm", tiny.assign(one=1), n_boot=2, seed=1, cluster="one")
    with pytest.raises(InvalidArgumentError, match="intercept"):
        fe.bootstrap("y ~ 0 + x", tiny, n_boot=2, seed=1)
    with pytest.raises(InvalidArgumentError, match="collinear"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LLMSurrogateWarning)
            fe.bootstrap("y ~ x + f | firm", tiny.assign(f=tiny["firm"] * 0.5), param="x", n_boot=2, seed=1)
    with pytest.raises(InvalidArgumentError, match="resample"):  # the lookahead's word for the cluster column
        la.bootstrap(tiny.assign(llm=tiny["x"], lap=tiny["z"], one=1), "y", "llm", "lap", n_boot=2, seed=1,
                     resample="one")
