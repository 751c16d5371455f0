"""``TransformersBackend``: a local Hugging Face causal LM on CPU or GPU (the ``hf`` extra).

* Local model folders only (``local_files_only=True``; no hub access, ``HF_HUB_OFFLINE`` honoured).
* Length-bucketed batching: prompts are sorted by token length and batched, so a batch pads to
  nearly equal lengths; results come back in input order. On a GPU a batch is bounded by a token
  budget (``token_budget`` padded tokens) as well as by ``batch_size`` prompts.
* No wasted LM-head work: every forward pass applies the output layer only to the positions whose
  logits are read (``logits_to_keep=1`` when they are the last column; else the base model's hidden
  states with the head applied to the positions needed; a pass that only fills the KV cache runs
  the base model alone). ``tests/llm/test_llm_hf.py`` counts the head's rows.
* Float32 log-softmax of the logits (never float16 probabilities), sliced to the model's logits
  dimension (``config.vocab_size``), not ``len(tokenizer)``.
* Right padding (real-token positions unaffected) or left padding with ``position_ids`` from the
  attention mask: both give the same scores (tested).
* Prompts longer than the context raise (or keep their tail with ``truncation="left"``).
* Chat templates: :meth:`TransformersBackend.chat_prompt` renders ``[system?, user, assistant
  prefill]`` and cuts after the prefill.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._optional import require
from .._validation import check_choice, check_int
from ..exceptions import InvalidArgumentError
from .base import RaggedLogprobs, check_prompts
from .prompts import apply_chat_template

__all__ = ["TransformersBackend", "TokenizerMixin", "TokenIds", "weights_fingerprint", "check_model_dir"]


def weights_fingerprint(path: Path, full_hash_limit: int = 2 * 1024**3) -> str:
    """SHA-256 over the model folder's weight and config files (content when they total under
    ``full_hash_limit`` bytes, else names, sizes and modification times).

    Examples
    --------
    >>> import tempfile
    >>> from llmsurrogate import testing
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = testing.build_model(folder, hidden=16, layers=1)
    ...     print(weights_fingerprint(path)[:7], len(weights_fingerprint(path)), weights_fingerprint(path, 0)[:5])
    sha256: 31 stat:
    """
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in {".safetensors", ".bin", ".json", ".pt",
                                                                             ".model", ".txt", ".jinja"}
                   and p.name != "llmsurrogate_training.json")
    total = sum(p.stat().st_size for p in files)
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0")
        if total <= full_hash_limit:
            with p.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
        else:
            st = p.stat()
            h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
    return ("sha256:" if total <= full_hash_limit else "stat:") + h.hexdigest()[:24]


def check_model_dir(model_path) -> Path:
    """The resolved path of a local model folder, or an error that says what is missing.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     check_model_dir(folder)
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: model path '...' is not a local model folder (no config.json there); llmsurrogate loads local folders only -- save the model with save_pretrained first
    """
    path = Path(model_path).expanduser()
    if not path.is_dir() or not (path / "config.json").exists():
        raise InvalidArgumentError(
            f"model path {str(model_path)!r} is not a local model folder (no config.json there); "
            "llmsurrogate loads local folders only -- save the model with save_pretrained first")
    return path.resolve()


class TokenizerMixin:
    """Answer-key spellings, digit tokens and prompt encoding from a transformers tokenizer
    (needs ``self.tokenizer``, ``self.vocab_size``, ``self.context``, ``self.truncation``).

    Examples
    --------
    The vLLM and transformers backends share it:

    >>> issubclass(TransformersBackend, TokenizerMixin)
    True
    """

    tokenizer: object
    vocab_size: int
    context: int
    truncation: str
    _digits: list | None = None

    # --- tokens ----------------------------------------------------------------------------------

    def _single(self, ids: list[int]) -> int | None:
        return ids[0] if len(ids) == 1 and ids[0] < self.vocab_size else None

    def answer_tokens(self, keys: Sequence[str]) -> dict[str, list[tuple[str, int]]]:
        """Single-token spellings of each key, found by encoding the continuation after a probe
        prefill (``"Answer:" + " A"`` minus ``"Answer:"``) and the bare spellings ``"A"``, ``" A"``,
        ``"\\nA"``; token ids beyond the logits dimension are ignored.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> spellings = backend.answer_tokens(["A", "B"])
        >>> [text for text, _ in spellings["A"]], all(text.strip() == "B" for text, _ in spellings["B"])
        (['A', ' A'], True)
        """
        tok = self.tokenizer
        probe = tok("Answer:", add_special_tokens=False)["input_ids"]
        out: dict[str, list[tuple[str, int]]] = {}
        for k in keys:
            found: dict[int, str] = {}
            for cont in (" " + k, k):
                ids = tok("Answer:" + cont, add_special_tokens=False)["input_ids"]
                if ids[: len(probe)] == probe:
                    tid = self._single(ids[len(probe):])
                    if tid is not None:
                        found.setdefault(tid, cont)
            for s in (k, " " + k, "\n" + k):
                tid = self._single(tok(s, add_special_tokens=False)["input_ids"])
                if tid is not None and tok.decode([tid]).strip() == k:
                    found.setdefault(tid, s)
            # label each spelling by its decoded text so prefix variants can be told apart
            out[k] = [(tok.decode([tid]), tid) for tid in sorted(found)]
        return out

    def digit_tokens(self) -> list[tuple[str, int]]:
        """Every token (id below the logits dimension) whose text is decimal digits only.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> digits = backend.digit_tokens()
        >>> all(text.isdecimal() for text, _ in digits), {"0", "5", "9"} <= {text for text, _ in digits}
        (True, True)
        """
        if self._digits is None:
            tok = self.tokenizer
            pieces = tok.convert_ids_to_tokens(list(range(min(len(tok), self.vocab_size))))
            out = []
            for i, piece in enumerate(pieces):
                if piece and any(ch.isdigit() for ch in piece):
                    text = tok.decode([i])
                    if text.isdecimal():
                        out.append((text, i))
            self._digits = out
        return list(self._digits)

    def _encode(self, prompts: list[str], context: int | None = None) -> list[list[int]]:
        """Token ids of each prompt, at most ``context`` tokens (default: :attr:`context`)."""
        context = self.context if context is None else context
        tok = self.tokenizer
        bos = tok.bos_token
        out = []
        plain = [p for p in prompts if not (bos and p.startswith(bos))]
        enc_plain = iter(_token_ids(tok, plain)) if plain else iter(())
        for p in prompts:
            if bos and p.startswith(bos):  # chat-rendered prompt already holds BOS
                ids = tok(p, add_special_tokens=False)["input_ids"]
            else:
                ids = next(enc_plain)
            if not ids:
                raise InvalidArgumentError("a prompt encodes to zero tokens")
            if len(ids) > context:
                if self.truncation == "error":
                    raise InvalidArgumentError(
                        f"a prompt has {len(ids)} tokens, more than the model's context of {context}; "
                        "shorten it or pass truncation='left' to keep its tail")
                ids = ids[-context:]
            out.append(list(ids))
        return out




def _token_ids(tok, texts: list[str]) -> list[list[int]]:
    """``tok(texts, add_special_tokens=True)["input_ids"]``. A fast tokenizer in its plain state (no
    truncation or padding set on its Rust tokenizer, special tokens not split) is asked directly for
    the ids only (``encode_batch_fast``: no character offsets, no per-text Python dict): the same
    ids, the call that makes them in both cases (transformers' fast tokenizers call
    ``encode_batch``), in about 60% of the time (4,000 risk-score prompts: 0.32 s against 0.53 s on
    2 cores). Anything else goes through the tokenizer's own call."""
    rust = getattr(tok, "backend_tokenizer", None) if getattr(tok, "is_fast", False) else None
    if (rust is not None and hasattr(rust, "encode_batch_fast") and rust.truncation is None
            and rust.padding is None and not getattr(rust, "encode_special_tokens", False)
            and not getattr(tok, "split_special_tokens", False)):
        return [e.ids for e in rust.encode_batch_fast(texts, add_special_tokens=True)]
    return tok(texts, add_special_tokens=True)["input_ids"]


