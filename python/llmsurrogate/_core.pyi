"""Type stubs for the compiled Rust core (``rust/bindings``)."""

import numpy as np
import numpy.typing as npt
from typing import Any

__version__: str
THREADS_ENV: str
LEVEL_TOL: float

def resolve_threads(n_jobs: int | None = None) -> int: ...
def upper_quantiles(values: npt.NDArray[np.float64], taus: npt.NDArray[np.float64], n_jobs: int | None = None) -> npt.NDArray[np.float64]: ...
def lower_quantiles(values: npt.NDArray[np.float64], taus: npt.NDArray[np.float64], n_jobs: int | None = None) -> npt.NDArray[np.float64]: ...
def weighted_upper_quantiles(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], taus: npt.NDArray[np.float64], inf_weight: float = 0.0, n_jobs: int | None = None) -> npt.NDArray[np.float64]: ...
def weighted_lower_quantiles(values: npt.NDArray[np.float64], weights: npt.NDArray[np.float64], taus: npt.NDArray[np.float64], inf_weight: float = 0.0, n_jobs: int | None = None) -> npt.NDArray[np.float64]: ...

def nls_fit_subsets(
    family: str, theta: npt.NDArray[np.float64], free: npt.NDArray[np.int64], lower: npt.NDArray[np.float64],
    upper: npt.NDArray[np.float64], starts: npt.NDArray[np.float64], z1: npt.NDArray[np.float64], z2: npt.NDArray[np.float64],
    p: npt.NDArray[np.float64], y: npt.NDArray[np.float64], offsets: npt.NDArray[np.int64], subsets: npt.NDArray[np.int64],
    max_iter: int = 500, ftol: float = 1e-15, xtol: float = 1e-12, gtol: float = 1e-12,
    n_jobs: int | None = None,
) -> dict[str, Any]:
    """Fit an EU/CPT model by bounded Levenberg-Marquardt on each training subset of domains
    (rows ``offsets[d]:offsets[d+1]`` are domain ``d``; ``subsets`` is (S, r)); returns theta (S, P),
    train_mse (S,), mse (S, n) on every domain, converged (S,), iterations (S,), status (list)."""

def nls_predict(family: str, theta: npt.NDArray[np.float64], z1: npt.NDArray[np.float64], z2: npt.NDArray[np.float64],
                p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Certainty equivalents under the full parameter vector ``theta`` of ``family``."""
