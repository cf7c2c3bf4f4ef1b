//! The Workers KV saver, shared by the Rust `KvSaver` and the JS `kvSaver`: limits checked before
//! writing, and the summary kept in a key's metadata so a listing reads no values. Each host only
//! supplies a [`KvBackend`] with the four raw operations.

use std::future::Future;

use serde_json::Value;

use crate::checkpoint::CheckpointSummary;
use crate::message::Usage;
use crate::platform::{MaybeSend, MaybeSync};
use crate::saver::SaverError;
use crate::saver::{Condition, SavedCheckpoint, Saver};

/// KV's key limit, in bytes.
pub const KV_MAX_KEY_BYTES: usize = 512;
/// KV's value limit, in bytes (25 MiB).
pub const KV_MAX_VALUE_BYTES: usize = 25 * 1024 * 1024;
/// KV's metadata limit, in bytes of JSON.
pub const KV_MAX_METADATA_BYTES: usize = 1024;
/// KV's shortest `expirationTtl`, in seconds.
pub const KV_MIN_TTL_SECONDS: u64 = 60;

/// Marks metadata written by earlier releases, so a listing skips keys other code put under the prefix.
const MARK: &str = "resumableAgent";
/// Marks the compact metadata this release writes.
const COMPACT_MARK: &str = "ra";
/// Keys a bulk read takes at most.
const KV_BULK_KEYS: usize = 100;
/// KV accepts one write per second to a key.
pub const KV_WRITE_INTERVAL_MS: u64 = 1000;

/// Options of a KV saver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KvOptions {
    /// Prepended to every key, e.g. `"sessions:"`; listing only sees keys under it.
    pub prefix: String,
    /// Seconds until a saved checkpoint expires (at least 60); `None` keeps it forever.
    pub expiration_ttl: Option<u64>,
}

impl KvOptions {
    /// Options with a key prefix.
    pub fn with_prefix(prefix: impl Into<String>) -> Self {
        KvOptions {
            prefix: prefix.into(),
            expiration_ttl: None,
        }
    }

    /// Sets the expiration.
    pub fn expiration_ttl(mut self, seconds: u64) -> Self {
        self.expiration_ttl = Some(seconds);
        self
    }

    /// Checks the options against KV's rules.
    ///
    /// # Errors
    /// [`SaverError::Option`] for a TTL under 60 seconds or a prefix that leaves no room for keys.
    pub fn validate(&self) -> Result<(), SaverError> {
        if let Some(ttl) = self.expiration_ttl.filter(|t| *t < KV_MIN_TTL_SECONDS) {
            return Err(SaverError::Option(format!(
                "expirationTtl: {ttl} seconds; Workers KV needs at least {KV_MIN_TTL_SECONDS}"
            )));
        }
        if self.prefix.len() >= KV_MAX_KEY_BYTES {
            return Err(SaverError::Option(format!(
                "prefix: {} bytes leaves no room for keys (KV keys are at most {KV_MAX_KEY_BYTES} bytes)",
                self.prefix.len()
            )));
        }
        Ok(())
    }

    /// The stored key for `key`, checked against KV's limits.
    pub(crate) fn full_key(&self, key: &str) -> Result<String, SaverError> {
        let full = format!("{}{key}", self.prefix);
        if key.is_empty() || full.len() > KV_MAX_KEY_BYTES || full == "." || full == ".." {
            return Err(SaverError::KeyLength {
                key: key.to_owned(),
                bytes: full.len(),
                max: KV_MAX_KEY_BYTES,
            });
        }
        Ok(full)
    }
}

/// The summary as KV metadata (its compact form, marked), within KV's 1024-byte limit (a long question is
/// shortened).
pub(crate) fn metadata(summary: &CheckpointSummary) -> Value {
    let mut s = summary.clone();
    s.label = s.label.map(|l| shorten(&l, 64));
    let question = s.question.take();
    let mut value: Value = serde_json::from_str(&s.to_stored()).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut value {
        m.insert(COMPACT_MARK.into(), Value::from(2));
    }
    if let Some(q) = question {
        let room = KV_MAX_METADATA_BYTES.saturating_sub(value.to_string().len() + 32);
        let mut question = q.clone();
        if crate::json::to_string(&q).map_or(usize::MAX, |s| s.len()) > room {
            question = shorten(&q, room / 6); // worst case: every char escaped as \uXXXX
            question.push('…');
        }
        if let Value::Object(m) = &mut value {
            m.insert("q".into(), question.into());
            m.insert("x".into(), true.into());
        }
    }
    value
}

