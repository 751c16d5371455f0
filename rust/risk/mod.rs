//! Kernels for evaluating risk scores (docs/methods/risk-scores.md §2): ROC AUC via one sort with
//! ties counted ½, binning for calibration error (equal-width and arbitrary edges), and a row
//! bootstrap of the headline metrics with a documented, thread-count-independent PRNG.
//!
//! PRNG: replicate `b` draws its row indices from SplitMix64 (`common::rng`) started at
//! `stream_seed(seed, b)` = `mix(seed + 0x9E3779B97F4A7C15 * (b + 1))`, the (b + 1)-th output of
//! SplitMix64 seeded with `seed`; an index in `0..n` is `(x as u128 * n as u128) >> 64`
//! ([`SplitMix64::below_multiply_shift`], Lemire's multiply-shift; bias below n / 2^64).
//! Replicates are independent of the thread count and of each other's order.
//!
//! Survey weights (`w: Option<&[f64]>`, one finite non-negative weight per row, positive total):
//! every sum over rows becomes a weighted sum (a row counts `w_i` instead of 1), so each metric is
//! the population quantity (a Hájek ratio). `None` runs the very same additions with weight 1.0
//! (`1.0 * x == x` exactly), so the unweighted results are bit for bit those of the unweighted
//! kernels. In the bootstrap a row keeps its weight: replicate `b` draws the same row indices with
//! or without weights, and weighs each drawn row by its own weight.

use crate::common::errors::{check, CoreError, CoreResult, Part};
use crate::common::rng::{stream_seed, SplitMix64};
use rayon::prelude::*;

/// The starting state of bootstrap replicate `b`: [`stream_seed`]`(seed, b)`, the `(b + 1)`-th
/// output of SplitMix64 seeded with `seed`. (Releases before 0.1.0's fix used
/// `seed ^ (0x9E37… · (b + 1))`, whose replicates were shifted copies of one stream: see
/// [`stream_seed`].)
pub fn replicate_seed(seed: u64, b: usize) -> u64 {
    stream_seed(seed, b as u64)
}

fn check_inputs(y: &[f64], r: &[f64]) -> CoreResult<()> {
    check::finite("scores", r)?;
    check::finite("y", y)?;
    check::same_len("y", y.len(), "scores", r.len())?;
    if let Some(i) = y.iter().position(|v| *v != 0.0 && *v != 1.0) {
        return Err(CoreError::invalid_at(
            "y",
            vec![Part::text(format!("labels must be 0 or 1; got {} at ", y[i])), Part::at("position", i)],
        ));
    }
    Ok(())
}

/// [`check_inputs`] and, when given, survey weights: one per row, finite, non-negative, positive
/// total (errors name `weights`).
fn check_weighted(y: &[f64], r: &[f64], w: Option<&[f64]>) -> CoreResult<()> {
    check_inputs(y, r)?;
    if let Some(w) = w {
        check::same_len("weights", w.len(), "scores", r.len())?;
        check::weights("weights", w)?;
    }
    Ok(())
}

/// The weight of row `i`: `w[i]`, or 1.0 without weights.
#[inline]
fn weight(w: Option<&[f64]>, i: usize) -> f64 {
    w.map_or(1.0, |w| w[i])
}

/// ROC AUC = P(r+ > r-) + ½ P(r+ = r-), by midranks after one sort. NaN when one class is absent
/// (has no weight). With weights `w` each (positive, negative) pair counts `w+ · w-`: the
/// probability that a weighted random positive outranks a weighted random negative.
pub fn roc_auc(y: &[f64], r: &[f64], w: Option<&[f64]>) -> CoreResult<f64> {
    check_weighted(y, r, w)?;
    let mut idx: Vec<usize> = (0..r.len()).collect();
    idx.sort_unstable_by(|&a, &b| r[a].total_cmp(&r[b]));
    Ok(auc_sorted(y, r, &idx, w))
}

