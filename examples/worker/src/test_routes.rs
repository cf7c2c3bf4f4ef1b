//! `POST /__test/saver`: the KV saver's own operations over the real binding, for the test suite.
//! Served only when the `TEST_ROUTES` var is "true" (the tests start the Worker with it).

use resumable_agent::{Checkpoint, Saver, SaverError};
use serde_json::{Value, json};
use worker::{Env, Request, Response, Result};

use crate::error;

/// `{op: "put"|"get"|"delete"|"list"|"raw-put", key?, checkpoint?, prefix?, value?, metadata?}` →
/// `{ok: result}` or `{err: {kind, message}}`.
pub(crate) async fn saver(req: &mut Request, env: &Env) -> Result<Response> {
    let body: Value = req.json().await?;
    let key = body["key"].as_str().unwrap_or_default();
    let saver = crate::saver(env)?;
    let result: std::result::Result<Value, SaverError> = match body["op"].as_str().unwrap_or_default() {
        "get" => saver
            .get(key)
            .await
            .map(|c| serde_json::to_value(c.map(|c| c.to_json())).unwrap_or_default()),
        "put" => match Checkpoint::from_value(body["checkpoint"].clone()) {
            Ok(cp) => saver.put(key, &cp).await.map(|()| Value::Null),
            Err(e) => return error(400, &e.to_string()),
        },
        "delete" => saver.delete(key).await.map(|()| Value::Null),
        "list" => saver
            .list(body["prefix"].as_str().unwrap_or_default())
            .await
            .map(|l| serde_json::to_value(l).unwrap_or_default()),
        "raw-put" => {
            // Writes around the saver, to prove that `list` reads metadata only and `get` names corruption.
            let kv = env.kv("SESSIONS")?;
            kv.put(&format!("session:{key}"), body["value"].as_str().unwrap_or_default())?
                .metadata(body["metadata"].clone())?
                .execute()
                .await?;
            Ok(Value::Null)
        }
        other => return error(400, &format!("unknown op {other:?}")),
    };
    Response::from_json(&match result {
        Ok(v) => json!({ "ok": v }),
        Err(e) => json!({ "err": { "kind": e.code(), "message": e.to_string() } }),
    })
}
