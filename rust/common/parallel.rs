//! Thread-count resolution and cached rayon pools.
//!
//! Every parallel kernel runs inside [`install`], which picks the number of threads from the
//! caller's `n_jobs` or, when that is `None`, from the `LLMSURROGATE_NUM_THREADS` environment
//! variable, falling back to all logical cores. Pools are cached per thread count, so repeated
//! calls do not pay for thread start-up.
//!
//! Fork caveat: a process that forks after a pool has started (Python `multiprocessing` with the
//! `fork` start method, R's `parallel::mclapply`) must not use these pools in the child; use the
//! `spawn`/`forkserver` start methods, as for any threaded native library.

use crate::common::errors::{CoreError, CoreResult};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Name of the environment variable read when `n_jobs` is `None`.
pub const THREADS_ENV: &str = "LLMSURROGATE_NUM_THREADS";

/// Logical cores available to this process, read once (the lookup parses cgroup files on Linux
/// and costs tens of microseconds).
fn available_cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// Resolve `n_jobs` with joblib's conventions: a positive value is the thread count, `-1` means all
/// cores, `-k` means all cores but `k - 1` (at least one); `0` is an error. `None` reads
/// `LLMSURROGATE_NUM_THREADS` (same conventions) and otherwise uses all cores.
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
    match value {
        0 => Err(CoreError::invalid(&arg, "0 threads is not allowed; use a positive count, or -1 for all cores")),
        v if v > 0 => Ok(v as usize),
        v => {
            let spare = (-v - 1) as usize;
            Ok(cores.saturating_sub(spare).max(1))
        }
    }
}

fn pools() -> &'static Mutex<HashMap<usize, Arc<rayon::ThreadPool>>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    POOLS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Get (or build once) the pool with `threads` workers.
pub fn pool(threads: usize) -> CoreResult<Arc<rayon::ThreadPool>> {
    let mut map = pools().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(p) = map.get(&threads) {
        return Ok(p.clone());
    }
    let built = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("llmsurrogate-{i}"))
        .build()
        .map_err(|e| CoreError::ThreadPool { threads, reason: e.to_string() })?;
    let built = Arc::new(built);
    map.insert(threads, built.clone());
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

    #[test]
    fn joblib_conventions() {
        assert_eq!(resolve_with(Some(3), None, 8).unwrap(), 3);
        assert_eq!(resolve_with(Some(-1), None, 8).unwrap(), 8);
        assert_eq!(resolve_with(Some(-2), None, 8).unwrap(), 7);
        assert_eq!(resolve_with(Some(-100), None, 8).unwrap(), 1);
        assert!(resolve_with(Some(0), None, 8).unwrap_err().to_string().contains("n_jobs"));
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
