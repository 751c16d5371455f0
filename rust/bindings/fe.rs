//! Bindings for `crate::fe`. The Python package (`llmsurrogate.fe`) passes C-contiguous arrays:
//! the columns as rows of a (p, n) float64 array, the fixed-effect codes as rows of a (k, n)
//! uint32 array.

use super::parallel::run_detached;
use super::slice;
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
    let xs = slice(&x)?;
    let cs = slice(&codes)?;
    let ws = weights.as_ref().map(slice).transpose()?;
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

/// Pairs bootstrap of coefficient `coef` (index among the regressors) of the fixed-effects OLS of
/// row 0 of `x` (p, n) on rows 1..: `reps` replications, rows (`blocks=None`) or the blocks
/// `blocks` (n codes in 0..n_blocks) resampled as integer weights; returns (draws, singular
/// replications, unconverged replications). Parallel over replications, GIL released.
#[pyfunction]
#[pyo3(signature = (x, codes, n_groups, coef, reps, seed, blocks=None, n_blocks=0, tol=1e-12, maxiter=10_000, collin_tol=1e-9, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub fn fe_bootstrap<'py>(
    py: Python<'py>, x: PyReadonlyArray2<'py, f64>, codes: PyReadonlyArray2<'py, u32>, n_groups: Vec<usize>, coef: usize,
    reps: usize, seed: u64, blocks: Option<PyReadonlyArray1<'py, u32>>, n_blocks: usize, tol: f64, maxiter: usize,
    collin_tol: f64, n_jobs: Option<i64>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, usize, usize)> {
    let n = x.shape()[1];
    let (nfe, nc) = (codes.shape()[0], codes.shape()[1]);
    if nc != n {
        crate::common::errors::check::same_len("codes columns", nc, "x columns", n)?;
    }
    let xs = slice(&x)?;
    let cs = slice(&codes)?;
    let bs = blocks.as_ref().map(slice).transpose()?;
    let out = run_detached(py, n_jobs, usize::MAX, || {
        let rows: Vec<&[u32]> = if n == 0 { Vec::new() } else { cs.chunks(n).take(nfe).collect() };
        let resample = match bs {
            Some(b) => k::Resample::Blocks { codes: b, n_blocks },
            None => k::Resample::Obs,
        };
        k::bootstrap_coef(xs, &rows, &n_groups, resample, coef, reps, seed, tol, maxiter, collin_tol)
    })?;
    Ok((out.draws.into_pyarray(py), out.n_singular, out.n_unconverged))
}

/// The resampling counts of replication `b` (for reference implementations and tests).
#[pyfunction]
#[pyo3(signature = (n, seed, b, blocks=None, n_blocks=0))]
pub fn fe_bootstrap_counts<'py>(
    py: Python<'py>, n: usize, seed: u64, b: usize, blocks: Option<PyReadonlyArray1<'py, u32>>, n_blocks: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let resample = match &blocks {
        Some(bl) => k::Resample::Blocks { codes: slice(bl)?, n_blocks },
        None => k::Resample::Obs,
    };
    if let k::Resample::Blocks { codes, n_blocks } = resample {
        crate::common::errors::check::same_len("blocks", codes.len(), "n", n)?;
        if let Some(i) = codes.iter().position(|&g| g as usize >= n_blocks) {
            use crate::common::errors::{CoreError, Part};
            let parts = vec![
                Part::text(format!("code {} at ", codes[i])),
                Part::at("row", i),
                Part::text(format!(", but only {n_blocks} blocks")),
            ];
            return Err(CoreError::invalid_at("blocks", parts).into());
        }
    }
    Ok(k::replicate_counts(n, resample, seed, b)?.into_pyarray(py))
}

/// Add this capability's functions to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fe_demean, m)?)?;
    m.add_function(wrap_pyfunction!(fe_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(fe_bootstrap_counts, m)?)?;
    Ok(())
}
