//! Savers store checkpoints by key. They only store: the run never depends on what a saver does.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, CheckpointSummary};
use crate::platform::{BoxFuture, MaybeSend, MaybeSync};

// Used by the `kv` and `js` features; compiled (and unit-tested) everywhere.
#[cfg(all(target_arch = "wasm32", feature = "d1"))]
mod d1;
#[cfg(all(target_arch = "wasm32", feature = "durable-object"))]
pub(crate) mod durable_object;
#[cfg_attr(
    not(all(target_arch = "wasm32", any(feature = "kv", feature = "js-sessions"))),
    allow(dead_code)
)]
mod error;
#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
mod indexeddb;
#[cfg(all(target_arch = "wasm32", feature = "kv"))]
mod kv;
pub use error::SaverError;
pub(crate) mod kv_store;
mod timeout;
pub use timeout::Timeout;

#[cfg(all(target_arch = "wasm32", feature = "d1"))]
pub use d1::{D1_DEFAULT_TABLE, D1_MAX_ROW_BYTES, D1Saver};
#[cfg(all(target_arch = "wasm32", feature = "durable-object"))]
pub use durable_object::{DURABLE_OBJECT_MAX_VALUE_BYTES, DurableObjectSaver, serve as serve_checkpoint_store};
#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
pub use indexeddb::{Durability, IndexedDbOptions, IndexedDbSaver};
#[cfg(all(target_arch = "wasm32", feature = "kv"))]
pub use kv::KvSaver;
pub use kv_store::{KvBackend, KvOptions, KvPage, KvStoreSaver};

/// One saved checkpoint in a listing: its key and its summary (no messages loaded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "FlatSaved")]
#[non_exhaustive]
pub struct SavedCheckpoint {
    /// The key it is stored under.
    pub key: String,
    /// What a listing shows.
    #[serde(flatten)]
    pub summary: CheckpointSummary,
}

impl SavedCheckpoint {
    /// The entry of `key` with `summary`.
    pub fn new(key: impl Into<String>, summary: CheckpointSummary) -> Self {
        SavedCheckpoint {
            key: key.into(),
            summary,
        }
    }
}

/// The JSON form of [`SavedCheckpoint`], decoded in one pass (serde's `flatten` buffers).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FlatSaved {
    key: String,
    #[serde(default)]
    run_id: Option<String>,
    #[serde(default)]
    updated_at: Option<u64>,
    iterations: u32,
    usage: crate::message::Usage,
    interrupted: bool,
    #[serde(default)]
    question: Option<String>,
    message_count: usize,
    #[serde(default)]
    step: Option<u64>,
    #[serde(default)]
    parent_step: Option<u64>,
    #[serde(default)]
    label: Option<String>,
}

impl From<FlatSaved> for SavedCheckpoint {
    fn from(f: FlatSaved) -> Self {
        let summary = CheckpointSummary {
            run_id: f.run_id,
            updated_at: f.updated_at,
            iterations: f.iterations,
            usage: f.usage,
            interrupted: f.interrupted,
            question: f.question,
            message_count: f.message_count,
            step: f.step,
            parent_step: f.parent_step,
            label: f.label,
        };
        SavedCheckpoint { key: f.key, summary }
    }
}

/// What a write requires of what is stored under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Condition {
    /// Write whatever is there.
    Any,
    /// Write only if nothing is stored under the key.
    Absent,
    /// Write only if what is stored is the checkpoint of this thread step (compare-and-set on a session's
    /// head; a stored checkpoint without thread information counts as step 0).
    Step(u64),
}

impl Condition {
    /// True when a write may replace `current` (the stored entry's summary, if any).
    pub fn allows(self, current: Option<&CheckpointSummary>) -> bool {
        match self {
            Condition::Any => true,
            Condition::Absent => current.is_none(),
            Condition::Step(n) => current.is_some_and(|c| c.step.unwrap_or(0) == n),
        }
    }

    /// [`Condition::allows`] as the error a saver answers when it does not: the one compare-and-set rule
    /// every saver applies, atomically or (a store that cannot compare and set) as a read then a write.
    ///
    /// # Errors
    /// [`SaverError::Conflict`] naming what was expected and found.
    pub fn check(self, key: &str, current: Option<&CheckpointSummary>) -> Result<(), SaverError> {
        if self.allows(current) {
            Ok(())
        } else {
            Err(self.conflict(key, current))
        }
    }

