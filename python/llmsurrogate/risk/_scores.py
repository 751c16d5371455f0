"""Risk scores of data rows from an LLM backend, through the on-disk cache."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .._progress import progress_reporter
from .._validation import as_frame, check_choice, check_int
from ..exceptions import InvalidArgumentError
from ..llm.cache import using_cache
from ..llm.factory import as_backend, load_task
from ..llm.prompts import RowChunks, few_shot_prompt, rows_of
from ..llm.scoring import chat_prompt_fn, cot_risk, mc_risk, numeric_risk, scale_risk
from ._results import RiskScores


def risk_scores(data, task, backend, method: str = "multiple_choice", *, model: str | None = None, cache=None,
                batch_size: int | None = None, correct_order_bias: bool = True, spelling: str = "sum",
                chat: bool = False, system_prompt: str | None = None, few_shot=None, max_new_tokens: int = 256,
                progress=None, orders: str | None = None) -> RiskScores:
    """Score every row of ``data`` for ``task`` with an LLM ``backend``.

    ``backend``: a backend object, or a backend name (``"transformers"``/``"hf"``, ``"vllm"``,
    ``"openai"``) with ``model=`` the model folder (openai: the served model's name), as in R
    (:func:`~llmsurrogate.llm.factory.as_backend`).

    ``method``: ``"multiple_choice"`` (next-token answer probabilities, all K! option orders
    averaged when ``correct_order_bias``), ``"numeric"`` (verbalized probability, expected value
    over the digit distribution), ``"numeric_argmax"`` (folktexts' two greedy digits) or
    ``"chain_of_thought"`` (the model writes up to ``max_new_tokens`` tokens of reasoning, greedy,
    then the answer keys' probabilities after it give the score, every order averaged as for
    multiple choice; the table gains ``reasoning``, the first order's, and ``stated_score``, the
    share of orders whose text states the positive option, NaN where none states one;
    docs/methods/risk.md §1.10), or ``"numeric_scale"`` (the options numbered 1 ... K as the levels
    of an ordered scale, the answer the level's number: the digits' next-token probabilities give
    the distribution over the levels, the score is the expected level in the options' numeric
    values; an ordered question, at most 9 levels, one prompt per row; docs/methods/survey.md §7).
    ``orders``: the option orders multiple choice and chain of thought average, ``"all"`` (the K!
    orders), ``"cyclic"`` (the K rotations: every option once at every key) or None (default):
    ``"all"`` up to K = 4 options, ``"cyclic"`` above; for K = 2 the two are the same.
    A question with K > 2 options (and every ``numeric_scale`` question) adds one column
    ``prob_<option value>`` per option, in the question's order: the renormalised key
    probabilities of each order put back in the question's option order, averaged over the orders
    (:attr:`RiskScores.probabilities` returns them as a frame, for binary tasks too).
    ``cache``: a directory or :class:`~llmsurrogate.llm.cache.Cache`; every prompt's output is
    stored, so a rerun (or a run killed and restarted) recomputes nothing it finished.
    ``chat``: wrap prompts in the backend's chat template (instruct models; the assistant turn is
    prefilled and cut after the prefill); ``system_prompt`` overrides the default system text
    (``""`` for none).
    ``few_shot``: a frame of labelled example rows (features and the label) shown before every
    row, the same examples for every row and every answer order, each rendered with the *same*
    (permuted) question as the target so its answer letter matches (fixing folktexts'
    permuted-label bug). :func:`few_shot_examples` draws a class-balanced frame. With ``chat``, the
    examples and the row make the user turn and the assistant turn holds the prefill.
    ``progress``: ``None``, ``True`` (a progress bar) or ``progress(label, done, total)``.
    ``batch_size``: ``None`` (default) lets the backend choose its batches (TransformersBackend:
    length-sorted, ``batch_size`` prompts and on a GPU a token budget per forward pass, results
    written to the cache 64 at a time as its batches finish); a number is a floor on the prompts
    handed to the backend per call. The backend's own batch size is set on the backend.

    Examples
    --------
    A stand-in model that puts 0.7 on the second answer key whatever the options: averaging the
    two answer orders removes that position bias.

    >>> import math
    >>> from llmsurrogate import datasets
    >>> from llmsurrogate.llm import CallableBackend, acs_income_task
    >>> backend = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
    >>> rows = datasets.load_acs_income_rows().head(3)
    >>> rs = risk_scores(rows, acs_income_task(), backend)
    >>> rs.table.round(2)  # indexed by the rows' own labels; `row` is the position
       row  score  answer_mass  score_order_0  score_order_1  label
    1    0    0.5          1.0            0.7            0.3      0
    2    1    0.5          1.0            0.7            0.3      0
    8    2    0.5          1.0            0.7            0.3      0
    """
    check_choice(method, "method", METHODS)
    index = _row_labels(data)  # before any prompt is scored
    backend = as_backend(backend, model)
    with progress_reporter(progress) as report, using_cache(cache) as store:  # a folder: opened once, closed
        label = f"scoring prompts ({method})"
        scores = _score_rows(data, task, backend, method, store, batch_size, correct_order_bias, spelling, chat,
                             system_prompt, few_shot, max_new_tokens,
                             lambda _label, done, total: report(label, done, total), orders)
    scores.table.index = index  # the data's row labels: weights and groups taken from `data` pair by label
    return scores


def _row_labels(data):
    """The row labels the scores table carries: a pandas frame's index (0..n-1 for other inputs),
    so that weights, groups and answers taken from ``data`` pair with the scores by label after
    ``df.sort_values(...)`` or ``df.sample(frac=1)``. An index with duplicated labels cannot pair
    rows: refused, before any prompt is scored."""
    index = as_frame(data, "data").index
    if index.has_duplicates:
        dup = index[index.duplicated()][0]
        raise InvalidArgumentError(
            f"argument `data` has duplicated row labels (label {dup!r} appears more than once); the scores keep "
            f"the data's row labels so that weights and groups pair with them by label. Pass "
            f"`data.reset_index(drop=True)` (and take weights and groups from that frame)")
    return index


#: the scoring methods of :func:`risk_scores` (and ``llmsurrogate risk --method``)
METHODS = ("multiple_choice", "numeric", "numeric_argmax", "chain_of_thought", "numeric_scale")


def _score_rows(data, task, backend, method, cache, batch_size, correct_order_bias, spelling, chat, system_prompt,
                few_shot, max_new_tokens, progress, orders=None) -> RiskScores:
    rows = RowChunks(data, task)  # the rows' dicts made a chunk at a time, as their prompts are
    h0, m0, r0 = cache.hits, cache.misses, cache.rejected
    table = pd.DataFrame({"row": np.arange(len(rows))})
    kind = "numeric" if method in ("numeric", "numeric_argmax") else "multiple_choice"
    if kind == "numeric" and task.numeric_question is None:
        raise InvalidArgumentError(f"task {task.name!r} has no numeric question; use method='multiple_choice'")
    if kind == "multiple_choice" and task.question is None:
        raise InvalidArgumentError(f"task {task.name!r} has no multiple-choice question; use method='numeric'")
    question = task.question
    frame = as_frame(data, "data")
    answers = _check_inputs(frame, task, method, correct_order_bias, orders)  # before any prompt is scored
    probs = None
    examples = None
    if few_shot is not None:
        ex_frame = as_frame(few_shot, "few_shot")
        ex_rows = rows_of(ex_frame, task)
        examples = (ex_rows, task.labels(ex_frame).tolist())
    if method == "chain_of_thought":
        user = None if examples is None else (lambda row, q: few_shot_prompt(task, row, *examples, q, prefill=False))
        s, mass, per, reasoning, stated, probs = cot_risk(
            backend, task, rows, cache=cache, batch_size=batch_size, correct_order_bias=correct_order_bias,
            spelling=spelling, max_new_tokens=max_new_tokens, user_fn=user, chat=chat, system=system_prompt,
            progress=progress, orders=orders, return_probabilities=True)
    else:
        fn = _prompt_fn(backend, task, kind, chat, system_prompt, examples)
        if method == "numeric_scale":
            s, mass, probs = scale_risk(backend, task, rows, cache=cache, batch_size=batch_size, spelling=spelling,
                                        progress=progress, prompt_fn=fn)
            per = None
        elif kind == "multiple_choice":
            s, mass, per, probs = mc_risk(backend, task, rows, cache=cache, batch_size=batch_size,
                                          correct_order_bias=correct_order_bias, spelling=spelling, progress=progress,
                                          prompt_fn=fn, orders=orders, return_probabilities=True)
        else:
            s, mass = numeric_risk(backend, task, rows, cache=cache, batch_size=batch_size,
                                   decoding="argmax" if method == "numeric_argmax" else "expected", progress=progress,
                                   prompt_fn=fn)
            per = None
    table["score"], table["answer_mass"] = s, mass
    for k in range(0 if per is None else per.shape[1]):
        table[f"score_order_{k}"] = per[:, k]
    if probs is not None and (method == "numeric_scale" or len(question.options) > 2):
        for name, column in zip(probability_columns(question), probs.T):
            table[name] = column
    if method == "chain_of_thought":
        table["reasoning"] = reasoning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a row whose orders state no answer: NaN
            table["stated_score"] = np.nanmean(stated, axis=1)

    if answers is not None:
        table["label"] = _label_column(*answers)
    meta = {"task": task.name, "task_fingerprint": task.fingerprint(), "method": method,
            "backend": dict(getattr(backend, "identity", {})), "correct_order_bias": bool(correct_order_bias),
            "chat": bool(chat), "few_shot": 0 if examples is None else len(examples[0]),
            **_option_meta(question, method, correct_order_bias, orders),
            **({"max_new_tokens": int(max_new_tokens)} if method == "chain_of_thought" else {}),
            "cache_hits": cache.hits - h0, "cache_misses": cache.misses - m0,
            "cache_rejected": cache.rejected - r0,
            **({} if answers is None else {"unlabelled_rows": int(answers[1].sum())})}
    return RiskScores(table=table, meta=meta)


def _check_inputs(frame, task, method, correct_order_bias, orders):
    """The checks of the task and the data that :func:`risk_scores` (and ``llmsurrogate risk``,
    before it loads the model) makes before any prompt is scored: ``orders`` (bounded, and only
    where it chooses orders), the options' probability columns, and the answers column read as
    the task's options (:meth:`~llmsurrogate.llm.tasks.Task.labels_with_missing`). Returns
    ``(labels, missing)``, or None when ``frame`` holds no label column."""
    question = task.question
    if orders is not None and method not in ("multiple_choice", "chain_of_thought"):
        raise InvalidArgumentError(f"argument `orders` chooses the answer orders that method='multiple_choice' and "
                                   f"'chain_of_thought' average; method={method!r} scores one prompt per row, so "
                                   f"`orders` would do nothing: leave it out")
    if orders is not None and not correct_order_bias:
        raise InvalidArgumentError("argument `orders` chooses the answer orders that correct_order_bias=True "
                                   "averages; with correct_order_bias=False only the question's own order is "
                                   "scored, so `orders` would do nothing: leave it out")
    if question is not None and method in ("multiple_choice", "chain_of_thought"):
        question.order_scheme(orders)  # refuses orders='all' above 6 options
    if question is not None and method == "numeric_scale":
        question.scale()  # at most 9 levels
    if question is not None and (method == "numeric_scale" or (len(question.options) > 2 and method not in
                                                               ("numeric", "numeric_argmax"))):
        probability_columns(question)  # the prob_<value> columns: distinct names
    if task.label_name not in frame.columns and task.target not in frame.columns:
        return None
    labels, missing, _column = task.labels_with_missing(frame)
    return labels, missing


def _label_column(labels, missing):
    """The ``label`` column of a scores table: the labels, missing where a row has no answer
    (integer labels then become pandas' nullable ``Int64``)."""
    if not missing.any():
        return labels
    if labels.dtype == np.int64:
        return pd.arrays.IntegerArray(labels, missing.copy())
    return labels  # NaN or None already stand where the answer is missing


def probability_columns(question) -> list[str]:
    """The names of the ``prob_<option value>`` columns of a scores table, in the question's option order.

    Examples
    --------
    >>> from llmsurrogate.llm.tasks import AnswerOption, MultipleChoiceQuestion
    >>> probability_columns(MultipleChoiceQuestion("Often?", (AnswerOption("Never", "never", 0),
    ...                                            AnswerOption("Sometimes", 1), AnswerOption("Often", 2.5))))
    ['prob_never', 'prob_1', 'prob_2.5']
    """
    names = [f"prob_{o.value}" for o in question.options]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"the answer options of {question.text!r:.60} have values that read alike "
                                   f"({names}); give each option a distinct value")
    return names


def _plain(value):
    """An option value as JSON holds it (numpy numbers become Python's)."""
    return value.item() if isinstance(value, np.generic) else value


def _option_meta(question, method, correct_order_bias, orders) -> dict:
    """What the table's answer distribution refers to: the options (values, numeric values, ordered)
    and, where orders are averaged, which orders."""
    if question is None or method in ("numeric", "numeric_argmax") and len(question.options) > 2:
        return {}
    out = {"options": [_plain(o.value) for o in question.options], "option_values": list(question.values),
           "ordered": question.ordered}
    if method in ("multiple_choice", "chain_of_thought"):
        out["orders"] = question.order_scheme(orders) if correct_order_bias else "none"
    return out


def _prompt_fn(backend, task, kind, chat, system_prompt, examples):
    """The prompt renderer ``(row, question) -> str`` for chat and few-shot prompts (None: the zero-shot one)."""
    if chat:
        return chat_prompt_fn(backend, task, kind, system_prompt, few_shot=examples)
    if examples is None:
        return None
    if kind == "multiple_choice":
        return lambda row, q: few_shot_prompt(task, row, *examples, q)
    return lambda row, q=None: few_shot_prompt(task, row, *examples, task.numeric_question)


def few_shot_examples(data, task, n: int, *, seed: int = 42, balanced: bool = True) -> pd.DataFrame:
    """``n`` labelled rows of ``data`` to show as few-shot examples (``risk_scores(few_shot=...)``).

    ``balanced`` (folktexts' ``--balance-few-shot-examples``): as many rows of each of the task's
    K answer options (labels 0 and 1 for a binary task; :meth:`Task.labels`' values, in the
    question's order, for K > 2), ``n // K`` each; the ``n mod K`` rows left over go to options
    drawn at random, one row each. Otherwise a simple random sample. The rows come in random order
    (so the labels do not come in blocks) and keep their index in ``data``, so a caller can leave
    them out of the rows it scores. Rows without an answer (a missing label) are never drawn. The
    draw depends on ``seed`` only.

    Examples
    --------
    >>> from llmsurrogate import testing
    >>> rows = testing.synthetic_census(200, seed=1)
    >>> ex = few_shot_examples(rows, testing.synthetic_income_task(), 6, seed=0)
    >>> len(ex), int(ex["PINCP>50000"].sum())  # three of each label
    (6, 3)
    >>> bool(ex.index.isin(rows.index).all())
    True
    """
    frame = as_frame(data, "data")
    n = check_int(n, "n", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    labels, missing, _column = task.labels_with_missing(frame)  # rows without an answer are never drawn
    rng = np.random.default_rng([seed, 1])
    if not balanced:
        answered = np.flatnonzero(~missing)
        if n > len(answered):
            raise InvalidArgumentError(f"argument `n`: {n} few-shot examples asked, but the data has {len(answered)} "
                                       f"rows with an answer")
        take = answered[rng.choice(len(answered), n, replace=False)]
    else:
        classes = _label_classes(task)
        per = [n // len(classes)] * len(classes)
        left = list(range(len(classes)))
        for _ in range(n % len(classes)):  # K = 2: one draw of rng.integers(2), as before K options
            per[left.pop(int(rng.integers(len(left))))] += 1
        take = []
        for label, k in zip(classes, per):
            where = np.flatnonzero((labels == label) & ~missing)
            if k > len(where):
                raise InvalidArgumentError(
                    f"argument `n`: {n} class-balanced few-shot examples need {k} rows of label {label} "
                    f"({task.label_name}), but the data has {len(where)}")
            take.append(rng.choice(where, k, replace=False))
        take = rng.permutation(np.concatenate(take))
    return frame.iloc[take]


def _label_classes(task) -> list:
    """The labels balanced few-shot examples spread over: 0 and 1 for a binary task, else the
    answer options' labels as :meth:`Task.labels` gives them, in the question's order."""
    q = task.question
    if q is None or task.threshold is not None:
        return [0, 1]
    classes = task.labels(pd.DataFrame({task.label_name: [o.value for o in q.options]})).tolist()
    return sorted(classes) if len(classes) == 2 else classes


# --- plain-table entry points (the R package calls these) ------------------------------------

def score_table(data, task: str, model: str, backend: str = "transformers", method: str = "multiple_choice",
                cache=None, batch_size: int | None = None, correct_order_bias: bool = True, device: str | None = None,
                backend_options: dict | None = None, orders: str | None = None):
    """:func:`risk_scores` from names: ``task`` is a TOML file or a built-in task name, ``model`` a
    local model folder (``backend="openai"``: the served model's name). ``batch_size``: prompts
    per forward pass (default: the backend's, 16 on the CPU, up to 512 on a GPU).
    ``backend_options``: the openai backend's description (``base_url``, ``api_key_env``,
    ``concurrency``, ``prices``, ``max_cost``, ...; its responses go to ``cache`` too). ``orders``:
    the option orders averaged (:func:`risk_scores`). Returns the scores table (DataFrame).

    Examples
    --------
    A tiny random GPT-2 built on the spot (``llmsurrogate.testing``) stands in for a real model:

    >>> import tempfile
    >>> from llmsurrogate import datasets, testing
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     model = testing.build_model(folder)
    ...     table = score_table(datasets.load_acs_income_rows().head(1), "ACSIncome", str(model), device="cpu")
    >>> table.columns.tolist(), bool(table["score"].between(0, 1).all())
    (['row', 'score', 'answer_mass', 'score_order_0', 'score_order_1', 'label'], True)
    """
    t = load_task(task)
    opts = dict(backend_options or {})
    if backend == "openai" and cache is not None:
        opts.setdefault("cache", cache)
    be = as_backend(backend, model, device=device, batch_size=batch_size, **opts)
    return risk_scores(data, t, be, method, cache=cache, batch_size=batch_size,
                       correct_order_bias=correct_order_bias, orders=orders).table
