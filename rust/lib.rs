//! llmsurrogate's Rust core.
//!
//! * [`common`]: the floor every capability stands on (errors, thread pools, numerics, the linear
//!   solve, the one RNG, quantiles); it uses no capability module.
//! * One folder per capability, pure kernels (no Python types, unit-tested next to the code with
//!   `cargo test`): [`ess`] (equivalent sample size, and the forest walk of its fast prediction),
//!   [`transfer`] (transfer-error tables, their inference, the U-statistic bounds and the model
//!   fits that build the tables), [`risk`] (risk-score metrics and their bootstrap).
//! * `bindings/`: the thin pyo3 layer that exposes the kernels as `llmsurrogate._core`, one file
//!   per capability, compiled only with the default `python` feature
//!   (`cargo test --no-default-features` builds the kernels alone).

pub mod common;
pub mod ess;
pub mod lookahead;
pub mod fe;
pub mod risk;
pub mod transfer;

#[cfg(feature = "python")]
mod bindings;
