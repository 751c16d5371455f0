"""VLLMBackend against TransformersBackend on the same tiny local model (GPU only)."""

from __future__ import annotations

import numpy as np
import pytest

from llmsurrogate import datasets
from llmsurrogate.exceptions import InvalidArgumentError, MissingDependencyError
from llmsurrogate.llm.prompts import multiple_choice_prompt
from llmsurrogate.llm.tasks import acs_income_task

ROWS = datasets.load_acs_income_rows()


def test_vllm_backend_checks_the_model_path_first(tmp_path):
    """Runs everywhere: a missing model folder is reported before vLLM is imported."""
    from llmsurrogate.llm.vllm import VLLMBackend

    with pytest.raises(InvalidArgumentError, match="not a local model folder"):
        VLLMBackend(tmp_path / "missing")


@pytest.mark.gpu
def test_vllm_matches_transformers(tmp_path):
    pytest.importorskip("vllm")
    from llmsurrogate import risk, testing
    from llmsurrogate.llm.hf import TransformersBackend
    from llmsurrogate.llm.vllm import VLLMBackend

    path = testing.build_model(tmp_path / "m", "llama", seed=1)
    hf = TransformersBackend(path, device="cuda")
    vl = VLLMBackend(path, dtype="float32", enforce_eager=True, gpu_memory_utilization=0.3)
    prompts = [multiple_choice_prompt(acs_income_task(), r) for r in ROWS.to_dict("records")]
    ids = list(range(0, 400, 13))
    np.testing.assert_allclose(vl.next_token_logprobs(prompts, ids), hf.next_token_logprobs(prompts, ids), atol=1e-3)
    a, b = vl.prompt_logprobs(prompts[:3]), hf.prompt_logprobs(prompts[:3])
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_allclose(a.values, b.values, atol=1e-3, equal_nan=True)
    s1 = risk.risk_scores(ROWS, acs_income_task(), vl).scores
    s2 = risk.risk_scores(ROWS, acs_income_task(), hf).scores
    np.testing.assert_allclose(s1, s2, atol=1e-3)
    assert vl.generate(prompts[:2], 3) == hf.generate(prompts[:2], 3)


def test_vllm_missing_dependency_is_named(tmp_path):
    import importlib.util

    from llmsurrogate.llm.vllm import VLLMBackend

    (tmp_path / "config.json").write_text("{}")
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(MissingDependencyError, match=r"llmsurrogate\[vllm\]"):
            VLLMBackend(tmp_path)
    else:  # GPU machines: the empty config is rejected by transformers/vLLM, not by a missing import
        with pytest.raises(Exception) as info:
            VLLMBackend(tmp_path)
        assert not isinstance(info.value, MissingDependencyError)
