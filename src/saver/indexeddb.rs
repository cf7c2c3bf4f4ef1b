//! `IndexedDbSaver`: checkpoints in the browser's IndexedDB (also in Web Workers).
//!
//! Two object stores per saver, written in one transaction: `<store>` holds each checkpoint's JSON and
//! `<store>-summaries` its summary, so a listing never loads a conversation. Inside a transaction only
//! IndexedDB requests are awaited: it auto-commits once control returns to the event loop.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use js_sys::{Array, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use web_sys::{
    DomException, Event, EventTarget, IdbDatabase, IdbFactory, IdbKeyRange, IdbObjectStore, IdbOpenDbRequest,
    IdbRequest, IdbTransaction,
};

#[wasm_bindgen(
    inline_js = "export function keepOpen(slot, db) { slot.db = db; db.onversionchange = () => { db.close(); if (slot.db === db) slot.db = undefined; }; }"
)]
extern "C" {
    /// Caches `db` in `slot`, and closes and forgets it when another tab needs to upgrade the database.
    #[wasm_bindgen(js_name = keepOpen)]
    fn keep_open(slot: &js_sys::Object, db: &IdbDatabase);
}

#[wasm_bindgen]
extern "C" {
    // `transaction(stores, mode, { durability })`: web-sys has it only behind `web_sys_unstable_apis`.
    type DatabaseWithOptions;
    #[wasm_bindgen(method, catch, js_name = transaction)]
    fn transaction_with_options(
        this: &DatabaseWithOptions,
        stores: &Array,
        mode: &str,
        options: &JsValue,
    ) -> Result<IdbTransaction, JsValue>;
}

use crate::checkpoint::CheckpointSummary;
use crate::platform::MaybeSend;
use crate::saver::SaverError;
use crate::saver::{Condition, SavedCheckpoint, Saver};

/// How hard the browser works to make a write survive a crash before reporting it done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// Flushed to disk before the write is reported done (the default: a paused run must survive a crash).
    #[default]
    Strict,
    /// Reported done once the OS has it; faster, may be lost in a power cut.
    Relaxed,
    /// The browser's own default.
    Default,
}

/// Where an [`IndexedDbSaver`] stores its checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexedDbOptions {
    /// Database name (default `"resumable-agent"`).
    pub db_name: String,
    /// Object store name (default `"checkpoints"`); summaries go to `<store_name>-summaries`.
    pub store_name: String,
    /// Write durability (default [`Durability::Strict`]).
    pub durability: Durability,
}

impl Default for IndexedDbOptions {
    fn default() -> Self {
        IndexedDbOptions {
            db_name: "resumable-agent".into(),
            store_name: "checkpoints".into(),
            durability: Durability::Strict,
        }
    }
}

impl IndexedDbOptions {
    /// Options for database `db_name`, store `store_name`.
    pub fn new(db_name: impl Into<String>, store_name: impl Into<String>) -> Self {
        IndexedDbOptions {
            db_name: db_name.into(),
            store_name: store_name.into(),
            ..Self::default()
        }
    }

    /// Sets the write durability.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }
}

/// A [`Saver`] over IndexedDB, for in-browser agents whose paused runs must survive a reload, a crashed
/// tab, and a second tab on the same origin.
///
/// ```no_run
/// # async fn f() -> Result<(), resumable_agent::SaverError> {
/// use resumable_agent::{IndexedDbOptions, IndexedDbSaver, Saver};
/// let saver = IndexedDbSaver::new(IndexedDbOptions::new("my-app", "runs"))?;
/// let sessions = saver.list("").await?; // summaries only
/// # Ok(()) }
/// ```
pub struct IndexedDbSaver {
    options: IndexedDbOptions,
    summaries: String,
    /// A JS object whose `db` is the open connection, shared by every saver built over the same slot.
    slot: js_sys::Object,
    /// True when this saver made the slot, so dropping it closes the connection.
    owns_slot: bool,
    max: usize,
}

