"""``VLLMBackend``: vLLM's offline engine (GPU; the ``vllm`` extra), same protocol as
:class:`~llmsurrogate.llm.hf.TransformersBackend`.

**Unverified on a GPU.** This one-pass version (issue 13, item 1) was written against the vLLM API
the previous version used -- ``LLM(..., enable_prefix_caching=..., max_logprobs=...)``,
``SamplingParams(max_tokens=1, logprobs=k, prompt_logprobs=0)``, ``TokensPrompt`` and the
``RequestOutput.outputs[0].logprobs`` / ``.prompt_logprobs`` lists of ``{token_id: Logprob}`` -- and
tested on the CPU only, with a stand-in for vLLM's Python API whose numbers come from a real
transformers model (``tests/test_llm_vllm.py``). Its speed and its agreement with the transformers
backend on a GPU are not measured yet (``tests/test_llm_vllm.py -m gpu``, ``benchmarks/bench_llm_gpu.py``).

Answer-token log-probabilities, one engine sequence per prompt: each prompt runs once with
``max_tokens=1`` and ``logprobs=k`` (the engine's ``max_logprobs``, default 20), and the requested
tokens are read from the top-k log-probabilities of the next-token distribution. Automatic prefix
caching is on, so prompts sharing a prefix (the answer orders of one row) share its KV blocks.

Exactness stays: where a requested token falls outside the returned top k, that prompt (only that
prompt) goes through the exact path -- the prompt followed by each requested token ``t`` with
``prompt_logprobs=0``, whose last entry is log p(t | prompt) whatever its rank (folktexts' top-50
decoding gave p = 0 to answer tokens outside it, docs/methods/risk-scores.md §1.8).
:attr:`VLLMBackend.fallbacks` counts the prompts that needed it (expect none on a real model with
two answer options; numeric prompting asks for every digit token, so raise ``max_logprobs`` there).
vLLM computes no prefix-cache hits for requests that ask for prompt log-probabilities, so the exact
path and :meth:`VLLMBackend.prompt_logprobs` (one sequence per prompt, nothing appended) get every
position's value.

Context: a prompt keeps room for the tokens appended to it (one on the exact path of
:meth:`next_token_logprobs`, two on that of :meth:`next_token_logprobs_after`) and for the one
token generated; a longer prompt raises (or keeps its tail with ``truncation="left"``).
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
    max_logprobs : the top-k log-probabilities returned per prompt (the engine's ``max_logprobs``);
        a requested token outside them sends that prompt through the exact path.
    prompts_per_call : prompts handed to the engine per call by the cached scoring functions (the
        engine schedules its own batches; a run killed mid-call redoes that call).

    Examples
    --------
    The model folder is checked before vLLM is imported:

    >>> VLLMBackend("no/such/model")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: model path 'no/such/model' is not a local model folder ...

    On a GPU with the ``vllm`` extra and a local model folder (not run here):

    >>> backend = VLLMBackend("models/my-model", dtype="auto")  # doctest: +SKIP
    >>> ids = [i for _, i in backend.answer_tokens(["A", "B"])["A"]]  # doctest: +SKIP
    >>> lp = backend.next_token_logprobs(["Question: Is it? A. No. B. Yes. Answer:"], ids)  # doctest: +SKIP
    >>> lp.shape == (1, len(ids))  # doctest: +SKIP
    True
    """

    def __init__(self, model_path, *, dtype: str = "auto", tensor_parallel_size: int = 1,
                 gpu_memory_utilization: float = 0.85, max_model_len: int | None = None, seed: int = 0,
                 truncation: str = "error", enforce_eager: bool = False, max_logprobs: int = 20,
                 prompts_per_call: int = 2048, enable_prefix_caching: bool = True):
        from .._validation import check_choice, check_int

        self.path = check_model_dir(model_path)
        self.truncation = check_choice(truncation, "truncation", ["error", "left"])
        self.max_logprobs = check_int(max_logprobs, "max_logprobs", minimum=1)
        self.prompts_per_call = check_int(prompts_per_call, "prompts_per_call", minimum=1)
        vllm = require("vllm", purpose="VLLMBackend")
        transformers = require("transformers", purpose="VLLMBackend")
        self._vllm = vllm
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        cfg = transformers.AutoConfig.from_pretrained(self.path, local_files_only=True)
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        self.vocab_size = int(text_cfg.vocab_size)
        ctx = getattr(text_cfg, "max_position_embeddings", None) or getattr(text_cfg, "n_positions", None)
        self.max_model_len = int(max_model_len or ctx or 4096)
        self.context = self.max_model_len - 1  # room for the generated token; see _encode_room
        self._digits = None
        #: prompts (or prompt + appended token) whose requested tokens fell outside the top k and
        #: went through the exact path, since the backend was made
        self.fallbacks = 0
        self.llm = vllm.LLM(model=str(self.path), tokenizer=str(self.path), dtype=dtype,
                            tensor_parallel_size=check_int(tensor_parallel_size, "tensor_parallel_size", minimum=1),
                            gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                            seed=seed, enable_prefix_caching=bool(enable_prefix_caching), enforce_eager=enforce_eager,
                            max_logprobs=self.max_logprobs)
        self.identity = {"backend": "vllm", "model": str(self.path), "weights": weights_fingerprint(self.path),
                         "dtype": dtype}

    def __repr__(self) -> str:
        return f"VLLMBackend({str(self.path)!r})"

    def _params(self, **kw):
        return self._vllm.SamplingParams(temperature=0.0, **kw)

    def _prompts(self, seqs):
        from vllm.inputs import TokensPrompt

        return [TokensPrompt(prompt_token_ids=list(s)) for s in seqs]

    def _generate(self, seqs, params):
        return self.llm.generate(self._prompts(seqs), params, use_tqdm=False)

    def _encode_room(self, prompts: list[str], appended: int) -> list[list[int]]:
        """Token ids of the prompts, each leaving room for ``appended`` tokens and the generated one."""
        full = self.context
        self.context = self.max_model_len - appended - 1
        try:
            return self._encode(prompts)
        finally:
            self.context = full

    @staticmethod
    def _value(lp) -> float:
        return float(getattr(lp, "logprob", lp))

    def _check_ids(self, ids: Sequence[int], what: str = "token ids") -> list[int]:
        tid = [int(t) for t in ids]
        if tid and (min(tid) < 0 or max(tid) >= self.vocab_size):
            raise InvalidArgumentError(f"{what} must lie in [0, {self.vocab_size}) (the logits dimension)")
        return tid

    def _top_k(self, seqs: list[list[int]], tid: list[int]) -> np.ndarray:
        """(len(seqs), len(tid)) log p(t | seq) from one engine sequence each; a sequence with a
        requested token outside the returned top k goes through :meth:`_exact` (counted)."""
        out = np.full((len(seqs), len(tid)), np.nan, dtype=np.float32)
        if not seqs or not tid:
            return out
        outs = self._generate(seqs, self._params(max_tokens=1, logprobs=self.max_logprobs))
        missing = []
        for i, o in enumerate(outs):
            top = o.outputs[0].logprobs[0]  # {token_id: Logprob} at the first generated position
            if all(t in top for t in tid):
                out[i] = [self._value(top[t]) for t in tid]
            else:
                missing.append(i)
        if missing:
            self.fallbacks += len(missing)
            out[missing] = self._exact([seqs[i] for i in missing], tid)
        return out

    def _exact(self, seqs: list[list[int]], tid: list[int]) -> np.ndarray:
        """log p(t | seq) for every t, whatever its rank: each seq + [t] with prompt_logprobs=0
        (one engine sequence per (seq, t)); the last prompt entry holds the actual token."""
        ext = [s + [t] for s in seqs for t in tid]
        outs = self._generate(ext, self._params(max_tokens=1, prompt_logprobs=0))
        vals = [self._value(o.prompt_logprobs[-1][e[-1]]) for o, e in zip(outs, ext)]
        return np.asarray(vals, dtype=np.float32).reshape(len(seqs), len(tid))

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> np.ndarray:
        """Exact log p(t | prompt) for every t in ``token_ids``: one engine sequence per prompt
        (top-k log-probabilities), the exact path for a prompt whose tokens fall outside them."""
        prompts = check_prompts(prompts)
        tid = self._check_ids(token_ids)
        seqs = self._encode_room(prompts, appended=1)
        return self._top_k(seqs, tid)

    def next_token_logprobs_after(self, prompts: Sequence[str], after_ids: Sequence[int],
                                  token_ids: Sequence[int]) -> np.ndarray:
        """log p(t | prompt + [a]) for every a in ``after_ids`` and t in ``token_ids``, shape (n,
        len(after_ids), len(token_ids)): one engine sequence per (prompt, a); the exact path
        appends two tokens, so a prompt keeps room for both and the generated one."""
        prompts = check_prompts(prompts)
        after = self._check_ids(after_ids, "after_ids")
        tid = self._check_ids(token_ids)
        seqs = self._encode_room(prompts, appended=2)
        ext = [s + [a] for s in seqs for a in after]
        return self._top_k(ext, tid).reshape(len(seqs), len(after), len(tid))

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p(token_t | tokens_<t) of every prompt token (first token NaN), flat: one engine
        sequence per prompt with nothing appended."""
        prompts = check_prompts(prompts)
        seqs = self._encode_room(prompts, appended=0)
        outs = self._generate(seqs, self._params(max_tokens=1, prompt_logprobs=0))
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        values = np.full(offsets[-1], np.nan, dtype=np.float32)
        for i, (o, s) in enumerate(zip(outs, seqs)):
            plp = o.prompt_logprobs
            values[offsets[i] + 1: offsets[i + 1]] = [self._value(plp[k][s[k]]) for k in range(1, len(s))]
        token_ids = np.concatenate([np.asarray(s, dtype=np.int32) for s in seqs]) if seqs else np.zeros(0, np.int32)
        return RaggedLogprobs(values=values, offsets=offsets, token_ids=token_ids)

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 16) -> list[str]:
        prompts = check_prompts(prompts)
        seqs = self._encode_room(prompts, appended=0)
        outs = self._generate(seqs, self._params(max_tokens=max_new_tokens))
        return [o.outputs[0].text for o in outs]
