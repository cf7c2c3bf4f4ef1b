//! Savers for JS. `memorySaver()`, `kvSaver(...)` and `indexedDbSaver(...)` are validated once into a spec
//! (a JS object holding the store: a `Map`, the KV binding, the IndexedDB connection slot), from which each
//! operation builds the Rust saver — so the package's front holds no wasm memory between calls, and a
//! session uses the Rust saver directly. Any other object with get/put/delete(/list) is duck-typed.

use std::cell::RefCell;

use crate::saver::{ReadMax, one_by_one, text_within};
use std::future::Future;

use js_sys::{Array, Function, Map, Object, Promise};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::adapters::settle;
use super::convert::{
    agent_error, checkpoint_text, config_error, fields, get, integer_option, json_text, saver_error, set,
    string_option, to_js,
};
use super::glue::{error_message, freeze};
use crate::checkpoint::CheckpointSummary;
use crate::error::SaverError;
use crate::keys::Text;
use crate::platform::MaybeSend;
use crate::saver::Condition;
use crate::saver::kv_store::{KvBackend, KvOptions, KvPage, KvStoreSaver};
use crate::saver::{Durability, IndexedDbOptions, IndexedDbSaver, SavedCheckpoint, Saver};

#[wasm_bindgen]
extern "C" {
    /// A Workers KV namespace binding (`env.MY_KV`), or anything with the same methods.
    pub(crate) type KvNamespace;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn kv_get(this: &KvNamespace, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn kv_get_bulk(this: &KvNamespace, keys: &Array, kind: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = getWithMetadata)]
    fn kv_get_with_metadata(this: &KvNamespace, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = put)]
    fn kv_put(this: &KvNamespace, key: &str, value: &str, options: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = delete)]
    fn kv_delete(this: &KvNamespace, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = list)]
    fn kv_list(this: &KvNamespace, options: &JsValue) -> Result<JsValue, JsValue>;

    /// Any saver written in JS: `{ get(key), put(key, checkpoint), delete(key), list(prefix) }`.
    pub(crate) type SaverLike;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn saver_get(this: &SaverLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = put)]
    fn saver_put(this: &SaverLike, key: &str, checkpoint: &JsValue, condition: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = delete)]
    fn saver_delete(this: &SaverLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = list)]
    fn saver_list(this: &SaverLike, prefix: &str) -> Result<JsValue, JsValue>;
}

