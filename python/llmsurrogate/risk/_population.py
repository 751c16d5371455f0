"""Does the LLM answer like the population? (docs/methods/survey.md §3)

For one question with K options, :func:`compare_answers` sets the LLM's answer distribution beside
the (survey-weighted) distribution of the human answers, per group (age band, state, ...) and over
all rows: total variation distance and, for ordered options, the Wasserstein-1 distance, each with
a row-bootstrap CI (the PRNG of :func:`~llmsurrogate.risk.evaluate`; a row's weight travels with it).

The LLM's distribution is the weighted **mean of its K probabilities** (``llm_answer="probabilities"``,
the default): the answer shares of a silicon sample in which each simulated respondent draws its
answer from the model's distribution for that person. The shares of its most probable answers
(``"argmax"``) are offered because applied work often records one answer per persona, but they
are not an estimate of the model's answer distribution: a model that is exactly right about every
person's probabilities still collapses onto each person's modal answer, so minority answers vanish
and the distance to the population grows with the population's own spread, whoever is right.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._plotting import axes_for, depth_below, finish, fit_tick_labels, legend_below
from .._positions import at, located
from .._validation import align_by_label, as_float_array, check_allocation, check_choice, check_int
from ..exceptions import InvalidArgumentError, LLMSurrogateWarning, ShapeError
from ..results import Result, Summary, result_dataclass
from ._metrics import _level, _seed, bootstrap_ci
from ._multiclass import _argmax_last, _replicates, _risk_scores, multiclass_inputs, resolve_ordered

DISTANCES = ("tv", "w1")
INTERVALS = ("hull", "basic", "percentile")


# --- distances -----------------------------------------------------------------------------------

def total_variation(p, q) -> float:
    """Total variation distance ½ Σ_k |p_k − q_k| between two distributions over the same K options
    (the largest difference in the probability of any set of answers; in [0, 1]).

    Examples
    --------
    >>> total_variation([.5, .3, .2], [.2, .3, .5])
    0.3
    """
    a, b = _pair(p, q)
    return float(0.5 * np.abs(a - b).sum())


def wasserstein1(p, q, values=None) -> float:
    """Wasserstein-1 (earth mover's) distance between two distributions over ordered options at
    positions ``values`` (default 0, 1, ..., K − 1): Σ_{k<K} |P_k − Q_k| (v_{k+1} − v_k), with P, Q
    the cumulative distributions; in units of the scale (scipy's ``wasserstein_distance``).

    Examples
    --------
    >>> round(wasserstein1([.5, .3, .2], [.2, .3, .5]), 4)  # 30% of the mass moves two steps
    0.6
    >>> round(wasserstein1([1, 0, 0], [0, 0, 1], values=[1, 2, 5]), 4)
    4.0
    """
    a, b = _pair(p, q)
    return float(_w1(a[None, :] - b[None, :], _steps(values, a.size))[0])


def _pair(p, q):
    a = as_float_array(p, "p", allow_nan=False)
    b = as_float_array(q, "q", allow_nan=False)
    if a.shape != b.shape or a.ndim != 1:
        raise ShapeError(f"arguments `p` (shape {a.shape}) and `q` (shape {b.shape}) must be distributions over the "
                         f"same options")
    for name, v in (("p", a), ("q", b)):
        if (v < 0).any() or abs(v.sum() - 1) > 1e-6:
            raise InvalidArgumentError(f"argument `{name}` must be a probability distribution (non-negative, sum 1)")
    return a, b


def _steps(values, k: int) -> np.ndarray:
    if values is None:
        return np.ones(k - 1)
    v = as_float_array(values, "values", allow_nan=False)
    if v.shape != (k,):
        raise ShapeError(f"argument `values` must give one position per option ({k}); got {v.size}")
    d = np.diff(v)
    if (d <= 0).any():
        raise InvalidArgumentError("argument `values` must increase strictly, in the order of the options")
    return d


def _interval(kind: str, est: float, qlo: float, qhi: float) -> tuple[float, float]:
    """The CI of a distance from its estimate and the replicates' quantiles (docs/methods/survey.md §3.2)."""
    basic = (max(2 * est - qhi, 0.0), max(2 * est - qlo, 0.0))
    if kind == "basic":
        return basic
    if kind == "percentile":
        return qlo, qhi
    return min(basic[0], qlo), max(basic[1], qhi)


def _tv(diff: np.ndarray) -> np.ndarray:
    return 0.5 * np.abs(diff).sum(axis=-1)


def _w1(diff: np.ndarray, steps: np.ndarray) -> np.ndarray:
    return np.abs(np.cumsum(diff, axis=-1)[..., :-1]) @ steps


# --- the comparison ------------------------------------------------------------------------------

def _distributions(c, p, w, g, n_groups: int):
    """Per group (rows 0..G-1) and pooled (row G): weight, human shares, LLM shares."""
    k = p.shape[1]
    W = np.bincount(g, weights=w, minlength=n_groups)
    H = np.bincount(g * k + c, weights=w, minlength=n_groups * k).reshape(n_groups, k)
    Q = np.stack([np.bincount(g, weights=w * p[:, j], minlength=n_groups) for j in range(k)], axis=1)
    W, H, Q = np.r_[W, W.sum()], np.vstack([H, H.sum(axis=0)]), np.vstack([Q, Q.sum(axis=0)])
    with np.errstate(invalid="ignore", divide="ignore"):
        return W, H / W[:, None], Q / W[:, None]


def _stats(c, p, w, g, n_groups, steps):
    """The distances: groups, pooled, then the weight-share mean over groups; tv and w1 columns."""
    W, H, Q = _distributions(c, p, w, g, n_groups)
    d = Q - H
    out = np.column_stack([_tv(d), _w1(d, steps) if steps is not None else np.full(len(W), np.nan)])
    share = W[:n_groups] / W[n_groups]
    ok = share > 0
    mean = (share[ok, None] * out[:n_groups][ok]).sum(axis=0) if ok.any() else np.full(2, np.nan)
    return np.vstack([out, mean]), W, H, Q


def _groups(groups, n: int):
    if groups is None:
        return np.zeros(n, dtype=np.int64), ["all"]
    if isinstance(groups, (str, bytes)):
        raise InvalidArgumentError("argument `groups` must be a sequence with one group label per row")
    arr = np.asarray(groups.to_numpy() if hasattr(groups, "to_numpy") else groups, dtype=object)
    if arr.ndim != 1 or arr.size != n:
        raise ShapeError(f"argument `groups` (length {arr.size}) must have one label per row ({n})")
    missing = np.flatnonzero(pd.isna(arr))
    if missing.size:
        raise InvalidArgumentError(located(f"argument `groups` has {missing.size} missing label(s), the first at ",
                                           at(missing[0]), "; drop those rows or give them a label"))
    # the labels as they are (1 and "1" are two groups; numpy scalars become Python's), sorted
    # where they sort, else in the order they first occur
    codes, uniques = pd.factorize(pd.Index(arr, dtype=object, tupleize_cols=False))
    labels = [v.item() if isinstance(v, np.generic) else v for v in uniques]
    try:
        order = sorted(range(len(labels)), key=labels.__getitem__)
    except TypeError:  # labels of kinds that do not compare (1 and "1")
        order = list(range(len(labels)))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes], [labels[i] for i in order]


@result_dataclass
class AnswerComparison(Result):
    """The LLM's answer distribution against the population's, per group and overall.

    ``table``: one row per (scope, group, distance) with ``value``, ``se``, ``ci_low``,
    ``ci_high`` and ``bias`` (mean of the bootstrap replicates minus the estimate: the upward bias
    of an absolute difference, the noise floor a distance near 0 sits on); ``scope`` is ``group``,
    ``pooled`` (every row together) or ``group_mean`` (the groups' distances averaged with their
    weight shares: errors that cancel in the pool do not cancel here). ``distributions``: per group
    and option the human and the LLM shares and the group's rows and weight. ``meta``: options,
    ordered, llm_answer, interval, n_boot, seed, level, weighted.

    Made by :func:`compare_answers`.

    Examples
    --------
    >>> cmp = compare_answers([0, 1, 1, 2], [[.6, .3, .1], [.2, .5, .3], [.1, .8, .1], [.1, .2, .7]], n_boot=20)
    >>> round(cmp.distance("tv"), 4)  # human (.25, .5, .25) against the LLM (.25, .45, .3)
    0.05
    """

    table: Any
    distributions: Any
    meta: dict

    def distance(self, name: str = "tv", group: str | None = None) -> float:
        """One estimate: distance ``name`` (``"tv"``, ``"w1"``) of ``group`` (None: pooled over every row).

        Examples
        --------
        >>> from llmsurrogate.risk import compare_answers
        >>> cmp = compare_answers([0, 1, 1, 2], [[.6, .3, .1], [.2, .5, .3], [.1, .8, .1], [.1, .2, .7]], ordered=True, n_boot=20)
        >>> round(cmp.distance("tv"), 4), round(cmp.distance("w1"), 4)
        (0.05, 0.05)
        """
        check_choice(name, "name", list(DISTANCES))
        t = self.table[self.table["distance"] == name]
        t = t[t["scope"] == "pooled"] if group is None else t[(t["scope"] == "group") & (t["group"] == str(group))]
        if t.empty:
            raise InvalidArgumentError(f"no {name} distance for group {group!r}"
                                       + ("" if name == "tv" else " (w1 needs ordered=True)"))
        return float(t["value"].iloc[0])

    def tidy(self):
        """The distances, one row per distance and scope (a copy of ``table``).

        Examples
        --------
        >>> from llmsurrogate.risk import compare_answers
        >>> cmp = compare_answers([0, 1, 1, 2], [[.6, .3, .1], [.2, .5, .3], [.1, .8, .1], [.1, .2, .7]], ordered=True, n_boot=20)
        >>> cmp.tidy()[["distance", "scope", "value"]].round(3)
          distance   scope  value
        0       tv  pooled   0.05
        1       w1  pooled   0.05
        """
        return self.table.copy()

    def summary(self) -> Summary:
        """The comparison in words and a table (print it, or ``.as_text()``).

        Examples
        --------
        >>> from llmsurrogate.risk import compare_answers
        >>> cmp = compare_answers([0, 1, 1, 2], [[.6, .3, .1], [.2, .5, .3], [.1, .8, .1], [.1, .2, .7]], ordered=True, n_boot=20)
        >>> print(cmp.summary().as_text().splitlines()[0])
        LLM answers against the population
        """
        m = self.meta
        facts = {"rows": m["n"], "options": ", ".join(map(str, m["options"])), "ordered": m["ordered"],
                 "LLM distribution": m["llm_answer"], "survey weights": m["weighted"],
                 "bootstrap resamples": m["n_boot"]}
        ci = f"{100 * m['level']:g}% {m['interval']} bootstrap CIs" if m["n_boot"] else "no CIs: n_boot = 0"
        notes = ["tv: total variation distance (0 = same distribution, 1 = disjoint); w1: Wasserstein-1 in "
                 "scale steps. Both are biased upwards by sampling noise (column bias); near 0 read the upper end."]
        return Summary("LLM answers against the population", facts=facts,
                       tables=[(f"Distances ({ci})", self.table)], notes=notes)

    def plot(self, ax=None, distance: str = "tv", **kwargs):
        """Each group's distance with its CI (and the pooled one, in black) as a dot plot. On
        ``ax`` if given; returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> cmp = compare_answers([0, 1, 1, 2] * 5, [[.6, .3, .1], [.2, .5, .3], [.1, .8, .1], [.1, .2, .7]] * 5,
        ...                       groups=["a", "b"] * 10, n_boot=20)
        >>> cmp.plot().axes[0].get_xlabel()
        'total variation distance (LLM vs population)'
        """
        check_choice(distance, "distance", list(DISTANCES))
        t = self.table[(self.table["distance"] == distance) & (self.table["scope"] != "group_mean")]
        if t.empty:
            raise InvalidArgumentError("no w1 distance: the comparison was made with ordered=False")
        fig, ax, owned = axes_for(ax, (5, 0.9 + 0.35 * len(t)))
        pos = np.arange(len(t))[::-1]
        err = np.vstack([t["value"] - t["ci_low"], t["ci_high"] - t["value"]])
        err = np.where(np.isfinite(err), np.maximum(err, 0), 0)
        colors = np.where(t["scope"] == "pooled", "black", "tab:blue")
        for y0, x0, e0, e1, col in zip(pos, t["value"], err[0], err[1], colors):
            ax.errorbar(x0, y0, xerr=[[e0], [e1]], fmt="o", color=col, capsize=2)
        ax.set_yticks(pos, [("all rows" if s == "pooled" else g) for s, g in zip(t["scope"], t["group"])])
        ax.axvline(0, color="grey", lw=0.8, ls=":")
        ax.set_xlabel(("total variation distance" if distance == "tv" else "Wasserstein-1 distance (scale steps)")
                      + " (LLM vs population)")
        ax.set_title("Does the LLM answer like the population?" + (" (weighted)" if self.meta["weighted"] else ""))
        return finish(fig, owned)

    def plot_distributions(self, ax=None, group: str | None = None):
        """The human and the LLM answer shares of ``group`` (None: every row) side by side, each
        option named under its bars (wrapped onto more lines, or turned upright, where the texts
        would run into each other). On ``ax`` if given; returns the matplotlib Figure.

        Examples
        --------
        >>> import matplotlib; matplotlib.use("Agg")
        >>> cmp = compare_answers([0, 1, 1, 2], [[.6, .3, .1], [.2, .5, .3], [.1, .8, .1], [.1, .2, .7]], n_boot=0)
        >>> len(cmp.plot_distributions().axes[0].patches)  # 3 options x (human, LLM)
        6
        """
        d = self.distributions
        scope = d["scope"] if "scope" in d else np.where(d["group"] == "all rows", "pooled", "group")
        if group is None:
            sel = d[scope == "pooled"]
        else:
            sel = d[(scope == "group") & d["group"].map(lambda g: g == group and type(g) is type(group))]
            if sel.empty:  # a label given as text, "1" for group 1
                sel = d[(scope == "group") & (d["group"].astype(str) == str(group))]
                if sel["group"].map(repr).nunique() > 1:
                    raise InvalidArgumentError(f"argument `group`: {group!r} matches several groups "
                                               f"({sel['group'].unique().tolist()}); give the label as it is")
        if sel.empty:
            raise InvalidArgumentError(f"argument `group`: no group {group!r}; groups: {self.meta['groups'][:20]}")
        fig, ax, owned = axes_for(ax, (max(5.0, 1.5 + 0.75 * len(sel)), 3.2))
        x = np.arange(len(sel))
        ax.bar(x - 0.2, sel["human"], width=0.4, label="population (human answers)", color="grey")
        ax.bar(x + 0.2, sel["llm"], width=0.4, label=f"LLM ({self.meta['llm_answer']})", color="tab:blue")
        ax.set_xticks(x, [str(o) for o in sel["option"]])
        ax.set(ylabel="share of answers", title=f"Answers: {'all rows' if group is None else group}")
        if owned:
            fig.tight_layout()  # the axes' final width, which the option texts must share
        fit_tick_labels(ax)
        legend_below(ax, below=depth_below(ax))
        return finish(fig, owned)


def compare_answers(y, probs, groups=None, *, weights=None, options=None, ordered: bool | None = None, values=None,
                    llm_answer: str = "probabilities", interval: str = "hull", n_boot: int = 200, seed: int = 42,
                    level: float = 0.95) -> AnswerComparison:
    """Compare the LLM's answer distribution with the (weighted) distribution of the human answers
    ``y``, per group of ``groups`` and over all rows: total variation distance and, with
    ``ordered=True``, the Wasserstein-1 distance (positions ``values``, default 0..K−1).

    Per group g with weights w: human shares h_gk = Σ_{i∈g} w_i 1{y_i = k} / Σ_{i∈g} w_i; LLM
    shares q_gk = Σ_{i∈g} w_i p_ik / Σ_{i∈g} w_i (``llm_answer="probabilities"``) or the weighted
    shares of its argmax answers (``"argmax"``; see the module notes on why that is not the model's
    distribution). Both sides use the same rows and weights, so they describe the same population.

    ``probs``: an n x K array, a DataFrame with one column per option (``options=`` with named
    columns must name the same options; the columns are put in its order by name) or a
    :class:`~llmsurrogate.risk.RiskScores`. ``ordered``: None (default) takes it from a RiskScores'
    question, else from an ordered categorical ``y``, else False. ``groups`` keep their labels as
    they are (``1`` and ``"1"`` are two groups); in ``table`` and ``distributions`` the column
    ``scope`` tells a group from the pooled rows (``"all rows"``), whatever the groups are called.

    CIs: ``n_boot`` row-bootstrap replicates (``_core.risk_bootstrap_indices``; weights travel
    with rows; groups resampled with them), quantiles q_lo, q_hi. ``interval="basic"``:
    [2d̂ − q_hi, 2d̂ − q_lo] clipped at 0 (removes the first-order upward bias of a distance);
    ``"percentile"``: [q_lo, q_hi]; ``"hull"`` (default): the smallest interval holding both.
    A distance is biased upwards and its bootstrap is not consistent at 0: in the coverage study
    (validation/survey_coverage.py, docs/methods/survey.md §3.3) the 95% hull covers 90-98% away
    from 0, where near the noise floor the basic interval falls to 74% and the percentile one to 2%
    (group mean); at a distance of exactly 0 the hull covers 78-92% for a group or every row, 55-71%
    for the group mean (the percentile interval 0%). Near 0 read the upper end as a bound.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet([3, 3, 3], size=400)
    >>> y = np.array([rng.choice(3, p=row) for row in probs])  # the LLM is right about everyone
    >>> groups = np.where(np.arange(400) < 200, "young", "old")
    >>> cmp = compare_answers(y, probs, groups, ordered=True, n_boot=100)
    >>> print(cmp.table.query("scope == 'pooled'")[["distance", "ci_low"]].to_string(index=False))
    distance  ci_low
          tv     0.0
          w1     0.0
    >>> bool(cmp.distance("tv") < 0.06)
    True
    """
    check_choice(llm_answer, "llm_answer", ["probabilities", "argmax"])
    check_choice(interval, "interval", list(INTERVALS))
    probs, hint = _risk_scores(probs)
    ordered = resolve_ordered(ordered, y, hint)
    y, probs, weights, groups = align_by_label(("y", y), ("probs", probs), ("weights", weights), ("groups", groups))
    c, p, w, opts = multiclass_inputs(y, probs, weights, options)
    g, labels = _groups(groups, len(c))
    if values is not None and not ordered:
        raise InvalidArgumentError("argument `values` (positions of ordered options) needs ordered=True")
    steps = _steps(values, p.shape[1]) if ordered else None
    seed, level = _seed(seed), _level(level)
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    n_groups = len(labels)
    check_allocation(16.0 * n_boot * (n_groups + 2), "n_boot", n_boot, "the bootstrap replicates")
    if llm_answer == "argmax":
        p = np.eye(p.shape[1])[_argmax_last(p)]
    with np.errstate(invalid="ignore", divide="ignore"):  # a group (or replicate) of zero weight: NaN
        point, W, H, Q = _stats(c, p, w, g, n_groups, steps)
        boot = np.full((n_boot, *point.shape), np.nan)
        for b, rows in enumerate(_replicates(len(c), n_boot, seed)):
            boot[b] = _stats(c[rows], p[rows], w[rows], g[rows], n_groups, steps)[0]
    empty = [labels[j] for j in np.flatnonzero(W[:n_groups] == 0)]
    if empty:
        warnings.warn(f"groups with zero total weight have no answer distribution (NaN distances): {empty[:10]}",
                      LLMSurrogateWarning, stacklevel=2)
    cnt = np.r_[np.bincount(g, minlength=n_groups), len(c)]
    names = [("group", lab) for lab in labels] + [("pooled", "all rows")]
    if groups is not None:
        names.append(("group_mean", "mean of groups"))
    else:
        names = [("pooled", "all rows")]
    rows = []
    for r, (scope, lab) in enumerate(names):
        src = n_groups if (groups is None and scope == "pooled") else r
        for j, dist in enumerate(DISTANCES):
            if dist == "w1" and not ordered:
                continue
            est = float(point[src, j])
            se = lo = hi = bias = float("nan")
            if n_boot:
                col = boot[:, src, j]
                se, qlo, qhi = bootstrap_ci(col, level)
                finite = col[np.isfinite(col)]
                bias = float(finite.mean() - est) if finite.size else float("nan")
                lo, hi = _interval(interval, est, qlo, qhi)
            rows.append({"scope": scope, "group": lab,
                         "n": int(cnt[src]) if scope != "group_mean" else len(c),
                         "weight": float(W[src]) if scope != "group_mean" else float(W[-1]),
                         "distance": dist, "value": est, "se": se, "ci_low": lo, "ci_high": hi, "bias": bias})
    dist_rows = []
    for r, lab in enumerate(labels + ["all rows"]):
        if groups is None and r < n_groups:
            continue
        for k, opt in enumerate(opts):
            dist_rows.append({"scope": "group" if r < n_groups else "pooled", "group": lab, "option": opt,
                              "human": float(H[r, k]), "llm": float(Q[r, k]), "n": int(cnt[r]), "weight": float(W[r])})
    meta = {"n": int(len(c)), "options": [str(o) for o in opts], "ordered": ordered, "llm_answer": llm_answer,
            "interval": interval, "n_boot": n_boot, "seed": int(seed), "level": float(level),
            "weighted": weights is not None, "groups": labels if groups is not None else []}
    return AnswerComparison(table=pd.DataFrame(rows), distributions=pd.DataFrame(dist_rows), meta=meta)
