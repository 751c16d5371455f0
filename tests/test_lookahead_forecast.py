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
