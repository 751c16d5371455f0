"""The ``llmsurrogate lookahead`` commands (docs/methods/lookahead.md §8): ``lap`` (LAP of every
text of a table, through the cache, resumable) and ``test`` (the lookahead-bias regression, its
table, JSON and the Figure III bootstrap histogram). Registered by :mod:`llmsurrogate.cli`."""

from __future__ import annotations

import difflib
import math
import warnings
from pathlib import Path

import click
import numpy as np

from .._atomic import check_output_dir, save_figure, write_frame, write_text
from .._cli_support import (
    RUN_JSON,
    NameList,
    NJobs,
    Seed,
    check_output_and_record,
    cli_names,
    data_column,
    deprecated_option,
    handle_errors,
    progress_bar,
    read_table,
    start_run,
    use_agg_backend,
    write_run_json,
)
from ..exceptions import ColumnNotFoundError, InvalidArgumentError, LLMSurrogateWarning
from ..llm.cache import Cache
from ..llm.factory import BACKENDS, make_backend
from ._answer_lap import answer_lap
from ._bootstrap import bootstrap
from ._lap import lap
from ._regression import lookahead_test

#: Files ``lookahead test`` writes into --out (the bootstrap's two only with --n-boot).
TEST_OUTPUTS = ("lookahead_table.txt", "lookahead_table.tex", "lookahead_test.json", "lookahead_bootstrap.json",
                "lookahead_bootstrap.png", RUN_JSON)


@click.group("lookahead")
def lookahead_group():
    """Lookahead bias in LLM forecasts (Gao, Jiang & Yan 2026): LAP and the test."""


def _check_k(ctx, param, value):
    if value is None:
        return value
    if not (0.0 < value <= 1.0):
        hint = (f"; K is a fraction, not a percentage: did you mean --k {value / 100:g}?" if 1.0 < value <= 100.0
                else "; 0.2 is the paper's 20%")
        raise click.BadParameter(f"{value:g} is outside (0, 1]{hint}", ctx, param)
    return value


def _column(frame, name: str, option: str, data_path: Path) -> None:
    if name not in frame.columns:
        cols = [str(c) for c in frame.columns]
        close = difflib.get_close_matches(name, cols, n=1)
        hint = f"; did you mean {option} {close[0]}?" if close else ""
        shown = cols if len(cols) <= 20 else cols[:20] + ["..."]
        raise ColumnNotFoundError(f"{option} {name!r} is not a column of --data {data_path.name} "
                                  f"(columns: {shown}){hint}")


@lookahead_group.command("lap")
@click.option("--model", required=True, help="Local model folder (save_pretrained layout).")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file with one text (prompt) per row.")
@click.option("--text-column", required=True, help="Column holding the texts, exactly as given to the model.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Output file (.csv or .parquet): the input table plus the LAP column; its run record (versions, "
              "input SHA-256, command line) goes to <out>.run.json beside it.")
@click.option("--k", type=float, default=0.2, show_default=True, callback=_check_k,
              help="Fraction K in (0, 1] of the least likely tokens averaged (0.2 = the paper's 20%).")
@click.option("--method", type=click.Choice(["min_k", "mean", "min_k_plus_plus", "answer"]), default="min_k",
              show_default=True, help="min_k: LAP (eq. 1); mean: all tokens; min_k_plus_plus: Min-K%++ "
              "(transformers only); answer: probability mass on --answers after each text (recall queries, §1.5.1).")
@click.option("--answers", type=NameList(), default="up,down", show_default=True,
              help="With --method answer: the directional answers, comma-separated.")
@click.option("--column", "lap_column", default="lap", show_default=True, help="Name of the LAP column written.")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Cache folder (default: <out>.cache next to --out): per-token log-probabilities are stored, so a "
              "rerun, a run resumed after a kill, or another --k/--method on the same texts runs no model pass again.")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="transformers", show_default=True)
@click.option("--batch-size", type=click.IntRange(1), default=None,
              help="Texts per forward pass (default: the backend's: 16 on the CPU).")
@click.option("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda if available).")
@click.option("--details", is_flag=True, help="Also write n_scored, k and the mean bottom log-probability "
              "(<column>_min_k, <column>_n_scored, <column>_k).")
