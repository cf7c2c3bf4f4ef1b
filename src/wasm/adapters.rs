//! JS tools and models as the core's `Tool` and `Model`. Built per call: they hold JS values only while a
//! run uses them.

use std::cell::RefCell;
use std::future::Future;

use js_sys::{Array, Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::convert::{get, json_text, to_js};
use super::glue::{
    append_messages, call_now, describe, error_message, error_name, is_interrupt_error, is_thenable, model_request,
    next_state, tool_context,
};
use crate::error::ModelError;
use crate::interrupt::{Approval, OnExpire};
use crate::message::Message;
use crate::model::{Model, ModelRequest, ModelResponse, ScriptedModel, ToolDefinition};
use crate::platform::MaybeSend;
use crate::tool::{InterruptError, Tool, ToolContext, ToolError};

/// Awaits `f(a)` or `f(a, b)`, whatever it returns; a synchronous throw is an error like a rejection. A
/// plain value (a synchronous tool, most often) is used at once: only a thenable is awaited, which spares
/// each such call a promise, two closures and a trip through the microtask queue.
pub(crate) async fn call_js(f: &JsValue, a: &JsValue, b: Option<&JsValue>) -> Result<JsValue, JsValue> {
    let returned = call_now(f, a, b.unwrap_or(&JsValue::UNDEFINED))?;
    if !is_thenable(&returned) {
        return Ok(returned);
    }
    JsFuture::from(Promise::resolve(&returned)).await
}

/// Awaits whatever a JS method returned (a value or a promise), keeping a synchronous throw as an error.
pub(crate) async fn settle(returned: Result<JsValue, JsValue>) -> Result<JsValue, JsValue> {
    let promise = Promise::resolve(&returned?);
    let promise = match DEADLINE.get() {
        Some(at) => super::glue::race(&promise, (at - js_sys::Date::now()).max(0.0)),
        None => promise,
    };
    JsFuture::from(promise).await
}

thread_local! {
    /// When set (ms since the epoch), [`settle`] gives up on a JS promise at that moment.
    static DEADLINE: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` (a poll) with promises awaited by [`settle`] bounded by `deadline`.
pub(crate) fn with_deadline<R>(deadline: Option<f64>, f: impl FnOnce() -> R) -> R {
    let previous = DEADLINE.replace(deadline);
    let out = f();
    DEADLINE.set(previous);
    out
}

pub(crate) struct JsTool {
    /// The agent's rules, where this tool's definition is the `index`-th.
    pub(crate) rules: std::sync::Arc<crate::run::RunConfig>,
    pub(crate) index: usize,
    pub(crate) handle: Function,
    pub(crate) approval: JsApproval,
}

/// A JS tool's `needsApproval`: fixed when the agent was built, or a function of `(input, ctx)` returning a
/// boolean or `{ expiresInMs }`.
pub(crate) enum JsApproval {
    Fixed(Approval),
    Function(JsValue),
}

fn interrupt_of(error: &JsValue) -> InterruptError {
    let question = get(error, "question")
        .as_string()
        .unwrap_or_else(|| error_message(error));
    let mut i = InterruptError::new(question);
    let options = get(error, "options");
    if Array::is_array(&options) {
        i.options = Some(Array::from(&options).iter().filter_map(|o| o.as_string()).collect());
    }
    let data = get(error, "data");
    if !data.is_undefined() {
        // Plain JSON (InterruptError checked it): what does not read back is nested beyond the parser's bound,
        // which the run refuses like any data over limits.maxDepth.
        i.data = Some(
            json_text(&data)
                .ok()
                .flatten()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_else(too_deep_marker),
        );
    }
    i.expires_in_ms = get(error, "expiresInMs")
        .as_f64()
        .filter(|n| *n >= 0.0 && n.fract() == 0.0)
        .map(|n| n as u64);
    i
}

fn classify(error: &JsValue) -> ToolError {
    if is_interrupt_error(error) {
        return interrupt_of(error).into();
    }
    ToolError::Failed(error_message(error))
}

fn context(ctx: &ToolContext<'_>) -> JsValue {
    tool_context(ctx.tool_use_id, ctx.run_id, ctx.state().map(|s| s.to_string()))
}

/// Records the state a JS tool set through its context. A state that does not read back (nested beyond the
/// parser's bound) is set as a value deeper than any limit, so the run refuses it with its usual error.
fn take_state(js_ctx: &JsValue, ctx: &ToolContext<'_>) {
    if let Some(text) = next_state(js_ctx) {
        ctx.set_state(serde_json::from_str::<Value>(&text).unwrap_or_else(|_| too_deep_marker()));
    }
}

/// A JSON value nested deeper than [`crate::MAX_DEPTH_LIMIT`] allows, standing for one that could not be read.
fn too_deep_marker() -> Value {
    let mut v = Value::Null;
    for _ in 0..=crate::MAX_DEPTH_LIMIT {
        v = Value::Array(vec![v]);
    }
    v
}

/// A `needsApproval` value (or what its function returned) as an [`Approval`].
pub(crate) fn approval_of(v: &JsValue) -> Result<Approval, String> {
    if v.is_undefined() || v.is_null() || v.as_bool() == Some(false) {
        return Ok(Approval::NotNeeded);
    }
    if v.as_bool() == Some(true) {
        return Ok(Approval::needed());
    }
    if v.is_object() && !v.is_function() {
        let ms = get(v, "expiresInMs");
        if ms.is_undefined() {
            return Ok(Approval::needed());
        }
        if let Some(n) = ms.as_f64().filter(|n| *n >= 0.0 && n.fract() == 0.0 && *n <= 9.0e15) {
            return Ok(Approval::needed_within(n as u64));
        }
        return Err(format!(
            "needsApproval.expiresInMs: expected a non-negative integer, got {}",
            describe(&ms)
        ));
    }
    Err(format!(
        "needsApproval: expected a boolean or {{ expiresInMs }}, got {}",
        describe(v)
    ))
}

impl Tool for JsTool {
    fn definition(&self) -> ToolDefinition {
        self.rules
            .definitions
            .get(self.index)
            .cloned()
            .unwrap_or_else(|| ToolDefinition::new("", "", Value::Null))
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a {
        let js_ctx = context(&ctx);
        async move {
            let returned = call_js(&self.handle, &to_js(&input), Some(&js_ctx)).await;
            take_state(&js_ctx, &ctx);
            let value = returned.map_err(|e| classify(&e))?;
            if let Some(text) = value.as_string() {
                return Ok(Value::String(text));
            }
            if value.is_undefined() {
                return Ok(Value::String(String::new()));
            }
            match json_text(&value) {
                Ok(Some(text)) => Ok(Value::String(text)),
                Ok(None) => Err(ToolError::failed(
                    "the tool returned a value JSON cannot encode (a function or symbol)",
                )),
                Err(e) => Err(ToolError::failed(format!(
                    "the tool's result is not JSON-serializable: {e}"
                ))),
            }
        }
    }

    fn needs_approval<'a>(
        &'a self,
        input: &'a Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<crate::interrupt::Approval, ToolError>> + MaybeSend + 'a {
        let js_ctx = context(&ctx);
        async move {
            let decided = match &self.approval {
                JsApproval::Fixed(a) => return Ok(*a),
                JsApproval::Function(f) => call_js(f, &to_js(input), Some(&js_ctx))
                    .await
                    .map_err(|e| ToolError::Failed(format!("needsApproval threw: {}", error_message(&e))))?,
            };
            approval_of(&decided).map_err(ToolError::Failed)
        }
    }

    fn may_need_approval(&self) -> bool {
        !matches!(self.approval, JsApproval::Fixed(Approval::NotNeeded))
    }

    fn on_expire(&self) -> OnExpire {
        self.rules
            .policies
            .get(self.index)
            .map(|p| p.on_expire)
            .unwrap_or_default()
    }
}

/// What answers a JS model's requests: a function, or a script (`scriptedModel([...])`).
pub(crate) enum Callee {
    Function(Function),
    Script(Array),
}

/// The JS model for one run: the conversation mirrored as JS objects, grown by the new messages only.
pub(crate) struct JsModel {
    callee: Callee,
    tools: JsValue,
    system: JsValue,
    mirror: RefCell<Mirror>,
    pub(crate) last_error: RefCell<Option<JsValue>>,
}

/// JS objects equal to the run's first `synced` messages.
struct Mirror {
    array: Array,
    synced: usize,
    /// The JSON text a resumed checkpoint came in, and how many messages it holds: parsed (by the host's
    /// JSON.parse) only if the mirror is needed, instead of converting that history back out of Rust.
    seed: Option<(JsValue, usize)>,
}

#[wasm_bindgen]
extern "C" {
    // JSON.parse of a JS string, without copying it through wasm memory.
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn parse_js(text: &JsValue) -> Result<JsValue, JsValue>;
}

impl JsModel {
    /// `system`: the instructions as the JS string the caller gave (or `undefined`), handed to the model as
    /// they are instead of copied out of Rust on every call.
    pub(crate) fn new(callee: Callee, tools: JsValue, system: JsValue) -> Self {
        JsModel {
            callee,
            tools,
            system: if system.is_string() { system } else { JsValue::UNDEFINED },
            mirror: RefCell::new(Mirror {
                array: Array::new(),
                synced: 0,
                seed: None,
            }),
            last_error: RefCell::new(None),
        }
    }

    /// The JSON text a resumed checkpoint came in and its message count (see [`Mirror::seed`]).
    pub(crate) fn seed(&self, seed: (JsValue, usize)) {
        self.mirror.borrow_mut().seed = Some(seed);
    }

    /// The run's messages as JS objects (a fresh array; the objects are shared with earlier requests).
    /// `unchanged`: how many leading messages are as they were at the last call (or, the first time, as
    /// the resumed checkpoint held them); the mirror keeps that many and takes the rest anew.
    pub(crate) fn messages(&self, messages: &[Message], unchanged: usize) -> Array {
        let mut m = self.mirror.borrow_mut();
        if let Some((text, count)) = m.seed.take() {
            // Only a current-format checkpoint: an older one may have been upgraded or repaired on decode.
            let seeded = parse_js(&text)
                .ok()
                .filter(|v| get(v, "version").as_f64() == Some(f64::from(crate::CHECKPOINT_VERSION)))
                .map(|v| get(&v, "messages"))
                .and_then(|v| v.dyn_into::<Array>().ok());
            if let Some(array) = seeded.filter(|a| a.length() as usize == count) {
                m.array = array;
                m.synced = count;
            }
        }
        let keep = m.synced.min(unchanged).min(messages.len());
        if keep < m.synced {
            m.array.set_length(u32::try_from(keep).unwrap_or(0));
            m.synced = keep;
        }
        let added = messages
            .get(m.synced..)
            .filter(|a| !a.is_empty())
            .and_then(|a| crate::json::to_string(a).ok());
        m.synced = messages.len();
        append_messages(&m.array, added.as_deref())
    }

    fn failed(&self, error: JsValue) -> ModelError {
        let failure = ModelError::Failed {
            name: error_name(&error),
            message: error_message(&error),
        };
        *self.last_error.borrow_mut() = Some(error);
        failure
    }

    fn js_request(&self, request: &ModelRequest<'_>) -> JsValue {
        model_request(
            &self.system,
            &self.messages(request.messages, request.unchanged),
            &self.tools,
        )
    }
}

/// A model's answer (an object, or a string for a final text) as a [`ModelResponse`].
pub(crate) fn response_of(response: &JsValue) -> Result<ModelResponse, ModelError> {
    if let Some(text) = response.as_string() {
        return Ok(ModelResponse::text(text));
    }
    let invalid = |problem: String| ModelError::InvalidResponse {
        path: String::new(),
        problem,
    };
    match json_text(response) {
        Ok(Some(text)) if response.is_object() => ModelResponse::from_json(&text),
        Ok(_) => Err(invalid(format!(
            "expected an object {{ content, usage? }}, got {}",
            if response.is_null() {
                "null".to_owned()
            } else {
                response.js_typeof().as_string().unwrap_or_default()
            }
        ))),
        Err(e) => Err(invalid(format!("not JSON-serializable: {e}"))),
    }
}

impl Model for JsModel {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        async move {
            let response = match &self.callee {
                Callee::Function(f) => {
                    let r = call_js(f, &self.js_request(&request), None)
                        .await
                        .map_err(|e| self.failed(e))?;
                    if r.is_string() {
                        // A model function answers with an object; only scripts may use plain strings.
                        return Err(ModelError::InvalidResponse {
                            path: String::new(),
                            problem: "expected an object { content, usage? }, got string".into(),
                        });
                    }
                    r
                }
                Callee::Script(script) => {
                    let turn = ScriptedModel::turn_of(request.messages);
                    let entry = script.get(u32::try_from(turn).unwrap_or(u32::MAX));
                    if turn >= script.length() as usize {
                        return Err(ModelError::ScriptExhausted {
                            len: script.length() as usize,
                            turn: turn.saturating_add(1),
                        });
                    }
                    if entry.is_function() {
                        call_js(&entry, &self.js_request(&request), None)
                            .await
                            .map_err(|e| self.failed(e))?
                    } else {
                        entry
                    }
                }
            };
            response_of(&response)
        }
    }

    /// A script's answers play back as deltas (text word by word); a model function's arrive whole.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn crate::model::DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        async move {
            let scripted = matches!(self.callee, Callee::Script(_));
            let response = self.complete(request).await?;
            if scripted {
                crate::model::stream_words(&response, sink);
            }
            Ok(response)
        }
    }
}
