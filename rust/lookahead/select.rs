//! Selection of the `k` smallest values of one text, in ascending order: the inner step of the
//! Min-K% reduction (`super::min_k_reduce_with`).
//!
//! Values are compared through order keys: integers that order like `total_cmp` (for float32,
//! the same order as `f64::total_cmp` of the widened value; equal keys are equal bits), so ties,
//! -0.0 < 0.0 and -inf need no special case and the bottom `k` is one multiset whatever the path.
//!
//! Two paths, with the same output:
//!
//! * **scalar** (any target, and float64): `select_nth_unstable` on the keys, then a sort of the
//!   bottom `k`.
//! * **AVX-512F** (float32 with `k <= 128`, chosen at run time by [`Simd::detect`]): the text is
//!   read in chunks of 16 lanes; each chunk is sorted in one register by a bitonic network and
//!   merged into the `16 R` smallest so far (`R` = 1, 2, 4 or 8 registers, the fewest that hold
//!   `k`; kept sorted), keeping the lower half of a bitonic merge. A chunk with no value below the
//!   current `k`-th smallest is skipped after one comparison. No branch depends on the data
//!   except that skip; no `target-cpu` flag is needed (the wheel stays portable: other CPUs take
//!   the scalar path). Measured on one thread (CPU time, AMD EPYC with AVX-512): 60 values,
//!   k = 11: ~65 ns a text against ~250 ns scalar; 300 values (k = 59): 1.6x the scalar speed;
//!   600 (k = 119): 1.2x; every entering chunk costs a merge over all `R` registers, so a large
//!   `k` gains little (a vectorised partition would be the next step there).
//!
//! On the same CPUs [`lane_sums8`] runs the compensated sums of 8 texts in the lanes of one
//! register, with the scalar sum's operations per lane (the same bits).

/// Which selection runs: decided once per call of the reduction. The AVX-512 path can only be
/// had from [`Simd::detect`], after the run-time check of the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Simd {
    avx512: bool,
}

impl Simd {
    /// The portable path.
    pub const SCALAR: Simd = Simd { avx512: false };

    /// The fastest path this CPU runs.
    pub fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Simd { avx512: true };
            }
        }
        Simd::SCALAR
    }

    /// Whether this is the AVX-512F path.
    pub fn is_avx512(self) -> bool {
        self.avx512
    }
}

/// The largest `k` of the AVX-512 path (8 registers of 16 lanes).
pub const SIMD_MAX_K: usize = 128;

/// Per-thread scratch space of the scalar path, reused across texts.
#[derive(Default)]
pub struct Scratch {
    keys: Vec<i64>,
}

/// A value type the Min-K% reduction reads (float32 as the backends return it, float64).
pub trait Select: Copy + Into<f64> + Sync {
    /// Append the `k` smallest values of `seg` (`0 < k <= seg.len()`) to `out` in ascending
    /// order, or return `None` (`out` then holds an unspecified tail) when a value of `seg` is NaN.
    fn bottom(seg: &[Self], k: usize, scratch: &mut Scratch, simd: Simd, out: &mut Vec<f64>) -> Option<()>;
}

impl Select for f64 {
    fn bottom(seg: &[f64], k: usize, scratch: &mut Scratch, _simd: Simd, out: &mut Vec<f64>) -> Option<()> {
        bottom_scalar(seg, k, scratch, out)
    }
}

impl Select for f32 {
    fn bottom(seg: &[f32], k: usize, scratch: &mut Scratch, simd: Simd, out: &mut Vec<f64>) -> Option<()> {
        #[cfg(target_arch = "x86_64")]
        {
            if simd.avx512 && k <= SIMD_MAX_K {
                let mut bottom = [0f64; SIMD_MAX_K];
                // SAFETY: `avx512` is true only from `Simd::detect`, after the run-time check
                if !unsafe { avx512::bottom_f32(seg, k, &mut bottom) } {
                    return None;
                }
                out.extend_from_slice(&bottom[..k]);
                return Some(());
            }
        }
        let _ = simd;
        bottom_scalar(seg, k, scratch, out)
    }
}

