"""Lookahead-bias demo (docs/methods/lookahead.md §8.3): LAP detects memorised texts, and the test
finds planted lookahead bias in a simulated panel of the paper's size.

(a) **LAP of a tiny trained model.** A 2-layer GPT-2-style model (:func:`llmsurrogate.testing.build_model`)
    is trained for a few seconds on synthetic news headlines (plain next-token loss on every
    token); LAP (Min-K%, K = 20%) of the headlines it was trained on is compared with LAP of
    headlines from the same generator it never saw. Memorised texts are more familiar: seen > unseen.
    (:func:`llmsurrogate.testing.train_tiny_model` is not used: it trains the answer digits of
    census prompts only, so the prompt tokens -- what LAP scores -- are never learned.)

(b) **The test on a simulated panel** of the paper's size: 91,361 headlines, 1,587 firms, 3,000
    trading days. Returns follow the paper's contamination model (Definition 1, §2.1):
    r = firm + date + 3 (mu + eps), the LLM sees mu_hat = mu + L eps and reports
    sign(mu_hat) in {-1, 0, +1} (threshold 0.5), and LAP (x 10^4, Table I's mean and SD) is a
    noisy proxy (correlation 0.8) of the memorisation strength L ~ U(0, 0.4) (inside L* = 0.414,
    where the test has the right sign, §2.2 caveat 2). Model A is contaminated on every row (Table II); model B only
    before its "cutoff": the last 9,942 rows (the paper's out-of-sample N) have L = 0 (Table V,
    Figure III: the in-sample interaction against the pairs-bootstrap distribution of the
    out-of-sample one).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import testing
from .._atomic import check_output_dir, save_figure, write_frame, write_text
from .._deprecation import deprecated_arguments
from .._progress import ProgressCallback, quiet_transformers
from ..fe import etable
from ..llm.hf import TransformersBackend
from ._bootstrap import bootstrap
from ._lap import lap
from ._regression import lookahead_test

PROGRESS_LABEL = "lookahead demo"

#: The paper's sample sizes (Table I, Table V).
N_HEADLINES, N_FIRMS, N_DATES = 91_361, 1_587, 3_000
N_OUT_OF_SAMPLE = 9_942

#: Bootstrap replications: the paper's 10,000, and the quick run of ``make demo``.
PAPER_REPS, QUICK_REPS = 10_000, 2_000

_FIRMS = ["Acme", "Borealis", "Cobalt", "Dunmore", "Elektra", "Fairview", "Granite", "Halcyon", "Ironwood", "Juniper",
          "Keystone", "Lumen", "Meridian", "Northgate", "Oakridge", "Pinnacle"]
_EVENTS = ["quarterly earnings", "a new contract", "an analyst upgrade", "an analyst downgrade", "a merger offer",
           "a product recall", "a dividend increase", "weak guidance", "a CEO departure", "a share buyback",
           "a regulatory probe", "record sales"]
_MOVES = ["rise", "fall", "jump", "slide", "surge", "drop"]


def headlines(n: int, seed: int) -> list[str]:
    """``n`` distinct synthetic headlines, e.g. ``"Granite shares jump 7% after a new contract"``.

    >>> headlines(2, 0)[0].split()[1]
    'shares'
    """
    rng = np.random.default_rng(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        h = (f"{_FIRMS[rng.integers(len(_FIRMS))]} shares {_MOVES[rng.integers(len(_MOVES))]} "
             f"{int(rng.integers(1, 30))}% after {_EVENTS[rng.integers(len(_EVENTS))]}")
        if h not in seen:
            seen.add(h)
            out.append(h)
    return out




def _train_lm(path: Path, texts: list[str], steps: int, seed: int, lr: float = 3e-3, batch_size: int = 16) -> float:
    """Next-token training of the model at ``path`` on ``texts`` (every token's loss); returns the
    final mean loss."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    enc = [tok(t, add_special_tokens=True)["input_ids"] for t in texts]
    width = max(len(e) for e in enc)
    ids = torch.full((len(enc), width), tok.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(enc), width), dtype=torch.long)
    for i, e in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e)
        mask[i, : len(e)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is faster
    losses = []
    try:
        for _ in range(steps):
            b = torch.randint(0, len(enc), (min(batch_size, len(enc)),), generator=gen)
            loss = model(input_ids=ids[b], attention_mask=mask[b], labels=labels[b]).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    finally:
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(path)
    return float(np.mean(losses[-10:]))


def lap_seen_unseen(n_texts: int = 48, steps: int = 100, seed: int = 0, k: float = 0.2) -> dict:
    """Part (a): train a tiny model on ``n_texts`` headlines and compare LAP on them with LAP on
    ``n_texts`` others. Returns ``{"table": per-text DataFrame (text, set, lap), "summary":
    DataFrame (set, texts, mean LAP, mean log LAP), "auc": P(LAP seen > LAP unseen), "seconds",
    "final_loss"}``.

    Examples
    --------
    >>> from llmsurrogate.lookahead.demo import lap_seen_unseen
    >>> res = lap_seen_unseen(n_texts=4, steps=2)  # doctest: +SKIP
    >>> res["summary"]["set"].tolist()  # doctest: +SKIP
    ['seen in training', 'never seen']
    """
    started = time.perf_counter()
    texts = headlines(2 * n_texts, seed)
    seen, unseen = texts[:n_texts], texts[n_texts:]
    with tempfile.TemporaryDirectory() as tmp, quiet_transformers():
        path = Path(tmp) / "tiny"
        testing.build_model(path, "gpt2", hidden=64, layers=2, context=128, seed=seed)
        loss = _train_lm(path, seen, steps, seed)
        backend = TransformersBackend(path, device="cpu", batch_size=32)
        scores = lap(seen + unseen, backend, k=k)
        del backend
    table = pd.DataFrame({"text": seen + unseen, "set": ["seen in training"] * n_texts + ["never seen"] * n_texts,
                          "lap": scores})
    summary = table.groupby("set", sort=False)["lap"].agg(texts="size", mean_lap="mean",
                                                          mean_log_lap=lambda x: float(np.log(x).mean())).reset_index()
    a, b = scores[:n_texts], scores[n_texts:]
    auc = float((a[:, None] > b[None, :]).mean() + 0.5 * (a[:, None] == b[None, :]).mean())
    return {"table": table, "summary": summary, "auc": auc, "seconds": time.perf_counter() - started,
            "final_loss": loss, "steps": steps}


def small_panel(n: int = 600, seed: int = 0):
    """A small panel for examples: ``firm`` (30), ``date`` (20), ``llm`` in {-1, 0, 1}, ``lap``
    uniform on (0, 1) and ``ret = (0.1 + 0.5 lap) llm + N(0, 0.5^2)``: lookahead bias with delta
    = 0.5 planted (the examples of :func:`~llmsurrogate.lookahead.lookahead_test` and
    :func:`~llmsurrogate.lookahead.bootstrap`).

    >>> small_panel().shape
    (600, 5)
    """
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"firm": rng.integers(0, 30, n), "date": rng.integers(0, 20, n),
                       "llm": rng.choice([-1.0, 0.0, 1.0], n), "lap": rng.uniform(0, 1, n)})
    df["ret"] = (0.1 + 0.5 * df["lap"]) * df["llm"] + rng.normal(scale=0.5, size=n)
    return df