fn auc_sorted(y: &[f64], r: &[f64], idx: &[usize], w: Option<&[f64]>) -> f64 {
    // sum over positives of (weight of negatives below + ½ weight of negatives tied)
    let (mut n_pos, mut n_neg) = (0f64, 0f64);
    let mut acc = 0f64;
    let mut neg_below = 0f64;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        let (mut p, mut q) = (0f64, 0f64);
        while j < idx.len() && r[idx[j]] == r[idx[i]] {
            let wj = weight(w, idx[j]);
            if y[idx[j]] == 1.0 { p += wj } else { q += wj }
            j += 1;
        }
        acc += p * (neg_below + 0.5 * q);
        neg_below += q;
        n_pos += p;
        n_neg += q;
        i = j;
    }
    if n_pos == 0.0 || n_neg == 0.0 { f64::NAN } else { acc / (n_pos * n_neg) }
}

/// Bin index of `x` for sorted `edges` (m + 1 values): bin k holds [e_k, e_{k+1}); the last bin
/// is closed; values below e_0 go to bin 0 and above e_m to the last bin. With `right = true`
/// bins are (e_k, e_{k+1}] with the first closed (pandas `cut`/`qcut` convention).
pub fn bin_index(x: f64, edges: &[f64], right: bool) -> usize {
    let m = edges.len() - 1;
    let k = if right {
        edges.partition_point(|e| *e < x) // first edge >= x
    } else {
        edges.partition_point(|e| *e <= x) // first edge > x
    };
    (k.max(1) - 1).min(m - 1)
}

/// Per-bin (count, sum of scores, sum of labels) for the given edges; with weights `w`, (sum of
/// weights, weighted sum of scores, weighted sum of labels).
pub fn bin_stats(y: &[f64], r: &[f64], edges: &[f64], right: bool, w: Option<&[f64]>) -> CoreResult<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    check_weighted(y, r, w)?;
    check::finite("edges", edges)?;
    if edges.len() < 2 || edges.windows(2).any(|w| w[1] <= w[0]) {
        return Err(CoreError::invalid("edges", "need at least 2 strictly increasing bin edges"));
    }
    let m = edges.len() - 1;
    let (mut c, mut sr, mut sy) = (vec![0f64; m], vec![0f64; m], vec![0f64; m]);
    for i in 0..r.len() {
        let k = bin_index(r[i], edges, right);
        let wi = weight(w, i);
        c[k] += wi;
        sr[k] += wi * r[i];
        sy[k] += wi * y[i];
    }
    Ok((c, sr, sy))
}

/// Equal-width ECE on [0, 1] with `bins` bins (netcal's convention: scores clipped to
/// [eps, 1 - eps], bins [b_k, b_{k+1}), last closed, empty bins ignored). With weights `w`:
/// Σ_m |Σ_{i∈B_m} w_i (y_i − r_i)| / Σ_i w_i.
pub fn ece_equal_width(y: &[f64], r: &[f64], bins: usize, w: Option<&[f64]>) -> CoreResult<f64> {
    check_weighted(y, r, w)?;
    if bins == 0 {
        return Err(CoreError::invalid("bins", "must be at least 1"));
    }
    Ok(ece_uniform_idx(y, r, bins, None, w))
}

fn uniform_bin(x: f64, bins: usize) -> usize {
    let eps = f64::EPSILON;
    let x = x.clamp(eps, 1.0 - eps);
    ((x * bins as f64).floor() as usize).min(bins - 1)
}

