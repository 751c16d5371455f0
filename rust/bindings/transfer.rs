//! Bindings for `crate::transfer`: tables and their inference, the U-statistic bounds
//! (`transfer::ustat`) and the batch model fits that build tables (`transfer::nls`). The Python
//! package (`llmsurrogate.transfer`) validates and coerces inputs; these wrappers borrow the
//! arrays, release the GIL and propagate kernel errors with `?`.

use super::parallel::run_detached;
use super::slice;
use crate::common::errors::{check, CoreError, CoreResult};
use crate::transfer as k;
use crate::transfer::nls;
use crate::transfer::ustat as u;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

type Arr<'py> = Bound<'py, PyArray1<f64>>;

/// A transfer-error table sorted once (values ascending, ties by input order), reused by every
/// computation on it.
#[pyclass(frozen, module = "llmsurrogate._core")]
pub struct TransferTable {
    inner: k::SortedTable,
}

#[pymethods]
impl TransferTable {
    #[new]
    #[pyo3(signature = (values, test, n, n_jobs=None))]
    fn new(py: Python<'_>, values: PyReadonlyArray1<'_, f64>, test: PyReadonlyArray1<'_, i64>, n: usize, n_jobs: Option<i64>) -> PyResult<Self> {
        let (v, t) = (slice(&values)?, slice(&test)?);
        let inner = run_detached(py, n_jobs, v.len(), || k::SortedTable::new(v, t, n))?;
        Ok(Self { inner })
    }

    /// The r = 1 table of the square matrix `E[train, test]`, read straight from it (the same
    /// table as from its errors in the table's order); None when an off-diagonal cell is not finite.
    #[staticmethod]
    #[pyo3(signature = (matrix, n_jobs=None))]
    fn from_matrix(py: Python<'_>, matrix: PyReadonlyArray2<'_, f64>, n_jobs: Option<i64>) -> PyResult<Option<Self>> {
        let n = matrix.shape()[0];
        if matrix.shape()[1] != n {
            return Err(CoreError::invalid("matrix", format!("must be square; got {} x {}", n, matrix.shape()[1])).into());
        }
        let m = slice(&matrix)?;
        let inner = run_detached(py, n_jobs, m.len(), || k::SortedTable::from_matrix(m, n))?;
        Ok(inner.map(|inner| Self { inner }))
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.n
    }

    #[getter]
    fn k(&self) -> usize {
        self.inner.k
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Sorted errors f_(1..N).
    fn sorted_values<'py>(&self, py: Python<'py>) -> Arr<'py> {
        self.inner.values.clone().into_pyarray(py)
    }

    /// Test domain of each sorted error.
    fn sorted_test<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.test.iter().map(|&d| d as i64).collect::<Vec<_>>().into_pyarray(py)
    }

    /// (e̲_τ, ē_τ) for each τ (pooled, unweighted).
    fn intervals<'py>(&self, py: Python<'py>, taus: PyReadonlyArray1<'py, f64>) -> PyResult<(Arr<'py>, Arr<'py>)> {
        let t = slice(&taus)?;
        check::probability("tau", t)?;
        let lo: Vec<f64> = t.iter().map(|&x| self.inner.lower(x)).collect();
        let hi: Vec<f64> = t.iter().map(|&x| self.inner.upper(x)).collect();
        Ok((lo.into_pyarray(py), hi.into_pyarray(py)))
    }

    /// Weighted (e̲^ω_τ, ē^ω_τ) with test-domain weights.
    #[pyo3(signature = (weights, taus, n_jobs=None))]
    fn weighted<'py>(&self, py: Python<'py>, weights: PyReadonlyArray1<'py, f64>, taus: PyReadonlyArray1<'py, f64>, n_jobs: Option<i64>) -> PyResult<(Arr<'py>, Arr<'py>)> {
        let (w, t) = (slice(&weights)?, slice(&taus)?);
        let (lo, hi) = run_detached(py, n_jobs, 0, || self.inner.weighted(w, t))?;
        Ok((lo.into_pyarray(py), hi.into_pyarray(py)))
    }

    /// p_j = Q_j(Γ)/K, j = 1..N (Corollary R.1).
    #[pyo3(signature = (gamma, n_jobs=None))]
    fn worst_case_p<'py>(&self, py: Python<'py>, gamma: f64, n_jobs: Option<i64>) -> PyResult<Arr<'py>> {
        Ok(run_detached(py, n_jobs, 0, || self.inner.worst_case_p(gamma))?.into_pyarray(py))
    }

    /// Exact step function Γ ↦ ē_τ(Γ) on [1, gamma_max]: (breakpoints, values).
    #[pyo3(signature = (tau, gamma_max, n_jobs=None))]
    fn gamma_steps<'py>(&self, py: Python<'py>, tau: f64, gamma_max: f64, n_jobs: Option<i64>) -> PyResult<(Arr<'py>, Arr<'py>)> {
        let (g, v) = run_detached(py, n_jobs, 0, || self.inner.gamma_steps(tau, gamma_max))?;
        Ok((g.into_pyarray(py), v.into_pyarray(py)))
    }

    /// Step functions for many τ at once (in parallel): list of (breakpoints, values).
    #[pyo3(signature = (taus, gamma_max, n_jobs=None))]
    fn gamma_steps_many<'py>(&self, py: Python<'py>, taus: PyReadonlyArray1<'py, f64>, gamma_max: f64, n_jobs: Option<i64>) -> PyResult<Vec<(Arr<'py>, Arr<'py>)>> {
        let t = slice(&taus)?;
        let out = run_detached(py, n_jobs, usize::MAX, || self.inner.gamma_steps_many(t, gamma_max))?;
        Ok(out.into_iter().map(|(g, v)| (g.into_pyarray(py), v.into_pyarray(py))).collect())
    }
}

