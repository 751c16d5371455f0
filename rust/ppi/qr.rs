//! The R factor of a tall weighted design by Householder QR over row chunks (TSQR): each chunk of
//! [`CHUNK`](super::CHUNK) rows is factored on its own, and the chunk factors are stacked and
//! factored again in row order. `R' R = X' W X` and `Q' b` give the weighted least-squares
//! solution `R^-1 Q' b` with the accuracy of a QR solve (no squared condition number, as with the
//! normal equations), and the column-pivoted QR of the small `R` gives the rank of `X` (pivoting
//! depends on column norms of what is left, which an orthogonal transformation keeps).

use super::{check_shapes, dot8, CHUNK};
use crate::common::errors::CoreResult;
use rayon::prelude::*;

/// Householder QR in place of the column-major `m x d` matrix `a`, the same reflections applied to
/// the column-major `m x k` matrix `b`: afterwards the top `min(m, d)` rows of `a` hold R (zeros
/// below the diagonal) and `b` holds `Q' b`.
fn householder(a: &mut [f64], m: usize, d: usize, b: &mut [f64], k: usize) {
    let mut v = vec![0.0; m];
    for j in 0..d.min(m) {
        let col = &a[j * m + j..(j + 1) * m];
        let norm = dot8(col, col).sqrt();
        if norm == 0.0 {
            continue;
        }
        let alpha = if col[0] > 0.0 { -norm } else { norm };
        let len = m - j;
        v[..len].copy_from_slice(col);
        v[0] -= alpha;
        let vnorm2 = dot8(&v[..len], &v[..len]);
        a[j * m + j] = alpha;
        for x in &mut a[j * m + j + 1..(j + 1) * m] {
            *x = 0.0;
        }
        if vnorm2 == 0.0 {
            continue;
        }
        let reflect = |c: &mut [f64]| {
            let s = dot8(c, &v[..len]);
            let f = 2.0 * s / vnorm2;
            for (x, y) in c.iter_mut().zip(&v[..len]) {
                *x -= f * y;
            }
        };
        for c in j + 1..d {
            reflect(&mut a[c * m + j..(c + 1) * m]);
        }
        for c in 0..k {
            reflect(&mut b[c * m + j..(c + 1) * m]);
        }
    }
}

/// The top `d` rows of the factored column-major `m x d` / `m x k` matrices, row-major `d x d`
/// (R) and `k x d` (each right-hand side's `Q' b`), zero-padded when `m < d`.
fn top(a: &[f64], m: usize, d: usize, b: &[f64], k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut r = vec![0.0; d * d];
    let mut qb = vec![0.0; k * d];
    for i in 0..d.min(m) {
        for c in i..d {
            r[i * d + c] = a[c * m + i];
        }
        for c in 0..k {
            qb[c * d + i] = b[c * m + i];
        }
    }
    (r, qb)
}