/// Equal-width ECE of the rows `rows` (all rows when `None`), each row weighted by `w` (1.0 when
/// `None`: the sums of weights are then the counts, exactly). When there are more bins than rows,
/// at most one bin per row is occupied, and the per-bin sums are kept for the occupied bins only
/// (O(rows) memory whatever `bins`, e.g. `bins = 10^10`), with the same additions in the same order
/// as the dense arrays, so the same bits.
fn ece_uniform_idx(y: &[f64], r: &[f64], bins: usize, rows: Option<&[usize]>, w: Option<&[f64]>) -> f64 {
    let n_rows = rows.map_or(r.len(), <[usize]>::len);
    if bins > n_rows {
        return ece_uniform_sparse(y, r, bins, rows, w);
    }
    let (mut c, mut sr, mut sy) = (vec![0f64; bins], vec![0f64; bins], vec![0f64; bins]);
    let mut total = 0f64;
    let mut add = |i: usize| {
        let x = r[i].clamp(f64::EPSILON, 1.0 - f64::EPSILON);
        let k = uniform_bin(x, bins);
        let wi = weight(w, i);
        c[k] += 1.0;
        sr[k] += wi * x;
        sy[k] += wi * y[i];
        total += wi;
    };
    match rows {
        Some(ix) => ix.iter().for_each(|&i| add(i)),
        None => (0..r.len()).for_each(&mut add),
    }
    (0..bins).filter(|&k| c[k] > 0.0).map(|k| (sy[k] - sr[k]).abs()).sum::<f64>() / total
}

/// [`ece_uniform_idx`] for `bins` above the number of rows: (bin, row position) pairs sorted, so
/// each occupied bin accumulates its rows in row order and bins are summed in bin order, exactly
/// as the dense version does.
fn ece_uniform_sparse(y: &[f64], r: &[f64], bins: usize, rows: Option<&[usize]>, w: Option<&[f64]>) -> f64 {
    let keyed: Vec<(usize, usize)> = match rows {
        Some(ix) => ix.iter().enumerate().map(|(pos, &i)| (uniform_bin(r[i].clamp(f64::EPSILON, 1.0 - f64::EPSILON), bins), pos)).collect(),
        None => (0..r.len()).map(|i| (uniform_bin(r[i].clamp(f64::EPSILON, 1.0 - f64::EPSILON), bins), i)).collect(),
    };
    let mut keyed = keyed;
    keyed.sort_unstable();
    let row_of = |pos: usize| rows.map_or(pos, |ix| ix[pos]);
    // the total weight in row order, as the dense version adds it
    let total: f64 = match rows {
        Some(ix) => ix.iter().map(|&i| weight(w, i)).sum(),
        None => (0..r.len()).map(|i| weight(w, i)).sum(),
    };
    let mut gaps = Vec::new();
    let mut g = 0;
    while g < keyed.len() {
        let (mut sr, mut sy) = (0f64, 0f64);
        let mut e = g;
        while e < keyed.len() && keyed[e].0 == keyed[g].0 {
            let i = row_of(keyed[e].1);
            let wi = weight(w, i);
            sr += wi * r[i].clamp(f64::EPSILON, 1.0 - f64::EPSILON);
            sy += wi * y[i];
            e += 1;
        }
        gaps.push((sy - sr).abs());
        g = e;
    }
    gaps.into_iter().sum::<f64>() / total
}

/// Metric names of the bootstrap, in column order.
pub const BOOT_METRICS: [&str; 7] = ["accuracy", "balanced_accuracy", "brier", "log_loss", "roc_auc", "ece", "sce"];