class TokenIds:
    """Token ids of many prompts in one int32 array with offsets: 4 bytes a token, where a list of
    Python ints takes about 40 (an 8-byte pointer and, above 256, a 32-byte int object). A window
    of 8,192 risk-score prompts of the tiny test model: 4.7 MB instead of 52 MB (issue 37).
    ``ids[i]`` is prompt ``i``'s list (made when asked for), :attr:`lengths` every prompt's length.

    Examples
    --------
    >>> ids = TokenIds.of([[5, 300, 7], [5], [5, 300]])
    >>> len(ids), ids[0], ids.lengths.tolist(), sorted(range(3), key=ids.sort_key)  # the order of the lists
    (3, [5, 300, 7], [3, 1, 2], [1, 2, 0])
    """

    def __init__(self, flat: np.ndarray, offsets: np.ndarray):
        self.flat = flat
        self.offsets = offsets
        self.lengths = np.diff(offsets)

    @classmethod
    def of(cls, seqs) -> TokenIds:
        """Packed from a list of id lists (or passed through)."""
        if isinstance(seqs, TokenIds):
            return seqs
        return cls._pack([seqs])

    @classmethod
    def _pack(cls, parts) -> TokenIds:
        lens = [len(s) for part in parts for s in part]
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        flat = np.empty(int(offsets[-1]), dtype=np.int32)
        at = 0
        for part in parts:
            for s in part:
                flat[at: at + len(s)] = s
                at += len(s)
        return cls(flat, offsets)

    @classmethod
    def encode(cls, backend, prompts: list[str], step: int = 512) -> TokenIds:
        """``backend._encode(prompts)``, ``step`` prompts at a time, packed as they come (the
        Python lists of one step live at once)."""
        parts = [cls._pack([backend._encode(prompts[a: a + step])]) for a in range(0, len(prompts), step)]
        if len(parts) == 1:
            return parts[0]
        flat = np.concatenate([p.flat for p in parts]) if parts else np.zeros(0, np.int32)
        lens = np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, np.int64)
        offsets = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        return cls(flat, offsets)

    def __len__(self) -> int:
        return len(self.lengths)

    def array(self, i: int) -> np.ndarray:
        """Prompt ``i``'s ids (a view)."""
        return self.flat[self.offsets[i]: self.offsets[i + 1]]

    def __getitem__(self, i: int) -> list[int]:
        return self.array(i).tolist()

    def sort_key(self, i: int) -> bytes:
        """Bytes that order as prompt ``i``'s list of ids does (ids are non-negative: big-endian
        unsigned, 4 bytes each; a prefix sorts first)."""
        return self.array(i).astype(">u4").tobytes()