def simulate_panel(seed: int = 0, n: int = N_HEADLINES, n_firms: int = N_FIRMS, n_dates: int = N_DATES,
                   n_out_of_sample: int = N_OUT_OF_SAMPLE, l_max: float = 0.4, lap_corr: float = 0.8):
    """Part (b)'s panel (see the module docstring): columns ``firm``, ``date``, ``ret`` (%),
    ``llm_a``/``lap_a`` (model A, contaminated everywhere), ``llm_b``/``lap_b`` (model B, clean on
    the last ``n_out_of_sample`` rows, which fall after its cutoff) and ``period`` ("in-sample" /
    "out-of-sample" for model B). Several headlines of one firm on one day are separate rows.

    Examples
    --------
    >>> from llmsurrogate.lookahead.demo import simulate_panel
    >>> panel = simulate_panel(seed=0)
    >>> panel.shape, panel["period"].value_counts().to_dict()
    ((91361, 8), {'in-sample': 81419, 'out-of-sample': 9942})
    """
    rng = np.random.default_rng(seed)
    n_is = n - n_out_of_sample
    cutoff = int(round(n_dates * n_is / n))
    # firms differ in coverage (gamma weights); in-sample rows before the cutoff date, the rest after
    weights = rng.gamma(0.8, 1.0, n_firms)
    firm = rng.choice(n_firms, n, p=weights / weights.sum())
    firm[:n_firms] = rng.permutation(n_firms)  # every firm appears
    date = np.concatenate([rng.integers(0, cutoff, n_is), rng.integers(cutoff, n_dates, n_out_of_sample)])
    date[: min(cutoff, n_is)] = np.arange(min(cutoff, n_is))  # every in-sample date appears
    date[n_is: n_is + min(n_dates - cutoff, n_out_of_sample)] = np.arange(cutoff, cutoff + min(n_dates - cutoff,
                                                                                                 n_out_of_sample))
    mu = rng.normal(0.0, 1.0, n)
    eps = rng.normal(0.0, 1.0, n)
    ret = rng.normal(0.0, 0.5, n_firms)[firm] + rng.normal(0.0, 1.0, n_dates)[date] + 3.0 * (mu + eps)
    out = {"firm": firm, "date": date, "ret": ret}
    for name, clean_tail in (("a", False), ("b", True)):
        L = rng.uniform(0.0, l_max, n)
        if clean_tail:
            L[n_is:] = 0.0
        mu_hat = mu + L * eps
        out[f"llm_{name}"] = np.where(mu_hat > 0.5, 1.0, np.where(mu_hat < -0.5, -1.0, 0.0))
        z = (L - l_max / 2) / (l_max / np.sqrt(12.0))
        if clean_tail:  # after the cutoff LAP carries no memorisation, only its usual spread
            z[n_is:] = rng.normal(0.0, 1.0, n_out_of_sample)
        proxy = lap_corr * z + np.sqrt(1 - lap_corr**2) * rng.normal(0.0, 1.0, n)
        out[f"lap_{name}"] = 0.073 + 0.027 * proxy  # LAP x 10^4 with Table I's mean and SD
    frame = pd.DataFrame(out)
    frame["period"] = np.where(np.arange(n) < n_is, "in-sample", "out-of-sample")
    return frame


