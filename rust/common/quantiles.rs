//! Empirical order statistics: upper and lower quantiles (Definition 2 of Andrews, Fudenberg, Lei,
//! Liang & Wu, "The Transfer Performance of Economic Models"; docs/methods/transfer.md §1.6) and
//! their weighted versions with an optional atom at infinity (§3.1, eq. 7 and Definition 5).
//!
//! For a distribution P:
//! * upper quantile  Q̄_τ(P) = inf{ b : P((−∞, b]) ≥ τ },
//! * lower quantile  Q̲_τ(P) = sup{ b : P([b, ∞)) ≥ 1 − τ }.
//!
//! For the empirical distribution of f_(1) ≤ … ≤ f_(N): Q̄_τ = f_(⌈τN⌉) (R's `quantile(type = 1)`)
//! and Q̲_τ = f_(⌊τN⌋ + 1). They differ only where τN is an integer. Ends: Q̄_0 = −∞ and Q̲_1 = +∞.
//! The forecast interval of the transfer paper is [Q̲_{1−τ}, Q̄_τ].
//!
//! Levels are compared with a tolerance of [`LEVEL_TOL`] on the probability scale, so that
//! 0.5 · 1892 = 946.0000000000001 still selects rank 946 (R's type-1 fuzz is smaller and can pick
//! the next rank at τ = k/N; numpy's `inverted_cdf` has none).
//!
//! Weighted quantiles take non-negative atom weights and an extra mass `inf_weight` that sits at +∞
//! for the upper quantile and at −∞ for the lower one: the conservative place for the unobserved
//! target, as in weighted conformal prediction. When that mass exceeds 1 − τ of the total the upper
//! quantile is +∞ (and the lower one −∞).

use crate::common::errors::{check, CoreResult};
use crate::common::numerics::{compensated_cumsum, CompensatedSum};
use rayon::slice::ParallelSliceMut;

/// Tolerance on the probability scale for "cumulative mass ≥ τ".
pub const LEVEL_TOL: f64 = 1e-12;

/// Below this many values a sequential sort beats rayon's parallel one.
const PAR_SORT_MIN: usize = crate::common::parallel::PARALLEL_MIN_ITEMS;

/// 1-based rank of the upper τ-quantile among `n` equally weighted atoms; 0 means −∞.
pub fn upper_rank(n: usize, tau: f64) -> usize {
    if tau <= 0.0 {
        return 0;
    }
    let k = (n as f64 * (tau - LEVEL_TOL)).ceil();
    (k.max(1.0) as usize).min(n)
}

/// 1-based rank of the lower τ-quantile among `n` equally weighted atoms; `n + 1` means +∞.
pub fn lower_rank(n: usize, tau: f64) -> usize {
    let j = (n as f64 * (tau + LEVEL_TOL)).floor() + 1.0;
    (j.max(1.0) as usize).min(n + 1)
}

#[cfg(test)] // the value a sorted array has at a rank: what selection is checked against
fn value_at(sorted: &[f64], rank: usize) -> f64 {
    if rank == 0 {
        f64::NEG_INFINITY
    } else if rank > sorted.len() {
        f64::INFINITY
    } else {
        sorted[rank - 1]
    }
}

/// Order statistics at the given 1-based ranks (0 → −∞, N+1 → +∞) of `values` (copied once).
fn order_statistics(values: &[f64], ranks: &[usize]) -> Vec<f64> {
    let mut work = values.to_vec();
    select_ranks(&mut work, ranks)
}

/// Below this many values the two sides of a split are selected in turn, not in parallel.
const PAR_SELECT_MIN: usize = crate::common::parallel::PARALLEL_MIN_ITEMS;

