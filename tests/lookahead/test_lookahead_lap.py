"""LAP (Min-K% Prob of prompt tokens), the Rust reduction, the paper's prompts and answer parsing
(docs/methods/lookahead.md §1, §3; spec lookahead.md §6.1-§6.3, §6.7)."""

from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from llmsurrogate import _core, lookahead
from llmsurrogate.exceptions import InvalidArgumentError, LLMSurrogateWarning, ShapeError
from llmsurrogate.lookahead import lap_from_logprobs

# The paper's Figures I and II as docs/methods/lookahead.md §3.1-§3.2 quote them (inside the repository,
# so the test runs on every clone).
METHODS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "methods" / "lookahead.md"


def ragged(texts_lp):
    """(values float32 with a NaN first token per text, offsets) from per-text scored values."""
    vals, offs = [], [0]
    for lp in texts_lp:
        vals += [np.nan] + list(lp)
        offs.append(len(vals))
    return np.array(vals, dtype=np.float32), np.array(offs, dtype=np.int64)


def reference(values, offsets, k, skip_first=True):
    """Independent NumPy Min-K%: (min_k, min_k_arith, n, k) per text, sorted in float64."""
    out = []
    for i in range(len(offsets) - 1):
        seg = np.asarray(values[offsets[i]: offsets[i + 1]], dtype=np.float64)
        if skip_first:
            seg = seg[1:]
        n = len(seg)
        if n == 0:
            out.append((np.nan, np.nan, 0, 0))
            continue
        kk = max(1, int(n * k))
        bottom = np.sort(seg)[:kk]
        out.append((bottom.mean(), np.exp(bottom).mean(), n, kk))
    return [np.array(c) for c in zip(*out)] if out else [np.zeros(0)] * 4


# --- §6.1 Min-K% arithmetic --------------------------------------------------------------------


def test_spec_vectors():
    v, o = ragged([[-1, -2, -3, -4, -5, -0.1, -0.2, -0.3, -0.4, -0.5], [-0.5, -7.25, -0.01, -3.0]])
    d = lap_from_logprobs((v, o), k=0.2, details=True)
    assert d["n_scored"].tolist() == [10, 4] and d["k"].tolist() == [2, 1]
    assert d["min_k"][0] == pytest.approx(-4.5, abs=1e-6)
    assert d["score"][0] == pytest.approx(0.011108996538, abs=1e-9)
    assert d["min_k_arith"][0] == pytest.approx(0.012526792944, abs=1e-9)
    assert d["score"][1] == pytest.approx(0.000710174389, abs=1e-10)
    arith = lap_from_logprobs((v, o), agg="arith")
    assert arith[0] == pytest.approx(0.012526792944, abs=1e-9)
    # float64 input: the spec's digits exactly
    d64 = lap_from_logprobs((v.astype(np.float64), o), details=True)
    assert d64["min_k"][0] == -4.5 and d64["score"][1] == pytest.approx(math.exp(-7.25), rel=1e-15)


@pytest.mark.parametrize("n,k", [(4, 1), (5, 1), (9, 1), (10, 2), (11, 2), (1, 1), (2, 1), (60, 12)])
def test_k_is_floor_of_k_n_with_at_least_one(n, k):
    v, o = ragged([-np.arange(1, n + 1, dtype=float)])
    d = lap_from_logprobs((v, o), details=True)
    assert d["k"][0] == k and d["n_scored"][0] == n
    assert d["min_k"][0] == pytest.approx(-np.arange(n, n - k, -1).mean())


def test_reference_compatibility_with_both_repositories():
    rng = np.random.default_rng(3)
    for n in (5, 7, 23, 100):
        lp = -rng.gamma(2.0, 2.0, n)
        v, o = ragged([lp])
        mink = lap_from_logprobs((v, o), details=True)["min_k"][0]
        lp32 = lp.astype(np.float32).astype(np.float64)
        zjysteven = np.mean(np.sort(lp32)[: int(len(lp32) * 0.2)])
        swj0419 = -np.mean(np.sort(lp32)[: int(len(lp32) * 0.2)])
        assert mink == pytest.approx(zjysteven, rel=1e-12) and mink == pytest.approx(-swj0419, rel=1e-12)


