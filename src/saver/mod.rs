//! Savers store checkpoints by key. They only store: the run never depends on what a saver does.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::checkpoint::{Checkpoint, CheckpointSummary};
use crate::error::SaverError;
use crate::platform::{MaybeSend, MaybeSync};

// Used by the `kv` and `js` features; compiled (and unit-tested) everywhere.
#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
mod indexeddb;
#[cfg(all(target_arch = "wasm32", feature = "kv"))]
mod kv;
#[cfg_attr(
    not(all(target_arch = "wasm32", any(feature = "kv", feature = "js"))),
    allow(dead_code)
)]
pub(crate) mod kv_store;

#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
pub use indexeddb::{Durability, IndexedDbOptions, IndexedDbSaver};
#[cfg(all(target_arch = "wasm32", feature = "kv"))]
pub use kv::KvSaver;
pub use kv_store::KvOptions;

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
        };
        SavedCheckpoint { key: f.key, summary }
    }
}

/// Stores checkpoints by key: memory, Workers KV, IndexedDB, or your own.
///
/// `put` replaces the whole value at once or not at all; `list` returns summaries so a listing never
/// loads whole conversations.
pub trait Saver: MaybeSend + MaybeSync {
    /// The checkpoint stored under `key`, if any.
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Checkpoint>, SaverError>> + MaybeSend;
    /// Stores `checkpoint` under `key`, replacing what was there.
    fn put(&self, key: &str, checkpoint: &Checkpoint) -> impl Future<Output = Result<(), SaverError>> + MaybeSend;
    /// Removes `key`; removing a missing key is not an error.
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend;
    /// Every stored checkpoint whose key starts with `prefix`, in key order.
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend;
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
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Checkpoint>, SaverError>> + MaybeSend {
        let found = self.entries().get(key).map(|(json, _)| {
            Checkpoint::from_json(json).map_err(|source| SaverError::Corrupt {
                key: key.to_owned(),
                source,
            })
        });
        std::future::ready(found.transpose())
    }

    fn put(&self, key: &str, checkpoint: &Checkpoint) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.entries()
            .insert(key.to_owned(), (checkpoint.to_json(), checkpoint.summary()));
        std::future::ready(Ok(()))
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.entries().remove(key);
        std::future::ready(Ok(()))
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
}
