//! `DurableObjectSaver`: checkpoints in a Durable Object, for Rust Workers (`worker` crate), and [`serve`],
//! the request handler of the Durable Object class that stores them.
//!
//! The saver and the object speak a small JSON protocol (the same as the npm package's
//! `durableObjectSaver` and `CheckpointStore`, so JS and Rust Workers can share a store): each key is two
//! storage entries, `v:<key>` (the checkpoint's JSON) and `s:<key>` (its summary), written together, so a
//! listing reads summaries only. A conditional write compares and writes within one request of the object,
//! which nothing else interleaves with: strongly consistent compare-and-set.

use std::future::Future;

use serde_json::{Value, json};
use wasm_bindgen::JsValue;
use worker::{Method, ObjectNamespace, Request, RequestInit, Response, Storage, Stub};

use crate::checkpoint::CheckpointSummary;
use crate::platform::MaybeSend;
use crate::saver::SaverError;
use crate::saver::{Condition, SavedCheckpoint, Saver};

/// A Durable Object value holds at most 2 MB (SQLite-backed objects).
pub const DURABLE_OBJECT_MAX_VALUE_BYTES: usize = 2 * 1024 * 1024;

const URL: &str = "https://checkpoint-store.invalid/";

/// A [`Saver`] over one Durable Object of the class that [`serve`]s requests.
///
/// ```no_run
/// # async fn f(env: worker::Env) -> Result<(), Box<dyn std::error::Error>> {
/// use resumable_agent::DurableObjectSaver;
/// let saver = DurableObjectSaver::new(&env.durable_object("CHECKPOINTS")?, "default")?;
/// # Ok(()) }
/// ```
pub struct DurableObjectSaver {
    stub: Stub,
}

fn backend(e: impl std::fmt::Display) -> SaverError {
    SaverError::Backend { message: e.to_string() }
}

impl DurableObjectSaver {
    /// The saver over the object named `name` in `namespace` (one object serialises every session in it:
    /// shard by user or tenant name when that matters).
    ///
    /// # Errors
    /// [`SaverError::Backend`] when the namespace cannot make a stub.
    pub fn new(namespace: &ObjectNamespace, name: &str) -> Result<Self, SaverError> {
        let stub = namespace
            .id_from_name(name)
            .and_then(|id| id.get_stub())
            .map_err(backend)?;
        Ok(DurableObjectSaver { stub })
    }

    async fn call(&self, body: Value) -> Result<Value, SaverError> {
        let mut init = RequestInit::new();
        init.with_method(Method::Post).with_body(Some(body.to_string().into()));
        let request = Request::new_with_init(URL, &init).map_err(backend)?;
        let mut response = self.stub.fetch_with_request(request).await.map_err(backend)?;
        let out: Value = response.json().await.map_err(backend)?;
        if let Some(error) = out.get("error").and_then(Value::as_str) {
            return Err(match out.get("code").and_then(Value::as_str) {
                Some("CONFLICT") => SaverError::Conflict {
                    key: body.get("key").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    expected: body.pointer("/condition/ifStep").and_then(Value::as_u64),
                    found: None,
                },
                _ => SaverError::Backend {
                    message: error.to_owned(),
                },
            });
        }
        Ok(out)
    }
}

fn condition_json(condition: Condition) -> Value {
    match condition {
        Condition::Any => Value::Null,
        Condition::Absent => json!({"ifAbsent": true}),
        Condition::Step(n) => json!({"ifStep": n}),
    }
}

impl Saver for DurableObjectSaver {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        async move {
            let out = self.call(json!({"op": "get", "key": key})).await?;
            Ok(out.get("value").and_then(Value::as_str).map(str::to_owned))
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
            let body = json!({"op": "put", "key": key, "value": value, "summary": summary, "condition": condition_json(condition)});
            self.call(body).await.map(|_| ())
        }
    }

    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        async move { self.call(json!({"op": "delete", "key": key})).await.map(|_| ()) }
    }

    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        async move {
            let out = self.call(json!({"op": "getMany", "keys": keys})).await?;
            let values = out.get("values").and_then(Value::as_array).cloned().unwrap_or_default();
            Ok(keys
                .iter()
                .enumerate()
                .map(|(i, _)| values.get(i).and_then(Value::as_str).map(str::to_owned))
                .collect())
        }
    }

    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        async move {
            let out = self.call(json!({"op": "list", "prefix": prefix})).await?;
            Ok(out
                .get("entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    let key = e.get("key")?.as_str()?.to_owned();
                    let summary = serde_json::from_str(e.get("summary")?.as_str()?).ok()?;
                    Some(SavedCheckpoint { key, summary })
                })
                .collect())
        }
    }

    fn compare_and_set(&self) -> bool {
        true
    }

    fn max_value_bytes(&self) -> Option<usize> {
        Some(DURABLE_OBJECT_MAX_VALUE_BYTES)
    }
}

