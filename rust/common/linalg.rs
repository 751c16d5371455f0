//! Dense linear algebra for the small systems the kernels solve (normal equations of a handful of
//! parameters), row-major.

/// Solve the symmetric positive-definite system `a x = b` by Cholesky (`a = L Lᵀ`, then forward
/// and back substitution). `a` is `n × n`, row-major, and only its lower triangle is read; `b` has
/// length `n`. Returns `None` when `a` is not numerically positive definite (a pivot ≤ 0 or not
/// finite). O(n³): meant for small `n`. Panics if `a` or `b` is shorter than that.
pub fn cholesky_solve(a: &[f64], b: &[f64], n: usize) -> Option<Vec<f64>> {
    let l = cholesky_factor(a, n, |_, pivot| pivot > 0.0)?;
    let mut y = vec![0.0; n];
    for i in 0..n {
        let mut s = b[i];
        for k in 0..i {
            s -= l[i * n + k] * y[k];
        }
        y[i] = s / l[i * n + i];
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let mut s = y[i];
        for k in i + 1..n {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
    Some(x)
}

/// The Cholesky factor `L` (row-major `n × n`, lower triangle) of the symmetric matrix `a` (only its
/// lower triangle is read), or `None` as soon as a pivot (the diagonal value before its square root)
/// is not finite or fails `pivot_ok(column, pivot)`. [`cholesky_solve`] accepts any positive pivot;
/// a caller may demand more (the fixed-effects collinearity rule compares it with a column's scale).
pub fn cholesky_factor(a: &[f64], n: usize, pivot_ok: impl Fn(usize, f64) -> bool) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if !s.is_finite() || !pivot_ok(i, s) {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_positive_definite_system() {
        // a = [[4, 2, 0], [2, 5, 3], [0, 3, 6]], x = (1, -2, 3): b = a x
        let a = [4.0, 2.0, 0.0, 2.0, 5.0, 3.0, 0.0, 3.0, 6.0];
        let b = [0.0, 1.0, 12.0];
        let x = cholesky_solve(&a, &b, 3).unwrap();
        for (got, want) in x.iter().zip([1.0, -2.0, 3.0]) {
            assert!((got - want).abs() < 1e-14, "{x:?}");
        }
        // the upper triangle is not read
        let a_lower = [4.0, f64::NAN, f64::NAN, 2.0, 5.0, f64::NAN, 0.0, 3.0, 6.0];
        assert_eq!(cholesky_solve(&a_lower, &b, 3).unwrap(), x);
        assert_eq!(cholesky_solve(&[], &[], 0).unwrap(), Vec::<f64>::new());
    }

    #[test]
    fn refuses_matrices_that_are_not_positive_definite() {
        assert!(cholesky_solve(&[1.0, 2.0, 2.0, 1.0], &[1.0, 1.0], 2).is_none());
        assert!(cholesky_solve(&[0.0], &[1.0], 1).is_none());
        assert!(cholesky_solve(&[f64::NAN], &[1.0], 1).is_none());
        assert!(cholesky_solve(&[f64::INFINITY], &[1.0], 1).is_none());
    }
}
