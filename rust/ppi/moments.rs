//! Per-row gradients reduced in one pass: [`glm_moments`] computes the gradients
//! `w_i (mu_i - t_i) x_i` of every target `t` (Y and Yhat on the labelled rows share `mu`) at
//! `theta` and reduces them to [`Moments`] (count, mean, centred cross-products of the gradients
//! of all targets side by side), with the Hessian sum `sum_i w_i v_i x_i x_i'`; [`row_moments`]
//! reduces rows given as a matrix; [`gradient_rows`] returns the gradients themselves (the
//! clustered variance sums them by cluster).
//!
//! Every covariance the Python layer needs (lambda-hat's cross-covariance and pooled variance, the
//! sandwich's meat at any lambda) is a linear combination of blocks of the centred
//! cross-products, so one pass over the rows serves them all. Each chunk of rows is centred at
//! its own mean and the chunks are merged by Chan's formula (no cancellation of `sum g g'` against
//! `n m m'`).

use super::{add_weighted_gram, check_shapes, dot8, linear_predictor, sum8, to_columns, Family, CHUNK};
use crate::common::errors::{CoreError, CoreResult};
use rayon::prelude::*;

/// Count, mean and centred cross-products `sum_i (r_i - mean)(r_i - mean)'` (row-major
/// `width x width`, symmetric) of rows of `width` values.
#[derive(Debug, Clone, PartialEq)]
pub struct Moments {
    pub count: usize,
    pub width: usize,
    pub mean: Vec<f64>,
    pub m2: Vec<f64>,
}

impl Moments {
    /// No rows.
    pub fn empty(width: usize) -> Moments {
        Moments { count: 0, width, mean: vec![0.0; width], m2: vec![0.0; width * width] }
    }

    /// The moments of the `width` columns of `m` values in `buf` (centred in place); only the
    /// upper triangle of `m2` is filled (see [`Moments::mirror`]).
    fn of_columns(buf: &mut [f64], m: usize, width: usize) -> Moments {
        let mut out = Moments::empty(width);
        out.count = m;
        if m == 0 || width == 0 {
            return out;
        }
        for (a, col) in buf.chunks_exact_mut(m).enumerate() {
            let mean = sum8(col) / m as f64;
            out.mean[a] = mean;
            for v in col.iter_mut() {
                *v -= mean;
            }
        }
        for a in 0..width {
            for b in a..width {
                out.m2[a * width + b] = dot8(&buf[a * m..(a + 1) * m], &buf[b * m..(b + 1) * m]);
            }
        }
        out
    }

    /// Add the rows summarised by `other` (Chan et al.'s pairwise update; upper triangle).
    fn merge(&mut self, other: &Moments) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        let (na, nb) = (self.count as f64, other.count as f64);
        let n = na + nb;
        let w = self.width;
        let delta: Vec<f64> = other.mean.iter().zip(&self.mean).map(|(b, a)| b - a).collect();
        let f = na * nb / n;
        for a in 0..w {
            for b in a..w {
                self.m2[a * w + b] += other.m2[a * w + b] + delta[a] * delta[b] * f;
            }
        }
        for (m, dl) in self.mean.iter_mut().zip(&delta) {
            *m += dl * nb / n;
        }
        self.count += other.count;
    }

    /// Copy the upper triangle of `m2` to the lower one.
    fn mirror(&mut self) {
        let w = self.width;
        for a in 0..w {
            for b in 0..a {
                self.m2[a * w + b] = self.m2[b * w + a];
            }
        }
    }
}

/// Mirror the upper triangle of a `d x d` row-major matrix.
fn mirror_square(h: &mut [f64], d: usize) {
    for a in 0..d {
        for b in 0..a {
            h[a * d + b] = h[b * d + a];
        }
    }
}

fn check_targets(x: &[f64], d: usize, theta: &[f64], targets: &[&[f64]], w: &[f64]) -> CoreResult<usize> {
    let mut named: Vec<(&str, usize)> = targets.iter().map(|t| ("targets", t.len())).collect();
    named.push(("weights", w.len()));
    let rows = check_shapes(x, d, &named)?;
    crate::common::errors::check::same_len("theta", theta.len(), "x columns", d)?;
    Ok(rows)
}

/// Scratch of one chunk: its columns, the linear predictor / means, two per-row vectors.
struct Scratch {
    cols: Vec<f64>,
    mu: Vec<f64>,
    v: Vec<f64>,
    tmp: Vec<f64>,
}

