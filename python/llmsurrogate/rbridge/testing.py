"""R adapter of :mod:`llmsurrogate.testing`: R's ``synthetic_census()`` and ``tiny_model()``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import testing

__all__ = ["R_FUNCTIONS", "r_tiny_model"]

#: The settings of R's ``tiny_model()``: 300 steps of 32 prompts at width 32 with a peak learning rate of
#: 0.02 on 1,500 rows train in about half a minute on one CPU thread (26-30 s measured on a loaded 2-core
#: machine; as much from R, where torch keeps its own BLAS, :mod:`._blas`), and the model's numeric scores
#: then carry the synthetic outcome's signal (ROC AUC 0.70-0.74 on 200 held-out rows, against 0.79 for the
#: true probabilities). ``train_tiny_model``'s own defaults
#: (width 64, 3,000 rows, learning rate 0.01) take 75-120 s.
TINY_MODEL = {"steps": 300, "batch_size": 32, "hidden": 32, "n_rows": 1500, "lr": 0.02}

#: The task file written next to the model: the task the model was trained on.
TASK_FILE = "task.toml"


def r_tiny_model(path: str, steps: Any = TINY_MODEL["steps"], hidden: Any = TINY_MODEL["hidden"],
                 n_rows: Any = TINY_MODEL["n_rows"], batch_size: Any = TINY_MODEL["batch_size"],
                 lr: Any = TINY_MODEL["lr"], seed: Any = 0) -> dict:
    """:func:`llmsurrogate.testing.train_tiny_model` for the R package, with settings that train in
    well under a minute (:data:`TINY_MODEL`), and the task it was trained on
    (:func:`~llmsurrogate.testing.synthetic_income_task`) written to ``<path>/task.toml``, so that
    R's ``risk_scores(data, task = m$task, model = m$model, method = "numeric")`` scores rows with
    it. Returns ``{"model", "task", "seconds", "final_loss", "steps"}``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     m = r_tiny_model(folder + "/tiny", steps=3, hidden=16, n_rows=32, batch_size=4)
    ...     sorted(m), Path(m["task"]).name
    (['final_loss', 'model', 'seconds', 'steps', 'task'], 'task.toml')
    """
    info = testing.train_tiny_model(path, steps=int(steps), hidden=int(hidden), n_rows=int(n_rows),
                                    batch_size=int(batch_size), lr=float(lr), seed=int(seed))
    task = Path(path) / TASK_FILE
    testing.synthetic_income_task().to_toml(task)
    return {"model": str(Path(path)), "task": str(task), "seconds": info["seconds"], "final_loss": info["final_loss"],
            "steps": info["steps"]}


#: What R may call here (``.call("testing.<name>")``): ``synthetic_census`` itself (R's words and values
#: cross unchanged) and the adapter of ``tiny_model``.
R_FUNCTIONS = {"synthetic_census": testing.synthetic_census, "tiny_model": r_tiny_model}
