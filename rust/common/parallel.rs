//! Thread-count resolution and cached rayon pools.
//!
//! Every parallel kernel runs inside [`install`], which picks the number of threads from the
//! caller's `n_jobs` or, when that is `None`, from the `LLMSURROGATE_NUM_THREADS` environment
//! variable, falling back to all logical cores.
//!
//! Bounds (so that no `n_jobs` can leave the process with thousands of threads):
//!
//! * a pool has at most [`max_threads`] workers, twice the logical cores (at least 4): a larger
//!   request (`n_jobs=1000`, or the environment variable) is lowered to it, and [`resolve_threads`]
//!   reports the lowered count. The kernels are CPU-bound, so more threads than that cannot help;
//!   their results never depend on the thread count.
//! * at most [`MAX_CACHED_POOLS`] pools are kept, so repeated calls do not pay for thread start-up;
//!   a new size evicts the least recently used pool, whose threads exit as soon as no call is
//!   running on it. At most `MAX_CACHED_POOLS × max_threads()` idle workers stay alive.
//!
//! Fork caveat: a process that forks after a pool has started (Python `multiprocessing` with the
//! `fork` start method, R's `parallel::mclapply`) must not use these pools in the child; use the
//! `spawn`/`forkserver` start methods, as for any threaded native library.

use crate::common::errors::{CoreError, CoreResult};
use std::sync::{Arc, Mutex, OnceLock};

/// Name of the environment variable read when `n_jobs` is `None`.
pub const THREADS_ENV: &str = "LLMSURROGATE_NUM_THREADS";

/// Logical cores available to this process, read once (the lookup parses cgroup files on Linux
/// and costs tens of microseconds).
fn available_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// Pools kept alive between calls (least recently used evicted first).
pub const MAX_CACHED_POOLS: usize = 4;

/// The most worker threads a pool gets for `cores` logical cores: 2 × cores, at least 4.
fn max_threads_for(cores: usize) -> usize {
    cores.saturating_mul(2).max(4)
}

/// The most worker threads a pool gets: twice the logical cores, at least 4. A larger `n_jobs`
/// is lowered to it.
pub fn max_threads() -> usize {
    max_threads_for(available_cores())
}

/// Resolve `n_jobs` with joblib's conventions: a positive value is the thread count, `-1` means all
/// cores, `-k` means all cores but `k - 1` (at least one); `0` is an error. `None` reads
/// `LLMSURROGATE_NUM_THREADS` (same conventions) and otherwise uses all cores. The count is
/// capped at [`max_threads`].
pub fn resolve_threads(n_jobs: Option<i64>) -> CoreResult<usize> {
    resolve_with(n_jobs, std::env::var(THREADS_ENV).ok().as_deref(), available_cores())
}

fn resolve_with(n_jobs: Option<i64>, env: Option<&str>, cores: usize) -> CoreResult<usize> {
    let (value, arg) = match n_jobs {
        Some(v) => (v, "n_jobs".to_string()),
        None => match env.map(str::trim).filter(|s| !s.is_empty()) {
            None => return Ok(cores),
            Some(text) => {
                let parsed = text.parse::<i64>().map_err(|_| {
                    CoreError::invalid(
                        THREADS_ENV,
                        format!("must be an integer such as 4 or -1 (all cores); got {text:?}"),
                    )
                })?;
                (parsed, THREADS_ENV.to_string())
            }
        },
    };
    let cap = max_threads_for(cores);
    match value {
        0 => Err(CoreError::invalid(&arg, "0 threads is not allowed; use a positive count, or -1 for all cores")),
        v if v > 0 => Ok(usize::try_from(v).unwrap_or(usize::MAX).min(cap)),
        v => {
            // -k keeps k - 1 cores free; unsigned_abs: -i64::MIN does not overflow
            let spare = usize::try_from(v.unsigned_abs() - 1).unwrap_or(usize::MAX);
            Ok(cores.saturating_sub(spare).max(1).min(cap))
        }
    }
}

/// Cached pools with their thread counts, least recently used first.
type PoolCache = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;

fn pools() -> &'static PoolCache {
    static POOLS: OnceLock<PoolCache> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(Vec::with_capacity(MAX_CACHED_POOLS + 1)))
}

/// Sizes of the cached pools, least recently used first (for tests and diagnostics).
pub fn cached_pool_sizes() -> Vec<usize> {
    pools().lock().unwrap_or_else(|poisoned| poisoned.into_inner()).iter().map(|(n, _)| *n).collect()
}

/// Get (or build) the pool with `threads` workers (capped at [`max_threads`]). At most
/// [`MAX_CACHED_POOLS`] pools are kept; building another drops the least recently used one from
/// the cache (its threads exit once no call is running on it).
pub fn pool(threads: usize) -> CoreResult<Arc<rayon::ThreadPool>> {
    let threads = threads.clamp(1, max_threads());
    let mut cache = pools().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(i) = cache.iter().position(|(n, _)| *n == threads) {
        let entry = cache.remove(i);
        let p = entry.1.clone();
        cache.push(entry);
        return Ok(p);
    }
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("llmsurrogate-{i}"))
        .build()
        .map_err(|e| CoreError::ThreadPool { threads, reason: e.to_string() })?;
    let built = Arc::new(built);
    cache.push((threads, built.clone()));
    while cache.len() > MAX_CACHED_POOLS {
        cache.remove(0);
    }
    Ok(built)
}

