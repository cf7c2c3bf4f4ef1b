//! The npm package's API: converts at the edge and calls the core. No loop logic lives here.
//!
//! Data crosses the boundary as JSON text (`serde_json` here, `JSON.parse`/`JSON.stringify` there):
//! one call per value instead of one per field. The conversation is mirrored into JS incrementally,
//! so each model call converts only the messages added since the previous one.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Array, Function, JSON, Object, Promise, Reflect};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use crate::agent::{AgentConfig, DEFAULT_MAX_ITERATIONS, Outcome, drive};
use crate::checkpoint::Checkpoint;
use crate::error::{AgentError, ModelError};
use crate::model::{Model, ModelRequest, ModelResponse, ToolDefinition};
use crate::platform::{MaybeSend, new_run_id, now_ms};
use crate::run::Run;
use crate::saver::{MemorySaver, Saver};
use crate::tool::{InterruptError, Tool, ToolContext, ToolError};

#[wasm_bindgen(module = "/src/wasm/glue.js")]
extern "C" {
    #[wasm_bindgen(reexport = "InterruptError", js_name = InterruptError)]
    type JsInterruptErrorClass;
    #[wasm_bindgen(reexport = "AgentError", js_name = AgentError)]
    type JsAgentErrorClass;
    #[wasm_bindgen(reexport = "CheckpointError", js_name = CheckpointError)]
    type JsCheckpointErrorClass;
    #[wasm_bindgen(reexport = "ConfigError", js_name = ConfigError)]
    type JsConfigErrorClass;
    #[wasm_bindgen(reexport = "MaxIterationsError", js_name = MaxIterationsError)]
    type JsMaxIterationsErrorClass;
    #[wasm_bindgen(reexport = "ModelError", js_name = ModelError)]
    type JsModelErrorClass;
    #[wasm_bindgen(reexport = "RunInterruptedError", js_name = RunInterruptedError)]
    type JsRunInterruptedErrorClass;
    #[wasm_bindgen(reexport, js_name = defineTool)]
    fn define_tool(def: JsValue) -> JsValue;
    #[wasm_bindgen(reexport, js_name = isInterrupted)]
    fn is_interrupted(result: JsValue) -> bool;
    #[wasm_bindgen(reexport, js_name = assertComplete)]
    fn assert_complete(result: JsValue) -> JsValue;
    #[wasm_bindgen(reexport, js_name = scriptedModel)]
    fn scripted_model(responses: JsValue) -> JsValue;

    #[wasm_bindgen(js_name = makeError)]
    fn make_error(kind: &str, message: &str, fields: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = isInterruptError)]
    fn is_interrupt_error(e: &JsValue) -> bool;
    #[wasm_bindgen(js_name = errorMessage)]
    fn error_message(e: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorName)]
    fn error_name(e: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = normalizeTool, catch)]
    fn normalize_tool(def: &JsValue, path: &str) -> Result<JsValue, JsValue>;
}

// ---- conversions -----------------------------------------------------------------------------------

/// Any serializable value as a fresh JS value (JSON text + one `JSON.parse`).
fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    serde_json::to_string(value)
        .ok()
        .and_then(|text| JSON::parse(&text).ok())
        .unwrap_or(JsValue::UNDEFINED)
}

/// JSON text of a JS value; `None` for `undefined`, functions, or values `JSON.stringify` rejects.
fn json_text(value: &JsValue) -> Result<Option<String>, String> {
    match JSON::stringify(value) {
        Ok(s) => Ok(s.as_string()),
        Err(e) => Err(error_message(&e)),
    }
}

fn set(target: &Object, key: &str, value: &JsValue) {
    // Defining a property on a plain, extensible object cannot fail.
    let _ = Reflect::set(target, &JsValue::from_str(key), value);
}

fn get(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

fn fields(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        set(&o, k, v);
    }
    o.into()
}

fn config_error(message: String) -> JsValue {
    make_error("ConfigError", &message, &JsValue::UNDEFINED)
}

