//! The one place where a [`CoreError`] becomes a Python exception: `From<CoreError> for PyErr`,
//! so binding code propagates kernel errors with `?`.

use crate::common::errors::CoreError;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

/// Raise the `llmsurrogate.exceptions` class named by [`CoreError::python_class`], with the
/// error's message. Those classes derive from both `LLMSurrogateError` and the matching builtin
/// (`ValueError`, ...; `ResourceError` also from `MemoryError`). If the Python package cannot be
/// imported (the extension used on its own) a plain `ValueError` is raised (`MemoryError` for
/// [`CoreError::TooLarge`]).
impl From<CoreError> for PyErr {
    fn from(err: CoreError) -> PyErr {
        // Bindings convert with the GIL held (after `py.detach` has returned), so this attaches
        // to the current thread state and costs nothing more.
        Python::attach(|py| {
            let message = err.to_string();
            let class = py
                .import("llmsurrogate.exceptions")
                .and_then(|m| m.getattr(err.python_class()))
                .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
            match class {
                Ok(cls) => PyErr::from_type(cls, message),
                Err(_) if matches!(err, CoreError::TooLarge { .. }) => PyMemoryError::new_err(message),
                Err(_) => PyValueError::new_err(message),
            }
        })
    }
}