fn shorten(s: &str, max_chars: usize) -> String {
    s.chars().take(max_chars).collect()
}

/// A listing entry from a key's name and metadata; `None` for keys this library did not write.
pub(crate) fn entry(options: &KvOptions, name: &str, metadata: Option<&Value>) -> Option<SavedCheckpoint> {
    let m = metadata?.as_object()?;
    let key = name.strip_prefix(options.prefix.as_str())?.to_owned();
    if m.contains_key(COMPACT_MARK) {
        let summary: CheckpointSummary = serde_json::from_str(&Value::Object(m.clone()).to_string()).ok()?;
        return Some(SavedCheckpoint { key, summary });
    }
    m.get(MARK)?;
    let u64_of = |k: &str| m.get(k).and_then(Value::as_u64);
    let summary = CheckpointSummary {
        run_id: m.get("runId").and_then(Value::as_str).map(str::to_owned),
        updated_at: u64_of("updatedAt"),
        iterations: u64_of("iterations")
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or_default(),
        usage: Usage {
            input_tokens: u64_of("inputTokens").unwrap_or_default(),
            output_tokens: u64_of("outputTokens").unwrap_or_default(),
        },
        interrupted: m.get("interrupted").and_then(Value::as_bool).unwrap_or_default(),
        question: m.get("question").and_then(Value::as_str).map(str::to_owned),
        message_count: u64_of("messageCount")
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or_default(),
        step: u64_of("step"),
        parent_step: u64_of("parentStep"),
        label: m.get("label").and_then(Value::as_str).map(str::to_owned),
    };
    Some(SavedCheckpoint { key, summary })
}

/// One page of a KV listing: `(name, metadata)` pairs and the cursor of the next page (`None`: last page).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct KvPage {
    /// The names listed and their metadata.
    pub keys: Vec<(String, Option<Value>)>,
    /// Where the next page starts.
    pub cursor: Option<String>,
}

impl KvPage {
    /// A page of `keys`, followed by the page at `cursor`.
    pub fn new(keys: Vec<(String, Option<Value>)>, cursor: Option<String>) -> Self {
        KvPage { keys, cursor }
    }
}