/// Compensated (Neumaier) sums of `bottom[start[l]..start[l] + k[l]]` for 8 texts at once, one
/// per lane of an AVX-512 register, each in ascending order: the same operations as
/// `common::numerics::CompensatedSum::add` per lane, so the same bits (`sum + compensation`),
/// and whether every value of a lane was finite. `None` where the CPU lacks AVX-512F.
pub fn lane_sums8(simd: Simd, bottom: &[f64], start: &[usize; 8], k: &[usize; 8]) -> Option<([f64; 8], [bool; 8])> {
    #[cfg(target_arch = "x86_64")]
    {
        if simd.avx512 {
            for l in 0..8 {
                assert!(k[l] == 0 || start[l] + k[l] <= bottom.len(), "lane {l} past the end");
            }
            // SAFETY: AVX-512F checked by `Simd::detect`; every lane's range lies within `bottom`
            return Some(unsafe { avx512::lane_sums8(bottom, start, k) });
        }
    }
    let _ = (simd, bottom, start, k);
    None
}

/// The bits of `x` as an integer that orders like `f64::total_cmp` (the transform `total_cmp`
/// itself applies); its own inverse.
#[inline]
pub(crate) fn order_key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

#[inline]
pub(crate) fn from_order_key(key: i64) -> f64 {
    f64::from_bits(order_key(f64::from_bits(key as u64)) as u64)
}

/// The float32 order key (bits `b` of an f32 as i32 -> key, and back: its own inverse): the
/// scalar form of what `avx512::load_keys` and `avx512::run` apply to 16 lanes (tested here).
#[cfg(test)]
fn order_key32(b: i32) -> i32 {
    b ^ ((((b >> 31) as u32) >> 1) as i32)
}

