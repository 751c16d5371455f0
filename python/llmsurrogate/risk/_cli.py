"""The ``llmsurrogate risk`` command: LLM risk scores of every row of a table, through the cache,
with metrics when the label is present. Registered by :mod:`llmsurrogate.cli` (its name before
issue 20, ``llmsurrogate score``, stays as a hidden alias with a deprecation notice)."""

from __future__ import annotations

import warnings
from pathlib import Path

import click
import numpy as np
import pandas as pd

from .._cli_support import (RUN_JSON, cli_names, data_column, handle_errors, progress_bar, read_table, start_run,
                            use_agg_backend, write_run_json)
from .._atomic import check_output_dir, save_figure, write_frame, write_text
from ..exceptions import ColumnNotFoundError, InvalidArgumentError, LLMSurrogateWarning
from ..llm.cache import Cache
from ..llm.factory import BACKENDS, load_task, make_backend
from ..llm.tasks import ORDERS
from ._metrics import best_threshold
from ._multiclass import evaluate_multiclass
from ._population import compare_answers
from ._robustness import permutation_importance, prompt_variations
from ._scores import METHODS, _check_inputs, few_shot_examples, risk_scores


@click.command("risk")
@click.option("--data", "data_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="CSV or Parquet file with the task's feature columns (and the label, to evaluate).")
@click.option("--task", "task_spec", required=True, help="Task TOML file, or a built-in task name (ACSIncome).")
@click.option("--backend", type=click.Choice(list(BACKENDS)), default="transformers", show_default=True)
@click.option("--model", required=True, help="Local model folder (save_pretrained layout); with --backend openai "
              "the served model's name.")
@click.option("--method", type=click.Choice(list(METHODS)), default="multiple_choice", show_default=True,
              help="multiple_choice: the answer letters' probabilities; numeric: a stated probability (expected "
              "value over the digits); numeric_argmax: folktexts' two greedy digits; chain_of_thought: the model "
              "reasons first (--max-new-tokens), then the letters' probabilities after its reasoning; numeric_scale: "
              "an ordered question's levels numbered 1 to K (at most 9), the digits' probabilities.")
@click.option("--max-new-tokens", type=click.IntRange(1), default=256, show_default=True,
              help="--method chain_of_thought: the most tokens of reasoning per prompt (greedy).")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Cache folder: every prompt's output is stored; a rerun resumes where it stopped.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for scores.csv, metrics.csv, metrics.json, calibration.png and run.json (the run's "
              "counts, backend and manifest: versions, input SHA-256s, seeds, command line).")
@click.option("--batch-size", type=click.IntRange(1), default=None,
              help="Prompts per forward pass (default: the backend's: 16 on the CPU, up to 512 on a GPU).")
@click.option("--device", default=None, help="cpu, cuda, cuda:1 (default: cuda if available).")
@click.option("--no-order-correction", is_flag=True, help="Score only the original answer order.")
@click.option("--orders", type=click.Choice(list(ORDERS)), default=None,
              help="The answer orders averaged: all (the K! orders) or cyclic (the K rotations: each option once "
              "at each letter). Default: all up to 4 options, cyclic above.")
@click.option("--chat", is_flag=True, help="Wrap prompts in the model's chat template (instruct models).")
@click.option("--groups", "group_col", default=None, help="Column with groups for group metrics (default: the "
              "task's sensitive attribute when present).")
@click.option("--weights", "weight_col", default=None,
              help="Column of --data with survey weights: the metrics become population metrics (weighted means "
              "of the per-row losses; docs/methods/survey.md). The scores do not depend on it.")
@click.option("--n-boot", type=click.IntRange(0), default=200, show_default=True)
@click.option("--no-plot", is_flag=True)
@click.option("--features", "features", default=None,
              help="Comma-separated subset of the task's feature columns to put in the prompts (e.g. AGEP,SCHL).")