    pub(crate) fn conflict(self, key: &str, current: Option<&CheckpointSummary>) -> SaverError {
        SaverError::Conflict {
            key: key.to_owned(),
            expected: match self {
                Condition::Step(n) => Some(n),
                _ => None,
            },
            found: current.map(|c| c.step.unwrap_or(0)),
        }
    }
}

/// Stores checkpoints by key: memory, a file, Workers KV, a Durable Object, IndexedDB, or your own.
///
/// A saver stores **text** by key, with the checkpoint's summary beside it so [`Saver::list`] never loads a
/// value; decoding, validation and the "corrupt" error live once, in the provided [`Saver::get`] /
/// [`Saver::put`]. A saver that can compare and set atomically honours [`Condition`] in
/// [`Saver::put_text`] and says so with [`Saver::compare_and_set`]; sessions rely on it so that exactly
/// one of several concurrent replies runs.
pub trait Saver: MaybeSend + MaybeSync {
    /// The text stored under `key`, if any.
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend;

    /// Stores `value` (a checkpoint's JSON) and its `summary` under `key`, replacing what was there — or,
    /// unless `condition` is [`Condition::Any`], only if what is there satisfies it (else
    /// [`SaverError::Conflict`], nothing written). Replaces the whole value at once or not at all.
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend;

    /// Removes `key`; removing a missing key is not an error.
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend;

    /// The key and summary of everything stored under a key starting with `prefix`, in key order, without
    /// reading values.
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend;

    /// The key and summary of each session under `prefix` — the keys without
    /// [`HISTORY_SEPARATOR`](crate::HISTORY_SEPARATOR), not a session's step records — in key order. The default
    /// lists everything and leaves the records out; a store that can list sessions alone (an index of them:
    /// the SQL savers) does, so that a listing reads one entry per session however long its runs are.
    fn list_heads(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move {
            let mut all = self.list(prefix).await?;
            all.retain(|e| !e.key.contains(crate::session::HISTORY_SEPARATOR));
            Ok(all)
        }
    }

    /// True when [`Saver::put_text`] checks its [`Condition`] and writes atomically.
    fn compare_and_set(&self) -> bool {
        false
    }

    /// The texts stored under `keys`, in order (`None` where nothing is stored). The default reads them one by
    /// one; a store that can read several in one round trip (Workers KV's bulk get, one Durable Object request,
    /// one IndexedDB transaction) does. A session reads its log with it.
    ///
    /// # Errors
    /// The store's own.
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            let mut out = Vec::with_capacity(keys.len());
            for key in keys {
                out.push(self.get_text(key).await?);
            }
            Ok(out)
        }
    }

    /// The shortest time, in ms, between two writes of one key the store allows (Workers KV: 1000); 0 when it
    /// has no such rule. A session never writes a key again sooner: its steps go to keys written once.
    fn min_write_interval_ms(&self) -> u64 {
        0
    }

    /// False for a store that takes only checkpoints (a saver of JS objects): a session then stores each step
    /// as a whole checkpoint, as releases before the step log did, instead of a record of what changed.
    fn stores_records(&self) -> bool {
        true
    }

    /// The largest value the store accepts, in bytes, when it has a limit.
    fn max_value_bytes(&self) -> Option<usize> {
        None
    }

    /// The checkpoint stored under `key`, if any.
    ///
    /// # Errors
    /// [`SaverError::Corrupt`] when what is stored is not a valid checkpoint; the store's own errors.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Checkpoint>, SaverError>> + MaybeSend {
        self.get_with(key, crate::limits::Limits::default())
    }

    /// The checkpoint stored under `key`, refused (as corrupt) when it is over `limits`.
    ///
    /// # Errors
    /// As [`Saver::get`].
    fn get_with(
        &self,
        key: &str,
        limits: crate::limits::Limits,
    ) -> impl Future<Output = Result<Option<Checkpoint>, SaverError>> + MaybeSend {
        async move {
            let Some(text) = self.get_text(key).await? else {
                return Ok(None);
            };
            Checkpoint::from_json_with(&text, &limits)
                .map(Some)
                .map_err(|source| SaverError::Corrupt {
                    key: key.to_owned(),
                    source,
                })
        }
    }

    /// Stores `checkpoint` under `key`, replacing what was there.
    ///
    /// # Errors
    /// [`SaverError::TooLarge`] (nothing written) for a value over [`Saver::max_value_bytes`]; the store's own.
    fn put(&self, key: &str, checkpoint: &Checkpoint) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.put_if(key, checkpoint, Condition::Any)
    }

    /// Stores `checkpoint` under `key` if what is stored satisfies `condition`.
    ///
    /// # Errors
    /// [`SaverError::Conflict`] when it does not; as [`Saver::put`].
    fn put_if(
        &self,
        key: &str,
        checkpoint: &Checkpoint,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let value = checkpoint.to_json();
        let summary = checkpoint.summary();
        async move { put_checked(self, key, value, &summary, condition).await }
    }

    /// True when something is stored under `key`.
    fn exists(&self, key: &str) -> impl Future<Output = Result<bool, SaverError>> + MaybeSend {
        async move { Ok(self.get_text(key).await?.is_some()) }
    }
}