impl IndexedDbSaver {
    /// A saver with `options`; the database opens (and is created or upgraded) on first use.
    ///
    /// # Errors
    /// [`SaverError::Option`] for an empty database or store name.
    pub fn new(options: IndexedDbOptions) -> Result<Self, SaverError> {
        let mut saver = Self::sharing(options, js_sys::Object::new())?;
        saver.owns_slot = true;
        Ok(saver)
    }

    /// A saver whose open connection lives in `slot` (any JS object: its `db`), so that savers built over the
    /// same slot — one per call, by a host that builds its savers per request — share one connection, which
    /// outlives them. Whoever made the slot closes the connection (`slot.db.close()`).
    ///
    /// # Errors
    /// As [`IndexedDbSaver::new`].
    pub fn sharing(options: IndexedDbOptions, slot: js_sys::Object) -> Result<Self, SaverError> {
        if options.db_name.is_empty() || options.store_name.is_empty() {
            return Err(SaverError::Option("dbName and storeName must be non-empty".into()));
        }
        let summaries = format!("{}-summaries", options.store_name);
        Ok(IndexedDbSaver {
            options,
            summaries,
            slot,
            owns_slot: false,
            max: usize::MAX,
        })
    }

    /// Refuses a stored value longer than `bytes` before it is copied into WebAssembly memory (a
    /// [`SaverError::Backend`] naming the key): memory a huge value took would stay the instance's for its
    /// life. Use the agent's `limits.max_checkpoint_bytes`.
    pub fn read_at_most(mut self, bytes: usize) -> Self {
        self.max = bytes;
        self
    }

    async fn database(&self) -> Result<IdbDatabase, SaverError> {
        if let Ok(db) = Reflect::get(&self.slot, &"db".into()).and_then(|d| d.dyn_into::<IdbDatabase>()) {
            return Ok(db);
        }
        let factory = Reflect::get(&js_sys::global(), &"indexedDB".into())
            .ok()
            .and_then(|f| f.dyn_into::<IdbFactory>().ok())
            .ok_or_else(|| SaverError::Backend {
                message: "IndexedDB is not available in this environment".into(),
            })?;
        let stores = [self.options.store_name.as_str(), self.summaries.as_str()];
        // Open at the current version; upgrade only when our stores are missing.
        let db = self.open(&factory, None, &stores).await?;
        let db = if stores.iter().all(|s| db.object_store_names().contains(s)) {
            db
        } else {
            let next = db.version() + 1.0;
            db.close();
            self.open(&factory, Some(next), &stores).await?
        };
        // Another tab upgrading the database: let it, and reopen on the next call.
        keep_open(&self.slot, &db);
        Ok(db)
    }

    async fn open(
        &self,
        factory: &IdbFactory,
        version: Option<f64>,
        stores: &[&str],
    ) -> Result<IdbDatabase, SaverError> {
        let name = &self.options.db_name;
        let request: IdbOpenDbRequest = match version {
            Some(v) => factory.open_with_f64(name, v),
            None => factory.open(name),
        }
        .map_err(|e| backend(&e))?;
        let req = request.clone();
        let create: Vec<String> = stores.iter().map(|s| (*s).to_owned()).collect();
        let on_upgrade = Closure::<dyn FnMut(Event)>::new(move |_| {
            if let Ok(db) = req.result().and_then(|r| r.dyn_into::<IdbDatabase>()) {
                for s in &create {
                    if !db.object_store_names().contains(s) {
                        let _ = db.create_object_store(s);
                    }
                }
            }
        });
        request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
        let outcome = Events::new(&request, &["success"], &["error", "blocked"]).await;
        request.set_onupgradeneeded(None);
        match outcome {
            Ok(_) => request
                .result()
                .and_then(|r| r.dyn_into::<IdbDatabase>())
                .map_err(|e| backend(&e)),
            Err(event) if event == "blocked" => Err(SaverError::Blocked { db: name.clone() }),
            Err(_) => Err(request_error(request.error().ok().flatten())),
        }
    }