/// Checks that `value` has the named methods, so a wrong argument fails at once and clearly.
pub(crate) fn expect_methods(value: &JsValue, methods: &[&'static str], what: &str) -> Result<(), JsValue> {
    let missing: Vec<&str> = methods
        .iter()
        .copied()
        .filter(|m| !value.is_object() || !get(value, m).is_instance_of::<Function>())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(config_error(format!(
        "{what}: missing method(s) {}",
        missing.join(", ")
    )))
}

fn js_backend(e: &JsValue) -> SaverError {
    SaverError::Backend {
        message: error_message(e),
    }
}

// ---- the KV namespace as a KvBackend ----------------------------------------------------------------

#[derive(Deserialize)]
struct ListResult {
    keys: Vec<ListKey>,
    #[serde(default)]
    list_complete: bool,
    #[serde(default)]
    cursor: Option<String>,
}

#[derive(Deserialize)]
struct ListKey {
    name: String,
    #[serde(default)]
    metadata: Option<Value>,
}

/// A KV namespace binding and the read limit of its saver.
pub(crate) struct KvNs {
    ns: KvNamespace,
    max: ReadMax,
}

impl KvBackend for KvNs {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        let returned = self.ns.kv_get(key);
        async move {
            let v = settle(returned).await.map_err(|e| js_backend(&e))?;
            text_within(&v, key, self.max.get())
        }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        let array: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
        let returned = self.ns.kv_get_bulk(&array, "text");
        async move {
            // A binding with bulk reads answers a Map; a stand-in without them (`get` of an array) anything
            // else: then the keys are read one by one.
            let bulk = match returned {
                Ok(p) => settle(Ok(p)).await.ok().and_then(|v| v.dyn_into::<Map>().ok()),
                Err(_) => None,
            };
            match bulk {
                Some(map) => keys
                    .iter()
                    .map(|k| text_within(&map.get(&JsValue::from_str(k)), k, self.max.get()))
                    .collect(),
                None => one_by_one(keys, |k| self.get_text(k)).await,
            }
        }
    }

    fn get_metadata(&self, key: &str) -> impl Future<Output = Result<Option<Option<Value>>, SaverError>> + MaybeSend {
        let returned = self.ns.kv_get_with_metadata(key);
        async move {
            let v = settle(returned).await.map_err(|e| js_backend(&e))?;
            if get(&v, "value").is_null() || get(&v, "value").is_undefined() {
                return Ok(None);
            }
            let metadata = get(&v, "metadata");
            Ok(Some(
                json_text(&metadata)
                    .ok()
                    .flatten()
                    .and_then(|t| serde_json::from_str(&t).ok()),
            ))
        }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        metadata: Value,
        ttl: Option<u64>,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let options = Object::new();
        set(&options, "metadata", &to_js(&metadata));
        if let Some(ttl) = ttl {
            set(&options, "expirationTtl", &JsValue::from_f64(ttl as f64));
        }
        let returned = self.ns.kv_put(key, &value, &options);
        async move { settle(returned).await.map(|_| ()).map_err(|e| js_backend(&e)) }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let returned = self.ns.kv_delete(key);
        async move { settle(returned).await.map(|_| ()).map_err(|e| js_backend(&e)) }
    }

    fn list_page(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<KvPage, SaverError>> + MaybeSend {
        let options = Object::new();
        set(&options, "prefix", &prefix.into());
        if let Some(c) = &cursor {
            set(&options, "cursor", &c.into());
        }
        let returned = self.ns.kv_list(&options);
        async move {
            let v = settle(returned).await.map_err(|e| js_backend(&e))?;
            let text = json_text(&v).ok().flatten().unwrap_or_default();
            let page: ListResult = serde_json::from_str(&text).map_err(|e| SaverError::Backend {
                message: format!("unexpected KV list result: {e}"),
            })?;
            let cursor = page.cursor.filter(|c| !page.list_complete && !c.is_empty());
            Ok(KvPage {
                keys: page.keys.into_iter().map(|k| (k.name, k.metadata)).collect(),
                cursor,
            })
        }
    }
}

// ---- memorySaver(): a JS Map of [checkpoint JSON, summary JSON] ----------------------------------------

/// The memory saver over a JS `Map`, so its contents are JS strings the garbage collector manages.
pub(crate) struct MapSaver {
    map: Map,
    max: ReadMax,
}

impl MapSaver {
    /// The value under `key`, within the read limit.
    fn value(&self, key: &str) -> Result<Option<String>, SaverError> {
        let v = self.map.get(&key.into());
        if v.is_undefined() {
            return Ok(None);
        }
        text_within(&Array::from(&v).get(0), key, self.max.get())
    }

    fn entry(&self, key: &str) -> Option<(String, String)> {
        let v = self.map.get(&key.into());
        if v.is_undefined() {
            return None;
        }
        let pair = Array::from(&v);
        Some((pair.get(0).as_string()?, pair.get(1).as_string().unwrap_or_default()))
    }
}

impl Saver for MapSaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        std::future::ready(self.value(key))
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        // One synchronous check-and-write: nothing else runs in between.
        let current = self
            .entry(key)
            .map(|(_, s)| serde_json::from_str::<CheckpointSummary>(&s).unwrap_or_default());
        let done = if condition.allows(current.as_ref()) {
            let summary = summary.to_stored();
            self.map.set(&key.into(), &Array::of2(&value.into(), &summary.into()));
            Ok(())
        } else {
            Err(condition.conflict(key, current.as_ref()))
        };
        std::future::ready(done)
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.map.delete(&key.into());
        std::future::ready(Ok(()))
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        std::future::ready(keys.iter().map(|k| self.value(k)).collect())
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        let mut keys: Vec<String> = Array::from(&self.map.keys())
            .iter()
            .filter_map(|k| k.as_string())
            .filter(|k| k.starts_with(prefix))
            .collect();
        keys.sort();
        let listed = keys
            .into_iter()
            .filter_map(|key| {
                let (_, summary) = self.entry(&key)?;
                let summary: CheckpointSummary = serde_json::from_str(&summary).ok()?;
                Some(SavedCheckpoint { key, summary })
            })
            .collect();
        std::future::ready(Ok(listed))
    }

    fn compare_and_set(&self) -> bool {
        true
    }
}

