//! Bindings for `crate::ess`, the forest walk included. The Python package (`llmsurrogate.ess`)
//! passes C-contiguous float64 arrays (the fast prediction passes scikit-learn's fitted trees
//! as they are); prediction chunks are borrowed without copies and processed with the GIL
//! released.

use super::parallel::run_detached;
use super::slice;
use crate::common::errors::CoreError;
use crate::ess as k;
use crate::ess::forest::{predict_mean, Forest};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn pieces_dict<'py>(py: Python<'py>, p: &k::Pieces) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("blocks", p.blocks)?;
    d.set_item("n_used", p.n_used)?;
    d.set_item("ecv", p.ecv)?;
    d.set_item("v_train", p.v_train)?;
    d.set_item("v_test", p.v_test)?;
    d.set_item("cov", p.cov)?;
    d.set_item("sigma2_fixed_n", p.sigma2_fixed_n)?;
    d.set_item("sigma2_fixed_b", p.sigma2_fixed_b)?;
    d.set_item("sigma2_bm", p.sigma2_bm)?;
    Ok(d)
}

fn pieces_from(d: &Bound<'_, PyDict>) -> PyResult<k::Pieces> {
    let get_f = |key: &str| -> PyResult<f64> {
        d.get_item(key)?.ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))?.extract()
    };
    let get_u = |key: &str| -> PyResult<usize> {
        d.get_item(key)?.ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))?.extract()
    };
    Ok(k::Pieces {
        blocks: get_u("blocks")?,
        n_used: get_u("n_used")?,
        ecv: get_f("ecv")?,
        v_train: get_f("v_train")?,
        v_test: get_f("v_test")?,
        cov: get_f("cov")?,
        sigma2_fixed_n: get_f("sigma2_fixed_n")?,
        sigma2_fixed_b: get_f("sigma2_fixed_b")?,
        sigma2_bm: get_f("sigma2_bm")?,
    })
}

/// Whether the run-time-selected AVX2 accumulation kernels are in use.
#[pyfunction]
pub fn ess_uses_avx2() -> bool {
    k::uses_avx2()
}

/// The documented SplitMix64 + Fisher–Yates permutation of 0..n (as int64). An `n` whose 8·n
/// bytes this process cannot allocate raises `ResourceError` naming `n`.
#[pyfunction]
pub fn ess_permutation<'py>(py: Python<'py>, n: usize, seed: u64) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let perm = run_detached(py, Some(1), 0, || k::permutation(n, seed))?;
    // values < n <= isize::MAX; the map reuses the u64 buffer (same size and alignment)
    let p: Vec<i64> = perm.into_iter().map(|v| v as i64).collect();
    Ok(p.into_pyarray(py))
}

/// Per-observation losses of a prediction vector.
#[pyfunction]
#[pyo3(signature = (loss, pred, y, eps=1e-6))]
pub fn ess_losses<'py>(py: Python<'py>, loss: &str, pred: PyReadonlyArray1<'py, f64>, y: PyReadonlyArray1<'py, f64>, eps: f64) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let kind = k::LossKind::parse(loss, eps)?;
    let (p, yy) = (slice(&pred)?, slice(&y)?);
    Ok(run_detached(py, Some(1), 0, || k::losses(kind, p, yy))?.into_pyarray(py))
}

/// Variance pieces from ê_b and L̄_i (docs/methods/ess.md §4.5).
#[pyfunction]
pub fn ess_variance_pieces<'py>(py: Python<'py>, e_b: PyReadonlyArray1<'py, f64>, lbar: PyReadonlyArray1<'py, f64>, n_train: usize) -> PyResult<Bound<'py, PyDict>> {
    let (e, l) = (slice(&e_b)?, slice(&lbar)?);
    let p = run_detached(py, Some(1), 0, || k::variance_pieces(e, l, n_train))?;
    pieces_dict(py, &p)
}

/// Algorithm 3.1 over grid points given as dicts {n_train, plain, diff, llm_var}.
#[pyfunction]
#[pyo3(signature = (points, z_crit, regime="hybrid", hybrid_min_blocks=40, variance="difference"))]
pub fn ess_sequential_test<'py>(
    py: Python<'py>, points: Vec<Bound<'py, PyDict>>, z_crit: f64, regime: &str, hybrid_min_blocks: usize, variance: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let reg = k::Regime::parse(regime, hybrid_min_blocks)?;
    let var = match variance {
        "difference" => k::VarianceKind::Difference,
        "sum" => k::VarianceKind::Sum,
        other => {
            return Err(CoreError::invalid("variance", format!("unknown variance {other:?}; use 'difference' or 'sum'")).into())
        }
    };
    let mut pts = Vec::with_capacity(points.len());
    for d in &points {
        let get = |key: &str| -> PyResult<Bound<'py, PyAny>> {
            d.get_item(key)?.ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(key.to_string()))
        };
        pts.push(k::GridPoint {
            n_train: get("n_train")?.extract()?,
            plain: pieces_from(get("plain")?.cast::<PyDict>()?)?,
            diff: pieces_from(get("diff")?.cast::<PyDict>()?)?,
            llm_var: get("llm_var")?.extract()?,
        });
    }
    let res = k::sequential_test(&pts, z_crit, reg, var)?;
    let out = PyDict::new(py);
    out.set_item("lower_bound", res.lower_bound)?;
    out.set_item("stop_index", res.stop_index)?;
    let col = |f: &dyn Fn(&k::TestRow) -> f64| -> Vec<f64> { res.rows.iter().map(f).collect() };
    out.set_item("variance", col(&|r| r.variance).into_pyarray(py))?;
    out.set_item("se", col(&|r| r.se).into_pyarray(py))?;
    out.set_item("z", col(&|r| r.z).into_pyarray(py))?;
    out.set_item("lower", col(&|r| r.lower).into_pyarray(py))?;
    out.set_item("reject", res.rows.iter().map(|r| r.reject).collect::<Vec<bool>>())?;
    out.set_item("fixed_n", res.rows.iter().map(|r| r.fixed_n).collect::<Vec<bool>>())?;
    out.set_item("degenerate", res.rows.iter().map(|r| r.degenerate).collect::<Vec<bool>>())?;
    out.set_item("fell_back_to_bm", res.rows.iter().map(|r| r.fell_back_to_bm).collect::<Vec<bool>>())?;
    Ok(out)
}