/// A [`Saver`] behind a pointer (`&dyn DynSaver`), for code that works with any saver and is compiled once:
/// every [`Saver`] is one. Its futures are boxed.
pub trait DynSaver: MaybeSend + MaybeSync {
    /// [`Saver::get_text`].
    fn get_text_dyn<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>>;
    /// [`Saver::put_text`].
    fn put_text_dyn<'a>(
        &'a self,
        key: &'a str,
        value: String,
        summary: &'a CheckpointSummary,
        condition: Condition,
    ) -> BoxFuture<'a, Result<(), SaverError>>;
    /// [`Saver::delete`].
    fn delete_dyn<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), SaverError>>;
    /// [`Saver::list`].
    fn list_dyn<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<SavedCheckpoint>, SaverError>>;
    /// [`Saver::list_heads`].
    fn list_heads_dyn<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<SavedCheckpoint>, SaverError>>;
    /// [`Saver::get_many`].
    fn get_many_dyn<'a>(&'a self, keys: &'a [String]) -> BoxFuture<'a, Result<Vec<Option<String>>, SaverError>>;
    /// [`Saver::compare_and_set`].
    fn compare_and_set_dyn(&self) -> bool;
    /// [`Saver::max_value_bytes`].
    fn max_value_bytes_dyn(&self) -> Option<usize>;
    /// [`Saver::min_write_interval_ms`].
    fn min_write_interval_ms_dyn(&self) -> u64;
    /// [`Saver::stores_records`].
    fn stores_records_dyn(&self) -> bool;
}

impl<S: Saver> DynSaver for S {
    fn get_text_dyn<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<String>, SaverError>> {
        Box::pin(self.get_text(key))
    }
    fn put_text_dyn<'a>(
        &'a self,
        key: &'a str,
        value: String,
        summary: &'a CheckpointSummary,
        condition: Condition,
    ) -> BoxFuture<'a, Result<(), SaverError>> {
        Box::pin(put_checked(self, key, value, summary, condition))
    }
    fn delete_dyn<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), SaverError>> {
        Box::pin(self.delete(key))
    }
    fn list_dyn<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<SavedCheckpoint>, SaverError>> {
        Box::pin(self.list(prefix))
    }
    fn list_heads_dyn<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<SavedCheckpoint>, SaverError>> {
        Box::pin(self.list_heads(prefix))
    }
    fn get_many_dyn<'a>(&'a self, keys: &'a [String]) -> BoxFuture<'a, Result<Vec<Option<String>>, SaverError>> {
        Box::pin(self.get_many(keys))
    }
    fn compare_and_set_dyn(&self) -> bool {
        self.compare_and_set()
    }
    fn max_value_bytes_dyn(&self) -> Option<usize> {
        self.max_value_bytes()
    }
    fn min_write_interval_ms_dyn(&self) -> u64 {
        self.min_write_interval_ms()
    }
    fn stores_records_dyn(&self) -> bool {
        self.stores_records()
    }
}

/// A boxed saver of any kind is a saver: e.g. one a program picks at run time (`Box<dyn DynSaver>`).
///
/// ```
/// use resumable_agent::{DynSaver, MemorySaver, Saver};
/// let saver: Box<dyn DynSaver> = Box::new(MemorySaver::new());
/// assert!(saver.compare_and_set());
/// ```
impl Saver for Box<dyn DynSaver> {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move { (**self).get_text_dyn(key).await }
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let summary = summary.clone();
        async move { (**self).put_text_dyn(key, value, &summary, condition).await }
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move { (**self).delete_dyn(key).await }
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move { (**self).list_dyn(prefix).await }
    }
    fn list_heads(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move { (**self).list_heads_dyn(prefix).await }
    }
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move { (**self).get_many_dyn(keys).await }
    }
    fn compare_and_set(&self) -> bool {
        (**self).compare_and_set_dyn()
    }
    fn max_value_bytes(&self) -> Option<usize> {
        (**self).max_value_bytes_dyn()
    }
    fn min_write_interval_ms(&self) -> u64 {
        (**self).min_write_interval_ms_dyn()
    }
    fn stores_records(&self) -> bool {
        (**self).stores_records_dyn()
    }
}