@click.option("--subsample", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Score a random subset of the rows: a count (e.g. 500) or a share below 1 (e.g. 0.1).")
@click.option("--few-shot", "few_shot", type=click.IntRange(0), default=0, show_default=True,
              help="Labelled example rows shown before every row, as many of each label (class-balanced); drawn "
              "from --train-data, else from --data (and then not scored).")
@click.option("--no-balance", is_flag=True, help="Draw the --few-shot examples at random instead of class-balanced.")
@click.option("--fit-threshold", "fit_threshold", type=click.IntRange(0), default=0, show_default=True,
              help="Score this many labelled rows (from --train-data, else set aside from --data) and use the "
              "threshold that maximises their balanced accuracy for the thresholded metrics.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="Threshold of the thresholded metrics (accuracy, TPR, ...): predict 1 when score >= it [0.5].")
@click.option("--train-data", "train_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="CSV or Parquet file of labelled rows for --few-shot and --fit-threshold (default: "
              "rows set aside from --data).")
@click.option("--seed", type=click.IntRange(0), default=42, show_default=True,
              help="Seed of every random draw: --subsample, --few-shot and --fit-threshold rows, the bootstrap.")
@click.option("--variations", is_flag=True,
              help="Also score every row under rewordings of the prompt (two connectors, reversed and two random "
              "feature orders) and write how AUC, ECE, Brier and accuracy move, with bootstrap CIs "
              "(variations_metrics.csv, variations_spread.csv).")
@click.option("--importance", is_flag=True,
              help="Also score every row with each feature permuted across rows and write each feature's "
              "permutation importance with bootstrap CIs (importance.csv).")
@click.option("--system-prompt", default=None, help="--chat: the system text (default: the package's; '' for none).")
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
@click.option("--token-ids/--no-token-ids", "token_ids", default=None,
              help="--backend openai: key the next-token log-probabilities by token id (vLLM's servers: exact top-k "
              "mass with byte-level tokenizers) or by token text. Default: by token id where the server's model list "
              "says vLLM (asked once). run.json's topk reports the keying and the unseen-mass bound.")
@handle_errors
def risk_command(data_path, task_spec, backend, model, method, cache_dir, out_dir, batch_size, device, max_new_tokens,
                 no_order_correction, orders, chat, group_col, weight_col, n_boot, no_plot, features, subsample,
                 few_shot, no_balance, fit_threshold, threshold, train_path, seed, variations, importance, system_prompt, base_url,
                 api_key_env, endpoint, concurrency, rpm, tpm, price_input, price_output, max_cost, max_tokens_budget,
                 request_timeout, token_ids):
    """LLM risk scores for every row of --data, with metrics when the label is present."""
    outputs = ("scores.csv", "threshold_scores.csv", "metrics.csv", "metrics.json", "calibration.png",
               "metrics_by_option.csv", "answers.csv", "variations_metrics.csv", "variations_spread.csv",
               "importance.csv", RUN_JSON)
    inputs = [data_path] + ([train_path] if train_path else [])
    check_output_dir(out_dir, files=outputs, inputs=inputs, arg="--out")
    check_output_dir(cache_dir, files=(Cache.FILENAME,), inputs=inputs, arg="--cache")
    if threshold is not None and fit_threshold:
        raise click.UsageError("give --threshold or --fit-threshold, not both")
    if train_path is not None and not (few_shot or fit_threshold):
        raise click.UsageError("--train-data is read for --few-shot and --fit-threshold; give one of them")
    if no_balance and not few_shot:
        raise click.UsageError("--no-balance applies to --few-shot; give --few-shot N")
    if (variations or importance) and n_boot == 0:
        raise click.UsageError("--variations and --importance report bootstrap CIs; give --n-boot 1 or more")
    if system_prompt is not None and not chat:
        raise click.UsageError("--system-prompt applies to --chat prompts; give --chat")
    frame = read_table(data_path)
    task = load_task(task_spec, arg="--task")
    if features is not None:
        task = _feature_subset(task, features)
    task_file = Path(str(task_spec))
    manifest = start_run([("--data", data_path)] + ([("--task", task_file)] if task_file.is_file() else [])
                         + ([("--train-data", train_path)] if train_path else []),
                         seeds={"bootstrap": seed,
                                **({"draws": seed} if subsample or few_shot or fit_threshold else {})})
    plan = _plan_rows(frame, task, data_path, train_path, subsample=subsample, few_shot=few_shot,
                      balanced=not no_balance, fit_threshold=fit_threshold, seed=seed)
    frame = plan["rows"]
    if (variations or importance) and task.label_name not in frame.columns and task.target not in frame.columns:
        raise InvalidArgumentError(f"--variations and --importance judge scores against the label: --data "
                                   f"{data_path.name} has neither {task.label_name!r} nor {task.target!r}")
    if group_col and group_col not in frame.columns:  # before the model is loaded
        raise InvalidArgumentError(f"--groups {group_col!r} is not a column of --data {data_path.name}")
    if orders is not None and (no_order_correction or method not in ("multiple_choice", "chain_of_thought")):
        raise click.UsageError("--orders chooses the answer orders that --method multiple_choice and chain_of_thought "
                               "average; it does not go with --no-order-correction or another --method")
    options = _check_options(task, method, threshold=threshold is not None or bool(fit_threshold),
                             robustness=variations or importance)
    with cli_names(orders="--orders", method="--method", data=f"--data {data_path.name}"):
        # the task and the answers of the rows to score, checked before the model is loaded
        _check_inputs(frame, task, method, not no_order_correction, orders)
    weights = _survey_weights(frame, weight_col, data_path)
    cache = Cache(cache_dir)
    if backend == "openai":
        if base_url is None:
            raise click.UsageError("--backend openai needs --base-url")
        prices = None
        if price_input is not None or price_output is not None:
            prices = {"input": price_input or 0.0, "output": price_output or 0.0}
        be = make_backend("openai", model, base_url=base_url, api_key_env=api_key_env, endpoint=endpoint,
                          concurrency=concurrency, requests_per_minute=rpm, tokens_per_minute=tpm, prices=prices,
                          max_cost=max_cost, max_tokens=max_tokens_budget, timeout=request_timeout, cache=cache,
                          token_ids=token_ids)
    else:
        be = make_backend(backend, model, device=device, batch_size=batch_size)
    gcol = group_col or task.sensitive_attribute
    names = cli_names(data=f"--data {data_path.name}", task="--task", method="--method", batch_size="--batch-size",
                      groups=data_column(gcol or "", data_path), n_boot="--n-boot", orders="--orders",
                      weights=f"--weights {weight_col}", y=f"the label of --data {data_path.name}")
    with progress_bar() as bar, warnings.catch_warnings(), names:
        # rejected cache entries are counted and reported below, once
        warnings.filterwarnings("ignore", message="LLM cache .*", category=LLMSurrogateWarning)
        if hasattr(be, "ledger"):
            be.progress = bar  # the request ledger as bars: responses, tokens, share of --max-cost
        score = dict(method=method, cache=cache, batch_size=batch_size or 16,
                     correct_order_bias=not no_order_correction, chat=chat, system_prompt=system_prompt, few_shot=plan["few_shot"], progress=bar,
                     max_new_tokens=max_new_tokens, orders=orders)
        res = risk_scores(frame, task, be, **score)
        fitted = None
        if fit_threshold:
            fitted = risk_scores(plan["threshold_rows"], task, be, **score)
    res.table["row"] = frame.index.to_numpy()  # the row of --data (0-based), also after --subsample
    if res.unlabelled:
        click.echo(f"{res.unlabelled} of {len(res.table)} rows have no answer in column {task.label_name!r} of --data "
                   f"{data_path.name}: scored (scores.csv), and left out of the metrics")
    write_frame(out_dir / "scores.csv", res.table)
    written = ["scores.csv"]
    meta = dict(res.meta)
    meta["rows"] = plan["counts"]
    meta["few_shot_rows"] = plan["few_shot_rows"]
    if fitted is not None:
        threshold = best_threshold(fitted.table["label"], fitted.table["score"], "balanced_accuracy")
        fitted.table["row"] = plan["threshold_rows"].index.to_numpy()
        write_frame(out_dir / "threshold_scores.csv", fitted.table)
        written.append("threshold_scores.csv")
        meta["threshold_fit"] = {"rows": plan["threshold_rows"].index.tolist(), "objective": "balanced_accuracy",
                                 "threshold": float(threshold), "from": plan["source"],
                                 "cache_hits": fitted.meta["cache_hits"], "cache_misses": fitted.meta["cache_misses"]}
        click.echo(f"threshold: {threshold:.4g}, fitted on {len(fitted.table)} rows of {plan['source']} "
                   "(largest balanced accuracy)")
        for key in ("cache_hits", "cache_misses"):
            meta[key] += fitted.meta[key]
    threshold = 0.5 if threshold is None else float(threshold)
    meta["threshold"] = threshold
    meta["cache_rejected"] = cache.rejected
    ledger = getattr(be, "ledger", None)
    if ledger is not None:
        meta["ledger"] = ledger.as_dict()
    if weights is not None:
        meta["weights"] = weight_col
    if "label" in res.table and options > 2:
        groups = _group_labels(task, frame, gcol)
        written += _evaluate_options(res, groups, weights, names, out_dir, n_boot=n_boot, seed=seed, plot=not no_plot)
    elif "label" in res.table:
        groups = _group_labels(task, frame, gcol)
        with names, warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".* rows have no answer", category=LLMSurrogateWarning)
            ev = res.evaluate(groups=groups, n_boot=n_boot, threshold=threshold, seed=seed,
                              **({} if weights is None else {"weights": weights}))
        write_frame(out_dir / "metrics.csv", ev.metrics)
        write_text(out_dir / "metrics.json", ev.to_json())
        written += ["metrics.csv", "metrics.json"]
        click.echo(ev.summary().as_text())
        robust = dict(score, n_boot=n_boot, seed=seed, threshold=threshold)
        if variations:
            with progress_bar() as bar, names, warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="LLM cache .*", category=LLMSurrogateWarning)
                var = prompt_variations(frame, task, be, **dict(robust, progress=bar))
            write_frame(out_dir / "variations_metrics.csv", var.metrics)
            write_frame(out_dir / "variations_spread.csv", var.spread)
            written += ["variations_metrics.csv", "variations_spread.csv"]
            meta["variations"] = {"variants": var.meta["variants"], "fingerprints": var.meta["fingerprints"]}
            click.echo(var.summary().as_text())
        if importance:
            with progress_bar() as bar, names, warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="LLM cache .*", category=LLMSurrogateWarning)
                imp = permutation_importance(frame, task, be, **dict(robust, progress=bar))
            write_frame(out_dir / "importance.csv", imp.importance)
            written.append("importance.csv")
            click.echo(imp.summary().as_text())
        if not no_plot:
            use_agg_backend()
            fig = ev.plot(kind="both")  # calibration by group beside the ROC curve
            save_figure(fig, out_dir / "calibration.png", dpi=130)
            written.append("calibration.png")
    topk = be.topk_summary() if hasattr(be, "topk_summary") else None
    if topk is not None:  # the keying and the unseen-mass bound of the HTTP backend's top-k log-probabilities
        meta["topk"] = topk
    write_run_json(out_dir / RUN_JSON, manifest, meta)
    written.append(RUN_JSON)
    rejected = f" ({cache.rejected} stored outputs rejected: damaged or from another version)" if cache.rejected else ""
    click.echo(f"cache: {meta['cache_hits']} prompts reused, {meta['cache_misses']} computed{rejected}")
    if ledger is not None:
        click.echo(f"requests: {ledger.summary()}")
    if topk is not None and topk["prompts"]:
        click.echo(f"top-{topk['top_logprobs']} log-probabilities keyed by {topk['keyed_by']}: at most "
                   f"{topk['unseen_bound_max']:.3g} of the next-token mass unseen (mean {topk['unseen_bound_mean']:.3g}, "
                   f"{topk['prompts']} prompts)")
    click.echo(f"Wrote {', '.join(written)} to {out_dir}/")


