//! Bindings for `crate::fe`. The Python package (`llmsurrogate.fe`) passes C-contiguous arrays:
//! the columns as rows of a (p, n) float64 array, the fixed-effect codes as rows of a (k, n)
//! uint32 array.

use super::parallel::run_detached;
use crate::fe as k;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// Demean the rows of `x` (p, n) over the fixed effects `codes` (k, n) with `n_groups` levels
/// each; returns (demeaned (p, n), iterations per column, relative residual per column,
/// converged).
#[pyfunction]
#[pyo3(signature = (x, codes, n_groups, weights=None, tol=1e-12, maxiter=10_000, n_jobs=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn fe_demean<'py>(
    py: Python<'py>, x: PyReadonlyArray2<'py, f64>, codes: PyReadonlyArray2<'py, u32>, n_groups: Vec<usize>,
    weights: Option<PyReadonlyArray1<'py, f64>>, tol: f64, maxiter: usize, n_jobs: Option<i64>,
) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<usize>>, Bound<'py, PyArray1<f64>>, bool)> {
    let (p, n) = (x.shape()[0], x.shape()[1]);
    let (nfe, nc) = (codes.shape()[0], codes.shape()[1]);
    let xs = x.as_slice()?;
    let cs = codes.as_slice()?;
    let ws = match &weights {
        Some(w) => Some(w.as_slice()?),
        None => None,
    };
    if nc != n {
        crate::common::errors::check::same_len("codes columns", nc, "x columns", n)?;
    }
    let out = run_detached(py, n_jobs, p.saturating_mul(n), || {
        let rows: Vec<&[u32]> = if n == 0 { Vec::new() } else { cs.chunks(n).take(nfe).collect() };
        let fe = k::FixedEffects::new(rows, n_groups, ws)?;
        k::demean(xs, &fe, ws, tol, maxiter)
    })?;
    let values = out.values.into_pyarray(py).reshape([p, n])?;
    Ok((values, out.iterations.into_pyarray(py), out.residual.into_pyarray(py), out.converged))
}