def _kv_cache(output):
    """The KV cache a forward pass returned: the output's ``cache`` field (transformers >= 5.24), else
    ``past_key_values`` (read by key, so no deprecation notice is logged on either version)."""
    keys = output.keys()
    return output["cache"] if "cache" in keys else output["past_key_values"]

class TransformersBackend(TokenizerMixin):
    """Score prompts with a local transformers causal LM.

    Parameters
    ----------
    model_path : str or Path
        A folder holding ``config.json``, the weights and the tokenizer (``save_pretrained``).
    device : "cpu", "cuda", "cuda:1", ... (default: cuda if available, else cpu).
    dtype : "float32" (default), "bfloat16" or "float16" for the weights; log-softmax is always
        computed in float32.
    batch_size : most prompts per forward pass (default: 16 on the CPU; 512 on a GPU, where an H100
        scored 2-3x more prompts per second at 128 than at 16, ``benchmarks/results/llm_gpu.json``,
        and 512 was 19-34% faster again, issue 13).
    token_budget : most padded tokens per forward pass (default: none on the CPU, 65,536 on a GPU, so
        long prompts get smaller batches; the GPU default is unverified on a GPU as yet).
    padding_side : "left" (default: the last prompt token sits in the last column, so only its
        logits are computed -- ``logits_to_keep=1``) or "right" (logits at every position).
    truncation : "error" (default: a prompt longer than the context raises) or "left" (keep the tail).
    share_prefix : run a token prefix shared by several prompts once and continue each prompt
        from its KV cache (the answer orders of one row share everything up to the options, so
        multiple-choice scoring with order-bias correction does ~half the work). Results equal
        the plain path (tested).

    Examples
    --------
    A tiny random GPT-2 built on the spot (:func:`llmsurrogate.testing.build_model`):

    >>> import tempfile
    >>> from llmsurrogate import testing
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     backend = TransformersBackend(testing.build_model(folder), device="cpu")
    >>> backend.answer_tokens(["A"])
    {'A': [('A', ...), (' A', ...)]}
    >>> ids = [i for _, i in backend.answer_tokens(["A", "B"])["A"]]
    >>> lp = backend.next_token_logprobs(["Question: Is it? A. No. B. Yes. Answer:"], ids)
    >>> lp.shape, lp.dtype, bool((lp < 0).all())
    ((1, 2), dtype('float32'), True)
    """

    def __init__(self, model_path, *, device: str | None = None, dtype: str = "float32", batch_size: int | None = None,
                 padding_side: str = "left", truncation: str = "error", trust_remote_code: bool = False,
                 revision: str | None = None, share_prefix: bool = True, token_budget: int | None = None):
        torch = require("torch", purpose="TransformersBackend")
        transformers = require("transformers", purpose="TransformersBackend")
        self.path = check_model_dir(model_path)
        self.padding_side = check_choice(padding_side, "padding_side", ["right", "left"])
        self.truncation = check_choice(truncation, "truncation", ["error", "left"])
        self.share_prefix = bool(share_prefix)
        check_choice(dtype, "dtype", ["float32", "bfloat16", "float16"])
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        if batch_size is None:
            batch_size = 16 if self.device.type == "cpu" else 512
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        if token_budget is None and self.device.type != "cpu":
            token_budget = 65536
        self.token_budget = None if token_budget is None else check_int(token_budget, "token_budget", minimum=1)
        transformers.utils.logging.disable_progress_bar()
        transformers.utils.logging.set_verbosity_error()
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(self.path, local_files_only=True,
                                                                    trust_remote_code=trust_remote_code)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            self.path, local_files_only=True, dtype=getattr(torch, dtype), trust_remote_code=trust_remote_code)
        self.model.to(self.device).eval()
        cfg = self.model.config
        text_cfg = cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg
        self.vocab_size = int(text_cfg.vocab_size)
        self.context = int(getattr(text_cfg, "max_position_embeddings", None) or getattr(text_cfg, "n_positions", 0)
                           or 10**9)
        self._torch = torch
        self._digits: list[tuple[str, int]] | None = None
        self.identity = {"backend": "transformers", "model": str(self.path),
                         "weights": revision or weights_fingerprint(self.path), "dtype": dtype}

    def __repr__(self) -> str:
        return f"TransformersBackend({str(self.path)!r}, device={str(self.device)!r})"

    def _batches(self, lengths: list[int], batch_size: int | None = None, per_token: int = 1):
        """Index arrays of length-sorted batches: at most ``batch_size`` prompts and (with a token
        budget) at most ``token_budget`` padded tokens (``per_token`` rows per prompt token); a
        prompt longer than the budget gets a batch of its own. Callers put results back in input
        order through the indices."""
        lengths = np.asarray(lengths, dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        bs = batch_size or self.batch_size
        budget = self.token_budget
        start, n = 0, len(order)
        while start < n:
            end = min(start + bs, n)
            if budget is not None:  # sorted ascending: the padded width is the last member's length
                fits = (np.arange(1, end - start + 1) * lengths[order[start:end]] * per_token) <= budget
                end = start + max(1, int(np.argmin(fits)) if not fits.all() else end - start)
            yield order[start:end]
            start = end

    # --- LM-head economy -------------------------------------------------------------------------

    #: apply the LM head only where logits are read (False: the full-logits path, for tests)
    _skip_head = True
    _head_direct: bool | None = None
    _cache_keyword: str | None = None

    def _base_model(self):
        base = getattr(self.model, getattr(self.model, "base_model_prefix", ""), None)
        return base if base is not None and base is not self.model else None

    def _head_is_plain(self) -> bool:
        """Whether the model's logits are its output layer applied to the base model's last hidden
        state (no soft-capping or scaling after the head): probed once on a short input."""
        if self._head_direct is None:
            torch = self._torch
            base, head = self._base_model(), self.model.get_output_embeddings()
            ok = False
            if base is not None and head is not None:
                ids = torch.tensor([[int(self.tokenizer.bos_token_id or 0), 1, 2]], device=self.device) % self.vocab_size
                with torch.inference_mode():
                    ref = self.model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
                    got = head(base(input_ids=ids).last_hidden_state[0, -1:])[0].float()
                ok = ref.shape == got.shape and bool(torch.allclose(ref, got, rtol=1e-4, atol=1e-4))
            self._head_direct = ok
        return self._head_direct

    def _prefill(self, ids, mask, pos):
        """The KV cache of a padded batch; no logits (the base model alone) where possible."""
        base = self._base_model() if self._skip_head else None
        if base is not None:
            return _kv_cache(base(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True))
        keep = {"logits_to_keep": 1} if self._skip_head else {}
        return _kv_cache(self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, **keep))

    def _with_cache(self, past) -> dict:
        """The KV cache as the keyword this transformers version's ``forward`` takes: ``cache`` where
        the model accepts it (transformers 5.24 renamed ``past_key_values``, deprecated until 5.40),
        else ``past_key_values``."""
        if self._cache_keyword is None:
            params = inspect.signature(self.model.forward).parameters
            self._cache_keyword = "cache" if "cache" in params else "past_key_values"
        return {self._cache_keyword: past}

    def _logits_at(self, ids, mask, pos, rows, cols):
        """Logits (len(rows), logits dim) at the positions (rows[i], cols[i]) of a padded batch only."""
        torch = self._torch
        rows = torch.as_tensor(rows, device=self.device)
        cols = torch.as_tensor(cols, device=self.device)
        width = ids.shape[1]
        with torch.inference_mode():
            if not self._skip_head:
                return self.model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[rows, cols]
            lo = int(cols.min()) if len(cols) else width - 1
            if lo == width - 1:  # only the last column is read
                return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits[rows, 0]
            if self._head_is_plain():
                h = self._base_model()(input_ids=ids, attention_mask=mask, position_ids=pos,
                                       use_cache=False).last_hidden_state
                return self.model.get_output_embeddings()(h[rows, cols])
            # logits post-processed after the head: keep the columns from the first one read
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=width - lo).logits
            return logits[rows, cols - lo]

    def _pad(self, seqs: list[list[int]], side: str | None = None):
        """(ids, mask, position_ids, left offsets) of a padded batch on the device."""
        torch = self._torch
        side = side or self.padding_side
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        offs = []
        for i, s in enumerate(seqs):
            off = width - len(s) if side == "left" else 0
            ids[i, off: off + len(s)] = torch.tensor(s)
            mask[i, off: off + len(s)] = 1
            offs.append(off)
        ids, mask = ids.to(self.device), mask.to(self.device)
        return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), offs

    def _forward(self, seqs: list[list[int]], last_only: bool = False):
        """Logits for a padded batch; returns (logits float32 on device, lengths, left offsets)."""
        torch = self._torch
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        offs = []
        for i, s in enumerate(seqs):
            off = width - len(s) if self.padding_side == "left" else 0
            ids[i, off: off + len(s)] = torch.tensor(s)
            mask[i, off: off + len(s)] = 1
            offs.append(off)
        ids, mask = ids.to(self.device), mask.to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            keep = {"logits_to_keep": 1} if last_only and self.padding_side == "left" else {}
            logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, **keep).logits
        if keep:  # only the last column was computed: every prompt's last token is at index 0
            return logits, [1 - len(s) for s in seqs]
        return logits, offs

    # --- scoring ---------------------------------------------------------------------------------

    def next_token_logprobs(self, prompts: Sequence[str], token_ids: Sequence[int]) -> np.ndarray:
        """Float32 log-softmax of the next-token logits at ``token_ids``, shape (n, len(token_ids)).

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> lp = backend.next_token_logprobs(["The sky is", "Grass is"], range(backend.vocab_size))
        >>> lp.shape == (2, backend.vocab_size), np.exp(lp).sum(axis=1).round(4).tolist()
        (True, [1.0, 1.0])
        """
        prompts = check_prompts(prompts)
        out = np.empty((len(prompts), len(token_ids)), dtype=np.float32)
        for idx, rows in self.next_token_logprobs_batches(prompts, token_ids):
            out[idx] = rows
        return out

    def next_token_logprobs_batches(self, prompts: Sequence[str], token_ids: Sequence[int]):
        """:meth:`next_token_logprobs` one forward batch at a time: an iterator of ``(indices,
        rows)``, indices into ``prompts`` (each prompt exactly once, in the backend's length-sorted
        order), yielded as each batch finishes, so that a caller (the cache) can store results while
        the rest computes. Arguments are checked at once.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> prompts = ["a", "a much longer prompt", "mid length"]
        >>> parts = list(backend.next_token_logprobs_batches(prompts, [1, 2, 3]))
        >>> sorted(int(i) for idx, _ in parts for i in idx), parts[0][1].shape[1]
        ([0, 1, 2], 3)
        """
        torch = self._torch
        prompts = check_prompts(prompts)
        tid = np.asarray(token_ids, dtype=np.int64)
        if tid.size and (tid.min() < 0 or tid.max() >= self.vocab_size):
            raise InvalidArgumentError(f"token ids must lie in [0, {self.vocab_size}) (the logits dimension)")
        seqs = TokenIds.encode(self, prompts)  # 4 bytes a token id: a window of prompts at once
        gather = torch.as_tensor(tid, device=self.device)
        if self.share_prefix and len(seqs) > 1:
            return self._next_token_shared(seqs, gather)
        return self._next_token_plain(seqs, gather)

    def _next_token_plain(self, seqs, gather):
        torch = self._torch
        for idx in self._batches(TokenIds.of(seqs).lengths):
            batch = [seqs[i] for i in idx]
            ids, mask, pos, offs = self._pad(batch)
            last = [o + len(s) - 1 for o, s in zip(offs, batch)]
            rows = self._logits_at(ids, mask, pos, list(range(len(batch))), last)[:, : self.vocab_size].float()
            yield idx, torch.log_softmax(rows, dim=-1)[:, gather].cpu().numpy()

    @staticmethod
    def _prefix_groups(seqs, min_share: float = 0.5, max_group: int = 24):
        """Groups of prompts sharing a token prefix: [(members, prefix_len)], prefix_len >= 1 and
        shorter than every member (each member keeps at least one suffix token). ``seqs``: lists
        of token ids or :class:`TokenIds` (the same groups)."""
        seqs = TokenIds.of(seqs)
        lengths = seqs.lengths.tolist()
        order = sorted(range(len(seqs)), key=seqs.sort_key)  # the order of the id lists
        groups, cur, plen = [], [order[0]], lengths[order[0]] - 1
        for i in order[1:]:
            a, b = seqs.array(cur[0]), seqs.array(i)
            m = min(len(a), len(b))
            differ = np.flatnonzero(a[:m] != b[:m])
            lcp = int(differ[0]) if len(differ) else m  # the longest common prefix
            new = min(plen, lcp, lengths[i] - 1)
            if len(cur) < max_group and new >= 1 and new >= min_share * len(b):
                cur.append(i)
                plen = new
            else:
                groups.append((cur, plen))
                cur, plen = [i], lengths[i] - 1
        groups.append((cur, plen))
        return groups

    def _fits(self, groups, seqs) -> bool:
        """Whether a batch of prefix groups stays within the token budget (prefix pass plus
        suffix pass, padded)."""
        if self.token_budget is None:
            return True
        pmax = max(p for _, p in groups)
        members = [i for m, _ in groups for i in m]
        smax = max(int(seqs.lengths[i]) - p for m, p in groups for i in m)
        return len(groups) * pmax + len(members) * smax <= self.token_budget

    def _next_token_shared(self, seqs, gather):
        torch = self._torch
        seqs = TokenIds.of(seqs)
        groups = self._prefix_groups(seqs)
        plain = [g for g in groups if g[1] < 1]
        shared = [g for g in groups if g[1] >= 1]
        if plain:
            for i in (i for g, _ in plain for i in g):  # one-token prompts: nothing to share
                logits, _ = self._forward([seqs[i]])
                yield np.array([i]), torch.log_softmax(logits[0, len(seqs[i]) - 1, : self.vocab_size].float(),
                                                       -1)[gather][None].cpu().numpy()
        pad = self.tokenizer.pad_token_id
        # batches of groups with similar prefix lengths; about batch_size prompts per batch
        shared.sort(key=lambda g: g[1])
        start = 0
        while start < len(shared):
            batch, n_members = [], 0
            while start < len(shared) and (not batch or (
                    n_members + len(shared[start][0]) <= self.batch_size and self._fits(batch + [shared[start]], seqs))):
                batch.append(shared[start])
                n_members += len(shared[start][0])
                start += 1
            G = len(batch)
            pmax = max(p for _, p in batch)
            ids = torch.full((G, pmax), pad, dtype=torch.long)
            mask = torch.zeros((G, pmax), dtype=torch.long)
            for g, (members, p) in enumerate(batch):
                ids[g, pmax - p:] = torch.tensor(seqs[members[0]][:p])
                mask[g, pmax - p:] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            owner = [g for g, (members, _) in enumerate(batch) for _ in members]
            who = [i for members, _ in batch for i in members]
            sufs = [seqs[i][batch[g][1]:] for g, i in zip(owner, who)]
            smax = max(len(x) for x in sufs)
            sid = torch.full((len(who), smax), pad, dtype=torch.long)
            smask = torch.zeros((len(who), smax), dtype=torch.long)
            for j, x in enumerate(sufs):  # left-padded: every suffix ends in the last column
                sid[j, smax - len(x):] = torch.tensor(x)
                smask[j, smax - len(x):] = 1
            sid, smask = sid.to(self.device), smask.to(self.device)
            own = torch.tensor(owner, device=self.device)
            with torch.inference_mode():
                past = self._prefill(ids, mask, pos)  # the shared prefixes: KV cache only, no logits
                past.reorder_cache(own)
                plens = mask.sum(-1)[own]
                pos2 = (plens[:, None] + smask.cumsum(-1) - 1).clamp(min=0)
                mask2 = torch.cat([mask[own], smask], dim=1)
                logits = self.model(input_ids=sid, attention_mask=mask2, position_ids=pos2, **self._with_cache(past),
                                    use_cache=False, logits_to_keep=1).logits
            rows = logits[:, -1, : self.vocab_size].float()
            yield np.array(who), torch.log_softmax(rows, dim=-1)[:, gather].cpu().numpy()

    def next_token_logprobs_after(self, prompts: Sequence[str], after_ids: Sequence[int],
                                  token_ids: Sequence[int]) -> np.ndarray:
        """For each prompt and each token ``a`` in ``after_ids``: log-softmax of the logits after
        ``prompt tokens + [a]`` at ``token_ids``; shape (n, len(after_ids), len(token_ids)). One
        forward pass over the prompts, then the KV cache is repeated for the appended tokens.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> lp = backend.next_token_logprobs_after(["Answer: 0.", "Answer: 1."], after_ids=[5, 6], token_ids=[7, 8, 9])
        >>> lp.shape, lp.dtype, bool((lp < 0).all())
        ((2, 2, 3), dtype('float32'), True)
        """
        torch = self._torch
        prompts = check_prompts(prompts)
        after = torch.as_tensor(np.asarray(after_ids, dtype=np.int64), device=self.device)
        gather = torch.as_tensor(np.asarray(token_ids, dtype=np.int64), device=self.device)
        A = len(after_ids)
        seqs = self._encode(prompts)
        out = np.empty((len(seqs), A, len(token_ids)), dtype=np.float32)
        pad = self.tokenizer.pad_token_id
        for idx in self._batches([len(s) for s in seqs], max(1, self.batch_size // 2)):
            batch = [seqs[i] for i in idx]
            B, width = len(batch), max(len(s) for s in batch)
            ids = torch.full((B, width), pad, dtype=torch.long)
            mask = torch.zeros((B, width), dtype=torch.long)
            for j, s in enumerate(batch):  # left padding: the appended token follows the prompt
                ids[j, width - len(s):] = torch.tensor(s)
                mask[j, width - len(s):] = 1
            ids, mask = ids.to(self.device), mask.to(self.device)
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            with torch.inference_mode():
                past = self._prefill(ids, mask, pos)  # KV cache only, no logits
                past.batch_repeat_interleave(A)
                mask2 = torch.cat([mask.repeat_interleave(A, 0), torch.ones((B * A, 1), dtype=torch.long,
                                                                          device=self.device)], dim=1)
                pos2 = mask.sum(-1).repeat_interleave(A)[:, None]
                tok = after.repeat(B)[:, None]
                logits = self.model(input_ids=tok, attention_mask=mask2, position_ids=pos2, **self._with_cache(past),
                                    use_cache=False, logits_to_keep=1).logits[:, -1, : self.vocab_size].float()
            lp = torch.log_softmax(logits, dim=-1)[:, gather].reshape(B, A, -1)
            out[idx] = lp.cpu().numpy()
        return out

    def prompt_logprobs(self, prompts: Sequence[str]) -> RaggedLogprobs:
        """log p(token_t | tokens_<t) for every prompt token (BOS included as context; the first
        token gets NaN), flat float32 with offsets.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> rl = backend.prompt_logprobs(["one two three", "four"])
        >>> np.diff(rl.offsets).tolist() == [len(backend.tokenizer(t)["input_ids"]) for t in ["one two three", "four"]]
        True
        >>> bool(np.isnan(rl[0][0])), bool((rl[0][1:] < 0).all())
        (True, True)
        """
        torch = self._torch
        prompts = check_prompts(prompts)
        seqs = self._encode(prompts)
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        values = np.empty(offsets[-1], dtype=np.float32)
        token_ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs]).astype(np.int32)
        values[offsets[:-1]] = np.nan
        for idx in self._batches(lens.tolist()):
            batch = [seqs[i] for i in idx]
            if max(len(s) for s in batch) < 2:
                continue
            ids, mask, pos, offs = self._pad(batch)
            # the logits read: every position but each prompt's last (and no padding)
            rows = [j for j, s in enumerate(batch) for _ in range(len(s) - 1)]
            cols = [o + k for o, s in zip(offs, batch) for k in range(len(s) - 1)]
            seg = self._logits_at(ids, mask, pos, rows, cols)[:, : self.vocab_size].float()
            nxt = torch.tensor([t for s in batch for t in s[1:]], device=self.device)
            lp = (seg.gather(-1, nxt[:, None])[:, 0] - torch.logsumexp(seg, dim=-1)).cpu().numpy()
            at = 0
            for s, i in zip(batch, idx):
                values[offsets[i] + 1: offsets[i + 1]] = lp[at: at + len(s) - 1]
                at += len(s) - 1
        return RaggedLogprobs(values=values, offsets=offsets, token_ids=token_ids)

    def prompt_logprob_moments(self, prompts: Sequence[str]):
        """:meth:`prompt_logprobs` plus, at every scored position j, the mean and standard deviation
        of the log-probability over the whole vocabulary under the next-token distribution p_j:
        mu_j = sum_v p_j(v) log p_j(v), sigma_j^2 = sum_v p_j(v) (log p_j(v) - mu_j)^2 (Min-K%++,
        docs/methods/lookahead.md §1.4). Returns ``(RaggedLogprobs, mu, sigma)``, the last two flat
        float64 arrays aligned with the values (NaN at each prompt's first token). Log-softmax in
        float32, moments in float64.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> rl, mu, sigma = backend.prompt_logprob_moments(["one two three"])
        >>> np.allclose(rl.values, backend.prompt_logprobs(["one two three"]).values, atol=1e-5, equal_nan=True)
        True
        >>> mu.shape == rl.values.shape, bool((mu[1:] < 0).all() and (sigma[1:] >= 0).all())
        (True, True)
        """
        torch = self._torch
        prompts = check_prompts(prompts)
        seqs = self._encode(prompts)
        lens = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        values = np.full(offsets[-1], np.nan, dtype=np.float32)
        mu = np.full(offsets[-1], np.nan, dtype=np.float64)
        sigma = np.full(offsets[-1], np.nan, dtype=np.float64)
        token_ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in seqs]).astype(np.int32)
        for idx in self._batches(lens.tolist()):
            batch = [seqs[i] for i in idx]
            logits, offs = self._forward(batch)
            for j, i in enumerate(idx):
                s, o = batch[j], offs[j]
                n = len(s)
                if n < 2:
                    continue
                nxt = torch.tensor(s[1:], device=self.device)
                for c in range(0, n - 1, 256):  # 256 positions at a time: [256, vocab] float64 at most
                    e = min(c + 256, n - 1)
                    lsm = torch.log_softmax(logits[j, o + c: o + e, : self.vocab_size].float(), dim=-1)
                    lp = lsm.gather(-1, nxt[c:e, None])[:, 0]
                    ld = lsm.double()
                    p = ld.exp()
                    m = (p * ld).sum(-1)
                    var = (p * (ld - m[:, None]) ** 2).sum(-1)
                    a = offsets[i] + 1
                    values[a + c: a + e] = lp.cpu().numpy()
                    mu[a + c: a + e] = m.cpu().numpy()
                    sigma[a + c: a + e] = var.clamp_min(0).sqrt().cpu().numpy()
        return RaggedLogprobs(values=values, offsets=offsets, token_ids=token_ids), mu, sigma

    def generate(self, prompts: Sequence[str], max_new_tokens: int = 16) -> list[str]:
        """Greedy continuations (left padding, as generation needs).

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> texts = backend.generate(["Once upon a time", "Hello"], max_new_tokens=3)
        >>> len(texts), all(isinstance(t, str) for t in texts), texts == backend.generate(["Once upon a time", "Hello"], 3)
        (2, True, True)
        """
        torch = self._torch
        prompts = check_prompts(prompts)
        seqs = self._encode(prompts)
        out: list[str] = [""] * len(seqs)
        pad = self.tokenizer.pad_token_id
        for idx in self._batches([len(s) for s in seqs]):
            batch = [seqs[i] for i in idx]
            width = max(len(s) for s in batch)
            ids = torch.full((len(batch), width), pad, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for j, s in enumerate(batch):
                ids[j, width - len(s):] = torch.tensor(s)
                mask[j, width - len(s):] = 1
            with torch.inference_mode():
                gen = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                          max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad)
            for j, i in enumerate(idx):
                out[i] = self.tokenizer.decode(gen[j, width:].tolist(), skip_special_tokens=True)
        return out

    def chat_prompt(self, user: str, prefill: str, system: str | None = None) -> str:
        """The chat-formatted prompt ending right after the assistant prefill
        (:func:`~llmsurrogate.llm.prompts.apply_chat_template`).

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> print(backend.chat_prompt("Is the sky blue?", prefill="Answer:"))
        <|im_start|>user
        Is the sky blue?<|im_end|>
        <|im_start|>assistant
        Answer:
        """
        if not getattr(self.tokenizer, "chat_template", None):
            raise InvalidArgumentError(f"the tokenizer at {self.path} has no chat template")
        return apply_chat_template(self.tokenizer, user, prefill=prefill, system=system)

    def close(self) -> None:
        """Drop the model (and, on a GPU, free its cached memory); the backend cannot score after this.

        Examples
        --------
        >>> import tempfile
        >>> from llmsurrogate import testing
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     backend = TransformersBackend(testing.build_model(folder, hidden=16, layers=1), device="cpu")
        >>> backend.close()
        >>> hasattr(backend, "model")
        False
        """
        del self.model
        if self.device.type == "cuda":
            self._torch.cuda.empty_cache()


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
