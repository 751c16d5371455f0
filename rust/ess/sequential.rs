//! The sequential test of ESS (docs/methods/ess.md §4.7, §5.5, §6): the one-sided z-tests of
//! H_{0,N}: e_N ≤ e^LLM along the grid of training sizes and the lower confidence bound of
//! Algorithm 3.1.

use super::variance::Pieces;
use crate::common::errors::{CoreError, CoreResult};

/// Which asymptotic theory supplies the variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Regime {
    FixedN,
    FixedB,
    Hybrid { min_blocks: usize },
}

impl Regime {
    pub fn parse(name: &str, min_blocks: usize) -> CoreResult<Self> {
        match name {
            "fixed_N" | "fixed_n" => Ok(Regime::FixedN),
            "fixed_B" | "fixed_b" => Ok(Regime::FixedB),
            "hybrid" => Ok(Regime::Hybrid { min_blocks: min_blocks.max(3) }),
            other => Err(CoreError::invalid("regime", format!("unknown regime {other:?}; use fixed_N, fixed_B or hybrid"))),
        }
    }

    /// True when the fixed-N variance (4.5)/(4.6) is used for a grid point with `blocks` blocks.
    pub fn uses_fixed_n(self, blocks: usize) -> CoreResult<bool> {
        match self {
            Regime::FixedN => {
                if blocks < 3 {
                    Err(CoreError::invalid(
                        "regime",
                        format!("fixed_N needs at least 3 blocks; a grid point has {blocks}. Use regime='hybrid' or 'fixed_B'"),
                    ))
                } else {
                    Ok(true)
                }
            }
            Regime::FixedB => Ok(false),
            Regime::Hybrid { min_blocks } => Ok(blocks >= min_blocks),
        }
    }
}

/// Variance of the test statistic: the difference loss (4.6) or the conservative sum (4.7).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum VarianceKind {
    Difference,
    Sum,
}

/// One grid point's test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestRow {
    pub fixed_n: bool,
    pub variance: f64,
    pub se: f64,
    pub z: f64,
    pub lower: f64,
    pub reject: bool,
    pub degenerate: bool,
    pub fell_back_to_bm: bool,
}

/// Outcome of Algorithm 3.1.
#[derive(Debug, Clone, PartialEq)]
pub struct SequentialResult {
    pub rows: Vec<TestRow>,
    /// Ñ*_α = N_{k−1} + 1 (N_0 = 0); N_K + 1 when every null is rejected.
    pub lower_bound: u64,
    /// Index of the first non-rejected grid point, or None when all are rejected.
    pub stop_index: Option<usize>,
}

/// Inputs of one grid point for [`sequential_test`].
#[derive(Debug, Clone, Copy)]
pub struct GridPoint {
    pub n_train: u64,
    pub plain: Pieces,
    pub diff: Pieces,
    pub llm_var: f64,
}

