//! SplitMix64 (Steele, Lea & Flood 2014; the generator used to seed xoshiro), the one
//! pseudo-random generator of the crate.
//!
//! Every random stream the package documents comes from it, so Python, R and reference
//! implementations reproduce the streams from this description alone:
//! `state += 0x9E3779B97F4A7C15; z = state; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
//! z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31)` (all arithmetic mod 2^64).
//!
//! Two conventions turn its output into an integer below a bound, and each published stream keeps
//! its own (they give different numbers from the same state):
//!
//! * [`SplitMix64::below_rejection`]: exactly uniform, by rejection sampling; the ESS row
//!   permutation (Fisher–Yates) uses it;
//! * [`SplitMix64::below_multiply_shift`]: Lemire's multiply-shift, one draw per index, bias
//!   below n / 2^64; the risk-score row bootstrap uses it.
//!
//! A new stream may use either, and must say which in its documentation.

/// The SplitMix64 generator (see the module documentation).
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform integer in `[0, m)` (m > 0) without modulo bias, by rejection: draw r until
    /// r >= (2^64 − m) mod m, return r mod m. May consume more than one draw.
    /// The convention of the ESS permutation (`crate::ess::permutation`).
    pub fn below_rejection(&mut self, m: u64) -> u64 {
        let threshold = m.wrapping_neg() % m;
        loop {
            let r = self.next_u64();
            if r >= threshold {
                return r % m;
            }
        }
    }

    /// Index in `0..n` (n > 0) by Lemire's multiply-shift, `(r · n) >> 64` on one draw r: exactly
    /// one draw per index, bias below n / 2^64.
    /// The convention of the risk-score bootstrap (`crate::risk::bootstrap_indices`).
    pub fn below_multiply_shift(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// The starting state of stream `index` (a bootstrap replicate) derived from one user `seed`: the
/// `(index + 1)`-th output of SplitMix64 seeded with `seed`, i.e.
/// `mix(seed + 0x9E3779B97F4A7C15 · (index + 1))` (mod 2^64). Every replicated computation
/// (the risk-score bootstrap, the fixed-effects bootstrap) starts its replicates here.
///
/// Not `seed ^ (0x9E3779B97F4A7C15 · (index + 1))`, which an earlier release used: SplitMix64 adds
/// that same constant at every step, so such streams are shifted copies of one another (with
/// seed 0, replicate b + 1 repeats replicate b's draws shifted by one), and the replicates of a
/// bootstrap were far from independent. Passing the start through `mix` puts the streams at
/// unrelated points of the generator's period.
pub fn stream_seed(seed: u64, index: u64) -> u64 {
    SplitMix64::new(seed.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(index))).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_not_shifted_copies() {
        // stream_seed(seed, b) is the (b + 1)-th output of the generator seeded with `seed`
        let mut g = SplitMix64::new(7);
        let outs: Vec<u64> = (0..3).map(|_| g.next_u64()).collect();
        assert_eq!(stream_seed(7, 2), outs[2]);
        // with seed 0 no stream's draws reappear, shifted, in the next stream
        let draws = |b: u64| -> Vec<u64> {
            let mut r = SplitMix64::new(stream_seed(0, b));
            (0..64).map(|_| r.next_u64()).collect()
        };
        for b in 0..40u64 {
            let (a, c) = (draws(b), draws(b + 1));
            assert!(a.iter().all(|x| !c.contains(x)), "stream {b} and {} share draws", b + 1);
        }
    }

    #[test]
    fn matches_the_published_reference_values() {
        // seed 1234567, from the published C code
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next_u64(), 6457827717110365317);
        assert_eq!(r.next_u64(), 3203168211198807973);
    }

    #[test]
    fn below_rejection_stream_is_pinned() {
        let mut r = SplitMix64::new(42);
        let a: Vec<u64> = (0..8).map(|_| r.below_rejection(10)).collect();
        assert_eq!(a, [3, 1, 8, 4, 0, 2, 5, 8]);
        // m = 2^63 + 1 rejects about half the draws (the first one here), so the rejection path
        // and its extra draws are pinned too
        let b: Vec<u64> = (0..8).map(|_| r.below_rejection((1 << 63) + 1)).collect();
        assert_eq!(
            b,
            [
                2185608355395893165, 247114729376335589, 369180215851445686, 3046653382386749147,
                3485445375344687199, 8436161617591641063, 1841285813049628116, 2210271071942527120,
            ]
        );
        let c: Vec<u64> = (0..4).map(|_| r.below_rejection(1_000_003)).collect();
        assert_eq!(c, [602980, 602761, 696388, 647684]);
        assert_eq!(r.next_u64(), 17375492307696512263);
    }

    #[test]
    fn below_multiply_shift_stream_is_pinned() {
        let mut r = SplitMix64::new(42);
        let a: Vec<usize> = (0..8).map(|_| r.below_multiply_shift(10)).collect();
        assert_eq!(a, [7, 1, 2, 3, 0, 8, 2, 8]);
        let b: Vec<usize> = (0..4).map(|_| r.below_multiply_shift(1_000_003)).collect();
        assert_eq!(b, [339932, 618483, 204902, 492990]);
        // one draw per index: the 13th draw of the stream comes next
        assert_eq!(r.next_u64(), 9470486766231111398);
    }
}
