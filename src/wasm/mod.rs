//! The npm package's low-level API: converts at the edge and calls the core. No loop rules live here.
//!
//! Nothing this module hands to JS owns wasm memory: `agent(config)` is read in JS (glue.js `agentSpec`)
//! into a frozen JS object (the spec: the core's config as one JSON text, the functions beside it),
//! `checkAgent` checks the core's rules once; each `prompt`/`resume`/`runSession` builds the Rust agent from it, runs,
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

use adapters::{Callee, JsApproval, JsModel, JsTool};
use convert::{
    agent_error, agent_error_as, checkpoint_text, config_error, fields, get, integer_option, json_text, outcome_to_js,
    to_js,
};
use glue::{describe, freeze, make_error, prop};
use providers::Provider;
use savers::AnySaver;

use crate::agent::{AgentConfig, Hooks, Input, Outcome, drive};
use crate::checkpoint::Checkpoint;
use crate::error::{AgentError, ModelError};
use crate::event::{Event, EventSink};
use crate::interrupt::{OnExpire, Resume};
use crate::model::{Model, ModelRequest, ModelResponse, ToolDefinition};
use crate::platform::MaybeSend;
use crate::run::DEFAULT_MAX_ITERATIONS;
use crate::saver::Saver;
use crate::session::{SessionOptions, Thread, Turn, run_session};

fn invalid_option(path: &str, what: &str, got: &JsValue) -> JsValue {
    config_error(format!("{path}: expected {what}, got {}", describe(got)))
}

