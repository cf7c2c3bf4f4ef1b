//! Savers for JS. `kvSaver(...)` and `indexedDbSaver(...)` are the core's savers over a JS binding, their
//! options read once into a spec (a JS object holding the binding or the IndexedDB connection slot);
//! `memorySaver()`, `fileSaver()` and `durableObjectSaver()` are text stores written in JS. Any other object
//! with get/put/delete(/list) is a saver of checkpoint objects. Each operation builds the Rust saver from its
//! spec, so the package's front holds no wasm memory between calls.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Array, Map, Object, Promise};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use super::convert::{
    agent_error, checkpoint_text, config_error, fields, get, json_text, parse_json, saver_error, to_js,
};
use super::glue::{describe, error_message, is_thenable, race};
use crate::{
    CheckpointSummary, Condition, Durability, DynSaver, IndexedDbOptions, IndexedDbSaver, KvBackend, KvOptions, KvPage,
    KvStoreSaver, SavedCheckpoint, Saver, SaverError, Stored, js_text_within,
};

/// What a JS store's method returned, settled: a plain value at once, a promise raced against `ms` in JS (so
/// it settles, and nothing awaiting it stays in wasm memory, even when the store never answers).
async fn settle(returned: Result<JsValue, JsValue>, ms: Option<u64>) -> Result<JsValue, JsValue> {
    let returned = returned?;
    if !is_thenable(&returned) {
        return Ok(returned);
    }
    JsFuture::from(race(&returned, ms.map(|ms| ms as f64))).await
}

/// A rejection from a JS store: `code` `CONFLICT`, `KEY_LENGTH`, `TOO_LARGE` (with `bytes`, `max`) or
/// `TIMEOUT` is that error; anything else a backend failure.
fn rejected(e: &JsValue, key: &str, condition: Condition, ms: Option<u64>) -> SaverError {
    let size = |k: &'static str| get(e, k).as_f64().map_or(0, |n| n as usize);
    let key = key.to_owned();
    match get(e, "code").as_string().as_deref() {
        Some("CONFLICT") => SaverError::Conflict {
            key,
            expected: match condition {
                Condition::Step(n) => Some(n),
                _ => None,
            },
            found: None,
        },
        Some("KEY_LENGTH") => SaverError::KeyLength {
            key,
            bytes: size("bytes"),
            max: size("max"),
        },
        Some("TOO_LARGE") => SaverError::TooLarge {
            key,
            bytes: size("bytes"),
            max: size("max"),
        },
        Some("TIMEOUT") => SaverError::Timeout {
            op: "call".into(),
            key,
            ms: ms.unwrap_or(0),
        },
        _ => SaverError::Backend {
            message: error_message(e),
        },
    }
}

/// What every JS-backed saver shares: the read limit, the time limit, and what the store threw last.
#[derive(Clone)]
struct Js {
    max: usize,
    ms: Option<u64>,
    thrown: Rc<RefCell<Option<JsValue>>>,
}

impl Js {
    async fn settle(
        &self,
        returned: Result<JsValue, JsValue>,
        key: &str,
        condition: Condition,
    ) -> Result<JsValue, SaverError> {
        settle(returned, self.ms).await.map_err(|e| {
            let error = rejected(&e, key, condition, self.ms);
            *self.thrown.borrow_mut() = Some(e);
            error
        })
    }
}

// ---- a KV namespace binding (`env.KV`) as a KvBackend ---------------------------------------------------

#[wasm_bindgen]
extern "C" {
    /// A Workers KV namespace binding (`env.MY_KV`), or anything with the same methods.
    type KvNamespace;
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
}

struct KvNs {
    ns: KvNamespace,
    js: Js,
}

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