/// One-sided tests of H_{0,N}: e_N ≤ e^LLM (reject iff T > z_crit, strictly) and the sequential
/// lower confidence bound. `z_crit` is z_{1−α}. Grid values must be strictly increasing.
pub fn sequential_test(points: &[GridPoint], z_crit: f64, regime: Regime, variance: VarianceKind) -> CoreResult<SequentialResult> {
    if points.is_empty() {
        return Err(CoreError::Empty { arg: "grid".into() });
    }
    if !z_crit.is_finite() {
        return Err(CoreError::invalid("alpha", "critical value is not finite"));
    }
    for w in points.windows(2) {
        if w[1].n_train <= w[0].n_train {
            return Err(CoreError::invalid("grid", "grid values must be strictly increasing"));
        }
    }
    let mut rows = Vec::with_capacity(points.len());
    for p in points {
        let fixed_n = regime.uses_fixed_n(p.diff.blocks)?;
        let mut fell_back = false;
        let mut s2 = match variance {
            VarianceKind::Difference => {
                if fixed_n {
                    p.diff.sigma2_fixed_n
                } else {
                    p.diff.sigma2_fixed_b
                }
            }
            VarianceKind::Sum => {
                let plain = if fixed_n { p.plain.sigma2_fixed_n } else { p.plain.sigma2_fixed_b };
                plain + p.llm_var
            }
        };
        if fixed_n && s2 <= 0.0 {
            s2 = match variance {
                VarianceKind::Difference => p.diff.sigma2_bm,
                VarianceKind::Sum => p.plain.sigma2_bm + p.llm_var,
            };
            fell_back = true;
        }
        let se = (s2.max(0.0) / p.diff.n_used as f64).sqrt();
        let est = p.diff.ecv;
        let row = if se > 0.0 && se.is_finite() {
            let z = est / se;
            TestRow { fixed_n, variance: s2, se, z, lower: est - z_crit * se, reject: z > z_crit, degenerate: false, fell_back_to_bm: fell_back }
        } else {
            TestRow { fixed_n, variance: s2, se: 0.0, z: f64::NAN, lower: est, reject: false, degenerate: true, fell_back_to_bm: fell_back }
        };
        rows.push(row);
    }
    let stop_index = rows.iter().position(|r| !r.reject);
    let last_rejected = match stop_index {
        Some(0) => 0,
        Some(k) => points[k - 1].n_train,
        None => points[points.len() - 1].n_train,
    };
    // grid values are the caller's numbers: u64::MAX + 1 must not wrap to 0
    let lower_bound = last_rejected
        .checked_add(1)
        .ok_or_else(|| CoreError::invalid("grid", format!("grid value {last_rejected} is too large (the bound is N + 1)")))?;
    Ok(SequentialResult { rows, lower_bound, stop_index })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_logic() {
        let mk = |n: u64, ecv: f64, s2: f64| GridPoint {
            n_train: n,
            plain: Pieces { blocks: 100, n_used: 100, ecv, sigma2_fixed_n: s2, sigma2_fixed_b: s2, sigma2_bm: s2, ..Default::default() },
            diff: Pieces { blocks: 100, n_used: 100, ecv, sigma2_fixed_n: s2, sigma2_fixed_b: s2, sigma2_bm: s2, ..Default::default() },
            llm_var: 0.0,
        };
        // se = 0.1, T = ecv / 0.1
        let pts = vec![mk(1, 1.0, 1.0), mk(5, 0.5, 1.0), mk(10, 0.1, 1.0), mk(20, 1.0, 1.0)];
        let r = sequential_test(&pts, 1.6448536269514722, Regime::FixedN, VarianceKind::Difference).unwrap();
        assert_eq!(r.stop_index, Some(2));
        assert_eq!(r.lower_bound, 6);
        let r = sequential_test(&pts[..2], 1.6448536269514722, Regime::FixedN, VarianceKind::Difference).unwrap();
        assert_eq!((r.stop_index, r.lower_bound), (None, 6));
        let r = sequential_test(&pts[2..], 1.6448536269514722, Regime::FixedN, VarianceKind::Difference).unwrap();
        assert_eq!((r.stop_index, r.lower_bound), (Some(0), 1));
        // tie T == z is not a rejection
        let r = sequential_test(&[mk(3, 0.2, 1.0)], 2.0, Regime::FixedN, VarianceKind::Difference).unwrap();
        assert!(!r.rows[0].reject);
        // degenerate variance: not rejected, flagged
        let r = sequential_test(&[mk(3, 0.0, 0.0)], 1.6, Regime::FixedB, VarianceKind::Difference).unwrap();
        assert!(r.rows[0].degenerate && !r.rows[0].reject);
        // a rejected grid value of u64::MAX: N + 1 does not fit, an error (was an overflow)
        let e = sequential_test(&[mk(u64::MAX, 1.0, 1.0)], 1.6, Regime::FixedN, VarianceKind::Difference).unwrap_err();
        assert!(e.to_string().contains("`grid`"), "{e}");
        // n_used = 0 gives an infinite standard error: degenerate, not a panic
        let mut p = mk(3, 1.0, 1.0);
        p.diff.n_used = 0;
        assert!(sequential_test(&[p], 1.6, Regime::FixedN, VarianceKind::Difference).unwrap().rows[0].degenerate);
    }
}