/// Exact worst-case dominance per τ over Γ ∈ [1, gamma_max]: (dominates, Γ*) per τ.
#[pyfunction]
#[pyo3(signature = (t1, t2, taus, gamma_max, n_jobs=None))]
pub fn transfer_worst_case_dominance(py: Python<'_>, t1: &TransferTable, t2: &TransferTable, taus: PyReadonlyArray1<'_, f64>, gamma_max: f64, n_jobs: Option<i64>) -> PyResult<Vec<(bool, f64)>> {
    let t = slice(&taus)?;
    run_detached(py, n_jobs, usize::MAX, || k::worst_case_dominance_many(&t1.inner, &t2.inner, t, gamma_max))
}

/// [`transfer_worst_case_dominance`] of two square float64 matrices (`E[train, test]`, the
/// diagonal ignored) without their whole sorted tables: `(results, 0)`, or `([], i)` when an
/// off-diagonal cell of matrix `i` (1 or 2) is not finite (the caller names it).
#[pyfunction]
#[pyo3(signature = (m1, m2, taus, gamma_max, n_jobs=None))]
pub fn transfer_worst_case_dominance_matrices(py: Python<'_>, m1: PyReadonlyArray2<'_, f64>, m2: PyReadonlyArray2<'_, f64>, taus: PyReadonlyArray1<'_, f64>, gamma_max: f64, n_jobs: Option<i64>) -> PyResult<(Vec<(bool, f64)>, usize)> {
    let n = m1.shape()[0];
    if m1.shape() != [n, n] || m2.shape() != [n, n] {
        return Err(CoreError::invalid("matrix", format!("need two square matrices of one size; got {:?} and {:?}", m1.shape(), m2.shape())).into());
    }
    let (a, b, t) = (slice(&m1)?, slice(&m2)?, slice(&taus)?);
    let out = run_detached(py, n_jobs, a.len(), || k::worst_case_dominance_matrices(a, b, n, t, gamma_max))?;
    Ok(match out {
        Ok(res) => (res, 0),
        Err(which) => (Vec::new(), which),
    })
}

/// Γ-bounded everywhere dominance per τ.
#[pyfunction]
#[pyo3(signature = (t1, t2, taus, gamma, n_jobs=None))]
pub fn transfer_box_dominance(py: Python<'_>, t1: &TransferTable, t2: &TransferTable, taus: PyReadonlyArray1<'_, f64>, gamma: f64, n_jobs: Option<i64>) -> PyResult<Vec<bool>> {
    let t = slice(&taus)?;
    run_detached(py, n_jobs, usize::MAX, || k::box_dominance(&t1.inner, &t2.inner, t, gamma))
}

/// Critical Γ* of Γ-bounded everywhere dominance per τ.
#[pyfunction]
#[pyo3(signature = (t1, t2, taus, gamma_max, n_jobs=None))]
pub fn transfer_critical_gamma_box(py: Python<'_>, t1: &TransferTable, t2: &TransferTable, taus: PyReadonlyArray1<'_, f64>, gamma_max: f64, n_jobs: Option<i64>) -> PyResult<Vec<f64>> {
    let t = slice(&taus)?;
    run_detached(py, n_jobs, usize::MAX, || k::critical_gamma_box(&t1.inner, &t2.inner, t, gamma_max))
}

