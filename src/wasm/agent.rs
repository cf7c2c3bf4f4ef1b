//! `agent(config)`: its spec (a frozen JS object the package's front makes — the config's JSON `text`, the
//! functions beside it) is read by the core's [`AgentSpec`] and built into a core [`Agent`] for each call,
//! with the JS tools and model as the core's [`Tool`] and [`Model`]. Nothing outlives the call.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use super::convert::{agent_error, checkpoint_text, config_error, get, json_text, json_value, string_of, to_js};
use super::glue::messages_of;
use super::glue::{
    call_now, describe, error_message, interrupt_data, interrupt_of, is_thenable, next_state, tool_context,
};
use super::model::{JsModel, Mirror, model_of};
use crate::{
    Agent, AgentBuilder, AgentError, AgentSpec, Approval, Checkpoint, Decoded, Event, EventSink, Input, InterruptError,
    Message, Model, ModelError, ModelRequest, ModelResponse, NeedsApproval, OnExpire, Outcome, Resume, Tool,
    ToolContext, ToolDefinition, ToolError, ToolSpec, Usage,
};

/// How many parsed specs are kept (most recently used first), and the longest text kept: a few agents per
/// isolate are usual, and a Worker builds its agent per request from the same config.
const KEPT: usize = 4;
const KEPT_MAX_TEXT: usize = 16 * 1024;

/// An agent's checked configuration, made once per config text: a core agent whose model and tools are
/// placeholders (never called), and its tools' declarations. A call binds them to its JS code
/// ([`Agent::with_parts`]), sharing the rest.
struct Template {
    agent: Agent,
    tools: Vec<Rc<ToolSpec>>,
}

/// A placeholder for the model of a [`Template`]: calls get their own.
struct Unbound;

impl Model for Unbound {
    fn complete<'a>(&'a self, _: ModelRequest<'a>) -> impl Future<Output = Result<ModelResponse, ModelError>> + 'a {
        std::future::ready(Err(ModelError::Failed {
            name: None,
            message: "the agent's model is bound per call".into(),
        }))
    }
}

thread_local! {
    static TEMPLATES: RefCell<Vec<(String, Rc<Template>)>> = const { RefCell::new(Vec::new()) };
}

/// The template of config `text`, kept or made (and kept) now.
fn template_of(text: String) -> Result<Rc<Template>, AgentError> {
    let kept = TEMPLATES.with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        let at = s.iter().position(|(t, _)| *t == text)?;
        let entry = s.remove(at);
        let template = entry.1.clone();
        s.insert(0, entry);
        Some(template)
    });
    if let Some(template) = kept {
        return Ok(template);
    }
    let spec = AgentSpec::from_json(&text)?;
    let tools: Vec<Rc<ToolSpec>> = spec.tools.iter().cloned().map(Rc::new).collect();
    let mut builder = AgentBuilder::from_spec(Unbound, spec);
    for t in &tools {
        builder = builder.tool(JsTool {
            spec: t.clone(),
            handle: JsValue::UNDEFINED.unchecked_into(),
            decide: JsValue::UNDEFINED,
            #[cfg(feature = "js-mcp")]
            mcp: None,
            #[cfg(feature = "js-subagents")]
            child: None,
        });
    }
    let template = Rc::new(Template {
        agent: builder.build()?,
        tools,
    });
    if text.len() <= KEPT_MAX_TEXT {
        TEMPLATES.with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                s.truncate(KEPT - 1);
                s.insert(0, (text, template.clone()));
            }
        });
    }
    Ok(template)
}

/// Awaits `f(a)` or `f(a, b)`, whatever it returns; a synchronous throw is an error like a rejection. A plain
/// value (a synchronous tool, most often) is used at once: only a thenable is awaited, which spares each such
/// call a promise and a trip through the microtask queue.
pub(super) async fn call_js(f: &JsValue, a: &JsValue, b: Option<&JsValue>) -> Result<JsValue, JsValue> {
    let returned = call_now(f, a, b.unwrap_or(&JsValue::UNDEFINED))?;
    if !is_thenable(&returned) {
        return Ok(returned);
    }
    // Dropped before it settles (a timeout, an abort): the promise is settled, or what waits for it would be kept.
    let promise = super::glue::settling(&returned);
    let _settle = StopListening(get(&promise, "cancel"));
    JsFuture::from(promise).await
}