// ---- specs ---------------------------------------------------------------------------------------------

/// `saverSpec(kind, a, b)`: checks a built-in saver's options and returns its spec.
/// `memory` (no options), `kv` (namespace, options), `indexeddb` (options).
#[wasm_bindgen(js_name = saverSpec)]
pub fn saver_spec(kind: &str, a: JsValue, b: JsValue) -> Result<JsValue, JsValue> {
    let spec = match kind {
        "memory" => fields(&[("kind", kind.into()), ("map", Map::new().into())]),
        "text" => {
            expect_methods(&a, &["getText", "putText", "delete", "list"], "a text store")?;
            fields(&[("kind", kind.into()), ("store", a)])
        }
        "kv" => {
            expect_methods(
                &a,
                &["get", "put", "delete", "list"],
                "kvSaver(namespace): expected a KV namespace binding such as env.SESSIONS",
            )?;
            let options = kv_options(&b)?;
            fields(&[
                ("kind", kind.into()),
                ("namespace", a),
                ("prefix", options.prefix.into()),
                (
                    "expirationTtl",
                    options
                        .expiration_ttl
                        .map_or(JsValue::UNDEFINED, |t| JsValue::from_f64(t as f64)),
                ),
            ])
        }
        "indexeddb" => {
            let options = indexed_db_options(&a)?;
            let durability = match options.durability {
                Durability::Relaxed => "relaxed",
                Durability::Default => "default",
                _ => "strict",
            };
            fields(&[
                ("kind", kind.into()),
                ("dbName", options.db_name.into()),
                ("storeName", options.store_name.into()),
                ("durability", durability.into()),
                ("slot", Object::new().into()),
            ])
        }
        other => return Err(config_error(format!("unknown saver {other:?}"))),
    };
    Ok(freeze(&spec))
}

fn kv_options(options: &JsValue) -> Result<KvOptions, JsValue> {
    let mut opts = KvOptions::default();
    if let Some(prefix) = string_option(options, "prefix", "kvSaver options")? {
        opts.prefix = prefix;
    }
    opts.expiration_ttl = integer_option(options, "expirationTtl", "kvSaver options", 0)?;
    opts.validate().map_err(saver_error)?;
    Ok(opts)
}

fn indexed_db_options(options: &JsValue) -> Result<IndexedDbOptions, JsValue> {
    let owner = "indexedDbSaver options";
    let mut opts = IndexedDbOptions::default();
    if let Some(name) = string_option(options, "dbName", owner)? {
        opts.db_name = name;
    }
    if let Some(name) = string_option(options, "storeName", owner)? {
        opts.store_name = name;
    }
    opts.durability = match string_option(options, "durability", owner)?.as_deref() {
        None | Some("strict") => Durability::Strict,
        Some("relaxed") => Durability::Relaxed,
        Some("default") => Durability::Default,
        Some(_) => {
            return Err(config_error(format!(
                r#"{owner}.durability: expected "strict", "relaxed" or "default""#
            )));
        }
    };
    if opts.db_name.is_empty() || opts.store_name.is_empty() {
        return Err(saver_error(SaverError::Option(
            "dbName and storeName must be non-empty".into(),
        )));
    }
    Ok(opts)
}

