"""TransformersBackend on tiny locally built GPT-2 and Llama models (CPU, offline)."""

from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from llmsurrogate import datasets, risk, testing  # noqa: E402
from llmsurrogate.exceptions import InvalidArgumentError  # noqa: E402
from llmsurrogate.llm.cache import Cache  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402
from llmsurrogate.llm.prompts import MC_CHAT_PREFILL, MC_SYSTEM_PROMPT, multiple_choice_prompt  # noqa: E402
from llmsurrogate.llm.scoring import option_probabilities  # noqa: E402
from llmsurrogate.llm.tasks import acs_income_task  # noqa: E402

ROWS = datasets.load_acs_income_rows()
TASK = acs_income_task()
PROMPTS = [multiple_choice_prompt(TASK, r) for r in ROWS.to_dict("records")[:5]] + [
    "Answer:", "The age is: 40 years old.\nAnswer:"]


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_models")
    out = {}
    for arch in ("gpt2", "llama"):
        out[arch] = testing.build_model(root / arch, arch, seed=1)
    out["metaspace"] = testing.build_model(root / "metaspace", "llama", tokenizer_kind="metaspace", seed=2)
    out["wordlevel"] = testing.build_model(root / "wordlevel", "gpt2", tokenizer_kind="wordlevel", seed=3)
    out["extra"] = testing.build_model(root / "extra", "gpt2", extra_tokens=5, seed=4)
    out["nosystem"] = testing.build_model(root / "nosystem", "gpt2", seed=5, chat_template=testing.NO_SYSTEM_TEMPLATE)
    return out


@pytest.fixture(scope="session")
def backends(models):
    return {k: TransformersBackend(p, device="cpu") for k, p in models.items()}


def manual_logprobs(backend, prompt):
    """Explicit token-by-token forward passes: log p(t_k | t_<k) from the logits of the prefix alone."""
    ids = backend.tokenizer(prompt, add_special_tokens=True)["input_ids"]
    out = [float("nan")]
    with torch.no_grad():
        for k in range(1, len(ids)):
            logits = backend.model(input_ids=torch.tensor([ids[:k]])).logits[0, -1, : backend.vocab_size]
            out.append(float(torch.log_softmax(logits.double(), -1)[ids[k]]))
    return ids, np.array(out)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_prompt_logprobs_equal_token_by_token_forward(backends, arch):
    b = backends[arch]
    prompts = [PROMPTS[5], PROMPTS[6], "- The sex is: Female."]
    rag = b.prompt_logprobs(prompts)
    assert rag.values.dtype == np.float32 and rag.offsets.dtype == np.int64 and len(rag) == 3
    for i, p in enumerate(prompts):
        ids, ref = manual_logprobs(b, p)
        assert rag.token_ids[rag.offsets[i]: rag.offsets[i + 1]].tolist() == ids
        np.testing.assert_allclose(rag[i], ref, atol=2e-5, equal_nan=True)
    assert rag.sums()[0] == pytest.approx(np.nansum(manual_logprobs(b, prompts[0])[1]), abs=1e-4)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_batched_equals_unbatched_and_left_equals_right_padding(models, backends, arch):
    b = backends[arch]  # defaults: left padding, last-position logits only, shared prefixes
    ids = list(range(0, 300, 7))
    full = b.next_token_logprobs(PROMPTS, ids)
    one = np.concatenate([b.next_token_logprobs([p], ids) for p in PROMPTS])
    np.testing.assert_allclose(full, one, atol=2e-5)
    right = TransformersBackend(models[arch], device="cpu", padding_side="right", batch_size=4, share_prefix=False)
    left = TransformersBackend(models[arch], device="cpu", padding_side="left", batch_size=4, share_prefix=False)
    np.testing.assert_allclose(right.next_token_logprobs(PROMPTS, ids), full, atol=2e-5)
    np.testing.assert_allclose(left.next_token_logprobs(PROMPTS, ids), full, atol=2e-5)
    rl = left.prompt_logprobs(PROMPTS)
    rr = right.prompt_logprobs(PROMPTS)
    np.testing.assert_allclose(rl.values, rr.values, atol=2e-5, equal_nan=True)
    # and the next-token log-probs equal a direct unpadded forward pass
    enc = b.tokenizer(PROMPTS[0])["input_ids"]
    with torch.no_grad():
        ref = torch.log_softmax(b.model(input_ids=torch.tensor([enc])).logits[0, -1, : b.vocab_size].double(), -1)
    np.testing.assert_allclose(full[0], ref.numpy()[ids], atol=2e-5)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_shared_prefix_path_equals_plain_path(models, arch):
    rows = ROWS.to_dict("records")
    prompts = [multiple_choice_prompt(TASK, r, q) for q in TASK.question.permutations() for r in rows]
    prompts += ["Answer:", "A", "The age is: 40 years old.\nAnswer:"]  # singletons, a one-token prompt
    ids = list(range(0, 300, 7))
    shared = TransformersBackend(models[arch], device="cpu", batch_size=5)
    plain = TransformersBackend(models[arch], device="cpu", share_prefix=False)
    assert len(shared._prefix_groups(shared._encode(prompts))) < len(prompts)
    np.testing.assert_allclose(shared.next_token_logprobs(prompts, ids), plain.next_token_logprobs(prompts, ids),
                               atol=2e-5)