#[cfg(feature = "js-guardrails")]
/// A JS guardrail: `fn({ kind, messages, text?, structured? })` answers `{ tripwire: true, info }` to stop the run
/// (anything else passes); a throw stops it too, its message the info.
struct JsGuardrail {
    name: String,
    f: JsValue,
    /// What the guardrails of one agent were last shown, by the messages it was made of and the kind: several
    /// guardrails of one check share one JS copy of the conversation rather than converting it each.
    shown: Shown,
}

/// The conversation last shown to an agent's guardrails: its messages' address and length, the kind, the JS copy.
#[cfg(feature = "js-guardrails")]
type Shown = Rc<RefCell<Option<(usize, usize, crate::guardrail::GuardrailKind, JsValue)>>>;

#[cfg(feature = "js-guardrails")]
impl crate::guardrail::Guardrail for JsGuardrail {
    fn name(&self) -> &str {
        &self.name
    }

    fn check<'a>(
        &'a self,
        input: crate::guardrail::GuardrailInput<'a>,
    ) -> crate::BoxFuture<'a, Result<crate::guardrail::Verdict, String>> {
        let key = (input.messages.as_ptr() as usize, input.messages.len(), input.kind);
        let arg = {
            let mut shown = self.shown.borrow_mut();
            match shown.as_ref() {
                Some((p, n, k, arg)) if (*p, *n, *k) == key => arg.clone(),
                _ => {
                    let arg = to_js(&input);
                    *shown = Some((key.0, key.1, key.2, arg.clone()));
                    arg
                }
            }
        };
        Box::pin(async move {
            let answer = call_js(&self.f, &arg, None).await.map_err(|e| error_message(&e))?;
            if get(&answer, "tripwire").as_bool() != Some(true) {
                return Ok(crate::guardrail::Verdict::Pass);
            }
            Ok(crate::guardrail::Verdict::Tripwire(json_value(&get(&answer, "info"))))
        })
    }
}

#[cfg(feature = "js-guardrails")]
/// The guardrails of an agent spec: `spec.guardrails = { input: [{ name, fn }], output: [...] }` (api.js).
fn guardrails_of(spec: &JsValue) -> crate::guardrail::Guardrails {
    let given = get(spec, "guardrails");
    let shown = Rc::new(RefCell::new(None));
    let list = |key| -> Vec<std::sync::Arc<dyn crate::guardrail::Guardrail>> {
        let all = get(&given, key);
        if !Array::is_array(&all) {
            return Vec::new();
        }
        Array::from(&all)
            .iter()
            .map(|g| {
                let guard = JsGuardrail {
                    name: get(&g, "name").as_string().unwrap_or_default(),
                    f: get(&g, "fn"),
                    shown: shown.clone(),
                };
                // One thread on wasm32: the core's Arc (Send natively) is only ever used here.
                #[allow(clippy::arc_with_non_send_sync)]
                let guard = std::sync::Arc::new(guard) as std::sync::Arc<dyn crate::guardrail::Guardrail>;
                guard
            })
            .collect()
    };
    crate::guardrail::Guardrails {
        input: list("input"),
        output: list("output"),
    }
}

/// The agent's `approval` function: `approval({ id, toolName, input }, { runId, state?, iterations, usage })`
/// answers `'allow' | 'ask' | 'deny' | { ask: true, expiresInMs?, approvers? } | { deny: true, message? }`
/// (maybe as a promise); the core reads the answer (one rule for the npm package and Rust).
struct JsPolicy {
    f: JsValue,
    /// The template's policy, which the fingerprint knows (by the function's source text).
    template: std::sync::Arc<dyn crate::approval::ApprovalPolicy>,
}

