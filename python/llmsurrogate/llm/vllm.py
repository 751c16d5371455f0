"""``VLLMBackend``: vLLM's offline engine (GPU; the ``vllm`` extra), same protocol as
:class:`~llmsurrogate.llm.hf.TransformersBackend`.

Exact answer-token log-probabilities without top-k truncation: for each prompt and each
requested token id ``t`` the engine runs the prompt tokens followed by ``t`` and returns
``prompt_logprobs=0``, i.e. the log-probability of every *actual* prompt token, so the last one
is exactly log p(t | prompt) whatever its rank (vLLM's sampled-token ``logprobs`` are limited to
the top ``max_logprobs``; folktexts' top-50 decoding gave p = 0 to answer tokens outside it,
docs/methods/risk-scores.md §1.8). Automatic prefix caching is switched off because cached prefix tokens get no prompt
log-probabilities. ``tensor_parallel_size`` spreads the model over GPUs.

GPU-only: the tests in ``tests/test_llm_vllm.py`` are marked ``gpu`` and compare against the
transformers backend on the same tiny local model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._optional import require
from ..exceptions import InvalidArgumentError
from .base import RaggedLogprobs, check_prompts
from .hf import TokenizerMixin, check_model_dir, weights_fingerprint

__all__ = ["VLLMBackend"]


class VLLMBackend(TokenizerMixin):
    """Score prompts with vLLM's offline ``LLM`` engine on a local model folder.

    Parameters
    ----------
    model_path : a local model folder (``save_pretrained`` layout).
    dtype : vLLM dtype (``"float32"`` for parity tests, ``"auto"`` for speed).
    tensor_parallel_size : GPUs to shard the model over.
    gpu_memory_utilization, max_model_len, seed : passed to ``vllm.LLM``.
    truncation : ``"error"`` or ``"left"`` for prompts longer than the context.
    """

    def __init__(self, model_path, *, dtype: str = "auto", tensor_parallel_size: int = 1,
                 gpu_memory_utilization: float = 0.85, max_model_len: int | None = None, seed: int = 0,
                 truncation: str = "error", enforce_eager: bool = False):
        from .._validation import check_choice, check_int

        self.path = check_model_dir(model_path)
        self.truncation = check_choice(truncation, "truncation", ["error", "left"])
        vllm = require("vllm", purpose="VLLMBackend")
        transformers = require("transformers", purpose="VLLMBackend")
        self._vllm = vllm
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        cfg = transformers.AutoConfig.from_pretrained(self.path, local_files_only=True)
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        self.vocab_size = int(text_cfg.vocab_size)
        ctx = getattr(text_cfg, "max_position_embeddings", None) or getattr(text_cfg, "n_positions", None)
        self.context = int(max_model_len or ctx or 4096) - 1  # room for the appended answer token
        self._digits = None
        self.llm = vllm.LLM(model=str(self.path), tokenizer=str(self.path), dtype=dtype,
                            tensor_parallel_size=check_int(tensor_parallel_size, "tensor_parallel_size", minimum=1),
                            gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                            seed=seed, enable_prefix_caching=False, enforce_eager=enforce_eager)
        self.identity = {"backend": "vllm", "model": str(self.path), "weights": weights_fingerprint(self.path),
                         "dtype": dtype}

    def __repr__(self) -> str:
        return f"VLLMBackend({str(self.path)!r})"

    def _params(self, **kw):
        return self._vllm.SamplingParams(temperature=0.0, **kw)

    def _prompts(self, seqs):
        from vllm.inputs import TokensPrompt

        return [TokensPrompt(prompt_token_ids=list(s)) for s in seqs]

    @staticmethod
    def _actual_logprob(entry, token_id: int) -> float:
        # entry: {token_id: Logprob(logprob=...)} holding at least the actual token
        lp = entry[token_id]
        return float(getattr(lp, "logprob", lp))

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> np.ndarray:
        """Exact log p(t | prompt) for every t in ``token_ids`` (no top-k truncation)."""
        prompts = check_prompts(prompts)
        tid = [int(t) for t in token_ids]
        if tid and (min(tid) < 0 or max(tid) >= self.vocab_size):
            raise InvalidArgumentError(f"token ids must lie in [0, {self.vocab_size}) (the logits dimension)")
        seqs = self._encode(prompts)
        ext = [s + [t] for s in seqs for t in tid]
        outs = self.llm.generate(self._prompts(ext), self._params(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
        vals = np.array([self._actual_logprob(o.prompt_logprobs[-1], e[-1]) for o, e in zip(outs, ext)],
                        dtype=np.float32)
        return vals.reshape(len(seqs), len(tid))

    def next_token_logprobs_after(self, prompts: Sequence[str], after_ids: Sequence[int],
                                  token_ids: Sequence[int]) -> np.ndarray:
        prompts = check_prompts(prompts)
        seqs = self._encode(prompts)
        after = [int(a) for a in after_ids]
        tid = [int(t) for t in token_ids]
        ext = [s + [a, t] for s in seqs for a in after for t in tid]
        outs = self.llm.generate(self._prompts(ext), self._params(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
        vals = np.array([self._actual_logprob(o.prompt_logprobs[-1], e[-1]) for o, e in zip(outs, ext)],
                        dtype=np.float32)
        return vals.reshape(len(seqs), len(after), len(tid))

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p(token_t | tokens_<t) of every prompt token (first token NaN), flat."""
        prompts = check_prompts(prompts)
        seqs = self._encode(prompts)
        outs = self.llm.generate(self._prompts(seqs), self._params(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        values = np.full(offsets[-1], np.nan, dtype=np.float32)
        for i, (o, s) in enumerate(zip(outs, seqs)):
            plp = o.prompt_logprobs
            values[offsets[i] + 1: offsets[i + 1]] = [self._actual_logprob(plp[k], s[k]) for k in range(1, len(s))]
        token_ids = np.concatenate([np.asarray(s, dtype=np.int32) for s in seqs])
        return RaggedLogprobs(values=values, offsets=offsets, token_ids=token_ids)

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 16) -> list[str]:
        prompts = check_prompts(prompts)
        seqs = self._encode(prompts)
        outs = self.llm.generate(self._prompts(seqs), self._params(max_tokens=max_new_tokens), use_tqdm=False)
        return [o.outputs[0].text for o in outs]
