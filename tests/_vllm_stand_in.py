"""A stand-in for vLLM's Python API (LLM, SamplingParams, TokensPrompt and the RequestOutput shape)
whose numbers come from a real transformers model: the one-pass logic of ``VLLMBackend`` tested on
the CPU without vLLM (``tests/llm/test_llm_vllm.py``, ``tests/lookahead/test_lookahead_forecast.py``).
The real engine is tested by the tests marked ``vllm`` (``make test-vllm``)."""

from __future__ import annotations

import pytest

# The stand-in replaces only vLLM's API (LLM, SamplingParams, TokensPrompt and the RequestOutput
# shape); its numbers come from the real transformers model in the same folder. It is strict where
# vLLM is: logprobs above the engine's max_logprobs and prompt + generated tokens beyond
# max_model_len are errors.

class _Logprob:
    def __init__(self, logprob):
        self.logprob = logprob


class _SamplingParams:
    def __init__(self, temperature=1.0, max_tokens=16, logprobs=None, prompt_logprobs=None):
        self.temperature, self.max_tokens = temperature, max_tokens
        self.logprobs, self.prompt_logprobs = logprobs, prompt_logprobs


class _TokensPrompt(dict):
    pass


class _StandInLLM:
    instances: list = []

    def __init__(self, model, tokenizer=None, max_model_len=None, max_logprobs=20, **kwargs):
        import torch
        import transformers

        self.model = transformers.AutoModelForCausalLM.from_pretrained(model, local_files_only=True,
                                                                       dtype=torch.float32).eval()
        self.max_model_len = max_model_len or self.model.config.n_positions
        self.max_logprobs = max_logprobs
        self.kwargs = kwargs
        self.calls = []  # (prompt token lengths, params) per generate call
        _StandInLLM.instances.append(self)

    def generate(self, prompts, params, use_tqdm=True):
        import types

        import torch

        if params.logprobs is not None and params.logprobs > self.max_logprobs:
            raise ValueError(f"Requested sample logprobs of {params.logprobs}, which is greater than max allowed: "
                             f"{self.max_logprobs}")
        self.calls.append(([len(p["prompt_token_ids"]) for p in prompts], params))
        outs = []
        for p in prompts:
            ids = list(p["prompt_token_ids"])
            if len(ids) + params.max_tokens > self.max_model_len:
                raise ValueError(f"prompt of {len(ids)} tokens + {params.max_tokens} exceeds max_model_len "
                                 f"{self.max_model_len}")
            with torch.no_grad():
                lsm = torch.log_softmax(self.model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
            plp = None
            if params.prompt_logprobs is not None:
                plp = [None] + [{ids[k]: _Logprob(float(lsm[k - 1, ids[k]]))} for k in range(1, len(ids))]
            last = lsm[-1]
            sampled = int(torch.argmax(last))
            top = {}
            if params.logprobs is not None:
                vals, idx = torch.topk(last, params.logprobs)
                top = {int(i): _Logprob(float(v)) for v, i in zip(vals, idx)}
            top[sampled] = _Logprob(float(last[sampled]))
            outs.append(types.SimpleNamespace(prompt_logprobs=plp,
                                              outputs=[types.SimpleNamespace(logprobs=[top], text="")]))
        return outs


@pytest.fixture
def stand_in(monkeypatch):
    import sys
    import types

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = _StandInLLM, _SamplingParams
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = _TokensPrompt
    vllm.inputs = inputs
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    _StandInLLM.instances.clear()
    return _StandInLLM