impl crate::approval::ApprovalPolicy for JsPolicy {
    fn decide<'a>(
        &'a self,
        call: &'a crate::ToolUse,
        ctx: crate::PolicyContext<'a>,
    ) -> crate::BoxFuture<'a, Result<crate::PolicyDecision, String>> {
        // Written as JSON text from the run's own values (no copy of the input or the state, no serializer of their
        // own in the .wasm) and parsed by JS once.
        let text = |v: &Value| crate::json::to_string(v).unwrap_or_else(|_| "null".into());
        let quoted = |t: &str| text(&Value::from(t));
        let parse = |t: String| js_sys::JSON::parse(&t).unwrap_or(JsValue::UNDEFINED);
        let shown = parse(format!(
            r#"{{"id":{},"toolName":{},"input":{}}}"#,
            quoted(&call.id),
            quoted(&call.name),
            text(&call.input)
        ));
        let state = ctx
            .state
            .map(|s| format!(r#","state":{}"#, text(s)))
            .unwrap_or_default();
        let context = parse(format!(
            r#"{{"runId":{},"iterations":{},"usage":{{"inputTokens":{},"outputTokens":{}}}{state}}}"#,
            quoted(ctx.run_id),
            ctx.iterations,
            ctx.usage.input_tokens,
            ctx.usage.output_tokens
        ));
        Box::pin(async move {
            let answer = call_js(&self.f, &shown, Some(&context))
                .await
                .map_err(|e| format!("config.approval threw: {}", error_message(&e)))?;
            crate::PolicyDecision::from_value(&json_value(&answer))
                .map_err(|p| format!("config.approval returned what is not a decision: {p}"))
        })
    }

    fn rule(&self) -> Value {
        self.template.rule()
    }
}

/// A JS tool: its declaration (read by the core) and its functions — or, for a tool of an MCP server, the
/// client its calls go through.
struct JsTool {
    spec: Rc<ToolSpec>,
    handle: Function,
    /// `needsApproval` when it is a function.
    decide: JsValue,
    #[cfg(feature = "js-mcp")]
    mcp: Option<crate::mcp::McpClient<crate::provider::FetchClient>>,
    /// For an `agentTool()`: the child agent its calls run.
    #[cfg(feature = "js-subagents")]
    child: Option<crate::subagent::AgentTool>,
}

/// The client of an MCP tool's server, for one call stopped by `signal`, sending through `fetch` when it is
/// the program's own function.
#[cfg(feature = "js-mcp")]
fn mcp_client(
    spec: &ToolSpec,
    signal: Option<&JsValue>,
    fetch: &JsValue,
) -> Option<crate::mcp::McpClient<crate::provider::FetchClient>> {
    let m = spec.mcp.as_ref()?;
    let client = crate::mcp::McpClient::new(m.server.clone(), fetch_client(signal, fetch))
        .cancels_through(fetch_client(None, fetch));
    Some(match &m.era {
        Some(era) => client.with_era(era.clone()),
        None => client,
    })
}

/// What a thrown value means for the run: an `InterruptError` (its options checked when it was made) pauses
/// it, anything else fails the call.
fn tool_error(e: &JsValue) -> ToolError {
    let given = interrupt_of(e);
    if given.is_undefined() {
        // What the tool's retryOn refused (api.js): not tried again.
        if get(e, "resumableAgentNoRetry").as_bool() == Some(true) {
            return ToolError::Final(error_message(e));
        }
        return ToolError::Failed(error_message(e));
    }
    let mut i = InterruptError::new(get(&given, "question").as_string().unwrap_or_default());
    let options = get(&given, "options");
    if Array::is_array(&options) {
        i.options = Some(Array::from(&options).iter().filter_map(|o| o.as_string()).collect());
    }
    i.expires_in_ms = get(&given, "expiresInMs").as_f64().map(|n| n as u64);
    // Plain JSON (checked when it was made): what does not read back nests beyond the parser's bound, which the
    // run refuses like any data over limits.maxDepth.
    i.data = interrupt_data(e).map(|t| serde_json::from_str(&t).unwrap_or_else(|_| too_deep()));
    i.into()
}

/// A JSON value nested deeper than any limit allows, standing for one that could not be read back.
fn too_deep() -> Value {
    let mut v = Value::Null;
    for _ in 0..=crate::MAX_DEPTH_LIMIT {
        v = Value::Array(vec![v]);
    }
    v
}

fn context(ctx: &ToolContext<'_>) -> JsValue {
    tool_context(ctx.tool_use_id, ctx.run_id, ctx.state().map(|s| s.to_string()))
}

impl Tool for JsTool {
    fn definition(&self) -> ToolDefinition {
        self.spec.definition.clone()
    }

