//! Savers for JS: `memorySaver()`, `kvSaver(namespace, options)`, and any JS object with
//! get/put/delete/list adapted to the core's `Saver` (for sessions).

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Function, Object, Promise};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::adapters::settle;
use super::convert::{
    agent_error, checkpoint_from_js, config_error, get, integer_option, json_text, saver_error, set, string_option,
    to_js,
};
use super::glue::error_message;
use crate::checkpoint::Checkpoint;
use crate::error::SaverError;
use crate::platform::MaybeSend;
use crate::saver::kv_store::{KvBackend, KvOptions, KvPage, KvStoreSaver};
use crate::saver::{Durability, IndexedDbOptions, IndexedDbSaver, MemorySaver, SavedCheckpoint, Saver};

#[wasm_bindgen]
extern "C" {
    /// A Workers KV namespace binding (`env.MY_KV`), or anything with the same methods.
    pub(crate) type KvNamespace;
    #[wasm_bindgen(method, catch, js_name = get)]
    fn kv_get(this: &KvNamespace, key: &str) -> Result<JsValue, JsValue>;
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
    fn saver_put(this: &SaverLike, key: &str, checkpoint: &JsValue) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = delete)]
    fn saver_delete(this: &SaverLike, key: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = list)]
    fn saver_list(this: &SaverLike, prefix: &str) -> Result<JsValue, JsValue>;
}