/// The values at the 1-based `ranks` of `work` in ascending [`f64::total_cmp`] order (0 → −∞,
/// `work.len() + 1` → +∞; ranks in any order, repeats allowed), found by selection, never a full
/// sort: the median wanted rank is selected first, then the ranks below it in the left part and
/// those above in the right part, both parts in parallel (rayon). O(N log m) for m distinct ranks.
/// `work` is permuted. Each value equals the sorted array's at that rank bit for bit (total_cmp
/// orders every value, -0.0 before 0.0, so an order statistic is one value whatever the method).
pub fn select_ranks(work: &mut [f64], ranks: &[usize]) -> Vec<f64> {
    let n = work.len();
    let mut distinct: Vec<usize> = ranks.iter().copied().filter(|&r| r >= 1 && r <= n).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let positions: Vec<usize> = distinct.iter().map(|&r| r - 1).collect();
    let mut found = vec![0.0; positions.len()];
    select_into(work, 0, &positions, &mut found);
    ranks
        .iter()
        .map(|&r| match distinct.binary_search(&r) {
            Ok(i) => found[i],
            Err(_) if r == 0 => f64::NEG_INFINITY,
            Err(_) => f64::INFINITY,
        })
        .collect()
}

/// Fill `out[i]` with the value at sorted position `positions[i]` (ascending, distinct, each in
/// `offset..offset + work.len()`) of `work`, whose first element sits at `offset` of the whole.
fn select_into(work: &mut [f64], offset: usize, positions: &[usize], out: &mut [f64]) {
    if positions.is_empty() {
        return;
    }
    let mid = positions.len() / 2;
    let at = positions[mid] - offset;
    let (left, value, right) = work.select_nth_unstable_by(at, f64::total_cmp);
    out[mid] = *value;
    let (below, above) = (&positions[..mid], &positions[mid + 1..]);
    let (out_below, rest) = out.split_at_mut(mid);
    let out_above = &mut rest[1..];
    let right_offset = offset + at + 1;
    if left.len().min(right.len()) >= PAR_SELECT_MIN && !below.is_empty() && !above.is_empty() {
        rayon::join(
            || select_into(left, offset, below, out_below),
            || select_into(right, right_offset, above, out_above),
        );
    } else {
        select_into(left, offset, below, out_below);
        select_into(right, right_offset, above, out_above);
    }
}

/// Upper quantiles Q̄_τ of the empirical distribution of `values`, one per level in `taus`.
pub fn upper_quantiles(values: &[f64], taus: &[f64]) -> CoreResult<Vec<f64>> {
    check::no_nan("values", values)?;
    check::probability("tau", taus)?;
    let ranks: Vec<usize> = taus.iter().map(|&t| upper_rank(values.len(), t)).collect();
    Ok(order_statistics(values, &ranks))
}

/// Lower quantiles Q̲_τ of the empirical distribution of `values`, one per level in `taus`.
pub fn lower_quantiles(values: &[f64], taus: &[f64]) -> CoreResult<Vec<f64>> {
    check::no_nan("values", values)?;
    check::probability("tau", taus)?;
    let ranks: Vec<usize> = taus.iter().map(|&t| lower_rank(values.len(), t)).collect();
    Ok(order_statistics(values, &ranks))
}

/// A weighted empirical distribution sorted once, queried for many levels.
pub struct WeightedDistribution {
    values: Vec<f64>,
    /// cumulative[j] = total weight of the j+1 smallest atoms (compensated sums).
    cumulative: Vec<f64>,
    /// Finite atoms' weight plus the mass at infinity.
    total: f64,
    inf_weight: f64,
}

