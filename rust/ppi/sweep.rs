//! The sorted sweep of the prediction-powered quantile (docs/methods/ppi.md §4.2, §8.3): for each
//! of `k` increment rows, the sum of the increments of the rows whose value is `<= t`, at every `t`
//! of a sorted grid. One sort of the values serves all `k` rows.
//!
//! The rows are put in the order of (value, original index), `-0.0` counted as `0.0` -- numpy's
//! stable argsort -- by a parallel sort whose keys are all distinct, so the permutation, hence
//! every sum, is the same for any thread count; each increment row is then summed sequentially in
//! that order (numpy's `cumsum`, bit for bit).

use crate::common::errors::{CoreError, CoreResult, Part};
use rayon::prelude::*;

/// Grid points per parallel chunk of the counting pass.
const GRID_CHUNK: usize = 4096;

/// The sort key of a value: `-0.0` and `0.0` are one value (as for `<=`).
#[inline]
fn key(v: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// `out[r * grid.len() + g] = sum of increments[r][i] over the i with values[i] <= grid[g]`
/// (row-major `k x len(grid)`, `k = increments.len()`). `values` holds no NaN, each increment row
/// has `values.len()` entries and `grid` is sorted ascending without NaN (all checked; empty inputs
/// give zeros or an empty result). `O(n log n + k (n + g))` time.
pub fn cumulative_at(values: &[f64], increments: &[&[f64]], grid: &[f64]) -> CoreResult<Vec<f64>> {
    let n = values.len();
    if let Some(i) = values.iter().position(|v| v.is_nan()) {
        return Err(CoreError::NonFinite { arg: "values".to_string(), index: i, value: f64::NAN });
    }
    for (r, row) in increments.iter().enumerate() {
        if row.len() != n {
            let parts = vec![Part::at("row", r), Part::text(format!(" holds {} values, not the {n} of `values`", row.len()))];
            return Err(CoreError::invalid_at("increments", parts));
        }
    }
    if let Some(i) = grid.iter().position(|v| v.is_nan()) {
        return Err(CoreError::NonFinite { arg: "grid".to_string(), index: i, value: f64::NAN });
    }
    if let Some(i) = grid.windows(2).position(|w| w[0] > w[1]) {
        let parts = vec![Part::text("not sorted: "), Part::at("point", i + 1), Part::text(" is below the one before it")];
        return Err(CoreError::invalid_at("grid", parts));
    }
    let g = grid.len();
    let k = increments.len();
    let mut out = crate::common::errors::check::filled("grid", g, k.saturating_mul(g), 0.0, "the cumulative sums")?;
    if k == 0 || g == 0 || n == 0 {
        return Ok(out);
    }

    // the order of (value, index): distinct keys, so any sort gives the same permutation
    let mut order: Vec<(f64, usize)> = values.par_iter().enumerate().map(|(i, &v)| (key(v), i)).collect();
    order.par_sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));

    // counts[j] = the number of values <= grid[j] (a prefix of the sorted values)
    let mut counts = vec![0usize; g];
    counts.par_chunks_mut(GRID_CHUNK).zip(grid.par_chunks(GRID_CHUNK)).for_each(|(cs, ts)| {
        let mut at = order.partition_point(|&(v, _)| v <= ts[0]);
        for (c, &t) in cs.iter_mut().zip(ts) {
            while at < n && order[at].0 <= t {
                at += 1;
            }
            *c = at;
        }
    });

    // each row: its increments in sorted order (a parallel gather), then one sequential running sum
    out.par_chunks_mut(g).zip(increments.par_iter()).for_each(|(dst, row)| {
        let sorted: Vec<f64> = order.par_iter().map(|&(_, i)| row[i]).collect();
        let (mut acc, mut at) = (0.0f64, 0usize);
        for (o, &c) in dst.iter_mut().zip(&counts) {
            while at < c {
                acc += sorted[at];
                at += 1;
            }
            *o = acc;
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For each t: the sum over the rows with value <= t, in index order.
    fn brute(values: &[f64], increments: &[&[f64]], grid: &[f64]) -> Vec<f64> {
        let mut out = Vec::new();
        for row in increments {
            for &t in grid {
                out.push(values.iter().zip(row.iter()).filter(|(v, _)| **v <= t).map(|(_, x)| *x).sum());
            }
        }
        out
    }

    /// A small deterministic generator (xorshift), values in [0, 1).
    fn uniform(seed: u64, len: usize) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= 1e-12 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    #[test]
    fn matches_brute_force_with_ties_and_signed_zeros() {
        let values = [2.0, -0.0, 1.0, 0.0, 2.0, -1.5, 1.0, 0.0, f64::INFINITY, -0.0];
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        let b = [0.5, -1.0, 0.25, 2.0, -3.0, 1.0, 1.0, -0.5, 4.0, 0.125];
        // below all, -0 and 0 (both count every zero), duplicates, between, at the top, above all
        let grid = [-9.0, -1.5, -0.0, 0.0, 0.0, 0.5, 1.0, 2.0, 2.0, 3.0, f64::INFINITY];
        let got = cumulative_at(&values, &[&a, &b], &grid).unwrap();
        assert_eq!(got, brute(&values, &[&a, &b], &grid));
        assert_eq!(&got[..5], &[0.0, 6.0, 30.0, 30.0, 30.0]);
        assert_eq!(got[10], 55.0);
    }

    #[test]
    fn random_ties_match_brute_force() {
        let u = uniform(7, 5000);
        let values: Vec<f64> = u.iter().map(|x| (x * 40.0).floor() - 20.0).collect(); // many ties
        let a = uniform(8, 5000);
        let b: Vec<f64> = uniform(9, 5000).iter().map(|x| x * x - 0.3).collect();
        let mut grid: Vec<f64> = uniform(10, 300).iter().map(|x| x * 50.0 - 25.0).collect();
        grid.extend([-20.0, -20.0, 0.0, 19.0, 19.0, 30.0, -30.0]);
        grid.sort_by(f64::total_cmp);
        close(&cumulative_at(&values, &[&a, &b], &grid).unwrap(), &brute(&values, &[&a, &b], &grid));
    }

    #[test]
    fn empty_inputs() {
        let g = [0.0, 1.0];
        assert_eq!(cumulative_at(&[], &[&[], &[]], &g).unwrap(), vec![0.0; 4]);
        assert!(cumulative_at(&[1.0, 2.0], &[], &g).unwrap().is_empty());
        assert!(cumulative_at(&[1.0, 2.0], &[&[1.0, 1.0]], &[]).unwrap().is_empty());
        assert!(cumulative_at(&[], &[], &[]).unwrap().is_empty());
        assert_eq!(cumulative_at(&[5.0], &[&[2.0]], &[5.0]).unwrap(), vec![2.0]);
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert!(cumulative_at(&[1.0, 2.0], &[&[1.0]], &[0.0]).unwrap_err().to_string().contains("row 0"));
        assert!(cumulative_at(&[1.0, f64::NAN], &[], &[0.0]).is_err());
        assert!(cumulative_at(&[1.0], &[], &[1.0, 0.0]).unwrap_err().to_string().contains("not sorted"));
        assert!(cumulative_at(&[1.0], &[], &[0.0, f64::NAN]).is_err());
    }

    #[test]
    fn does_not_depend_on_threads() {
        let n = 200_000;
        let values: Vec<f64> = uniform(1, n).iter().map(|x| (x * 1000.0).floor() / 7.0 - 50.0).collect();
        let a: Vec<f64> = uniform(2, n).iter().map(|x| x.ln() * 1e3).collect();
        let b = uniform(3, n);
        let mut grid: Vec<f64> = values.iter().step_by(3).copied().collect();
        grid.extend([-1e9, 1e9]);
        grid.sort_by(f64::total_cmp);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| cumulative_at(&values, &[&a, &b], &grid).unwrap())
        };
        let one = run(1);
        for threads in [2, 3, 8] {
            let other = run(threads);
            assert!(one.iter().zip(&other).all(|(x, y)| x.to_bits() == y.to_bits()), "{threads} threads");
        }
        assert_eq!((one[0], one[grid.len()]), (0.0, 0.0)); // below all values
        close(&one[grid.len() - 1..grid.len()], &[a.iter().sum::<f64>()]);
    }
}