/// Headline metrics of one resample given by `rows` (indices into y, r), each row weighted by `w`
/// (1.0 when `None`). A resample of zero total weight has no metrics: all NaN.
fn metrics_of(y: &[f64], r: &[f64], rows: &[usize], threshold: f64, bins: usize, eps: f64, w: Option<&[f64]>) -> [f64; 7] {
    let mut n = 0f64;
    let (mut tp, mut tn, mut fp, mut fn_) = (0f64, 0f64, 0f64, 0f64);
    let (mut brier, mut ll, mut sr, mut sy) = (0f64, 0f64, 0f64, 0f64);
    for &i in rows {
        let (yi, ri, wi) = (y[i], r[i], weight(w, i));
        let pred = ri >= threshold;
        match (pred, yi == 1.0) {
            (true, true) => tp += wi,
            (true, false) => fp += wi,
            (false, true) => fn_ += wi,
            (false, false) => tn += wi,
        }
        brier += wi * ((ri - yi) * (ri - yi));
        let p = ri.clamp(eps, 1.0 - eps);
        ll -= wi * (yi * p.ln() + (1.0 - yi) * (1.0 - p).ln());
        sr += wi * ri;
        sy += wi * yi;
        n += wi;
    }
    if n <= 0.0 {
        return [f64::NAN; 7];
    }
    let tpr = if tp + fn_ > 0.0 { tp / (tp + fn_) } else { 0.0 };
    let fpr = if fp + tn > 0.0 { fp / (fp + tn) } else { 1.0 };
    let mut sorted = rows.to_vec();
    sorted.sort_unstable_by(|&a, &b| r[a].total_cmp(&r[b]));
    [
        (tp + tn) / n,
        (tpr + (1.0 - fpr)) / 2.0,
        brier / n,
        ll / n,
        auc_sorted(y, r, &sorted, w),
        ece_uniform_idx(y, r, bins, Some(rows), w),
        (sr - sy) / n,
    ]
}

/// The headline metrics on the full sample (row order irrelevant), weighted by `w` when given.
pub fn point_metrics(y: &[f64], r: &[f64], threshold: f64, bins: usize, eps: f64, w: Option<&[f64]>) -> CoreResult<Vec<f64>> {
    check_weighted(y, r, w)?;
    let rows: Vec<usize> = (0..r.len()).collect();
    Ok(metrics_of(y, r, &rows, threshold, bins.max(1), eps, w).to_vec())
}

/// `n_boot` row-bootstrap replicates of [`BOOT_METRICS`], row-major (n_boot × 7), in parallel.
/// Replicate `b` resamples the rows [`bootstrap_indices`]`(n, seed, b)`; with survey weights `w`
/// each drawn row carries its own weight (the same rows are drawn as without weights), and a
/// replicate whose drawn rows all have weight 0 is a row of NaN.
#[allow(clippy::too_many_arguments)]
pub fn bootstrap_metrics(y: &[f64], r: &[f64], n_boot: usize, seed: u64, threshold: f64, bins: usize,
                         eps: f64, w: Option<&[f64]>) -> CoreResult<Vec<f64>> {
    check_weighted(y, r, w)?;
    if n_boot == 0 {
        return Err(CoreError::invalid("n_boot", "must be at least 1"));
    }
    let n = r.len();
    let bins = bins.max(1);
    let cols = BOOT_METRICS.len();
    // the n_boot × 7 result, allocated fallibly before any work: n_boot = 10^11 is an error naming
    // n_boot, not an abort. Each replicate writes its own row, so the values do not depend on
    // the thread count.
    let len = n_boot.saturating_mul(cols);
    let mut out: Vec<f64> = check::filled("n_boot", n_boot, len, 0.0, "the bootstrap replicates (7 float64 each)")?;
    out.par_chunks_mut(cols).enumerate().for_each(|(b, row)| {
        let mut rng = SplitMix64::new(replicate_seed(seed, b));
        let rows: Vec<usize> = (0..n).map(|_| rng.below_multiply_shift(n)).collect();
        row.copy_from_slice(&metrics_of(y, r, &rows, threshold, bins, eps, w));
    });
    Ok(out)
}