def test_answer_probabilities_equal_hand_computation(backends, tmp_path):
    b = backends["gpt2"]
    spell = b.answer_tokens(["A", "B"])
    assert {s for s, _ in spell["A"]} == {"A", " A"} and {s for s, _ in spell["B"]} == {"B", " B"}
    probs, mass = option_probabilities(b, PROMPTS[:3], ["A", "B"], cache=Cache(tmp_path))
    for i, p in enumerate(PROMPTS[:3]):
        enc = b.tokenizer(p)["input_ids"]
        with torch.no_grad():
            pr = torch.softmax(b.model(input_ids=torch.tensor([enc])).logits[0, -1].double(), -1).numpy()
        ma = sum(pr[t] for _, t in spell["A"])
        mb = sum(pr[t] for _, t in spell["B"])
        assert probs[i, 0] == pytest.approx(ma / (ma + mb), abs=1e-5)
        assert mass[i] == pytest.approx(ma + mb, rel=1e-4)
    again, _ = option_probabilities(b, PROMPTS[:3], ["A", "B"], cache=Cache(tmp_path))
    np.testing.assert_array_equal(again, probs)


def test_key_spellings_for_other_tokenizers(backends):
    ms = backends["metaspace"].answer_tokens(["A", "B"])
    assert any(backends["metaspace"].tokenizer.convert_ids_to_tokens(t) == "▁A" for _, t in ms["A"])
    wl = backends["wordlevel"].answer_tokens(["A", "B"])
    assert [s for s, _ in wl["A"]] == ["A"]
    for name in ("metaspace", "wordlevel"):
        s = risk.risk_scores(ROWS.iloc[:3], TASK, backends[name])
        assert np.all((s.scores >= 0) & (s.scores <= 1)) and np.all(s.table["answer_mass"] > 0)


def test_default_batch_size_depends_on_the_device(models):
    assert TransformersBackend(models["gpt2"], device="cpu").batch_size == 16
    assert TransformersBackend(models["gpt2"], device="cpu", batch_size=3).batch_size == 3
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        TransformersBackend(models["gpt2"], device="cpu", batch_size=0)


def test_vocab_longer_than_logits_is_guarded(backends):
    b = backends["extra"]
    assert len(b.tokenizer) == b.vocab_size + 5
    assert all(t < b.vocab_size for _, t in b.digit_tokens())
    with pytest.raises(InvalidArgumentError, match="logits dimension"):
        b.next_token_logprobs(["x"], [b.vocab_size + 1])


