//! The one place where a [`CoreError`] becomes a Python exception: `From<CoreError> for PyErr`,
//! so binding code propagates kernel errors with `?`.

use crate::common::errors::{CoreError, Part};
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

/// The message of an error that names positions, as `llmsurrogate._positions.located(*parts)`
/// with each position an `at(index, word)`: Python's text is the [`CoreError`]'s own (0-based),
/// and the positions travel as data (`err.positions`; R's text counts them from 1).
fn located<'py>(py: Python<'py>, parts: &[Part]) -> PyResult<Bound<'py, PyAny>> {
    let module = py.import("llmsurrogate._positions")?;
    let at = module.getattr("at")?;
    let mut items: Vec<Bound<'py, PyAny>> = Vec::with_capacity(parts.len());
    for part in parts {
        items.push(match part {
            Part::Text(t) => t.into_pyobject(py)?.into_any(),
            Part::At { word, index } => at.call1((*index, *word))?,
        });
    }
    module.getattr("located")?.call1(PyTuple::new(py, items)?)
}

/// Raise the `llmsurrogate.exceptions` class named by [`CoreError::python_class`], with the
/// error's message (a `Located` built by [`located`] when it names positions, so `err.positions`
/// holds them and R reads them 1-based; the plain text if that cannot be built). Those classes
/// derive from both `LLMSurrogateError` and the matching builtin (`ValueError`, ...;
/// `ResourceError` also from `MemoryError`). If the Python package cannot be
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
            let positioned = err.parts().and_then(|parts| located(py, &parts).ok()).map(Bound::unbind);
            match (class, positioned) {
                (Ok(cls), Some(msg)) => PyErr::from_type(cls, msg),
                (Ok(cls), None) => PyErr::from_type(cls, message),
                (Err(_), _) if matches!(err, CoreError::TooLarge { .. }) => PyMemoryError::new_err(message),
                (Err(_), _) => PyValueError::new_err(message),
            }
        })
    }
}
