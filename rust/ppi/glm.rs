//! The minimiser of the rectified GLM loss with weight `lam` (docs/methods/ppi.md §3.1),
//!
//! ```text
//! L(theta) = lam/N sum_j w~_j [b(x~_j'theta) - Yhat~_j x~_j'theta]
//!          + 1/n sum_i w_i [(1 - lam) b(x_i'theta) - (Y_i - lam Yhat_i) x_i'theta],
//! ```
//!
//! by Newton's method with a backtracking (Armijo) line search: the rule of
//! `llmsurrogate/ppi/_glm.py`'s docstring, step for step. Each pass over the rows evaluates the
//! loss at a candidate together with its gradient and Hessian, so an accepted step (nearly every
//! step) costs one pass.

use super::{add_weighted_gram, check_shapes, dot8, linear_predictor, to_columns, Family, CHUNK};
use crate::common::errors::CoreResult;
use rayon::prelude::*;

/// A linear predictor beyond this size means probabilities of 0 / 1 to machine precision: a
/// logistic fit running off (separation), not converging.
pub const ETA_LIMIT: f64 = 35.0;
/// Newton iterations before giving up.
pub const MAX_ITER: usize = 200;

/// The rectified loss has no finite minimiser (or Newton's method could not find it); the text
/// says which check failed.
#[derive(Debug, Clone, PartialEq)]
pub struct NoFiniteFit(pub String);

/// One sample's rows: `loss = sum_i a_i b(eta_i) - c_i eta_i`.
struct Sample<'a> {
    x: &'a [f64],
    a: Vec<f64>,
    c: Vec<f64>,
}

/// The loss, the largest |eta|, the gradient and the Hessian (upper triangle) at one `theta`.
struct Eval {
    value: f64,
    max_eta: f64,
    grad: Vec<f64>,
    hess: Vec<f64>,
}

impl Eval {
    fn zero(d: usize) -> Eval {
        Eval { value: 0.0, max_eta: 0.0, grad: vec![0.0; d], hess: vec![0.0; d * d] }
    }

    fn add(&mut self, o: &Eval) {
        self.value += o.value;
        self.max_eta = self.max_eta.max(o.max_eta);
        for (a, b) in self.grad.iter_mut().zip(&o.grad) {
            *a += b;
        }
        for (a, b) in self.hess.iter_mut().zip(&o.hess) {
            *a += b;
        }
    }
}

fn evaluate_sample(family: Family, s: &Sample, d: usize, theta: &[f64], into: &mut Eval) {
    let parts: Vec<Eval> = s
        .x
        .par_chunks(CHUNK * d)
        .enumerate()
        .map(|(c, xs)| {
            let mut e = Eval::zero(d);
            let m = xs.len() / d;
            let r0 = c * CHUNK;
            let (a, cc) = (&s.a[r0..r0 + m], &s.c[r0..r0 + m]);
            let mut cols = vec![0.0; m * d];
            let mut eta = vec![0.0; m];
            let mut g = vec![0.0; m];
            let mut v = vec![0.0; m];
            to_columns(xs, d, &mut cols);
            linear_predictor(&cols, m, theta, &mut eta);
            for i in 0..m {
                let (mu, b) = family.mean_cumulant(eta[i]);
                e.value += a[i] * b - cc[i] * eta[i];
                e.max_eta = e.max_eta.max(eta[i].abs());
                g[i] = a[i] * mu - cc[i];
                v[i] = a[i] * family.variance(mu);
            }
            for (j, col) in cols.chunks_exact(m).enumerate() {
                e.grad[j] = dot8(&g, col);
            }
            add_weighted_gram(&cols, m, &v, &mut eta, &mut e.hess);
            e
        })
        .collect();
    for p in &parts {
        into.add(p);
    }
}

fn evaluate(family: Family, samples: &[Sample], d: usize, theta: &[f64]) -> Eval {
    let mut e = Eval::zero(d);
    for s in samples {
        evaluate_sample(family, s, d, theta, &mut e);
    }
    for a in 0..d {
        for b in 0..a {
            e.hess[a * d + b] = e.hess[b * d + a];
        }
    }
    e
}