/// A saver for one call: built-in (from its spec) or written in JS.
pub(crate) enum AnySaver {
    Memory(MapSaver),
    Kv(KvStoreSaver<KvNs>),
    IndexedDb(IndexedDbSaver),
    /// A store written in JS at the text level (the file and Durable Object savers).
    Text(JsTextStore),
    Js(JsSaver),
}

impl AnySaver {
    /// The saver a spec describes; a value that is not a spec must be a saver written in JS.
    pub(crate) fn from_js(spec: &JsValue, object: &JsValue) -> Result<Self, JsValue> {
        let text = |k: &'static str| get(spec, k).as_string().unwrap_or_default();
        match get(spec, "kind").as_string().as_deref() {
            Some("memory") => Ok(AnySaver::Memory(MapSaver {
                map: get(spec, "map").unchecked_into(),
                max: ReadMax::default(),
            })),
            Some("kv") => Ok(AnySaver::Kv(KvStoreSaver {
                backend: KvNs {
                    ns: get(spec, "namespace").unchecked_into(),
                    max: ReadMax::default(),
                },
                options: KvOptions {
                    prefix: text("prefix"),
                    expiration_ttl: get(spec, "expirationTtl").as_f64().map(|t| t as u64),
                },
            })),
            Some("indexeddb") => {
                let mut options = IndexedDbOptions::new(text("dbName"), text("storeName"));
                options.durability = match text("durability").as_str() {
                    "relaxed" => Durability::Relaxed,
                    "default" => Durability::Default,
                    _ => Durability::Strict,
                };
                IndexedDbSaver::with_slot(options, get(spec, "slot").unchecked_into())
                    .map(AnySaver::IndexedDb)
                    .map_err(saver_error)
            }
            Some("text") => Ok(AnySaver::Text(JsTextStore::new(get(spec, "store")))),
            _ => JsSaver::new(object.clone()).map(AnySaver::Js),
        }
    }

    /// Refuses, before copying it into WebAssembly memory, a stored value longer than `max` (the agent's
    /// `limits.maxCheckpointBytes`; a record is never larger than the checkpoint it holds).
    pub(crate) fn read_at_most(self, max: usize) -> Self {
        let cell = match &self {
            AnySaver::Memory(s) => &s.max,
            AnySaver::Kv(s) => &s.backend.max,
            AnySaver::IndexedDb(s) => s.read_max(),
            AnySaver::Text(s) => &s.max,
            AnySaver::Js(s) => &s.max,
        };
        cell.set(max);
        self
    }

    /// What the saver written in JS threw last (the `cause` of a `SaverError`).
    pub(crate) fn cause(&self) -> Option<JsValue> {
        match self {
            AnySaver::Js(s) => s.last_error.borrow_mut().take(),
            AnySaver::Text(s) => s.last_error.borrow_mut().take(),
            _ => None,
        }
    }
}

/// Forwards to the saver a spec built.
macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnySaver::Memory($s) => $e,
            AnySaver::Kv($s) => $e,
            AnySaver::IndexedDb($s) => $e,
            AnySaver::Text($s) => $e,
            AnySaver::Js($s) => $e,
        }
    };
}

impl Saver for AnySaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move { each!(self, s => s.get_text(key).await) }
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move { each!(self, s => s.put_text(key, value, summary, condition).await) }
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move { each!(self, s => s.delete(key).await) }
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move { each!(self, s => s.list(prefix).await) }
    }
    fn compare_and_set(&self) -> bool {
        each!(self, s => s.compare_and_set())
    }
    fn max_value_bytes(&self) -> Option<usize> {
        each!(self, s => s.max_value_bytes())
    }
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move { each!(self, s => s.get_many(keys).await) }
    }
    fn min_write_interval_ms(&self) -> u64 {
        each!(self, s => s.min_write_interval_ms())
    }
    fn stores_records(&self) -> bool {
        each!(self, s => s.stores_records())
    }
}

/// A saver whose every operation fails with [`SaverError::Timeout`] after `ms` (a session's `timeoutMs`): a
/// store that never answers cannot hang a session. An operation that timed out may still complete later.
pub(crate) struct Timed<'a> {
    pub(crate) inner: &'a AnySaver,
    /// `None`: no time limit.
    pub(crate) ms: Option<u64>,
}