impl KvBackend for KvNs {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> {
        let returned = self.ns.kv_get(key);
        async move { js_text_within(&self.js.settle(returned, key, Condition::Any).await?, key, self.js.max) }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> {
        let array: Array = keys.iter().map(|k| JsValue::from_str(k)).collect();
        let returned = self.ns.kv_get_bulk(&array, "text");
        async move {
            // A binding with bulk reads answers a Map; a stand-in without them (`get` of an array) anything
            // else: then the keys are read one by one.
            let bulk = match returned {
                Ok(p) => settle(Ok(p), self.js.ms)
                    .await
                    .ok()
                    .and_then(|v| v.dyn_into::<Map>().ok()),
                Err(_) => None,
            };
            let mut out = Vec::with_capacity(keys.len());
            for k in keys {
                out.push(match &bulk {
                    Some(map) => js_text_within(&map.get(&JsValue::from_str(k)), k, self.js.max)?,
                    None => self.get_text(k).await?,
                });
            }
            Ok(out)
        }
    }

    fn get_metadata(&self, key: &str) -> impl Future<Output = Result<Option<Option<Value>>, SaverError>> {
        let returned = self.ns.kv_get_with_metadata(key);
        async move {
            let v = self.js.settle(returned, key, Condition::Any).await?;
            if get(&v, "value").is_null() || get(&v, "value").is_undefined() {
                return Ok(None);
            }
            Ok(Some(
                json_text(&get(&v, "metadata"))
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
    ) -> impl Future<Output = Result<(), SaverError>> {
        let mut options = serde_json::Map::new();
        options.insert("metadata".into(), metadata);
        if let Some(ttl) = ttl {
            options.insert("expirationTtl".into(), ttl.into());
        }
        let returned = self.ns.kv_put(key, &value, &to_js(&options));
        async move { self.js.settle(returned, key, Condition::Any).await.map(|_| ()) }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> {
        let returned = self.ns.kv_delete(key);
        async move { self.js.settle(returned, key, Condition::Any).await.map(|_| ()) }
    }

    fn list_page(&self, prefix: &str, cursor: Option<String>) -> impl Future<Output = Result<KvPage, SaverError>> {
        let mut options = serde_json::Map::new();
        options.insert("prefix".into(), prefix.into());
        if let Some(c) = cursor {
            options.insert("cursor".into(), c.into());
        }
        let returned = self.ns.kv_list(&to_js(&options));
        async move {
            let v = self.js.settle(returned, prefix, Condition::Any).await?;
            let text = json_text(&v).ok().flatten().unwrap_or_default();
            let page: ListResult = serde_json::from_str(&text).map_err(|e| SaverError::Backend {
                message: format!("unexpected KV list result: {e}"),
            })?;
            let cursor = page.cursor.filter(|c| !page.list_complete && !c.is_empty());
            Ok(KvPage::new(
                page.keys.into_iter().map(|k| (k.name, k.metadata)).collect(),
                cursor,
            ))
        }
    }
}

// ---- a store written in JS at the text level ------------------------------------------------------------

#[wasm_bindgen]
extern "C" {
    /// `{ getText(key), putText(key, value, summary, condition), delete(key), list(prefix), getMany?(keys),
    /// compareAndSet, maxValueBytes? }`: the memory, file and Durable Object savers, or the user's own.
    type TextStoreLike;
    #[wasm_bindgen(method, catch, js_name = getText)]
    fn get_text_js(this: &TextStoreLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = putText)]
    fn put_text_js(
        this: &TextStoreLike,
        key: &str,
        value: &str,
        summary: &str,
        condition: &JsValue,
        step: f64,
    ) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = delete)]
    fn delete_js(this: &TextStoreLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = list)]
    fn list_js(this: &TextStoreLike, prefix: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = listHeads)]
    fn list_heads_js(this: &TextStoreLike, prefix: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = getMany)]
    fn get_many_js(this: &TextStoreLike, keys: &Array) -> Result<JsValue, JsValue>;
}

struct JsTextStore {
    store: TextStoreLike,
    js: Js,
}