/// Checks that `value` has the named methods, so a wrong argument fails at once and clearly.
pub(crate) fn expect_methods(value: &JsValue, methods: &[&str], what: &str) -> Result<(), JsValue> {
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

impl KvBackend for KvNamespace {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        let returned = self.kv_get(key);
        async move {
            let v = settle(returned).await.map_err(|e| js_backend(&e))?;
            Ok(v.as_string())
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
        let returned = self.kv_put(key, &value, &options);
        async move { settle(returned).await.map(|_| ()).map_err(|e| js_backend(&e)) }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let returned = self.kv_delete(key);
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
        let returned = self.kv_list(&options);
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

// ---- the exported saver class -------------------------------------------------------------------------

enum Backing {
    Memory(MemorySaver),
    Kv(KvStoreSaver<KvNamespace>),
    IndexedDb(IndexedDbSaver),
}

/// A saver implemented in Rust: `get`, `put`, `delete`, `list(prefix?)`, each returning a promise.
#[wasm_bindgen(js_name = Saver)]
pub struct JsSaverClass {
    inner: Rc<Backing>,
}

/// `memorySaver()`: a fresh in-memory saver.
#[wasm_bindgen(js_name = memorySaver)]
pub fn memory_saver() -> JsSaverClass {
    JsSaverClass {
        inner: Rc::new(Backing::Memory(MemorySaver::new())),
    }
}

/// `kvSaver(env.NAMESPACE, { prefix?, expirationTtl? })`: checkpoints in Workers KV, summaries in metadata.
#[wasm_bindgen(js_name = kvSaver)]
pub fn kv_saver(namespace: JsValue, options: JsValue) -> Result<JsSaverClass, JsValue> {
    expect_methods(
        &namespace,
        &["get", "put", "delete", "list"],
        "kvSaver(namespace): expected a KV namespace binding such as env.SESSIONS",
    )?;
    let mut opts = KvOptions::default();
    if let Some(prefix) = string_option(&options, "prefix", "kvSaver options")? {
        opts.prefix = prefix;
    }
    opts.expiration_ttl = integer_option(&options, "expirationTtl", "kvSaver options", 0)?;
    opts.validate().map_err(saver_error)?;
    Ok(JsSaverClass {
        inner: Rc::new(Backing::Kv(KvStoreSaver {
            backend: namespace.unchecked_into(),
            options: opts,
        })),
    })
}

/// `indexedDbSaver({ dbName?, storeName?, durability? })`: checkpoints in IndexedDB (browsers, Web Workers).
#[wasm_bindgen(js_name = indexedDbSaver)]
pub fn indexed_db_saver(options: JsValue) -> Result<JsSaverClass, JsValue> {
    let owner = "indexedDbSaver options";
    let mut opts = IndexedDbOptions::default();
    if let Some(name) = string_option(&options, "dbName", owner)? {
        opts.db_name = name;
    }
    if let Some(name) = string_option(&options, "storeName", owner)? {
        opts.store_name = name;
    }
    opts.durability = match string_option(&options, "durability", owner)?.as_deref() {
        None | Some("strict") => Durability::Strict,
        Some("relaxed") => Durability::Relaxed,
        Some("default") => Durability::Default,
        Some(_) => {
            return Err(config_error(format!(
                r#"{owner}.durability: expected "strict", "relaxed" or "default""#
            )));
        }
    };
    let saver = IndexedDbSaver::new(opts).map_err(saver_error)?;
    Ok(JsSaverClass {
        inner: Rc::new(Backing::IndexedDb(saver)),
    })
}

async fn get_js<S: Saver>(saver: &S, key: &str) -> Result<JsValue, JsValue> {
    let found = saver.get(key).await.map_err(saver_error)?;
    Ok(found.map_or(JsValue::NULL, |cp| to_js(&cp)))
}

async fn put_js<S: Saver>(saver: &S, key: &str, checkpoint: &Checkpoint) -> Result<JsValue, JsValue> {
    saver.put(key, checkpoint).await.map_err(saver_error)?;
    Ok(JsValue::UNDEFINED)
}

async fn delete_js<S: Saver>(saver: &S, key: &str) -> Result<JsValue, JsValue> {
    saver.delete(key).await.map_err(saver_error)?;
    Ok(JsValue::UNDEFINED)
}

async fn list_js<S: Saver>(saver: &S, prefix: &str) -> Result<JsValue, JsValue> {
    Ok(to_js(&saver.list(prefix).await.map_err(saver_error)?))
}

#[wasm_bindgen(js_class = Saver)]
impl JsSaverClass {
    /// The checkpoint under `key`, or `null`.
    pub fn get(&self, key: String) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            match &*inner {
                Backing::Memory(s) => get_js(s, &key).await,
                Backing::Kv(s) => get_js(s, &key).await,
                Backing::IndexedDb(s) => get_js(s, &key).await,
            }
        })
    }

    /// Stores `checkpoint` (validated first) under `key`, replacing what was there.
    pub fn put(&self, key: String, checkpoint: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        let decoded = checkpoint_from_js(&checkpoint).map_err(|e| agent_error(e, None));
        future_to_promise(async move {
            let cp = decoded?;
            match &*inner {
                Backing::Memory(s) => put_js(s, &key, &cp).await,
                Backing::Kv(s) => put_js(s, &key, &cp).await,
                Backing::IndexedDb(s) => put_js(s, &key, &cp).await,
            }
        })
    }

    /// Removes `key` (no error if it is missing).
    pub fn delete(&self, key: String) -> Promise {
        let inner = Rc::clone(&self.inner);
        future_to_promise(async move {
            match &*inner {
                Backing::Memory(s) => delete_js(s, &key).await,
                Backing::Kv(s) => delete_js(s, &key).await,
                Backing::IndexedDb(s) => delete_js(s, &key).await,
            }
        })
    }

    /// Summaries of every checkpoint whose key starts with `prefix`, read without loading the checkpoints.
    pub fn list(&self, prefix: Option<String>) -> Promise {
        let inner = Rc::clone(&self.inner);
        let prefix = prefix.unwrap_or_default();
        future_to_promise(async move {
            match &*inner {
                Backing::Memory(s) => list_js(s, &prefix).await,
                Backing::Kv(s) => list_js(s, &prefix).await,
                Backing::IndexedDb(s) => list_js(s, &prefix).await,
            }
        })
    }
}

// ---- any JS saver as a core Saver -------------------------------------------------------------------

/// A JS saver object used by a session. Keeps what it threw, to hand it back as the error's `cause`.
pub(crate) struct JsSaver {
    object: SaverLike,
    pub(crate) last_error: RefCell<Option<JsValue>>,
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
        })
    }

    fn failed(&self, e: JsValue) -> SaverError {
        let error = js_backend(&e);
        *self.last_error.borrow_mut() = Some(e);
        error
    }
}

impl Saver for JsSaver {
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Checkpoint>, SaverError>> + MaybeSend {
        let returned = self.object.saver_get(key);
        let key = key.to_owned();
        async move {
            let v = settle(returned).await.map_err(|e| self.failed(e))?;
            if v.is_null() || v.is_undefined() {
                return Ok(None);
            }
            checkpoint_from_js(&v).map(Some).map_err(|e| match e {
                crate::AgentError::Checkpoint(source) => SaverError::Corrupt { key, source },
                other => SaverError::Backend {
                    message: other.to_string(),
                },
            })
        }
    }

    fn put(&self, key: &str, checkpoint: &Checkpoint) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let returned = self.object.saver_put(key, &to_js(checkpoint));
        async move { settle(returned).await.map(|_| ()).map_err(|e| self.failed(e)) }
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
}