    fn call<'a>(&'a self, input: Value, ctx: ToolContext<'a>) -> impl Future<Output = Result<Value, ToolError>> + 'a {
        let js_ctx = context(&ctx);
        async move {
            #[cfg(feature = "js-subagents")]
            if let Some(child) = &self.child {
                return child.call(input, ctx).await;
            }
            #[cfg(feature = "js-mcp")]
            if let (Some(client), Some(m)) = (&self.mcp, &self.spec.mcp) {
                return client.call_tool(&m.tool, &input, ctx.input()).await.map(Value::String);
            }
            #[cfg(not(feature = "js-mcp"))]
            if self.spec.mcp.is_some() {
                return Err(ToolError::failed("this variant of the package has no MCP client"));
            }
            let returned = call_js(&self.handle, &to_js(&input), Some(&js_ctx)).await;
            if let Some(text) = next_state(&js_ctx) {
                ctx.set_state(serde_json::from_str(&text).unwrap_or_else(|_| too_deep()));
            }
            let value = returned.map_err(|e| tool_error(&e))?;
            if let Some(text) = string_of(&value) {
                return Ok(Value::String(text));
            }
            if value.is_undefined() {
                return Ok(Value::String(String::new()));
            }
            // Any other value reaches the model as JSON text, spelled as a Rust tool's would be.
            match json_text(&value) {
                Ok(Some(text)) => serde_json::from_str::<Value>(&text)
                    .map(|v| Value::String(crate::keys::canonical_json(&v)))
                    .map_err(|e| ToolError::failed(format!("the tool's result does not read back as JSON: {e}"))),
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
    ) -> impl Future<Output = Result<Approval, ToolError>> + 'a {
        let js_ctx = context(&ctx);
        async move {
            let decided = match self.spec.needs_approval {
                NeedsApproval::PerCall => call_js(&self.decide, &to_js(input), Some(&js_ctx))
                    .await
                    .map_err(|e| ToolError::Failed(format!("needsApproval threw: {}", error_message(&e))))?,
                NeedsApproval::Fixed(a) => return Ok(a),
            };
            match NeedsApproval::from_value(Some(json_value(&decided)), "needsApproval(input, ctx) returned") {
                Ok(NeedsApproval::Fixed(a)) => Ok(a),
                Ok(_) => Err(ToolError::failed("needsApproval(input, ctx) returned a function")),
                Err(e) => Err(ToolError::Failed(e.to_string())),
            }
        }
    }

    fn may_need_approval(&self) -> bool {
        self.spec.needs_approval != NeedsApproval::Fixed(Approval::NotNeeded)
    }

    fn approval_rule(&self) -> Value {
        self.spec.approval_rule()
    }

    fn on_expire(&self) -> OnExpire {
        self.spec.on_expire
    }

    fn call_policy(&self) -> crate::CallPolicy {
        self.spec.policy
    }

    #[cfg(feature = "js-subagents")]
    fn check_resume<'a>(
        &'a self,
        input: &'a crate::PendingInput,
    ) -> impl Future<Output = Result<Option<crate::Decoded>, AgentError>> + 'a {
        async move {
            match &self.child {
                Some(child) => child.check_resume(input).await,
                None => Ok(None),
            }
        }
    }

    fn runs_agent(&self) -> bool {
        self.spec.subagent.is_some()
    }

    fn stops_itself(&self) -> bool {
        self.spec.subagent.is_some() || self.spec.mcp.is_some()
    }
}

/// An agent built from its spec for one call, with what JS threw inside it.
pub(super) struct Call {
    pub(super) agent: Agent,
    /// What the JS model threw last (the `cause` of a `ModelError`).
    pub(super) thrown: Rc<RefCell<Option<JsValue>>>,
    /// The JS model's copy of the conversation (`None`: a built-in model).
    mirror: Option<Rc<RefCell<Mirror>>>,
}