/// The raw operations of a KV namespace (Workers KV, or a store with the same model: values with metadata,
/// listings by prefix, no compare-and-set); everything else about saving — keys, limits, summaries in
/// metadata, KV's write rule — lives once in [`KvStoreSaver`]. The `kv` feature's `KvSaver`
/// and the npm package's `kvSaver` are this saver over their hosts' bindings.
pub trait KvBackend: MaybeSend + MaybeSync {
    /// The text stored under `key`.
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend;
    /// The texts of up to 100 keys in one bulk read (one operation of a Worker's budget); a backend without
    /// bulk reads reads them one by one.
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            let mut out = Vec::with_capacity(keys.len());
            for key in keys {
                out.push(self.get_text(key).await?);
            }
            Ok(out)
        }
    }
    /// The metadata stored with `key` (`Some(None)`: a value without metadata; `None`: nothing stored).
    fn get_metadata(&self, key: &str) -> impl Future<Output = Result<Option<Option<Value>>, SaverError>> + MaybeSend;
    /// Stores `value` with `metadata`, expiring after `ttl` seconds when given.
    fn put_text(
        &self,
        key: &str,
        value: String,
        metadata: Value,
        ttl: Option<u64>,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend;
    /// Removes `key`.
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend;
    /// One page of the names starting with `prefix`, from `cursor`.
    fn list_page(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<KvPage, SaverError>> + MaybeSend;
}

/// The KV saver, over any backend: limits checked before writing, summaries in metadata.
pub struct KvStoreSaver<B> {
    pub(crate) backend: B,
    pub(crate) options: KvOptions,
}

impl<B: KvBackend> KvStoreSaver<B> {
    /// A saver over `backend` with `options` (checked).
    ///
    /// # Errors
    /// [`SaverError::Option`] for a prefix or TTL KV refuses.
    pub fn new(backend: B, options: KvOptions) -> Result<Self, SaverError> {
        options.validate()?;
        Ok(KvStoreSaver { backend, options })
    }
}

/// Bounds a listing: KV pages hold up to 1000 keys, so this is a million keys.
const MAX_LIST_PAGES: usize = 1000;

impl<B: KvBackend> Saver for KvStoreSaver<B> {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move {
            let full = self.options.full_key(key)?;
            self.backend.get_text(&full).await
        }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let prepared = self.options.full_key(key).map(|full| (full, metadata(summary)));
        async move {
            let (full, metadata) = prepared?;
            if condition != Condition::Any {
                // KV cannot compare and set: this check and the write below are two operations, and KV
                // reads may be up to 60 s stale in other locations (see the README's saver table).
                let current = self
                    .backend
                    .get_metadata(&full)
                    .await?
                    .map(|m| entry(&self.options, &full, m.as_ref()).map(|e| e.summary));
                condition.check(key, current.map(Option::unwrap_or_default).as_ref())?;
            }
            self.backend
                .put_text(&full, value, metadata, self.options.expiration_ttl)
                .await
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move {
            let full = self.options.full_key(key)?;
            self.backend.delete(&full).await
        }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        let full_prefix = format!("{}{prefix}", self.options.prefix);
        async move {
            let mut out = Vec::new();
            let mut cursor = None;
            for _ in 0..MAX_LIST_PAGES {
                let page = self.backend.list_page(&full_prefix, cursor).await?;
                out.extend(
                    page.keys
                        .iter()
                        .filter_map(|(name, m)| entry(&self.options, name, m.as_ref())),
                );
                match page.cursor {
                    Some(next) => cursor = Some(next),
                    None => return Ok(out),
                }
            }
            Err(SaverError::Backend {
                message: format!("listing did not end after {MAX_LIST_PAGES} pages"),
            })
        }
    }

    fn max_value_bytes(&self) -> Option<usize> {
        Some(KV_MAX_VALUE_BYTES)
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            let mut out = Vec::with_capacity(keys.len());
            for chunk in keys.chunks(KV_BULK_KEYS) {
                let full: Vec<String> = chunk
                    .iter()
                    .map(|k| self.options.full_key(k))
                    .collect::<Result<_, _>>()?;
                out.extend(self.backend.get_many(&full).await?);
            }
            Ok(out)
        }
    }

    fn min_write_interval_ms(&self) -> u64 {
        KV_WRITE_INTERVAL_MS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(question: Option<&str>) -> CheckpointSummary {
        CheckpointSummary {
            run_id: Some("r".into()),
            updated_at: Some(1_700_000_000_000),
            iterations: 3,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
            },
            interrupted: question.is_some(),
            question: question.map(str::to_owned),
            message_count: 4,
            step: Some(7),
            parent_step: Some(5),
            label: Some("draft".into()),
        }
    }

    #[test]
    fn keys_are_checked_with_their_prefix() {
        let o = KvOptions::with_prefix("s:");
        assert_eq!(o.full_key("abc").unwrap(), "s:abc");
        let long = "k".repeat(511);
        assert_eq!(
            o.full_key(&long).unwrap_err().to_string(),
            format!("key {long:?} is 513 bytes (with its prefix); the store allows 1 to 512")
        );
        assert!(o.full_key("").is_err());
        assert!(KvOptions::default().full_key(&"k".repeat(512)).is_ok());
    }

    #[test]
    fn options_are_validated() {
        assert!(KvOptions::default().expiration_ttl(59).validate().is_err());
        assert!(KvOptions::default().expiration_ttl(60).validate().is_ok());
        assert!(KvOptions::with_prefix("p".repeat(512)).validate().is_err());
    }

    #[test]
    fn metadata_round_trips_and_stays_under_the_limit() {
        let o = KvOptions::with_prefix("s:");
        let s = summary(Some("Your deadline?"));
        let m = metadata(&s);
        assert_eq!(entry(&o, "s:k1", Some(&m)).unwrap().summary, s);
        assert_eq!(entry(&o, "s:k1", Some(&m)).unwrap().key, "k1");
        for q in [
            "x".repeat(5000),
            "\u{1}".repeat(3000),
            "é".repeat(3000),
            "\"".repeat(3000),
        ] {
            let m = metadata(&summary(Some(&q)));
            assert!(
                m.to_string().len() <= KV_MAX_METADATA_BYTES,
                "{} bytes",
                m.to_string().len()
            );
            assert!(m["q"].as_str().unwrap().ends_with('…'));
        }
    }

    #[test]
    fn foreign_keys_are_not_listed() {
        let o = KvOptions::with_prefix("s:");
        assert!(entry(&o, "s:x", None).is_none());
        assert!(entry(&o, "s:x", Some(&serde_json::json!({"other": 1}))).is_none());
        assert!(entry(&o, "t:x", Some(&metadata(&summary(None)))).is_none());
    }
}