def _check_options(task, method, *, threshold: bool, robustness: bool) -> int:
    """The number of answer options K of the task's question (2 for a task with only a numeric
    question); the options that judge one binary score are refused for K > 2, before the model is
    loaded."""
    question = task.question
    k = 2 if question is None else len(question.options)
    if k > 2 and method in ("numeric", "numeric_argmax"):
        raise InvalidArgumentError(f"--method {method} states one probability, for a yes/no question; the question "
                                   f"of task {task.name!r} has {k} options: use --method multiple_choice, "
                                   f"chain_of_thought or numeric_scale")
    if k > 2 and threshold:
        raise InvalidArgumentError(f"--threshold and --fit-threshold apply to a yes/no question; the question of task "
                                   f"{task.name!r} has {k} options (the prediction is the most probable one)")
    if k > 2 and robustness:
        raise InvalidArgumentError(f"--variations and --importance judge the scores of a yes/no question; the question "
                                   f"of task {task.name!r} has {k} options")
    return k


def _survey_weights(frame, weight_col, data_path):
    """The ``--weights`` column of the scored rows as floats (None without ``--weights``), checked
    before the model is loaded."""
    if weight_col is None:
        return None
    if weight_col not in frame.columns:
        raise ColumnNotFoundError(f"--weights {weight_col!r} is not a column of --data {data_path.name}")
    column = frame[weight_col]
    values = pd.to_numeric(column, errors="coerce").to_numpy(float)
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        label, value = frame.index[bad[0]], column.iloc[bad[0]]  # the file's row (the rows may be a subsample)
        value = value.item() if isinstance(value, np.generic) else value
        row = (f"data row {int(label) + 1} (counted from 1 after the header)" if isinstance(label, (int, np.integer))
               else f"the row labelled {label!r}")
        raise InvalidArgumentError(f"--weights {weight_col!r}: survey weights must be finite and non-negative numbers; "
                                   f"{row} of --data {data_path.name} holds {value!r}")
    if not values.sum() > 0:
        raise InvalidArgumentError(f"--weights {weight_col!r}: the weights of the scored rows sum to 0")
    return values


