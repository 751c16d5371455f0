"""``lookahead.forecast``: the paper's prompts rendered, answered through a backend with the cache,
parsed (docs/methods/lookahead.md §3, §8.2). A real tiny transformers model (its answers do not
parse: each is reported as such) and the package's CallableBackend, which can be steered to give
the paper's answer format."""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from _vllm_stand_in import stand_in  # noqa: F401  (the fixture: vLLM's API served by a real transformers model)
from llmsurrogate import lookahead
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning
from llmsurrogate.llm import CallableBackend
from llmsurrogate.llm.cache import Cache

os.environ.setdefault("HF_HUB_OFFLINE", "1")

NEWS = pd.DataFrame({
    "headline": ["Kodak Triples on Loan to Make Covid-19 Drug Ingredients.", "Acme Cuts Outlook as Orders Slump",
                 "Borealis Holds Annual Meeting"],
    "date": ["2020-07-28", "2021-03-02", "2019-11-15"],
    "company_name": ["Eastman Kodak Company", "Acme Corp", "Borealis Inc"],
    "ticker": ["KODK", "ACME", "BORL"],
}, index=[10, 11, 12])


def scripted_backend(answers: dict[str, list[str]], name: str = "scripted"):
    """A CallableBackend that greedily writes answers[prompt] (a list of vocabulary pieces) after
    each prompt and stops there."""
    vocab = sorted({p for pieces in answers.values() for p in pieces})

    def next_token(text):
        for prompt, pieces in answers.items():
            if text.startswith(prompt):
                gen = text[len(prompt):]
                for i in range(len(pieces) + 1):
                    if "".join(pieces[:i]) == gen:
                        return {pieces[i]: 0.0} if i < len(pieces) else {}
        raise AssertionError(f"unexpected text {text!r}")

    return CallableBackend(next_token, name=name, vocab=vocab)


def prompts_of(frame):
    return [lookahead.news_prompt(r.headline, r.date, r.company_name, r.ticker) for r in frame.itertuples()]


def test_forecast_parses_steered_answers_in_the_paper_format(tmp_path):
    p = prompts_of(NEWS)
    be = scripted_backend({
        p[0]: ["{", "good", "}", "\n", "{", "1.0", "}", "\n", "{", "Loan", " boosts", " prospects.", "}"],
        p[1]: ["{", "bad", "}", "\n", "{", "85", "}"],
        p[2]: ["I", " cannot", " say."],
    })
    with pytest.warns(LLMSurrogateWarning, match=r"1 of 3 answers have no news label.*1 no confidence.*1 a confidence"):
        out = lookahead.forecast(NEWS, be, cache=Cache(tmp_path))
    assert list(out.index) == [10, 11, 12]
    assert out["prompt"].tolist() == p
    assert out["answer"].tolist() == ["{good}\n{1.0}\n{Loan boosts prospects.}", "{bad}\n{85}", "I cannot say."]
    assert out["label"].tolist()[:2] == ["good", "bad"] and pd.isna(out["label"].iloc[2])
    assert out["signal"].tolist()[:2] == [1.0, -1.0] and math.isnan(out["signal"].iloc[2])
    assert out["confidence"].tolist()[:2] == [1.0, 0.85] and math.isnan(out["confidence"].iloc[2])
    assert out["confidence_rescaled"].tolist() == [False, True, False]
    assert out["status"].tolist() == ["ok", "ok", "unparsed"]
    assert out.attrs["unparsed_label"] == 1 and out.attrs["n"] == 3 and out.attrs["template"] == "news"


def test_forecast_status_label_only_and_confidence_only():
    p = ["Q1?", "Q2?"]
    be = scripted_backend({p[0]: ["{", "neutral", "}"], p[1]: ["{", "maybe", "}", "\n", "{", "0.3", "}"]})
    seen = []
    with pytest.warns(LLMSurrogateWarning):
        out = lookahead.forecast(p, be, progress=lambda label, done, total: seen.append((label, done, total)))
    steps = [s for s in seen if s[0] == "forecasts (news)"]
    assert steps[0] == ("forecasts (news)", 0, 2) and steps[-1] == ("forecasts (news)", 2, 2)
    assert seen[-1] == ("token probabilities (news)", 2, 2)
    assert out["status"].tolist() == ["no_confidence", "no_label"]
    assert out["signal"].iloc[0] == 0.0 and math.isnan(out["signal"].iloc[1])
    assert out["confidence"].iloc[1] == 0.3


