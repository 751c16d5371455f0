//! The one place where a [`CoreError`] becomes a Python exception, and the helper every binding
//! uses to run a kernel with the GIL released on a sized thread pool.

use crate::errors::{CoreError, CoreResult};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// Raise the `llmsurrogate.exceptions` class named by [`CoreError::python_class`]. Those classes
/// derive from both `LLMSurrogateError` and the matching builtin (`ValueError`, ...). If the
/// Python package cannot be imported (the extension used on its own) a plain `ValueError` is raised.
pub fn to_pyerr(py: Python<'_>, err: CoreError) -> PyErr {
    let message = err.to_string();
    let class = py
        .import("llmsurrogate.exceptions")
        .and_then(|m| m.getattr(err.python_class()))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(cls) => PyErr::from_type(cls, message),
        Err(_) => PyValueError::new_err(message),
    }
}

/// Run `kernel` with the GIL released, on the pool sized by `n_jobs` (on the calling thread when
/// `items`, the input size, is small), mapping errors.
pub fn run_detached<T: Send>(
    py: Python<'_>,
    n_jobs: Option<i64>,
    items: usize,
    kernel: impl FnOnce() -> CoreResult<T> + Send,
) -> PyResult<T> {
    py.detach(|| crate::parallel::install_for(n_jobs, items, kernel)).map_err(|e| to_pyerr(py, e))
}

/// The thread count a kernel would use for this `n_jobs` (None reads LLMSURROGATE_NUM_THREADS).
#[pyfunction]
#[pyo3(signature = (n_jobs=None))]
pub fn resolve_threads(py: Python<'_>, n_jobs: Option<i64>) -> PyResult<usize> {
    crate::parallel::resolve_threads(n_jobs).map_err(|e| to_pyerr(py, e))
}