@click.option("--n-jobs", type=NJobs(), default=None, help="Threads of the reduction (default: all cores).")
@handle_errors
def lap_command(model, data_path, text_column, out_path, k, method, answers, lap_column, cache_dir, backend,
                batch_size, device, details, n_jobs):
    """Lookahead Propensity of every text in --data: the input table plus a LAP column in --out."""
    record = check_output_and_record(out_path, [data_path], arg="--out")
    if out_path.suffix.lower() not in {".csv", ".parquet", ".pq", ".gz"}:
        raise InvalidArgumentError(f"--out {out_path.name}: write .csv or .parquet")
    frame = read_table(data_path)
    _column(frame, text_column, "--text-column", data_path)
    new_cols = [lap_column] + ([f"{lap_column}_{s}" for s in ("min_k", "n_scored", "k")] if details else [])
    clash = [c for c in new_cols if c in frame.columns]
    if clash:
        raise InvalidArgumentError(f"--data {data_path.name} already has a column {clash[0]!r}; name the output "
                                   f"column otherwise with --column")
    texts = frame[text_column]
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str) or not t.strip()]
    if bad:
        raise InvalidArgumentError(
            f"--text-column {text_column!r}: {len(bad)} of {len(texts)} rows have no text (missing, empty or not a "
            f"string; first at row {bad[0] + 1}); drop or fill those rows before scoring")
    if method != "answer" and answers != "up,down":
        raise InvalidArgumentError("--answers applies to --method answer only")
    if cache_dir is None:
        if record is None:
            raise InvalidArgumentError(f"--out {out_path} is a device or FIFO: give the cache folder with --cache")
        cache_dir = out_path.with_name(out_path.name + ".cache")
    check_output_dir(cache_dir, files=(Cache.FILENAME,), inputs=[data_path], arg="--cache")
    cache = Cache(cache_dir)
    manifest = start_run([("--data", data_path)])
    be = make_backend(backend, model, device=device, batch_size=batch_size)
    texts = [str(t) for t in texts]
    names = cli_names(texts=data_column(text_column, data_path), k="--k", method="--method", answers="--answers",
                      batch_size="--batch-size")
    with progress_bar() as bar, warnings.catch_warnings(), names:
        warnings.filterwarnings("ignore", message="LLM cache .*", category=LLMSurrogateWarning)
        if method == "answer":
            if details:
                raise InvalidArgumentError("--details applies to the Min-K% methods; --method answer writes the "
                                           "mass of the answers only")
            scores = answer_lap(texts, be, answers.split(","), cache=cache, batch_size=batch_size, progress=bar)
            res = None
        else:
            res = lap(texts, be, k=k, method=method, cache=cache, batch_size=batch_size or 16, details=True,
                      progress=bar, n_jobs=n_jobs)
            scores = res["score"].to_numpy()
    out = frame.copy()
    out[lap_column] = scores
    if details and res is not None:
        out[f"{lap_column}_min_k"] = res["min_k"].to_numpy()
        out[f"{lap_column}_n_scored"] = res["n_scored"].to_numpy()
        out[f"{lap_column}_k"] = res["k"].to_numpy()
    write_frame(out_path, out)
    write_run_json(record, manifest)
    rejected = f" ({cache.rejected} stored outputs rejected: damaged or from another version)" if cache.rejected else ""
    finite = np.isfinite(scores)
    click.echo(f"{method} LAP of {len(texts)} texts: mean {np.mean(scores[finite]) if finite.any() else float('nan'):.6g}"
               f"{'' if finite.all() else f', {int((~finite).sum())} NaN (no scored token)'}")
    click.echo(f"cache {cache_dir}: {cache.hits} texts reused, {cache.misses} computed{rejected}")
    click.echo(f"Wrote {out_path}" + (f" and {record.name}" if record else ""))


@lookahead_group.command("test")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file, one row per text (headline, call).")
@click.option("--outcome", required=True, help="Column of the realised outcome (next-day return, CapEx).")
@click.option("--signal", required=True, help="Column of the LLM forecast (-1/0/+1 or the CapEx levels).")
@click.option("--lap", "lap_col", required=True, help="Column of LAP.")
@click.option("--fe", type=NameList(), default="firm,date", show_default=True,
              help="Fixed-effect columns, comma-separated.")
@click.option("--cluster", default="date", show_default=True,
              help="Column to cluster standard errors by, or 'none' for heteroskedasticity-robust (HC1) errors.")
@click.option("--controls", type=NameList(), default=None,
              help="Extra terms, comma-separated; ':' for products (Table III: small,llm:small,lap:small,llm:lap:small).")
@click.option("--standardize", is_flag=True, help="z-score outcome, signal and LAP first (Table V, Figure III).")
@click.option("--n-boot", type=click.IntRange(0), default=0, show_default=True,
              help="Bootstrap replications of the interaction (the paper: 10000, pairs); 0 for none. "
                   "--resample picks rows (pairs) or blocks.")
@deprecated_option("--bootstrap", "--n-boot", type=click.IntRange(0))
@click.option("--resample", default="obs", show_default=True,
              help="Bootstrap: 'obs' (rows, the paper's) or a column whose levels are resampled as blocks (date, firm).")
@click.option("--reference", type=float, default=None,
              help="Bootstrap: compare the draws with this value (the paper: the in-sample estimate, with --data the "
              "out-of-sample period); default: the percentile test of delta <= 0.")