type WitnessOut = Option<(usize, usize, Vec<(usize, f64)>)>;

/// Everywhere dominance of table 1 over table 2 at each τ: None (dominates) or a witness
/// (j, m, support) per τ. `mode` is "exact", "paper" or "transferUQ".
#[pyfunction]
#[pyo3(signature = (t1, t2, taus, mode, n_jobs=None))]
pub fn transfer_everywhere_dominance(py: Python<'_>, t1: &TransferTable, t2: &TransferTable, taus: PyReadonlyArray1<'_, f64>, mode: &str, n_jobs: Option<i64>) -> PyResult<Vec<WitnessOut>> {
    let mode = match mode {
        "exact" => k::EverywhereMode::Exact,
        "paper" => k::EverywhereMode::Paper,
        "transferUQ" => k::EverywhereMode::TransferUq,
        other => return Err(CoreError::invalid("mode", format!("must be 'exact', 'paper' or 'transferUQ'; got {other:?}")).into()),
    };
    let t = slice(&taus)?;
    let out = run_detached(py, n_jobs, usize::MAX, || k::everywhere_dominance(&t1.inner, &t2.inner, t, mode))?;
    Ok(out.into_iter().map(|w| w.map(|w| (w.j, w.m, w.support))).collect())
}

/// Closed-form two-point LP (A7): (optimum, support).
#[pyfunction]
pub fn transfer_lp2_simplex(a: PyReadonlyArray1<'_, f64>, b: PyReadonlyArray1<'_, f64>, tau: f64) -> PyResult<(f64, Vec<(usize, f64)>)> {
    Ok(k::lp2_simplex(slice(&a)?, slice(&b)?, tau)?)
}

/// (B, b1, b2, b3) of Lemma Q.1.
#[pyfunction]
pub fn transfer_ustat_tail_bound(x: f64, y: f64, n: usize, k: usize) -> PyResult<(f64, f64, f64, f64)> {
    Ok(u::tail_bound_parts(x, y, n, k)?)
}

/// Quantile-CI ranks (j_L, j_U) for each β (parallel over β).
#[pyfunction]
#[pyo3(signature = (big_n, n, k, betas, alpha, n_jobs=None))]
pub fn transfer_quantile_ci_ranks(py: Python<'_>, big_n: usize, n: usize, k: usize, betas: PyReadonlyArray1<'_, f64>, alpha: f64, n_jobs: Option<i64>) -> PyResult<(Vec<usize>, Vec<usize>)> {
    let b = slice(&betas)?;
    let out = run_detached(py, n_jobs, usize::MAX, || {
        b.par_iter().map(|&beta| u::quantile_ci_ranks(big_n, n, k, beta, alpha)).collect::<Result<Vec<_>, _>>()
    })?;
    Ok(out.into_iter().unzip())
}

/// Upper confidence bound μ̂⁺(α) for the mean of a [0, 1] U-statistic with value u.
#[pyfunction]
pub fn transfer_ustat_mean_upper(u_value: f64, n: usize, k: usize, alpha: f64) -> PyResult<f64> {
    Ok(u::mean_upper(u_value, n, k, alpha)?)
}

/// The pooled errors' values at the 1-based `ranks` (0 → −∞, N + 1 → +∞) of the table
/// (`values`, `test`, `n`: checked as `TransferTable` checks them), by selection on a copy of
/// `values` (8 bytes an error; the table is never sorted).
#[pyfunction]
#[pyo3(signature = (values, test, n, ranks, n_jobs=None))]
pub fn transfer_order_statistics<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, test: PyReadonlyArray1<'py, i64>, n: usize,
    ranks: PyReadonlyArray1<'py, i64>, n_jobs: Option<i64>,
) -> PyResult<Arr<'py>> {
    let (v, t, r) = (slice(&values)?, slice(&test)?, to_usize("ranks", slice(&ranks)?)?);
    Ok(run_detached(py, n_jobs, v.len(), || k::table_order_statistics(v, t, n, &r))?.into_pyarray(py))
}