impl JsTextStore {
    /// What `list` or `listHeads` answered: `[{ key, summary }]`.
    fn listed<'a>(
        &'a self,
        returned: Result<JsValue, JsValue>,
        prefix: &'a str,
    ) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + 'a {
        async move {
            let v = self.js.settle(returned, prefix, Condition::Any).await?;
            let text = json_text(&v).ok().flatten().unwrap_or_default();
            let listed: Vec<TextListed> = serde_json::from_str(&text).map_err(|e| SaverError::Backend {
                message: format!(
                    "unexpected list result: {e} (list(prefix) answers [{{ key, summary }}], sorted by key)"
                ),
            })?;
            Ok(listed
                .into_iter()
                .filter_map(|l| Some(SavedCheckpoint::new(l.key, serde_json::from_str(&l.summary).ok()?)))
                .collect())
        }
    }
}

/// The JS form of a condition: `undefined`, `{ ifAbsent: true }` or `{ ifStep: n }`.
fn condition_js(condition: Condition) -> JsValue {
    match condition {
        Condition::Step(n) => fields(&[("ifStep", JsValue::from_f64(n as f64))]),
        Condition::Absent => fields(&[("ifAbsent", JsValue::TRUE)]),
        _ => JsValue::UNDEFINED,
    }
}

#[derive(Deserialize)]
struct TextListed {
    key: String,
    summary: String,
}