@click.option("--seed", type=Seed(allow_none=True), default="0", show_default=True,
              help="Bootstrap seed ('none': drawn from the system and recorded).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for lookahead_table.txt/.tex, lookahead_test.json, run.json (the manifest: versions, "
              "input SHA-256, seed, command line) and, with --n-boot, lookahead_bootstrap.json and "
              "lookahead_bootstrap.png (Figure III).")
@click.option("--no-plot", is_flag=True, help="Skip the bootstrap figure.")
@click.option("--n-jobs", type=NJobs(), default=None, help="Threads (default: all cores).")
@handle_errors
def lookahead_test_command(data_path, outcome, signal, lap_col, fe, cluster, controls, standardize, n_boot, resample,
                           reference, seed, out_dir, no_plot, n_jobs):
    """The lookahead-bias test: outcome on signal, LAP and signal x LAP with fixed effects."""
    if reference is not None and not math.isfinite(reference):
        raise InvalidArgumentError(f"--reference must be a finite number; got {reference}")
    if reference is not None and n_boot == 0:
        raise InvalidArgumentError("--reference applies to the bootstrap; add --n-boot 10000")
    check_output_dir(out_dir, files=TEST_OUTPUTS, inputs=[data_path], arg="--out")
    frame = read_table(data_path)
    manifest = start_run([("--data", data_path)], {"seed": seed} if n_boot else {})
    cluster = None if cluster.strip().lower() == "none" else cluster.strip()
    fes = fe.split(",")
    for name, option in [(outcome, "--outcome"), (signal, "--signal"), (lap_col, "--lap")] + \
            [(f, "--fe") for f in fes] + ([(cluster, "--cluster")] if cluster else []) + \
            ([(resample, "--resample")] if n_boot and resample != "obs" else []):
        _column(frame, name, option, data_path)
    terms = controls.split(",") if controls else []
    for term in terms:
        for part in term.split(":"):
            _column(frame, part.strip(), "--controls", data_path)
    names = cli_names(data=f"--data {data_path.name}", outcome=data_column(outcome, data_path),
                      signal=data_column(signal, data_path), lap=data_column(lap_col, data_path), fe="--fe",
                      cluster="--cluster", controls="--controls", resample="--resample", reference="--reference",
                      n_boot="--n-boot", seed="--seed")
    with names:
        res = lookahead_test(frame, outcome, signal, lap_col, fe=fes, cluster=cluster, controls=terms,
                             standardize=standardize, n_jobs=n_jobs)
    table = res.etable(type="text")
    write_text(out_dir / "lookahead_table.txt", table + "\n")
    write_text(out_dir / "lookahead_table.tex", res.etable(type="tex") + "\n")
    write_text(out_dir / "lookahead_test.json", res.to_json())
    written = ["lookahead_table.txt", "lookahead_table.tex", "lookahead_test.json"]
    click.echo(table)
    click.echo(f"\ninteraction {res.term}: {res.estimate:.6g} (SE {res.std_error:.4g}, t = {res.statistic:.3f}, "
               f"df = {res.df}); p (H1: delta > 0) = {res.p_greater:.4g}, two-sided {res.p_two_sided:.4g}; "
               f"N = {res.nobs}")
    if n_boot:
        with progress_bar() as bar, names:
            bar(f"bootstrap ({n_boot} replications)", 0, 1)
            boot = bootstrap(frame, outcome, signal, lap_col, fe=fes, n_boot=n_boot, seed=seed, resample=resample,
                             controls=terms, standardize=standardize, reference=reference, n_jobs=n_jobs)
            bar(f"bootstrap ({n_boot} replications)", 1, 1)
        manifest["seeds"]["seed"] = boot.seed  # with --seed none: the one drawn
        write_text(out_dir / "lookahead_bootstrap.json", boot.to_json())
        written.append("lookahead_bootstrap.json")
        rule = (f"#{{draws >= {boot.reference:.6g}}}/B" if boot.reference is not None else "#{draws <= 0}/B")
        click.echo(f"bootstrap ({n_boot} replications, resample={resample}, seed={boot.seed}, {boot.seconds:.1f} s): "
                   f"95th percentile {float(boot.quantile(0.95)):.6g}; p = {rule} = {boot.p_value:.4g}, "
                   f"(1 + #)/(B + 1) = {boot.p_value_plus_one:.4g}")
        if not no_plot:
            use_agg_backend()
            import matplotlib.pyplot as plt

            fig = boot.plot()  # titled with the scheme --resample chose (pairs, or blocks of a column)
            save_figure(fig, out_dir / "lookahead_bootstrap.png", dpi=130)
            plt.close(fig)
            written.append("lookahead_bootstrap.png")
    write_run_json(out_dir / RUN_JSON, manifest)
    written.append(RUN_JSON)
    if res.notes:
        for note in res.notes:
            click.echo(f"note: {note}")
    click.echo(f"Wrote {', '.join(written)} to {out_dir}/")