def test_forecast_earnings_call_template():
    frame = pd.DataFrame({"transcript": ["We began 2020 with strong fundamentals " * 300],
                          "name": ["Oceaneering International Inc."], "ticker": ["OII"],
                          "event_title": ["Q1 2020 Oceaneering International Inc. Earnings Call"]})
    prompt = lookahead.earnings_call_prompt(frame["transcript"][0], "Oceaneering International Inc.", "OII",
                                            frame["event_title"][0])
    be = scripted_backend({prompt: ["{", "significantly", "_decrease", "}", "\n", "{", "0.8", "}"]})
    out = lookahead.forecast(frame, be, template="earnings_call", columns={"company_name": "name"})
    assert out["prompt"].iloc[0] == prompt and len(prompt.split('"')[1].split()) == 512
    assert out["label"].iloc[0] == "significantly_decrease" and out["signal"].iloc[0] == -1.0
    assert out["status"].iloc[0] == "ok"


def test_forecast_errors_are_clear():
    be = scripted_backend({"x": ["a"]})
    with pytest.raises(InvalidArgumentError, match=r"needs the column\(s\) 'company_name'.*columns=\{field: column\}"):
        lookahead.forecast(NEWS.drop(columns="company_name"), be)
    with pytest.raises(InvalidArgumentError, match=r"'firm' \(field company_name\)"):
        lookahead.forecast(NEWS, be, columns={"company_name": "firm"})
    with pytest.raises(InvalidArgumentError, match="does not use"):
        lookahead.forecast(NEWS, be, columns={"firm": "company_name"})
    with pytest.raises(InvalidArgumentError, match="`template`"):
        lookahead.forecast(NEWS, be, template="capex")
    with pytest.raises(InvalidArgumentError, match="not one string"):
        lookahead.forecast("one prompt", be)
    with pytest.raises(InvalidArgumentError, match="row 1 of the data frame.*headline"):
        lookahead.forecast(NEWS.assign(headline=["ok", "", "ok"]), be)
    with pytest.raises(InvalidArgumentError, match="no `generate`"):
        lookahead.forecast(["x"], object())


# --- token probabilities (Table IV) on a scripted backend: exact values ---------------------------

def distribution_backend(steps: dict[str, dict[str, float]], name: str = "dist"):
    """A CallableBackend whose next-token probabilities after ``text`` are ``steps[text]`` (no
    entry: nothing more is generated); counts its calls."""
    vocab = sorted({t for d in steps.values() for t in d})
    calls = []

    def fn(text):
        calls.append(text)
        return {t: math.log(q) for t, q in steps.get(text, {}).items()}

    be = CallableBackend(fn, name=name, vocab=vocab)
    be.calls = calls
    return be


def paper_format_steps(prompt, pieces, first, label_at=None, label=None):
    """``steps`` writing ``pieces`` greedily after ``prompt``; the first step's distribution is
    ``first`` (pieces[0] its argmax) and, after the pieces before ``label_at``, ``label``."""
    steps, text = {}, prompt
    for i, piece in enumerate(pieces):
        steps[text] = first if i == 0 else (label if i == label_at else {piece: 1.0})
        text += piece
    return steps


