//! Order statistics of the pooled errors of a square table, by selection and without building it
//! (issue 37: a forecast or quantile interval needs a few order statistics, not the sorted table).
//!
//! A square matrix `E[train, test]` (row-major, n × n, the diagonal ignored) holds the r = 1
//! table's N = n(n − 1) errors. Their order statistics do not depend on the order in which they
//! are pooled, so the off-diagonal cells are copied row by row (in parallel, 8 bytes an error, no
//! index arrays) and the ranks are found by [`select_ranks`], the values equal to those of the
//! sorted table bit for bit.

use crate::common::errors::{CoreError, CoreResult};
use crate::common::quantiles::select_ranks;
use crate::transfer::table::{check_table, total_order_key};
use rayon::prelude::*;

/// Values per parallel piece of a streamed chunk (each piece counts into its own histogram).
const PIECE: usize = 1 << 20;

/// The off-diagonal cells of the row-major `n × n` `matrix`, row by row; `None` when one of them
/// is not finite (the caller's own checks then name it).
pub fn off_diagonal(matrix: &[f64], n: usize) -> CoreResult<Option<Vec<f64>>> {
    if n < 2 || matrix.len() != n * n {
        return Err(CoreError::invalid("matrix", format!("need a square matrix of at least 2 x 2; got {} cells for n = {n}", matrix.len())));
    }
    let mut out = vec![0.0; n * (n - 1)];
    let finite = out.par_chunks_mut(n - 1).zip(matrix.par_chunks(n)).enumerate().all(|(i, (dst, row))| {
        dst[..i].copy_from_slice(&row[..i]);
        dst[i..].copy_from_slice(&row[i + 1..]);
        dst.iter().all(|x| x.is_finite())
    });
    Ok(finite.then_some(out))
}

/// The pooled errors' values at the 1-based `ranks` (0 → −∞, N + 1 → +∞) of the square table
/// `matrix` (see [`off_diagonal`]); `None` when an off-diagonal cell is not finite.
pub fn matrix_order_statistics(matrix: &[f64], n: usize, ranks: &[usize]) -> CoreResult<Option<Vec<f64>>> {
    Ok(off_diagonal(matrix, n)?.map(|mut work| select_ranks(&mut work, ranks)))
}

/// The values at the 1-based `ranks` of a table's pooled errors (`values`, with the test domain of
/// each in `test`, checked as [`check_table`] checks every table), by selection on a copy of
/// `values`: 8 bytes an error, never sorted.
pub fn table_order_statistics(values: &[f64], test: &[i64], n: usize, ranks: &[usize]) -> CoreResult<Vec<f64>> {
    check_table(values, test, n)?;
    let mut work = values.to_vec();
    Ok(select_ranks(&mut work, ranks))
}

/// One pass of the streamed selection over a chunk of errors (docs/methods/transfer.md A2): the
/// order keys (`f64::total_cmp` order as `u64`) whose bits from `shift` up equal one of the sorted
/// `prefixes` are counted by their next `bits` bits: `counts[i << bits | b]` for prefix `i`. NaN
/// values are skipped (a matrix's diagonal is marked NaN) and counted, as are infinite ones:
/// returns `(counts, nan, infinite)`.
pub fn key_histogram(values: &[f64], prefixes: &[u64], shift: u32, bits: u32) -> CoreResult<(Vec<u64>, u64, u64)> {
    if bits == 0 || bits > 24 || bits > shift || shift > 64 || !prefixes.windows(2).all(|w| w[0] < w[1]) {
        return Err(CoreError::invalid("bits", format!("need 0 < bits <= min(24, shift), shift <= 64 and sorted distinct prefixes; got bits = {bits}, shift = {shift}")));
    }
    let width = prefixes.len() << bits;
    let low = shift - bits;
    let mask = (1u64 << bits) - 1;
    let count = |(mut counts, mut nan, mut inf): (Vec<u64>, u64, u64), piece: &[f64]| {
        for &v in piece {
            if v.is_nan() {
                nan += 1;
                continue;
            }
            if v.is_infinite() {
                inf += 1;
            }
            let key = total_order_key(v);
            let prefix = key.checked_shr(shift).unwrap_or(0);
            if let Ok(i) = prefixes.binary_search(&prefix) {
                counts[(i << bits) | ((key >> low) & mask) as usize] += 1;
            }
        }
        (counts, nan, inf)
    };
    // one histogram per rayon split (a few per thread), not one per piece
    Ok(values
        .par_chunks(PIECE)
        .fold(|| (vec![0u64; width], 0u64, 0u64), count)
        .reduce_with(|(mut a, n1, i1), (b, n2, i2)| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            (a, n1 + n2, i1 + i2)
        })
        .unwrap_or_else(|| (vec![0; width], 0, 0)))
}