impl Call {
    /// The agent `spec` describes: `{ text, fns, tools, model, builtin, system }` (see api.js `agent`), for
    /// a call stopped by `signal` (the call's `options.signal`, or a stream's): a provider's request stops
    /// with it, a JS model is handed it.
    pub(super) fn new(spec: &JsValue, signal: Option<&JsValue>) -> Result<Self, JsValue> {
        let text = get(spec, "text");
        if !text.is_string() {
            return Err(config_error("not an agent: create it with agent(config)".into()));
        }
        let template = template_of(string_of(&text).unwrap_or_default()).map_err(|e| agent_error(e, None, None))?;
        let thrown = Rc::new(RefCell::new(None));
        let fns = Array::from(&get(spec, "fns"));
        let tools = template
            .tools
            .iter()
            .enumerate()
            .map(|(k, declared)| {
                let at = u32::try_from(2 * k).unwrap_or(u32::MAX);
                Ok(JsTool {
                    spec: declared.clone(),
                    handle: fns.get(at).unchecked_into(),
                    decide: fns.get(at + 1),
                    #[cfg(feature = "js-mcp")]
                    mcp: mcp_client(declared, signal, &fns.get(at)),
                    #[cfg(feature = "js-subagents")]
                    child: match &declared.subagent {
                        // The child's spec stands where a tool's code would: built for this call like the parent.
                        Some(s) => Some(crate::subagent::AgentTool::from_parts(
                            declared.definition.clone(),
                            Call::new(&fns.get(at), signal)?.agent,
                            s.task,
                        )),
                        None => None,
                    },
                })
            })
            .collect::<Result<Vec<_>, JsValue>>()?;

        let (agent, mirror) = match model_of(&get(spec, "builtin"), signal)? {
            Some(model) => (template.agent.with_parts(model, tools), None),
            None => {
                let mirror = Rc::new(RefCell::new(Mirror::default()));
                let model = JsModel::new(spec, thrown.clone(), mirror.clone(), signal);
                (template.agent.with_parts(model, tools), Some(mirror))
            }
        };
        #[allow(unused_mut)]
        let mut agent = agent.map_err(|e| agent_error(e, None, None))?;
        let approval = get(spec, "approval");
        // The template's policy shared, not its rule written out again for every call.
        if let (true, Some(host)) = (approval.is_function(), template.agent.config.policy.clone()) {
            // One thread on wasm32: the core's Arc (Send natively) is only ever used here.
            #[allow(clippy::arc_with_non_send_sync)]
            let policy = std::sync::Arc::new(JsPolicy {
                f: approval,
                template: host,
            });
            agent.config.policy = Some(policy);
        }
        #[cfg(feature = "js-guardrails")]
        {
            agent.config.guardrails = guardrails_of(spec);
        }
        // `compaction.summarize.model`: a provider, or a model function (shown no tools).
        #[cfg(feature = "js-summaries")]
        {
            let f = get(spec, "summaryModel");
            if f.is_function() {
                // One thread on wasm32: the core's Arc (Send natively) is only ever used here.
                #[allow(clippy::arc_with_non_send_sync)]
                let model: std::sync::Arc<dyn crate::model::DynModel> =
                    match model_of(&get(spec, "summaryBuiltin"), signal)? {
                        Some(model) => std::sync::Arc::from(model),
                        None => std::sync::Arc::new(JsModel::summarizer(f, thrown.clone(), signal)),
                    };
                agent.config.summarizer.model = Some(model);
            }
        }
        Ok(Call { agent, thrown, mirror })
    }

    /// The checkpoint the caller handed in (an object, its JSON text or a sealed envelope), decoded as this
    /// agent reads checkpoints.
    #[cfg_attr(not(feature = "js-sessions"), allow(dead_code))]
    pub(super) async fn checkpoint_in(&self, value: &JsValue) -> Result<Decoded, AgentError> {
        Ok(self.decode(value).await?.0)
    }

    async fn decode(&self, value: &JsValue) -> Result<(Decoded, js_sys::JsString), AgentError> {
        let (text, js) = checkpoint_text(value, self.agent.limits().max_checkpoint_bytes)?;
        Ok((self.agent.decode(&text).await?, js))
    }

    /// The checkpoint this call resumes: decoded, and the JS model's mirror started from JS's own parse of
    /// its text when the core read its messages as written.
    async fn resumed(&self, value: &JsValue) -> Result<Decoded, AgentError> {
        let (decoded, js) = self.decode(value).await?;
        if let Some(mirror) = self.mirror.as_ref().filter(|_| decoded.messages_as_written()) {
            let messages = messages_of(&js);
            let len = decoded.checkpoint().messages.len();
            if Array::is_array(&messages) && Array::from(&messages).length() as usize == len {
                mirror.borrow_mut().seed(messages.unchecked_into());
            }
        }
        Ok(decoded)
    }

    /// The checkpoint to hand out: the envelope when the agent seals, `None` (as it is) otherwise.
    pub(super) async fn sealed(&self, checkpoint: Option<&Checkpoint>) -> Result<Option<String>, JsValue> {
        match checkpoint.filter(|_| self.agent.seals()) {
            Some(cp) => self
                .agent
                .encode_checkpoint(cp)
                .await
                .map(Some)
                .map_err(|e| agent_error(e.into(), None, None)),
            None => Ok(None),
        }
    }