fn agent_error(error: AgentError, cause: Option<JsValue>) -> JsValue {
    let message = error.to_string();
    match error {
        AgentError::Checkpoint(e) => {
            let path = e
                .path()
                .map(JsValue::from_str)
                .unwrap_or(JsValue::UNDEFINED);
            make_error("CheckpointError", &message, &fields(&[("path", path)]))
        }
        AgentError::Config(_) => make_error("ConfigError", &message, &JsValue::UNDEFINED),
        AgentError::MaxIterations { limit, checkpoint } => make_error(
            "MaxIterationsError",
            &message,
            &fields(&[
                ("maxIterations", limit.into()),
                ("checkpoint", to_js(&*checkpoint)),
            ]),
        ),
        AgentError::Model { checkpoint, .. } => {
            let mut pairs = vec![("checkpoint", to_js(&*checkpoint))];
            pairs.extend(cause.map(|c| ("cause", c)));
            make_error("ModelError", &message, &fields(&pairs))
        }
        AgentError::Interrupted {
            question,
            checkpoint,
        } => make_error(
            "RunInterruptedError",
            &message,
            &fields(&[
                ("question", question.into()),
                ("checkpoint", to_js(&*checkpoint)),
            ]),
        ),
    }
}

fn outcome_to_js(outcome: &Outcome) -> JsValue {
    match outcome {
        Outcome::Interrupted(i) => fields(&[
            ("interrupted", JsValue::TRUE),
            ("question", JsValue::from_str(&i.question)),
            ("checkpoint", to_js(&i.checkpoint)),
        ]),
        Outcome::Complete(r) => fields(&[
            ("text", JsValue::from_str(&r.text)),
            ("usage", to_js(&r.checkpoint.usage)),
            // A separate copy: changing the returned messages cannot alter the checkpoint.
            ("messages", to_js(&r.checkpoint.messages)),
            ("checkpoint", to_js(&r.checkpoint)),
            ("iterations", r.checkpoint.iterations.into()),
        ]),
    }
}

fn checkpoint_from_js(value: &JsValue) -> Result<Checkpoint, AgentError> {
    let text = match value.as_string() {
        Some(text) => text,
        None if value.is_object() => json_text(value)
            .map_err(|e| crate::CheckpointError::Json {
                message: format!("JSON.stringify failed: {e}"),
            })?
            .unwrap_or_default(),
        None => {
            let got = value.js_typeof().as_string().unwrap_or_default();
            let got = if value.is_null() {
                "null".to_owned()
            } else {
                got
            };
            return Err(crate::CheckpointError::at(
                "checkpoint",
                format!("expected a checkpoint object or its JSON text, got {got}"),
            )
            .into());
        }
    };
    Ok(Checkpoint::from_json(&text)?)
}

// ---- JS tools and models ---------------------------------------------------------------------------

struct JsTool {
    definition: ToolDefinition,
    handle: Function,
}

fn classify(error: &JsValue) -> ToolError {
    if is_interrupt_error(error) {
        let question = get(error, "question")
            .as_string()
            .unwrap_or_else(|| error_message(error));
        return InterruptError::new(question).into();
    }
    ToolError::Failed(error_message(error))
}

/// Awaits whatever a JS callback returned (a value or a promise), keeping a synchronous throw as an error.
async fn settle(returned: Result<JsValue, JsValue>) -> Result<JsValue, JsValue> {
    JsFuture::from(Promise::resolve(&returned?)).await
}

impl Tool for JsTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a {
        let js_ctx = fields(&[
            ("toolUseId", ctx.tool_use_id.into()),
            ("runId", ctx.run_id.into()),
        ]);
        async move {
            let returned = self
                .handle
                .call2(&JsValue::UNDEFINED, &to_js(&input), &js_ctx);
            let value = settle(returned).await.map_err(|e| classify(&e))?;
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
}

/// The JS model for one run: the conversation mirrored as JS objects, grown by the new messages only.
struct JsModel {
    model: Function,
    tools: JsValue,
    system: JsValue,
    mirror: RefCell<(Array, usize)>,
    last_error: RefCell<Option<JsValue>>,
}

impl JsModel {
    fn new(agent: &JsAgentInner) -> Self {
        JsModel {
            model: agent.model.clone(),
            tools: agent.tools_js.clone(),
            system: agent
                .config
                .instructions
                .as_deref()
                .map(JsValue::from_str)
                .unwrap_or(JsValue::UNDEFINED),
            mirror: RefCell::new((Array::new(), 0)),
            last_error: RefCell::new(None),
        }
    }