def test_permutation_invariance_and_monotonicity():
    rng = np.random.default_rng(0)
    lp = -rng.gamma(2.0, 1.5, 30)
    base = lap_from_logprobs(ragged([lp]))[0]
    for _ in range(5):
        assert lap_from_logprobs(ragged([rng.permutation(lp)]))[0] == base
    lower = lp.copy()
    lower[np.argmin(lp)] -= 1.0  # lowering a bottom token lowers LAP
    assert lap_from_logprobs(ragged([lower]))[0] < base
    higher = lp.copy()
    higher[np.argmax(lp)] += 0.05  # a token outside the bottom K% does not matter
    assert lap_from_logprobs(ragged([higher]))[0] == base


def test_method_mean_uses_all_tokens():
    lp = [-1.0, -2.0, -3.0, -6.0]
    assert lap_from_logprobs(ragged([lp]), method="mean")[0] == pytest.approx(math.exp(-3.0), rel=1e-7)
    d = lap_from_logprobs(ragged([lp]), k=0.5, method="mean", details=True)
    assert d["k"][0] == 4  # K is ignored: every scored token


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [0, 0.0, -0.2, 1.0000001, 1.5, 20, float("nan"), float("inf"), True, "0.2", None])
def test_k_outside_unit_interval_is_a_clear_error(k):
    with pytest.raises(InvalidArgumentError, match="`k`"):
        lap_from_logprobs(ragged([[-1.0, -2.0]]), k=k)


def test_k_as_percentage_gets_a_hint():
    with pytest.raises(InvalidArgumentError, match=r"did you mean 0\.2\?"):
        lap_from_logprobs(ragged([[-1.0, -2.0]]), k=20)
    assert lap_from_logprobs(ragged([[-1.0, -2.0]]), k=1)[0] == pytest.approx(math.exp(-1.5))


def test_one_token_and_empty_texts_are_nan_with_a_warning():
    v = np.array([np.nan, np.nan, -1.0, -2.0], dtype=np.float32)
    o = np.array([0, 1, 1, 4], dtype=np.int64)  # one-token text, empty text, normal text
    with pytest.warns(LLMSurrogateWarning, match=r"2 of 3 texts have no scored token.*position 0"):
        d = lap_from_logprobs((v, o), details=True)
    assert np.isnan(d["score"][:2]).all() and d["n_scored"].tolist() == [0, 0, 2] and d["k"].tolist() == [0, 0, 1]
    assert d["score"][2] == pytest.approx(math.exp(-2.0))


def test_bad_ragged_arrays_are_clear_errors():
    v, o = ragged([[-1.0, -2.0], [-3.0]])
    bad = v.copy()
    bad[4] = np.nan  # a NaN that is not a first token
    with pytest.raises(InvalidArgumentError, match=r"text 1 has a NaN log-probability at position 4"):
        lap_from_logprobs((bad, o))
    with pytest.raises(InvalidArgumentError, match="skip_first"):
        lap_from_logprobs((v, o), skip_first=False)
    with pytest.raises(InvalidArgumentError, match="non-decreasing"):
        lap_from_logprobs((v, np.array([0, 3, 2])))
    with pytest.raises(InvalidArgumentError, match="past the end"):
        lap_from_logprobs((v, np.array([0, 3, 99])))
    with pytest.raises(InvalidArgumentError, match="`offsets` is empty"):
        lap_from_logprobs((v, np.array([], dtype=np.int64)))
    with pytest.raises(ShapeError):
        lap_from_logprobs((v.reshape(1, -1), o))
    with pytest.raises(InvalidArgumentError, match="RaggedLogprobs"):
        lap_from_logprobs([v, o])
    with pytest.raises(InvalidArgumentError, match="`method`"):
        lap_from_logprobs((v, o), method="min-k")
    with pytest.raises(InvalidArgumentError, match="needs `moments`"):
        lap_from_logprobs((v, o), method="min_k_plus_plus")
    with pytest.raises(InvalidArgumentError, match="min_k_plus_plus' only"):
        lap_from_logprobs((v, o), moments=(np.zeros(5), np.ones(5)))
    with pytest.raises(ShapeError, match="moments"):
        lap_from_logprobs((v, o), method="min_k_plus_plus", moments=(np.zeros(2), np.ones(2)))
    # no texts: empty scores
    assert lap_from_logprobs((np.zeros(0, np.float32), np.array([0]))).shape == (0,)


