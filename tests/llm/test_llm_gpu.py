"""TransformersBackend on a CUDA GPU against the same model on the CPU (marked ``gpu``: they run
only where ``torch.cuda.is_available()``, and are reported as skipped elsewhere).

The CPU path is the reference: it is checked token by token against explicit forward passes in
``test_llm_hf.py``. Here the GPU path must give the same numbers (float32) or numbers within the
rounding of the narrower weights (bfloat16, float16), through every code path of the backend:
plain and shared-prefix batches, left and right padding, prompt log-probs, answers after forced
tokens, greedy generation, and the cached risk-score pipeline.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llmsurrogate import datasets, risk, testing  # noqa: E402
from llmsurrogate.llm.hf import TransformersBackend  # noqa: E402
from llmsurrogate.llm.prompts import multiple_choice_prompt  # noqa: E402
from llmsurrogate.llm.tasks import acs_income_task  # noqa: E402

pytestmark = pytest.mark.gpu

ROWS = datasets.load_acs_income_rows()
TASK = acs_income_task()
PROMPTS = [multiple_choice_prompt(TASK, r, q) for q in TASK.question.permutations()
           for r in ROWS.to_dict("records")[:20]] + ["Answer:", "A", "The age is: 40 years old.\nAnswer:"]
IDS = list(range(0, 300, 7))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu_models")
    return {arch: testing.build_model(root / arch, arch, seed=11) for arch in ("gpt2", "llama")}


@pytest.fixture(scope="module")
def cpu(models):
    return {arch: TransformersBackend(p, device="cpu") for arch, p in models.items()}


@pytest.fixture(scope="module")
def gpu(models):
    return {arch: TransformersBackend(p, device="cuda") for arch, p in models.items()}


def test_default_device_is_the_gpu(models):
    b = TransformersBackend(models["gpt2"])
    assert b.device.type == "cuda" and b.batch_size == 512 and b.token_budget == 65536  # the GPU defaults (issue 13)
    assert next(b.model.parameters()).is_cuda


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_next_token_logprobs_match_cpu(cpu, gpu, arch):
    ref = cpu[arch].next_token_logprobs(PROMPTS, IDS)
    got = gpu[arch].next_token_logprobs(PROMPTS, IDS)
    assert got.dtype == np.float32 and got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=1e-4)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_padding_sides_and_prefix_sharing_agree_on_gpu(models, gpu, arch):
    full = gpu[arch].next_token_logprobs(PROMPTS, IDS)  # left padding, shared prefixes
    for kw in ({"padding_side": "right", "share_prefix": False}, {"padding_side": "left", "share_prefix": False}):
        other = TransformersBackend(models[arch], device="cuda", batch_size=7, **kw)
        np.testing.assert_allclose(other.next_token_logprobs(PROMPTS, IDS), full, atol=1e-4)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_prompt_logprobs_match_cpu(cpu, gpu, arch):
    a, b = gpu[arch].prompt_logprobs(PROMPTS[:9]), cpu[arch].prompt_logprobs(PROMPTS[:9])
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_array_equal(a.offsets, b.offsets)
    np.testing.assert_allclose(a.values, b.values, atol=1e-4, equal_nan=True)


def test_forced_token_path_matches_cpu(cpu, gpu):
    after = [cpu["gpt2"].tokenizer.convert_tokens_to_ids(t) for t in ("0", ".")]
    after = [t for t in after if t is not None and t >= 0][:1] or [5]
    ref = cpu["gpt2"].next_token_logprobs_after(PROMPTS[:8], after, IDS)
    got = gpu["gpt2"].next_token_logprobs_after(PROMPTS[:8], after, IDS)
    np.testing.assert_allclose(got, ref, atol=1e-4)


def test_greedy_generation_matches_cpu_where_the_choice_is_clear(cpu, gpu):
    """Greedy decoding is the same on both devices unless two tokens tie to within rounding."""
    prompts = PROMPTS[:6]
    lp = cpu["llama"].next_token_logprobs(prompts, list(range(cpu["llama"].vocab_size)))
    top2 = np.sort(lp, axis=1)[:, -2:]
    clear = [p for p, gap in zip(prompts, top2[:, 1] - top2[:, 0]) if gap > 1e-3]
    assert clear, "the random model should have a clear first token for some prompts"
    assert [g[:1] for g in gpu["llama"].generate(clear, 1)] == [c[:1] for c in cpu["llama"].generate(clear, 1)]


@pytest.mark.parametrize("dtype, atol", [("bfloat16", 0.08), ("float16", 0.01)])
def test_half_precision_weights_stay_close(models, cpu, dtype, atol):
    """Narrow weights change log-probs by their rounding only (log-softmax runs in float32)."""
    half = TransformersBackend(models["llama"], device="cuda", dtype=dtype)
    assert next(half.model.parameters()).dtype == getattr(torch, dtype)
    ref = cpu["llama"].next_token_logprobs(PROMPTS, IDS)
    got = half.next_token_logprobs(PROMPTS, IDS)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, atol=atol)
    assert np.corrcoef(got.ravel(), ref.ravel())[0, 1] > 0.999


def test_risk_scores_on_gpu_match_cpu_and_resume_from_the_cache(cpu, gpu, tmp_path):
    rows = ROWS.iloc[:40]
    ref = risk.risk_scores(rows, TASK, cpu["gpt2"]).scores
    first = risk.risk_scores(rows, TASK, gpu["gpt2"], cache=tmp_path / "cache")
    np.testing.assert_allclose(first.scores, ref, atol=1e-5)
    again = risk.risk_scores(rows, TASK, gpu["gpt2"], cache=tmp_path / "cache")
    np.testing.assert_array_equal(again.scores, first.scores)