def test_digit_tokens_and_numeric_scores(backends):
    b = backends["gpt2"]
    digits = dict(b.digit_tokens())
    assert all(k.isdecimal() for k in digits) and set("0123456789") <= set(digits)
    s = risk.risk_scores(ROWS.iloc[:2], TASK, b, method="numeric")
    # expected value from the digit distribution, recomputed by hand for row 0
    from llmsurrogate.llm.prompts import numeric_prompt

    prompt = numeric_prompt(TASK, ROWS.iloc[0].to_dict())
    texts, ids = zip(*b.digit_tokens())

    def dist(text):
        enc = b.tokenizer(text)["input_ids"]
        with torch.no_grad():
            lg = b.model(input_ids=torch.tensor([enc])).logits[0, -1, : b.vocab_size].double()
        q = torch.softmax(lg, -1).numpy()[list(ids)]
        return q / q.sum()

    q1 = dist(prompt)
    r = 0.0
    for t, w in zip(texts, q1):
        v = int(t) / 10 ** len(t)
        if len(t) == 1:
            q2 = dist(prompt + t)
            v += sum(w2 * int(t2) / 10 ** len(t2) for t2, w2 in zip(texts, q2)) / 10
        r += w * v
    assert s.scores[0] == pytest.approx(r, abs=1e-5)


def test_chat_templates(backends):
    b = backends["gpt2"]
    text = b.chat_prompt("Hello", prefill=MC_CHAT_PREFILL, system=MC_SYSTEM_PROMPT)
    assert text.startswith("<|im_start|>system\n" + MC_SYSTEM_PROMPT)
    assert text.endswith("<|im_start|>assistant\n" + MC_CHAT_PREFILL)  # end-of-turn token trimmed
    ns = backends["nosystem"].chat_prompt("Hello", prefill="Answer:", system="sys")
    assert ns == "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>assistant\nAnswer:"
    # chat-formatted prompts score like any other
    lp = b.next_token_logprobs([text], [0, 1])
    assert lp.shape == (1, 2) and np.all(np.isfinite(lp))


def test_chat_risk_scores_use_the_template(backends):
    b = backends["gpt2"]
    s = risk.risk_scores(ROWS.iloc[:2], TASK, b, chat=True)
    user = multiple_choice_prompt(TASK, ROWS.iloc[0].to_dict(), prefill=False)
    prompt = b.chat_prompt(user, prefill=MC_CHAT_PREFILL, system=MC_SYSTEM_PROMPT)
    assert "Answer:" not in prompt.split("<|im_start|>assistant")[1]
    ids = [t for k in ("A", "B") for _, t in b.answer_tokens([k])[k]]
    lp = np.exp(b.next_token_logprobs([prompt], ids)[0].astype(float))
    p_above_first_order = lp[2:].sum() / lp.sum()  # original order: B = Above
    assert s.table["score_order_0"].iloc[0] == pytest.approx(p_above_first_order, abs=1e-5)
    assert s.meta["chat"] is True
    n = risk.risk_scores(ROWS.iloc[:2], TASK, b, method="numeric", chat=True)
    assert n.scores.shape == (2,)
    with pytest.raises(InvalidArgumentError, match="chat"):
        from llmsurrogate.llm.base import CallableBackend

        risk.risk_scores(ROWS.iloc[:2], TASK, CallableBackend(lambda p: {}), chat=True)


def test_prompt_logprobs_and_generation_are_cached(backends, tmp_path):
    from llmsurrogate.llm.scoring import generate_cached, prompt_logprobs_cached

    b = backends["llama"]
    direct = b.prompt_logprobs(PROMPTS)
    first = prompt_logprobs_cached(b, PROMPTS, cache=Cache(tmp_path))
    np.testing.assert_array_equal(first.offsets, direct.offsets)
    np.testing.assert_array_equal(first.token_ids, direct.token_ids)
    np.testing.assert_array_equal(first.values, direct.values)
    cache = Cache(tmp_path)
    again = prompt_logprobs_cached(b, PROMPTS, cache=cache)
    assert cache.misses == 0 and cache.hits == len(set(PROMPTS))
    np.testing.assert_array_equal(again.values, direct.values)
    texts = generate_cached(b, PROMPTS[5:], max_new_tokens=4, cache=Cache(tmp_path))
    assert texts == b.generate(PROMPTS[5:], max_new_tokens=4)
    cache = Cache(tmp_path)
    assert generate_cached(b, PROMPTS[5:], max_new_tokens=4, cache=cache) == texts and cache.misses == 0