/// The scalar path: selection on integer keys in the order of `f64::total_cmp` (the same order,
/// but plain integer comparisons: about twice as fast as selecting on floats).
pub(crate) fn bottom_scalar<T: Copy + Into<f64>>(seg: &[T], k: usize, scratch: &mut Scratch, out: &mut Vec<f64>) -> Option<()> {
    let n = seg.len();
    let buf = &mut scratch.keys;
    buf.clear();
    let mut any_nan = false;
    buf.extend(seg.iter().map(|&v| {
        let x: f64 = v.into();
        any_nan |= x.is_nan();
        order_key(x)
    }));
    if any_nan {
        return None;
    }
    if k < n {
        buf.select_nth_unstable(k - 1);
    }
    buf[..k].sort_unstable();
    out.extend(buf[..k].iter().map(|&key| from_order_key(key)));
    Some(())
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::SIMD_MAX_K;
    use std::arch::x86_64::*;

    /// A compare-exchange stage: lane `i` meets lane `PARTNER[i]`; lanes in `max_lanes` keep the
    /// larger key, the others the smaller.
    const fn xor_partner(d: i32) -> [i32; 16] {
        let mut p = [0i32; 16];
        let mut i = 0;
        while i < 16 {
            p[i] = (i as i32) ^ d;
            i += 1;
        }
        p
    }
    const XOR4: [i32; 16] = xor_partner(4);
    const XOR7: [i32; 16] = xor_partner(7);
    const XOR8: [i32; 16] = xor_partner(8);
    const XOR15: [i32; 16] = xor_partner(15);

    #[inline]
    #[target_feature(enable = "avx512f")]
    fn idx(p: &[i32; 16]) -> __m512i {
        // SAFETY: 64 readable bytes; unaligned load
        unsafe { _mm512_loadu_si512(p.as_ptr() as *const _) }
    }

    /// Compare-exchange of `v` with its permutation `p`: lanes of `max_lanes` keep the max.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn cx(v: __m512i, p: __m512i, max_lanes: __mmask16) -> __m512i {
        let lo = _mm512_min_epi32(v, p);
        _mm512_mask_max_epi32(lo, max_lanes, v, p)
    }

    /// Partner `i ^ 1`, `i ^ 2`, `i ^ 3` (within 128-bit lanes: a cheap shuffle).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sw1(v: __m512i) -> __m512i {
        _mm512_shuffle_epi32::<0xB1>(v)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sw2(v: __m512i) -> __m512i {
        _mm512_shuffle_epi32::<0x4E>(v)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sw3(v: __m512i) -> __m512i {
        _mm512_shuffle_epi32::<0x1B>(v)
    }

    /// The last four stages of a bitonic merge of 16 lanes: a bitonic register sorted ascending.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn clean16(v: __m512i) -> __m512i {
        let v = cx(v, _mm512_permutexvar_epi32(idx(&XOR8), v), 0xFF00);
        let v = cx(v, _mm512_permutexvar_epi32(idx(&XOR4), v), 0xF0F0);
        let v = cx(v, sw2(v), 0xCCCC);
        cx(v, sw1(v), 0xAAAA)
    }

    /// Sort the 16 lanes ascending (a bitonic network, 10 stages).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sort16(v: __m512i) -> __m512i {
        let v = cx(v, sw1(v), 0xAAAA);
        let v = cx(v, sw3(v), 0xCCCC);
        let v = cx(v, sw1(v), 0xAAAA);
        let v = cx(v, _mm512_permutexvar_epi32(idx(&XOR7), v), 0xF0F0);
        let v = cx(v, sw2(v), 0xCCCC);
        let v = cx(v, sw1(v), 0xAAAA);
        let v = cx(v, _mm512_permutexvar_epi32(idx(&XOR15), v), 0xFF00);
        clean16(v)
    }

    /// `best` (the `16 R` smallest so far, ascending across registers) becomes the `16 R` smallest
    /// of `best` and the sorted register `c`: the lower half of a bitonic merge.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn merge<const R: usize>(best: &mut [__m512i; R], c: __m512i) {
        // min(best, reverse(c padded with +inf)): only the last register meets c; the sequence
        // is then bitonic and the half-cleaners sort it
        best[R - 1] = _mm512_min_epi32(best[R - 1], _mm512_permutexvar_epi32(idx(&XOR15), c));
        let mut half = R / 2;
        while half >= 1 {
            for a in 0..R {
                if a & half == 0 {
                    let (lo, hi) = (best[a], best[a + half]);
                    best[a] = _mm512_min_epi32(lo, hi);
                    best[a + half] = _mm512_max_epi32(lo, hi);
                }
            }
            half /= 2;
        }
        for r in best.iter_mut() {
            *r = clean16(*r);
        }
    }

    /// The 16 order keys of `seg[j..j + m]` (`m <= 16`, `j + m <= seg.len()`), +inf-like padding
    /// (`i32::MAX`, above every non-NaN key) in the other lanes, and the mask of NaN lanes.
    /// Masked loads are slow on some CPUs (AMD Zen 4/5): a short chunk at the end of a text of 16
    /// values or more is read as the text's last 16 values, the lanes read before masked off.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load_keys(seg: &[f32], j: usize, m: usize) -> (__m512i, __mmask16) {
        let (x, lanes) = if m >= 16 {
            // SAFETY (caller, here and below): the lanes read lie within seg
            (unsafe { _mm512_loadu_ps(seg.as_ptr().add(j)) }, 0xFFFF)
        } else if j + m >= 16 {
            let lanes = !(((1u32 << (16 - m)) - 1) as __mmask16);
            (unsafe { _mm512_loadu_ps(seg.as_ptr().add(j + m - 16)) }, lanes)
        } else {
            let lanes = ((1u32 << m) - 1) as __mmask16;
            (unsafe { _mm512_maskz_loadu_ps(lanes, seg.as_ptr().add(j)) }, lanes)
        };
        let nan = _mm512_mask_cmp_ps_mask::<_CMP_UNORD_Q>(lanes, x, x);
        let b = _mm512_castps_si512(x);
        let key = _mm512_xor_si512(b, _mm512_srli_epi32::<1>(_mm512_srai_epi32::<31>(b)));
        (_mm512_mask_mov_epi32(_mm512_set1_epi32(i32::MAX), lanes, key), nan)
    }

    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const R: usize>(seg: &[f32], k: usize, out: &mut [f64; SIMD_MAX_K]) -> bool {
        let n = seg.len();
        let mut best = [_mm512_set1_epi32(i32::MAX); R];
        // the current k-th smallest, broadcast: a chunk with nothing below it cannot enter
        let at = _mm512_set1_epi32(((k - 1) % 16) as i32);
        let reg = (k - 1) / 16;
        let mut nan: __mmask16 = 0;
        // SAFETY: every chunk lies within seg
        let (first, nan0) = unsafe { load_keys(seg, 0, n.min(16)) };
        nan |= nan0;
        best[0] = sort16(first);
        let mut j = 16;
        while j < n {
            let (c, nan_c) = unsafe { load_keys(seg, j, (n - j).min(16)) };
            nan |= nan_c;
            let kth = _mm512_permutexvar_epi32(at, best[reg]);
            if _mm512_cmplt_epi32_mask(c, kth) != 0 {
                merge(&mut best, sort16(c));
            }
            j += 16;
        }
        if nan != 0 {
            return false;
        }
        for (r, &key) in best.iter().enumerate() {
            // keys back to float32 bits (the transform is its own inverse), widened to float64
            let x = _mm512_castsi512_ps(_mm512_xor_si512(key, _mm512_srli_epi32::<1>(_mm512_srai_epi32::<31>(key))));
            let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
            let hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(x))));
            // SAFETY: 16 * R <= SIMD_MAX_K lanes
            unsafe {
                _mm512_storeu_pd(out.as_mut_ptr().add(16 * r), lo);
                _mm512_storeu_pd(out.as_mut_ptr().add(16 * r + 8), hi);
            }
        }
        true
    }

    /// See `super::lane_sums8`.
    ///
    /// # Safety
    /// AVX-512F; `start[l] + k[l] <= bottom.len()` for every lane with `k[l] > 0`.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn lane_sums8(bottom: &[f64], start: &[usize; 8], k: &[usize; 8]) -> ([f64; 8], [bool; 8]) {
        let mut s = _mm512_setzero_pd();
        let mut c = _mm512_setzero_pd();
        let mut finite: __mmask8 = 0xFF;
        let st: [i64; 8] = std::array::from_fn(|l| start[l] as i64);
        let kk: [i64; 8] = std::array::from_fn(|l| k[l] as i64);
        // SAFETY: 64 readable bytes each
        let (st, kk) = unsafe { (_mm512_loadu_si512(st.as_ptr() as *const _), _mm512_loadu_si512(kk.as_ptr() as *const _)) };
        let inf = _mm512_set1_pd(f64::INFINITY);
        let max_k = k.iter().copied().max().unwrap_or(0);
        for i in 0..max_k {
            let iv = _mm512_set1_epi64(i as i64);
            let m = _mm512_cmplt_epi64_mask(iv, kk);
            // SAFETY (caller): lanes in m read within bottom; the others are not read
            let x = unsafe { _mm512_mask_i64gather_pd::<8>(_mm512_setzero_pd(), m, _mm512_add_epi64(st, iv), bottom.as_ptr()) };
            finite &= !(m & !_mm512_cmp_pd_mask::<_CMP_LT_OQ>(_mm512_abs_pd(x), inf));
            let t = _mm512_add_pd(s, x);
            // |s| >= |x| (false for NaN, as the scalar comparison)
            let big = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(_mm512_abs_pd(s), _mm512_abs_pd(x));
            let a = _mm512_add_pd(_mm512_sub_pd(s, t), x);
            let b = _mm512_add_pd(_mm512_sub_pd(x, t), s);
            let corr = _mm512_mask_blend_pd(big, b, a);
            c = _mm512_mask_add_pd(c, m, c, corr);
            s = _mm512_mask_mov_pd(s, m, t);
        }
        let mut out = [0.0f64; 8];
        // SAFETY: 64 writable bytes
        unsafe { _mm512_storeu_pd(out.as_mut_ptr(), _mm512_add_pd(s, c)) };
        (out, std::array::from_fn(|l| finite & (1 << l) != 0))
    }

    /// The `k` smallest values of `seg`, ascending and widened to float64, in `out[..k]`; false
    /// when a value is NaN. `0 < k <= min(seg.len(), SIMD_MAX_K)`.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn bottom_f32(seg: &[f32], k: usize, out: &mut [f64; SIMD_MAX_K]) -> bool {
        debug_assert!(k >= 1 && k <= seg.len() && k <= SIMD_MAX_K);
        unsafe {
            match k {
                0..=16 => run::<1>(seg, k, out),
                17..=32 => run::<2>(seg, k, out),
                33..=64 => run::<4>(seg, k, out),
                _ => run::<8>(seg, k, out),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift draws: a coarse grid (ties), with -inf, -0.0, 0.0, +inf and subnormals among them
    fn draws(seed: u64, len: usize, coarse: bool) -> Vec<f32> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 53 {
                    0 => f32::NEG_INFINITY,
                    1 => -0.0,
                    2 => 0.0,
                    3 => -f32::from_bits(1 + (x >> 40) as u32 % 100), // negative subnormal
                    4 => f32::INFINITY,
                    _ if coarse => -(((x >> 20) % 16) as f32) / 4.0,
                    _ => -((x >> 40) as f32) / (1u64 << 24) as f32 * 30.0,
                }
            })
            .collect()
    }

    /// the reference: a full sort by total_cmp, the first k, widened to f64
    fn brute(seg: &[f32], k: usize) -> Vec<u64> {
        let mut s = seg.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        s[..k].iter().map(|&v| (v as f64).to_bits()).collect()
    }

    fn run_path(seg: &[f32], k: usize, simd: Simd) -> Option<Vec<u64>> {
        let mut out = vec![-1.0];
        f32::bottom(seg, k, &mut Scratch::default(), simd, &mut out)?;
        assert_eq!((out.len(), out[0]), (k + 1, -1.0), "appended k values");
        Some(out[1..].iter().map(|v| v.to_bits()).collect())
    }

    fn paths() -> Vec<Simd> {
        let detected = Simd::detect();
        if !detected.is_avx512() {
            eprintln!("AVX-512F not on this CPU: only the scalar path is tested");
            vec![Simd::SCALAR]
        } else {
            vec![Simd::SCALAR, detected]
        }
    }

    #[test]
    fn every_path_selects_the_sorted_bottom_k() {
        let mut seed = 1u64;
        for simd in paths() {
            for len in [1usize, 2, 3, 15, 16, 17, 31, 32, 33, 47, 48, 49, 59, 63, 64, 65, 100, 127, 128, 129, 300, 1000, 4099] {
                for k in [1usize, 2, 3, 7, 11, 15, 16, 17, 31, 32, 33, 48, 49, 63, 64, 65, 100, 127, 128, 129, len / 5, len - 1, len] {
                    if k == 0 || k > len {
                        continue;
                    }
                    for coarse in [true, false] {
                        seed += 1;
                        let mut seg = draws(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), len, coarse);
                        let want = brute(&seg, k);
                        assert_eq!(run_path(&seg, k, simd).unwrap(), want, "{simd:?} len {len} k {k} coarse {coarse}");
                        // ascending and descending inputs: the skip of whole chunks, and none
                        seg.sort_by(|a, b| a.total_cmp(b));
                        assert_eq!(run_path(&seg, k, simd).unwrap(), want, "{simd:?} sorted, len {len} k {k}");
                        seg.reverse();
                        assert_eq!(run_path(&seg, k, simd).unwrap(), want, "{simd:?} reversed, len {len} k {k}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_path_reports_a_nan_anywhere() {
        for simd in paths() {
            for len in [1usize, 5, 16, 17, 40, 64, 65, 200] {
                for pos in [0, len / 2, len - 1] {
                    for nan in [f32::NAN, -f32::NAN] {
                        // a NaN in a chunk that the skip would pass over is still found
                        let mut seg: Vec<f32> = (0..len).map(|i| -(i as f32)).collect();
                        seg[pos] = nan;
                        for k in [1, len.div_ceil(2)] {
                            assert!(run_path(&seg, k, simd).is_none(), "{simd:?} len {len} pos {pos} k {k}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn lane_sums8_gives_the_scalar_compensated_sums() {
        let simd = Simd::detect();
        if !simd.is_avx512() {
            assert!(lane_sums8(simd, &[], &[0; 8], &[0; 8]).is_none());
            eprintln!("AVX-512F not on this CPU: lane_sums8 not compared");
            return;
        }
        // magnitudes from 1e-300 to 1e300 (both branches of the compensation), signed zeros,
        // infinities of both signs (NaN compensation), lanes of length 0 to 70
        let mut x = 0x0123_4567_89ab_cdefu64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..400 {
            let k: [usize; 8] = std::array::from_fn(|_| (next() % 71) as usize * usize::from(next() % 9 != 0));
            let mut bottom = Vec::new();
            let mut start = [0usize; 8];
            for l in 0..8 {
                start[l] = bottom.len();
                for _ in 0..k[l] {
                    let r = next();
                    bottom.push(match r % 40 {
                        0 => -0.0,
                        1 => 0.0,
                        2 if round % 5 == 0 => f64::NEG_INFINITY,
                        3 if round % 7 == 0 => f64::INFINITY,
                        _ => {
                            let e = ((r >> 8) % 600) as i32 - 300;
                            let m = ((r >> 20) as f64) / (1u64 << 44) as f64;
                            if r & 1 == 0 { -m * 10f64.powi(e) } else { m * 10f64.powi(e) }
                        }
                    });
                }
            }
            let (got, fin) = lane_sums8(simd, &bottom, &start, &k).unwrap();
            for l in 0..8 {
                let lane = &bottom[start[l]..start[l] + k[l]];
                let mut acc = crate::common::numerics::CompensatedSum::new();
                lane.iter().for_each(|&v| acc.add(v));
                assert_eq!(got[l].to_bits(), acc.value().to_bits(), "round {round}, lane {l}");
                assert_eq!(fin[l], lane.iter().all(|v| v.is_finite()), "round {round}, lane {l}");
            }
        }
    }

    #[test]
    fn f32_keys_order_like_the_widened_f64() {
        let xs = [f32::NEG_INFINITY, -3e38, -7.25, -1.0, -f32::MIN_POSITIVE, -1e-45, -0.0, 0.0, 1e-45, 1.0, 3e38, f32::INFINITY];
        for &a in &xs {
            let ka = order_key32(a.to_bits() as i32);
            assert_eq!(order_key32(ka) as u32, a.to_bits());
            for &b in &xs {
                let kb = order_key32(b.to_bits() as i32);
                assert_eq!(ka.cmp(&kb), (a as f64).total_cmp(&(b as f64)), "{a} vs {b}");
                assert_eq!(ka.cmp(&kb), order_key(a as f64).cmp(&order_key(b as f64)));
            }
        }
    }
}
