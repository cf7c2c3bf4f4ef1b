//! The npm package's low-level API: converts at the edge and calls the core. No loop rules live here.
//!
//! Nothing this module hands to JS owns wasm memory: `compileAgent` checks a config once and returns a
//! frozen JS object (the spec); each `prompt`/`resume`/`runSession` builds the Rust agent from it, runs,
//! and drops everything when its promise settles. So an agent, session or saver the package's front
//! hands out is released by the garbage collector like any JS object — no finalizer has to run (workerd
//! and tight `await` loops may never run them).
//!
//! Data crosses the boundary as JSON text (`serde_json` here, `JSON.parse`/`JSON.stringify` there): one
//! call per value instead of one per field.

mod adapters;
mod convert;
mod glue;
mod providers;
mod savers;

use js_sys::{Array, Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use adapters::{Callee, JsModel, JsTool, approval_of};
use convert::{
    agent_error, agent_error_as, checkpoint_text, config_error, fields, get, integer_option, json_text, outcome_to_js,
    string_option, to_js,
};
use glue::{compile_schema, describe, freeze, make_error};
use providers::Provider;
use savers::AnySaver;

use crate::agent::{AgentConfig, Hooks, Input, Outcome, check_tool_name, drive};
use crate::checkpoint::Checkpoint;
use crate::error::{AgentError, ModelError};
use crate::event::{Event, EventSink};
use crate::interrupt::{OnExpire, Resume};
use crate::model::{Model, ModelRequest, ModelResponse, ToolDefinition};
use crate::platform::MaybeSend;
use crate::run::DEFAULT_MAX_ITERATIONS;
use crate::session::{SessionOptions, Thread, Turn, run_session};

fn invalid_tool(path: &str, what: &str, got: &JsValue) -> JsValue {
    config_error(format!("{path}: expected {what}, got {}", describe(got)))
}

/// Checks a tool definition and compiles its schema: `{ name, description, inputSchema, handle,
/// needsApproval?, onExpire? }`, frozen.
fn normalize_tool(def: &JsValue, path: &str) -> Result<JsValue, JsValue> {
    if !def.is_object() || def.is_function() {
        return Err(invalid_tool(path, "a tool object", def));
    }
    let name = get(def, "name");
    let name_text = name.as_string().unwrap_or_default();
    check_tool_name(&name_text).map_err(|problem| match name.as_string() {
        Some(_) => config_error(format!("{path}.name: {problem}")),
        None => invalid_tool(&format!("{path}.name"), "1-64 letters, digits, \"_\" or \"-\"", &name),
    })?;
    let description = get(def, "description");
    if !description.is_undefined() && !description.is_string() {
        return Err(invalid_tool(&format!("{path}.description"), "a string", &description));
    }
    let handle = get(def, "handle");
    if !handle.is_function() {
        return Err(invalid_tool(
            &format!("{path}.handle"),
            "a function (input, ctx) => result",
            &handle,
        ));
    }
    let (schema, field) = match get(def, "inputSchema") {
        s if s.is_undefined() => (get(def, "schema"), "schema"),
        s => (s, "inputSchema"),
    };
    let input_schema = compile_schema(&schema, &format!("{path}.{field}"))?;
    let approval = get(def, "needsApproval");
    if !approval.is_function() {
        approval_of(&approval).map_err(|p| config_error(format!("{path}.{p}")))?;
    }
    let on_expire = get(def, "onExpire");
    if !on_expire.is_undefined() && !matches!(on_expire.as_string().as_deref(), Some("deny" | "error")) {
        return Err(invalid_tool(
            &format!("{path}.onExpire"),
            "\"deny\" or \"error\"",
            &on_expire,
        ));
    }
    Ok(freeze(&fields(&[
        ("name", name),
        (
            "description",
            if description.is_undefined() {
                "".into()
            } else {
                description
            },
        ),
        ("inputSchema", input_schema),
        ("handle", handle),
        ("needsApproval", approval),
        ("onExpire", on_expire),
    ])))
}

/// `defineTool({ name, description, schema, handle, needsApproval?, onExpire? })`: checks it at once.
#[wasm_bindgen(js_name = defineTool)]
pub fn define_tool(def: JsValue) -> Result<JsValue, JsValue> {
    normalize_tool(&def, "defineTool")
}

/// Type guard: the run paused for a human.
#[wasm_bindgen(js_name = isInterrupted)]
pub fn is_interrupted(result: JsValue) -> bool {
    result.is_object() && get(&result, "interrupted").as_bool() == Some(true)
}

/// Returns a finished result; throws `RunInterruptedError` (with the same checkpoint object) for a paused one.
#[wasm_bindgen(js_name = assertComplete)]
pub fn assert_complete(result: JsValue) -> Result<JsValue, JsValue> {
    if !is_interrupted(result.clone()) {
        return Ok(result);
    }
    let question = get(&result, "question").as_string().unwrap_or_default();
    let message = AgentError::Interrupted {
        question: question.clone(),
        checkpoint: Box::new(Checkpoint::new("", 0)),
    }
    .to_string();
    Err(make_error(
        "RunInterruptedError",
        &message,
        &fields(&[
            ("question", question.into()),
            ("checkpoint", get(&result, "checkpoint")),
        ]),
    ))
}

/// `compileAgent(config, builtinModel)`: checks `{ instructions?, tools?, model, maxIterations? }` once and
/// returns the spec every run is built from. `builtinModel` is the spec of a provider or script when
/// `config.model` is one of ours (the package's front knows), so the run calls it without JS in between.
#[wasm_bindgen(js_name = compileAgent)]
pub fn compile_agent(config: JsValue, builtin: JsValue) -> Result<JsValue, JsValue> {
    if !config.is_object() {
        return Err(config_error(
            "agent(config): expected a config object { instructions?, tools?, model, maxIterations? }".into(),
        ));
    }
    let instructions = string_option(&config, "instructions", "config")?;
    let model = get(&config, "model");
    if !model.is_function() {
        return Err(config_error(
            "config.model: expected a model function (request) => response, e.g. scriptedModel([...]) or a provider"
                .into(),
        ));
    }
    let max_iterations = integer_option(&config, "maxIterations", "config", 1)?
        .map_or(DEFAULT_MAX_ITERATIONS, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let state = match get(&config, "state") {
        s if s.is_undefined() => JsValue::UNDEFINED,
        s => glue::plain_json_text(&s, "config.state")?.into(),
    };
    let keys = glue::checkpoint_keys_spec(&config)?;
    let limits = limits_spec(&config)?;
    let listed: Array = match get(&config, "tools") {
        v if v.is_undefined() || v.is_null() => Array::new(),
        v => v
            .dyn_into::<Array>()
            .map_err(|_| config_error("config.tools: expected an array of tools".into()))?,
    };
    let tools = Array::new();
    let tool_specs = Array::new();
    let mut definitions = Vec::new();
    for (i, raw) in listed.iter().enumerate() {
        let t = normalize_tool(&raw, &format!("config.tools[{i}]"))?;
        let schema = get(&t, "inputSchema");
        definitions.push(ToolDefinition {
            name: get(&t, "name").as_string().unwrap_or_default(),
            description: get(&t, "description").as_string().unwrap_or_default(),
            input_schema: serde_json::from_str(&json_text(&schema).ok().flatten().unwrap_or_default())
                .unwrap_or(Value::Null),
        });
        // What a JS model sees, from the JS values at hand (not converted back out of Rust).
        tool_specs.push(&freeze(&fields(&[
            ("name", get(&t, "name")),
            ("description", get(&t, "description")),
            ("inputSchema", schema),
        ])));
        tools.push(&t);
    }
    // Structured output: the schema (builder or JSON Schema) and the final_answer tool models see.
    let output = match get(&config, "output") {
        o if o.is_undefined() || o.is_null() => JsValue::UNDEFINED,
        o => {
            let schema = glue::compile_output_schema(&o, "config.output")?;
            let text = json_text(&schema).ok().flatten().unwrap_or_default();
            let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let (definition, _) = crate::run::final_answer_definition(&value);
            tool_specs.push(&freeze(&to_js(&definition)));
            text.into()
        }
    };
    let compaction = compaction_spec(&config)?;
    let max_output_retries = integer_option(&config, "maxOutputRetries", "config", 0)?
        .map_or(crate::DEFAULT_MAX_OUTPUT_RETRIES, |n| {
            u32::try_from(n).unwrap_or(u32::MAX)
        });
    let definitions = serde_json::to_string(&definitions).unwrap_or_default();
    let spec = freeze(&fields(&[
        ("instructions", instructions.map_or(JsValue::UNDEFINED, JsValue::from)),
        ("tools", tools.into()),
        ("toolSpecs", freeze(&tool_specs)),
        ("definitions", definitions.into()),
        ("model", model),
        ("builtin", builtin),
        ("maxIterations", max_iterations.into()),
        ("state", state),
        ("keys", keys),
        ("limits", limits),
        ("output", output),
        ("maxOutputRetries", max_output_retries.into()),
        ("compaction", compaction),
    ]));
    // The agent's own rules (e.g. one name per tool) are checked here, not at the first call.
    Parts::build(&spec)?;
    Ok(spec)
}

/// `config.compaction` (`{ maxBytes?, maxMessages?, keepFirst? }`), checked: `[maxBytes, maxMessages,
/// keepFirst]` with `-1` for "no bound".
fn compaction_spec(config: &JsValue) -> Result<JsValue, JsValue> {
    let c = get(config, "compaction");
    if c.is_undefined() || c.is_null() {
        return Ok(JsValue::UNDEFINED);
    }
    if !c.is_object() {
        return Err(config_error(format!(
            "config.compaction: expected {{ maxBytes?, maxMessages?, keepFirst? }}, got {}",
            describe(&c)
        )));
    }
    if !get(&c, "summarize").is_undefined() {
        return Err(config_error(
            "config.compaction.summarize: not supported yet; compaction drops the oldest whole steps".into(),
        ));
    }
    let what = "config.compaction";
    let max_bytes = integer_option(&c, "maxBytes", what, 1)?;
    let max_messages = integer_option(&c, "maxMessages", what, 1)?;
    let keep_first = integer_option(&c, "keepFirst", what, 1)?.unwrap_or(1);
    if max_bytes.is_none() && max_messages.is_none() {
        return Err(config_error(format!("{what}: give maxBytes, maxMessages or both")));
    }
    let n = |v: Option<u64>| v.map_or(-1.0, |n| n as f64);
    Ok(Array::of3(
        &n(max_bytes).into(),
        &n(max_messages).into(),
        &(keep_first as f64).into(),
    )
    .into())
}

/// The spec's compaction rule, if any.
fn compaction_of(spec: &JsValue) -> Option<crate::run::Compaction> {
    let c = get(spec, "compaction");
    if !Array::is_array(&c) {
        return None;
    }
    let c = Array::from(&c);
    let at = |k: u32| c.get(k).as_f64().filter(|n| *n >= 0.0).map(|n| n as usize);
    let mut rule = crate::run::Compaction::default().keep_first(at(2).unwrap_or(1));
    if let Some(b) = at(0) {
        rule = rule.max_bytes(b);
    }
    if let Some(m) = at(1) {
        rule = rule.max_messages(m);
    }
    Some(rule)
}

/// `config.limits` (`{ maxCheckpointBytes?, maxDepth? }`), checked.
fn limits_spec(config: &JsValue) -> Result<JsValue, JsValue> {
    let limits = get(config, "limits");
    if limits.is_undefined() || limits.is_null() {
        return Ok(JsValue::UNDEFINED);
    }
    if !limits.is_object() {
        return Err(config_error(format!(
            "config.limits: expected {{ maxCheckpointBytes?, maxDepth? }}, got {}",
            describe(&limits)
        )));
    }
    let bytes = integer_option(&limits, "maxCheckpointBytes", "config.limits", 1)?;
    let depth = integer_option(&limits, "maxDepth", "config.limits", 1)?;
    if let Some(d) = depth.filter(|d| *d > crate::limits::MAX_DEPTH_LIMIT as u64) {
        return Err(config_error(format!(
            "config.limits.maxDepth: {d} is over {} (what a checkpoint can hold and still be read back)",
            crate::limits::MAX_DEPTH_LIMIT
        )));
    }
    let number = |n: Option<u64>| n.map_or(JsValue::UNDEFINED, |n| JsValue::from_f64(n as f64));
    Ok(freeze(&fields(&[
        ("maxCheckpointBytes", number(bytes)),
        ("maxDepth", number(depth)),
    ])))
}

/// The limits a spec names (defaults for what it leaves out).
fn limits_of(spec: &JsValue) -> crate::limits::Limits {
    let limits = get(spec, "limits");
    let mut out = crate::limits::Limits::default();
    if let Some(n) = get(&limits, "maxCheckpointBytes").as_f64() {
        out = out.max_checkpoint_bytes(n as usize);
    }
    if let Some(n) = get(&limits, "maxDepth").as_f64() {
        out = out.max_depth(n as usize);
    }
    out
}

/// The checkpoint keys a spec holds.
fn keys_of(spec: &JsValue) -> Option<crate::keys::CheckpointKeys> {
    let keys = get(spec, "keys");
    let current = get(&keys, "current").as_string()?;
    let mut out = crate::keys::CheckpointKeys::new(current).sealed(get(&keys, "sealed").as_bool() == Some(true));
    for pair in Array::from(&get(&keys, "keys")).iter() {
        let pair = Array::from(&pair);
        let kid = pair.get(0).as_string().unwrap_or_default();
        let secret = js_sys::Uint8Array::new(&pair.get(1)).to_vec();
        out = out.key(kid, secret);
    }
    Some(out)
}

/// What a run needs, built from a spec for one call and dropped with it.
struct Parts {
    config: AgentConfig,
    model: SpecModel,
}

/// A model as the spec names it: a JS function or script, or a provider called directly.
enum SpecModel {
    Js(JsModel),
    Provider(Provider),
}

impl Model for SpecModel {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        async move {
            match self {
                SpecModel::Js(m) => m.complete(request).await,
                SpecModel::Provider(m) => m.complete(request).await,
            }
        }
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn crate::model::DeltaSink,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        async move {
            match self {
                SpecModel::Js(m) => m.stream(request, sink).await,
                SpecModel::Provider(m) => m.stream(request, sink).await,
            }
        }
    }
}

impl Parts {
    fn build(spec: &JsValue) -> Result<Self, JsValue> {
        let definitions: Vec<ToolDefinition> =
            serde_json::from_str(&get(spec, "definitions").as_string().unwrap_or_default())
                .map_err(|_| config_error("not an agent: create it with agent(config)".into()))?;
        let listed = Array::from(&get(spec, "tools"));
        let mut tools: Vec<Box<dyn crate::tool::DynTool>> = Vec::with_capacity(definitions.len());
        for (k, definition) in definitions.into_iter().enumerate() {
            let t = listed.get(u32::try_from(k).unwrap_or(u32::MAX));
            tools.push(Box::new(JsTool {
                definition,
                handle: get(&t, "handle").unchecked_into(),
                approval: get(&t, "needsApproval"),
                on_expire: match get(&t, "onExpire").as_string().as_deref() {
                    Some("deny") => OnExpire::Deny,
                    _ => OnExpire::Error,
                },
            }));
        }
        let instructions = get(spec, "instructions").as_string();
        let max_iterations = get(spec, "maxIterations")
            .as_f64()
            .map_or(DEFAULT_MAX_ITERATIONS, |n| n as u32);
        let builtin = get(spec, "builtin");
        let model = match Provider::from_spec(&builtin) {
            Some(p) => SpecModel::Provider(p),
            None => {
                let script = get(&builtin, "script");
                let callee = if Array::is_array(&script) {
                    Callee::Script(script.unchecked_into())
                } else {
                    Callee::Function(get(spec, "model").unchecked_into())
                };
                SpecModel::Js(JsModel::new(
                    callee,
                    get(spec, "toolSpecs"),
                    instructions.as_deref(),
                    None,
                ))
            }
        };
        let mut config = AgentConfig::new(instructions, tools, max_iterations).map_err(|e| agent_error(e, None))?;
        config.set_limits(limits_of(spec));
        let state = get(spec, "state")
            .as_string()
            .and_then(|t| serde_json::from_str(&t).ok());
        config.set_state(state).map_err(|e| agent_error(e, None))?;
        if let Some(output) = get(spec, "output")
            .as_string()
            .and_then(|t| serde_json::from_str(&t).ok())
        {
            let retries = get(spec, "maxOutputRetries")
                .as_f64()
                .map_or(crate::DEFAULT_MAX_OUTPUT_RETRIES, |n| n as u32);
            config.set_output(output, retries).map_err(|e| agent_error(e, None))?;
        }
        if let Some(compaction) = compaction_of(spec) {
            config.set_compaction(compaction).map_err(|e| agent_error(e, None))?;
        }
        if let Some(keys) = keys_of(spec) {
            config.set_keys(keys).map_err(|e| agent_error(e, None))?;
        }
        Ok(Parts { config, model })
    }

    fn cause(&self) -> Option<JsValue> {
        match &self.model {
            SpecModel::Js(m) => m.last_error.borrow_mut().take(),
            SpecModel::Provider(_) => None,
        }
    }

    /// The JS result or error of a run; with sealing on, its checkpoint is handed out sealed.
    async fn finish(&self, ran: Result<Outcome, AgentError>, cause: Option<JsValue>) -> Result<JsValue, JsValue> {
        let codec = self.config.codec();
        let checkpoint = match &ran {
            Ok(outcome) => Some(outcome.checkpoint()),
            Err(e) => e.checkpoint(),
        };
        let sealed = match checkpoint.filter(|_| codec.sealed()) {
            Some(cp) => Some(sealed_js(codec, cp).await?),
            None => None,
        };
        match ran {
            Ok(outcome) => {
                let messages = match (&self.model, &outcome) {
                    (SpecModel::Js(m), Outcome::Complete(r)) => Some(m.messages(&r.checkpoint.messages).into()),
                    _ => None,
                };
                Ok(outcome_to_js(&outcome, messages, sealed))
            }
            Err(e) => Err(agent_error_as(e, cause, sealed)),
        }
    }

    /// Decodes a checkpoint handed in from JS (object, JSON text, or sealed envelope) as the agent reads
    /// checkpoints, and lets a JS model reuse the caller's copy of its messages.
    async fn checkpoint_in(&self, value: &JsValue) -> Result<Checkpoint, AgentError> {
        let codec = self.config.codec();
        let (js_text, text) = checkpoint_text(value, codec.limits.max_checkpoint_bytes)?;
        let cp = codec.decode(&text).await?;
        if let (SpecModel::Js(m), false) = (&self.model, crate::keys::is_sealed_text(&text)) {
            m.seed((js_text, cp.messages.len()));
        }
        Ok(cp)
    }
}

/// A signed checkpoint as the JS value to hand out when sealing: the envelope object.
async fn sealed_js(codec: crate::keys::Codec<'_>, checkpoint: &Checkpoint) -> Result<JsValue, JsValue> {
    let text = codec.text(checkpoint).await.map_err(|e| agent_error(e.into(), None))?;
    Ok(js_sys::JSON::parse(&text).unwrap_or(JsValue::UNDEFINED))
}

/// A checkpoint as the JS value to hand out: sealed, or as it is.
async fn checkpoint_out(codec: crate::keys::Codec<'_>, checkpoint: &Checkpoint) -> Result<JsValue, JsValue> {
    if codec.sealed() {
        sealed_js(codec, checkpoint).await
    } else {
        Ok(to_js(checkpoint))
    }
}

impl Parts {}

/// Sends each event to a JS callback as a plain object. What the callback throws is ignored: a broken
/// listener must not break a run the user pays for.
struct JsEvents {
    callback: Function,
}

impl EventSink for JsEvents {
    fn event(&mut self, event: &Event<'_>) {
        let _ = self.callback.call1(&JsValue::UNDEFINED, &to_js(event));
    }
}

/// `{ onEvent?, signal? }` of a call.
struct CallOptions {
    events: Option<JsEvents>,
    signal: Option<JsValue>,
}

impl CallOptions {
    fn read(options: &JsValue, what: &str) -> Result<Self, JsValue> {
        if options.is_undefined() || options.is_null() {
            return Ok(CallOptions {
                events: None,
                signal: None,
            });
        }
        if !options.is_object() {
            return Err(config_error(format!(
                "{what}: options must be an object {{ onEvent?, signal? }}"
            )));
        }
        let on_event = get(options, "onEvent");
        let events = match on_event {
            f if f.is_function() => Some(JsEvents {
                callback: f.unchecked_into(),
            }),
            f if f.is_undefined() || f.is_null() => None,
            f => return Err(invalid_tool(&format!("{what}: options.onEvent"), "a function", &f)),
        };
        let signal = Some(get(options, "signal")).filter(|s| s.is_object());
        Ok(CallOptions { events, signal })
    }
}

/// What `prompt` and `resume` start from, as JS handed it in.
enum CallInput {
    Prompt(JsValue),
    Resume { checkpoint: JsValue, answer: JsValue },
}

impl Parts {
    async fn input(&self, input: CallInput) -> Result<Input, AgentError> {
        match input {
            CallInput::Prompt(message) => match message.as_string() {
                Some(m) => Ok(Input::Prompt(m)),
                None => Err(AgentError::Argument("prompt(message): expected a string".into())),
            },
            CallInput::Resume { checkpoint, answer } => {
                let answer = resume_input(&answer)?;
                Ok(Input::Resume(self.checkpoint_in(&checkpoint).await?, answer))
            }
        }
    }
}

/// Runs `input` with `options`, converting the outcome or error at the end.
async fn run_js(spec: JsValue, input: CallInput, options: CallOptions) -> Result<JsValue, JsValue> {
    let parts = Parts::build(&spec)?;
    let input = parts.input(input).await.map_err(|e| agent_error(e, None))?;
    let run = parts.config.begin(input).map_err(|e| agent_error(e, None))?;
    if let (SpecModel::Js(m), true) = (&parts.model, run.applied().iter().any(|a| a.modified_args.is_some())) {
        m.drop_seed();
    }
    let CallOptions { mut events, signal } = options;
    let aborted = move || {
        signal
            .as_ref()
            .is_some_and(|s| get(s, "aborted").as_bool() == Some(true))
    };
    let mut hooks = Hooks {
        events: events.as_mut().map(|e| e as &mut dyn EventSink),
        aborted: Some(&aborted),
        ..Hooks::default()
    };
    let ran = drive(&parts.config, &parts.model, run, &mut hooks).await;
    let cause = if ran.is_err() { parts.cause() } else { None };
    parts.finish(ran, cause).await
}

/// `prompt(spec, message, options)`: starts a run.
#[wasm_bindgen]
pub fn prompt(spec: JsValue, message: JsValue, options: JsValue) -> Promise {
    match CallOptions::read(&options, "prompt(message, options)") {
        Ok(options) => future_to_promise(run_js(spec, CallInput::Prompt(message), options)),
        Err(e) => Promise::reject(&e),
    }
}

/// `resume(spec, checkpoint, answer, options)`: continues a checkpoint (object or JSON text).
#[wasm_bindgen]
pub fn resume(spec: JsValue, checkpoint: JsValue, answer: JsValue, options: JsValue) -> Promise {
    match CallOptions::read(&options, "resume(checkpoint, answer, options)") {
        Ok(options) => future_to_promise(run_js(spec, CallInput::Resume { checkpoint, answer }, options)),
        Err(e) => Promise::reject(&e),
    }
}

/// A session's `timeoutMs`: the time limit of each saver operation, if any.
fn saver_timeout(options: &JsValue) -> Result<Option<u64>, JsValue> {
    integer_option(options, "timeoutMs", "session options", 1)
}

/// A session's options `{ keepCompleted?, maxHistory?, autoSave?, timeoutMs? }`, checked.
fn session_options(options: &JsValue) -> Result<SessionOptions, JsValue> {
    let mut o = SessionOptions::default();
    match get(options, "keepCompleted") {
        k if k.is_undefined() || k.is_null() => {}
        k => {
            o.keep_completed = k
                .as_bool()
                .ok_or_else(|| config_error("session options.keepCompleted: expected a boolean".into()))?;
        }
    }
    if let Some(n) = integer_option(options, "maxHistory", "session options", 0)? {
        o.max_history = usize::try_from(n).unwrap_or(usize::MAX);
    }
    match get(options, "autoSave").as_string().as_deref() {
        None if get(options, "autoSave").is_undefined() => {}
        Some("step") => o.save_every_step = true,
        Some("stop") => o.save_every_step = false,
        _ => {
            return Err(config_error(
                "session options.autoSave: expected \"step\" (after every step) or \"stop\" (when the run starts and stops)"
                    .into(),
            ));
        }
    }
    saver_timeout(options)?;
    Ok(o)
}

/// `runSession(spec, saverSpec, saver, id, turn, value, sessionOptions, options)`: one session call;
/// `turn` is `prompt`, `reply` or `resume`.
#[allow(clippy::too_many_arguments)] // one flat call across the boundary
#[wasm_bindgen(js_name = runSession)]
pub fn run_session_js(
    spec: JsValue,
    saver_spec: JsValue,
    saver: JsValue,
    id: String,
    turn: String,
    value: JsValue,
    session: JsValue,
    options: JsValue,
) -> Promise {
    future_to_promise(async move {
        let what = format!("{turn}(…)");
        let turn = match turn.as_str() {
            "reply" => Turn::Reply(resume_input(&value).map_err(|e| agent_error(e, None))?),
            "resume" => Turn::Continue,
            _ => Turn::Prompt(
                value
                    .as_string()
                    .ok_or_else(|| config_error("prompt(message): expected a string".into()))?,
            ),
        };
        let CallOptions { events, signal } = CallOptions::read(&options, &what)?;
        let timeout = saver_timeout(&session)?;
        let session = session_options(&session)?;
        let parts = Parts::build(&spec)?;
        let any = AnySaver::from_js(&saver_spec, &saver)?;
        let store = savers::Timed {
            inner: &any,
            ms: timeout,
        };
        let aborted = move || {
            signal
                .as_ref()
                .is_some_and(|s| get(s, "aborted").as_bool() == Some(true))
        };
        let mut sink: Box<dyn EventSink> = match events {
            Some(e) => Box::new(e),
            None => Box::new(crate::agent::NoEvents),
        };
        let ran = run_session(
            &parts.config,
            &parts.model,
            &store,
            &id,
            turn,
            session,
            &mut *sink,
            Some(&aborted),
        )
        .await;
        let cause = match &ran {
            Ok(_) => None,
            Err(AgentError::Saver { .. }) => any.cause(),
            Err(_) => parts.cause(),
        };
        parts.finish(ran, cause).await
    })
}

/// `sessionOp(spec, saverSpec, saver, id, op, a, b)`: a session's history operations — `checkpoint(step?)`,
/// `history(limit, before?)`, `label(step, name)`, `restore(stepOrLabel)`, `save(checkpoint)`, `delete()` —
/// reading and writing checkpoints as the agent of `spec` does (limits, keys).
#[allow(clippy::too_many_arguments)] // one flat call across the boundary
#[wasm_bindgen(js_name = sessionOp)]
pub fn session_op(
    spec: JsValue,
    saver_spec: JsValue,
    saver: JsValue,
    id: String,
    session: JsValue,
    op: String,
    a: JsValue,
    b: JsValue,
) -> Promise {
    future_to_promise(async move {
        let parts = Parts::build(&spec)?;
        let codec = parts.config.codec();
        let any = AnySaver::from_js(&saver_spec, &saver)?;
        let store = savers::Timed {
            inner: &any,
            ms: saver_timeout(&session)?,
        };
        let thread = Thread {
            saver: &store,
            id: &id,
            options: SessionOptions::default(),
            codec,
        };
        let step = |v: &JsValue, what: &str| -> Result<Option<u64>, JsValue> {
            if v.is_undefined() || v.is_null() {
                return Ok(None);
            }
            let n = v
                .as_f64()
                .or_else(|| v.as_string().and_then(|s| s.parse::<f64>().ok()))
                .filter(|n| *n >= 1.0 && n.fract() == 0.0)
                .ok_or_else(|| config_error(format!("{what}: expected a step id (a positive integer)")))?;
            Ok(Some(n as u64))
        };
        let fail = |e: AgentError| agent_error(e, any.cause());
        match op.as_str() {
            "checkpoint" => match thread.checkpoint(step(&a, "checkpoint(id)")?).await.map_err(fail)? {
                Some(cp) => checkpoint_out(codec, &cp).await,
                None => Ok(JsValue::NULL),
            },
            "history" => {
                let limit =
                    step(&a, "history({ limit })")?.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
                let before = step(&b, "history({ before })")?;
                let entries = thread.history(limit, before).await.map_err(fail)?;
                Ok(to_js(&entries.iter().map(history_entry).collect::<Vec<_>>()))
            }
            "label" => {
                let at = step(&a, "label(id, name)")?
                    .ok_or_else(|| config_error("label(id, name): id is required".into()))?;
                let name = b
                    .as_string()
                    .ok_or_else(|| config_error("label(id, name): name must be a string".into()))?;
                thread.label(at, &name).await.map_err(fail)?;
                Ok(JsValue::UNDEFINED)
            }
            "restore" => {
                let target = a
                    .as_string()
                    .or_else(|| a.as_f64().map(|n| format!("{n}")))
                    .ok_or_else(|| config_error("restore(idOrLabel): expected a step id or a label".into()))?;
                checkpoint_out(codec, &thread.restore(&target).await.map_err(fail)?).await
            }
            "save" => {
                let cp = parts.checkpoint_in(&a).await.map_err(|e| agent_error(e, None))?;
                checkpoint_out(codec, &thread.save(&cp).await.map_err(fail)?).await
            }
            "delete" => {
                thread.delete().await.map_err(fail)?;
                Ok(JsValue::UNDEFINED)
            }
            other => Err(config_error(format!("unknown session operation {other:?}"))),
        }
    })
}

/// A history entry as JS sees it: `{ id, parentId?, step, label?, createdAt, interrupted, question?,
/// iterations, usage, messageCount }`.
fn history_entry(e: &crate::saver::SavedCheckpoint) -> Value {
    let s = &e.summary;
    let mut m = serde_json::Map::new();
    let step = s.step.unwrap_or(0);
    m.insert("id".into(), step.to_string().into());
    if let Some(p) = s.parent_step {
        m.insert("parentId".into(), p.to_string().into());
    }
    m.insert("step".into(), step.into());
    if let Some(l) = &s.label {
        m.insert("label".into(), l.clone().into());
    }
    if let Some(t) = s.updated_at {
        m.insert("createdAt".into(), t.into());
    }
    m.insert("interrupted".into(), s.interrupted.into());
    if let Some(q) = &s.question {
        m.insert("question".into(), q.clone().into());
    }
    m.insert("iterations".into(), s.iterations.into());
    m.insert(
        "usage".into(),
        serde_json::json!({"inputTokens": s.usage.input_tokens, "outputTokens": s.usage.output_tokens}),
    );
    m.insert("messageCount".into(), s.message_count.into());
    Value::Object(m)
}

/// `listSessions(saverSpec, saver, prefix)`: the sessions (their heads) stored in a saver.
#[wasm_bindgen(js_name = listSessions)]
pub fn list_sessions_js(saver_spec: JsValue, saver: JsValue, prefix: JsValue) -> Promise {
    future_to_promise(async move {
        let store = AnySaver::from_js(&saver_spec, &saver)?;
        let prefix = prefix.as_string().unwrap_or_default();
        let listed = crate::session::list_sessions(&store, &prefix)
            .await
            .map_err(|e| agent_error(e, store.cause()))?;
        Ok(to_js(&listed))
    })
}

/// The second argument of `resume`: a text answer, or `{ decisions }` (an array in interrupt order, or an
/// object keyed by interrupt id).
fn resume_input(answer: &JsValue) -> Result<Resume, AgentError> {
    if answer.is_undefined() || answer.is_null() {
        return Ok(Resume::Answer(String::new()));
    }
    if let Some(text) = answer.as_string() {
        return Ok(Resume::Answer(text));
    }
    let problem = |p: String| AgentError::Decision { id: None, problem: p };
    let decisions = get(answer, "decisions");
    if !answer.is_object() || decisions.is_undefined() {
        return Err(problem(format!(
            "answer: expected a string or {{ decisions }}, got {}",
            describe(answer)
        )));
    }
    let text = json_text(&decisions)
        .ok()
        .flatten()
        .ok_or_else(|| problem("decisions: not JSON".into()))?;
    Resume::from_decisions_json(&text)
}

/// `scriptedSpec(responses)`: checks a script for `scriptedModel(responses)`.
#[wasm_bindgen(js_name = scriptedSpec)]
pub fn scripted_spec(responses: JsValue) -> Result<JsValue, JsValue> {
    if !Array::is_array(&responses) {
        return Err(config_error(format!(
            "scriptedModel(responses): expected an array, got {}",
            describe(&responses)
        )));
    }
    let script = Array::from(&responses).slice(0, Array::from(&responses).length());
    Ok(freeze(&fields(&[
        ("kind", "scripted".into()),
        ("script", freeze(&script)),
    ])))
}

/// `scriptedComplete(spec, request)`: a scripted model called as a plain function.
#[wasm_bindgen(js_name = scriptedComplete)]
pub fn scripted_complete(spec: JsValue, request: JsValue) -> Promise {
    future_to_promise(async move {
        let messages: Vec<crate::message::Message> =
            serde_json::from_str(&json_text(&get(&request, "messages")).ok().flatten().unwrap_or_default())
                .map_err(|e| config_error(format!("scriptedModel(request): request.messages: {e}")))?;
        let model = JsModel::new(
            Callee::Script(get(&spec, "script").unchecked_into()),
            get(&request, "tools"),
            get(&request, "system").as_string().as_deref(),
            None,
        );
        let request_tools: Vec<ToolDefinition> = Vec::new();
        let r = model
            .complete(ModelRequest {
                system: None,
                messages: &messages,
                tools: &request_tools,
            })
            .await;
        match r {
            Ok(response) => Ok(to_js(&response)),
            Err(e) => {
                let cause = model.last_error.borrow_mut().take();
                Err(cause.unwrap_or_else(|| convert::model_error(e)))
            }
        }
    })
}

/// `checkSession(saver, builtin, id, options)`: the arguments of `agent.session(saver, id, options)`,
/// checked at once.
#[wasm_bindgen(js_name = checkSession)]
pub fn check_session(saver: JsValue, builtin: bool, id: JsValue, options: JsValue) -> Result<(), JsValue> {
    if !builtin {
        savers::JsSaver::new(saver)?;
    }
    let id = id.as_string().unwrap_or_default();
    if id.is_empty() || id.contains(crate::session::HISTORY_SEPARATOR) {
        return Err(config_error(format!(
            "session(saver, id): id must be a non-empty string without {:?}",
            crate::session::HISTORY_SEPARATOR
        )));
    }
    session_options(&options).map(|_| ())
}

/// `memoryUsage()`: `{ wasmBytes }`, the size of this package's WebAssembly memory (it only grows; a
/// long-lived isolate can watch it).
#[wasm_bindgen(js_name = memoryUsage)]
pub fn memory_usage() -> JsValue {
    let bytes = wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| m.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length())
        .unwrap_or(0);
    fields(&[("wasmBytes", JsValue::from_f64(f64::from(bytes)))])
}
