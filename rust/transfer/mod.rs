//! Transfer performance of economic models (Andrews, Fudenberg, Lei, Liang & Wu, "The Transfer
//! Performance of Economic Models", 2025; docs/methods/transfer.md): building transfer-error
//! tables and inference on them.
//!
//! What lives where (the table and dominance kernels are re-exported here, so callers write
//! `crate::transfer::SortedTable`):
//!
//! * `table.rs`: [`SortedTable`], one table sorted once, and what it answers on its own: pooled,
//!   weighted and worst-case (Γ) forecast intervals, the step functions Γ ↦ ē_τ(Γ) (A2–A4);
//! * `select.rs`: order statistics of a square matrix's pooled errors by selection, without
//!   building the sorted table (what forecast and quantile intervals need);
//! * `dominance.rs`: comparisons of two tables: worst-case, everywhere (with the two-point LP,
//!   A6–A7) and Γ-bounded everywhere dominance;
//! * [`ustat`]: concentration bounds for U-statistics and the quantile and mean confidence bounds
//!   built on them (Appendix Q, A8–A9);
//! * [`nls`]: the bounded Levenberg–Marquardt fits of the certainty-equivalent models, one per
//!   training subset, that produce the tables.
//!
//! Empirical quantiles and their level tolerance come from `common::quantiles`.

mod dominance;
pub mod nls;
mod select;
mod table;
pub mod ustat;

pub use dominance::{
    box_dominance, box_dominance_one, critical_gamma_box, everywhere_dominance, lp2_simplex, worst_case_dominance,
    worst_case_dominance_many, worst_case_dominance_matrices,
    EverywhereMode, Witness,
};
pub use select::{key_collect, key_histogram, matrix_order_statistics, table_order_statistics};
pub use table::{step_value, SortedTable, SortedTail};