def _evaluate_options(res, groups, weights, names, out_dir, *, n_boot, seed, plot) -> list[str]:
    """A question with K > 2 options: the K-option metrics (metrics.csv, metrics_by_option.csv,
    metrics.json, calibration.png) and the LLM's answer distribution against the answers in the
    data, by group (answers.csv); returns the files written."""
    probs = res.probabilities
    labels = res.table["label"]
    keep = labels.notna().to_numpy()
    if not keep.all():  # rows without an answer: scored, left out of the metrics
        if not keep.any():
            raise InvalidArgumentError("no scored row of --data has an answer: there is nothing to evaluate against")
        labels, probs = labels[keep], probs[keep]
        labels = labels.astype("int64") if str(labels.dtype) == "Int64" else labels
        groups = None if groups is None else np.asarray(groups)[keep]
        weights = None if weights is None else np.asarray(weights)[keep]
    ordered = bool(res.meta.get("ordered", False))
    with names:
        ev = evaluate_multiclass(labels, probs, weights=weights, ordered=ordered, n_boot=n_boot, seed=seed)
        cmp = compare_answers(labels, probs, groups, weights=weights, ordered=ordered, n_boot=n_boot, seed=seed)
    write_frame(out_dir / "metrics.csv", ev.metrics)
    write_frame(out_dir / "metrics_by_option.csv", ev.per_option)
    write_text(out_dir / "metrics.json", ev.to_json())
    write_frame(out_dir / "answers.csv", cmp.table)
    click.echo(ev.summary().as_text())
    click.echo(cmp.summary().as_text())
    written = ["metrics.csv", "metrics_by_option.csv", "metrics.json", "answers.csv"]
    if plot:
        use_agg_backend()
        save_figure(ev.plot(), out_dir / "calibration.png", dpi=130)
        written.append("calibration.png")
    return written


