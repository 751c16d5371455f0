//! Sums of rows by cluster (docs/methods/ppi.md §8): the cluster totals of the cluster-robust
//! variance and lambda-hat.

use crate::common::errors::{CoreError, CoreResult, Part};

/// `out[c] = sum of the rows i with codes[i] == c` (row-major `n_groups x width`), for the
/// row-major `m x width` matrix `rows` and codes in `0..n_groups`. One pass, in row order.
pub fn cluster_sums(rows: &[f64], width: usize, codes: &[i64], n_groups: usize) -> CoreResult<Vec<f64>> {
    if width == 0 || !rows.len().is_multiple_of(width) {
        return Err(CoreError::invalid("rows", format!("holds {} values, not rows of {width}", rows.len())));
    }
    crate::common::errors::check::same_len("codes", codes.len(), "rows", rows.len() / width)?;
    if let Some(i) = codes.iter().position(|&c| c < 0 || c as u64 >= n_groups as u64) {
        let parts = vec![Part::text(format!("code {} at ", codes[i])), Part::at("row", i), Part::text(format!(", outside 0..{n_groups}"))];
        return Err(CoreError::invalid_at("codes", parts));
    }
    let mut out = crate::common::errors::check::filled("n_groups", n_groups, n_groups.saturating_mul(width), 0.0, "the cluster sums")?;
    for (row, &c) in rows.chunks_exact(width).zip(codes) {
        let acc = &mut out[c as usize * width..(c as usize + 1) * width];
        for (o, v) in acc.iter_mut().zip(row) {
            *o += v;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_by_code() {
        let s = cluster_sums(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, &[1, 0, 1], 3).unwrap();
        assert_eq!(s, vec![3.0, 4.0, 6.0, 8.0, 0.0, 0.0]);
        assert!(cluster_sums(&[1.0, 2.0], 2, &[3], 3).unwrap_err().to_string().contains("row 0"));
        assert!(cluster_sums(&[1.0, 2.0], 2, &[-1], 3).is_err());
        assert!(cluster_sums(&[1.0, 2.0], 2, &[0, 0], 3).is_err());
    }
}