impl Timed<'_> {
    async fn within<T>(
        &self,
        op: &str,
        key: &str,
        work: impl Future<Output = Result<T, SaverError>>,
    ) -> Result<T, SaverError> {
        let Some(ms) = self.ms else {
            return work.await;
        };
        let deadline = js_sys::Date::now() + ms as f64;
        let pair = super::glue::timer(ms as f64);
        let mut elapsed = wasm_bindgen_futures::JsFuture::from(Promise::from(pair.get(0)));
        let cancel = Function::from(pair.get(1));
        let mut work = std::pin::pin!(work);
        // The store's promises are raced in JS against the same deadline (see `settle`), so nothing the work
        // awaits is left pending in wasm memory when it is given up.
        let out = std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(done) =
                super::adapters::with_deadline(Some(deadline), || work.as_mut().poll(cx))
            {
                return std::task::Poll::Ready(Some(done));
            }
            if std::pin::Pin::new(&mut elapsed).poll(cx).is_ready() {
                return std::task::Poll::Ready(None);
            }
            std::task::Poll::Pending
        })
        .await;
        let _ = cancel.call0(&JsValue::UNDEFINED);
        let timeout = || SaverError::Timeout {
            op: op.to_owned(),
            key: key.to_owned(),
            ms,
        };
        match out {
            Some(Err(_)) if js_sys::Date::now() >= deadline => Err(timeout()),
            Some(done) => done,
            None => Err(timeout()),
        }
    }
}

impl Saver for Timed<'_> {
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
    fn compare_and_set(&self) -> bool {
        self.inner.compare_and_set()
    }
    fn max_value_bytes(&self) -> Option<usize> {
        self.inner.max_value_bytes()
    }
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        let first = keys.first().cloned().unwrap_or_default();
        async move { self.within("get", &first, self.inner.get_many(keys)).await }
    }
    fn min_write_interval_ms(&self) -> u64 {
        self.inner.min_write_interval_ms()
    }
    fn stores_records(&self) -> bool {
        self.inner.stores_records()
    }
}

/// `saverAbout(spec)`: `{ compareAndSet, maxValueBytes? }` of a built-in saver.
#[wasm_bindgen(js_name = saverAbout)]
pub fn saver_about(spec: JsValue) -> Result<JsValue, JsValue> {
    let saver = AnySaver::from_js(&spec, &JsValue::UNDEFINED)?;
    Ok(fields(&[
        ("compareAndSet", saver.compare_and_set().into()),
        (
            "maxValueBytes",
            saver
                .max_value_bytes()
                .map_or(JsValue::UNDEFINED, |n| JsValue::from_f64(n as f64)),
        ),
    ]))
}

/// True for a checkpoint a session stored whole with its log member (`{"log":…, …}`).
fn is_log_record(text: &str) -> bool {
    text.starts_with("{\"log\":")
}

/// A put's condition from JS: `undefined`, `{ ifAbsent: true }` or `{ ifStep: n }`.
pub(crate) fn condition_of(value: &JsValue) -> Result<Condition, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(Condition::Any);
    }
    if get(value, "ifAbsent").as_bool() == Some(true) {
        return Ok(Condition::Absent);
    }
    match get(value, "ifStep").as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 => Ok(Condition::Step(n as u64)),
        _ => Err(config_error(
            "saver.put(key, checkpoint, condition): condition must be { ifAbsent: true } or { ifStep: n }".into(),
        )),
    }
}

