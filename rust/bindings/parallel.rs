//! Thread-pool plumbing of the bindings: every kernel call runs through [`run_detached`], with the
//! GIL released, on the pool `common::parallel` sizes from `n_jobs`.

use crate::common::errors::CoreResult;
use crate::common::parallel;
use pyo3::prelude::*;

/// Run `kernel` with the GIL released, on the pool sized by `n_jobs` (on the calling thread when
/// `items`, the input size, is small), mapping errors.
pub fn run_detached<T: Send>(
    py: Python<'_>,
    n_jobs: Option<i64>,
    items: usize,
    kernel: impl FnOnce() -> CoreResult<T> + Send,
) -> PyResult<T> {
    Ok(py.detach(|| parallel::install_for(n_jobs, items, kernel))?)
}

/// The thread count a kernel would use for this `n_jobs` (None reads LLMSURROGATE_NUM_THREADS),
/// at most `max_threads()`.
#[pyfunction]
#[pyo3(signature = (n_jobs=None))]
pub fn resolve_threads(n_jobs: Option<i64>) -> PyResult<usize> {
    Ok(parallel::resolve_threads(n_jobs)?)
}

/// The most worker threads a kernel uses (twice the logical cores, at least 4): a larger `n_jobs`
/// is lowered to it.
#[pyfunction]
pub fn max_threads() -> usize {
    parallel::max_threads()
}

/// Add the thread-count functions and the pool-cache bound `MAX_CACHED_POOLS` to `_core` (called
/// once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_CACHED_POOLS", parallel::MAX_CACHED_POOLS)?;
    m.add_function(wrap_pyfunction!(resolve_threads, m)?)?;
    m.add_function(wrap_pyfunction!(max_threads, m)?)?;
    Ok(())
}
