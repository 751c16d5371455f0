"""The answer-probability LAP of the paper's later version (docs/methods/lookahead.md §1.5.1):
the next-token mass on the directional answers after a date-only recall query, against exact
probabilities (CallableBackend) and a hand computation from an explicit forward pass of a tiny model."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from llmsurrogate import lookahead
from llmsurrogate.exceptions import InvalidArgumentError
from llmsurrogate.llm import CallableBackend
from llmsurrogate.llm.cache import Cache

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VOCAB = [" up", "up", " down", "down", " flat", "X"]


def oracle(prompt):
    # P(" up") = 0.3, P("up") = 0.1, P(" down") = 0.2, the rest elsewhere; "KODK" prompts: all on " flat"
    if "KODK" in prompt:
        return {" flat": 0.0}
    return {" up": math.log(0.3), "up": math.log(0.1), " down": math.log(0.2), "X": math.log(0.4)}


def test_recall_prompt_and_template_errors():
    q = lookahead.recall_prompt("2020-07-28T15:00", "Eastman Kodak Company", "KODK")
    assert q == ("On 2020-07-28, did the stock price of Eastman Kodak Company (KODK) go up or down? "
                 "Answer with one word, up or down.\nAnswer:")
    assert "2021-01-04" in lookahead.recall_prompt("2021-01-04", "A", "B", template="{date:%Y-%m-%d} {ticker}?")
    with pytest.raises(InvalidArgumentError, match="unknown field"):
        lookahead.recall_prompt("2021-01-04", "A", "B", template="{date} {headline}")
    with pytest.raises(InvalidArgumentError, match="company_name"):
        lookahead.recall_prompt("2021-01-04", "", "B")


def test_answer_lap_is_the_mass_on_the_directional_answers():
    be = CallableBackend(oracle, vocab=VOCAB)
    prompts = [lookahead.recall_prompt("2020-07-28", "Acme", "ACME"), lookahead.recall_prompt("2020-07-28", "Kodak", "KODK")]
    got = lookahead.answer_lap(prompts, be)
    np.testing.assert_allclose(got, [0.6, 0.0], atol=1e-7)
    d = lookahead.answer_lap(prompts, be, details=True)
    np.testing.assert_allclose(d["p_up"], [0.4, 0.0], atol=1e-7)   # " up" + "up"
    np.testing.assert_allclose(d["p_down"], [0.2, 0.0], atol=1e-7)
    np.testing.assert_allclose(d["score"], d["p_up"] + d["p_down"], atol=1e-12)
    np.testing.assert_allclose(lookahead.answer_lap(prompts, be, ["flat"]), [0.0, 1.0], atol=1e-7)


def test_answer_lap_errors():
    be = CallableBackend(oracle, vocab=VOCAB)
    with pytest.raises(InvalidArgumentError, match="`answers`"):
        lookahead.answer_lap(["q"], be, "up")
    with pytest.raises(InvalidArgumentError, match="repeats"):
        lookahead.answer_lap(["q"], be, ["up", "up"])
    with pytest.raises(InvalidArgumentError, match="'sideways' has no single-token spelling"):
        lookahead.answer_lap(["q"], be, ["up", "sideways"])
    with pytest.raises(InvalidArgumentError, match="not one string"):
        lookahead.answer_lap("q", be)


torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmsurrogate import testing  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    path = testing.build_model(tmp_path_factory.mktemp("answer_lap_model") / "llama", "llama", seed=7)
    return TransformersBackend(path, device="cpu", batch_size=2)


def by_hand(backend, prompt, keys):
    """One explicit forward pass; float64 softmax at the last position; the mass of every vocabulary
    token that decodes to one of ``keys`` (surrounding spaces ignored), key by key."""
    tok = backend.tokenizer
    ids = tok(prompt, add_special_tokens=True)["input_ids"]
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0, -1, : backend.vocab_size].double()
    p = torch.softmax(logits, dim=-1).numpy()
    out = {}
    for key in keys:
        spelled = [i for i in range(backend.vocab_size) if tok.decode([i]).strip() == key]
        out[key] = (float(p[spelled].sum()), set(spelled))
    return out


def test_answer_lap_on_a_tiny_model_equals_a_hand_computation(backend, tmp_path):
    keys = ["A", "B"]  # single tokens of the tiny vocabulary ("up"/"down" are not)
    prompts = [lookahead.recall_prompt(d, c, t) for d, c, t in
               [("2020-07-28", "Eastman Kodak Company", "KODK"), ("2021-03-02", "Acme Corp", "ACME"),
                ("2019-11-15", "Borealis Inc", "BORL")]]
    got = lookahead.answer_lap(prompts, backend, keys, details=True, cache=Cache(tmp_path))
    spell = backend.answer_tokens(keys)
    for i, prompt in enumerate(prompts):
        hand = by_hand(backend, prompt, keys)
        for key in keys:
            mass, ids = hand[key]
            assert {tid for _, tid in spell[key]} == ids  # the backend spells the key exactly as by hand
            assert got[f"p_{key}"][i] == pytest.approx(mass, rel=1e-5)
        assert got["score"][i] == pytest.approx(sum(m for m, _ in hand.values()), rel=1e-5)
    assert (got["score"] > 0).all() and (got["score"] < 1).all()
    # from the cache: the same numbers, no model pass
    cache = Cache(tmp_path)
    again = lookahead.answer_lap(prompts, backend, keys, cache=cache)
    assert cache.misses == 0 and cache.hits == len(prompts)
    np.testing.assert_array_equal(again, got["score"].to_numpy())
    with pytest.raises(InvalidArgumentError, match="no single-token spelling"):
        lookahead.answer_lap(prompts, backend, ["sideways"])