# --- the Rust kernel against NumPy --------------------------------------------------------------


def random_ragged(rng, n_texts, max_len, dtype):
    lens = rng.integers(0, max_len + 1, n_texts)
    lens[: min(3, n_texts)] = [0, 1, 2][: min(3, n_texts)]  # empty, one-token, two-token texts
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    values = -rng.gamma(1.5, 2.0, offsets[-1])
    values[rng.random(offsets[-1]) < 0.02] = -np.inf  # probability 0 in float32
    values[offsets[:-1][lens > 0]] = np.nan
    # ties
    values[rng.random(offsets[-1]) < 0.1] = -1.0
    return values.astype(dtype), offsets


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [0.05, 0.2, 0.5, 1.0])
def test_kernel_equals_numpy_reference(dtype, k):
    rng = np.random.default_rng(int(k * 100) + (dtype == np.float32))
    values, offsets = random_ragged(rng, 3000, 90, dtype)
    kern = _core.lookahead_min_k_f32 if dtype == np.float32 else _core.lookahead_min_k_f64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # -inf - -inf in the reference's exp/mean
        ref = reference(values, offsets, k)
    got = kern(values, offsets, k, True, None)
    np.testing.assert_array_equal(got[2], ref[2])
    np.testing.assert_array_equal(got[3], ref[3])
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got[1], ref[1], rtol=1e-12, equal_nan=True)
    # skip_first=False on arrays without NaN
    clean = np.where(np.isnan(values), -0.25, values).astype(dtype)
    got = kern(clean, offsets, k, False, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = reference(clean, offsets, k, skip_first=False)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(got[3], ref[3])


def test_kernel_is_deterministic_across_thread_counts():
    rng = np.random.default_rng(11)
    values, offsets = random_ragged(rng, 50_000, 80, np.float32)
    one = _core.lookahead_min_k_f32(values, offsets, 0.2, True, 1)
    for n_jobs in (2, 4):
        many = _core.lookahead_min_k_f32(values, offsets, 0.2, True, n_jobs)
        for a, b in zip(one, many):
            assert a.tobytes() == b.tobytes()


def test_float32_selection_gives_the_bits_of_the_float64_path():
    """The float32 kernel selects with AVX-512 where the CPU has it (rust/lookahead/select.rs), the
    float64 one on the portable scalar path: on the same (widened) values they give the same bits,
    for text lengths around the 16-value chunks, K up to 1 (k past 64 on the scalar path), ties,
    -inf, -0.0 and 0.0, and a NaN past the first chunk is still reported."""
    rng = np.random.default_rng(23)
    lens = np.concatenate([np.arange(0, 70), [79, 80, 81, 95, 96, 97, 127, 128, 129, 320, 321, 1000, 4097]])
    texts = []
    for n in np.repeat(lens, 4):
        x = -rng.exponential(3.0, n)
        x[rng.random(n) < 0.3] = -0.5                   # ties
        x[rng.random(n) < 0.02] = -np.inf
        x[rng.random(n) < 0.02] = -0.0
        x[rng.random(n) < 0.02] = 0.0
        texts.append(x.astype(np.float32).tolist())
    v, o = ragged(texts)
    for k in (0.01, 0.05, 0.2, 0.5, 1.0):
        f32 = _core.lookahead_min_k_f32(v, o, k, True, 1, True)
        f64 = _core.lookahead_min_k_f64(v.astype(np.float64), o, k, True, 1, True)
        for a, b in zip(f32, f64):
            assert a.tobytes() == b.tobytes(), k
    bad = v.copy()
    t = int(np.flatnonzero(np.diff(o) > 40)[0])
    bad[o[t] + 37] = np.nan
    with pytest.raises(InvalidArgumentError, match=rf"text {t} has a NaN log-probability at position {o[t] + 37}"):
        lap_from_logprobs((bad, o))


def test_positive_logprobs_are_found_anywhere_among_nans():
    v, o = ragged([[-1.0] * 40, [-2.0] * 33])
    for pos, bad in [(len(v) - 1, 1e-30), (3, np.inf), (41, 5.0)]:
        w = v.copy()
        w[pos] = bad
        with pytest.raises(InvalidArgumentError, match=rf"positive log-probability \({bad:g} at position {pos}, 1 in all\)"):
            lap_from_logprobs((w, o))
    w = v.copy()
    w[[2, 50]] = [0.0, -0.0]                            # zero is a log-probability (p = 1)
    assert lap_from_logprobs((w, o), k=1.0).shape == (2,)
    with pytest.warns(LLMSurrogateWarning, match="no scored token"):    # only first tokens: NaN, no error
        assert np.isnan(lap_from_logprobs((np.full(3, np.nan, np.float32), [0, 1, 2, 3]))).all()


@pytest.mark.slow
def test_lap_reduction_timing_one_million_texts():
    """Rough timing for the README (printed, not asserted): 1,000,000 texts of 60 tokens."""
    rng = np.random.default_rng(0)
    n, T = 1_000_000, 60
    values = (-rng.gamma(1.5, 2.0, n * T)).astype(np.float32)
    values[::T] = np.nan
    offsets = np.arange(0, n * T + 1, T, dtype=np.int64)
    t0 = time.perf_counter()
    ours = lap_from_logprobs((values, offsets), k=0.2)
    t_rust = time.perf_counter() - t0
    # NumPy on the equal-length case (its best case: one 2-d partition, no ragged loop)
    t0 = time.perf_counter()
    m = values.reshape(n, T)[:, 1:].astype(np.float64)
    kk = int((T - 1) * 0.2)
    bottom = np.partition(m, kk - 1, axis=1)[:, :kk]
    np_lap = np.exp(bottom.mean(axis=1))
    t_numpy = time.perf_counter() - t0
    np.testing.assert_allclose(ours, np_lap, rtol=1e-12)
    print(f"\nLAP reduction, {n:,} texts x {T} tokens (float32): Rust {t_rust:.3f} s "
          f"({_core.resolve_threads(None)} threads), NumPy 2-d partition {t_numpy:.3f} s")


# --- prompts (§3.1, §3.2) -----------------------------------------------------------------------

KODAK = (
    'Here is a piece of news: "(2020-07-28) Kodak Triples on Loan to Make Covid-19 Drug Ingredients."\n'
    "Do you think this news is good, bad, or neutral for the stock price of Eastman Kodak Company (KODK) in the "
    "short term?\n"
    "Write your answer as:\n"
    "{good/ bad / neutral}\n"
    "{confidence (0-1):}\n"
    "{explanation (less than 25 words)}"
)

OCEANEERING = (
    "Here is an excerpt from the earnings call transcript of Oceaneering International Inc. (OII):\n"
    "Q1 2020 Oceaneering International Inc. Earnings Call\n"
    '"We began 2020 with solid fundamentals"\n'
    "Do you think the company Oceaneering International Inc. (OII) plans to increase or decrease its capital "
    "expenditures over the next year?\n"
    "Write your answer as:\n"
    "{significantly_increase / slightly_increase / no_change / slightly_decrease / significantly_decrease}\n"
    "{confidence (0\u20131):}\n"
    "{explanation (less than 25 words):}"
)


def test_news_prompt_golden_kodak():
    import datetime

    p = lookahead.news_prompt("Kodak Triples on Loan to Make Covid-19 Drug Ingredients.", "2020-07-28",
                              "Eastman Kodak Company", "KODK")
    assert p == KODAK
    assert p.encode("utf-8") == KODAK.encode("utf-8")
    for d in (datetime.date(2020, 7, 28), datetime.datetime(2020, 7, 28, 15, 59), np.datetime64("2020-07-28")):
        assert lookahead.news_prompt("Kodak Triples on Loan to Make Covid-19 Drug Ingredients.", d,
                                     "Eastman Kodak Company", "KODK") == KODAK
    ret = lookahead.news_prompt("h", "2020-07-28", "C", "T", variant="return")
    assert "for the stock return of C (T) in the short term?" in ret and "stock price" not in ret
    with pytest.raises(InvalidArgumentError, match="`date`"):
        lookahead.news_prompt("h", "July 28", "C", "T")
    with pytest.raises(InvalidArgumentError, match="`headline`"):
        lookahead.news_prompt("", "2020-07-28", "C", "T")


def test_earnings_call_prompt_golden_oceaneering():
    p = lookahead.earnings_call_prompt("We began  2020\n with solid\tfundamentals", "Oceaneering International Inc.",
                                       "OII", "Q1 2020 Oceaneering International Inc. Earnings Call")
    assert p.encode("utf-8") == OCEANEERING.encode("utf-8")
    assert "(0\u20131)" in p and "(0-1)" not in p
    words = " ".join(f"w{i}" for i in range(600))
    p = lookahead.earnings_call_prompt(words, "C", "T", "E")
    assert '"' + " ".join(f"w{i}" for i in range(512)) + '"\n' in p and "w512" not in p
    assert lookahead.first_words(words, 500).split()[-1] == "w499"


def test_templates_are_byte_exact_to_the_methods_page():
    """The templates equal the prompts quoted in docs/methods/lookahead.md §3.1-§3.2 (Figures I and II of
    the paper), byte for byte; the page shows the rendered braces (``{good/ bad / neutral}``) where the
    ``str.format`` templates double them."""
    import re

    text = METHODS_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```\n(Here is.*?)\n```", text, re.S)
    assert len(blocks) == 2
    as_shown = [t.replace("{{", "{").replace("}}", "}") for t in (lookahead.NEWS_TEMPLATE,
                                                                  lookahead.EARNINGS_CALL_TEMPLATE)]
    assert [b.encode("utf-8") for b in blocks] == [s.encode("utf-8") for s in as_shown]


# --- answer parsing (§3.3) ----------------------------------------------------------------------

NEWS_CASES = [
    ("{good}\n{1.0}\n{Loan to produce Covid-19 drug ingredients boosts prospects.}", "good", 1.0, 1.0),
    ("{ Good }\n{0.8}\n{x}", "good", 1.0, 0.8),
    ("good\n0.7\nbecause", "good", 1.0, 0.7),
    ("{neutral}\n{0.5}", "neutral", 0.0, 0.5),
    ("{bad.}\n{0.9}\n{Weak guidance.}", "bad", -1.0, 0.9),
    ("{BAD}", "bad", -1.0, math.nan),  # missing confidence
    ("{good}\n{85}", "good", 1.0, 0.85),  # a percentage
    ("{good} {0.6} {all on one line}", "good", 1.0, 0.6),
    ("{good}\n{confidence (0-1): 0.75}", "good", 1.0, 0.75),
    ("\n\n  {neutral}\n{.9}", "neutral", 0.0, 0.9),
    ("{goods}\n{0.5}", None, math.nan, 0.5),  # not a label
    ("I cannot answer that.", None, math.nan, math.nan),
    ("", None, math.nan, math.nan),
    ("{good}\n{150}", "good", 1.0, math.nan),  # out of range
    ("{good}\n{high}", "good", 1.0, math.nan),
]

CAPEX_CASES = [
    ("{significantly_decrease}\n{0.8}\n{Cutting capex.}", "significantly_decrease", -1.0, 0.8),
    ("{slightly increase}\n{0.6}", "slightly_increase", 0.5, 0.6),
    ("{Slightly-Decrease}\n{0.7}", "slightly_decrease", -0.5, 0.7),
    ("{no_change}\n{1}", "no_change", 0.0, 1.0),
    ("{No change.}\n{90}", "no_change", 0.0, 0.9),
    ("{SIGNIFICANTLY_INCREASE}", "significantly_increase", 1.0, math.nan),
    ("{increase}\n{0.5}", None, math.nan, 0.5),
    ("{good}\n{0.5}", None, math.nan, 0.5),
]


def _same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b)


