//! `agent.session(saver, id, options)`: each method is one typed export over the core's [`Session`]. A session
//! call is `(session, ...)`, where `session` is the JS object the front keeps: `{ agent, store, saver, id,
//! options, waitUntil }` (the agent's spec, a built-in saver's spec or the user's saver, the options' JSON text).

use js_sys::{Array, Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::agent::{Call, JsEvents, answer_of, numbered};
use super::convert::{agent_error, config_error, get, string_of, to_js};
use super::glue::describe;
use super::saver::{Store, expect_methods};
use crate::{AgentError, Event, EventSink, Follow, SavedCheckpoint, Session, SessionOptions, Turn};

/// A session's options (JSON text; the `waitUntil` function stays in JS).
fn options_of(text: &str) -> Result<SessionOptions, JsValue> {
    SessionOptions::from_value(super::convert::parse_json(text)).map_err(|e| agent_error(e, None, None))
}

/// What one session call needs, built from the front's session object and dropped with the call.
struct Parts {
    call: Call,
    store: Store,
    id: String,
    options: SessionOptions,
}

impl Parts {
    /// The parts of `session` for a call stopped by `signal`.
    fn new(session: &JsValue, signal: Option<&JsValue>) -> Result<Self, JsValue> {
        let call = Call::new(&get(session, "agent"), signal)?;
        let options = options_of(&string_of(&get(session, "options")).unwrap_or_default())?;
        let max = call.agent.limits().max_checkpoint_bytes;
        // JS stores race their promises against the limit (so they settle); the core's session bounds each
        // operation with it.
        let store = Store::new(&get(session, "store"), &get(session, "saver"), max, options.timeout_ms)?;
        let id = get(session, "id").as_string().unwrap_or_default();
        Ok(Parts {
            call,
            store,
            id,
            options,
        })
    }

    fn session(&self) -> Session<'_, Box<dyn crate::DynSaver>> {
        self.call
            .agent
            .session(&self.store.saver, self.id.clone())
            .options(self.options)
    }

    /// The JS error of `e`, with what the store or the model threw behind it.
    fn error(&self, e: AgentError) -> JsValue {
        let cause = match e {
            AgentError::Saver { .. } => self.store.cause(),
            _ => None,
        };
        agent_error(e, cause, None)
    }

    /// A checkpoint as the JS value to hand out: sealed, or as it is.
    async fn checkpoint_js(&self, cp: &crate::Checkpoint) -> Result<JsValue, JsValue> {
        Ok(match self.call.sealed(Some(cp)).await? {
            Some(sealed) => js_sys::JSON::parse(&sealed).unwrap_or(JsValue::UNDEFINED),
            None => to_js(cp),
        })
    }
}

/// `checkSession(saver, builtin, id, options)`: the arguments of `agent.session(saver, id, options)`, checked
/// at once.
#[wasm_bindgen(js_name = checkSession)]
pub fn check_session(saver: JsValue, builtin: bool, id: JsValue, options: &str) -> Result<(), JsValue> {
    if !builtin {
        expect_methods(
            &saver,
            &["get", "put", "delete"],
            "session(saver, id): expected a saver such as memorySaver() or kvSaver(env.KV)",
        )?;
    }
    match id.as_string() {
        Some(id) if !id.is_empty() && !id.contains(crate::HISTORY_SEPARATOR) => {}
        _ => {
            return Err(config_error(format!(
                "session(saver, id): id must be a non-empty string without {:?}",
                crate::HISTORY_SEPARATOR
            )));
        }
    }
    options_of(options).map(|_| ())
}

/// `sessionRun(session, turn, value, options)`: `prompt`, `reply` or `resume`.
#[wasm_bindgen(js_name = sessionRun)]
pub fn session_run(session: JsValue, turn: String, value: JsValue, options: JsValue) -> Promise {
    future_to_promise(async move {
        let what = format!("{turn}(…)");
        let mut events = JsEvents::read(&options, &what)?;
        let turn = match turn.as_str() {
            "reply" => Turn::Reply(answer_of(&value).map_err(|e| agent_error(e, None, None))?),
            "resume" => Turn::Continue,
            _ => Turn::Prompt(value.as_string().ok_or_else(|| {
                config_error(format!("prompt(message): expected a string, got {}", describe(&value)))
            })?),
        };
        #[allow(unused_mut)]
        let mut parts = Parts::new(&session, events.signal())?;
        #[cfg(feature = "js-telemetry")]
        {
            let traced = super::telemetry::telemetry_of(&get(&session, "agent"), events.trace_context());
            parts.call.agent.config.telemetry = traced;
        }
        let s = parts.session();
        let ran = s.run(turn, &mut events).await;
        if s.unsettled() {
            settle_later(&session, parts.store.saver.min_write_interval_ms_dyn());
        }
        let cause = match &ran {
            Err(AgentError::Saver { .. }) => parts.store.cause(),
            _ => None,
        };
        parts.call.finish(ran, cause).await
    })
}

