//! A saver whose every operation gives up after a time limit, so a store that never answers cannot hang a
//! session (the npm package's session option `timeoutMs`).

use std::future::Future;
use std::pin::pin;
use std::task::Poll;

use super::{Condition, SavedCheckpoint, Saver};
use crate::checkpoint::CheckpointSummary;
use crate::platform::MaybeSend;
use crate::saver::SaverError;

/// `inner`, each of whose operations fails with [`SaverError::Timeout`] once it has taken `ms`. An operation
/// given up on may still complete in the store later. On wasm32 the limit is kept with the host's timer;
/// natively there is none without a runtime, and the operations run unbounded (bound them in the store).
///
/// ```
/// use resumable_agent::{MemorySaver, Saver, Timeout};
/// let saver = Timeout::new(MemorySaver::new(), 2_000);
/// assert!(pollster::block_on(saver.get_text("nothing"))?.is_none());
/// # Ok::<(), resumable_agent::SaverError>(())
/// ```
pub struct Timeout<S> {
    inner: S,
    ms: u64,
}

impl<S: Saver> Timeout<S> {
    /// `inner` with every operation bounded by `ms` milliseconds.
    pub fn new(inner: S, ms: u64) -> Self {
        Timeout { inner, ms }
    }

    /// `work`, or a timeout error naming `op` and `key` once `self.ms` passed first.
    async fn within<T>(
        &self,
        op: &str,
        key: &str,
        work: impl Future<Output = Result<T, SaverError>>,
    ) -> Result<T, SaverError> {
        let Some(timer) = crate::platform::Timer::start(self.ms) else {
            return work.await;
        };
        let (mut work, mut timer) = (pin!(work), pin!(timer));
        let done = std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = work.as_mut().poll(cx) {
                return Poll::Ready(Some(done));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        done.unwrap_or_else(|| {
            Err(SaverError::Timeout {
                op: op.to_owned(),
                key: key.to_owned(),
                ms: self.ms,
            })
        })
    }
}

impl<S: Saver> Saver for Timeout<S> {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        self.within("get", key, self.inner.get_text(key))
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.within("put", key, self.inner.put_text(key, value, summary, condition))
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.within("delete", key, self.inner.delete(key))
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        self.within("list", prefix, self.inner.list(prefix))
    }
    fn list_heads(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        self.within("list", prefix, self.inner.list_heads(prefix))
    }
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        let first = keys.first().map_or("", String::as_str);
        self.within("get", first, self.inner.get_many(keys))
    }
    fn compare_and_set(&self) -> bool {
        self.inner.compare_and_set()
    }
    fn max_value_bytes(&self) -> Option<usize> {
        self.inner.max_value_bytes()
    }
    fn min_write_interval_ms(&self) -> u64 {
        self.inner.min_write_interval_ms()
    }
    fn stores_records(&self) -> bool {
        self.inner.stores_records()
    }
}