fn reply(body: Value) -> worker::Result<Response> {
    Response::from_json(&body)
}

/// Serves one request of the Durable Object class behind [`DurableObjectSaver`]: call it from the class's
/// `fetch`.
///
/// ```no_run
/// use worker::*;
/// #[durable_object]
/// pub struct CheckpointStore {
///     state: State,
/// }
/// impl DurableObject for CheckpointStore {
///     fn new(state: State, _env: Env) -> Self {
///         Self { state }
///     }
///     async fn fetch(&self, req: Request) -> Result<Response> {
///         resumable_agent::serve_checkpoint_store(&self.state.storage(), req).await
///     }
/// }
/// ```
///
/// # Errors
/// Only when a response cannot be built; storage failures are answered as `{ error, code }`.
pub async fn serve(storage: &Storage, mut req: Request) -> worker::Result<Response> {
    let body: Value = match req.json().await {
        Ok(b) => b,
        Err(_) => return reply(json!({"error": "expected a JSON body", "code": "BACKEND"})),
    };
    let key = body.get("key").and_then(Value::as_str).unwrap_or_default();
    let answer = match body.get("op").and_then(Value::as_str) {
        Some("get") => storage
            .get::<String>(&format!("v:{key}"))
            .await
            .map(|v| json!({"value": v})),
        Some("put") => put(storage, key, &body).await,
        Some("getMany") => get_many(storage, &body).await,
        Some("delete") => storage
            .delete_multiple(vec![format!("v:{key}"), format!("s:{key}")])
            .await
            .map(|_| json!({"ok": true})),
        Some("list") => {
            let prefix = format!("s:{}", body.get("prefix").and_then(Value::as_str).unwrap_or_default());
            storage
                .list_with_options(worker::ListOptions::new().prefix(&prefix))
                .await
                .map(|found| {
                    let mut entries = Vec::new();
                    found.for_each(&mut |summary, name| {
                        if let (Some(name), Some(summary)) = (name.as_string(), summary.as_string()) {
                            let key = name.get(2..).unwrap_or_default().to_owned();
                            entries.push(json!({"key": key, "summary": summary}));
                        }
                    });
                    json!({"entries": entries})
                })
        }
        other => Ok(json!({"error": format!("unknown operation {other:?}"), "code": "BACKEND"})),
    };
    reply(answer.unwrap_or_else(|e| json!({"error": e.to_string(), "code": "BACKEND"})))
}

/// Keys read at once: a storage `get` takes at most 128.
const GET_MANY_MAX: usize = 128;

async fn get_many(storage: &Storage, body: &Value) -> worker::Result<Value> {
    let keys: Vec<String> = body
        .get("keys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|k| Some(format!("v:{}", k.as_str()?)))
        .collect();
    let mut values = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(GET_MANY_MAX) {
        let found = storage.get_multiple(chunk.to_vec()).await?;
        for k in chunk {
            let v = found.get(&JsValue::from_str(k));
            values.push(v.as_string().map_or(Value::Null, Value::from));
        }
    }
    Ok(json!({ "values": values }))
}

async fn put(storage: &Storage, key: &str, body: &Value) -> worker::Result<Value> {
    let value = body.get("value").and_then(Value::as_str).unwrap_or_default();
    if value.len() > DURABLE_OBJECT_MAX_VALUE_BYTES {
        return Ok(
            json!({"error": format!("value for {key:?} is over {DURABLE_OBJECT_MAX_VALUE_BYTES} bytes"), "code": "TOO_LARGE"}),
        );
    }
    if let Some(condition) = body.get("condition").filter(|c| c.is_object()) {
        let current = storage.get::<String>(&format!("s:{key}")).await?;
        let step = current
            .as_deref()
            .map(|s| serde_json::from_str::<CheckpointSummary>(s).map_or(0, |c| c.step.unwrap_or(0)));
        let ok = if condition.get("ifAbsent").and_then(Value::as_bool) == Some(true) {
            step.is_none()
        } else {
            step.is_some() && step == condition.get("ifStep").and_then(Value::as_u64)
        };
        if !ok {
            return Ok(json!({"error": format!("key {key:?} changed"), "code": "CONFLICT"}));
        }
    }
    let summary = body.get("summary").and_then(Value::as_str).unwrap_or_default();
    // One multi-key put (atomic), of a plain object: serde-wasm-bindgen would make a `Map` of a serde map,
    // whose entries the storage API does not read.
    let entries = js_sys::Object::new();
    js_sys::Reflect::set(&entries, &format!("v:{key}").into(), &value.into())?;
    js_sys::Reflect::set(&entries, &format!("s:{key}").into(), &summary.into())?;
    storage.put_multiple_raw(entries).await?;
    Ok(json!({"ok": true}))
}