impl Scratch {
    fn new(m: usize, d: usize) -> Scratch {
        Scratch { cols: vec![0.0; m * d], mu: vec![0.0; m], v: vec![0.0; m], tmp: vec![0.0; m] }
    }
}

/// The gradients of the targets at `theta` of the chunk of rows `xs` starting at row `r0`, as
/// `K d` columns of `m` values in `buf` (target 0's `d` columns, then target 1's, ...), and the
/// Hessian sum (upper triangle) added to `hess`.
#[allow(clippy::too_many_arguments)]
fn chunk_gradients(
    family: Family, xs: &[f64], d: usize, r0: usize, theta: &[f64], targets: &[&[f64]], w: &[f64], s: &mut Scratch,
    buf: &mut [f64], hess: Option<&mut [f64]>,
) {
    let m = xs.len() / d;
    let w = &w[r0..r0 + m];
    to_columns(xs, d, &mut s.cols);
    linear_predictor(&s.cols, m, theta, &mut s.mu);
    for e in s.mu.iter_mut() {
        *e = family.mean(*e);
    }
    if let Some(h) = hess {
        for ((v, mu), wi) in s.v.iter_mut().zip(&s.mu).zip(w) {
            *v = family.variance(*mu) * wi;
        }
        add_weighted_gram(&s.cols, m, &s.v, &mut s.tmp, h);
    }
    for (k, t) in targets.iter().enumerate() {
        let t = &t[r0..r0 + m];
        for (((g, mu), wi), ti) in s.v.iter_mut().zip(&s.mu).zip(w).zip(t) {
            *g = wi * (mu - ti);
        }
        for a in 0..d {
            let out = &mut buf[(k * d + a) * m..(k * d + a + 1) * m];
            for ((o, g), x) in out.iter_mut().zip(&s.v).zip(&s.cols[a * m..(a + 1) * m]) {
                *o = g * x;
            }
        }
    }
}

/// One pass over the rows of `x` (row-major `rows x d`): the [`Moments`] of the gradients
/// `w_i (mu_i - t_i) x_i` of every target in `targets` side by side (width `K d`), and the
/// Hessian sum `sum_i w_i v_i x_i x_i'` (`d x d`, not divided by the rows), at `theta`.
pub fn glm_moments(
    family: Family, x: &[f64], d: usize, theta: &[f64], targets: &[&[f64]], w: &[f64],
) -> CoreResult<(Moments, Vec<f64>)> {
    check_targets(x, d, theta, targets, w)?;
    let kd = targets.len() * d;
    let parts: Vec<(Moments, Vec<f64>)> = x
        .par_chunks(CHUNK * d)
        .enumerate()
        .map(|(c, xs)| {
            let m = xs.len() / d;
            let mut s = Scratch::new(m, d);
            let mut buf = vec![0.0; m * kd];
            let mut hess = vec![0.0; d * d];
            chunk_gradients(family, xs, d, c * CHUNK, theta, targets, w, &mut s, &mut buf, Some(&mut hess));
            (Moments::of_columns(&mut buf, m, kd), hess)
        })
        .collect();
    let mut moments = Moments::empty(kd);
    let mut hess = vec![0.0; d * d];
    for (m, h) in &parts {
        moments.merge(m);
        for (a, b) in hess.iter_mut().zip(h) {
            *a += b;
        }
    }
    moments.mirror();
    mirror_square(&mut hess, d);
    Ok((moments, hess))
}

/// The [`Moments`] of the rows of the row-major `rows x width` matrix `rows`.
pub fn row_moments(rows: &[f64], width: usize) -> CoreResult<Moments> {
    if width == 0 || !rows.len().is_multiple_of(width) {
        return Err(CoreError::invalid("rows", format!("holds {} values, not rows of {width}", rows.len())));
    }
    let parts: Vec<Moments> = rows
        .par_chunks(CHUNK * width)
        .map(|chunk| {
            let m = chunk.len() / width;
            let mut buf = vec![0.0; chunk.len()];
            to_columns(chunk, width, &mut buf);
            Moments::of_columns(&mut buf, m, width)
        })
        .collect();
    let mut out = Moments::empty(width);
    for m in &parts {
        out.merge(m);
    }
    out.mirror();
    Ok(out)
}

