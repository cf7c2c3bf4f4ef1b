//! `POST /__test/saver`: the saver's own operations over the real binding (KV, the Durable Object or D1), for
//! the test suite and the saver conformance suite. Served only when the `TEST_ROUTES` var is "true".

use resumable_agent::{Checkpoint, Condition, Saver, SaverError};
use serde_json::{Value, json};
use worker::{Env, Request, Response, Result};

use crate::error;

/// `{op: "put"|"get"|"get-text"|"delete"|"list"|"raw-put", key?, checkpoint?, prefix?, value?, metadata?}` →
/// `{ok: result}` or `{err: {kind, message}}`.
pub(crate) async fn saver(req: &mut Request, env: &Env) -> Result<Response> {
    let body: Value = req.json().await?;
    let key = body["key"].as_str().unwrap_or_default();
    let saver = crate::saver(env, body["owner"].as_str().unwrap_or("test"))?;
    let result: std::result::Result<Value, SaverError> = match body["op"].as_str().unwrap_or_default() {
        // A session's records and heads (`{"log": …}`) as they are: a saver of checkpoints keeps its sessions
        // whole, and what it is handed must come back with the log member.
        "get" => match saver.get_text(key).await {
            Ok(Some(text)) if is_log(&text) => Ok(Value::String(text)),
            Ok(_) => saver
                .get(key)
                .await
                .map(|c| serde_json::to_value(c.map(|c| c.to_json())).unwrap_or_default()),
            Err(e) => Err(e),
        },
        // The stored text as it is (a sealed envelope too).
        "get-text" => saver
            .get_text(key)
            .await
            .map(|t| serde_json::to_value(t).unwrap_or_default()),
        "put" => match Checkpoint::from_value(body["checkpoint"].clone()) {
            Ok(cp) => {
                let condition = match (&body["condition"]["ifAbsent"], body["condition"]["ifStep"].as_u64()) {
                    (Value::Bool(true), _) => Condition::Absent,
                    (_, Some(step)) => Condition::Step(step),
                    _ => Condition::Any,
                };
                if body["checkpoint"].get("log").is_some() {
                    // Kept as given (the typed checkpoint has no log member).
                    let text = body["checkpoint"].to_string();
                    match saver.max_value_bytes().filter(|max| text.len() > *max) {
                        Some(max) => Err(SaverError::TooLarge {
                            key: key.to_owned(),
                            bytes: text.len(),
                            max,
                        }),
                        None => saver
                            .put_text(key, text, &cp.summary(), condition)
                            .await
                            .map(|()| Value::Null),
                    }
                } else {
                    saver.put_if(key, &cp, condition).await.map(|()| Value::Null)
                }
            }
            Err(e) => return error(400, &e.to_string()),
        },
        "exists" => saver.exists(key).await.map(Value::Bool),
        "about" => Ok(json!({"compareAndSet": saver.compare_and_set(), "maxValueBytes": saver.max_value_bytes()})),
        "delete" => saver.delete(key).await.map(|()| Value::Null),
        "list" => saver
            .list(body["prefix"].as_str().unwrap_or_default())
            .await
            .map(|l| serde_json::to_value(l).unwrap_or_default()),
        "raw-put" if env.var("SAVER").is_ok_and(|v| v.to_string() == "d1") => {
            // Around the saver: a value that is not a checkpoint, its summary kept.
            let update = "UPDATE resumable_agent_checkpoints SET value = ? WHERE key = ?";
            env.d1("DB")?
                .prepare(update)
                .bind(&[body["value"].as_str().unwrap_or_default().into(), key.into()])?
                .run()
                .await?;
            Ok(Value::Null)
        }
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

/// True for a session's record or head: a JSON object with a `log` or `session` member (in any order: a
/// store may sort keys).
fn is_log(text: &str) -> bool {
    serde_json::from_str::<serde_json::Map<String, Value>>(text)
        .is_ok_and(|m| m.contains_key("log") || m.contains_key("session"))
}

/// `POST /__test/conformance`: the Rust saver conformance suite, run here in workerd against this Worker's
/// saver (KV under a prefix per namespace, a Durable Object per namespace, or a D1 table per namespace).
pub(crate) async fn conformance(env: &Env) -> Result<Response> {
    let run = format!("{}", js_sys::Date::now() as u64);
    let durable = env.var("SAVER").is_ok_and(|v| v.to_string() == "durable-object");
    let d1 = env.var("SAVER").is_ok_and(|v| v.to_string() == "d1");
    let results = if d1 {
        // A table per namespace.
        resumable_agent::testing::saver_conformance(|ns| {
            let table: String = format!("conformance_{run}_{ns}")
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let db = env.d1("DB").expect("the DB binding");
            Box::new(resumable_agent::D1Saver::with_table(db, &table).expect("a valid table name"))
                as Box<dyn resumable_agent::DynSaver>
        })
        .await
    } else if durable {
        let namespace = env.durable_object("CHECKPOINTS")?;
        resumable_agent::testing::saver_conformance(|ns| {
            Box::new(
                resumable_agent::DurableObjectSaver::new(&namespace, &format!("conformance-{run}-{ns}"))
                    .expect("a stub for a name"),
            ) as Box<dyn resumable_agent::DynSaver>
        })
        .await
    } else {
        let kv = env.kv("SESSIONS")?;
        resumable_agent::testing::saver_conformance(|ns| {
            Box::new(
                resumable_agent::KvSaver::new(
                    kv.clone(),
                    resumable_agent::KvOptions::with_prefix(format!("conformance-{run}-{ns}:")),
                )
                .expect("valid options"),
            ) as Box<dyn resumable_agent::DynSaver>
        })
        .await
    };
    let cases: Vec<Value> = results
        .iter()
        .map(|r| json!({"name": r.name, "ok": r.ok, "skipped": r.skipped, "error": r.error}))
        .collect();
    Response::from_json(&json!({ "results": cases }))
}