/// `R` (row-major `d x d`, upper triangular, diagonal of either sign) and `Q' b` (row-major
/// `k x d`, one row per right-hand side in `rhs`) of the QR factorisation of `W^1/2 X`, with `X`
/// the row-major `rows x d` matrix `x`, `W` the weights (ones when None) and `b = W^1/2 rhs`.
pub fn qr_factor(x: &[f64], d: usize, w: Option<&[f64]>, rhs: &[&[f64]]) -> CoreResult<(Vec<f64>, Vec<f64>)> {
    let mut named: Vec<(&str, usize)> = rhs.iter().map(|t| ("rhs", t.len())).collect();
    if let Some(w) = w {
        named.push(("weights", w.len()));
    }
    check_shapes(x, d, &named)?;
    let k = rhs.len();
    let parts: Vec<(Vec<f64>, Vec<f64>)> = x
        .par_chunks(CHUNK * d)
        .enumerate()
        .map(|(c, xs)| {
            let m = xs.len() / d;
            let r0 = c * CHUNK;
            let mut a = vec![0.0; m * d];
            let mut b = vec![0.0; m * k];
            for (i, row) in xs.chunks_exact(d).enumerate() {
                let s = w.map_or(1.0, |w| w[r0 + i].sqrt());
                for (j, v) in row.iter().enumerate() {
                    a[j * m + i] = s * v;
                }
                for (j, t) in rhs.iter().enumerate() {
                    b[j * m + i] = s * t[r0 + i];
                }
            }
            householder(&mut a, m, d, &mut b, k);
            top(&a, m, d, &b, k)
        })
        .collect();
    let mut r = vec![0.0; d * d];
    let mut qb = vec![0.0; k * d];
    let m = 2 * d;
    for (pr, pq) in &parts {
        // stack [r; pr] and [qb; pq] column-major, factor, keep the top d rows
        let mut a = vec![0.0; m * d];
        let mut b = vec![0.0; m * k];
        for i in 0..d {
            for c in 0..d {
                a[c * m + i] = r[i * d + c];
                a[c * m + d + i] = pr[i * d + c];
            }
            for c in 0..k {
                b[c * m + i] = qb[c * d + i];
                b[c * m + d + i] = pq[c * d + i];
            }
        }
        householder(&mut a, m, d, &mut b, k);
        (r, qb) = top(&a, m, d, &b, k);
    }
    Ok((r, qb))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn design(rows: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut rng = crate::common::rng::SplitMix64::new(3);
        let mut u = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut x = Vec::new();
        let mut y = Vec::new();
        let mut w = Vec::new();
        for _ in 0..rows {
            let (a, b) = (u() * 2.0 - 1.0, u() * 10.0);
            x.extend([1.0, a, b]);
            y.push(1.0 + 2.0 * a - 0.5 * b + 0.1 * (u() - 0.5));
            w.push(0.5 + u());
        }
        (x, y, w)
    }

    fn solve_upper(r: &[f64], b: &[f64], d: usize) -> Vec<f64> {
        let mut out = vec![0.0; d];
        for i in (0..d).rev() {
            let s: f64 = (i + 1..d).map(|c| r[i * d + c] * out[c]).sum();
            out[i] = (b[i] - s) / r[i * d + i];
        }
        out
    }

    #[test]
    fn r_factor_gives_the_gram_matrix_and_the_wls_solution() {
        let d = 3;
        let rows = 2 * CHUNK + 3;
        let (x, y, w) = design(rows);
        let (r, qb) = qr_factor(&x, d, Some(&w), &[&y]).unwrap();
        for a in 0..d {
            for b in 0..d {
                let rtr: f64 = (0..d).map(|i| r[i * d + a] * r[i * d + b]).sum();
                let xwx: f64 = x.chunks(d).zip(&w).map(|(row, wi)| wi * row[a] * row[b]).sum();
                assert!((rtr - xwx).abs() < 1e-9 * xwx.abs().max(1.0), "{rtr} {xwx}");
            }
            for b in 0..a {
                assert_eq!(r[a * d + b], 0.0);
            }
        }
        let theta = solve_upper(&r, &qb, d);
        // the normal equations hold at the solution: X'W(y - X theta) = 0
        for a in 0..d {
            let s: f64 = x.chunks(d).zip(&w).zip(&y).map(|((row, wi), yi)| {
                wi * row[a] * (yi - row.iter().zip(&theta).map(|(p, q)| p * q).sum::<f64>())
            }).sum();
            assert!(s.abs() < 1e-8, "{s}");
        }
        assert!((theta[1] - 2.0).abs() < 0.01 && (theta[2] + 0.5).abs() < 0.01);
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| qr_factor(&x, d, Some(&w), &[&y]).unwrap());
        let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap().install(|| qr_factor(&x, d, Some(&w), &[&y]).unwrap());
        assert_eq!(one, four);
    }

    #[test]
    fn few_rows_and_dependent_columns() {
        // two rows, three columns: R is 2 x 3 padded with a zero row
        let (r, _) = qr_factor(&[1.0, 2.0, 3.0, 1.0, 0.0, 1.0], 3, None, &[]).unwrap();
        assert!(r[6..].iter().all(|v| v.abs() < 1e-12), "{r:?}");
        // a duplicated column: the last diagonal entry vanishes to rounding
        let (x, _, _) = design(100);
        let dup: Vec<f64> = x.chunks(3).flat_map(|r| [r[0], r[1], r[1]]).collect();
        let (r, _) = qr_factor(&dup, 3, None, &[]).unwrap();
        assert!(r[8].abs() < 1e-12 * r[0].abs());
        assert!(qr_factor(&x, 3, Some(&[1.0; 5]), &[]).is_err());
    }
}