def test_token_probabilities_are_exact_on_a_scripted_backend(tmp_path):
    p = ["News A?", "News B?", "Call C?", "News D?"]
    steps = {}
    # {good}: first token "{" at 0.7; after "{" the label word's tokens "good" 0.55 and "go" 0.05
    steps.update(paper_format_steps(p[0], ["{", "good", "}", "\n", "{", "0.9", "}"],
                                    first={"{": 0.7, "I": 0.2, " {": 0.1}, label_at=1,
                                    label={"good": 0.55, "go": 0.05, "bad": 0.4}))
    # "{ Good}": one space before the word belongs to its first token " Good" (case as written),
    # not "Good" (0.3)
    steps.update(paper_format_steps(p[1], ["{", " Good", "}", "\n", "{", "0.6", "}"],
                                    first={"{": 0.9, "I": 0.1}, label_at=1,
                                    label={" Good": 0.6, "Good": 0.3, " bad": 0.1}))
    # a label word of two tokens: its first token "significantly" (0.8), not "sign" (0.15)
    steps.update(paper_format_steps(p[2], ["{", "significantly", "_decrease", "}", "\n", "{", "0.8", "}"],
                                    first={"{": 0.6, "I": 0.4}, label_at=1,
                                    label={"significantly": 0.8, "sign": 0.15, "slightly": 0.05}))
    # no label: p_first_token is still read, p_label_token is NaN
    steps.update(paper_format_steps(p[3], ["I", " cannot", " say."], first={"I": 0.5, "{": 0.3, "x": 0.2}))
    be = distribution_backend(steps)
    with pytest.warns(LLMSurrogateWarning, match="no news label"):
        out = lookahead.forecast([p[0], p[1], p[3]], be, cache=Cache(tmp_path))
    assert out["answer"].tolist() == ["{good}\n{0.9}", "{ Good}\n{0.6}", "I cannot say."]
    assert out["label"].tolist()[:2] == ["good", "good"]
    np.testing.assert_allclose(out["p_first_token"], [0.7, 0.9, 0.5], rtol=1e-6)
    np.testing.assert_allclose(out["p_label_token"][:2], [0.55, 0.6], rtol=1e-6)
    assert math.isnan(out["p_label_token"].iloc[2])
    assert out["token_status"].tolist() == ["ok", "ok", "no_label"]
    assert out.attrs["token_probabilities"] == "ok" and out.attrs["p_first_token_method"] == "scan"
    capex = lookahead.forecast([p[2]], be, template="earnings_call", cache=Cache(tmp_path))
    assert capex["label"].iloc[0] == "significantly_decrease"
    assert capex["p_first_token"].iloc[0] == pytest.approx(0.6, rel=1e-6)
    assert capex["p_label_token"].iloc[0] == pytest.approx(0.8, rel=1e-6)
    # a rerun is read from the cache: no model call at all
    be.calls.clear()
    with pytest.warns(LLMSurrogateWarning, match="no news label"):
        again = lookahead.forecast([p[0], p[1], p[3]], be, cache=Cache(tmp_path))
    assert be.calls == []
    pd.testing.assert_frame_equal(again, out)
    # token_probabilities=False: no scoring pass, the columns are NaN and "off"
    be2 = distribution_backend(steps, name="dist2")
    with pytest.warns(LLMSurrogateWarning, match="no news label"):
        off = lookahead.forecast([p[0], p[1], p[3]], be2, token_probabilities=False)
    be3 = distribution_backend(steps, name="dist3")
    be3.generate([p[0], p[1], p[3]], max_new_tokens=64)
    assert be2.calls == be3.calls  # the calls of generation alone
    assert off["p_first_token"].isna().all() and off["p_label_token"].isna().all()
    assert (off["token_status"] == "off").all() and off.attrs["token_probabilities"] == "off"
    pd.testing.assert_frame_equal(off.drop(columns=["p_first_token", "p_label_token", "token_status"]),
                                  out.drop(columns=["p_first_token", "p_label_token", "token_status"]))
    with pytest.raises(InvalidArgumentError, match="token_probabilities"):
        lookahead.forecast([p[0]], be, token_probabilities="yes")


class Steered(CallableBackend):
    """Writes the given answers whatever the distribution says (not greedy decoding)."""

    def __init__(self, fn, answers, **kw):
        super().__init__(fn, **kw)
        self.answers = answers

    def generate(self, prompts, max_new_tokens=16):
        return [self.answers[p] for p in prompts]


class Delegate:
    """Generation plus (optionally) answer tokens and next-token scoring of another backend; no
    vocabulary scan declared."""

    def __init__(self, inner, scoring=True):
        self.inner, self.identity = inner, {"backend": "delegate", "model": str(scoring)}
        if scoring:
            self.answer_tokens, self.next_token_logprobs = inner.answer_tokens, inner.next_token_logprobs

    def generate(self, prompts, max_new_tokens=16):
        return self.inner.generate(prompts, max_new_tokens=max_new_tokens)