/// A saver behind a reference is a saver (a session borrows its saver).
impl<S: Saver + ?Sized> Saver for &S {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        (**self).get_text(key)
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        (**self).put_text(key, value, summary, condition)
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        (**self).delete(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        (**self).list(prefix)
    }
    fn list_heads(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        (**self).list_heads(prefix)
    }
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        (**self).get_many(keys)
    }
    fn compare_and_set(&self) -> bool {
        (**self).compare_and_set()
    }
    fn max_value_bytes(&self) -> Option<usize> {
        (**self).max_value_bytes()
    }
    fn min_write_interval_ms(&self) -> u64 {
        (**self).min_write_interval_ms()
    }
    fn stores_records(&self) -> bool {
        (**self).stores_records()
    }
}

/// [`Saver::put_text`] after checking the value against [`Saver::max_value_bytes`].
pub(crate) async fn put_checked<S: Saver + ?Sized>(
    saver: &S,
    key: &str,
    value: String,
    summary: &CheckpointSummary,
    condition: Condition,
) -> Result<(), SaverError> {
    if let Some(max) = saver.max_value_bytes().filter(|max| value.len() > *max) {
        return Err(SaverError::TooLarge {
            key: key.to_owned(),
            bytes: value.len(),
            max,
        });
    }
    saver.put_text(key, value, summary, condition).await
}

/// A saver in memory, for tests and single-process apps. Stores JSON text, so what you `get` is a
/// fresh copy that later changes to your value cannot reach.
///
/// ```
/// use resumable_agent::{Checkpoint, MemorySaver, Saver};
/// let saver = MemorySaver::new();
/// let cp = Checkpoint::from_json(r#"{"messages":[],"iterations":0,"usage":{"inputTokens":0,"outputTokens":0}}"#)?;
/// pollster::block_on(saver.put("session-1", &cp))?;
/// assert_eq!(pollster::block_on(saver.get("session-1"))?, Some(cp));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct MemorySaver {
    entries: Mutex<BTreeMap<String, (String, CheckpointSummary)>>,
}

impl MemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (String, CheckpointSummary)>> {
        // No code path panics while holding the lock, so a poisoned lock still holds consistent data.
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Saver for MemorySaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        std::future::ready(Ok(self.entries().get(key).map(|(json, _)| json.clone())))
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let mut entries = self.entries();
        let current = entries.get(key).map(|(_, s)| s);
        let done = condition.check(key, current);
        if done.is_ok() {
            entries.insert(key.to_owned(), (value, summary.clone()));
        }
        std::future::ready(done)
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.entries().remove(key);
        std::future::ready(Ok(()))
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        let entries = self.entries();
        let out = keys.iter().map(|k| entries.get(k).map(|(v, _)| v.clone())).collect();
        std::future::ready(Ok(out))
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        let listed = self
            .entries()
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(key, (_, summary))| SavedCheckpoint {
                key: key.clone(),
                summary: summary.clone(),
            })
            .collect();
        std::future::ready(Ok(listed))
    }

    fn compare_and_set(&self) -> bool {
        true
    }
}

/// The text of a value read from a JS store (a string, or `None` for anything else), refused before it is
/// copied into WebAssembly memory when its length alone passes `max` (UTF-16 units: the UTF-8 bytes are at
/// least as many): the memory a huge value took would stay the instance's for its life.
///
/// # Errors
/// [`SaverError::Backend`] naming the key and the limit.
#[cfg(target_arch = "wasm32")]
pub fn js_text_within(v: &wasm_bindgen::JsValue, key: &str, max: usize) -> Result<Option<String>, SaverError> {
    if let Some(s) = wasm_bindgen::JsCast::dyn_ref::<js_sys::JsString>(v) {
        let units = s.length() as usize;
        if units > max {
            return Err(SaverError::Backend {
                message: format!(
                    "the value stored under {key:?} is at least {units} bytes; at most {max} are read (limits.maxCheckpointBytes): it was not loaded"
                ),
            });
        }
    }
    Ok(v.as_string())
}