@deprecated_arguments(renamed={"reps": "n_boot"}, positional=1)
def panel_test(seed: int = 0, *, n_boot: int = PAPER_REPS, n_jobs: int | None = None) -> dict:
    """Part (b): Table II on model A, Table V and the Figure III bootstrap (``n_boot``
    replications) on model B.

    Examples
    --------
    >>> from llmsurrogate.lookahead.demo import panel_test
    >>> out = panel_test(seed=0, n_boot=20, n_jobs=1)
    >>> sorted(out), round(out["table2"].estimate, 3), out["bootstrap"].reps
    (['bootstrap', 'is', 'oos', 'panel', 'seconds', 'table2', 'table2_text', 'table5_text'], 8.293, 20)
    """
    started = time.perf_counter()
    panel = simulate_panel(seed)
    table2 = lookahead_test(panel, "ret", "llm_a", "lap_a", fe=["firm", "date"], cluster="date", n_jobs=n_jobs)
    ins = panel[panel["period"] == "in-sample"]
    oos = panel[panel["period"] == "out-of-sample"]
    is_test = lookahead_test(ins, "ret", "llm_b", "lap_b", standardize=True, n_jobs=n_jobs)
    oos_test = lookahead_test(oos, "ret", "llm_b", "lap_b", standardize=True, n_jobs=n_jobs)
    boot = bootstrap(oos, "ret", "llm_b", "lap_b", n_boot=n_boot, seed=seed, standardize=True,
                     reference=is_test.estimate, n_jobs=n_jobs)
    return {"panel": panel, "table2": table2, "is": is_test, "oos": oos_test, "bootstrap": boot,
            "table2_text": etable([table2.baseline, table2.regression]),
            "table5_text": etable([is_test.baseline, is_test.regression, oos_test.baseline, oos_test.regression]),
            "seconds": time.perf_counter() - started}


