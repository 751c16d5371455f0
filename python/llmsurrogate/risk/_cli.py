"""The ``llmsurrogate risk`` command: LLM risk scores of every row of a table, through the cache,
with metrics when the label is present. Registered by :mod:`llmsurrogate.cli` (its name before
issue 20, ``llmsurrogate score``, stays as a hidden alias with a deprecation notice)."""

from __future__ import annotations

import warnings
from pathlib import Path

import click

from .._cli_support import (RUN_JSON, cli_names, data_column, handle_errors, progress_bar, read_table, start_run,
                            use_agg_backend, write_run_json)
from .._atomic import check_output_dir, save_figure, write_frame, write_text
from ..exceptions import LLMSurrogateWarning
from ..llm.cache import Cache
from ..llm.factory import BACKENDS, load_task, make_backend
from ._plots import plot_calibration
from ._scores import risk_scores


@click.command("risk")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file with the task's feature columns (and the label, to evaluate).")
@click.option("--task", "task_spec", required=True, help="Task TOML file, or a built-in task name (ACSIncome).")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="transformers", show_default=True)
@click.option("--model", required=True, help="Local model folder (save_pretrained layout); with --backend openai "
              "the served model's name.")
@click.option("--method", type=click.Choice(["multiple_choice", "numeric", "numeric_argmax"]),
              default="multiple_choice", show_default=True)
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Cache folder: every prompt's output is stored; a rerun resumes where it stopped.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for scores.csv, metrics.csv, metrics.json, calibration.png and run.json (the run's "
              "counts, backend and manifest: versions, input SHA-256s, seeds, command line).")
@click.option("--batch-size", type=click.IntRange(1), default=None,
              help="Prompts per forward pass (default: the backend's: 16 on the CPU, up to 512 on a GPU).")
@click.option("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda if available).")
@click.option("--no-order-correction", is_flag=True, help="Score only the original answer order.")
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template (instruct models).")
@click.option("--groups", "group_col", default=None, help="Column with groups for group metrics (default: the "
              "task's sensitive attribute when present).")
@click.option("--n-boot", type=click.IntRange(0), default=200, show_default=True)
@click.option("--no-plot", is_flag=True)
@click.option("--base-url", default=None, help="--backend openai: the OpenAI-compatible endpoint, e.g. "
              "http://127.0.0.1:8000/v1 (vllm serve, llama.cpp) or https://api.openai.com/v1.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="--backend openai: the environment variable holding the API key (never pass the key itself).")
@click.option("--endpoint", type=click.Choice(["completions", "chat"]), default="completions", show_default=True,
              help="--backend openai: raw-prompt completions, or chat (the prompt as the user message).")
@click.option("--concurrency", type=click.IntRange(1), default=None, help="--backend openai: requests in flight (8).")
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), default=None,
              help="--backend openai: client-side limit of requests per minute.")
@click.option("--tpm", type=click.FloatRange(min=0, min_open=True), default=None,
              help="--backend openai: client-side limit of tokens per minute.")
@click.option("--price-input", type=click.FloatRange(min=0), default=None,
              help="--backend openai: $ per 1M prompt tokens (for the cost ledger; none is built in).")
@click.option("--price-output", type=click.FloatRange(min=0), default=None,
              help="--backend openai: $ per 1M completion tokens.")
@click.option("--max-cost", type=click.FloatRange(min=0), default=None,
              help="--backend openai: stop cleanly before spending more than this many $ (needs the prices).")
@click.option("--max-tokens", "max_tokens_budget", type=click.IntRange(0), default=None,
              help="--backend openai: stop cleanly before using more tokens than this.")
@click.option("--timeout", "request_timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="--backend openai: seconds per request (60).")
@handle_errors
def risk_command(data_path, task_spec, backend, model, method, cache_dir, out_dir, batch_size, device, no_order_correction,
          chat, group_col, n_boot, no_plot, base_url, api_key_env, endpoint, concurrency, rpm, tpm, price_input,
          price_output, max_cost, max_tokens_budget, request_timeout):
    """LLM risk scores for every row of --data, with metrics when the label is present."""
    outputs = ("scores.csv", "metrics.csv", "metrics.json", "calibration.png", RUN_JSON)
    check_output_dir(out_dir, files=outputs, inputs=[data_path], arg="--out")
    check_output_dir(cache_dir, files=(Cache.FILENAME,), inputs=[data_path], arg="--cache")
    frame = read_table(data_path)
    task = load_task(task_spec, arg="--task")
    task_file = Path(str(task_spec))
    manifest = start_run([("--data", data_path)] + ([("--task", task_file)] if task_file.is_file() else []))
    cache = Cache(cache_dir)
    if backend == "openai":
        if base_url is None:
            raise click.UsageError("--backend openai needs --base-url")
        prices = None
        if price_input is not None or price_output is not None:
            prices = {"input": price_input or 0.0, "output": price_output or 0.0}
        be = make_backend("openai", model, base_url=base_url, api_key_env=api_key_env, endpoint=endpoint,
                          concurrency=concurrency, requests_per_minute=rpm, tokens_per_minute=tpm, prices=prices,
                          max_cost=max_cost, max_tokens=max_tokens_budget, timeout=request_timeout, cache=cache)
    else:
        be = make_backend(backend, model, device=device, batch_size=batch_size)
    gcol = group_col or task.sensitive_attribute
    names = cli_names(data=f"--data {data_path.name}", task="--task", method="--method", batch_size="--batch-size",
                      groups=data_column(gcol or "", data_path), n_boot="--n-boot")
    with progress_bar() as bar, warnings.catch_warnings(), names:
        # rejected cache entries are counted and reported below, once
        warnings.filterwarnings("ignore", message="LLM cache .*", category=LLMSurrogateWarning)
        if hasattr(be, "ledger"):
            be.progress = bar  # the request ledger as bars: responses, tokens, share of --max-cost
        res = risk_scores(frame, task, be, method, cache=cache, batch_size=batch_size or 16,
                               correct_order_bias=not no_order_correction, chat=chat, progress=bar)
    write_frame(out_dir / "scores.csv", res.table)
    written = ["scores.csv"]
    meta = dict(res.meta)
    meta["cache_rejected"] = cache.rejected
    ledger = getattr(be, "ledger", None)
    if ledger is not None:
        meta["ledger"] = ledger.as_dict()
    if "label" in res.table:
        groups = frame[gcol].to_numpy() if gcol and gcol in frame.columns else None
        with names:
            ev = res.evaluate(groups=groups, n_boot=n_boot)
        manifest["seeds"]["bootstrap"] = ev.meta["seed"]
        write_frame(out_dir / "metrics.csv", ev.metrics)
        write_text(out_dir / "metrics.json", ev.to_json())
        written += ["metrics.csv", "metrics.json"]
        click.echo(ev.summary().as_text())
        if not no_plot:
            use_agg_backend()
            fig = plot_calibration(res.table["label"], res.table["score"], groups=groups)
            save_figure(fig, out_dir / "calibration.png", dpi=130)
            written.append("calibration.png")
    write_run_json(out_dir / RUN_JSON, manifest, meta)
    written.append(RUN_JSON)
    rejected = f" ({cache.rejected} stored outputs rejected: damaged or from another version)" if cache.rejected else ""
    click.echo(f"cache: {meta['cache_hits']} prompts reused, {meta['cache_misses']} computed{rejected}")
    if ledger is not None:
        click.echo(f"requests: {ledger.summary()}")
    click.echo(f"Wrote {', '.join(written)} to {out_dir}/")


#: the command's function under its name before issue 20 (``llmsurrogate.cli`` imported ``score``)
score = risk_command