    /// The JS result of a run, or its error (with the cause JS threw, and the checkpoint sealed if need be).
    pub(super) async fn finish(
        &self,
        ran: Result<Outcome, AgentError>,
        cause: Option<JsValue>,
    ) -> Result<JsValue, JsValue> {
        let checkpoint = match &ran {
            Ok(o) => Some(o.checkpoint()),
            Err(e) => e.checkpoint(),
        };
        let sealed = self.sealed(checkpoint).await?;
        match ran {
            Ok(outcome) => Ok(outcome_js(&outcome, sealed)),
            Err(e) => {
                let cause = cause.or_else(|| self.thrown.borrow_mut().take());
                let given = sealed.map(|s| js_sys::JSON::parse(&s).unwrap_or(JsValue::UNDEFINED));
                Err(agent_error(e, cause, given))
            }
        }
    }
}

/// The JS result: written as one JSON text and parsed once. `sealed`: the envelope standing in for the
/// checkpoint (the messages are then written too; otherwise `result.messages` is the checkpoint's).
pub(super) fn outcome_js(outcome: &Outcome, sealed: Option<String>) -> JsValue {
    #[derive(Serialize)]
    struct Paused<'a> {
        interrupted: bool,
        question: &'a str,
        checkpoint: Option<&'a Checkpoint>,
        interrupts: &'a [crate::Interrupt],
    }
    #[derive(Serialize)]
    struct Complete<'a> {
        text: &'a str,
        usage: &'a Usage,
        messages: Option<&'a [Message]>,
        checkpoint: Option<&'a Checkpoint>,
        iterations: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        structured: Option<&'a Value>,
    }
    let whole = sealed.is_none();
    let text = match outcome {
        Outcome::Interrupted(i) => crate::json::to_string(&Paused {
            interrupted: true,
            question: &i.question,
            checkpoint: whole.then_some(&i.checkpoint),
            interrupts: i.interrupts(),
        }),
        Outcome::Complete(r) => crate::json::to_string(&Complete {
            text: &r.text,
            usage: &r.checkpoint.usage,
            messages: (!whole).then_some(&r.checkpoint.messages[..]),
            checkpoint: whole.then_some(&r.checkpoint),
            iterations: r.checkpoint.iterations,
            structured: r.structured(),
        }),
    };
    super::glue::outcome(&text.unwrap_or_default(), sealed)
}

/// Where a call's events go (its `onEvent`), and whether to stop (its `signal`).
pub(super) struct JsEvents {
    callback: Option<Function>,
    signal: Option<JsValue>,
    /// The caller's OpenTelemetry context when the call began (a traced agent's front passes it).
    #[cfg_attr(not(feature = "js-telemetry"), allow(dead_code))]
    trace_context: JsValue,
}

impl JsEvents {
    /// `{ onEvent?, signal? }` of a call (the front adds `followMs`/`pollMs` for a replay).
    pub(super) fn read(options: &JsValue, what: &str) -> Result<Self, JsValue> {
        if options.is_undefined() || options.is_null() {
            return Ok(JsEvents {
                callback: None,
                signal: None,
                trace_context: JsValue::UNDEFINED,
            });
        }
        if !options.is_object() {
            return Err(config_error(format!(
                "{what}: options must be an object {{ onEvent?, signal? }}, got {}",
                describe(options)
            )));
        }
        let keys = js_sys::Object::keys(options.unchecked_ref::<js_sys::Object>());
        for key in keys.iter().filter_map(|k| k.as_string()) {
            if !["onEvent", "signal", "followMs", "pollMs", "traceContext"].contains(&key.as_str()) {
                return Err(config_error(format!(
                    "{what}: options.{key}: unknown option (known: onEvent, signal)"
                )));
            }
        }
        let callback = match get(options, "onEvent") {
            f if f.is_function() => Some(f.unchecked_into()),
            f if f.is_undefined() || f.is_null() => None,
            f => {
                return Err(config_error(format!(
                    "{what}: options.onEvent: expected a function, got {}",
                    describe(&f)
                )));
            }
        };
        let signal = Some(get(options, "signal")).filter(JsValue::is_object);
        let trace_context = get(options, "traceContext");
        Ok(JsEvents {
            callback,
            signal,
            trace_context,
        })
    }

    /// The caller's OpenTelemetry context when the call began.
    #[cfg_attr(not(feature = "js-telemetry"), allow(dead_code))]
    pub(super) fn trace_context(&self) -> &JsValue {
        &self.trace_context
    }

    /// The call's `signal`, if it has one.
    pub(super) fn signal(&self) -> Option<&JsValue> {
        self.signal.as_ref()
    }

