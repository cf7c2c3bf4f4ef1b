//! The one seam between native and wasm32: `Send` bounds, the clock and run ids.

use std::future::Future;
use std::pin::Pin;

/// `Send` natively, nothing on wasm32 (JS values are not `Send`, and there is one thread).
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSend: Send {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + ?Sized> MaybeSend for T {}
/// `Send` natively, nothing on wasm32 (JS values are not `Send`, and there is one thread).
#[cfg(target_arch = "wasm32")]
pub trait MaybeSend {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSend for T {}

/// `Sync` natively, nothing on wasm32.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSync: Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Sync + ?Sized> MaybeSync for T {}
/// `Sync` natively, nothing on wasm32.
#[cfg(target_arch = "wasm32")]
pub trait MaybeSync {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSync for T {}

/// A boxed future that is `Send` exactly when [`MaybeSend`] requires it.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future that is `Send` exactly when [`MaybeSend`] requires it.
#[cfg(target_arch = "wasm32")]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Milliseconds since the Unix epoch.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Milliseconds since the Unix epoch.
#[cfg(target_arch = "wasm32")]
pub(crate) fn now_ms() -> u64 {
    // Date.now() is a non-negative integer well below 2^53.
    js_sys::Date::now() as u64
}

#[cfg(not(target_arch = "wasm32"))]
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS once per process; the counter and clock make each id distinct.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u64(now_ms());
    h.finish()
}

#[cfg(target_arch = "wasm32")]
fn random_u64() -> u64 {
    // Run ids need uniqueness, not secrecy; Math.random is available in every JS host.
    let hi = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    let lo = (js_sys::Math::random() * 4_294_967_296.0) as u64;
    (hi << 32) | lo
}

/// A fresh 128-bit run id as 32 hex digits.
pub(crate) fn new_run_id() -> String {
    format!("{:016x}{:016x}", random_u64(), random_u64())
}

/// Waits until `at` (ms since the epoch). On wasm32 through the host's `setTimeout`; natively it returns at
/// once (no timer without a runtime: the stores that need a wait, Workers KV, exist only on wasm32).
#[cfg(target_arch = "wasm32")]
pub(crate) async fn sleep_until(at: u64) {
    let ms = at.saturating_sub(now_ms());
    if ms == 0 {
        return;
    }
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let _ = set_timeout(&resolve, i32::try_from(ms).unwrap_or(i32::MAX));
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(f: &js_sys::Function, ms: i32) -> wasm_bindgen::JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &wasm_bindgen::JsValue);
}

/// A future that is ready `ms` after it started, through the host's `setTimeout` (cleared when dropped
/// earlier). `None` natively: there is no timer without a runtime.
#[cfg(target_arch = "wasm32")]
pub(crate) struct Timer {
    id: wasm_bindgen::JsValue,
    /// Settles the promise: called when the timer is dropped early, so the promise's callbacks (which hold
    /// wasm memory until it settles) are released rather than kept for good.
    resolve: js_sys::Function,
    done: wasm_bindgen_futures::JsFuture,
}

#[cfg(target_arch = "wasm32")]
impl Timer {
    pub(crate) fn start(ms: u64) -> Option<Self> {
        let mut id = wasm_bindgen::JsValue::UNDEFINED;
        let mut settle = None;
        let promise = js_sys::Promise::new(&mut |resolve, _| {
            id = set_timeout(&resolve, i32::try_from(ms).unwrap_or(i32::MAX));
            settle = Some(resolve);
        });
        Some(Timer {
            id,
            resolve: settle?,
            done: wasm_bindgen_futures::JsFuture::from(promise),
        })
    }
}

#[cfg(target_arch = "wasm32")]
impl Future for Timer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        Pin::new(&mut self.done).poll(cx).map(|_| ())
    }
}

#[cfg(target_arch = "wasm32")]
impl Drop for Timer {
    fn drop(&mut self) {
        clear_timeout(&self.id);
        let _ = self.resolve.call0(&wasm_bindgen::JsValue::UNDEFINED);
    }
}

/// No timer natively (see the wasm32 one).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) struct Timer(std::future::Pending<()>);

#[cfg(not(target_arch = "wasm32"))]
impl Timer {
    pub(crate) fn start(_ms: u64) -> Option<Self> {
        None
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Future for Timer {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

/// Waits until `at` (ms since the epoch). On wasm32 through the host's `setTimeout`; natively it returns at
/// once (no timer without a runtime: the stores that need a wait, Workers KV, exist only on wasm32).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) async fn sleep_until(at: u64) {
    let _ = at;
}

/// `work`, unless `stop` resolves first (`None`: `work` was dropped unfinished).
pub(crate) async fn unless_stopped<T>(
    work: impl std::future::Future<Output = T>,
    stop: Option<BoxFuture<'static, ()>>,
) -> Option<T> {
    let Some(mut stop) = stop else {
        return Some(work.await);
    };
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(v) = work.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(v));
        }
        stop.as_mut().poll(cx).map(|()| None)
    })
    .await
}