@pytest.mark.parametrize("text,label,signal,conf", NEWS_CASES)
def test_parse_news_answers(text, label, signal, conf):
    p = lookahead.parse_answer(text, "news")
    assert p.label == label and _same(p.signal, signal) and _same(p.confidence, conf), p


@pytest.mark.parametrize("text,label,signal,conf", CAPEX_CASES)
def test_parse_earnings_call_answers(text, label, signal, conf):
    p = lookahead.parse_answer(text, "earnings_call")
    assert p.label == label and _same(p.signal, signal) and _same(p.confidence, conf), p


def test_parse_answers_counts_failures():
    texts = [t for t, *_ in NEWS_CASES]
    with pytest.warns(LLMSurrogateWarning, match=r"3 of 15 answers have no news label.*5 no confidence.*1 a confidence"):
        frame = lookahead.parse_answers(texts, "news")
    assert frame.attrs["unparsed_label"] == 3 and frame.attrs["rescaled_confidence"] == 1
    assert frame["signal"].tolist()[:2] == [1.0, 1.0]
    assert lookahead.parse_answer("{good}\n{85}").confidence_rescaled
    assert lookahead.parse_answer(None).label is None
    with pytest.raises(InvalidArgumentError, match="`task`"):
        lookahead.parse_answer("{good}", "capex")
    with pytest.raises(InvalidArgumentError, match="not one string"):
        lookahead.parse_answers("{good}")


