"""Synthetic data sets that tests in several folders (and the benchmarks) share."""

from __future__ import annotations

import numpy as np
import pandas as pd
from reference import cpt_ref

#: a small task file (a two-option question on two ACS columns)
TASK_TOML = '''
name = "Smoke"
target = "Y"
year = 2021
population = "US adults"
[question]
text = "Does this person smoke?"
options = [{text = "No", value = 0}, {text = "Yes", value = 1}]
[[columns]]
name = "AGEP"
[[columns]]
name = "SEX"
description = "sex"
values = {1 = "Male", 2 = "Female"}
'''


def synthetic(n=5, m=40, seed=1, losses=True):
    """Lottery samples from n domains with CPT-like behaviour plus noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n):
        z1 = rng.choice([10.0, 20.0, 50.0, -10.0, -30.0] if losses else [10.0, 20.0, 50.0], size=m)
        z2 = z1 * rng.choice([0.0, 0.2, 0.5], size=m)
        p = rng.choice([0.05, 0.25, 0.5, 0.75, 0.95], size=m)
        y = cpt_ref(0.7 + 0.05 * d, 0.8, 0.8, 0.6 + 0.05 * d, z1, z2, p) + rng.normal(0, 1.0, size=m)
        rows.append(pd.DataFrame({"domain": f"D{d}", "z1": z1, "z2": z2, "p1": p, "ce": y}))
    return pd.concat(rows, ignore_index=True)


def make_panel(n=3000, n_firms=120, n_dates=100, delta=0.3, seed=0):
    """Spec §6.5's linear DGP (smaller): planted interaction delta."""
    rng = np.random.default_rng(seed)
    firm = rng.integers(0, n_firms, n)
    date = rng.integers(0, n_dates, n)
    a = rng.normal(0, 1, n_firms)
    llm = rng.choice([-1.0, 0.0, 1.0], n, p=[0.4, 0.15, 0.45])
    lap = rng.normal(0, 1, n) + 0.5 * a[firm]
    u = rng.normal(0, 1, n) + rng.normal(0, 0.5, n_dates)[date]
    y = a[firm] + rng.normal(0, 1, n_dates)[date] + 0.2 * llm - 0.3 * lap + delta * llm * lap + u
    return pd.DataFrame({"ret": y, "llm": llm, "lap": lap, "firm": firm, "date": date,
                         "small": (rng.random(n) < 0.2).astype(float)})


def hard_panel(n_firms=1587, n_dates=3000, window=58, seed=7):
    """Each firm active only in a window of `window` consecutive dates: a long, thin chain of
    firm-date connections, where alternating projections crawl."""
    rng = np.random.default_rng(seed)
    start = rng.integers(0, n_dates - window, n_firms)
    firm = np.repeat(np.arange(n_firms), window)
    date = (start[:, None] + np.arange(window)[None, :]).ravel()
    n = len(firm)
    a = rng.normal(0, 1, n_firms)
    b = np.cumsum(rng.normal(0, 0.3, n_dates))
    llm = rng.choice([-1.0, 0.0, 1.0], n, p=[0.4, 0.15, 0.45])
    lap = rng.normal(0, 1, n) + 0.3 * a[firm] + 0.001 * date
    y = a[firm] + b[date] + 0.2 * llm - 0.3 * lap + 0.1 * llm * lap + rng.normal(0, 1, n)
    return pd.DataFrame(dict(y=y, llm=llm, lap=lap, firm=firm, date=date))


def error_matrices():
    """(name, square error matrix) pairs with what order statistics must get right: ties across
    test domains and signed zeros, a smooth distribution, heavy tails (transfer selection tests)."""
    rng = np.random.default_rng(37)
    yield "ties and signed zeros", rng.choice([0.0, -0.0, 1.0, -1.0, 2.5], size=(15, 15))
    yield "gamma", np.round(rng.gamma(2.0, 1.0, size=(40, 40)), 3)
    yield "heavy tails", rng.standard_cauchy(size=(23, 23))


def float_bits(x) -> list[int]:
    """The float64 bits of ``x``: equal lists mean equal to the bit (-0.0 and 0.0 differ)."""
    return np.asarray(x, dtype=np.float64).view(np.int64).tolist()


def lotteries(n, m=10, seed=1):
    """n domains of m expected-value lotteries with noise (quick EU fits; transfer table builds)."""
    rng = np.random.default_rng(seed)
    z1 = rng.choice([10.0, 20.0, 50.0], size=(n, m))
    z2 = z1 * rng.choice([0.0, 0.2, 0.5], size=(n, m))
    p = rng.choice([0.05, 0.25, 0.5, 0.75, 0.95], size=(n, m))
    ce = p * z1 + (1 - p) * z2 + rng.normal(0, 1 + 0.01 * np.arange(n)[:, None], size=(n, m))
    return pd.DataFrame({"domain": np.repeat([f"D{d:03d}" for d in range(n)], m), "z1": z1.ravel(),
                         "z2": z2.ravel(), "p1": p.ravel(), "ce": ce.ravel()})