/// The gradients `w_i (mu_i - t_i) x_i` at `theta` of every target, row-major `rows x (K d)`.
pub fn gradient_rows(
    family: Family, x: &[f64], d: usize, theta: &[f64], targets: &[&[f64]], w: &[f64],
) -> CoreResult<Vec<f64>> {
    let rows = check_targets(x, d, theta, targets, w)?;
    let kd = targets.len() * d;
    let mut out = vec![0.0; rows * kd];
    if kd == 0 {
        return Ok(out);
    }
    out.par_chunks_mut(CHUNK * kd).zip(x.par_chunks(CHUNK * d)).enumerate().for_each(|(c, (o, xs))| {
        let m = xs.len() / d;
        let mut s = Scratch::new(m, d);
        let mut buf = vec![0.0; m * kd];
        chunk_gradients(family, xs, d, c * CHUNK, theta, targets, w, &mut s, &mut buf, None);
        for (j, col) in buf.chunks_exact(m).enumerate() {
            for (i, v) in col.iter().enumerate() {
                o[i * kd + j] = *v;
            }
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(rows: &[f64], width: usize) -> (Vec<f64>, Vec<f64>) {
        let m = rows.len() / width;
        let mean: Vec<f64> =
            (0..width).map(|a| rows.chunks(width).map(|r| r[a]).sum::<f64>() / m as f64).collect();
        let mut m2 = vec![0.0; width * width];
        for r in rows.chunks(width) {
            for a in 0..width {
                for b in 0..width {
                    m2[a * width + b] += (r[a] - mean[a]) * (r[b] - mean[b]);
                }
            }
        }
        (mean, m2)
    }

    fn data(rows: usize, d: usize) -> Vec<f64> {
        let mut rng = crate::common::rng::SplitMix64::new(7);
        (0..rows * d).map(|i| if i % d == 0 { 1.0 } else { ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0 + 1e3 * ((i % d == 1) as u8 as f64) }).collect()
    }

    #[test]
    fn row_moments_match_two_pass_and_do_not_depend_on_threads() {
        let x = data(3 * CHUNK + 17, 3);
        let (mean, m2) = naive(&x, 3);
        let m = row_moments(&x, 3).unwrap();
        assert_eq!(m.count, 3 * CHUNK + 17);
        for (a, b) in m.mean.iter().zip(&mean) {
            assert!((a - b).abs() < 1e-10 * b.abs().max(1.0));
        }
        for (a, b) in m.m2.iter().zip(&m2) {
            assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} {b}");
        }
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| row_moments(&x, 3).unwrap());
        let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(|| row_moments(&x, 3).unwrap());
        assert_eq!(one, three);
        assert!(row_moments(&x, 2).is_err());
    }

    #[test]
    fn glm_moments_are_the_moments_of_the_gradient_rows() {
        let d = 3;
        let rows = 2 * CHUNK + 5;
        let x = data(rows, d);
        let theta = [0.1, -0.001, 0.3];
        let y: Vec<f64> = (0..rows).map(|i| (i % 2) as f64).collect();
        let yh: Vec<f64> = (0..rows).map(|i| 0.25 + 0.5 * ((i % 3) as f64 / 2.0)).collect();
        let w: Vec<f64> = (0..rows).map(|i| 0.5 + (i % 5) as f64 / 4.0).collect();
        for family in [Family::Linear, Family::Logistic, Family::Poisson] {
            let g = gradient_rows(family, &x, d, &theta, &[&y, &yh], &w).unwrap();
            let (m, h) = glm_moments(family, &x, d, &theta, &[&y, &yh], &w).unwrap();
            let direct = row_moments(&g, 2 * d).unwrap();
            for (a, b) in m.m2.iter().zip(&direct.m2) {
                assert!((a - b).abs() < 1e-9 * b.abs().max(1.0));
            }
            // gradient of row 0 by hand
            let eta: f64 = (0..d).map(|a| x[a] * theta[a]).sum();
            let mu = family.mean(eta);
            assert!((g[1] - w[0] * (mu - y[0]) * x[1]).abs() < 1e-12);
            assert!((g[d + 1] - w[0] * (mu - yh[0]) * x[1]).abs() < 1e-12);
            // Hessian by hand
            let mut hh = vec![0.0; d * d];
            for (i, r) in x.chunks(d).enumerate() {
                let mu = family.mean(r.iter().zip(&theta).map(|(a, b)| a * b).sum());
                for a in 0..d {
                    for b in 0..d {
                        hh[a * d + b] += w[i] * family.variance(mu) * r[a] * r[b];
                    }
                }
            }
            for (a, b) in h.iter().zip(&hh) {
                assert!((a - b).abs() < 1e-9 * b.abs().max(1.0));
            }
        }
        assert!(glm_moments(Family::Linear, &x, d, &theta[..2], &[&y], &w).is_err());
        assert!(glm_moments(Family::Linear, &x, d, &theta, &[&y[1..]], &w).is_err());
    }
}