    fn messages(&self, request: &ModelRequest<'_>) -> Array {
        let mut mirror = self.mirror.borrow_mut();
        let (array, synced) = &mut *mirror;
        if *synced > request.messages.len() {
            *array = Array::new();
            *synced = 0;
        }
        if let Some(added) = request.messages.get(*synced..) {
            if let Ok(added) = to_js(added).dyn_into::<Array>() {
                for m in added.iter() {
                    array.push(&m);
                }
            }
        }
        *synced = request.messages.len();
        array.slice(0, array.length())
    }

    fn failed(&self, error: JsValue) -> ModelError {
        let failure = ModelError::Failed {
            name: error_name(&error),
            message: error_message(&error),
        };
        *self.last_error.borrow_mut() = Some(error);
        failure
    }
}

impl Model for JsModel {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let js_request = Object::new();
        if !self.system.is_undefined() {
            set(&js_request, "system", &self.system);
        }
        set(&js_request, "messages", &self.messages(&request));
        set(&js_request, "tools", &self.tools);
        async move {
            let response = settle(self.model.call1(&JsValue::UNDEFINED, &js_request))
                .await
                .map_err(|e| self.failed(e))?;
            let invalid = |problem: String| ModelError::InvalidResponse {
                path: String::new(),
                problem,
            };
            match json_text(&response) {
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
    }
}

// ---- exports ---------------------------------------------------------------------------------------

struct JsAgentInner {
    config: AgentConfig,
    model: Function,
    tools_js: JsValue,
}

/// A configured agent; `prompt` and `resume` each return a promise of the outcome.
#[wasm_bindgen(js_name = Agent)]
pub struct JsAgent {
    inner: Rc<JsAgentInner>,
}

fn optional_string(config: &JsValue, key: &str) -> Result<Option<String>, JsValue> {
    let v = get(config, key);
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    v.as_string()
        .map(Some)
        .ok_or_else(|| config_error(format!("config.{key}: expected a string")))
}

fn parse_config(config: &JsValue) -> Result<JsAgentInner, JsValue> {
    if !config.is_object() {
        return Err(config_error("agent(config): expected a config object { instructions?, tools?, model, maxIterations? }".into()));
    }
    let instructions = optional_string(config, "instructions")?;
    let model = get(config, "model").dyn_into::<Function>().map_err(|_| {
        config_error("config.model: expected a model function (request) => response, e.g. scriptedModel([...]) or a provider".into())
    })?;
    let max_iterations = match get(config, "maxIterations") {
        v if v.is_undefined() || v.is_null() => DEFAULT_MAX_ITERATIONS,
        v => v
            .as_f64()
            .filter(|n| n.fract() == 0.0 && *n >= 1.0 && *n <= f64::from(u32::MAX))
            .map(|n| n as u32)
            .ok_or_else(|| {
                config_error("config.maxIterations: expected a positive integer".into())
            })?,
    };
    let tools_value = get(config, "tools");
    let listed: Array = match tools_value {
        v if v.is_undefined() || v.is_null() => Array::new(),
        v => v
            .dyn_into::<Array>()
            .map_err(|_| config_error("config.tools: expected an array of tools".into()))?,
    };
    let mut tools: Vec<Box<dyn crate::tool::DynTool>> = Vec::new();
    let tools_js = Array::new();
    for (i, raw) in listed.iter().enumerate() {
        let t = normalize_tool(&raw, &format!("config.tools[{i}]"))?;
        let schema_text = json_text(&get(&t, "inputSchema"))
            .ok()
            .flatten()
            .unwrap_or_else(|| "{}".into());
        let definition = ToolDefinition {
            name: get(&t, "name").as_string().unwrap_or_default(),
            description: get(&t, "description").as_string().unwrap_or_default(),
            input_schema: serde_json::from_str(&schema_text).unwrap_or(Value::Null),
        };
        tools_js.push(&to_js(&definition));
        let handle = get(&t, "handle")
            .dyn_into::<Function>()
            .map_err(|_| config_error(format!("config.tools[{i}].handle: expected a function")))?;
        tools.push(Box::new(JsTool { definition, handle }));
    }
    let config =
        AgentConfig::new(instructions, tools, max_iterations).map_err(|e| agent_error(e, None))?;
    Ok(JsAgentInner {
        config,
        model,
        tools_js: tools_js.into(),
    })
}

/// `agent(config)`: `{ instructions?, tools?, model, maxIterations? }`.
#[wasm_bindgen]
pub fn agent(config: JsValue) -> Result<JsAgent, JsValue> {
    Ok(JsAgent {
        inner: Rc::new(parse_config(&config)?),
    })
}

async fn run_to_js(
    inner: Rc<JsAgentInner>,
    run: Result<Run, AgentError>,
) -> Result<JsValue, JsValue> {
    let run = run.map_err(|e| agent_error(e, None))?;
    let model = JsModel::new(&inner);
    match drive(&inner.config, &model, run).await {
        Ok(outcome) => Ok(outcome_to_js(&outcome)),
        Err(e) => Err(agent_error(e, model.last_error.borrow_mut().take())),
    }
}

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Starts a run with a user message.
    pub fn prompt(&self, message: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        let run = match message.as_string() {
            Some(m) => Ok(Run::start(
                &m,
                inner.config.max_iterations,
                new_run_id(),
                now_ms(),
            )),
            None => Err(AgentError::Config(
                "prompt(message): expected a string".into(),
            )),
        };
        future_to_promise(run_to_js(inner, run))
    }