/// Inputs smaller than this run on the calling thread: waking a pool costs more than it saves.
pub const PARALLEL_MIN_ITEMS: usize = 1 << 15;

/// Run `f` on a pool sized from `n_jobs` (see [`resolve_threads`]).
pub fn install<T: Send>(n_jobs: Option<i64>, f: impl FnOnce() -> CoreResult<T> + Send) -> CoreResult<T> {
    let threads = resolve_threads(n_jobs)?;
    pool(threads)?.install(f)
}

/// Like [`install`], but runs `f` on the calling thread when `items` is below
/// [`PARALLEL_MIN_ITEMS`] (`n_jobs` is still validated).
pub fn install_for<T: Send>(n_jobs: Option<i64>, items: usize, f: impl FnOnce() -> CoreResult<T> + Send) -> CoreResult<T> {
    if items < PARALLEL_MIN_ITEMS {
        resolve_threads(n_jobs)?;
        return f();
    }
    install(n_jobs, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool cache is global: the tests that look at it run one at a time.
    static CACHE_TESTS: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        CACHE_TESTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    #[test]
    fn joblib_conventions() {
        assert_eq!(resolve_with(Some(3), None, 8).unwrap(), 3);
        assert_eq!(resolve_with(Some(-1), None, 8).unwrap(), 8);
        assert_eq!(resolve_with(Some(-2), None, 8).unwrap(), 7);
        assert_eq!(resolve_with(Some(-100), None, 8).unwrap(), 1);
        assert!(resolve_with(Some(0), None, 8).unwrap_err().to_string().contains("n_jobs"));
        // the most negative n_jobs (was an overflow of -v) keeps one thread
        assert_eq!(resolve_with(Some(i64::MIN), None, 8).unwrap(), 1);
    }

    #[test]
    fn thread_counts_are_capped() {
        let _guard = serial();
        assert_eq!(max_threads_for(1), 4);
        assert_eq!(max_threads_for(2), 4);
        assert_eq!(max_threads_for(8), 16);
        assert_eq!(resolve_with(Some(1000), None, 2).unwrap(), 4);
        assert_eq!(resolve_with(Some(1000), None, 8).unwrap(), 16);
        assert_eq!(resolve_with(Some(i64::MAX), None, 8).unwrap(), 16);
        assert_eq!(resolve_with(Some(16), None, 8).unwrap(), 16);
        assert_eq!(resolve_with(None, Some("1000"), 8).unwrap(), 16);
        assert_eq!(resolve_threads(Some(1_000_000)).unwrap(), max_threads());
        assert_eq!(pool(1_000_000).unwrap().current_num_threads(), max_threads());
        assert_eq!(pool(0).unwrap().current_num_threads(), 1);
    }

    #[test]
    fn at_most_a_few_pools_are_cached() {
        let _guard = serial();
        for threads in 1..=max_threads() {
            let p = pool(threads).unwrap();
            assert_eq!(p.current_num_threads(), threads);
            let sizes = cached_pool_sizes();
            assert!(sizes.len() <= MAX_CACHED_POOLS, "{sizes:?}");
            // the pool just used is the most recent entry
            assert!(sizes.contains(&threads), "{sizes:?}");
        }
        // a hit moves the pool to the most recent end without building another
        let a = pool(2).unwrap();
        let b = pool(2).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(cached_pool_sizes().len() <= MAX_CACHED_POOLS);
    }

    #[test]
    fn environment_variable_used_only_without_n_jobs() {
        assert_eq!(resolve_with(None, Some("2"), 8).unwrap(), 2);
        assert_eq!(resolve_with(None, Some(" -1 "), 8).unwrap(), 8);
        assert_eq!(resolve_with(None, Some(""), 8).unwrap(), 8);
        assert_eq!(resolve_with(None, None, 8).unwrap(), 8);
        assert_eq!(resolve_with(Some(1), Some("4"), 8).unwrap(), 1);
        let e = resolve_with(None, Some("four"), 8).unwrap_err().to_string();
        assert!(e.contains(THREADS_ENV) && e.contains("four"), "{e}");
    }

    #[test]
    fn pools_are_cached_and_sized() {
        let _guard = serial();
        let a = pool(2).unwrap();
        let b = pool(2).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.current_num_threads(), 2);
        let n = install(Some(3), || Ok(rayon::current_num_threads())).unwrap();
        assert_eq!(n, 3);
        // small inputs stay on the calling thread, but n_jobs is still checked
        assert!(install_for(Some(4), 10, || Ok(rayon::current_thread_index())).unwrap().is_none());
        assert_eq!(install_for(Some(4), PARALLEL_MIN_ITEMS, || Ok(rayon::current_num_threads())).unwrap(), 4);
        assert!(install_for(Some(0), 10, || Ok(())).is_err());
    }
}