/// `saverCall(spec, op, key, value, condition)`: one operation of a built-in saver (`get`, `put`, `delete`,
/// `exists`, `list`).
#[wasm_bindgen(js_name = saverCall)]
pub fn saver_call(spec: JsValue, op: &str, key: JsValue, value: JsValue, condition: JsValue) -> Promise {
    let op = op.to_owned();
    future_to_promise(async move {
        let saver = AnySaver::from_js(&spec, &JsValue::UNDEFINED)?;
        let key_of = |what: &str| {
            key.as_string().ok_or_else(|| {
                config_error(format!(
                    "saver.{what}(key): expected a string key, got {}",
                    super::glue::describe(&key)
                ))
            })
        };
        match op.as_str() {
            "get" => {
                let k = key_of("get")?;
                let Some(text) = saver.get_text(&k).await.map_err(saver_error)? else {
                    return Ok(JsValue::NULL);
                };
                match crate::keys::read_text(&text, &crate::limits::Limits::default()) {
                    // A sealed checkpoint is kept and handed back as it is: only its agent can open it. So is
                    // a session step kept whole (its `log` member with it).
                    Text::Sealed(_) => Ok(parse_js(&JsValue::from_str(&text)).unwrap_or(JsValue::NULL)),
                    Text::Plain(Ok(_)) if is_log_record(&text) => {
                        Ok(parse_js(&JsValue::from_str(&text)).unwrap_or(JsValue::NULL))
                    }
                    Text::Plain(Ok(cp)) => Ok(to_js(&cp)),
                    Text::Plain(Err(_)) if crate::session::is_session_value(&text) => {
                        Err(saver_error(SaverError::NotCheckpoint { key: k }))
                    }
                    Text::Plain(Err(source)) => Err(saver_error(SaverError::Corrupt { key: k, source })),
                }
            }
            "put" => {
                let k = key_of("put")?;
                let condition = condition_of(&condition)?;
                let max = crate::limits::DEFAULT_MAX_CHECKPOINT_BYTES;
                let (_, text) = checkpoint_text(&value, max).map_err(|e| agent_error(e, None))?;
                match crate::keys::read_text(&text, &crate::limits::Limits::default()) {
                    Text::Sealed(_) => {
                        crate::saver::put_checked(&saver, &k, text, &CheckpointSummary::default(), condition)
                            .await
                            .map_err(saver_error)?;
                    }
                    Text::Plain(cp) => {
                        let cp = cp.map_err(|e| agent_error(e.into(), None))?;
                        if is_log_record(&text) {
                            // A session's step kept whole: its `log` member goes with it.
                            crate::saver::put_checked(&saver, &k, text, &cp.summary(), condition)
                                .await
                                .map_err(saver_error)?;
                        } else {
                            saver.put_if(&k, &cp, condition).await.map_err(saver_error)?;
                        }
                    }
                }
                Ok(JsValue::UNDEFINED)
            }
            "delete" => {
                saver.delete(&key_of("delete")?).await.map_err(saver_error)?;
                Ok(JsValue::UNDEFINED)
            }
            "exists" => Ok(saver.exists(&key_of("exists")?).await.map_err(saver_error)?.into()),
            "list" => {
                let prefix = if key.is_undefined() || key.is_null() {
                    String::new()
                } else {
                    key_of("list")?
                };
                Ok(to_js(&saver.list(&prefix).await.map_err(saver_error)?))
            }
            other => Err(config_error(format!("unknown saver operation {other:?}"))),
        }
    })
}

// ---- any JS saver as a core Saver -------------------------------------------------------------------

/// A JS saver object used by a session. Keeps what it threw, to hand it back as the error's `cause`.
pub(crate) struct JsSaver {
    object: SaverLike,
    pub(crate) last_error: RefCell<Option<JsValue>>,
    max: ReadMax,
}

impl JsSaver {
    pub(crate) fn new(object: JsValue) -> Result<Self, JsValue> {
        expect_methods(
            &object,
            &["get", "put", "delete"],
            "session(saver, id): expected a saver such as memorySaver() or kvSaver(env.KV)",
        )?;
        Ok(JsSaver {
            object: object.unchecked_into(),
            last_error: RefCell::new(None),
            max: ReadMax::default(),
        })
    }

    fn failed(&self, e: JsValue) -> SaverError {
        let error = js_backend(&e);
        *self.last_error.borrow_mut() = Some(e);
        error
    }
}