impl WeightedDistribution {
    /// Validate and sort. Ties between equal values are ordered by input position (deterministic;
    /// the quantiles do not depend on it).
    pub fn new(values: &[f64], weights: &[f64], inf_weight: f64) -> CoreResult<Self> {
        check::no_nan("values", values)?;
        check::same_len("values", values.len(), "weights", weights.len())?;
        check::weights("weights", weights)?;
        check::nonnegative_scalar("inf_weight", inf_weight)?;
        let mut pairs: Vec<(f64, f64)> = values.iter().copied().zip(weights.iter().copied()).collect();
        if pairs.len() >= PAR_SORT_MIN {
            pairs.par_sort_by(|a, b| a.0.total_cmp(&b.0));
        } else {
            pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let (values, w): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let cumulative = compensated_cumsum(&w);
        let mut total = CompensatedSum::new();
        total.add(cumulative[cumulative.len() - 1]);
        total.add(inf_weight);
        Ok(Self { values, cumulative, total: total.value(), inf_weight })
    }

    /// Q̄_τ of Σ w_i δ_{v_i} + inf_weight · δ_{+∞}, normalised.
    pub fn upper(&self, tau: f64) -> f64 {
        if tau <= 0.0 {
            return f64::NEG_INFINITY;
        }
        let target = (tau - LEVEL_TOL) * self.total;
        // First j with cumulative[j] >= target.
        let j = self.cumulative.partition_point(|&c| c < target);
        if j < self.values.len() {
            self.values[j]
        } else {
            f64::INFINITY
        }
    }

    /// Q̲_τ of Σ w_i δ_{v_i} + inf_weight · δ_{−∞}, normalised.
    pub fn lower(&self, tau: f64) -> f64 {
        let need = (1.0 - tau - LEVEL_TOL) * self.total;
        if need <= 0.0 {
            return f64::INFINITY;
        }
        // Mass of [v_(j), ∞) is total − inf_weight − cumulative[j−1]; the largest j with that mass
        // ≥ need is the number of atoms whose preceding cumulative weight is ≤ budget.
        let budget = self.total - self.inf_weight - need;
        if budget < 0.0 {
            return f64::NEG_INFINITY;
        }
        // Count of j in 1..=N with cumulative[j-2] <= budget (cumulative[-1] = 0 always qualifies).
        let count = 1 + self.cumulative[..self.values.len() - 1].partition_point(|&c| c <= budget);
        self.values[count - 1]
    }
}

/// Weighted upper quantiles, mass `inf_weight` at +∞.
pub fn weighted_upper_quantiles(values: &[f64], weights: &[f64], taus: &[f64], inf_weight: f64) -> CoreResult<Vec<f64>> {
    check::probability("tau", taus)?;
    let dist = WeightedDistribution::new(values, weights, inf_weight)?;
    Ok(taus.iter().map(|&t| dist.upper(t)).collect())
}

/// Weighted lower quantiles, mass `inf_weight` at −∞.
pub fn weighted_lower_quantiles(values: &[f64], weights: &[f64], taus: &[f64], inf_weight: f64) -> CoreResult<Vec<f64>> {
    check::probability("tau", taus)?;
    let dist = WeightedDistribution::new(values, weights, inf_weight)?;
    Ok(taus.iter().map(|&t| dist.lower(t)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force straight from Definition 2 over candidate points b ∈ values ∪ {±∞}.
    fn brute_upper(values: &[f64], weights: &[f64], inf_w: f64, tau: f64) -> f64 {
        let total: f64 = weights.iter().sum::<f64>() + inf_w;
        let mut cands: Vec<f64> = values.to_vec();
        cands.push(f64::INFINITY);
        cands.sort_by(f64::total_cmp);
        if tau <= 0.0 {
            return f64::NEG_INFINITY;
        }
        for b in cands {
            let mass: f64 = values.iter().zip(weights).filter(|(v, _)| **v <= b).map(|(_, w)| *w).sum::<f64>()
                + if b == f64::INFINITY { inf_w } else { 0.0 };
            if mass >= (tau - 1e-12) * total {
                return b;
            }
        }
        f64::INFINITY
    }

    fn brute_lower(values: &[f64], weights: &[f64], inf_w: f64, tau: f64) -> f64 {
        let total: f64 = weights.iter().sum::<f64>() + inf_w;
        if 1.0 - tau - 1e-12 <= 0.0 {
            return f64::INFINITY;
        }
        let mut cands: Vec<f64> = values.to_vec();
        cands.sort_by(f64::total_cmp);
        for b in cands.iter().rev() {
            let mass: f64 = values.iter().zip(weights).filter(|(v, _)| **v >= *b).map(|(_, w)| *w).sum();
            if mass >= (1.0 - tau - 1e-12) * total {
                return *b;
            }
        }
        f64::NEG_INFINITY
    }

    #[test]
    fn unweighted_known_answers() {
        let v = [3.0, 1.0, 2.0, 4.0, 6.0, 5.0];
        // N = 6: Q̄_0.5 = f_(3) = 3, Q̲_0.5 = f_(4) = 4; interval at τ = 0.5 is [f_(4), f_(3)] (inverted).
        assert_eq!(upper_quantiles(&v, &[0.5]).unwrap(), vec![3.0]);
        assert_eq!(lower_quantiles(&v, &[0.5]).unwrap(), vec![4.0]);
        assert_eq!(upper_quantiles(&v, &[0.51, 1.0, 0.0]).unwrap(), vec![4.0, 6.0, f64::NEG_INFINITY]);
        assert_eq!(lower_quantiles(&v, &[0.0, 0.49, 1.0]).unwrap(), vec![1.0, 3.0, f64::INFINITY]);
    }

    #[test]
    fn fuzz_keeps_integer_ranks() {
        // 0.5 * 1892 in floating point is 946.0000000000001.
        assert_eq!(upper_rank(1892, 0.5), 946);
        assert_eq!(lower_rank(1892, 0.5), 947);
        assert_eq!(upper_rank(1892, 0.95), 1798);
        // Forecast-interval lower end f_(N+1-k) = Q̲_{1-τ}.
        for &tau in &[0.9, 0.95, 0.975, 0.99, 1.0] {
            assert_eq!(lower_rank(1892, 1.0 - tau), 1892 + 1 - upper_rank(1892, tau), "tau={tau}");
        }
    }

    #[test]
    fn selection_and_sort_paths_agree() {
        let v: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 1000) as f64 / 10.0).collect();
        let taus: Vec<f64> = (0..=20).map(|i| i as f64 / 20.0).collect();
        let many = upper_quantiles(&v, &taus).unwrap();
        for (i, &t) in taus.iter().enumerate() {
            assert_eq!(upper_quantiles(&v, &[t]).unwrap()[0], many[i]);
        }
        let many = lower_quantiles(&v, &taus).unwrap();
        for (i, &t) in taus.iter().enumerate() {
            assert_eq!(lower_quantiles(&v, &[t]).unwrap()[0], many[i]);
        }
    }

    #[test]
    fn selection_equals_sorting_bit_for_bit() {
        // ties, signed zeros, infinities, and sizes on both sides of the parallel threshold
        for &n in &[1usize, 2, 7, 1000, 3 * PAR_SELECT_MIN + 17] {
            let v: Vec<f64> = (0..n)
                .map(|i| match i % 11 {
                    0 => -0.0,
                    1 => 0.0,
                    2 => f64::INFINITY,
                    3 => f64::NEG_INFINITY,
                    _ => (((i as u64 * 2654435761) % 1009) as f64) / 7.0 - 50.0,
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let mut ranks: Vec<usize> = (0..=n + 1).step_by(1 + n / 97).collect();
            ranks.extend([0, n + 1, 1, n, (n + 1) / 2, 1]); // ends, repeats, unordered
            for threads in [1, 2, 3] {
                let mut work = v.clone();
                let got = crate::common::parallel::install(Some(threads), || Ok(select_ranks(&mut work, &ranks))).unwrap();
                for (&r, &g) in ranks.iter().zip(&got) {
                    assert_eq!(g.to_bits(), value_at(&sorted, r).to_bits(), "n={n} rank={r} threads={threads}");
                }
            }
        }
    }

    #[test]
    fn weighted_matches_brute_force_with_ties_zeros_and_infinity_mass() {
        let values = [2.0, 1.0, 2.0, 5.0, 3.0, 3.0, 0.5];
        let weights = [0.3, 0.0, 1.0, 0.2, 0.0, 0.7, 0.4];
        for &inf_w in &[0.0, 0.1, 0.5, 5.0] {
            for i in 0..=100 {
                let tau = i as f64 / 100.0;
                let up = weighted_upper_quantiles(&values, &weights, &[tau], inf_w).unwrap()[0];
                let lo = weighted_lower_quantiles(&values, &weights, &[tau], inf_w).unwrap()[0];
                assert_eq!(up, brute_upper(&values, &weights, inf_w, tau), "upper tau={tau} inf={inf_w}");
                assert_eq!(lo, brute_lower(&values, &weights, inf_w, tau), "lower tau={tau} inf={inf_w}");
            }
        }
    }

    #[test]
    fn unit_weights_equal_unweighted() {
        let v: Vec<f64> = (0..1892).map(|i| ((i * 37) % 101) as f64).collect();
        let w = vec![1.0; v.len()];
        let taus: Vec<f64> = (0..=40).map(|i| i as f64 / 40.0).collect();
        assert_eq!(weighted_upper_quantiles(&v, &w, &taus, 0.0).unwrap(), upper_quantiles(&v, &taus).unwrap());
        assert_eq!(weighted_lower_quantiles(&v, &w, &taus, 0.0).unwrap(), lower_quantiles(&v, &taus).unwrap());
    }

    #[test]
    fn mass_at_infinity_pushes_quantile_to_infinity() {
        let v = [1.0, 2.0];
        let w = [1.0, 1.0];
        // Total 4: mass 2 at ±∞ is half.
        assert_eq!(weighted_upper_quantiles(&v, &w, &[0.5, 0.51], 2.0).unwrap(), vec![2.0, f64::INFINITY]);
        assert_eq!(weighted_lower_quantiles(&v, &w, &[0.5, 0.49], 2.0).unwrap(), vec![1.0, f64::NEG_INFINITY]);
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        assert!(upper_quantiles(&[], &[0.5]).is_err());
        assert!(upper_quantiles(&[1.0, f64::NAN], &[0.5]).is_err());
        assert!(upper_quantiles(&[1.0], &[1.5]).is_err());
        assert!(upper_quantiles(&[1.0], &[]).is_err());
        assert!(weighted_upper_quantiles(&[1.0], &[1.0, 2.0], &[0.5], 0.0).is_err());
        assert!(weighted_upper_quantiles(&[1.0], &[-1.0], &[0.5], 0.0).is_err());
        assert!(weighted_upper_quantiles(&[1.0], &[0.0], &[0.5], 0.0).is_err());
        assert!(weighted_upper_quantiles(&[1.0], &[1.0], &[0.5], f64::NAN).is_err());
        assert!(weighted_lower_quantiles(&[1.0], &[1.0], &[0.5], -1.0).is_err());
        // Infinite values are ordered, not rejected.
        assert_eq!(upper_quantiles(&[f64::INFINITY, 1.0], &[1.0]).unwrap(), vec![f64::INFINITY]);
    }

    #[test]
    fn large_input_uses_parallel_sort_consistently() {
        let n = 200_000;
        let v: Vec<f64> = (0..n).map(|i| ((i as u64 * 2654435761) % 1_000_003) as f64).collect();
        let w: Vec<f64> = (0..n).map(|i| 1.0 + (i % 3) as f64).collect();
        let taus: Vec<f64> = (1..=9).map(|i| i as f64 / 10.0).collect();
        let a = crate::common::parallel::install(Some(1), || weighted_upper_quantiles(&v, &w, &taus, 0.0)).unwrap();
        let b = crate::common::parallel::install(Some(2), || weighted_upper_quantiles(&v, &w, &taus, 0.0)).unwrap();
        assert_eq!(a, b);
        let mut sorted = v.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(upper_quantiles(&v, &[0.5]).unwrap()[0], sorted[n / 2 - 1]);
    }
}