# --- §6.3 a tiny model: Min-K% by hand, the backend, the cache -----------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmsurrogate import testing  # noqa: E402
from llmsurrogate.llm.cache import Cache  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402

TEXTS = [
    "The age is: 40 years old. The occupation is: manager.",
    "Answer:",
    "- The sex is: Female.",
    "The person works 40 hours per week in a private company and holds a bachelor degree.",
    "A",
]


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    path = testing.build_model(tmp_path_factory.mktemp("lap_model") / "llama", "llama", seed=7)
    return TransformersBackend(path, device="cpu", batch_size=2)


def by_hand(backend, text):
    """One explicit forward pass over the whole text, float64 log-softmax of the logits, the next
    tokens gathered; then Min-K% and Min-K%++ with Python sorting."""
    ids = backend.tokenizer(text, add_special_tokens=True)["input_ids"]
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0, :, : backend.vocab_size].double()
    lsm = torch.log_softmax(logits, dim=-1)[:-1]  # position t predicts token t + 1
    lp = lsm.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].numpy()
    p = lsm.exp()
    mu = (p * lsm).sum(-1)
    sigma = ((p * lsm**2).sum(-1) - mu**2).clamp_min(1e-12).sqrt()
    z = ((torch.tensor(lp) - mu) / sigma).numpy()
    return ids, lp, z