/// The JS form of a condition: `undefined`, `{ ifAbsent: true }` or `{ ifStep: n }`.
fn condition_js(condition: Condition) -> JsValue {
    match condition {
        Condition::Any => JsValue::UNDEFINED,
        Condition::Absent => fields(&[("ifAbsent", JsValue::TRUE)]),
        Condition::Step(n) => fields(&[("ifStep", JsValue::from_f64(n as f64))]),
    }
}

/// A rejection from a JS store: `code` `CONFLICT`, `KEY_LENGTH` or `TOO_LARGE` (with `bytes`, `max`) is
/// that error; anything else a backend failure.
fn rejected(e: &JsValue, key: &str, condition: Condition) -> SaverError {
    let size = |k: &'static str| get(e, k).as_f64().map_or(0, |n| n as usize);
    match get(e, "code").as_string().as_deref() {
        Some("CONFLICT") => condition.conflict(key, None),
        Some("KEY_LENGTH") => SaverError::KeyLength {
            key: key.to_owned(),
            bytes: size("bytes"),
            max: size("max"),
        },
        Some("TOO_LARGE") => SaverError::TooLarge {
            key: key.to_owned(),
            bytes: size("bytes"),
            max: size("max"),
        },
        _ => js_backend(e),
    }
}

impl Saver for JsSaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        let returned = self.object.saver_get(key);
        async move {
            let v = settle(returned).await.map_err(|e| self.failed(e))?;
            if v.is_null() || v.is_undefined() {
                return Ok(None);
            }
            if let Some(text) = text_within(&v, key, self.max.get())? {
                return Ok(Some(text));
            }
            json_text(&v)
                .map_err(|message| SaverError::Backend { message })
                .map(|t| t.filter(|t| t != "null"))
        }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let cas = get(&self.object, "compareAndSet").as_bool() == Some(true);
        async move {
            if condition != Condition::Any && !cas {
                // Not atomic: a saver without compareAndSet is checked, then written. A sealed checkpoint's
                // step cannot be read here, so only its presence is checked.
                let stored = self.get_text(key).await?;
                let read = stored
                    .as_deref()
                    .map(|t| crate::keys::read_text(t, &crate::limits::Limits::default()));
                let sealed = matches!(read, Some(Text::Sealed(_)));
                let current = read.map(|r| match r {
                    Text::Plain(Ok(c)) => c.summary(),
                    _ => CheckpointSummary::default(),
                });
                let unknown_step = sealed && matches!(condition, Condition::Step(_));
                if !unknown_step && !condition.allows(current.as_ref()) {
                    return Err(condition.conflict(key, current.as_ref()));
                }
            }
            let _ = summary;
            let checkpoint = parse_js(&JsValue::from_str(&value)).map_err(|e| js_backend(&e))?;
            let returned = self.object.saver_put(
                key,
                &checkpoint,
                &condition_js(if cas { condition } else { Condition::Any }),
            );
            settle(returned).await.map(|_| ()).map_err(|e| {
                let error = rejected(&e, key, condition);
                *self.last_error.borrow_mut() = Some(e);
                error
            })
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let returned = self.object.saver_delete(key);
        async move { settle(returned).await.map(|_| ()).map_err(|e| self.failed(e)) }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        let returned = self.object.saver_list(prefix);
        async move {
            let v = settle(returned).await.map_err(|e| self.failed(e))?;
            let text = json_text(&v).ok().flatten().unwrap_or_default();
            serde_json::from_str(&text).map_err(|e| SaverError::Backend {
                message: format!("unexpected list result: {e}"),
            })
        }
    }

    fn compare_and_set(&self) -> bool {
        get(&self.object, "compareAndSet").as_bool() == Some(true)
    }

    fn stores_records(&self) -> bool {
        // It stores checkpoint objects, and lists summaries it makes of them.
        false
    }
}

// ---- a store written in JS at the text level -----------------------------------------------------------