/// Runs `op` on the session's parts and hands out what it returns.
fn op<F>(session: JsValue, f: F) -> Promise
where
    F: for<'p> FnOnce(&'p Parts) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<JsValue, JsValue>> + 'p>>
        + 'static,
{
    future_to_promise(async move {
        let parts = Parts::new(&session, None)?;
        f(&parts).await
    })
}

/// A step id from JS (a positive integer, or its text); `None` when not given.
fn step(v: &JsValue, what: &str) -> Result<Option<u64>, JsValue> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_f64()
        .or_else(|| v.as_string().and_then(|s| s.parse::<f64>().ok()))
        .filter(|n| *n >= 1.0 && n.fract() == 0.0 && *n <= 9.0e15)
        .map(|n| Some(n as u64))
        .ok_or_else(|| {
            config_error(format!(
                "{what}: expected a step id (a positive integer), got {}",
                describe(v)
            ))
        })
}

/// `sessionCheckpoint(session, step?)`: the latest checkpoint, or the one saved as `step`.
#[wasm_bindgen(js_name = sessionCheckpoint)]
pub fn session_checkpoint(session: JsValue, id: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move {
            match p
                .session()
                .checkpoint(step(&id, "checkpoint(id)")?)
                .await
                .map_err(|e| p.error(e))?
            {
                Some(cp) => p.checkpoint_js(&cp).await,
                None => Ok(JsValue::NULL),
            }
        })
    })
}

/// A history entry as JS sees it: the step's summary (`step`, `parentStep`, `label`, `updatedAt`, counts),
/// and the names the previous releases used for three of them (`id`, `parentId`, `createdAt`; deprecated).
fn history_entry(e: &SavedCheckpoint) -> Value {
    let s = &e.summary;
    let mut m = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(o) = m.as_object_mut() {
        o.remove("runId");
        o.insert("id".into(), s.step.unwrap_or(0).to_string().into());
        if let Some(p) = s.parent_step {
            o.insert("parentId".into(), p.to_string().into());
        }
        if let Some(t) = s.updated_at {
            o.insert("createdAt".into(), t.into());
        }
    }
    m
}

/// `sessionHistory(session, limit?, before?)`: saved steps, newest first, from summaries.
#[wasm_bindgen(js_name = sessionHistory)]
pub fn session_history(session: JsValue, limit: JsValue, before: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move {
            let limit =
                step(&limit, "history({ limit })")?.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
            let before = step(&before, "history({ before })")?;
            let entries = p.session().history(limit, before).await.map_err(|e| p.error(e))?;
            Ok(to_js(&entries.iter().map(history_entry).collect::<Vec<_>>()))
        })
    })
}

/// `sessionLabel(session, step, name)`: names a saved step.
#[wasm_bindgen(js_name = sessionLabel)]
pub fn session_label(session: JsValue, id: JsValue, name: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move {
            let at = step(&id, "label(step, name)")?
                .ok_or_else(|| config_error("label(step, name): step is required".into()))?;
            let name = name.as_string().ok_or_else(|| {
                config_error(format!(
                    "label(step, name): name must be a string, got {}",
                    describe(&name)
                ))
            })?;
            p.session().label(at, &name).await.map_err(|e| p.error(e))?;
            Ok(JsValue::UNDEFINED)
        })
    })
}

/// `sessionRestore(session, stepOrLabel)`: makes a saved step the head again.
#[wasm_bindgen(js_name = sessionRestore)]
pub fn session_restore(session: JsValue, target: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move {
            let target = target
                .as_string()
                .or_else(|| target.as_f64().map(|n| format!("{n}")))
                .ok_or_else(|| {
                    config_error(format!(
                        "restore(stepOrLabel): expected a step id or a label, got {}",
                        describe(&target)
                    ))
                })?;
            let cp = p.session().restore(&target).await.map_err(|e| p.error(e))?;
            p.checkpoint_js(&cp).await
        })
    })
}

/// `sessionSave(session, checkpoint)`: saves a checkpoint as the session's new head.
#[wasm_bindgen(js_name = sessionSave)]
pub fn session_save(session: JsValue, checkpoint: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move {
            let cp = p
                .call
                .checkpoint_in(&checkpoint)
                .await
                .map_err(|e| agent_error(e, None, None))?;
            let saved = p.session().save(cp.checkpoint()).await.map_err(|e| p.error(e))?;
            p.checkpoint_js(&saved).await
        })
    })
}

/// `sessionDelete(session)`: removes the session and its history.
#[wasm_bindgen(js_name = sessionDelete)]
pub fn session_delete(session: JsValue) -> Promise {
    let js = session.clone();
    op(session, move |p| {
        Box::pin(async move {
            let s = p.session();
            s.delete().await.map_err(|e| p.error(e))?;
            if s.unsettled() {
                settle_later(&js, p.store.saver.min_write_interval_ms_dyn());
            }
            Ok(JsValue::UNDEFINED)
        })
    })
}