    fn send(&self, event: JsValue) {
        if let Some(f) = &self.callback {
            // What a listener throws is ignored: a broken listener cannot break a run the user pays for.
            let _ = f.call1(&JsValue::UNDEFINED, &event);
        }
    }
}

/// A session's event with its number, as JS gets it: `{ type, …, seq }`.
pub(super) fn numbered(event: &Event<'_>, seq: u64) -> JsValue {
    let mut text = event.to_json();
    if text.ends_with('}') {
        text.pop();
        text.push_str(&format!(",\"seq\":{seq}}}"));
    }
    js_sys::JSON::parse(&text).unwrap_or(JsValue::UNDEFINED)
}

impl EventSink for JsEvents {
    fn event(&mut self, event: &Event<'_>) {
        // Nobody listens (a session's subagent still reports its steps, for the log): nothing to write.
        if self.callback.is_none() {
            return;
        }
        // Its JSON text (a subagent's event with its path added to the text), parsed by JS once.
        self.send(js_sys::JSON::parse(&event.to_json()).unwrap_or(JsValue::UNDEFINED));
    }

    fn sequenced(&mut self, seq: Option<u64>, event: &Event<'_>) {
        match seq {
            Some(seq) if self.callback.is_some() => self.send(numbered(event, seq)),
            _ => self.event(event),
        }
    }

    fn wants_deltas(&self) -> bool {
        self.callback.is_some()
    }

    fn listening(&self) -> bool {
        self.callback.is_some()
    }

    fn aborted(&self) -> bool {
        self.signal
            .as_ref()
            .is_some_and(|s| get(s, "aborted").as_bool() == Some(true))
    }

    fn when_aborted(&self) -> Option<crate::BoxFuture<'static, ()>> {
        let watch = super::glue::on_abort(self.signal.as_ref()?);
        if watch.is_undefined() {
            return None;
        }
        let listening = StopListening(get(&watch, "cancel"));
        let promise: Promise = get(&watch, "promise").unchecked_into();
        Some(Box::pin(async move {
            let _listening = listening;
            let _ = JsFuture::from(promise).await;
        }))
    }
}

/// Calls a JS `cancel()` when a wait ends however it ends (finished, or dropped): it removes an abort listener, or
/// settles a promise nobody waits for any more.
struct StopListening(JsValue);

impl Drop for StopListening {
    fn drop(&mut self) {
        if let Some(cancel) = self.0.dyn_ref::<Function>() {
            let _ = cancel.call0(&JsValue::UNDEFINED);
        }
    }
}

/// The answer of `resume(checkpoint, answer)`: a string, a decision, `{ decisions }`, or nothing.
pub(super) fn answer_of(answer: &JsValue) -> Result<Resume, AgentError> {
    if let Some(text) = answer.as_string() {
        return Ok(Resume::Answer(text));
    }
    if answer.is_undefined() {
        return Ok(Resume::Nothing);
    }
    let text = json_text(answer).ok().flatten().ok_or_else(|| AgentError::Decision {
        id: None,
        problem: format!(
            "answer: expected a string, a decision {{ type, ... }} or {{ decisions }}, got {}",
            describe(answer)
        ),
    })?;
    Resume::from_answer_json(&text)
}

/// `checkAgent(spec)`: every rule of the config, checked at `agent()` (nothing runs); returns the tools a JS
/// model is shown (`final_answer` among them with an output schema).
#[wasm_bindgen(js_name = checkAgent)]
pub fn check_agent(spec: JsValue) -> Result<JsValue, JsValue> {
    Ok(to_js(Call::new(&spec, None)?.agent.tools()))
}

/// `checkTool(text, path)`: a tool's declaration read as an agent reads it (`defineTool` checks at once).
#[wasm_bindgen(js_name = checkTool)]
pub fn check_tool(text: &str, path: &str) -> Result<(), JsValue> {
    ToolSpec::from_value(super::convert::parse_json(text), path)
        .map(|_| ())
        .map_err(|e| match e {
            AgentError::Config(p) => config_error(p),
            other => agent_error(other, None, None),
        })
}

