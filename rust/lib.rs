//! llmsurrogate's Rust core.
//!
//! * [`common`]: the floor every capability stands on (errors, thread pools, numerics, the linear
//!   solve, the one RNG, quantiles); it uses no capability module (a test in `common/mod.rs`
//!   checks every module declared below).
//! * One folder per capability, pure kernels (no Python types, unit-tested next to the code with
//!   `cargo test`): [`ess`] (equivalent sample size, and the forest walk of its fast prediction),
//!   [`transfer`] (transfer-error tables, their inference, the U-statistic bounds and the model
//!   fits that build the tables), [`risk`] (risk-score metrics and their bootstrap),
//!   [`lookahead`] (the Min-K% reduction of per-token log-probabilities), [`fe`] (fixed-effects
//!   demeaning and the pairs/cluster bootstrap of a coefficient), [`ppi`] (prediction-powered
//!   inference: gradient moments, the TSQR factor, the GLM Newton fit, cluster sums). A capability
//!   uses `common` and no other capability.
//! * `bindings/`: the thin pyo3 layer that exposes the kernels as `llmsurrogate._core`, one file
//!   per capability (names prefixed with the capability: `ess_*`, `transfer_*`, `risk_*`,
//!   `lookahead_*`, `fe_*`, `ppi_*`; the common quantiles and thread counts unprefixed), compiled only with
//!   the default `python` feature (`cargo test --no-default-features` builds the kernels alone).

pub mod common;
pub mod ess;
pub mod transfer;
pub mod risk;
pub mod lookahead;
pub mod fe;
pub mod ppi;

#[cfg(feature = "python")]
mod bindings;
