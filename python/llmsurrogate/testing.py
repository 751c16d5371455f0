"""Tiny tokenizers, language models and synthetic census data, built offline and deterministically.

For tests, examples and benchmarks on a CPU without a model hub (docs/methods/risk.md §6):

* :func:`synthetic_census` -- ACS-like rows (ACSIncome column names and code domains) with labels
  drawn from a known logistic model, so the Bayes-optimal score ``p_true`` is known.
* :func:`synthetic_income_task` -- a short ACS-style task on four of those columns.
* :func:`build_tokenizer` -- a byte-level BPE (GPT-2 style), Metaspace BPE (SentencePiece style)
  or word-level tokenizer trained on rendered prompts, saved as a transformers tokenizer.
* :func:`build_model` -- a randomly initialised GPT-2 or Llama-architecture causal LM saved to a
  folder (``save_pretrained``), loadable with ``TransformersBackend(path)``.
* :func:`train_tiny_model` -- a short training (300 steps by default: a minute or two on a CPU,
  with a progress bar in a terminal) on synthetic persona prompts and answers so the model's
  answers carry real signal about the synthetic outcome.

Needs the ``hf`` extra (torch, transformers, tokenizers); imported only when called.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._optional import require
from ._progress import progress_reporter, quiet_transformers
from .exceptions import InvalidArgumentError
from .llm.prompts import few_shot_prompt, multiple_choice_prompt, numeric_prompt
from .llm.tasks import acs_income_task

__all__ = ["synthetic_census", "synthetic_income_task", "build_tokenizer", "build_model", "train_tiny_model",
           "CHATML_TEMPLATE", "NO_SYSTEM_TEMPLATE"]

CHATML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
NO_SYSTEM_TEMPLATE = (  # Gemma-like: rejects the system role
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
    "{% endif %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}")

SPECIALS = ["<|endoftext|>", "<pad>", "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>"]

# logistic model of the synthetic outcome (log-odds contributions)
_BETA = {"intercept": -3.2, "bachelor_plus": 1.6, "some_college": 0.6, "hours_40plus": 1.2, "male": 0.7,
         "age_35_64": 0.8, "race_gap": -0.5}


def synthetic_census(n: int = 1000, seed: int = 0):
    """ACS-like person rows with a known P(Y=1 | x).

    Columns AGEP, COW, SCHL, MAR, OCCP, POBP, RELP, WKHP (NaN for ~5%), SEX, RAC1P with realistic
    code domains; ``p_true`` = σ(β·φ(x)) (education, hours, sex, age, and a race term that creates
    a group gap); ``PINCP>50000`` drawn from it.

    Examples
    --------
    >>> df = synthetic_census(200, seed=1)
    >>> sorted(df.columns)[:3], bool(df["PINCP>50000"].isin([0, 1]).all())
    (['AGEP', 'COW', 'MAR'], True)
    """
    rng = np.random.default_rng(seed)
    age = np.clip((17 + rng.gamma(3.0, 9.0, n)).astype(int), 17, 94)
    sex = rng.choice([1, 2], n)
    race = rng.choice(np.arange(1, 10), n, p=[0.62, 0.11, 0.01, 0.005, 0.005, 0.07, 0.01, 0.08, 0.09])
    schl = rng.choice([16, 17, 18, 19, 20, 21, 22, 24], n, p=[0.25, 0.05, 0.08, 0.15, 0.09, 0.22, 0.12, 0.04])
    wkhp = np.clip(rng.normal(38, 10, n).round(), 1, 99)
    wkhp[rng.random(n) < 0.05] = np.nan
    cow = rng.choice(np.arange(1, 9), n, p=[0.65, 0.08, 0.07, 0.05, 0.03, 0.07, 0.04, 0.01]).astype(float)
    mar = rng.choice([1, 2, 3, 4, 5], n, p=[0.5, 0.05, 0.12, 0.03, 0.3])
    occp = rng.choice([10, 420, 2722, 3605, 3870, 4720, 4950, 6355, 7330, 7700], n).astype(float)
    pobp = rng.choice([1, 6, 12, 13, 18, 36, 48, 303], n)
    relp = rng.choice([0, 1, 2, 16, 17], n, p=[0.45, 0.3, 0.15, 0.05, 0.05])
    z = (_BETA["intercept"] + _BETA["bachelor_plus"] * (schl >= 21) + _BETA["some_college"] * ((schl >= 18) & (schl < 21))
         + _BETA["hours_40plus"] * (np.nan_to_num(wkhp) >= 40) + _BETA["male"] * (sex == 1)
         + _BETA["age_35_64"] * ((age >= 35) & (age < 65)) + _BETA["race_gap"] * (race == 2))
    p = 1 / (1 + np.exp(-z))
    y = (rng.random(n) < p).astype(int)
    return pd.DataFrame({"AGEP": age, "COW": cow, "SCHL": schl.astype(float), "MAR": mar, "OCCP": occp, "POBP": pobp,
                         "RELP": relp, "WKHP": wkhp, "SEX": sex, "RAC1P": race, "PINCP>50000": y, "p_true": p})


def synthetic_income_task():
    """The ACSIncome task on four columns (AGEP, SCHL, WKHP, SEX): short prompts for tiny models.

    Examples
    --------
    >>> task = synthetic_income_task()
    >>> task.name, task.features, task.target
    ('SynthIncome', ('AGEP', 'SCHL', 'WKHP', 'SEX'), 'PINCP')
    """
    t = acs_income_task().with_features(["AGEP", "SCHL", "WKHP", "SEX"])
    return dataclasses.replace(t, name="SynthIncome",
                               description="Synthetic US census respondent, 2018. Estimate the income.")


def _corpus(n_rows: int = 400, seed: int = 0) -> list[str]:
    df = synthetic_census(n_rows, seed)
    rows = df.to_dict("records")
    out = []
    for task in (acs_income_task(), synthetic_income_task()):
        perms = task.question.permutations()
        for i, r in enumerate(rows):
            q = perms[i % 2]
            out.append(multiple_choice_prompt(task, r, q) + (" A" if i % 3 else " B") + "\n\n")
            out.append(numeric_prompt(task, r) + str(i % 100))
        out.append(few_shot_prompt(task, rows[0], rows[1:3], [0, 1]))
    out.append(" ".join(str(i) for i in range(200)))
    out.append("Here is your persona: You are a 37-year-old male living in Tennessee in 2020. If you own, say 1.")
    return out


def build_tokenizer(path, kind: str = "bpe", *, vocab_size: int = 800, extra_tokens: int = 0,
                    chat_template: str | None = CHATML_TEMPLATE, seed: int = 0):
    """Train a small tokenizer on rendered prompts and save it (``save_pretrained``) to ``path``.

    ``kind``: ``"bpe"`` (byte-level BPE, answer keys as ``"ĠA"``), ``"metaspace"`` (SentencePiece-like
    ``"▁A"``) or ``"wordlevel"`` (no prefix at all). ``extra_tokens`` adds that many tokens beyond
    the trained vocabulary (to test a tokenizer longer than the model's logits).
    Returns the ``PreTrainedTokenizerFast``.

    Examples
    --------
    >>> tok = build_tokenizer("tiny_tokenizer", "wordlevel")
    >>> tok.tokenize("Answer: A")
    ['Answer:', 'A']
    """
    tk = require("tokenizers", purpose="building a tokenizer")
    transformers = require("transformers", purpose="building a tokenizer")
    from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

    corpus = _corpus(seed=seed)
    if kind == "bpe":
        tok = tk.Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    elif kind == "metaspace":
        tok = tk.Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never")
        tok.decoder = decoders.Metaspace(prepend_scheme="never")
        chars = sorted(set("".join(corpus)) | set("▁"))
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS + ["<unk>"],
                                      initial_alphabet=chars, show_progress=False)
    elif kind == "wordlevel":
        tok = tk.Tokenizer(models.WordLevel(unk_token="<unk>"))
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        tok.decoder = decoders.WordPiece(prefix="##")
        trainer = trainers.WordLevelTrainer(vocab_size=vocab_size * 4, special_tokens=SPECIALS + ["<unk>"],
                                            show_progress=False)
    else:
        raise InvalidArgumentError(f"argument `kind` must be 'bpe', 'metaspace' or 'wordlevel'; got {kind!r}")
    tok.train_from_iterator(corpus, trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                                                eos_token="<|endoftext|>", pad_token="<pad>",
                                                unk_token="<unk>" if kind != "bpe" else None)
    if extra_tokens:
        fast.add_tokens([f"<extra_{i}>" for i in range(extra_tokens)])
    if chat_template:
        fast.chat_template = chat_template
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(path)
    return fast


def build_model(path, arch: str = "gpt2", *, tokenizer_kind: str = "bpe", vocab_size: int = 800, hidden: int = 64,
                layers: int = 2, heads: int = 2, context: int = 1024, seed: int = 0, extra_tokens: int = 0,
                chat_template: str | None = CHATML_TEMPLATE):
    """A randomly initialised ``arch`` (``"gpt2"`` or ``"llama"``) causal LM plus its tokenizer,
    saved to ``path``. Deterministic for a given seed. Returns ``path``.

    Examples
    --------
    >>> path = build_model("tiny_gpt2", "gpt2", hidden=16, layers=1)
    >>> import json
    >>> json.loads((path / "config.json").read_text())["model_type"]
    'gpt2'
    """
    torch = require("torch", purpose="building a tiny model")
    transformers = require("transformers", purpose="building a tiny model")

    path = Path(path)
    tok = build_tokenizer(path, tokenizer_kind, vocab_size=vocab_size, extra_tokens=extra_tokens,
                          chat_template=chat_template, seed=seed)
    n_vocab = len(tok) - extra_tokens
    torch.manual_seed(seed)
    if arch == "gpt2":
        cfg = transformers.GPT2Config(n_layer=layers, n_head=heads, n_embd=hidden, n_positions=context,
                                      vocab_size=n_vocab, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                      pad_token_id=tok.pad_token_id)
        model = transformers.GPT2LMHeadModel(cfg)
    elif arch == "llama":
        cfg = transformers.LlamaConfig(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                                       num_attention_heads=heads, num_key_value_heads=1,
                                       max_position_embeddings=context, vocab_size=n_vocab,
                                       bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                                       pad_token_id=tok.pad_token_id, tie_word_embeddings=True)
        model = transformers.LlamaForCausalLM(cfg)
    else:
        raise InvalidArgumentError(f"argument `arch` must be 'gpt2' or 'llama'; got {arch!r}")
    model.eval()
    with quiet_transformers():
        model.save_pretrained(path)
    return path


def train_tiny_model(path, *, arch: str = "gpt2", n_rows: int = 3000, steps: int = 300, batch_size: int = 32,
                     lr: float = 1e-2, seed: int = 0, hidden: int = 64, progress: Any = None) -> dict[str, Any]:
    """Build a tiny model at ``path`` and train it briefly on synthetic persona prompts.

    Training examples are the :func:`synthetic_income_task` *numeric* prompts (ending ``Answer
    (between 0 and 1): 0.``) of :func:`synthetic_census` rows. The target of the first digit is the
    known probability ``p_true`` spread over its two neighbouring digits (10·p = k + f → digit k
    with weight 1 − f, digit k + 1 with weight f, so the expected value is exactly p); after the
    first digit the target is ``"0"``. So the verbalized (numeric) answers of the trained model
    carry real signal about the synthetic outcome. ``steps`` optimizer steps of ``batch_size``
    prompts on one torch thread: the defaults (300 x 32, 2 layers, width 64) take a minute or two
    on a CPU (75 s and 118 s measured on two 2-core machines), far less with a smaller ``steps``,
    ``n_rows`` or ``hidden`` (the example below: under a second), at the cost of signal.
    ``progress``: as every long job's (:mod:`llmsurrogate._progress`; ``None``: a bar over the
    steps in a terminal). Returns a dict with the path, the training time and the final mean loss.

    (A 2-layer model trained for seconds on multiple-choice prompts with both answer orders does
    not learn to read the option order: order-averaged scores stay at 0.5. Use
    ``method="numeric"`` with this model.)

    Examples
    --------
    >>> info = train_tiny_model("tiny_trained", n_rows=64, steps=5, batch_size=8, hidden=16)
    >>> info["steps"], info["arch"], info["final_loss"] > 0
    (5, 'gpt2', True)
    """
    torch = require("torch", purpose="training a tiny model")
    transformers = require("transformers", purpose="training a tiny model")
    t0 = time.perf_counter()
    build_model(path, arch, hidden=hidden, seed=seed, context=512)
    with quiet_transformers():
        tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    task = synthetic_income_task()
    df = synthetic_census(n_rows, seed=seed + 1000)
    rows = df.to_dict("records")
    enc = tok([numeric_prompt(task, r) for r in rows], add_special_tokens=True)["input_ids"]
    digit_ids = [tok(str(d), add_special_tokens=False)["input_ids"] for d in range(10)]
    if any(len(v) != 1 for v in digit_ids):
        raise InvalidArgumentError("the tokenizer does not hold the digits 0-9 as single tokens")
    digit_ids = [v[0] for v in digit_ids]
    p = np.clip(df["p_true"].to_numpy(), 0.0, 0.999)
    k = np.floor(10 * p).astype(int)
    f = 10 * p - k
    target = np.zeros((len(rows), 10), dtype=np.float32)
    target[np.arange(len(rows)), k] = 1 - f
    target[np.arange(len(rows)), np.minimum(k + 1, 9)] += f
    first = np.where(f >= 0.5, np.minimum(k + 1, 9), k)  # the digit appended for the second position
    width = max(len(e) for e in enc) + 1
    pad = tok.pad_token_id
    ids = torch.full((len(enc), width), pad, dtype=torch.long)
    mask = torch.zeros((len(enc), width), dtype=torch.long)
    for i, e in enumerate(enc):
        ids[i, : len(e)] = torch.tensor(e)
        ids[i, len(e)] = digit_ids[first[i]]
        mask[i, : len(e) + 1] = 1
    last = torch.tensor([len(e) - 1 for e in enc])
    tgt = torch.tensor(target)
    dig = torch.tensor(digit_ids)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    model.train()
    losses: list[float] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is several times faster than two
    notice = f"Training a tiny {arch}: {steps} steps of {batch_size} prompts on one torch thread"
    try:
        with progress_reporter(progress, notice=notice) as report:
            report("training steps", 0, steps)
            for step in range(steps):
                b = torch.randint(0, len(enc), (batch_size,), generator=gen)
                logits = model(input_ids=ids[b], attention_mask=mask[b]).logits.float()
                ar = torch.arange(batch_size)
                lp1 = torch.log_softmax(logits[ar, last[b]], dim=-1)[:, dig]
                lp2 = torch.log_softmax(logits[ar, last[b] + 1], dim=-1)[:, dig[0]]
                loss = -(tgt[b] * lp1).sum(-1).mean() - lp2.mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                losses.append(float(loss.detach()))
                report("training steps", step + 1, steps)
    finally:
        torch.set_num_threads(threads)
    model.eval()
    with quiet_transformers():
        model.save_pretrained(path)
    info = {"path": str(path), "seconds": time.perf_counter() - t0, "final_loss": float(np.mean(losses[-20:])),
            "steps": steps, "arch": arch}
    (Path(path) / "llmsurrogate_training.json").write_text(json.dumps(info, indent=1))
    return info