/// Streaming block-out accumulator for one training size (see `crate::ess::BlockOutAccumulator`).
#[pyclass(module = "llmsurrogate._core")]
pub struct BlockOutAccumulator {
    inner: k::BlockOutAccumulator,
}

#[pymethods]
impl BlockOutAccumulator {
    #[new]
    #[pyo3(signature = (y, n_train, loss="squared", llm_loss=None, eps=1e-6))]
    fn new(y: PyReadonlyArray1<'_, f64>, n_train: usize, loss: &str, llm_loss: Option<PyReadonlyArray1<'_, f64>>, eps: f64) -> PyResult<Self> {
        let kind = k::LossKind::parse(loss, eps)?;
        let ll = llm_loss.as_ref().map(slice).transpose()?;
        let inner = k::BlockOutAccumulator::new(slice(&y)?, n_train, kind, ll)?;
        Ok(Self { inner })
    }

    #[getter]
    fn blocks(&self) -> usize {
        self.inner.blocks()
    }
    #[getter]
    fn n_used(&self) -> usize {
        self.inner.n_used()
    }
    #[getter]
    fn next_block(&self) -> usize {
        self.inner.next_block()
    }

    /// Add a chunk of prediction rows (blocks b0 .. b0 + rows), each of width n_used or n_used − N.
    #[pyo3(signature = (b0, preds, n_jobs=None))]
    fn add_blocks(&mut self, py: Python<'_>, b0: usize, preds: PyReadonlyArray2<'_, f64>, n_jobs: Option<i64>) -> PyResult<()> {
        let width = preds.shape()[1];
        let p = slice(&preds)?;
        let inner = &mut self.inner;
        run_detached(py, n_jobs, p.len(), || inner.add_blocks(b0, p, width))
    }

    /// Finish and return a dict of arrays and variance pieces.
    fn finalize<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let inner = &self.inner;
        let r = run_detached(py, Some(1), 0, || inner.finalize())?;
        let d = PyDict::new(py);
        d.set_item("n_train", r.n_block)?;
        d.set_item("blocks", r.blocks)?;
        d.set_item("n_used", r.n_used)?;
        d.set_item("e_b", r.e_b.into_pyarray(py))?;
        d.set_item("lbar", r.lbar.into_pyarray(py))?;
        d.set_item("plain", pieces_dict(py, &r.plain)?)?;
        if let (Some(de), Some(dl), Some(dp)) = (r.diff_e_b, r.diff_lbar, r.diff) {
            d.set_item("diff_e_b", de.into_pyarray(py))?;
            d.set_item("diff_lbar", dl.into_pyarray(py))?;
            d.set_item("diff", pieces_dict(py, &dp)?)?;
            d.set_item("llm_mean", r.llm_mean)?;
            d.set_item("llm_var", r.llm_var)?;
        }
        Ok(d)
    }
}

/// Mean over trees of the leaf values reached by each row of `x` (float32, rows × features):
/// an array rows × n_out, equal bit for bit to scikit-learn's single-job forest prediction.
#[pyfunction]
#[pyo3(signature = (left, right, feature, threshold, value, offsets, x, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub fn ess_forest_predict_mean<'py>(
    py: Python<'py>, left: PyReadonlyArray1<'py, i64>, right: PyReadonlyArray1<'py, i64>,
    feature: PyReadonlyArray1<'py, i64>, threshold: PyReadonlyArray1<'py, f64>, value: PyReadonlyArray2<'py, f64>,
    offsets: PyReadonlyArray1<'py, u64>, x: PyReadonlyArray2<'py, f32>, n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let n_out = value.shape()[1];
    let n_features = x.shape()[1];
    let rows = x.shape()[0];
    let offsets: Vec<usize> = slice(&offsets)?.iter().map(|&o| o as usize).collect();
    let forest = Forest {
        left: slice(&left)?, right: slice(&right)?, feature: slice(&feature)?,
        threshold: slice(&threshold)?, value: slice(&value)?, offsets: &offsets, n_out,
    };
    let xs = slice(&x)?;
    let work = rows.saturating_mul(forest.trees().max(1));
    let out = run_detached(py, n_jobs, work, || predict_mean(&forest, xs, n_features))?;
    Ok(out.into_pyarray(py).reshape([rows, n_out])?)
}

/// Add this capability's classes and functions to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ess_permutation, m)?)?;
    m.add_function(wrap_pyfunction!(ess_uses_avx2, m)?)?;
    m.add_function(wrap_pyfunction!(ess_losses, m)?)?;
    m.add_function(wrap_pyfunction!(ess_variance_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(ess_sequential_test, m)?)?;
    m.add_class::<BlockOutAccumulator>()?;
    m.add_function(wrap_pyfunction!(ess_forest_predict_mean, m)?)?;
    Ok(())
}
