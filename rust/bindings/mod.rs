//! The `llmsurrogate._core` extension module: registration, and [`slice`], the array borrow every
//! binding file shares. Bindings stay thin: borrow the arrays, run the kernel with the GIL
//! released, convert the result.
//!
//! * `errors.rs`: `From<CoreError> for PyErr`, the one mapping of kernel errors to the classes of
//!   `llmsurrogate.exceptions` (binding code writes `?`);
//! * `parallel.rs`: `run_detached` (a kernel on the sized pool, GIL released), `resolve_threads`,
//!   `max_threads` and `cached_pool_sizes` (the bounds of `common::parallel`);
//! * one file per capability: `quantiles.rs` (the common quantiles), `ess.rs` (with the forest
//!   walk), `transfer.rs` (with the U-statistic bounds and the model fits), `risk.rs`.

mod errors;
mod ess;
mod fe;
mod lookahead;
mod parallel;
mod quantiles;
mod risk;
mod transfer;

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

/// Borrow a 1-d NumPy array as a slice (the Python layer passes C-contiguous arrays).
fn slice<'a, T: numpy::Element>(arr: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    Ok(arr.as_slice()?)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("THREADS_ENV", crate::common::parallel::THREADS_ENV)?;
    m.add("LEVEL_TOL", crate::common::quantiles::LEVEL_TOL)?;
    m.add("MAX_CACHED_POOLS", crate::common::parallel::MAX_CACHED_POOLS)?;
    m.add_function(wrap_pyfunction!(parallel::resolve_threads, m)?)?;
    m.add_function(wrap_pyfunction!(parallel::max_threads, m)?)?;
    m.add_function(wrap_pyfunction!(parallel::cached_pool_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::upper_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::lower_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::weighted_upper_quantiles, m)?)?;
    m.add_function(wrap_pyfunction!(quantiles::weighted_lower_quantiles, m)?)?;
    m.add_class::<transfer::TransferTable>()?;
    m.add_function(wrap_pyfunction!(transfer::everywhere_dominance, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::worst_case_dominance, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::box_dominance, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::critical_gamma_box, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::lp2_simplex, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::ustat_tail_bound, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::quantile_ci_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::ustat_mean_upper, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_permutation, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_uses_avx2, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_losses, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_variance_pieces, m)?)?;
    m.add_function(wrap_pyfunction!(ess::ess_sequential_test, m)?)?;
    m.add_class::<ess::BlockOutAccumulator>()?;
    m.add_function(wrap_pyfunction!(ess::forest_predict_mean, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::nls_fit_subsets, m)?)?;
    m.add_function(wrap_pyfunction!(transfer::nls_predict, m)?)?;
    m.add("RISK_BOOT_METRICS", crate::risk::BOOT_METRICS.to_vec())?;
    m.add_function(wrap_pyfunction!(risk::risk_roc_auc, m)?)?;
    m.add_function(wrap_pyfunction!(risk::risk_bin_stats, m)?)?;
    m.add_function(wrap_pyfunction!(risk::risk_ece_equal_width, m)?)?;
    m.add_function(wrap_pyfunction!(risk::risk_point_metrics, m)?)?;
    m.add_function(wrap_pyfunction!(risk::risk_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(risk::risk_bootstrap_indices, m)?)?;
    lookahead::register(m)?;
    m.add_function(wrap_pyfunction!(fe::fe_demean, m)?)?;
    m.add_function(wrap_pyfunction!(fe::fe_bootstrap, m)?)?;
    m.add_function(wrap_pyfunction!(fe::fe_bootstrap_counts, m)?)?;
    Ok(())
}
