"""Backends and tasks from names: the one place that turns a backend kind, a model folder and a
task name or TOML file into objects. Used by the CLI, :func:`llmsurrogate.risk.score_table` and R.

:func:`as_backend` is the one way a public function reads its ``backend`` argument: a backend
object as it is, or a backend name (``"transformers"``/``"hf"``, ``"vllm"``, ``"openai"``) with
``model=`` (what R and the command line pass) built by :func:`make_backend`.

>>> make_backend("llamacpp", "m")
Traceback (most recent call last):
...
llmsurrogate.exceptions.InvalidArgumentError: argument `backend` must be one of ['transformers', 'vllm', 'openai']; got 'llamacpp'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._validation import check_choice, check_int
from ..exceptions import InvalidArgumentError, LLMSurrogateError
from .hf import TransformersBackend
from .openai_backend import OpenAIBackend
from .tasks import Task, task_from_dict
from .vllm import VLLMBackend

__all__ = ["BACKENDS", "BACKEND_ALIASES", "as_backend", "make_backend", "load_task"]

#: Backend kinds :func:`make_backend` knows.
BACKENDS = ("transformers", "vllm", "openai")

#: Other names :func:`as_backend` accepts for a backend kind (the extras' names).
BACKEND_ALIASES = {"hf": "transformers"}

#: Options :func:`make_backend` passes to :class:`~llmsurrogate.llm.openai_backend.OpenAIBackend`.
OPENAI_OPTIONS = ("base_url", "api_key_env", "endpoint", "top_logprobs", "match_case", "system", "temperature", "seed",
                  "concurrency", "requests_per_minute", "tokens_per_minute", "max_retries", "backoff", "max_backoff",
                  "timeout", "prices", "max_cost", "max_tokens", "cache", "extra_body", "token_ids")


def make_backend(kind: str, model: str, *, device: str | None = None, batch_size: int | None = None,
                 **options: Any) -> Any:
    """A backend of ``kind``: ``"transformers"`` or ``"vllm"`` on the local model folder ``model``,
    or ``"openai"``: the model named ``model`` behind an OpenAI-compatible endpoint (``base_url``,
    the key in the environment variable ``api_key_env``; the other ``options`` are those of
    :class:`~llmsurrogate.llm.openai_backend.OpenAIBackend`, e.g. ``concurrency``, ``prices``,
    ``max_cost``, ``cache``).

    ``device`` and ``batch_size`` apply to the transformers backend (``None``: its defaults, cuda
    when available; 16 prompts per pass on the CPU, on a GPU up to 512 and 65,536 padded tokens)
    and to the vllm backend (``device``: ``"cuda"`` or ``"cpu"``, the installed vLLM's platform by
    default; ``batch_size``: sequences per engine step, vLLM's ``max_num_seqs``).

    Examples
    --------
    A tiny random GPT-2 built on the spot (``llmsurrogate.testing``) stands in for a model folder:

    >>> import tempfile
    >>> from llmsurrogate import testing
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     backend = make_backend("transformers", str(testing.build_model(folder)), device="cpu", batch_size=4)
    >>> backend.identity["backend"], backend.batch_size
    ('transformers', 4)
    >>> make_backend("vllm", "my-model", base_url="http://127.0.0.1:8000/v1")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: option(s) ['base_url'] apply to the openai backend only, not 'vllm'
    """
    check_choice(kind, "backend", list(BACKENDS))
    options = {k: v for k, v in options.items() if v is not None}
    if kind == "openai":
        bad = sorted(set(options) - set(OPENAI_OPTIONS))
        if bad:
            raise InvalidArgumentError(f"unknown option(s) {bad} for the openai backend; known: {list(OPENAI_OPTIONS)}")
        return OpenAIBackend(model, **options)
    options.pop("cache", None)  # local backends: the scoring layer's cache is the only one
    if options:
        raise InvalidArgumentError(f"option(s) {sorted(options)} apply to the openai backend only, not {kind!r}")
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if kind == "transformers":
        return TransformersBackend(model, device=device, batch_size=batch_size)
    return VLLMBackend(model, device=device, batch_size=batch_size)


def as_backend(backend: Any, model: str | None = None, **options: Any) -> Any:
    """The backend object that ``backend`` names: the one reading of every public ``backend``
    argument (:func:`llmsurrogate.risk.risk_scores`, :func:`llmsurrogate.lookahead.lap`,
    :func:`llmsurrogate.lookahead.forecast`, the scoring helpers of :mod:`llmsurrogate.llm.scoring`).

    Parameters
    ----------
    backend : a backend object (:class:`~llmsurrogate.llm.base.CallableBackend`,
        ``TransformersBackend``, ``VLLMBackend``, ``OpenAIBackend``, ...), returned as it is; or a
        backend name, ``"transformers"`` (also ``"hf"``), ``"vllm"`` or ``"openai"``, built by
        :func:`make_backend` on ``model``.
    model : with a backend name: the local model folder (``"openai"``: the served model's name).
    options : with a backend name: :func:`make_backend`'s (``device``, ``batch_size``, the openai
        backend's ``base_url``, ``concurrency``, ...); ``None`` values are left out.

    Examples
    --------
    A backend object is returned as it is; a name is built on a model folder (here a tiny random
    Llama made on the spot by ``llmsurrogate.testing``):

    >>> import math, tempfile
    >>> from llmsurrogate import testing
    >>> from llmsurrogate.llm import CallableBackend
    >>> stand_in = CallableBackend(lambda prompt: {" A": math.log(0.3), " B": math.log(0.7)})
    >>> as_backend(stand_in) is stand_in
    True
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     kind = type(as_backend("hf", str(testing.build_model(folder, "llama")), device="cpu")).__name__
    >>> kind
    'TransformersBackend'
    >>> as_backend("vllm")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: argument `model` is needed with backend='vllm': the local model folder (for 'openai': the served model's name)
    >>> as_backend(stand_in, "my-model")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: argument `model` and backend options go with a backend name, not with a CallableBackend object
    """
    if isinstance(backend, str):
        kind = BACKEND_ALIASES.get(backend, backend)
        if model is None:
            check_choice(kind, "backend", list(BACKENDS))
            raise InvalidArgumentError(f"argument `model` is needed with backend={backend!r}: the local model folder "
                                       "(for 'openai': the served model's name)")
        return make_backend(kind, model, **options)
    if backend is None:
        raise InvalidArgumentError(f"argument `backend` must be a backend object or one of {list(BACKENDS)}; got None")
    if model is not None or any(v is not None for v in options.values()):
        raise InvalidArgumentError("argument `model` and backend options go with a backend name, not with a "
                                   f"{type(backend).__name__} object")
    return backend


def load_task(spec: Any, arg: str = "task") -> Any:
    """A :class:`~llmsurrogate.llm.tasks.Task`: ``spec`` is a Task, a TOML file or a built-in task
    name (``"ACSIncome"``).

    Examples
    --------
    >>> task = load_task("ACSIncome")
    >>> task.name, task.label_name, task.features[:3]
    ('ACSIncome', 'PINCP>50000', ('AGEP', 'COW', 'SCHL'))
    >>> load_task("my_task.toml")
    Traceback (most recent call last):
    ...
    llmsurrogate.exceptions.InvalidArgumentError: argument `task`: no such file my_task.toml
    """
    if isinstance(spec, Task):
        return spec
    path = Path(str(spec))
    if path.suffix.lower() == ".toml" or path.exists():
        if not path.exists():
            raise InvalidArgumentError(f"argument `{arg}`: no such file {spec}")
        try:
            return Task.from_toml(path)
        except LLMSurrogateError as err:  # unreadable, not UTF-8, incomplete or unsafe (a template field)
            raise type(err)(f"argument `{arg}`: {err}") from None
    return task_from_dict({"preset": str(spec)})
