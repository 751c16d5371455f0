//! Fixed-effects regression kernels (docs/methods/lookahead.md §5.3): the within transformation
//! ("demeaning") of several columns over several absorbed fixed effects, weighted.
//!
//! * [`demean`]: conjugate gradient on the symmetric Kaczmarz sweep (reghdfe's `cg` acceleration of
//!   alternating projections), parallel over columns; converges on poorly connected panels where
//!   plain alternating projections crawl; with two fixed effects, the same iteration on the Schur
//!   complement in coefficient space (one pass over the rows per iteration). One fixed effect is
//!   solved exactly in one pass.
//! * [`bootstrap_coef`]: the pairs bootstrap of one coefficient (rows or blocks resampled as
//!   integer weights through the weighted demeaning), parallel over replications, reproducible by
//!   seed for any thread count.
//!
//! Builds on `common/` only.

pub mod bootstrap;
pub mod demean;

pub use bootstrap::{bootstrap_coef, replicate_counts, replicate_seed, BootstrapOutput, Resample};
pub use demean::{demean, DemeanOutput, FixedEffects};