def test_generate_is_greedy(backends):
    b = backends["gpt2"]
    out = b.generate(PROMPTS[5:7], max_new_tokens=3)
    enc = b.tokenizer(PROMPTS[5])["input_ids"]
    ids = list(enc)
    with torch.no_grad():
        for _ in range(3):
            ids.append(int(b.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
    assert out[0] == b.tokenizer.decode(ids[len(enc):], skip_special_tokens=True)


def test_bad_input(models, backends, tmp_path):
    with pytest.raises(InvalidArgumentError, match="not a local model folder"):
        TransformersBackend(tmp_path / "no-such-model")
    b = backends["gpt2"]
    with pytest.raises(InvalidArgumentError, match="empty"):
        b.next_token_logprobs(["ok", ""], [1])
    small = TransformersBackend(models["gpt2"], device="cpu")
    small.context = 20
    with pytest.raises(InvalidArgumentError, match="context"):
        small.next_token_logprobs([PROMPTS[0]], [1])
    tail = TransformersBackend(models["gpt2"], device="cpu", truncation="left")
    tail.context = 20
    enc = b.tokenizer(PROMPTS[0])["input_ids"][-20:]
    with torch.no_grad():
        ref = torch.log_softmax(b.model(input_ids=torch.tensor([enc])).logits[0, -1].double(), -1)[[5, 6]]
    np.testing.assert_allclose(tail.next_token_logprobs([PROMPTS[0]], [5, 6])[0], ref.numpy(), atol=2e-5)
    # identity: path + weights hash; another model has another identity
    assert backends["gpt2"].identity["weights"] != backends["llama"].identity["weights"]


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_kv_cache_continuation_equals_full_forward(backends, arch):
    b = backends[arch]
    prompts = [PROMPTS[0], PROMPTS[5], PROMPTS[6]]
    after = [b.tokenizer.convert_tokens_to_ids(t) for t in ("7", "3")]
    ids = list(range(0, 200, 3))
    fast = b.next_token_logprobs_after(prompts, after, ids)
    for i, p in enumerate(prompts):
        enc = b.tokenizer(p)["input_ids"]
        for j, a in enumerate(after):
            with torch.no_grad():
                lg = b.model(input_ids=torch.tensor([enc + [a]])).logits[0, -1, : b.vocab_size].double()
            np.testing.assert_allclose(fast[i, j], torch.log_softmax(lg, -1).numpy()[ids], atol=2e-5)


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    path = tmp_path_factory.mktemp("trained") / "gpt2"
    info = testing.train_tiny_model(path)
    return path, info


def test_trained_tiny_model_carries_signal(trained):
    path, info = trained
    # (no wall-clock bound here: speed is measured in benchmarks/, and a loaded machine took 121 s)
    assert info["steps"] == 300 and np.isfinite(info["final_loss"])
    b = TransformersBackend(path, device="cpu", batch_size=32)
    df = testing.synthetic_census(200, seed=7)
    s = risk.risk_scores(df, testing.synthetic_income_task(), b, method="numeric")
    auc = risk.roc_auc(df["PINCP>50000"], s.scores)
    oracle = risk.roc_auc(df["PINCP>50000"], df["p_true"])
    assert 0.6 < auc <= oracle + 0.03
    assert np.corrcoef(s.scores, df["p_true"])[0, 1] > 0.5
    assert s.scores.std() > 0.05 and s.table["answer_mass"].min() > 0.9


class _HeadRows:
    """Counts the rows the LM head (output embeddings) computes: a forward hook on the module."""

    def __init__(self, backend):
        self.n = 0
        self.handle = backend.model.get_output_embeddings().register_forward_hook(self._hook)

    def _hook(self, module, args, out):
        self.n += args[0].numel() // args[0].shape[-1]

    def take(self):
        n, self.n = self.n, 0
        return n


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("variant", ["shared-left", "plain-left", "plain-right", "head-not-plain"])
def test_lm_head_runs_only_where_logits_are_read(models, arch, variant):
    """Issue 13, item 0: every method's forward passes apply the LM head to exactly the positions
    whose logits are read, and the results are bit-identical to the full-logits path
    (``_skip_head=False``: the head over every position, as before). ``head-not-plain`` forces the
    fallback for models whose logits are post-processed after the head (``logits_to_keep`` from
    the first column read)."""
    kw = {"share_prefix": variant == "shared-left", "padding_side": "right" if variant == "plain-right" else "left"}
    b = TransformersBackend(models[arch], device="cpu", batch_size=5, **kw)
    if variant == "head-not-plain":
        b._head_direct = False
    rows = ROWS.to_dict("records")[:6]
    prompts = [multiple_choice_prompt(TASK, r, q) for r in rows for q in TASK.question.permutations()]
    prompts += ["Answer:", "A"]
    ids = list(range(0, 300, 7))
    seqs = b._encode(prompts)
    b._head_is_plain()  # the one-off probe of the head (one row), outside the count
    count = _HeadRows(b)
    calls = {"next_token_logprobs": lambda: b.next_token_logprobs(prompts, ids),
             "next_token_logprobs_after": lambda: b.next_token_logprobs_after(prompts, [5, 6, 7], ids),
             "prompt_logprobs": lambda: b.prompt_logprobs(prompts).values,
             "generate": lambda: b.generate(prompts[:3], max_new_tokens=4)}
    new, rows_new = {}, {}
    for name, call in calls.items():
        new[name] = call()
        rows_new[name] = count.take()
    n = len(prompts)
    assert rows_new["next_token_logprobs"] == n
    assert rows_new["next_token_logprobs_after"] == 3 * n
    if variant == "head-not-plain":  # bounded: the columns from the first one read, per prompt batch
        assert sum(len(s) - 1 for s in seqs) <= rows_new["prompt_logprobs"] <= sum(len(s) for s in seqs) * 2
    else:
        assert rows_new["prompt_logprobs"] == sum(len(s) - 1 for s in seqs)
    assert rows_new["generate"] <= 3 * 4  # one row per prompt and new token (transformers' logits_to_keep)
    b._skip_head = False  # the old path: logits at every position
    for name, call in calls.items():
        old = call()
        rows_old = count.take()
        if name == "generate":
            assert old == new[name]
        elif name == "next_token_logprobs_after" or (name == "next_token_logprobs" and variant == "shared-left"):
            np.testing.assert_array_equal(new[name], old)  # the same final pass: bit-identical
        else:
            # the head's matrix product over other rows: float32 BLAS blocking may round the last
            # bit differently (seen: 4.8e-7 absolute at |log p| ~ 7, i.e. 1 ulp)
            np.testing.assert_allclose(new[name], old, rtol=1e-6, atol=1e-6)
        if name == "next_token_logprobs_after" or (name == "prompt_logprobs" and variant != "head-not-plain") or (
                variant == "shared-left" and name == "next_token_logprobs"):
            assert rows_old > rows_new[name]
    count.handle.remove()


def test_token_budget_bounds_padded_tokens_and_keeps_order(models):
    b = TransformersBackend(models["gpt2"], device="cpu", batch_size=100, token_budget=40)
    lengths = [3, 12, 5, 40, 7, 2, 9, 60, 4]
    batches = list(b._batches(lengths))
    seen = np.concatenate(batches)
    assert sorted(seen.tolist()) == list(range(len(lengths)))
    flat = [lengths[i] for i in seen]
    assert flat == sorted(flat)  # sorted by length
    for idx in batches:  # padded tokens within the budget, or a single over-long prompt
        assert len(idx) * max(lengths[i] for i in idx) <= 40 or len(idx) == 1
    prompts = PROMPTS + [p + " x" for p in PROMPTS]
    ids = list(range(0, 300, 7))
    ref = TransformersBackend(models["gpt2"], device="cpu", share_prefix=False)
    for share in (True, False):
        small = TransformersBackend(models["gpt2"], device="cpu", token_budget=64, share_prefix=share)
        np.testing.assert_allclose(small.next_token_logprobs(prompts, ids), ref.next_token_logprobs(prompts, ids),
                                   atol=2e-5)


def test_a_backend_name_with_model_scores_as_the_backend_object(models):
    """One way to give a backend (issue 20): the object, or its name with ``model=`` (as R does)."""
    from llmsurrogate.llm import as_backend

    path = str(models["gpt2"])
    obj = TransformersBackend(path)  # the name's default device, as the name builds it
    built = as_backend("hf", path)
    assert isinstance(built, TransformersBackend) and built.identity == obj.identity
    assert isinstance(as_backend("transformers", path, device="cpu", batch_size=3), TransformersBackend)
    assert as_backend(obj) is obj
    rows = ROWS.head(3)
    want = risk.risk_scores(rows, TASK, obj).table
    for name in ("hf", "transformers"):
        got = risk.risk_scores(rows, TASK, name, model=path).table
        np.testing.assert_array_equal(got["score"].to_numpy(), want["score"].to_numpy())
    with pytest.raises(InvalidArgumentError, match="`model` is needed"):
        risk.risk_scores(rows, TASK, "hf")
    with pytest.raises(InvalidArgumentError, match="must be one of"):
        as_backend("llamacpp", path)
    with pytest.raises(InvalidArgumentError, match="go with a backend name"):
        risk.risk_scores(rows, TASK, obj, model=path)
    with pytest.raises(InvalidArgumentError, match="backend object"):
        as_backend(None)


def test_lookahead_and_the_scoring_helpers_take_a_backend_name(models):
    from llmsurrogate.exceptions import LLMSurrogateWarning
    from llmsurrogate.llm.scoring import numeric_expectations
    from llmsurrogate.lookahead import answer_lap, forecast, lap

    path = str(models["gpt2"])
    obj = TransformersBackend(path)
    np.testing.assert_array_equal(lap(PROMPTS, "hf", model=path), lap(PROMPTS, obj))
    np.testing.assert_array_equal(answer_lap(PROMPTS[:3], "hf", ["A", "B"], model=path),
                                  answer_lap(PROMPTS[:3], obj, ["A", "B"]))
    for a, b in zip(option_probabilities("hf", PROMPTS, ["A", "B"], model=path),
                    option_probabilities(obj, PROMPTS, ["A", "B"])):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(numeric_expectations("hf", PROMPTS[:2], model=path), numeric_expectations(obj, PROMPTS[:2])):
        np.testing.assert_array_equal(a, b)
    texts = ["Headline: shares rise.\nAnswer:"]
    with pytest.warns(LLMSurrogateWarning, match="no news label"):  # a random tiny model gives no label
        by_name = forecast(texts, "hf", model=path, max_new_tokens=4, token_probabilities=False)
    with pytest.warns(LLMSurrogateWarning, match="no news label"):
        by_object = forecast(texts, obj, max_new_tokens=4, token_probabilities=False)
    assert by_name["answer"].tolist() == by_object["answer"].tolist()
    with pytest.raises(InvalidArgumentError, match="go with a backend name"):
        lap(PROMPTS, obj, model=path)


def test_prompt_token_ids_equal_the_tokenizers_own_call(backends):
    """The ids the backends encode prompts to come from the Rust tokenizer without offsets where the
    tokenizer is in its plain state: the same ids as the tokenizer's own call, for every tokenizer
    kind and for text holding special tokens, unicode, odd whitespace and nothing at all; a tokenizer
    with truncation set, or one that splits special tokens, goes through its own call."""
    from llmsurrogate.llm.hf import _token_ids

    texts = PROMPTS + ["", " ", "\n\n  \t", "<|im_start|>user\nHi<|im_end|>", "naïve café — 東京 🙂",
                       "Answer: A<|endoftext|>B", "x" * 3000]
    for name, b in backends.items():
        tok = b.tokenizer
        assert tok.is_fast and hasattr(tok.backend_tokenizer, "encode_batch_fast"), name  # the fast path is taken
        assert _token_ids(tok, texts) == tok(texts, add_special_tokens=True)["input_ids"], name
    tok = backends["gpt2"].tokenizer
    rust = tok.backend_tokenizer
    rust.enable_truncation(4)  # a state the tokenizer's own call resets: its ids, not 4-token ones
    try:
        assert _token_ids(tok, texts[:3]) == [tok(t, add_special_tokens=True)["input_ids"] for t in texts[:3]]
        assert max(map(len, _token_ids(tok, texts[:3]))) > 4
    finally:
        rust.no_truncation()
    tok.split_special_tokens = True
    try:
        got = _token_ids(tok, ["<|im_start|>user"])
        assert got == tok(["<|im_start|>user"], add_special_tokens=True)["input_ids"] and len(got[0]) > 2
    finally:
        tok.split_special_tokens = False
        tok(["reset"])  # the tokenizer's own call puts its Rust tokenizer back
    assert not rust.encode_special_tokens
