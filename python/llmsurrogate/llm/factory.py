"""Backends and tasks from names: the one place that turns a backend kind, a model folder and a
task name or TOML file into objects. Used by the CLI, :func:`llmsurrogate.risk.score_table` and R.

>>> make_backend("openai", "m")
Traceback (most recent call last):
...
llmsurrogate.exceptions.InvalidArgumentError: argument `backend` must be one of ['transformers', 'vllm']; got 'openai'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._validation import check_choice, check_int
from ..exceptions import InvalidArgumentError

__all__ = ["BACKENDS", "make_backend", "load_task"]

#: Backend kinds :func:`make_backend` knows.
BACKENDS = ("transformers", "vllm")


def make_backend(kind: str, model: str, *, device: str | None = None, batch_size: int | None = None) -> Any:
    """A backend of ``kind`` (``"transformers"`` or ``"vllm"``) on the local model folder ``model``.

    ``device`` and ``batch_size`` apply to the transformers backend (``None``: its defaults, cuda
    when available; 16 prompts per pass on the CPU, on a GPU up to 512 and 65,536 padded tokens).
    """
    check_choice(kind, "backend", list(BACKENDS))
    if batch_size is not None:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    if kind == "transformers":
        from .hf import TransformersBackend

        return TransformersBackend(model, device=device, batch_size=batch_size)
    from .vllm import VLLMBackend

    return VLLMBackend(model)


def load_task(spec: Any, arg: str = "task") -> Any:
    """A :class:`~llmsurrogate.llm.tasks.Task`: ``spec`` is a Task, a TOML file or a built-in task
    name (``"ACSIncome"``)."""
    from .tasks import Task, task_from_dict

    if isinstance(spec, Task):
        return spec
    path = Path(str(spec))
    if path.suffix.lower() == ".toml" or path.exists():
        if not path.exists():
            raise InvalidArgumentError(f"argument `{arg}`: no such file {spec}")
        return Task.from_toml(path)
    return task_from_dict({"preset": str(spec)})