def test_token_probability_statuses():
    steps = {}
    # the label word starts inside the token "{n": no token spells a prefix of "neutral"
    steps.update(paper_format_steps("Q1?", ["{n", "eutral", "}"], first={"{n": 1.0}))
    # "{g" + "ood": "g" is a token but "Q2?{" never occurred, so its probability there is 0
    steps.update(paper_format_steps("Q2?", ["{g", "ood", "}"], first={"{g": 0.8, "g": 0.2}))
    # nothing generated: no token has positive probability after the prompt
    steps["Q3?"] = {}
    be = distribution_backend(steps)
    with pytest.warns(LLMSurrogateWarning, match="1 of 3 answers have no news label"):
        out = lookahead.forecast(["Q1?", "Q2?", "Q3?"], be)
    assert out["answer"].tolist() == ["{neutral}", "{good}", ""]
    assert out["token_status"].tolist() == ["no_label_token", "label_token_unseen", "no_label, no_first_token"]
    np.testing.assert_allclose(out["p_first_token"][:2], [1.0, 0.8], rtol=1e-6)
    assert math.isnan(out["p_first_token"].iloc[2]) and out["p_label_token"].isna().all()

    # answers not written by greedy decoding: the argmax after the prompt ("I") does not begin "{good}"
    dist = {"P?": {"I": 0.6, "{": 0.4}, "P?{": {"good": 0.7, "bad": 0.3}}
    steered = Steered(lambda t: {k: math.log(v) for k, v in dist.get(t, {}).items()}, {"P?": "{good}"},
                      vocab=["I", "{", "good", "bad", "}"])
    with pytest.warns(LLMSurrogateWarning, match="1 no confidence"):
        out = lookahead.forecast(["P?"], steered)
    assert out["token_status"].iloc[0] == "first_token_mismatch" and math.isnan(out["p_first_token"].iloc[0])
    assert out["p_label_token"].iloc[0] == pytest.approx(0.7, rel=1e-6)

    # a backend that cannot scan its vocabulary (as VLLMBackend, an HTTP endpoint): p_first_token is
    # the likeliest token spelled by the answer's start where it exceeds 1/2 (then it is the argmax),
    # else NaN with the reason; p_label_token is read as on any backend
    steps = paper_format_steps("R?", ["{", "bad", "}", "\n", "{", "0.4", "}"], first={"{": 0.9, "x": 0.1},
                               label_at=1, label={"bad": 0.75, "good": 0.25})
    steps.update(paper_format_steps("S?", ["{", "good", "}"], first={"{": 0.5, "{g": 0.3, "x": 0.2},
                                    label_at=1, label={"good": 0.6, "bad": 0.4}))
    steps.update(paper_format_steps("T?", ["{g", "ood", "}"], first={"{g": 0.55, "{": 0.45}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        out = lookahead.forecast(["R?", "S?", "T?"], Delegate(distribution_backend(steps)))
    assert any(str(w.message).startswith("p_first_token is NaN for 1 of 3 answers: Delegate cannot scan its whole "
                                         "vocabulary") for w in caught)
    assert out["token_status"].tolist() == ["ok", "first_token_uncertain", "label_token_unseen"]
    assert out.attrs["p_first_token_method"] == "above_half"
    assert "full_vocabulary_scan" in out.attrs["token_probabilities"]
    np.testing.assert_allclose(out["p_first_token"][[0, 2]], [0.9, 0.55], rtol=1e-6)  # "{g" is spelled by "{good}"
    np.testing.assert_allclose(out["p_label_token"][:2], [0.75, 0.6], rtol=1e-6)
    assert math.isnan(out["p_first_token"].iloc[1])
    # generation only: both NaN, both reported
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        out = lookahead.forecast(["R?"], Delegate(distribution_backend(steps), scoring=False))
    said = [str(w.message) for w in caught]
    assert "p_first_token is NaN for 1 of 1 answers: Delegate has no next_token_logprobs" in said
    assert any(m.startswith("p_label_token is NaN: Delegate has no answer_tokens") for m in said)
    assert out["token_status"].iloc[0] == "label_token_unavailable, first_token_unavailable"
    assert out.attrs["p_first_token_method"] == "none"
    assert out[["p_first_token", "p_label_token"]].isna().all().all()


# --- a real tiny transformers model --------------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmsurrogate import testing  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402


class Counting:
    """Counts the model calls of a TransformersBackend (generation and next-token scoring); it
    declares the vocabulary scan its inner backend can do."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.identity = inner.identity
        self.tokenizer = inner.tokenizer
        self.full_vocabulary_scan = inner.vocab_size

    def generate(self, prompts, max_new_tokens=16):
        self.calls += 1
        return self.inner.generate(prompts, max_new_tokens=max_new_tokens)

    def next_token_logprobs(self, prompts, token_ids):
        self.calls += 1
        return self.inner.next_token_logprobs(prompts, token_ids)

    def answer_tokens(self, keys):  # the tokenizer only
        return self.inner.answer_tokens(keys)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = testing.build_model(tmp_path_factory.mktemp("forecast_model") / "gpt2", "gpt2", seed=3)
    return TransformersBackend(path, device="cpu", batch_size=4)


@pytest.mark.filterwarnings("ignore:.*answers have no news label")
def test_forecast_on_a_tiny_model_reports_unparsed_answers(tiny, tmp_path):
    counting = Counting(tiny)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        out = lookahead.forecast(NEWS, counting, cache=Cache(tmp_path), max_new_tokens=12)
    assert counting.calls > 0
    # the answers are the backend's greedy continuations of the rendered prompts
    assert out["answer"].tolist() == tiny.generate(prompts_of(NEWS), max_new_tokens=12)
    # each row's status is what the parser says about its answer
    for answer, status, signal in zip(out["answer"], out["status"], out["signal"]):
        parsed = lookahead.parse_answer(answer)
        want = {(True, True): "ok", (True, False): "no_confidence", (False, True): "no_label",
                (False, False): "unparsed"}[(parsed.label is not None, not math.isnan(parsed.confidence))]
        assert status == want
        assert (math.isnan(signal) and parsed.label is None) or signal == parsed.signal
    no_label = int(out["label"].isna().sum())
    assert no_label >= 2  # a random 2-layer model does not write "{good}"
    assert out.attrs["unparsed_label"] == no_label
    assert any(f"{no_label} of 3 answers have no news label" in str(w.message) for w in caught)
    # rerun from the cache: no generation
    counting.calls = 0
    again = lookahead.forecast(NEWS, counting, cache=Cache(tmp_path), max_new_tokens=12)
    assert counting.calls == 0
    pd.testing.assert_frame_equal(again, out)
    # another answer length is another cache entry
    lookahead.forecast(NEWS, counting, cache=Cache(tmp_path), max_new_tokens=5)
    assert counting.calls > 0
    assert np.isnan(out.loc[out["status"] == "unparsed", "signal"]).all()


# --- token probabilities on a real tiny transformers model, by hand ------------------------------

def hand_next_token(path, texts):
    """Next-token probabilities after each text: an explicit float64 softmax of one forward pass
    of the model (transformers directly, no backend), the text encoded as the backend does."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    V = model.config.vocab_size
    out = []
    for text in texts:
        ids = tok(text, add_special_tokens=True)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1, :V].double()
        out.append(torch.softmax(logits, -1).numpy())
    return tok, V, out


class ScriptedHF(TransformersBackend):
    """A real tiny model whose answers are given (the paper's format), scored by the model."""

    def __init__(self, path, answers, **kw):
        super().__init__(path, **kw)
        self.answers = answers
        self.identity = {**self.identity, "scripted": True}

    def generate(self, prompts, max_new_tokens=16):
        return [self.answers[p] for p in prompts]


@pytest.mark.filterwarnings("ignore:.*answers have no news label")
def test_p_first_token_by_hand_on_a_tiny_model(tiny, tmp_path):
    counting = Counting(tiny)
    out = lookahead.forecast(NEWS, counting, cache=Cache(tmp_path), max_new_tokens=8)
    tok, V, probs = hand_next_token(tiny.path, out["prompt"].tolist())
    for answer, p_first, status, q in zip(out["answer"], out["p_first_token"], out["token_status"], probs):
        # greedy decoding: the first generated token is the argmax; its text begins the answer
        top = int(np.argmax(q))
        assert answer.lstrip().startswith(tok.decode([top]).strip())
        assert p_first == pytest.approx(q.max(), rel=1e-5)
        assert "first_token" not in status
    counting.calls = 0
    again = lookahead.forecast(NEWS, counting, cache=Cache(tmp_path), max_new_tokens=8)
    assert counting.calls == 0  # generation and both scans come from the cache
    pd.testing.assert_frame_equal(again, out)


@pytest.mark.parametrize("arch,kind", [("gpt2", "bpe"), ("llama", "metaspace")])
def test_p_label_token_by_hand_on_a_tiny_model(arch, kind, tmp_path):
    path = testing.build_model(tmp_path / arch, arch, tokenizer_kind=kind, seed=5)
    prompts = prompts_of(NEWS)
    answers = ["{good}\n{0.9}\n{Loan boosts prospects.}", "{ Bad}\n{0.2}", "{Neutral}\n{0.5}"]
    be = ScriptedHF(path, dict(zip(prompts, answers)), device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMSurrogateWarning)
        out = lookahead.forecast(NEWS, be, cache=Cache(tmp_path / "cache"))
    assert out["label"].tolist() == ["good", "bad", "neutral"]
    tok, V, after_prompt = hand_next_token(path, prompts)
    texts = {t: tok.decode([t]) for t in range(V)}
    for i, (lead, word) in enumerate([("", "good"), (" ", "Bad"), ("", "Neutral")]):
        # the first token of the written label word: the likeliest token spelled by a prefix of it
        # (with the space before it, if any token starts so), after the prompt and the text before it
        cands = [t for t, s in texts.items() if any(s == lead + word[:j] for j in range(1, len(word) + 1))]
        prefix = "{" if cands or not lead else "{ "
        if not cands:
            cands = [t for t, s in texts.items() if any(s == word[:j] for j in range(1, len(word) + 1))]
        assert cands
        _, _, (q,) = hand_next_token(path, [prompts[i] + prefix])
        assert out["p_label_token"].iloc[i] == pytest.approx(q[cands].max(), rel=1e-5), (i, [texts[c] for c in cands])
        # p_first_token: the maximum after the prompt, but these answers are not the model's greedy
        # ones, so where its argmax does not begin the answer the value is refused (a special token,
        # skipped in decoding, cannot be refuted)
        top = int(np.argmax(after_prompt[i]))
        if top in tok.all_special_ids or answers[i].startswith(texts[top].strip()):
            assert out["p_first_token"].iloc[i] == pytest.approx(after_prompt[i].max(), rel=1e-5)
        else:
            assert math.isnan(out["p_first_token"].iloc[i]) and "first_token_mismatch" in out["token_status"].iloc[i]


def test_p_label_token_through_vllm_equals_transformers(tmp_path, stand_in):
    """VLLMBackend (on the stand-in for vLLM's API of tests/llm/test_llm_vllm.py, numbers from the same
    real model) gives the transformers backend's p_label_token; it cannot scan its vocabulary, so
    p_first_token is read only above 1/2 (never, on a random model) and reported."""
    from llmsurrogate.llm.vllm import VLLMBackend

    path = testing.build_model(tmp_path / "m", "gpt2", seed=1, context=512)
    prompts = prompts_of(NEWS)
    answers = dict(zip(prompts, ["{good}\n{0.9}", "{ Bad}\n{0.2}", "{neutral}\n{0.5}"]))

    class ScriptedVLLM(VLLMBackend):
        def generate(self, prompts, max_new_tokens=16):
            return [answers[p] for p in prompts]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LLMSurrogateWarning)
        via_vllm = lookahead.forecast(NEWS, ScriptedVLLM(path, max_logprobs=5))
    via_hf = lookahead.forecast(NEWS, ScriptedHF(path, answers, device="cpu"))
    np.testing.assert_allclose(via_vllm["p_label_token"], via_hf["p_label_token"], rtol=1e-5)
    assert via_vllm.attrs["p_first_token_method"] == "above_half"
    assert via_vllm["p_first_token"].isna().all() and (via_vllm["token_status"] == "first_token_uncertain").all()
    assert any("p_first_token is NaN for 3 of 3 answers: ScriptedVLLM cannot scan" in str(w.message) for w in caught)