/// `sessionSettle(session)`: finishes what a store's write interval held back; `true` when nothing is left.
#[wasm_bindgen(js_name = sessionSettle)]
pub fn session_settle(session: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move { Ok(JsValue::from_bool(p.session().settle().await.map_err(|e| p.error(e))?)) })
    })
}

/// Collects numbered events as JS objects.
struct Collect(Array);

impl EventSink for Collect {
    fn event(&mut self, event: &Event<'_>) {
        self.0.push(&to_js(event));
    }

    fn sequenced(&mut self, seq: Option<u64>, event: &Event<'_>) {
        match seq {
            Some(seq) => {
                self.0.push(&numbered(event, seq));
            }
            None => self.event(event),
        }
    }
}

/// `sessionReplay(session, after?, options)`: the logged events numbered above `after`, to `options.onEvent`
/// as they are read (else returned together); with `options.followMs`, then what a running call adds, polling
/// every `options.pollMs` (default 250). Returns `{ events?, running, last }`.
#[wasm_bindgen(js_name = sessionReplay)]
pub fn session_replay(session: JsValue, after: JsValue, options: JsValue) -> Promise {
    op(session, move |p| {
        Box::pin(async move {
            let after = match &after {
                v if v.is_undefined() || v.is_null() => None,
                v => Some(
                    v.as_f64()
                        .filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= 9_007_199_254_740_991.0)
                        .ok_or_else(|| {
                            config_error(format!(
                                "replay({{ after }}): expected a non-negative integer (an event's seq), got {}",
                                describe(v)
                            ))
                        })? as u64,
                ),
            };
            let mut events = JsEvents::read(&options, "replay(options)")?;
            let mut collected = Collect(Array::new());
            let ms = |k: &'static str| get(&options, k).as_f64().filter(|n| *n >= 0.0).map(|n| n as u64);
            let follow = ms("followMs").map(|timeout| Follow::new(timeout, ms("pollMs").unwrap_or(250)));
            let listening = events.listening();
            let sink: &mut dyn EventSink = if listening { &mut events } else { &mut collected };
            let s = p.session();
            let replayed = match follow {
                Some(f) => s.replay_following(after, sink, f).await,
                None => s.replay(after, sink).await,
            }
            .map_err(|e| p.error(e))?;
            Ok(super::convert::fields(&[
                ("events", collected.0.into()),
                ("running", replayed.running.into()),
                ("last", JsValue::from_f64(replayed.last as f64)),
            ]))
        })
    })
}

/// `listSessions(store, saver, prefix)`: the sessions (their heads) stored in a saver.
#[wasm_bindgen(js_name = listSessions)]
pub fn list_sessions(store: JsValue, saver: JsValue, prefix: JsValue) -> Promise {
    future_to_promise(async move {
        let store = Store::new(&store, &saver, crate::DEFAULT_MAX_CHECKPOINT_BYTES, None)?;
        let prefix = prefix.as_string().unwrap_or_default();
        let listed = crate::list_sessions(&store.saver, &prefix)
            .await
            .map_err(|e| agent_error(e, store.cause(), None))?;
        Ok(to_js(&listed))
    })
}

thread_local! {
    /// The last background settle of this instance: each waits for the one before it, so an isolate serving
    /// many requests runs one at a time (its wasm memory is not raised by a burst of them).
    static SETTLE_TAIL: std::cell::RefCell<Option<Promise>> = const { std::cell::RefCell::new(None) };
}

/// Finishes, once the store allows it, what its write interval (Workers KV) held back — a head behind the
/// newest record, keys of a finished session not deleted yet — in a task of its own, handed to the session's
/// `waitUntil` when given (a Worker's `ctx.waitUntil` keeps the isolate alive for it). A failure is dropped:
/// the next call, or `settle()`, finishes the work.
fn settle_later(session: &JsValue, interval_ms: u64) {
    let session = session.clone();
    let before = SETTLE_TAIL.with(|t| t.borrow().clone());
    let wait_until = get(&session, "waitUntil");
    let task = async move {
        // Wait first, holding nothing in wasm memory but the timer: an isolate serving many requests has many
        // of these pending. Then the settle before this one, not for ever.
        let _ = wasm_bindgen_futures::JsFuture::from(super::glue::sleep((interval_ms + 250) as f64)).await;
        if let Some(p) = before {
            let _ = wasm_bindgen_futures::JsFuture::from(super::glue::race(&p, Some(30_000.0))).await;
        }
        // Boxed: the state of the work takes memory only while it runs, not while the task waits.
        Box::pin(async move {
            let parts = Parts::new(&session, None)?;
            parts.session().settle().await.map_err(|e| parts.error(e))
        })
        .await
    };
    // Resolves in every case: it is the next settle's "before".
    let promise = future_to_promise(async move {
        let _ = task.await;
        Ok(JsValue::UNDEFINED)
    });
    SETTLE_TAIL.with(|t| *t.borrow_mut() = Some(promise.clone()));
    if let Some(f) = wait_until.dyn_ref::<Function>() {
        let _ = f.call1(&JsValue::UNDEFINED, &promise);
    }
}
