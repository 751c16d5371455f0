//! The common floor: infrastructure shared by every capability. Nothing here uses a capability
//! module (`ess`, `transfer`, `risk`) or Python, so a new capability builds on it alone.
//!
//! * [`errors`]: [`errors::CoreError`], the one error type of the crate (each variant names the
//!   argument at fault and its fix), and the input checks of [`errors::check`];
//! * [`parallel`]: thread counts from `n_jobs` (joblib's conventions) or
//!   `LLMSURROGATE_NUM_THREADS`, cached rayon pools, and [`parallel::install`] /
//!   [`parallel::install_for`], which every parallel kernel runs inside;
//! * [`numerics`]: compensated (Neumaier) sums and cumulative sums;
//! * [`linalg`]: [`linalg::cholesky_solve`], the linear solve of small symmetric
//!   positive-definite systems;
//! * [`rng`]: [`rng::SplitMix64`], the one pseudo-random generator, with its two documented ways of
//!   drawing an integer below a bound;
//! * [`quantiles`]: upper and lower empirical quantiles, weighted or not, with the level tolerance
//!   [`quantiles::LEVEL_TOL`] every capability compares levels with.

pub mod errors;
pub mod linalg;
pub mod numerics;
pub mod parallel;
pub mod quantiles;
pub mod rng;

#[cfg(test)]
mod tests {
    /// The floor stands on its own: no code line of `common/` names a capability module.
    #[test]
    fn common_uses_no_capability_module() {
        let files = [
            ("errors.rs", include_str!("errors.rs")),
            ("linalg.rs", include_str!("linalg.rs")),
            ("numerics.rs", include_str!("numerics.rs")),
            ("parallel.rs", include_str!("parallel.rs")),
            ("quantiles.rs", include_str!("quantiles.rs")),
            ("rng.rs", include_str!("rng.rs")),
        ];
        for (name, text) in files {
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for path in ["crate::ess", "crate::transfer", "crate::risk", "crate::bindings", "pyo3::", "numpy::"] {
                    assert!(!line.contains(path), "common/{name} uses {path}: {line}");
                }
            }
        }
    }
}