impl Saver for JsTextStore {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> {
        let returned = self.store.get_text_js(key);
        async move { js_text_within(&self.js.settle(returned, key, Condition::Any).await?, key, self.js.max) }
    }

    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> {
        let returned = self.store.put_text_js(
            key,
            &value,
            &summary.to_stored(),
            &condition_js(condition),
            // The step `{ ifStep }` compares (Condition::allows), for stores that compare it themselves (SQL).
            summary.step.unwrap_or(0) as f64,
        );
        async move { self.js.settle(returned, key, condition).await.map(|_| ()) }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> {
        let returned = self.store.delete_js(key);
        async move { self.js.settle(returned, key, Condition::Any).await.map(|_| ()) }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> {
        let returned = self.store.list_js(prefix);
        async move { self.listed(returned, prefix).await }
    }

    fn list_heads(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> {
        // `listHeads(prefix)` is optional: a store that has it lists sessions without their step records.
        let own = get(&self.store, "listHeads").is_function();
        let returned = if own {
            self.store.list_heads_js(prefix)
        } else {
            self.store.list_js(prefix)
        };
        async move {
            let mut all = self.listed(returned, prefix).await?;
            all.retain(|e| !e.key.contains(crate::session::HISTORY_SEPARATOR));
            Ok(all)
        }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> {
        // `getMany(keys)` is optional: a store that has it reads a session's records in one call.
        let returned = get(&self.store, "getMany").is_function().then(|| {
            self.store
                .get_many_js(&keys.iter().map(|k| JsValue::from_str(k)).collect())
        });
        async move {
            let Some(returned) = returned else {
                let mut out = Vec::with_capacity(keys.len());
                for k in keys {
                    out.push(self.get_text(k).await?);
                }
                return Ok(out);
            };
            let first = keys.first().map_or("", String::as_str);
            let array = Array::from(&self.js.settle(returned, first, Condition::Any).await?);
            if array.length() as usize != keys.len() {
                return Err(SaverError::Backend {
                    message: format!(
                        "getMany(keys) answered {} values for {} keys",
                        array.length(),
                        keys.len()
                    ),
                });
            }
            array
                .iter()
                .zip(keys)
                .map(|(v, k)| js_text_within(&v, k, self.js.max))
                .collect()
        }
    }

    fn compare_and_set(&self) -> bool {
        get(&self.store, "compareAndSet").as_bool() == Some(true)
    }

    fn max_value_bytes(&self) -> Option<usize> {
        get(&self.store, "maxValueBytes").as_f64().map(|n| n as usize)
    }
}

// ---- a saver of checkpoint objects written in JS --------------------------------------------------------

#[wasm_bindgen]
extern "C" {
    /// Any saver written in JS: `{ get(key), put(key, checkpoint, condition?), delete(key), list(prefix) }`.
    type SaverLike;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn saver_get(this: &SaverLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = put)]
    fn saver_put(this: &SaverLike, key: &str, checkpoint: &JsValue, condition: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = delete)]
    fn saver_delete(this: &SaverLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = list)]
    fn saver_list(this: &SaverLike, prefix: &str) -> Result<JsValue, JsValue>;
}

struct JsSaver {
    object: SaverLike,
    js: Js,
}

impl Saver for JsSaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> {
        let returned = self.object.saver_get(key);
        async move {
            let v = self.js.settle(returned, key, Condition::Any).await?;
            if v.is_null() || v.is_undefined() {
                return Ok(None);
            }
            if let Some(text) = js_text_within(&v, key, self.js.max)? {
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
        _summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> {
        async move {
            let cas = self.compare_and_set();
            if condition != Condition::Any && !cas {
                // Not atomic: a saver without compareAndSet is read, then written. A sealed checkpoint's step
                // cannot be read here, so only its presence is checked.
                let current = match self.get_text(key).await? {
                    None => None,
                    Some(text) => match crate::read_stored(key, text) {
                        Ok(Stored::Checkpoint(cp)) => Some(Some(cp.summary())),
                        _ => Some(None),
                    },
                };
                match (current, condition) {
                    (Some(None), Condition::Step(_)) => {}
                    (current, _) => condition.check(key, current.map(Option::unwrap_or_default).as_ref())?,
                }
            }
            let checkpoint = js_sys::JSON::parse(&value).map_err(|e| SaverError::Backend {
                message: error_message(&e),
            })?;
            let returned = self.object.saver_put(
                key,
                &checkpoint,
                &condition_js(if cas { condition } else { Condition::Any }),
            );
            self.js.settle(returned, key, condition).await.map(|_| ())
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> {
        let returned = self.object.saver_delete(key);
        async move { self.js.settle(returned, key, Condition::Any).await.map(|_| ()) }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> {
        let returned = self.object.saver_list(prefix);
        async move {
            let v = self.js.settle(returned, prefix, Condition::Any).await?;
            let text = json_text(&v).ok().flatten().unwrap_or_default();
            let mut listed: Vec<SavedCheckpoint> = serde_json::from_str(&text).map_err(|e| SaverError::Backend {
                message: format!("unexpected list result: {e}"),
            })?;
            // The contract says sorted by key; a saver that does not keep it is not punished for it.
            listed.sort_by(|a, b| a.key.cmp(&b.key));
            Ok(listed)
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

// ---- specs and operations -------------------------------------------------------------------------------

/// A saver for one call, with what JS threw in it (the `cause` of a `SaverError`).
pub(super) struct Store {
    pub(super) saver: Box<dyn DynSaver>,
    thrown: Rc<RefCell<Option<JsValue>>>,
}

impl Store {
    /// The saver a spec describes (`spec` undefined: `object` is a saver written in JS), reading at most `max`
    /// bytes per value and giving up on any operation after `ms`.
    pub(super) fn new(spec: &JsValue, object: &JsValue, max: usize, ms: Option<u64>) -> Result<Self, JsValue> {
        let js = Js {
            max,
            ms,
            thrown: Rc::new(RefCell::new(None)),
        };
        let thrown = js.thrown.clone();
        let text = |k: &'static str| get(spec, k).as_string().unwrap_or_default();
        let saver: Box<dyn DynSaver> = match get(spec, "kind").as_string().as_deref() {
            Some("kv") => {
                let options = KvOptions {
                    prefix: text("prefix"),
                    expiration_ttl: get(spec, "expirationTtl").as_f64().map(|t| t as u64),
                };
                let backend = KvNs {
                    ns: get(spec, "namespace").unchecked_into(),
                    js,
                };
                Box::new(KvStoreSaver::new(backend, options).map_err(saver_error)?)
            }
            Some("indexeddb") => {
                let durability = match text("durability").as_str() {
                    "relaxed" => Durability::Relaxed,
                    "default" => Durability::Default,
                    _ => Durability::Strict,
                };
                let options = IndexedDbOptions::new(text("dbName"), text("storeName")).durability(durability);
                let saver =
                    IndexedDbSaver::sharing(options, get(spec, "slot").unchecked_into()).map_err(saver_error)?;
                Box::new(saver.read_at_most(max))
            }
            Some("text") => Box::new(JsTextStore {
                store: get(spec, "store").unchecked_into(),
                js,
            }),
            _ => {
                expect_methods(
                    object,
                    &["get", "put", "delete"],
                    "session(saver, id): expected a saver such as memorySaver() or kvSaver(env.KV)",
                )?;
                Box::new(JsSaver {
                    object: object.clone().unchecked_into(),
                    js,
                })
            }
        };
        Ok(Store { saver, thrown })
    }

    /// What the store threw last.
    pub(super) fn cause(&self) -> Option<JsValue> {
        self.thrown.borrow_mut().take()
    }
}

/// Checks that `value` has the named methods, so a wrong argument fails at once and clearly.
pub(super) fn expect_methods(value: &JsValue, methods: &[&'static str], what: &str) -> Result<(), JsValue> {
    let missing: Vec<&str> = methods
        .iter()
        .copied()
        .filter(|m| !get(value, m).is_function())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(config_error(format!(
        "{what}: missing method(s) {}",
        missing.join(", ")
    )))
}

/// `saverSpec(kind, a, options)`: a built-in saver's options (JSON text), read and checked now; its spec.
/// `kv` (namespace, options), `indexeddb` (options), `text` (a store written in JS).
#[wasm_bindgen(js_name = saverSpec)]
pub fn saver_spec(kind: &str, a: JsValue, options: &str) -> Result<JsValue, JsValue> {
    let fail = |e| agent_error(e, None, None);
    let spec = match kind {
        "text" => {
            expect_methods(&a, &["getText", "putText", "delete", "list"], "textStoreSaver(store)")?;
            fields(&[("kind", kind.into()), ("store", a)])
        }
        "kv" => {
            expect_methods(
                &a,
                &["get", "getWithMetadata", "put", "delete", "list"],
                "kvSaver(namespace): expected a KV namespace binding such as env.SESSIONS",
            )?;
            let o = KvOptions::from_value(parse_json(options)).map_err(fail)?;
            let ttl = o
                .expiration_ttl
                .map_or(JsValue::UNDEFINED, |t| JsValue::from_f64(t as f64));
            fields(&[
                ("kind", kind.into()),
                ("namespace", a),
                ("prefix", o.prefix.into()),
                ("expirationTtl", ttl),
            ])
        }
        "indexeddb" => {
            let o = IndexedDbOptions::from_value(parse_json(options)).map_err(fail)?;
            let durability = match o.durability {
                Durability::Relaxed => "relaxed",
                Durability::Default => "default",
                _ => "strict",
            };
            fields(&[
                ("kind", kind.into()),
                ("dbName", o.db_name.into()),
                ("storeName", o.store_name.into()),
                ("durability", durability.into()),
                ("slot", Object::new().into()),
            ])
        }
        other => return Err(config_error(format!("unknown saver {other:?}"))),
    };
    Ok(Object::freeze(spec.unchecked_ref::<Object>()).into())
}

/// `saverAbout(spec)`: `{ compareAndSet, maxValueBytes? }` of a built-in saver.
#[wasm_bindgen(js_name = saverAbout)]
pub fn saver_about(spec: JsValue) -> Result<JsValue, JsValue> {
    let store = Store::new(&spec, &JsValue::UNDEFINED, usize::MAX, None)?;
    let max = store
        .saver
        .max_value_bytes_dyn()
        .map_or(JsValue::UNDEFINED, |n| JsValue::from_f64(n as f64));
    Ok(fields(&[
        ("compareAndSet", store.saver.compare_and_set_dyn().into()),
        ("maxValueBytes", max),
    ]))
}

/// `conditionHolds(condition, summary)`: whether a put's condition holds for what is stored (`summary`: its
/// stored summary text, `undefined` when nothing is) — [`Condition::allows`], the one compare-and-set rule,
/// for the stores written in JS (memory, file, Durable Object) to apply atomically where they write.
#[wasm_bindgen(js_name = conditionHolds)]
pub fn condition_holds(condition: JsValue, summary: Option<String>) -> Result<bool, JsValue> {
    let condition = condition_of(&condition)?;
    let current = summary.map(|text| serde_json::from_str::<CheckpointSummary>(&text).unwrap_or_default());
    Ok(condition.allows(current.as_ref()))
}

/// A put's condition from JS: `undefined`, `{ ifAbsent: true }` or `{ ifStep: n }`.
fn condition_of(value: &JsValue) -> Result<Condition, JsValue> {
    if value.is_undefined() || value.is_null() {
        return Ok(Condition::Any);
    }
    if get(value, "ifAbsent").as_bool() == Some(true) {
        return Ok(Condition::Absent);
    }
    match get(value, "ifStep").as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 => Ok(Condition::Step(n as u64)),
        _ => Err(config_error(format!(
            "saver.put(key, checkpoint, condition): condition must be {{ ifAbsent: true }} or {{ ifStep: n }}, got {}",
            describe(value)
        ))),
    }
}

/// `saverCall(spec, op, key, value, condition)`: one operation of a built-in saver (`get`, `put`, `delete`,
/// `exists`, `list`), checkpoints in and out as a saver's checkpoint-level API has them.
#[wasm_bindgen(js_name = saverCall)]
pub fn saver_call(spec: JsValue, op: String, key: JsValue, value: JsValue, condition: JsValue) -> Promise {
    future_to_promise(async move {
        let store = Store::new(&spec, &JsValue::UNDEFINED, crate::DEFAULT_MAX_CHECKPOINT_BYTES, None)?;
        let saver = &store.saver;
        let key_of = |what: &str| {
            key.as_string().ok_or_else(|| {
                config_error(format!(
                    "saver.{what}(key): expected a string key, got {}",
                    describe(&key)
                ))
            })
        };
        match op.as_str() {
            "get" => {
                let k = key_of("get")?;
                match saver.get_text_dyn(&k).await.map_err(saver_error)? {
                    None => Ok(JsValue::NULL),
                    Some(text) => match crate::read_stored(&k, text).map_err(saver_error)? {
                        Stored::Checkpoint(cp) => Ok(to_js(&cp)),
                        Stored::AsIs(text) => Ok(js_sys::JSON::parse(&text).unwrap_or(JsValue::NULL)),
                    },
                }
            }
            "put" => {
                let k = key_of("put")?;
                let condition = condition_of(&condition)?;
                let (text, _) = checkpoint_text(&value, crate::DEFAULT_MAX_CHECKPOINT_BYTES)
                    .map_err(|e| agent_error(e.into(), None, None))?;
                crate::put_stored(saver, &k, text, condition)
                    .await
                    .map_err(|e| match e {
                        crate::AgentError::Saver { source, .. } => saver_error(source),
                        other => agent_error(other, None, None),
                    })?;
                Ok(JsValue::UNDEFINED)
            }
            "delete" => {
                saver.delete_dyn(&key_of("delete")?).await.map_err(saver_error)?;
                Ok(JsValue::UNDEFINED)
            }
            "exists" => Ok(saver
                .get_text_dyn(&key_of("exists")?)
                .await
                .map_err(saver_error)?
                .is_some()
                .into()),
            "list" => {
                let prefix = if key.is_undefined() || key.is_null() {
                    String::new()
                } else {
                    key_of("list")?
                };
                Ok(to_js(&saver.list_dyn(&prefix).await.map_err(saver_error)?))
            }
            other => Err(config_error(format!("unknown saver operation {other:?}"))),
        }
    })
}