    fn transaction(&self, db: &IdbDatabase, write: bool) -> Result<IdbTransaction, SaverError> {
        let stores = Array::of2(
            &self.options.store_name.as_str().into(),
            &self.summaries.as_str().into(),
        );
        let tx = if write {
            let durability = match self.options.durability {
                Durability::Strict => "strict",
                Durability::Relaxed => "relaxed",
                Durability::Default => "default",
            };
            let options = js_sys::Object::new();
            let _ = Reflect::set(&options, &"durability".into(), &durability.into());
            db.unchecked_ref::<DatabaseWithOptions>()
                .transaction_with_options(&stores, "readwrite", &options)
        } else {
            db.transaction_with_str_sequence(&stores)
        };
        tx.map_err(|e| backend(&e))
    }

    fn store(tx: &IdbTransaction, name: &str) -> Result<IdbObjectStore, SaverError> {
        tx.object_store(name).map_err(|e| backend(&e))
    }
}

impl Drop for IndexedDbSaver {
    fn drop(&mut self) {
        if self.owns_slot {
            if let Ok(db) = Reflect::get(&self.slot, &"db".into()).and_then(|d| d.dyn_into::<IdbDatabase>()) {
                db.close();
            }
        }
    }
}

/// Waits for a write transaction to commit, naming a quota failure.
async fn committed(tx: &IdbTransaction, key: &str) -> Result<(), SaverError> {
    match Events::new(tx, &["complete"], &["error", "abort"]).await {
        Ok(_) => Ok(()),
        Err(_) => {
            let error = tx.error();
            match &error {
                Some(e) if e.name() == "QuotaExceededError" => Err(SaverError::QuotaExceeded {
                    key: key.to_owned(),
                    message: e.message(),
                }),
                _ => Err(request_error(error)),
            }
        }
    }
}

/// The result of a request, once it succeeded.
async fn result_of(request: Result<IdbRequest, JsValue>) -> Result<JsValue, SaverError> {
    let request = request.map_err(|e| backend(&e))?;
    match Events::new(&request, &["success"], &["error"]).await {
        Ok(_) => request.result().map_err(|e| backend(&e)),
        Err(_) => Err(request_error(request.error().ok().flatten())),
    }
}

fn backend(e: &JsValue) -> SaverError {
    let message = e
        .dyn_ref::<DomException>()
        .map(|d| format!("{}: {}", d.name(), d.message()))
        .or_else(|| e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())))
        .unwrap_or_else(|| format!("{e:?}"));
    SaverError::Backend { message }
}

fn request_error(error: impl Into<Option<DomException>>) -> SaverError {
    match error.into() {
        Some(d) => SaverError::Backend {
            message: format!("IndexedDB {}: {}", d.name(), d.message()),
        },
        None => SaverError::Backend {
            message: "IndexedDB request failed".into(),
        },
    }
}

fn range_for(prefix: &str) -> Result<Option<IdbKeyRange>, SaverError> {
    if prefix.is_empty() {
        return Ok(None);
    }
    // Keys compare by UTF-16 code units; U+FFFF sorts after every unit a key can continue with.
    IdbKeyRange::bound(&prefix.into(), &format!("{prefix}\u{ffff}").into())
        .map(Some)
        .map_err(|e| backend(&e))
}