def mink(x, k):
    kk = max(1, int(len(x) * k))
    return float(np.mean(sorted(x)[:kk]))


@pytest.mark.parametrize("k", [0.2, 0.5])
def test_min_k_on_a_tiny_model_equals_a_hand_computation(backend, k):
    # the last text ("A") is one token here (this tokenizer adds no BOS): NaN with a warning
    with pytest.warns(LLMSurrogateWarning, match="1 of 5 texts have no scored token.*position 4"):
        got = lookahead.lap(TEXTS, backend, k=k, details=True)
    assert np.isnan(got["score"][4]) and got["n_scored"][4] == 0 and got["k"][4] == 0
    for i, text in enumerate(TEXTS[:4]):
        ids, lp, z = by_hand(backend, text)
        assert got["n_scored"][i] == len(ids) - 1
        assert got["min_k"][i] == pytest.approx(mink(lp, k), abs=2e-5)
        assert got["score"][i] == pytest.approx(math.exp(mink(lp, k)), rel=5e-5)
        assert lookahead.lap([text], backend, k=k, method="mean")[0] == pytest.approx(math.exp(lp.mean()), rel=5e-5)
    with pytest.warns(LLMSurrogateWarning, match="no scored token"):
        pp = lookahead.lap(TEXTS, backend, k=k, method="min_k_plus_plus")
    assert np.isnan(pp[4])
    for i, text in enumerate(TEXTS[:4]):
        _, _, z = by_hand(backend, text)
        assert pp[i] == pytest.approx(mink(z, k), abs=1e-4)
    # a short text exercises k = max(1, floor(K n))
    short = got[(got["n_scored"] > 0) & (got["n_scored"] < 5)]
    assert len(short) and (short["k"] == 1).all()


