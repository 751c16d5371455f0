"""ESS demo on the bundled certainty-equivalent data: how many observations of one subject pool is
a fixed, textbook prediction rule worth?

The rule is cumulative prospect theory with the Tversky & Kahneman (1992) median parameters --
value curvature alpha = beta = 0.88, loss aversion lambda = 2.25, probability weighting
gamma = 0.61 (gains) and delta = 0.69 (losses) -- *not* fitted to the data. It predicts the
certainty equivalent of each two-outcome lottery (z1 with probability p1, z2 otherwise). The
comparison algorithms (random forest and lasso on the lottery's z1, z2, p1) are trained on N
observations of the same pool by block-out CV; the ESS is the N at which they match the rule.

This module is self-contained on purpose (fitted EU/CPT models live elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from .. import datasets
from .._atomic import check_output_dir, save_figure, write_frame, write_text
from .._plotting import plain_log_ticks
from .._progress import ProgressCallback
from ._estimators import equivalent_sample_size

PROGRESS_LABEL = "ESS demo (random forest, lasso)"

TK1992 = {"alpha": 0.88, "beta": 0.88, "lambda": 2.25, "gamma": 0.61, "delta": 0.69}


def tk_weight(p, c):
    """Tversky-Kahneman (1992) probability weighting w(p) = p^c / (p^c + (1-p)^c)^(1/c).

    Examples
    --------
    >>> from llmsurrogate.ess.demo import tk_weight
    >>> tk_weight([0.01, 0.5, 0.99], 0.61).round(3).tolist()   # small p overweighted, large p underweighted
    [0.055, 0.421, 0.912]
    """
    p = np.asarray(p, dtype=float)
    num = p**c
    return num / (num + (1 - p) ** c) ** (1 / c)


def cpt_tk1992_certainty_equivalent(z1, z2, p1, params: dict | None = None) -> np.ndarray:
    """Certainty equivalent of the lottery (z1, p1; z2, 1 - p1) under CPT with TK (1992) parameters.

    Value v(x) = x^alpha for x >= 0 and -lambda (-x)^beta for x < 0. Decision weights are rank
    dependent: for two gains the better outcome gets w+(p), for two losses the worse outcome gets
    w-(p), for a mixed lottery each outcome gets w+/w- of its own probability. The certainty
    equivalent inverts v: CE = V^(1/alpha) if V >= 0, else -(-V/lambda)^(1/beta).

    >>> round(float(cpt_tk1992_certainty_equivalent(100.0, 0.0, 0.5)[0]), 2)
    37.38
    """
    q = dict(TK1992, **(params or {}))
    a, b, lam, g, d = q["alpha"], q["beta"], q["lambda"], q["gamma"], q["delta"]
    z1, z2, p1 = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (z1, z2, p1))
    z1, z2, p1 = np.broadcast_arrays(z1, z2, p1)

    def v(x):
        return np.where(x >= 0, np.abs(x) ** a, -lam * np.abs(x) ** b)

    # order outcomes: hi >= lo, with their probabilities
    swap = z1 < z2
    hi, lo = np.where(swap, z2, z1), np.where(swap, z1, z2)
    p_hi = np.where(swap, 1 - p1, p1)
    gains = lo >= 0
    losses = hi <= 0
    mixed = ~gains & ~losses
    V = np.empty_like(hi)
    # two gains: V = w+(p_hi) v(hi) + (1 - w+(p_hi)) v(lo)
    w = tk_weight(p_hi, g)
    V[gains] = (w * v(hi) + (1 - w) * v(lo))[gains]
    # two losses: the worse outcome lo gets w-(p_lo)
    wl = tk_weight(1 - p_hi, d)
    V[losses] = (wl * v(lo) + (1 - wl) * v(hi))[losses]
    # mixed: gain hi with w+(p_hi), loss lo with w-(1 - p_hi)
    V[mixed] = (tk_weight(p_hi, g) * v(hi) + tk_weight(1 - p_hi, d) * v(lo))[mixed]
    return np.where(V >= 0, np.abs(V) ** (1 / a), -(np.abs(V) / lam) ** (1 / b))


def run_ess_demo(domain_id: int = 10, grid=(1, 5, 20, 50, 100, 200, 500), n_estimators: int = 50,
                 seed: int = 0, n_jobs: int | None = None, progress: ProgressCallback | None = None):
    """ESS of the TK (1992) CPT rule against a random forest and a lasso on one subject pool.

    Returns ``{"rf": EssResult, "lasso": EssResult, "table": DataFrame}``: one summary row per
    algorithm (ESS lower bound, status, plug-in, LLM/rule error, ...).

    Examples
    --------
    >>> from llmsurrogate.ess.demo import run_ess_demo
    >>> out = run_ess_demo(grid=(1, 5), n_estimators=5, n_jobs=1)
    >>> sorted(out), out["table"].shape[0]
    (['label', 'lasso', 'rf', 'table'], 2)
    """
    data = datasets.load_certainty_equivalents(domains=[domain_id])
    label = str(data["domain"].iloc[0])
    frame = pd.DataFrame({"z1": data["z1"].to_numpy(float), "z2": data["z2"].to_numpy(float),
                          "p1": data["p1"].to_numpy(float), "ce": data["ce"].to_numpy(float)})
    frame["cpt_tk1992"] = cpt_tk1992_certainty_equivalent(frame["z1"], frame["z2"], frame["p1"])
    n = len(frame)
    grid = [g for g in grid if g <= n // 2]
    out, rows = {}, []
    if progress is not None:
        progress(PROGRESS_LABEL, 0, 2)
    for i, algo in enumerate(("rf", "lasso")):
        res = equivalent_sample_size(frame, "ce", "cpt_tk1992", features=["z1", "z2", "p1"], algorithm=algo,
                                     grid=grid, seed=seed, n_jobs=n_jobs,
                                     algorithm_options={"n_estimators": n_estimators} if algo == "rf" else None)
        out[algo] = res
        rows.append({"subject pool": label, "n": n, "algorithm": algo, "ESS lower bound": res.lower_bound,
                     "status": res.status, "plug-in ESS": res.plugin, "rule MSE": res.llm_error,
                     "algorithm MSE at largest N": float(res.table["algo_error"].iloc[-1])})
        if progress is not None:
            progress(PROGRESS_LABEL, i + 1, 2)
    out["table"] = pd.DataFrame(rows)
    out["label"] = label
    return out


def write_demo(out_dir, plot: bool = True, progress: ProgressCallback | None = None,
               echo: Callable[[str], None] = print, **kwargs) -> list[str]:
    """Run :func:`run_ess_demo`, print its table with ``echo`` and write ``ess_demo_table.csv``,
    ``ess_demo_<algo>.json`` and ``ess_demo.png`` (two panels: random forest and lasso) to
    ``out_dir``; returns the file names written.

    Examples
    --------
    >>> from llmsurrogate.ess.demo import write_demo
    >>> write_demo("ess_out", plot=False, echo=lambda line: None, grid=(1, 5), n_estimators=5, n_jobs=1)
    ['ess_demo_table.csv', 'ess_demo_rf.json', 'ess_demo_lasso.json']
    """
    out_dir = check_output_dir(out_dir)
    res = run_ess_demo(progress=progress, **kwargs)
    write_frame(out_dir / "ess_demo_table.csv", res["table"])
    written = ["ess_demo_table.csv"]
    for algo in ("rf", "lasso"):
        write_text(out_dir / f"ess_demo_{algo}.json", res[algo].to_json())
        written.append(f"ess_demo_{algo}.json")
    if plot:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
        for ax, algo in zip(axes, ("rf", "lasso")):
            res[algo].plot(ax=ax, rule_label="CPT, Tversky-Kahneman (1992) parameters")
            ax.set_title(f"{res['label']}: TK (1992) CPT vs {'random forest' if algo == 'rf' else 'lasso'}", fontsize=9)
            ax.set_ylabel("mean squared error of the certainty equivalent" if algo == "rf" else "")
            plain_log_ticks(ax, "y")  # the two panels share it: the learners' curves read side by side
        fig.tight_layout()
        save_figure(fig, out_dir / "ess_demo.png", dpi=130)
        plt.close(fig)
        written.append("ess_demo.png")
    echo("\nEquivalent sample size of a textbook CPT rule (Tversky-Kahneman 1992, not fitted)")
    echo(res["table"].to_string(index=False))
    return written
