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
use crate::transfer::table::check_table;
use rayon::prelude::*;

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
