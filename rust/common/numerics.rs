//! Small numerical building blocks shared by the kernels.

/// Neumaier's compensated running sum: the error of a sum of `n` terms stays O(eps), not O(n eps).
#[derive(Debug, Clone, Copy, Default)]
pub struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn add(&mut self, x: f64) {
        let t = self.sum + x;
        if self.sum.abs() >= x.abs() {
            self.compensation += (self.sum - t) + x;
        } else {
            self.compensation += (x - t) + self.sum;
        }
        self.sum = t;
    }

    #[inline]
    pub fn value(&self) -> f64 {
        self.sum + self.compensation
    }
}

/// Compensated sum of a slice.
pub fn compensated_sum(values: &[f64]) -> f64 {
    let mut acc = CompensatedSum::new();
    for &v in values {
        acc.add(v);
    }
    acc.value()
}

/// Compensated cumulative sums: `out[j] = values[0] + ... + values[j]`.
pub fn compensated_cumsum(values: &[f64]) -> Vec<f64> {
    let mut acc = CompensatedSum::new();
    values
        .iter()
        .map(|&v| {
            acc.add(v);
            acc.value()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compensated_sum_beats_naive_summation() {
        // 1 + 1e-16 * 10_000 loses every small term when summed naively.
        let mut v = vec![1.0];
        v.extend(std::iter::repeat(1e-16).take(10_000));
        let naive: f64 = v.iter().sum();
        assert_eq!(naive, 1.0);
        assert!((compensated_sum(&v) - (1.0 + 1e-12)).abs() < 1e-24);
    }

    #[test]
    fn cumsum_of_integers_is_exact() {
        let v: Vec<f64> = (1..=1000).map(|i| i as f64).collect();
        let c = compensated_cumsum(&v);
        assert_eq!(c[999], 500_500.0);
        assert_eq!(c[0], 1.0);
    }
}