/// Runs `input` with the call's options, converting the outcome or error at the end.
async fn run(
    spec: JsValue,
    prompt: Option<JsValue>,
    resume: Option<(JsValue, JsValue)>,
    options: JsValue,
    what: &str,
) -> Result<JsValue, JsValue> {
    let mut events = JsEvents::read(&options, what)?;
    #[allow(unused_mut)]
    let mut call = Call::new(&spec, events.signal())?;
    #[cfg(feature = "js-telemetry")]
    {
        call.agent.config.telemetry = super::telemetry::telemetry_of(&spec, events.trace_context());
    }
    let input = match (prompt, resume) {
        (Some(message), _) => Input::Prompt(message.as_string().ok_or_else(|| {
            config_error(format!(
                "prompt(message): expected a string, got {}",
                describe(&message)
            ))
        })?),
        (None, Some((checkpoint, answer))) => {
            let answer = answer_of(&answer).map_err(|e| agent_error(e, None, None))?;
            let decoded = call
                .resumed(&checkpoint)
                .await
                .map_err(|e| agent_error(e, None, None))?;
            Input::Decoded(decoded, answer)
        }
        (None, None) => return Err(config_error("nothing to run".into())),
    };
    let ran = call.agent.run(input, &mut events).await;
    call.finish(ran, None).await
}

/// `prompt(spec, message, options)`: starts a run.
#[wasm_bindgen]
pub fn prompt(spec: JsValue, message: JsValue, options: JsValue) -> Promise {
    future_to_promise(run(spec, Some(message), None, options, "prompt(message, options)"))
}

/// `resume(spec, checkpoint, answer, options)`: continues a checkpoint (object, JSON text or envelope).
#[wasm_bindgen]
pub fn resume(spec: JsValue, checkpoint: JsValue, answer: JsValue, options: JsValue) -> Promise {
    future_to_promise(run(
        spec,
        None,
        Some((checkpoint, answer)),
        options,
        "resume(checkpoint, answer, options)",
    ))
}

/// A client stopped by `signal`, through `fetch` when it is a function (else the global `fetch`).
#[cfg(feature = "js-mcp")]
fn fetch_client(signal: Option<&JsValue>, fetch: &JsValue) -> crate::provider::FetchClient {
    let client = signal.map_or_else(crate::provider::FetchClient::default, |s| {
        crate::provider::FetchClient::with_signal(s.clone())
    });
    match fetch.dyn_ref::<Function>() {
        Some(f) => client.through(f.clone()),
        None => client,
    }
}

/// `mcpList(text, signal, fetch)`: the tools of the MCP server `mcpTools(options)` names (`{ url, headers?, prefix?,
/// timeoutMs? }` as JSON text), as JSON text `{ protocol, session?, tools: [{ name, tool, description,
/// inputSchema }] }` (`name` prefixed, `tool` the server's). A failure is a `ConfigError` for bad options and an
/// `McpError` for the server.
#[cfg(feature = "js-mcp")]
#[wasm_bindgen(js_name = mcpList)]
pub async fn mcp_list(text: String, signal: JsValue, fetch: JsValue) -> Result<String, JsValue> {
    const PATH: &str = "mcpTools(options)";
    let mut options = super::convert::parse_json(&text);
    let prefix = match options.as_object_mut().and_then(|o| o.remove("prefix")) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(p)) => p,
        Some(other) => {
            return Err(config_error(format!(
                "{PATH}.prefix: expected a string, got {}",
                crate::options::describe(&other)
            )));
        }
    };
    if let Some(o) = options.as_object_mut() {
        o.insert("tool".into(), Value::String(String::new()));
    }
    let spec = crate::spec::McpToolSpec::read(options, PATH).map_err(config_error)?;
    let signal = Some(&signal).filter(|s| !s.is_undefined() && !s.is_null());
    let http = fetch_client(signal, &fetch);
    let client = std::sync::Arc::new(crate::mcp::McpClient::new(spec.server, http));
    let failed = |source| {
        agent_error(
            AgentError::Mcp {
                source,
                checkpoint: None,
            },
            None,
            None,
        )
    };
    let tools = crate::mcp::tools(client.clone(), &prefix).await.map_err(failed)?;
    let era = client.era().await.map_err(failed)?;
    let listed: Vec<Value> = tools
        .iter()
        .map(|t| {
            let d = t.definition();
            serde_json::json!({"name": d.name, "tool": t.remote(), "description": d.description, "inputSchema": d.input_schema})
        })
        .collect();
    let session = match &era {
        crate::mcp::Era::Legacy { session, .. } => session.clone(),
        crate::mcp::Era::Modern(_) => None,
    };
    Ok(serde_json::json!({"protocol": era.version(), "session": session, "tools": listed}).to_string())
}