/// The bootstrap row indices of replicate `b` (for reference implementations and tests); `n`
/// indices, allocated fallibly.
pub fn bootstrap_indices(n: usize, seed: u64, b: usize) -> CoreResult<Vec<usize>> {
    let mut rng = SplitMix64::new(replicate_seed(seed, b));
    let mut out = check::with_capacity("n", n, n, "the bootstrap indices")?;
    out.extend((0..n).map(|_| rng.below_multiply_shift(n)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_auc(y: &[f64], r: &[f64]) -> f64 {
        let (mut s, mut c) = (0.0, 0.0);
        for i in 0..y.len() {
            for j in 0..y.len() {
                if y[i] == 1.0 && y[j] == 0.0 {
                    c += 1.0;
                    s += if r[i] > r[j] { 1.0 } else if r[i] == r[j] { 0.5 } else { 0.0 };
                }
            }
        }
        s / c
    }

    #[test]
    fn auc_matches_brute_force_with_ties() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..50 {
            let n = 2 + rng.below_multiply_shift(40);
            let r: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(5) as f64 / 4.0).collect();
            let y: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(2) as f64).collect();
            let a = roc_auc(&y, &r, None).unwrap();
            let b = brute_auc(&y, &r);
            if b.is_nan() { assert!(a.is_nan()) } else { assert!((a - b).abs() < 1e-12, "{a} {b}") }
        }
    }

    #[test]
    fn ece_closed_forms() {
        // constant 0.5 with prevalence 0.3 -> ECE 0.2; r = y -> 0
        let y = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let r = [0.5; 10];
        assert!((ece_equal_width(&y, &r, 10, None).unwrap() - 0.2).abs() < 1e-12);
        assert!(ece_equal_width(&y, &y, 10, None).unwrap() < 1e-12);
        // edge convention: 0.1 is in bin 1 (second bin), 1.0 in the last
        assert_eq!(uniform_bin(0.1, 10), 1);
        assert_eq!(uniform_bin(1.0, 10), 9);
        assert_eq!(uniform_bin(0.0, 10), 0);
    }

    /// The dense arrays of `ece_uniform_idx`, whatever the bin count (the reference of the sparse
    /// path), rows weighted by `w` (1.0 when `None`).
    fn ece_dense(y: &[f64], r: &[f64], bins: usize, rows: Option<&[usize]>, w: Option<&[f64]>) -> f64 {
        let (mut c, mut sr, mut sy) = (vec![0f64; bins], vec![0f64; bins], vec![0f64; bins]);
        let all: Vec<usize> = (0..r.len()).collect();
        let ix = rows.unwrap_or(&all);
        let mut total = 0f64;
        for &i in ix {
            let x = r[i].clamp(f64::EPSILON, 1.0 - f64::EPSILON);
            let k = uniform_bin(x, bins);
            let wi = w.map_or(1.0, |w| w[i]);
            c[k] += 1.0;
            sr[k] += wi * x;
            sy[k] += wi * y[i];
            total += wi;
        }
        (0..bins).filter(|&k| c[k] > 0.0).map(|k| (sy[k] - sr[k]).abs()).sum::<f64>() / total
    }

    #[test]
    fn sparse_ece_gives_the_dense_bits() {
        let mut rng = SplitMix64::new(11);
        for trial in 0..200 {
            let n = 1 + rng.below_multiply_shift(60);
            // coarse scores so that rows share bins
            let r: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(50) as f64 / 49.0).collect();
            let y: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(2) as f64).collect();
            let rows: Vec<usize> = (0..n).map(|_| rng.below_multiply_shift(n)).collect();
            for bins in [n + 1, 2 * n + 3, 97, 1000] {
                if bins <= n {
                    continue;
                }
                let w: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(4) as f64 * 0.7).collect();
                for wt in [None, Some(w.as_slice())] {
                    let a = ece_uniform_sparse(&y, &r, bins, None, wt);
                    assert_eq!(a.to_bits(), ece_dense(&y, &r, bins, None, wt).to_bits(), "trial {trial} bins {bins}");
                    let b = ece_uniform_sparse(&y, &r, bins, Some(&rows), wt);
                    assert_eq!(b.to_bits(), ece_dense(&y, &r, bins, Some(&rows), wt).to_bits(), "trial {trial} bins {bins}");
                }
            }
        }
    }

    #[test]
    fn huge_sizes_are_errors_or_answers_not_aborts() {
        let y = [0.0, 1.0, 1.0, 0.0];
        let r = [0.2, 0.8, 0.6, 0.3];
        // bins = 10^10 (was 240 GB of bin arrays): one bin per row, answered in O(rows) memory
        let want = ((0.2f64 - 0.0).abs() + (0.8f64 - 1.0).abs() + (0.6f64 - 1.0).abs() + (0.3f64 - 0.0).abs()) / 4.0;
        for bins in [10_000_000_000usize, usize::MAX] {
            assert!((ece_equal_width(&y, &r, bins, None).unwrap() - want).abs() < 1e-15);
            assert!(point_metrics(&y, &r, 0.5, bins, f64::EPSILON, None).is_ok());
            assert_eq!(bootstrap_metrics(&y, &r, 3, 1, 0.5, bins, f64::EPSILON, None).unwrap().len(), 21);
        }
        // n_boot = 10^11 (5.6 TB of replicates) and beyond: errors naming n_boot
        for n_boot in [100_000_000_000usize, usize::MAX / 7 + 1, usize::MAX] {
            let e = bootstrap_metrics(&y, &r, n_boot, 1, 0.5, 10, f64::EPSILON, None).unwrap_err();
            assert_eq!(e.python_class(), "ResourceError");
            assert!(e.to_string().contains(&format!("`n_boot` = {n_boot}")), "{e}");
        }
        assert!(bootstrap_indices(1 << 62, 0, 0).unwrap_err().to_string().contains("`n`"));
        assert!(bootstrap_indices(0, 0, usize::MAX).unwrap().is_empty());
    }

    #[test]
    fn bin_index_conventions() {
        let e = [0.0, 0.5, 1.0];
        assert_eq!(bin_index(0.5, &e, false), 1);
        assert_eq!(bin_index(0.5, &e, true), 0);
        assert_eq!(bin_index(0.0, &e, true), 0);
        assert_eq!(bin_index(1.0, &e, false), 1);
        assert_eq!(bin_index(-3.0, &e, false), 0);
        assert_eq!(bin_index(3.0, &e, true), 1);
    }

    #[test]
    fn bootstrap_is_deterministic_and_errors_are_clean() {
        let y = [0.0, 1.0, 1.0, 0.0, 1.0];
        let r = [0.1, 0.8, 0.6, 0.4, 0.3];
        let a = bootstrap_metrics(&y, &r, 20, 42, 0.5, 10, f64::EPSILON, None).unwrap();
        let b = crate::common::parallel::install(Some(1), || bootstrap_metrics(&y, &r, 20, 42, 0.5, 10, f64::EPSILON, None)).unwrap();
        assert_eq!(a.len(), 140);
        // pinned: the replicate Python and R reproduce (SplitMix64::below_multiply_shift)
        assert_eq!(bootstrap_indices(10, 42, 3).unwrap(), vec![1, 4, 0, 6, 6, 6, 3, 4, 0, 0]);
        assert!(a.iter().zip(&b).all(|(x, z)| x.to_bits() == z.to_bits() || (x.is_nan() && z.is_nan())));
        assert!(roc_auc(&[0.0, 2.0], &[0.1, 0.2], None).is_err());
        assert!(roc_auc(&[0.0], &[0.1, 0.2], None).is_err());
        assert!(roc_auc(&[0.0, 1.0], &[f64::NAN, 0.2], None).is_err());
        let p = point_metrics(&y, &r, 0.5, 10, f64::EPSILON, None).unwrap();
        assert!((p[0] - 0.8).abs() < 1e-12); // accuracy: 0.1/0 .8/1 .6/1 .4/0 ok, .3/1 wrong
        assert!((p[6] - (2.2 / 5.0 - 3.0 / 5.0)).abs() < 1e-12);
    }

    /// Random labels, coarse scores (ties) and weights with zeros, for the weighted tests.
    fn weighted_sample(rng: &mut SplitMix64, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let r: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(9) as f64 / 8.0).collect();
        let y: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(2) as f64).collect();
        let w: Vec<f64> = (0..n).map(|_| rng.below_multiply_shift(5) as f64 * 0.25).collect();
        (y, r, w)
    }

    #[test]
    fn weighted_auc_matches_weighted_pairs() {
        let mut rng = SplitMix64::new(5);
        for _ in 0..50 {
            let n = 2 + rng.below_multiply_shift(40);
            let (y, r, mut w) = weighted_sample(&mut rng, n);
            w[0] = 1.0; // a positive total
            let (mut s, mut c) = (0.0, 0.0);
            for i in 0..n {
                for j in 0..n {
                    if y[i] == 1.0 && y[j] == 0.0 {
                        c += w[i] * w[j];
                        s += w[i] * w[j] * if r[i] > r[j] { 1.0 } else if r[i] == r[j] { 0.5 } else { 0.0 };
                    }
                }
            }
            let a = roc_auc(&y, &r, Some(&w)).unwrap();
            if c == 0.0 { assert!(a.is_nan()) } else { assert!((a - s / c).abs() < 1e-12, "{a} {}", s / c) }
        }
    }

    #[test]
    fn unit_weights_give_the_unweighted_bits() {
        let mut rng = SplitMix64::new(9);
        let (y, r, _) = weighted_sample(&mut rng, 57);
        let ones = vec![1.0; y.len()];
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        for bins in [1, 7, 10, 500] {
            let a = bootstrap_metrics(&y, &r, 25, 3, 0.5, bins, f64::EPSILON, None).unwrap();
            let b = bootstrap_metrics(&y, &r, 25, 3, 0.5, bins, f64::EPSILON, Some(&ones)).unwrap();
            assert_eq!(bits(&a), bits(&b), "bins {bins}");
            let a = point_metrics(&y, &r, 0.4, bins, f64::EPSILON, None).unwrap();
            assert_eq!(bits(&a), bits(&point_metrics(&y, &r, 0.4, bins, f64::EPSILON, Some(&ones)).unwrap()));
            let a = ece_equal_width(&y, &r, bins, None).unwrap();
            assert_eq!(a.to_bits(), ece_equal_width(&y, &r, bins, Some(&ones)).unwrap().to_bits());
        }
        assert_eq!(roc_auc(&y, &r, None).unwrap().to_bits(), roc_auc(&y, &r, Some(&ones)).unwrap().to_bits());
        let e = [0.0, 0.3, 0.6, 1.0];
        assert_eq!(bin_stats(&y, &r, &e, true, None).unwrap(), bin_stats(&y, &r, &e, true, Some(&ones)).unwrap());
    }

    #[test]
    fn integer_weights_equal_duplicated_rows() {
        let mut rng = SplitMix64::new(13);
        for _ in 0..30 {
            let n = 3 + rng.below_multiply_shift(30);
            let (mut y, r, _) = weighted_sample(&mut rng, n);
            y[0] = 1.0;
            y[1] = 0.0;
            let w: Vec<f64> = (0..n).map(|i| if i < 2 { 1.0 } else { rng.below_multiply_shift(4) as f64 }).collect();
            let (mut yd, mut rd) = (Vec::new(), Vec::new());
            for i in 0..n {
                for _ in 0..w[i] as usize {
                    yd.push(y[i]);
                    rd.push(r[i]);
                }
            }
            for bins in [3, 10, 1000] {
                let a = point_metrics(&y, &r, 0.5, bins, f64::EPSILON, Some(&w)).unwrap();
                let b = point_metrics(&yd, &rd, 0.5, bins, f64::EPSILON, None).unwrap();
                assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-12), "{a:?} {b:?}");
            }
            let e = [0.0, 0.5, 1.0];
            let (c, sr, sy) = bin_stats(&y, &r, &e, false, Some(&w)).unwrap();
            let (cd, srd, syd) = bin_stats(&yd, &rd, &e, false, None).unwrap();
            for k in 0..2 {
                assert!((c[k] - cd[k]).abs() < 1e-12 && (sr[k] - srd[k]).abs() < 1e-12 && (sy[k] - syd[k]).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn weights_travel_with_their_rows_in_the_bootstrap() {
        let mut rng = SplitMix64::new(17);
        let (y, r, mut w) = weighted_sample(&mut rng, 40);
        w[0] = 2.0;
        let boot = bootstrap_metrics(&y, &r, 30, 11, 0.5, 10, f64::EPSILON, Some(&w)).unwrap();
        let plain = bootstrap_metrics(&y, &r, 30, 11, 0.5, 10, f64::EPSILON, None).unwrap();
        assert!(boot.iter().zip(&plain).any(|(a, b)| (a - b).abs() > 1e-6), "the weights changed nothing");
        for b in 0..30 {
            let rows = bootstrap_indices(40, 11, b).unwrap();
            let (yb, rb, wb): (Vec<f64>, Vec<f64>, Vec<f64>) =
                (rows.iter().map(|&i| y[i]).collect(), rows.iter().map(|&i| r[i]).collect(), rows.iter().map(|&i| w[i]).collect());
            let want = if wb.iter().any(|v| *v > 0.0) {
                point_metrics(&yb, &rb, 0.5, 10, f64::EPSILON, Some(&wb)).unwrap()
            } else {
                vec![f64::NAN; 7]
            };
            for (got, want) in boot[b * 7..(b + 1) * 7].iter().zip(&want) {
                assert!((got - want).abs() < 1e-12 || (got.is_nan() && want.is_nan()), "replicate {b}: {got} {want}");
            }
        }
        // a replicate that draws only rows of weight 0 has no metrics: NaN, not a number from 0/0 rules
        let w1: Vec<f64> = (0..6).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        let (y6, r6) = ([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [0.9, 0.1, 0.8, 0.3, 0.6, 0.2]);
        let boot = bootstrap_metrics(&y6, &r6, 40, 1, 0.5, 10, f64::EPSILON, Some(&w1)).unwrap();
        let b = (0..40).find(|&b| !bootstrap_indices(6, 1, b).unwrap().contains(&0)).expect("a replicate without row 0");
        assert!(boot[b * 7..(b + 1) * 7].iter().all(|v| v.is_nan()));
    }

    #[test]
    fn bad_weights_are_errors_naming_weights() {
        let (y, r) = ([0.0, 1.0, 1.0], [0.2, 0.7, 0.4]);
        let cases: [(&[f64], &str); 5] = [
            (&[1.0, 1.0], "ShapeError"),
            (&[1.0, -0.5, 1.0], "InvalidArgumentError"),
            (&[1.0, f64::NAN, 1.0], "NonFiniteError"),
            (&[1.0, f64::INFINITY, 1.0], "NonFiniteError"),
            (&[0.0, 0.0, 0.0], "InvalidArgumentError"),
        ];
        for (w, class) in cases {
            for e in [
                bootstrap_metrics(&y, &r, 5, 1, 0.5, 10, f64::EPSILON, Some(w)).unwrap_err(),
                point_metrics(&y, &r, 0.5, 10, f64::EPSILON, Some(w)).unwrap_err(),
                roc_auc(&y, &r, Some(w)).unwrap_err(),
                ece_equal_width(&y, &r, 10, Some(w)).unwrap_err(),
                bin_stats(&y, &r, &[0.0, 1.0], false, Some(w)).unwrap_err(),
            ] {
                assert_eq!(e.python_class(), class, "{e}");
                assert!(e.to_string().contains("`weights`"), "{e}");
            }
        }
    }
}