def _feature_subset(task, features: str):
    """The task on the ``--features`` columns (in the task's order)."""
    names = [f.strip() for f in features.split(",") if f.strip()]
    if not names:
        raise InvalidArgumentError("--features is empty; give column names separated by commas, e.g. AGEP,SCHL")
    unknown = [f for f in names if f not in task.features]
    if unknown:
        raise ColumnNotFoundError(f"--features: task {task.name!r} has no columns {unknown}; its columns: "
                                  f"{','.join(task.features)}")
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"--features names a column twice: {features}")
    return task.with_features(names)


def _plan_rows(frame, task, data_path, train_path, *, subsample, few_shot, balanced, fit_threshold, seed):
    """Which rows are scored, shown as examples, and used to fit the threshold.

    Examples and threshold rows come from --train-data, else are set aside from --data (never
    scored there, so the metrics are on rows the prompts did not show and the threshold did not
    see); --subsample then draws from the rows left. Every draw depends on --seed only."""
    frame = frame.reset_index(drop=True)
    rows, source = frame, f"--data {data_path.name}"
    pool = frame
    if train_path is not None:
        pool = read_table(train_path, arg="--train-data").reset_index(drop=True)
        source = f"--train-data {train_path.name}"
    need = few_shot + fit_threshold
    examples = None
    threshold_rows = None
    if need:
        if task.label_name not in pool.columns and task.target not in pool.columns:
            raise ColumnNotFoundError(f"--few-shot and --fit-threshold need labelled rows: {source} has neither "
                                      f"{task.label_name!r} nor {task.target!r}")
        left = pool
        if few_shot:
            with cli_names(n=f"--few-shot {few_shot}", data=source):
                examples = few_shot_examples(pool, task, few_shot, seed=seed, balanced=balanced)
            left = pool.drop(index=examples.index)
        if fit_threshold:
            gone = task.labels_with_missing(left)[1]
            if gone.any():  # rows without an answer cannot fit a threshold
                left = left[~gone]
            if fit_threshold > len(left):
                raise InvalidArgumentError(f"--fit-threshold {fit_threshold}: {source} has {len(left)} rows left "
                                           f"(after the --few-shot examples{', with an answer' if gone.any() else ''})")
            rng = np.random.default_rng([seed, 2])
            threshold_rows = left.iloc[np.sort(rng.choice(len(left), fit_threshold, replace=False))]
        if train_path is None:
            used = (examples.index.tolist() if examples is not None else []) + \
                (threshold_rows.index.tolist() if threshold_rows is not None else [])
            rows = frame.drop(index=used)
    if subsample is not None:
        n = len(rows)
        if subsample < 1:
            k = int(round(subsample * n))
        elif float(subsample).is_integer():
            k = int(subsample)
        else:
            raise InvalidArgumentError(f"--subsample {subsample:g}: give a count (a whole number) or a share below 1")
        if not 1 <= k <= n:
            raise InvalidArgumentError(f"--subsample {subsample:g} asks for {k} rows; {n} are there to score")
        rng = np.random.default_rng([seed, 3])
        rows = rows.iloc[np.sort(rng.choice(n, k, replace=False))]
    if len(rows) == 0:
        raise InvalidArgumentError(f"no rows of --data {data_path.name} are left to score after the {need} rows set "
                                   "aside for --few-shot and --fit-threshold; give --train-data, or ask for fewer")
    counts = {"data": int(len(frame)), "scored": int(len(rows)), "few_shot": int(few_shot),
              "fit_threshold": int(fit_threshold)}
    return {"rows": rows, "few_shot": examples, "threshold_rows": threshold_rows, "source": source, "counts": counts,
            "few_shot_rows": [] if examples is None else examples.index.tolist()}


#: the command's function under its name before issue 20 (``llmsurrogate.cli`` imported ``score``)
score = risk_command


def _group_labels(task, frame, gcol):
    """The group of each row for metrics and figures, as the task's text for a task column (the
    prompt's words, "Female", not the code 2); codes the task does not know stay as they are."""
    if not gcol or gcol not in frame.columns:
        return None
    codes = frame[gcol]
    try:
        column = task.column(gcol)
    except ColumnNotFoundError:
        return codes.to_numpy()
    names = {}
    for code in codes.unique():
        try:
            names[code] = column.render(code)
        except InvalidArgumentError:
            names[code] = str(code)
    return codes.map(names).to_numpy()