/// The values of a chunk whose order keys lie in one of the ranges `[lo[i], hi[i])` (NaN skipped),
/// in the chunk's order: the candidates the streamed selection keeps for its last, exact step.
pub fn key_collect(values: &[f64], lo: &[u64], hi: &[u64]) -> CoreResult<Vec<f64>> {
    if lo.len() != hi.len() || !lo.windows(2).all(|w| w[0] < w[1]) {
        return Err(CoreError::invalid("lo", "need as many lower as upper ends, the lower ends sorted and distinct"));
    }
    let keep = |&v: &f64| {
        if v.is_nan() {
            return false;
        }
        let key = total_order_key(v);
        let i = lo.partition_point(|&l| l <= key);
        i > 0 && key < hi[i - 1]
    };
    Ok(values.par_iter().copied().filter(|v| keep(v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_sorted_table() {
        let n = 37;
        let m: Vec<f64> = (0..n * n).map(|i| if i % (n + 1) == 0 { f64::NAN } else { ((i * 7919) % 211) as f64 - 100.0 }).collect();
        let mut pooled: Vec<f64> = (0..n).flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j))).map(|(i, j)| m[i * n + j]).collect();
        pooled.sort_by(f64::total_cmp);
        let big_n = n * (n - 1);
        let ranks: Vec<usize> = (0..=big_n + 1).collect();
        let got = matrix_order_statistics(&m, n, &ranks).unwrap().unwrap();
        assert_eq!(got[0], f64::NEG_INFINITY);
        assert_eq!(got[big_n + 1], f64::INFINITY);
        assert_eq!(&got[1..=big_n], &pooled[..]);
    }

    #[test]
    fn a_missing_cell_or_a_bad_shape_is_reported_not_a_panic() {
        let mut m = vec![1.0; 9];
        m[5] = f64::NAN; // off the diagonal
        assert!(matrix_order_statistics(&m, 3, &[1]).unwrap().is_none());
        m[5] = 1.0;
        m[4] = f64::NAN; // on the diagonal: ignored
        assert_eq!(matrix_order_statistics(&m, 3, &[1, 6]).unwrap(), Some(vec![1.0, 1.0]));
        assert!(matrix_order_statistics(&m, 2, &[1]).is_err());
        assert!(matrix_order_statistics(&[1.0], 1, &[1]).is_err());
    }

    #[test]
    fn histogram_and_collect_find_every_rank_of_a_sort() {
        // two refinements of 20 then 16 bits and a collection give the sorted values' ranks
        let v: Vec<f64> = (0..3 * PIECE + 5).map(|i| match i % 13 { 0 => -0.0, 1 => 0.0, 2 => f64::NAN, _ => ((((i as u64 * 2654435761) % 100_003) + 1) as f64).ln() - 5.0 }).collect();
        let mut sorted: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        let (h, nan, inf) = key_histogram(&v, &[0], 64, 20).unwrap();
        assert_eq!((nan as usize, inf), (v.len() - sorted.len(), 0));
        assert_eq!(h.iter().sum::<u64>() as usize, sorted.len());
        for rank in [1usize, 2, 1000, sorted.len() / 2, sorted.len()] {
            let (mut prefix, mut shift, mut within) = (0u64, 64u32, rank as u64);
            for bits in [20u32, 16] {
                let (h, _, _) = key_histogram(&v, &[prefix], shift, bits).unwrap();
                let mut b = 0;
                while within > h[b] {
                    within -= h[b];
                    b += 1;
                }
                prefix = (prefix << bits) | b as u64;
                shift -= bits;
            }
            let mut got = key_collect(&v, &[prefix << shift], &[(prefix + 1) << shift]).unwrap();
            got.sort_by(f64::total_cmp);
            assert_eq!(got[within as usize - 1].to_bits(), sorted[rank - 1].to_bits(), "rank {rank}");
        }
        assert!(key_histogram(&v, &[1, 0], 64, 20).is_err());
        assert!(key_histogram(&v, &[0], 10, 20).is_err());
        assert!(key_collect(&v, &[2, 1], &[3, 2]).is_err());
    }

    #[test]
    fn a_tables_columns_are_checked_as_the_sorted_tables_are() {
        let (values, test) = ([3.0, -0.0, 0.0, 1.0], [0i64, 0, 1, 1]);
        assert_eq!(table_order_statistics(&values, &test, 2, &[1, 2, 4, 5]).unwrap(), vec![-0.0, 0.0, 3.0, f64::INFINITY]);
        assert!(table_order_statistics(&values, &test, 2, &[1]).unwrap()[0].is_sign_negative());
        for (v, t, n) in [(&[1.0, f64::NAN, 2.0, 3.0][..], &[0i64, 0, 1, 1][..], 2), (&[1.0, 2.0, 3.0], &[0, 1, 1], 2), (&[1.0, 2.0], &[0, 0], 1)] {
            let want = crate::transfer::SortedTable::new(v, t, n).unwrap_err().to_string();
            assert_eq!(table_order_statistics(v, t, n, &[1]).unwrap_err().to_string(), want);
        }
    }
}