    /// Continues a checkpoint (object or JSON text) with the human's answer.
    pub fn resume(&self, checkpoint: JsValue, answer: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        let answer = match answer.as_string() {
            Some(a) => Ok(a),
            None if answer.is_undefined() => Ok(String::new()),
            None => Err(AgentError::Config(
                "resume(checkpoint, answer): answer must be a string".into(),
            )),
        };
        let run = answer.and_then(|answer| {
            let cp = checkpoint_from_js(&checkpoint)?;
            Ok(Run::resume(
                cp,
                &answer,
                inner.config.max_iterations,
                new_run_id,
            )?)
        });
        future_to_promise(run_to_js(inner, run))
    }
}

/// An in-memory saver: `get`, `put`, `delete`, `list(prefix?)`, all async.
#[wasm_bindgen(js_name = MemorySaver)]
pub struct JsMemorySaver {
    inner: MemorySaver,
}

/// `memorySaver()`: a fresh in-memory saver.
#[wasm_bindgen(js_name = memorySaver)]
pub fn memory_saver() -> JsMemorySaver {
    JsMemorySaver {
        inner: MemorySaver::new(),
    }
}

fn ready(result: Result<JsValue, JsValue>) -> Promise {
    match result {
        Ok(v) => Promise::resolve(&v),
        Err(e) => Promise::reject(&e),
    }
}

fn saver_error(e: crate::SaverError) -> JsValue {
    make_error("AgentError", &e.to_string(), &JsValue::UNDEFINED)
}

#[wasm_bindgen(js_class = MemorySaver)]
impl JsMemorySaver {
    /// The checkpoint under `key`, or `null`.
    pub fn get(&self, key: String) -> Promise {
        ready(
            pollster_now(self.inner.get(&key))
                .map(|found| found.map_or(JsValue::NULL, |cp| to_js(&cp)))
                .map_err(saver_error),
        )
    }

    /// Stores a copy of `checkpoint` under `key`; refuses an invalid checkpoint.
    pub fn put(&self, key: String, checkpoint: JsValue) -> Promise {
        ready(match checkpoint_from_js(&checkpoint) {
            Ok(cp) => pollster_now(self.inner.put(&key, &cp))
                .map(|()| JsValue::UNDEFINED)
                .map_err(saver_error),
            Err(e) => Err(agent_error(e, None)),
        })
    }

    /// Removes `key`.
    pub fn delete(&self, key: String) -> Promise {
        ready(
            pollster_now(self.inner.delete(&key))
                .map(|()| JsValue::UNDEFINED)
                .map_err(saver_error),
        )
    }

    /// Summaries `{ key, iterations, interrupted, question?, updatedAt?, ... }` of every checkpoint whose
    /// key starts with `prefix`.
    pub fn list(&self, prefix: Option<String>) -> Promise {
        ready(
            pollster_now(self.inner.list(prefix.as_deref().unwrap_or("")))
                .map(|l| to_js(&l))
                .map_err(saver_error),
        )
    }
}

/// Takes the value of a future that is already complete (the memory saver never waits).
fn pollster_now<T>(future: impl Future<Output = T>) -> T {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