/// [`transfer_order_statistics`] of the square matrix `E[train, test]`'s off-diagonal cells,
/// read straight from the matrix; `None` when one of them is not finite.
#[pyfunction]
#[pyo3(signature = (matrix, ranks, n_jobs=None))]
pub fn transfer_matrix_order_statistics<'py>(py: Python<'py>, matrix: PyReadonlyArray2<'py, f64>, ranks: PyReadonlyArray1<'py, i64>, n_jobs: Option<i64>) -> PyResult<Option<Arr<'py>>> {
    let n = matrix.shape()[0];
    if matrix.shape()[1] != n {
        return Err(CoreError::invalid("matrix", format!("must be square; got {} x {}", n, matrix.shape()[1])).into());
    }
    let (m, r) = (slice(&matrix)?, to_usize("ranks", slice(&ranks)?)?);
    let out = run_detached(py, n_jobs, m.len(), || k::matrix_order_statistics(m, n, &r))?;
    Ok(out.map(|v| v.into_pyarray(py)))
}

/// One histogram pass of the streamed selection over a chunk: (counts, NaN count, infinite count).
#[pyfunction]
#[pyo3(signature = (values, prefixes, shift, bits, n_jobs=None))]
pub fn transfer_key_histogram<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, prefixes: PyReadonlyArray1<'py, u64>, shift: u32, bits: u32,
    n_jobs: Option<i64>,
) -> PyResult<(Bound<'py, PyArray1<u64>>, u64, u64)> {
    let (v, p) = (slice(&values)?, slice(&prefixes)?);
    let (counts, nan, inf) = run_detached(py, n_jobs, v.len(), || k::key_histogram(v, p, shift, bits))?;
    Ok((counts.into_pyarray(py), nan, inf))
}

/// The values of a chunk whose order keys lie in one of the ranges [lo, hi).
#[pyfunction]
#[pyo3(signature = (values, lo, hi, n_jobs=None))]
pub fn transfer_key_collect<'py>(
    py: Python<'py>, values: PyReadonlyArray1<'py, f64>, lo: PyReadonlyArray1<'py, u64>, hi: PyReadonlyArray1<'py, u64>,
    n_jobs: Option<i64>,
) -> PyResult<Arr<'py>> {
    let (v, l, h) = (slice(&values)?, slice(&lo)?, slice(&hi)?);
    Ok(run_detached(py, n_jobs, v.len(), || k::key_collect(v, l, h))?.into_pyarray(py))
}

fn to_usize(arg: &str, v: &[i64]) -> CoreResult<Vec<usize>> {
    let mut out = check::with_capacity(arg, format!("{} entries", v.len()), v.len(), "the indices")?;
    for &x in v {
        out.push(usize::try_from(x).map_err(|_| CoreError::invalid(arg, format!("indices must be >= 0; got {x}")))?);
    }
    Ok(out)
}

/// Fit one model per training subset; returns a dict of arrays
/// (theta (S, P), train_mse (S,), mse (S, n), converged (S,), iterations (S,), status list).
#[pyfunction]
#[pyo3(signature = (family, theta, free, lower, upper, starts, z1, z2, p, y, offsets, subsets,
                    max_iter=500, ftol=1e-15, xtol=1e-12, gtol=1e-12, n_jobs=None))]