impl Saver for IndexedDbSaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move {
            let db = self.database().await?;
            let tx = self.transaction(&db, false)?;
            let value = result_of(Self::store(&tx, &self.options.store_name)?.get(&key.into())).await?;
            super::js_text_within(&value, key, self.max)
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
        async move {
            let db = self.database().await?;
            let tx = self.transaction(&db, true)?;
            let k: JsValue = key.into();
            if condition != Condition::Any {
                // Inside the same readwrite transaction: nothing can change between this read and the write.
                let current = result_of(Self::store(&tx, &self.summaries)?.get(&k)).await?;
                let current: Option<CheckpointSummary> = current
                    .as_string()
                    .map(|t| serde_json::from_str(&t).unwrap_or_default());
                if let Err(e) = condition.check(key, current.as_ref()) {
                    let _ = tx.abort();
                    return Err(e);
                }
            }
            // Both writes are issued before anything is awaited; the transaction commits them together.
            Self::store(&tx, &self.options.store_name)?
                .put_with_key(&value.into(), &k)
                .map_err(|e| backend(&e))?;
            Self::store(&tx, &self.summaries)?
                .put_with_key(&summary.into(), &k)
                .map_err(|e| backend(&e))?;
            committed(&tx, key).await
        }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            let db = self.database().await?;
            let tx = self.transaction(&db, false)?;
            let store = Self::store(&tx, &self.options.store_name)?;
            // Every request is issued before any is awaited: one transaction, one round trip.
            let requests: Vec<_> = keys.iter().map(|k| store.get(&k.as_str().into())).collect();
            let mut out = Vec::with_capacity(keys.len());
            for (r, k) in requests.into_iter().zip(keys) {
                out.push(super::js_text_within(&result_of(r).await?, k, self.max)?);
            }
            Ok(out)
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move {
            let db = self.database().await?;
            let tx = self.transaction(&db, true)?;
            let k: JsValue = key.into();
            Self::store(&tx, &self.options.store_name)?
                .delete(&k)
                .map_err(|e| backend(&e))?;
            Self::store(&tx, &self.summaries)?.delete(&k).map_err(|e| backend(&e))?;
            committed(&tx, key).await
        }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move {
            let db = self.database().await?;
            let tx = self.transaction(&db, false)?;
            let store = Self::store(&tx, &self.summaries)?;
            let range = range_for(prefix)?;
            let (keys, values) = match &range {
                Some(r) => (store.get_all_keys_with_key(r), store.get_all_with_key(r)),
                None => (store.get_all_keys(), store.get_all()),
            };
            let keys: Array = result_of(keys).await?.unchecked_into();
            let values: Array = result_of(values).await?.unchecked_into();
            let mut out = Vec::new();
            for (k, v) in keys.iter().zip(values.iter()) {
                let (Some(key), Some(text)) = (k.as_string(), v.as_string()) else {
                    continue;
                };
                if let Ok(summary) = serde_json::from_str::<CheckpointSummary>(&text) {
                    out.push(SavedCheckpoint { key, summary });
                }
            }
            Ok(out)
        }
    }

    fn compare_and_set(&self) -> bool {
        true
    }
}

// ---- events as a future ---------------------------------------------------------------------------------

struct Slot {
    outcome: Option<Result<(), String>>,
    waker: Option<Waker>,
}

/// Resolves on the first of `ok` events (Ok) or `err` events (Err with the event's type); removes its
/// listeners when dropped.
struct Events {
    target: EventTarget,
    names: Vec<&'static str>,
    slot: Rc<RefCell<Slot>>,
    listener: Closure<dyn FnMut(Event)>,
}

impl Events {
    fn new(target: &EventTarget, ok: &[&'static str], err: &[&'static str]) -> Self {
        let slot = Rc::new(RefCell::new(Slot {
            outcome: None,
            waker: None,
        }));
        let s = Rc::clone(&slot);
        let oks: Vec<&'static str> = ok.to_vec();
        let listener = Closure::<dyn FnMut(Event)>::new(move |e: Event| {
            let kind = e.type_();
            let mut slot = s.borrow_mut();
            if slot.outcome.is_none() {
                slot.outcome = Some(if oks.iter().any(|o| *o == kind) {
                    Ok(())
                } else {
                    Err(kind)
                });
                if let Some(w) = slot.waker.take() {
                    w.wake();
                }
            }
        });
        let names: Vec<&'static str> = ok.iter().chain(err).copied().collect();
        for n in &names {
            let _ = target.add_event_listener_with_callback(n, listener.as_ref().unchecked_ref());
        }
        Events {
            target: target.clone(),
            names,
            slot,
            listener,
        }
    }
}

impl Future for Events {
    type Output = Result<(), String>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slot = self.slot.borrow_mut();
        match slot.outcome.take() {
            Some(outcome) => Poll::Ready(outcome),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = self
                .target
                .remove_event_listener_with_callback(n, self.listener.as_ref().unchecked_ref());
        }
    }
}