/// Solve `a x = b` (row-major `d x d`) by LU with partial pivoting; None when a pivot is exactly
/// zero (numpy's `linalg.solve` raises there).
fn lu_solve(a: &[f64], b: &[f64], d: usize) -> Option<Vec<f64>> {
    let mut m = a.to_vec();
    let mut x = b.to_vec();
    for k in 0..d {
        let p = (k..d).max_by(|&i, &j| m[i * d + k].abs().total_cmp(&m[j * d + k].abs()))?;
        if m[p * d + k] == 0.0 || m[p * d + k].is_nan() {
            return None;
        }
        if p != k {
            for c in 0..d {
                m.swap(k * d + c, p * d + c);
            }
            x.swap(k, p);
        }
        for i in k + 1..d {
            let f = m[i * d + k] / m[k * d + k];
            if f != 0.0 {
                for c in k..d {
                    m[i * d + c] -= f * m[k * d + c];
                }
                x[i] -= f * x[k];
            }
        }
    }
    for i in (0..d).rev() {
        let s: f64 = (i + 1..d).map(|c| m[i * d + c] * x[c]).sum();
        x[i] = (x[i] - s) / m[i * d + i];
    }
    Some(x)
}

/// The minimiser of the rectified loss (module docstring) by Newton's method from `start`
/// (zeros when None): full steps where they decrease the loss, else halved (Armijo, at most 60
/// halvings); converged when a full step is at most 1e-10 of the coefficients' size (the step is
/// taken). `Ok(Err(NoFiniteFit))` when the Hessian is singular, a step is not finite, the line
/// search finds no decrease, a logistic linear predictor runs past [`ETA_LIMIT`] or the
/// [`MAX_ITER`] iterations run out. `x` / `x_unlabeled` are row-major `n x d` / `N x d`; the
/// unlabelled rows enter only when `lam != 0`.
#[allow(clippy::too_many_arguments)]
pub fn fit_rectified(
    family: Family, x: &[f64], d: usize, y: &[f64], yhat: &[f64], w: &[f64], x_unlabeled: &[f64],
    yhat_unlabeled: &[f64], w_unlabeled: &[f64], lam: f64, start: Option<&[f64]>,
) -> CoreResult<Result<Vec<f64>, NoFiniteFit>> {
    let n = check_shapes(x, d, &[("y", y.len()), ("yhat", yhat.len()), ("weights", w.len())])?;
    let big_n = check_shapes(x_unlabeled, d, &[("yhat_unlabeled", yhat_unlabeled.len()), ("weights_unlabeled", w_unlabeled.len())])?;
    if let Some(s) = start {
        crate::common::errors::check::same_len("start", s.len(), "x columns", d)?;
    }
    let (nf, big_nf) = (n as f64, big_n as f64);
    let mut samples = vec![Sample {
        x,
        a: w.iter().map(|wi| (1.0 - lam) * wi / nf).collect(),
        c: w.iter().zip(y.iter().zip(yhat)).map(|(wi, (yi, hi))| wi * (yi - lam * hi) / nf).collect(),
    }];
    if lam != 0.0 {
        let a: Vec<f64> = w_unlabeled.iter().map(|wi| lam * wi / big_nf).collect();
        let c = a.iter().zip(yhat_unlabeled).map(|(ai, t)| ai * t).collect();
        samples.push(Sample { x: x_unlabeled, a, c });
    }
    let mut theta: Vec<f64> = start.map_or_else(|| vec![0.0; d], <[f64]>::to_vec);
    let mut cur = evaluate(family, &samples, d, &theta);
    for _ in 0..MAX_ITER {
        let Some(step) = lu_solve(&cur.hess, &cur.grad, d) else {
            return Ok(Err(NoFiniteFit("the Hessian of the loss is singular at the current coefficients".into())));
        };
        if !step.iter().all(|s| s.is_finite()) {
            return Ok(Err(NoFiniteFit("the Newton step is not finite".into())));
        }
        let decrement: f64 = cur.grad.iter().zip(&step).map(|(g, s)| g * s).sum();
        let mut t = 1.0;
        let mut accepted = None;
        for _ in 0..60 {
            let candidate: Vec<f64> = theta.iter().zip(&step).map(|(a, s)| a - t * s).collect();
            let e = evaluate(family, &samples, d, &candidate);
            if e.value.is_finite()
                && (e.value <= cur.value - 1e-4 * t * decrement || e.value - cur.value <= 1e-13 * cur.value.abs())
            {
                accepted = Some((candidate, e));
                break;
            }
            t *= 0.5;
        }
        let Some((candidate, e)) = accepted else {
            return Ok(Err(NoFiniteFit("the line search found no decrease of the loss".into())));
        };
        theta = candidate;
        cur = e;
        if family == Family::Logistic && cur.max_eta > ETA_LIMIT {
            return Ok(Err(NoFiniteFit(format!(
                "the linear predictor ran past {ETA_LIMIT} (fitted probabilities of 0 or 1)"
            ))));
        }
        let size = theta.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if t == 1.0 && step.iter().fold(0.0f64, |m, v| m.max(v.abs())) <= 1e-10 * (1.0 + size) {
            return Ok(Ok(theta));
        }
    }
    Ok(Err(NoFiniteFit(format!("Newton's method did not converge in {MAX_ITER} iterations"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logistic_fit_of_the_docstring() {
        // _glm.py's example: [-1.362276, 0.908184]
        let x = [1.0, 0.0, 1.0, 1.0, 1.0, 2.0, 1.0, 3.0];
        let y = [0.0, 1.0, 0.0, 1.0];
        let th = fit_rectified(Family::Logistic, &x, 2, &y, &y, &[1.0; 4], &x, &y, &[1.0; 4], 0.0, None).unwrap().unwrap();
        assert!((th[0] + 1.362276).abs() < 1e-6 && (th[1] - 0.908184).abs() < 1e-6, "{th:?}");
        // lam = 1 with yhat = y on the same rows: the same fit
        let th1 = fit_rectified(Family::Logistic, &x, 2, &y, &y, &[1.0; 4], &x, &y, &[1.0; 4], 1.0, None).unwrap().unwrap();
        assert!((th1[0] - th[0]).abs() < 1e-9 && (th1[1] - th[1]).abs() < 1e-9);
    }

    #[test]
    fn the_gradient_vanishes_at_the_fit() {
        let d = 2;
        let rows = CHUNK + 50;
        let x: Vec<f64> = (0..rows).flat_map(|i| [1.0, (i % 7) as f64 / 3.0 - 1.0]).collect();
        let y: Vec<f64> = (0..rows).map(|i| ((i * 7 + 3) % 5) as f64).collect();
        let yh: Vec<f64> = y.iter().map(|v| v * 0.8 + 0.3).collect();
        let w = vec![1.0; rows];
        let th = fit_rectified(Family::Poisson, &x, d, &y, &yh, &w, &x, &yh, &w, 0.4, None).unwrap().unwrap();
        let lab = Sample { x: &x, a: w.iter().map(|v| 0.6 * v / rows as f64).collect(), c: y.iter().zip(&yh).map(|(a, b)| (a - 0.4 * b) / rows as f64).collect() };
        let unl = Sample { x: &x, a: vec![0.4 / rows as f64; rows], c: yh.iter().map(|t| 0.4 * t / rows as f64).collect() };
        let e = evaluate(Family::Poisson, &[lab, unl], d, &th);
        assert!(e.grad.iter().all(|g| g.abs() < 1e-12), "{:?}", e.grad);
    }

    #[test]
    fn separation_is_reported() {
        let x = [1.0, -2.0, 1.0, -1.0, 1.0, 1.0, 1.0, 2.0];
        let y = [0.0, 0.0, 1.0, 1.0];
        let r = fit_rectified(Family::Logistic, &x, 2, &y, &y, &[1.0; 4], &x, &y, &[1.0; 4], 0.0, None).unwrap();
        assert!(r.unwrap_err().0.contains("ran past"));
        assert!(fit_rectified(Family::Logistic, &x, 2, &y[..3], &y, &[1.0; 4], &x, &y, &[1.0; 4], 0.0, None).is_err());
    }

    #[test]
    fn lu_solves_and_refuses_singular() {
        let x = lu_solve(&[0.0, 2.0, 1.0, 1.0], &[2.0, 3.0], 2).unwrap();
        assert!((x[0] - 2.0).abs() < 1e-15 && (x[1] - 1.0).abs() < 1e-15);
        assert!(lu_solve(&[1.0, 2.0, 2.0, 4.0], &[1.0, 1.0], 2).is_none());
    }
}