/// The run paused for a human (the package's `isInterrupted` is the same test in JS).
fn is_interrupted(result: JsValue) -> bool {
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

/// `checkAgent(spec)`: the core's rules for a spec `agentSpec` (glue.js) built from `agent(config)` — one
/// name per tool, limits, output, compaction, keys — checked once at `agent()`, not at the first call.
/// Returns the `final_answer` tool a JS model sees when the agent has an output schema.
#[wasm_bindgen(js_name = checkAgent)]
pub fn check_agent(spec: JsValue) -> Result<JsValue, JsValue> {
    let parts = Parts::build(&spec)?;
    Ok(parts.config.final_answer_tool().map_or(JsValue::UNDEFINED, to_js))
}

/// The part of a spec the core is built from (`spec.core`, JSON text written by glue.js `agentSpec`).
struct Core {
    instructions: Option<String>,
    max_iterations: u32,
    /// Each tool's definition, its approval when fixed (`None`: its JS function decides per call), and its
    /// expiry policy.
    tools: Vec<(ToolDefinition, Option<crate::interrupt::Approval>, OnExpire)>,
    state: Option<Value>,
    limits: crate::limits::Limits,
    output: Option<(Value, u32)>,
    compaction: Option<crate::run::Compaction>,
}

impl Core {
    fn read(text: &str) -> Result<Core, JsValue> {
        let not_agent = || config_error("not an agent: create it with agent(config)".into());
        // JSON.stringify writes a lone surrogate (in a description, say) as an escape serde_json refuses.
        let text = crate::limits::repair_lone_surrogates(text);
        let Ok(Value::Object(mut c)) = serde_json::from_str::<Value>(&text) else {
            return Err(not_agent());
        };
        let count = |v: Option<&Value>| v.and_then(Value::as_u64);
        let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let mut tools = Vec::new();
        if let Some(Value::Array(listed)) = c.remove("tools") {
            for t in listed {
                let Value::Object(mut t) = t else {
                    return Err(not_agent());
                };
                let text = |t: &mut serde_json::Map<String, Value>, k: &str| match t.remove(k) {
                    Some(Value::String(s)) => s,
                    _ => String::new(),
                };
                let approval = match t.get("approval").and_then(Value::as_str) {
                    Some("function") => None,
                    Some("needed") => Some(match count(t.get("expiresInMs")) {
                        Some(ms) => crate::interrupt::Approval::needed_within(ms),
                        None => crate::interrupt::Approval::needed(),
                    }),
                    _ => Some(crate::interrupt::Approval::NotNeeded),
                };
                let on_expire = match t.get("onExpire").and_then(Value::as_str) {
                    Some("deny") => OnExpire::Deny,
                    _ => OnExpire::Error,
                };
                let definition = ToolDefinition {
                    name: text(&mut t, "name"),
                    description: text(&mut t, "description"),
                    input_schema: t.remove("inputSchema").unwrap_or(Value::Null),
                };
                tools.push((definition, approval, on_expire));
            }
        }
        let mut limits = crate::limits::Limits::default();
        if let Some(Value::Object(l)) = c.get("limits") {
            if let Some(n) = count(l.get("maxCheckpointBytes")) {
                limits = limits.max_checkpoint_bytes(usize::try_from(n).unwrap_or(usize::MAX));
            }
            if let Some(d) = count(l.get("maxDepth")) {
                if d > crate::limits::MAX_DEPTH_LIMIT as u64 {
                    return Err(config_error(format!(
                        "config.limits.maxDepth: {d} is over {} (what a checkpoint can hold and still be read back)",
                        crate::limits::MAX_DEPTH_LIMIT
                    )));
                }
                limits = limits.max_depth(d as usize);
            }
        }
        // Present (even `null`) when the agent has a state.
        let state = c.remove("state");
        let output = c.remove("output").map(|schema| {
            let retries = count(c.get("maxOutputRetries")).map_or(crate::DEFAULT_MAX_OUTPUT_RETRIES, clamp);
            (schema, retries)
        });
        let compaction = match c.get("compaction") {
            Some(Value::Object(k)) => {
                let at = |key: &str| count(k.get(key)).map(|n| usize::try_from(n).unwrap_or(usize::MAX));
                let mut rule = crate::run::Compaction::default().keep_first(at("keepFirst").unwrap_or(1));
                if let Some(b) = at("maxBytes") {
                    rule = rule.max_bytes(b);
                }
                if let Some(m) = at("maxMessages") {
                    rule = rule.max_messages(m);
                }
                Some(rule)
            }
            _ => None,
        };
        Ok(Core {
            instructions: match c.remove("instructions") {
                Some(Value::String(s)) => Some(s),
                _ => None,
            },
            max_iterations: count(c.get("maxIterations")).map_or(DEFAULT_MAX_ITERATIONS, clamp),
            tools,
            state,
            limits,
            output,
            compaction,
        })
    }
}

/// The checkpoint keys a spec holds.
fn keys_of(spec: &JsValue) -> Option<crate::keys::CheckpointKeys> {
    let keys = prop(spec, "keys");
    if keys.is_undefined() {
        return None;
    }
    let current = prop(&keys, "current").as_string()?;
    let mut out = crate::keys::CheckpointKeys::new(current).sealed(prop(&keys, "sealed").as_bool() == Some(true));
    for pair in Array::from(&prop(&keys, "keys")).iter() {
        let pair = Array::from(&pair);
        let kid = pair.get(0).as_string().unwrap_or_default();
        let secret = js_sys::Uint8Array::new(&pair.get(1)).to_vec();
        out = out.key(kid, secret);
    }
    if let Some(name) = prop(&keys, "agent").as_string() {
        out = out.agent(name);
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

/// What an agent's core text makes once checked: rules, instructions, state and each tool's approval and
/// expiry. Shared by every agent and call with the same core text (a Worker builds its agent per request
/// from the same config), so a call does not parse and check the tools' schemas again.
struct Prepared {
    instructions: Option<String>,
    rules: std::sync::Arc<crate::run::RunConfig>,
    state: Option<Value>,
    /// Each tool's approval when fixed (`None`: its JS function decides per call); its expiry policy is in
    /// the rules.
    approvals: Vec<Option<crate::interrupt::Approval>>,
}

/// How many prepared configurations are kept (most recently used first), and the longest core text kept:
/// a few agents per isolate are usual; a config with a large state is prepared per call instead.
const PREPARED_KEPT: usize = 4;
const PREPARED_MAX_TEXT: usize = 16 * 1024;

thread_local! {
    static PREPARED: std::cell::RefCell<Vec<(String, std::rc::Rc<Prepared>)>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Prepared {
    /// The prepared configuration of core text `text`, kept or made (and kept) now.
    fn of(text: String) -> Result<std::rc::Rc<Prepared>, JsValue> {
        let kept = PREPARED.with(|p| {
            let mut p = p.try_borrow_mut().ok()?;
            let at = p.iter().position(|(t, _)| *t == text)?;
            let entry = p.remove(at);
            let prepared = entry.1.clone();
            p.insert(0, entry);
            Some(prepared)
        });
        if let Some(prepared) = kept {
            return Ok(prepared);
        }
        let prepared = std::rc::Rc::new(Self::make(&text)?);
        if text.len() <= PREPARED_MAX_TEXT {
            PREPARED.with(|p| {
                if let Ok(mut p) = p.try_borrow_mut() {
                    p.truncate(PREPARED_KEPT - 1);
                    p.insert(0, (text, prepared.clone()));
                }
            });
        }
        Ok(prepared)
    }

    fn make(text: &str) -> Result<Prepared, JsValue> {
        let core = Core::read(text)?;
        let mut approvals = Vec::with_capacity(core.tools.len());
        let mut described = Vec::with_capacity(core.tools.len());
        for (definition, approval, on_expire) in core.tools {
            let policy = crate::run::ToolPolicy {
                may_need_approval: !matches!(approval, Some(crate::interrupt::Approval::NotNeeded)),
                on_expire,
            };
            described.push((definition, policy));
            approvals.push(approval);
        }
        let mut config = AgentConfig::described(core.instructions, described, core.max_iterations)
            .map_err(|e| agent_error(e, None))?;
        config.set_limits(core.limits);
        config.set_state(core.state).map_err(|e| agent_error(e, None))?;
        if let Some((output, retries)) = core.output {
            config.set_output(output, retries).map_err(|e| agent_error(e, None))?;
        }
        if let Some(compaction) = core.compaction {
            config.set_compaction(compaction).map_err(|e| agent_error(e, None))?;
        }
        Ok(Prepared {
            instructions: config.instructions,
            rules: config.rules,
            state: config.initial_state,
            approvals,
        })
    }
}

impl Parts {
    fn build(spec: &JsValue) -> Result<Self, JsValue> {
        if !spec.is_object() {
            return Err(config_error("not an agent: create it with agent(config)".into()));
        }
        let prepared = Prepared::of(convert::string_of(&prop(spec, "core")).unwrap_or_default())?;
        let fns = Array::from(&prop(spec, "fns"));
        let mut tools: Vec<Box<dyn crate::tool::DynTool>> = Vec::with_capacity(prepared.approvals.len());
        for (k, approval) in prepared.approvals.iter().enumerate() {
            let at = u32::try_from(2 * k).unwrap_or(u32::MAX);
            tools.push(Box::new(JsTool {
                rules: prepared.rules.clone(),
                index: k,
                handle: fns.get(at).unchecked_into(),
                approval: match approval {
                    Some(a) => JsApproval::Fixed(*a),
                    None => JsApproval::Function(fns.get(at + 1)),
                },
            }));
        }
        let builtin = prop(spec, "builtin");
        let model = match Provider::from_spec(&builtin) {
            Some(p) => SpecModel::Provider(p),
            None => {
                let script = get(&builtin, "script");
                let callee = if Array::is_array(&script) {
                    Callee::Script(script.unchecked_into())
                } else {
                    Callee::Function(prop(spec, "model").unchecked_into())
                };
                SpecModel::Js(JsModel::new(callee, prop(spec, "toolSpecs"), prop(spec, "system")))
            }
        };
        let mut config = AgentConfig {
            instructions: prepared.instructions.clone(),
            tools,
            rules: prepared.rules.clone(),
            initial_state: prepared.state.clone(),
            keys: None,
            binding: None,
        };
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
                    (SpecModel::Js(m), Outcome::Complete(r)) => {
                        Some(m.messages(&r.checkpoint.messages, r.unchanged).into())
                    }
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
        // The caller's text is the checkpoint's own (the seed is used only if it parses as one).
        if let (SpecModel::Js(m), false) = (&self.model, crate::keys::looks_sealed(&text)) {
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

    fn sequenced(&mut self, seq: Option<u64>, event: &Event<'_>) {
        match seq {
            Some(seq) => {
                let _ = self.callback.call1(&JsValue::UNDEFINED, &numbered(event, seq));
            }
            None => self.event(event),
        }
    }
}

/// A session's event with its number, as JS gets it: `{ type, …, seq }`.
fn numbered(event: &Event<'_>, seq: u64) -> JsValue {
    let mut text = event.to_json();
    if text.ends_with('}') {
        text.pop();
        text.push_str(&format!(",\"seq\":{seq}}}"));
    }
    js_sys::JSON::parse(&text).unwrap_or(JsValue::UNDEFINED)
}

thread_local! {
    /// The last background settle of this instance: each waits for the one before it, so an isolate serving
    /// many requests runs one at a time (its wasm memory is not raised by a burst of them).
    static SETTLE_TAIL: std::cell::RefCell<Option<Promise>> = const { std::cell::RefCell::new(None) };
}

/// Finishes, once the store allows it, what its write interval (Workers KV) held back — a head behind the
/// newest record, keys of a finished session not deleted yet — in a task of its own, handed to the
/// session's `waitUntil` when given (a Worker's `ctx.waitUntil` keeps the isolate alive for it). A failure is
/// dropped: the next call, or `settle()`, finishes the work.
fn settle_later(spec: &JsValue, saver_spec: &JsValue, saver: &JsValue, id: &str, session: &JsValue) {
    let (spec, saver_spec, saver, id) = (spec.clone(), saver_spec.clone(), saver.clone(), id.to_owned());
    let max_history = session_options(session).map_or(crate::session::DEFAULT_MAX_HISTORY, |o| o.max_history);
    let before = SETTLE_TAIL.with(|t| t.borrow().clone());
    let task = async move {
        // Wait first, holding nothing in wasm memory but the timer: an isolate serving many requests has many
        // of these pending. Then the settle before this one.
        let interval = AnySaver::from_js(&saver_spec, &saver)?.min_write_interval_ms();
        crate::platform::sleep_until(crate::platform::now_ms() + interval + 250).await;
        if let Some(p) = before {
            // Not for ever: a store that never answers holds up one settle, not every later one.
            let _ = wasm_bindgen_futures::JsFuture::from(glue::race(&p, 30_000.0)).await;
        }
        // Boxed: the state of the work takes memory only while it runs, not while the task waits.
        Box::pin(settle_now(spec, saver_spec, saver, id, max_history)).await
    };
    // Resolves in every case: it is the next settle's "before".
    let promise = future_to_promise(async move {
        let _ = task.await;
        Ok(JsValue::UNDEFINED)
    });
    SETTLE_TAIL.with(|t| *t.borrow_mut() = Some(promise.clone()));
    if let Some(f) = get(session, "waitUntil").dyn_ref::<Function>() {
        let _ = f.call1(&JsValue::UNDEFINED, &promise);
    }
}

/// The work of [`settle_later`], once it may run.
async fn settle_now(
    spec: JsValue,
    saver_spec: JsValue,
    saver: JsValue,
    id: String,
    max_history: usize,
) -> Result<(), JsValue> {
    let parts = Parts::build(&spec)?;
    let any = AnySaver::from_js(&saver_spec, &saver)?.read_at_most(parts.config.codec().limits.max_checkpoint_bytes);
    let thread = Thread {
        saver: &any,
        id: &id,
        config: &parts.config,
        max_history,
    };
    thread
        .settle()
        .await
        .map(|_| ())
        .map_err(|e| agent_error(e, any.cause()))
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
            f => return Err(invalid_option(&format!("{what}: options.onEvent"), "a function", &f)),
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
    // A resumed checkpoint was decoded (and so validated) by `checkpoint_in` a moment ago.
    let run = parts.config.begin_with(input, true).map_err(|e| agent_error(e, None))?;
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
        let session_js = session.clone();
        let session = session_options(&session)?;
        let parts = Parts::build(&spec)?;
        let any =
            AnySaver::from_js(&saver_spec, &saver)?.read_at_most(parts.config.codec().limits.max_checkpoint_bytes);
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
        if ran.unsettled {
            settle_later(&spec, &saver_spec, &saver, &id, &session_js);
        }
        let ran = ran.outcome;
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
        let any =
            AnySaver::from_js(&saver_spec, &saver)?.read_at_most(parts.config.codec().limits.max_checkpoint_bytes);
        let store = savers::Timed {
            inner: &any,
            ms: saver_timeout(&session)?,
        };
        let thread = Thread {
            saver: &store,
            id: &id,
            config: &parts.config,
            max_history: session_options(&session)?.max_history,
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
            "settle" => Ok(JsValue::from_bool(thread.settle().await.map_err(fail)?)),
            "delete" => {
                if !thread.delete().await.map_err(fail)?.is_empty() {
                    settle_later(&spec, &saver_spec, &saver, &id, &session);
                }
                Ok(JsValue::UNDEFINED)
            }
            "replay" => {
                let after = match &a {
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
                // `b`: `{ onEvent?, signal?, followMs?, pollMs? }` — events go to `onEvent` as they are read
                // (else they are returned together); with `followMs`, what the running call adds follows.
                let CallOptions { mut events, signal } = CallOptions::read(&b, "replay(options)")?;
                let follow_ms = integer_option(&b, "followMs", "replay(options)", 0)?;
                let poll_ms = integer_option(&b, "pollMs", "replay(options)", 10)?.unwrap_or(250);
                let stop = move || {
                    signal
                        .as_ref()
                        .is_some_and(|s| get(s, "aborted").as_bool() == Some(true))
                };
                let follow = follow_ms.map(|ms| crate::session::Follow {
                    until_ms: crate::platform::now_ms().saturating_add(ms),
                    poll_ms,
                    stop: Some(&stop),
                });
                let mut collected = Collect(Array::new());
                let sink: &mut dyn EventSink = match events {
                    Some(ref mut e) => e,
                    None => &mut collected,
                };
                let replayed = thread.replay(after, sink, follow).await.map_err(fail)?;
                Ok(fields(&[
                    ("events", collected.0.into()),
                    ("running", replayed.running.into()),
                    ("last", JsValue::from_f64(replayed.last as f64)),
                ]))
            }
            other => Err(config_error(format!("unknown session operation {other:?}"))),
        }
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
            get(&request, "system"),
        );
        let request_tools: Vec<ToolDefinition> = Vec::new();
        let r = model.complete(ModelRequest::new(&messages, &request_tools)).await;
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