def test_moments_match_prompt_logprobs(backend):
    texts = TEXTS + [" ".join(["The age is 40."] * 120)]  # > 256 scored tokens: moments in chunks
    rag, mu, sigma = backend.prompt_logprob_moments(texts)
    plain = backend.prompt_logprobs(texts)
    assert rag.offsets[-1] - rag.offsets[-2] > 300
    np.testing.assert_array_equal(rag.offsets, plain.offsets)
    np.testing.assert_array_equal(rag.token_ids, plain.token_ids)
    np.testing.assert_allclose(rag.values, plain.values, atol=2e-5, equal_nan=True)
    first = rag.offsets[:-1]
    assert np.isnan(mu[first]).all() and np.isnan(sigma[first]).all()
    rest = np.setdiff1d(np.arange(len(mu)), first)
    assert (mu[rest] < 0).all() and (sigma[rest] > 0).all()
    # the long text's moments against one explicit float64 pass
    ids, lp, z = by_hand(backend, texts[-1])
    a, b = rag.offsets[-2] + 1, rag.offsets[-1]
    np.testing.assert_allclose((rag.values[a:b] - mu[a:b]) / sigma[a:b], z, atol=1e-4)


class Counting:
    """A backend proxy counting the model calls."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.identity = inner.identity

    def prompt_logprobs(self, prompts):
        self.calls += 1
        return self.inner.prompt_logprobs(prompts)

    def prompt_logprob_moments(self, prompts):
        self.calls += 1
        return self.inner.prompt_logprob_moments(prompts)


@pytest.mark.filterwarnings("ignore:1 of 5 texts have no scored token")
def test_lap_from_the_backend_equals_lap_from_cached_values(backend, tmp_path):
    direct = lookahead.lap(TEXTS, backend)
    counting = Counting(backend)
    first = lookahead.lap(TEXTS, counting, cache=Cache(tmp_path))
    assert counting.calls > 0
    np.testing.assert_array_equal(first, direct)
    assert np.isfinite(direct[:4]).all() and np.isnan(direct[4])
    counting.calls = 0
    cache = Cache(tmp_path)
    again = lookahead.lap(TEXTS, counting, cache=cache)
    assert counting.calls == 0 and cache.misses == 0  # second run: no model pass
    np.testing.assert_array_equal(again, direct)
    # another K, method or aggregation from the same cached values: still no model pass
    for kw in ({"k": 0.5}, {"method": "mean"}, {"agg": "arith"}):
        assert_same = lookahead.lap(TEXTS, counting, cache=Cache(tmp_path), **kw)
        np.testing.assert_array_equal(assert_same, lookahead.lap(TEXTS, backend, **kw))
    assert counting.calls == 0
    # the cached per-token values themselves reduce to the same LAP
    from llmsurrogate.llm.scoring import prompt_logprobs_cached

    rag = prompt_logprobs_cached(counting, TEXTS, cache=Cache(tmp_path))
    np.testing.assert_array_equal(lap_from_logprobs(rag), direct)
    assert counting.calls == 0
    # Min-K%++ is cached too
    pp = lookahead.lap(TEXTS, counting, method="min_k_plus_plus", cache=Cache(tmp_path))
    calls = counting.calls
    assert calls > 0
    pp2 = lookahead.lap(TEXTS, counting, method="min_k_plus_plus", k=0.2, cache=Cache(tmp_path))
    assert counting.calls == calls
    np.testing.assert_array_equal(pp, pp2)
    np.testing.assert_allclose(pp, lookahead.lap(TEXTS, backend, method="min_k_plus_plus"), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:1 of 5 texts have no scored token")
def test_min_k_plus_plus_needs_vocabulary_moments(backend):
    class TopKOnly:  # like vLLM: per-token log-probabilities, no vocabulary moments
        identity = {"backend": "topk", "model": "x"}

        def prompt_logprobs(self, prompts):
            return backend.prompt_logprobs(prompts)

    assert lookahead.lap(TEXTS[:2], TopKOnly()).shape == (2,)
    with pytest.raises(InvalidArgumentError, match=r"TopKOnly cannot give them.*prompt_logprob_moments"):
        lookahead.lap(TEXTS[:2], TopKOnly(), method="min_k_plus_plus")


def test_lap_checks_k_before_any_model_pass(backend):
    counting = Counting(backend)
    for bad in (0, 1.2, 20):
        with pytest.raises(InvalidArgumentError, match="`k`"):
            lookahead.lap(TEXTS, counting, k=bad)
    assert counting.calls == 0
    with pytest.raises(InvalidArgumentError, match="not one string"):
        lookahead.lap("one text", backend)


def test_the_arithmetic_mean_is_computed_only_where_returned_and_changes_no_bit():
    """The kernel skips one exp per bottom value unless agg='arith' or details=True: the geometric
    scores are the same bits either way, and the arithmetic ones equal the details column."""
    rng = np.random.default_rng(3)
    texts = [(-rng.exponential(2.0, int(n))).tolist() for n in rng.integers(1, 80, 300)]
    v, o = ragged(texts)
    plain = lap_from_logprobs((v, o), k=0.2)
    d = lap_from_logprobs((v, o), k=0.2, details=True)
    np.testing.assert_array_equal(plain, d["score"].to_numpy())
    np.testing.assert_array_equal(lap_from_logprobs((v, o), k=0.2, agg="arith"), d["min_k_arith"].to_numpy())
    _, arith_off, _, _ = _core.lookahead_min_k_f32(v, o, 0.2, True, 1, False)
    assert np.isnan(arith_off).all()


def test_lap_takes_every_progress_setting(capsys):
    """progress=True drew no bar but crashed (the cache was handed True as a callback); False and a
    callable work too, with the same scores."""
    from llmsurrogate.llm.base import RaggedLogprobs

    class WordLengths:  # one token per word, log p = -len(word)
        def prompt_logprobs(self, prompts):
            lp = [np.array([np.nan] + [-len(w) for w in p.split()[1:]], np.float32) for p in prompts]
            off = np.cumsum([0] + [len(v) for v in lp])
            return RaggedLogprobs(np.concatenate(lp), off, np.zeros(off[-1], np.int32))

    texts = ["the cat sat on the mat", "a big hippopotamus", "one two three"]
    calls = []
    runs = [lookahead.lap(texts, WordLengths(), k=0.2, progress=p)
            for p in (True, False, None, lambda label, done, total: calls.append((label, done, total)))]
    for r in runs[1:]:
        np.testing.assert_array_equal(r, runs[0])
    assert calls and calls[-1] == ("prompts", 3, 3)
    with pytest.raises(InvalidArgumentError, match="argument `progress`"):
        lookahead.lap(texts, WordLengths(), progress="yes")