#[allow(clippy::too_many_arguments)]
pub fn transfer_nls_fit_subsets<'py>(
    py: Python<'py>, family: &str, theta: PyReadonlyArray1<'py, f64>, free: PyReadonlyArray1<'py, i64>,
    lower: PyReadonlyArray1<'py, f64>, upper: PyReadonlyArray1<'py, f64>, starts: PyReadonlyArray2<'py, f64>,
    z1: PyReadonlyArray1<'py, f64>, z2: PyReadonlyArray1<'py, f64>, p: PyReadonlyArray1<'py, f64>,
    y: PyReadonlyArray1<'py, f64>, offsets: PyReadonlyArray1<'py, i64>, subsets: PyReadonlyArray2<'py, i64>,
    max_iter: usize, ftol: f64, xtol: f64, gtol: f64, n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let fam = nls::Family::parse(family)?;
    let starts_arr = starts.as_array();
    // an array of shape (2^40, 0) holds no numbers but would make 2^40 vectors: fallible
    let n_starts = starts_arr.nrows();
    let mut start_rows: Vec<Vec<f64>> = check::with_capacity("starts", format!("{n_starts} rows"), n_starts, "the starting points")?;
    start_rows.extend(starts_arr.rows().into_iter().map(|r| r.to_vec()));
    let spec = nls::ModelSpec {
        family: fam,
        theta: slice(&theta)?.to_vec(),
        free: to_usize("free", slice(&free)?)?,
        lower: slice(&lower)?.to_vec(),
        upper: slice(&upper)?.to_vec(),
        starts: start_rows,
    };
    let offs = to_usize("offsets", slice(&offsets)?)?;
    let sub_arr = subsets.as_array();
    let r = sub_arr.shape()[1];
    // the subsets may be a broadcast view (no memory behind its shape): copied fallibly
    let mut subs: Vec<i64> = check::with_capacity("subsets", format!("{} entries", sub_arr.len()), sub_arr.len(), "the training subsets")?;
    subs.extend(sub_arr.iter().copied());
    let subs = to_usize("subsets", &subs)?;
    let (z1s, z2s, ps, ys) = (slice(&z1)?, slice(&z2)?, slice(&p)?, slice(&y)?);
    let data = nls::Lotteries { z1: z1s, z2: z2s, p: ps, y: ys, offsets: &offs };
    let opts = nls::LmOptions { max_iter, ftol, xtol, gtol };
    let n_sub = if r == 0 { 0 } else { subs.len() / r };
    let items = if n_sub > 1 { usize::MAX } else { 0 };
    let pdim = fam.n_params();
    // every fit holds its MSE on all n domains, and the result copies them into one (S, n) array:
    // S · n grows as the product of two input sizes, so the memory is checked before fitting
    let n = offs.len().saturating_sub(1);
    let per_fit = n.saturating_add(pdim).saturating_mul(16).saturating_add(std::mem::size_of::<nls::SubsetFit>());
    let need = n_sub.checked_mul(per_fit);
    check::memory("subsets", format!("{n_sub} subsets x {n} domains"), need, n_sub as f64 * per_fit as f64, "the fits' per-domain MSEs")?;
    let fits = run_detached(py, n_jobs, items, || nls::fit_subsets(&spec, &data, &subs, r, &opts))?;
    let mut th = Vec::with_capacity(n_sub * pdim);
    let mut mse = Vec::with_capacity(n_sub * n);
    for f in &fits {
        th.extend_from_slice(&f.theta);
        mse.extend_from_slice(&f.mse);
    }
    let shape_err = |e: numpy::ndarray::ShapeError| CoreError::invalid("subsets", format!("fit results do not form a table ({e})"));
    let out = PyDict::new(py);
    out.set_item("theta", numpy::ndarray::Array2::from_shape_vec((n_sub, pdim), th).map_err(shape_err)?.into_pyarray(py))?;
    out.set_item("mse", numpy::ndarray::Array2::from_shape_vec((n_sub, n), mse).map_err(shape_err)?.into_pyarray(py))?;
    out.set_item("train_mse", fits.iter().map(|f| f.train_mse).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("converged", fits.iter().map(|f| f.converged).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("iterations", fits.iter().map(|f| f.iterations as i64).collect::<Vec<_>>().into_pyarray(py))?;
    out.set_item("status", fits.iter().map(|f| f.status).collect::<Vec<_>>())?;
    Ok(out)
}

/// Certainty equivalents of the lotteries (z1, z2, p) under the full parameter vector `theta`.
#[pyfunction]
pub fn transfer_nls_predict<'py>(
    py: Python<'py>, family: &str, theta: PyReadonlyArray1<'py, f64>, z1: PyReadonlyArray1<'py, f64>,
    z2: PyReadonlyArray1<'py, f64>, p: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let fam = nls::Family::parse(family)?;
    let (t, a, b, q) = (slice(&theta)?, slice(&z1)?, slice(&z2)?, slice(&p)?);
    Ok(run_detached(py, Some(1), 0, || nls::predict(fam, t, a, b, q))?.into_pyarray(py))
}

/// Add this capability's class and functions to `_core` (called once from `bindings/mod.rs`).
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TransferTable>()?;
    m.add_function(wrap_pyfunction!(transfer_everywhere_dominance, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_worst_case_dominance, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_worst_case_dominance_matrices, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_box_dominance, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_critical_gamma_box, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_lp2_simplex, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_ustat_tail_bound, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_quantile_ci_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_ustat_mean_upper, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_order_statistics, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_matrix_order_statistics, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_key_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_key_collect, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_nls_fit_subsets, m)?)?;
    m.add_function(wrap_pyfunction!(transfer_nls_predict, m)?)?;
    Ok(())
}
