//! `KvSaver`: checkpoints in Cloudflare Workers KV, for Rust Workers (`worker` crate).

use std::future::Future;

use serde_json::Value;
use worker::kv::{KvError, KvStore};

use crate::checkpoint::CheckpointSummary;
use crate::platform::MaybeSend;
use crate::saver::SaverError;
use crate::saver::kv_store::{KvBackend, KvOptions, KvPage, KvStoreSaver};
use crate::saver::{Condition, SavedCheckpoint, Saver};

/// A [`Saver`] over a Workers KV namespace. Each checkpoint is one value (its JSON); its summary lives in
/// the key's metadata, so [`Saver::list`] reads no values. Keys over 512 bytes and values over 25 MiB are
/// refused before anything is written.
///
/// ```no_run
/// # async fn f(env: worker::Env) -> Result<(), Box<dyn std::error::Error>> {
/// use resumable_agent::{KvOptions, KvSaver};
/// let saver = KvSaver::new(env.kv("SESSIONS")?, KvOptions::with_prefix("session:").expiration_ttl(86_400))?;
/// # Ok(()) }
/// ```
pub struct KvSaver(KvStoreSaver<KvStore>);

impl KvSaver {
    /// A saver over `store` with `options` (prefix, expiration).
    ///
    /// # Errors
    /// [`SaverError::Option`] for options KV would refuse.
    pub fn new(store: KvStore, options: KvOptions) -> Result<Self, SaverError> {
        options.validate()?;
        Ok(KvSaver(KvStoreSaver {
            backend: store,
            options,
        }))
    }
}

fn backend(e: KvError) -> SaverError {
    let message = match e {
        KvError::JavaScript(v) => js_sys::Error::from(v).message().into(),
        other => other.to_string(),
    };
    SaverError::Backend { message }
}

impl KvBackend for KvStore {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move { self.get(key).text().await.map_err(backend) }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            let mut found = self.get_bulk(keys).text().await.map_err(backend)?;
            Ok(keys.iter().map(|k| found.remove(k).flatten()).collect())
        }
    }

    fn get_metadata(&self, key: &str) -> impl Future<Output = Result<Option<Option<Value>>, SaverError>> + MaybeSend {
        async move {
            let (value, metadata) = self.get(key).text_with_metadata::<Value>().await.map_err(backend)?;
            Ok(value.map(|_| metadata))
        }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        metadata: Value,
        ttl: Option<u64>,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move {
            let mut put = self
                .put(key, value)
                .map_err(backend)?
                .metadata(metadata)
                .map_err(backend)?;
            if let Some(ttl) = ttl {
                put = put.expiration_ttl(ttl);
            }
            put.execute().await.map_err(backend)
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move { KvStore::delete(self, key).await.map_err(backend) }
    }

    fn list_page(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<KvPage, SaverError>> + MaybeSend {
        let mut list = self.list().prefix(prefix.to_owned());
        if let Some(c) = cursor {
            list = list.cursor(c);
        }
        async move {
            let page = list.execute().await.map_err(backend)?;
            let cursor = page.cursor.filter(|c| !page.list_complete && !c.is_empty());
            Ok(KvPage {
                keys: page.keys.into_iter().map(|k| (k.name, k.metadata)).collect(),
                cursor,
            })
        }
    }
}

impl Saver for KvSaver {
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        self.0.get_many(keys)
    }

    fn min_write_interval_ms(&self) -> u64 {
        self.0.min_write_interval_ms()
    }

    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        self.0.get_text(key)
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.0.put_text(key, value, summary, condition)
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.0.delete(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        self.0.list(prefix)
    }
    fn max_value_bytes(&self) -> Option<usize> {
        self.0.max_value_bytes()
    }
}