#[wasm_bindgen]
extern "C" {
    /// `{ getText(key), putText(key, value, summary, condition), delete(key), list(prefix), compareAndSet,
    /// maxValueBytes? }`: the file saver (Node) and the Durable Object saver (Workers).
    pub(crate) type TextStoreLike;
    #[wasm_bindgen(method, catch, js_name = getText)]
    fn get_text_js(this: &TextStoreLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = putText)]
    fn put_text_js(
        this: &TextStoreLike,
        key: &str,
        value: &str,
        summary: &str,
        condition: &JsValue,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = delete)]
    fn delete_js(this: &TextStoreLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = list)]
    fn list_js(this: &TextStoreLike, prefix: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = getMany)]
    fn get_many_js(this: &TextStoreLike, keys: &Array) -> Result<JsValue, JsValue>;

    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn parse_js(text: &JsValue) -> Result<JsValue, JsValue>;
}

/// A text store written in JS, used as a [`Saver`].
pub(crate) struct JsTextStore {
    store: TextStoreLike,
    pub(crate) last_error: RefCell<Option<JsValue>>,
    max: ReadMax,
}

impl JsTextStore {
    fn new(store: JsValue) -> Self {
        JsTextStore {
            store: store.unchecked_into(),
            last_error: RefCell::new(None),
            max: ReadMax::default(),
        }
    }

    fn failed(&self, e: JsValue, key: &str, condition: Condition) -> SaverError {
        let error = rejected(&e, key, condition);
        *self.last_error.borrow_mut() = Some(e);
        error
    }
}

#[derive(Deserialize)]
struct TextListed {
    key: String,
    summary: String,
}

impl Saver for JsTextStore {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        let returned = self.store.get_text_js(key);
        async move {
            let v = settle(returned)
                .await
                .map_err(|e| self.failed(e, key, Condition::Any))?;
            text_within(&v, key, self.max.get())
        }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let summary = summary.to_stored();
        let returned = self.store.put_text_js(key, &value, &summary, &condition_js(condition));
        async move {
            settle(returned)
                .await
                .map(|_| ())
                .map_err(|e| self.failed(e, key, condition))
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let returned = self.store.delete_js(key);
        async move {
            settle(returned)
                .await
                .map(|_| ())
                .map_err(|e| self.failed(e, key, Condition::Any))
        }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        let returned = self.store.list_js(prefix);
        async move {
            let v = settle(returned)
                .await
                .map_err(|e| self.failed(e, prefix, Condition::Any))?;
            let text = json_text(&v).ok().flatten().unwrap_or_default();
            let listed: Vec<TextListed> = serde_json::from_str(&text).map_err(|e| SaverError::Backend {
                message: format!("unexpected list result: {e}"),
            })?;
            Ok(listed
                .into_iter()
                .filter_map(|l| {
                    Some(SavedCheckpoint {
                        key: l.key,
                        summary: serde_json::from_str(&l.summary).ok()?,
                    })
                })
                .collect())
        }
    }

    fn compare_and_set(&self) -> bool {
        get(&self.store, "compareAndSet").as_bool() == Some(true)
    }

    fn max_value_bytes(&self) -> Option<usize> {
        get(&self.store, "maxValueBytes").as_f64().map(|n| n as usize)
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        // `getMany(keys)` is optional: a store that has it reads a session's records in one call.
        let has = get(&self.store, "getMany").is_function();
        let returned = has.then(|| {
            self.store
                .get_many_js(&keys.iter().map(|k| JsValue::from_str(k)).collect())
        });
        async move {
            match returned {
                Some(r) => {
                    let v = settle(r)
                        .await
                        .map_err(|e| self.failed(e, keys.first().map_or("", String::as_str), Condition::Any))?;
                    let array = Array::from(&v);
                    if array.length() as usize != keys.len() {
                        return Err(SaverError::Backend {
                            message: format!(
                                "getMany(keys) answered {} values for {} keys",
                                array.length(),
                                keys.len()
                            ),
                        });
                    }
                    let max = self.max.get();
                    array.iter().zip(keys).map(|(v, k)| text_within(&v, k, max)).collect()
                }
                None => one_by_one(keys, |k| self.get_text(k)).await,
            }
        }
    }
}