@deprecated_arguments(renamed={"reps": "n_boot"})
def write_demo(out_dir, plot: bool = True, progress: ProgressCallback | None = None,
               echo: Callable[[str], None] = print, *, n_boot: int = PAPER_REPS, lap_part: bool = True,
               seed: int = 0, **kwargs) -> list[str]:
    """Run parts (a) and (b), print their tables with ``echo`` and write ``lookahead_demo_lap.csv``,
    ``lookahead_demo_tables.txt`` (Table II and Table V as ``fe.etable`` prints them),
    ``lookahead_demo_test.json``, ``lookahead_demo_bootstrap.json`` and
    ``lookahead_demo_bootstrap.png`` (Figure III) to ``out_dir``; returns the file names written.
    ``n_boot``: bootstrap replications (default the paper's 10,000, which ``make demo`` runs).

    Examples
    --------
    >>> from llmsurrogate.lookahead.demo import write_demo
    >>> write_demo("demo_out", plot=False, n_boot=20, lap_part=False, echo=lambda line: None)
    ['lookahead_demo_tables.txt', 'lookahead_demo_test.json', 'lookahead_demo_bootstrap.json']
    """
    out_dir = check_output_dir(out_dir)
    written: list[str] = []
    steps = 3 if lap_part else 2
    if progress is not None:
        progress(PROGRESS_LABEL, 0, steps)
    echo("\nLookahead bias (Gao, Jiang & Yan 2026)")
    if lap_part:
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError:
            echo("(a) skipped: LAP of a tiny model needs the hf extra (pip install llmsurrogate[hf])")
            lap_part = False
    if lap_part:
        a = lap_seen_unseen(seed=seed)
        write_frame(out_dir / "lookahead_demo_lap.csv", a["table"])
        written.append("lookahead_demo_lap.csv")
        s = a["summary"].set_index("set")
        echo(f"(a) LAP (Min-K%, K = 20%) of a tiny GPT-2 trained {a['steps']} steps on 48 synthetic headlines "
             f"({a['seconds']:.1f} s):")
        echo(a["summary"].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        verdict = "seen > unseen" if s.loc["seen in training", "mean_lap"] > s.loc["never seen", "mean_lap"] \
            else "seen <= unseen (unexpected)"
        echo(f"    mean LAP {verdict}; P(LAP of a seen headline > LAP of an unseen one) = {a['auc']:.3f}")
        if progress is not None:
            progress(PROGRESS_LABEL, 1, steps)
    b = panel_test(seed=seed, n_boot=n_boot, n_jobs=kwargs.get("n_jobs"))
    panel, boot = b["panel"], b["bootstrap"]
    if progress is not None:
        progress(PROGRESS_LABEL, steps - 1, steps)
    head = (f"(b) simulated panel: {len(panel):,} headlines, {panel['firm'].nunique():,} firms, "
            f"{panel['date'].nunique():,} dates; planted contamination L ~ U(0, 0.4), LAP a noisy proxy of L (correlation 0.8)")
    t2 = b["table2"]
    lines = [head, "",
             "Table II (model A, contaminated on every row): ret on llm, lap, llm x lap | firm + date, "
             "clustered by date", b["table2_text"], "",
             f"interaction: {t2.estimate:.4g} (t = {t2.statistic:.2f}); p (H1: delta > 0) = {t2.p_greater:.3g}", "",
             f"Table V (model B; standardised within period): (1)-(2) in-sample N = {b['is'].nobs:,}, "
             f"(3)-(4) out-of-sample (L = 0) N = {b['oos'].nobs:,}", b["table5_text"], "",
             f"in-sample interaction {b['is'].estimate:.4g} (t = {b['is'].statistic:.2f}); out-of-sample "
             f"{b['oos'].estimate:.4g} (t = {b['oos'].statistic:.2f})",
             f"Figure III: {boot.reps:,} pairs-bootstrap replications of the out-of-sample interaction"
             + (f" (fewer than the paper's {PAPER_REPS:,} to keep the demo fast; `llmsurrogate lookahead test "
                f"--n-boot {PAPER_REPS}` runs the paper's number)" if boot.reps < PAPER_REPS else "")
             + f", {boot.seconds:.1f} s: 95th percentile {float(boot.quantile(0.95)):.4g}, in-sample estimate "
             f"{b['is'].estimate:.4g}, p = #{{draws >= in-sample}}/B = {boot.p_value:.4g} "
             f"((1 + #)/(B + 1) = {boot.p_value_plus_one:.4g})"]
    text = "\n".join(lines)
    echo(text)
    write_text(out_dir / "lookahead_demo_tables.txt", text + "\n")
    write_text(out_dir / "lookahead_demo_test.json",
               json.dumps({"table2": json.loads(t2.to_json()), "table5_in_sample": json.loads(b["is"].to_json()),
                           "table5_out_of_sample": json.loads(b["oos"].to_json())}, indent=1))
    write_text(out_dir / "lookahead_demo_bootstrap.json", boot.to_json())
    written += ["lookahead_demo_tables.txt", "lookahead_demo_test.json", "lookahead_demo_bootstrap.json"]
    if plot:
        import matplotlib.pyplot as plt

        fig = boot.plot(reference_label="in-sample estimate")
        ax = fig.axes[0]
        ax.set_title(f"Figure III (simulated): {boot.method} of the out-of-sample interaction, "
                     f"{boot.reps:,} replications", fontsize=9)
        ax.set_xlabel("bootstrap LLM$^{std}$ × LAP$^{std}$ coefficient (out-of-sample)")
        fig.tight_layout()
        save_figure(fig, out_dir / "lookahead_demo_bootstrap.png", dpi=130)
        plt.close(fig)
        written.append("lookahead_demo_bootstrap.png")
    if progress is not None:
        progress(PROGRESS_LABEL, steps, steps)
    return written
