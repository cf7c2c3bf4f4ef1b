//! The agent as data: [`AgentSpec`], read from JSON once by every host (the npm package reads `agent(config)`
//! through it), with every rule of an agent's configuration in one place.
//!
//! Every options object is read by [`Options`], which refuses a key it does not know with the nearest known
//! one as a hint (`config.system: unknown option; did you mean "instructions"?`) and names the path of every
//! value it refuses — never a silent default.
//!
//! ```
//! use resumable_agent::{AgentBuilder, AgentSpec, ModelResponse, ScriptedModel};
//! let spec = AgentSpec::from_json(r#"{ "instructions": "Be brief.", "maxIterations": 5 }"#)?;
//! let agent = AgentBuilder::from_spec(ScriptedModel::new([ModelResponse::text("Hi!")]), spec).build()?;
//! # let _ = agent;
//! let err = AgentSpec::from_json(r#"{ "system": "Be brief." }"#).unwrap_err();
//! assert!(err.to_string().contains(r#"config.system: unknown option; did you mean "instructions"?"#));
//! # Ok::<(), resumable_agent::AgentError>(())
//! ```

use serde_json::Value;

use crate::options::{HOST_FUNCTION, Options, describe};

use crate::error::AgentError;
use crate::interrupt::{Approval, OnExpire};
use crate::keys::CheckpointKeys;
use crate::limits::{Limits, MAX_DEPTH_LIMIT};
use crate::model::ToolDefinition;
use crate::run::{Compaction, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_OUTPUT_RETRIES};

/// Whether a tool's calls wait for a human's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NeedsApproval {
    /// The same for every call.
    Fixed(Approval),
    /// Decided per call by the tool's own code (in the npm package: a `needsApproval` function).
    PerCall,
}

impl Default for NeedsApproval {
    fn default() -> Self {
        NeedsApproval::Fixed(Approval::NotNeeded)
    }
}

/// A tool as an [`AgentSpec`] declares it: what the model sees, and its approval rules. Its code is bound
/// by the host: [`ToolSpec::handle`] in Rust, the tool's `handle` function in the npm package.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolSpec {
    /// Name, description and input schema.
    pub definition: ToolDefinition,
    /// Whether calls wait for approval.
    pub needs_approval: NeedsApproval,
    /// For [`NeedsApproval::PerCall`]: the source text of the host's function, when the host gave it (the npm
    /// package does: `HOST_FUNCTION`, a newline, `String(fn)`). The agent's fingerprint covers it, so a rule
    /// changed while a run waits makes another agent.
    pub rule_source: String,
    /// What a resume does once the tool's interrupt expired.
    pub on_expire: OnExpire,
    /// For a tool of an MCP server (`mcpTools()`): where it is; its calls go there instead of to code.
    pub mcp: Option<McpToolSpec>,
    /// Its timeout and retries (`timeoutMs`, `retry: { maxAttempts, backoffMs }`).
    pub policy: crate::tool::CallPolicy,
    /// For a subagent (the npm package's `agentTool()`): the child agent's config, as its JSON text (the parent's
    /// fingerprint covers it), and whether the input is the default `{ task }` (else the child's prompt is the
    /// input's JSON text).
    pub subagent: Option<SubagentSpec>,
}

/// A subagent tool's child, as the npm package's `agentTool()` declares it (`subagent: { config, task }`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubagentSpec {
    /// The child agent's config, as JSON text.
    pub config: String,
    /// True when the input is `{ task }`, the child's prompt.
    pub task: bool,
}

/// Where an MCP tool lives: a tool's `mcp` member, as `mcpTools()` writes it.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct McpToolSpec {
    /// The server.
    pub server: crate::mcp::McpServer,
    /// The tool's name on the server.
    pub tool: String,
    /// The era the listing negotiated (`None`: negotiate at the first call).
    pub era: Option<crate::mcp::Era>,
}

impl std::fmt::Debug for McpToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolSpec")
            .field("server", &self.server)
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

/// The keys of an MCP tool's `mcp` member.
const MCP_KEYS: &[&str] = &[
    "url",
    "headers",
    "tool",
    "protocol",
    "session",
    "timeoutMs",
    "maxResponseBytes",
];

impl McpToolSpec {
    /// Reads a tool's `mcp` member at `path` (a header's value never appears in an error).
    ///
    /// # Errors
    /// What is wrong, naming the key.
    pub fn read(value: Value, path: &str) -> Result<Self, String> {
        let mut o = Options::new(value, path, MCP_KEYS, &[])?;
        let url = o
            .string("url")?
            .ok_or_else(|| format!("{}: missing (the server's URL)", o.at("url")))?;
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(format!("{}: expected an http(s) URL", o.at("url")));
        }
        let mut server = crate::mcp::McpServer::new(url);
        match o.take("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(h)) => {
                for (k, v) in h {
                    let Value::String(v) = v else {
                        return Err(format!("{}.{k}: expected a string", o.at("headers")));
                    };
                    server = server.header(k, v);
                }
            }
            Some(other) => {
                return Err(format!(
                    "{}: expected an object of strings, got {}",
                    o.at("headers"),
                    describe(&other)
                ));
            }
        }
        if let Some(ms) = o.take("timeoutMs") {
            let ms = ms.as_u64().filter(|ms| *ms > 0).ok_or_else(|| {
                format!(
                    "{}: expected a positive whole number of milliseconds",
                    o.at("timeoutMs")
                )
            })?;
            server = server.timeout(std::time::Duration::from_millis(ms));
        }
        if let Some(bytes) = o.integer("maxResponseBytes", 1)? {
            server = server.max_response_bytes(usize::try_from(bytes).unwrap_or(usize::MAX));
        }
        let tool = o
            .string("tool")?
            .ok_or_else(|| format!("{}: missing (the tool's name on the server)", o.at("tool")))?;
        let session = o.string("session")?;
        let era = o.string("protocol")?.map(|v| {
            if v.as_str() >= crate::mcp::MODERN {
                crate::mcp::Era::Modern(v)
            } else {
                crate::mcp::Era::Legacy { version: v, session }
            }
        });
        Ok(McpToolSpec { server, tool, era })
    }
}

/// The keys of a tool's JSON: `handle` and `schema` belong to the host (the code, and the schema builder
/// that becomes `inputSchema`), the rest to the tool.
const TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "schema",
    "inputSchema",
    "handle",
    "needsApproval",
    "onExpire",
    "mcp",
    "subagent",
    "timeoutMs",
    "retry",
];
/// Other libraries' names for a tool's options.
const TOOL_HINTS: &[(&str, &str)] = &[
    ("parameters", "schema"),
    ("input_schema", "schema"),
    ("execute", "handle"),
    ("run", "handle"),
    ("fn", "handle"),
    ("function", "handle"),
    ("approval", "needsApproval"),
    ("requireApproval", "needsApproval"),
];

/// The rule every provider accepts for a tool name: 1 to 64 ASCII letters, digits, `_` or `-`.
pub(crate) fn check_tool_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "expected 1-64 letters, digits, \"_\" or \"-\" (what every provider accepts), got {name:?}"
        ))
    }
}

impl ToolSpec {
    /// Reads a tool's JSON (`{ name, description?, inputSchema?, needsApproval?, onExpire? }`) at `path`.
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the key and what was wrong with it.
    pub fn from_value(value: Value, path: &str) -> Result<Self, AgentError> {
        Self::read(value, path).map_err(AgentError::Config)
    }

    fn read(value: Value, path: &str) -> Result<Self, String> {
        let mut o = Options::new(value, path, TOOL_KEYS, TOOL_HINTS)?;
        let name = match o.take("name") {
            Some(Value::String(s)) => s,
            other => {
                return Err(format!(
                    "{}: expected 1-64 letters, digits, \"_\" or \"-\", got {}",
                    o.at("name"),
                    other.as_ref().map_or_else(|| "undefined".into(), describe)
                ));
            }
        };
        check_tool_name(&name).map_err(|p| format!("{}: {p}", o.at("name")))?;
        let description = o.string("description")?.unwrap_or_default();
        // The host turned `schema` into `inputSchema` (and checked it); `handle` is the host's code.
        o.take("schema");
        o.take("handle");
        let mcp = match o.take("mcp") {
            None | Some(Value::Null) => None,
            Some(m) => Some(McpToolSpec::read(m, &o.at("mcp"))?),
        };
        let input_schema = match o.take("inputSchema") {
            None => serde_json::json!({"type": "object", "properties": {}}),
            Some(s) => {
                // An MCP server's schema is the server's: its keywords are not ours to refuse.
                if mcp.is_none() {
                    crate::schema::check_definition(&s, &o.at("inputSchema"))?;
                }
                if s.get("type").and_then(Value::as_str) != Some("object") {
                    return Err(format!(
                        "{}.type: a tool's input schema must describe an object (type: \"object\"), got {}",
                        o.at("inputSchema"),
                        s.get("type").map_or_else(|| "undefined".into(), describe)
                    ));
                }
                s
            }
        };
        let rule = o.take("needsApproval");
        let rule_source = match &rule {
            Some(Value::String(s)) => host_function_source(s).unwrap_or_default().to_owned(),
            _ => String::new(),
        };
        let needs_approval = needs_approval(rule, &o.at("needsApproval"))?;
        let on_expire = match o.string("onExpire")?.as_deref() {
            None | Some("error") => OnExpire::Error,
            Some("deny") => OnExpire::Deny,
            Some(other) => {
                return Err(format!(
                    "{}: expected \"deny\" or \"error\", got {other:?}",
                    o.at("onExpire")
                ));
            }
        };
        let policy = call_policy(&mut o)?;
        let subagent = match o.take("subagent") {
            None | Some(Value::Null) => None,
            // A variant without subagents never runs one (agentTool() itself says which import has them).
            Some(_) if !crate::subagent::NESTS => {
                return Err(format!(
                    "{}: agentTool() needs subagents, which this variant of the package's WebAssembly does not have: import it from 'resumable-agent'",
                    o.at("subagent")
                ));
            }
            Some(Value::Object(mut m)) => match (m.remove("config"), m.remove("task")) {
                (Some(Value::String(config)), Some(Value::Bool(task))) if m.is_empty() && mcp.is_none() => {
                    Some(SubagentSpec { config, task })
                }
                _ => {
                    return Err(format!(
                        "{}: expected {{ config, task }} as agentTool() writes it (and no mcp)",
                        o.at("subagent")
                    ));
                }
            },
            Some(other) => {
                return Err(format!(
                    "{}: expected an object, got {}",
                    o.at("subagent"),
                    describe(&other)
                ));
            }
        };
        Ok(ToolSpec {
            definition: ToolDefinition::new(name, description, input_schema),
            needs_approval,
            rule_source,
            on_expire,
            mcp,
            policy,
            subagent,
        })
    }

    /// The declared tool with `f` as its code: name, description, schema and approval rules as declared (a
    /// tool that decides per call gets its rule with [`FnTool::needs_approval_if`](crate::FnTool)).
    pub fn handle<F, Fut>(self, f: F) -> crate::tool::FnTool<F>
    where
        F: Fn(Value, crate::tool::ToolContext<'_>) -> Fut + crate::MaybeSend + crate::MaybeSync,
        Fut: std::future::Future<Output = Result<Value, crate::tool::ToolError>> + crate::MaybeSend + 'static,
    {
        let d = self.definition;
        let tool = crate::tool::tool(d.name, d.description, d.input_schema, f)
            .on_expire(self.on_expire)
            .call_policy(self.policy);
        match self.needs_approval {
            NeedsApproval::Fixed(Approval::Needed { expires_in_ms: None }) => tool.needs_approval(),
            NeedsApproval::Fixed(Approval::Needed {
                expires_in_ms: Some(ms),
            }) => tool.needs_approval_within(ms),
            _ => tool,
        }
    }
}

impl NeedsApproval {
    /// Reads `needsApproval` at `path`: a boolean, `{ expiresInMs }`, or a host function (decided per call);
    /// absent or `null` is "not needed". Also what a per-call decision answers (then without a function).
    ///
    /// # Errors
    /// [`AgentError::Config`] naming what is wrong.
    pub fn from_value(value: Option<Value>, path: &str) -> Result<Self, AgentError> {
        needs_approval(value.filter(|v| !v.is_null()), path).map_err(AgentError::Config)
    }
}

/// The source text a host wrote after [`HOST_FUNCTION`] and a newline (`""` when it wrote the marker alone),
/// or `None` when `s` is not a host function.
fn host_function_source(s: &str) -> Option<&str> {
    match s.strip_prefix(HOST_FUNCTION)? {
        "" => Some(""),
        rest => rest.strip_prefix('\n'),
    }
}

impl ToolSpec {
    /// What decides this tool's approvals, as the agent's fingerprint covers it (see
    /// [`Tool::approval_rule`](crate::Tool::approval_rule)).
    pub fn approval_rule(&self) -> Value {
        let own = match self.needs_approval {
            NeedsApproval::Fixed(a) => crate::tool::rule_json(Some(a), ""),
            NeedsApproval::PerCall => crate::tool::rule_json(None, &self.rule_source),
        };
        match self.subagent.as_ref().filter(|_| crate::subagent::NESTS) {
            // A child changed while a run waits is a changed tool of the parent.
            Some(s) => {
                serde_json::json!({ "approval": own, "agent": crate::approval::part_hash(&Value::from(s.config.as_str())) })
            }
            None => own,
        }
    }
}

/// `needsApproval`: a boolean, `{ expiresInMs }`, or a host function (decided per call).
fn needs_approval(value: Option<Value>, path: &str) -> Result<NeedsApproval, String> {
    match value {
        None | Some(Value::Bool(false)) => Ok(NeedsApproval::Fixed(Approval::NotNeeded)),
        Some(Value::Bool(true)) => Ok(NeedsApproval::Fixed(Approval::needed())),
        Some(Value::String(s)) if host_function_source(&s).is_some() => Ok(NeedsApproval::PerCall),
        Some(v @ Value::Object(_)) => {
            let mut o = Options::new(
                v,
                path,
                &["expiresInMs"],
                &[("expiresIn", "expiresInMs"), ("ttl", "expiresInMs")],
            )?;
            Ok(NeedsApproval::Fixed(match o.integer("expiresInMs", 0)? {
                Some(ms) => Approval::needed_within(ms),
                None => Approval::needed(),
            }))
        }
        Some(v) => Err(format!(
            "{path}: expected a boolean, {{ expiresInMs }} or a function, got {}",
            describe(&v)
        )),
    }
}

/// An agent's configuration as data: what [`AgentBuilder`](crate::AgentBuilder) takes, read from JSON with
/// every rule checked and every unknown key refused ([`AgentSpec::from_json`]).
///
/// The JSON is the npm package's `agent(config)` without its functions: `{ instructions?, tools?,
/// maxIterations?, state?, limits?: { maxCheckpointBytes?, maxDepth? }, output?, maxOutputRetries?,
/// compaction?: { maxBytes?, maxMessages?, keepFirst? }, checkpointKeys?: { current, keys: { [id]: secret },
/// agent? }, sealed?, toolDefaults?: { timeoutMs?, retry? }, telemetry?, guardrails? }`. A secret is a string (its
/// UTF-8 bytes) or an array of bytes. `telemetry` and `guardrails` are checked and left to the host (its tracer
/// and functions: [`AgentBuilder::telemetry`](crate::AgentBuilder::telemetry), `input_guardrail`, …).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentSpec {
    /// The system instructions.
    pub instructions: Option<String>,
    /// The tools, declared (their code is bound by the host).
    pub tools: Vec<ToolSpec>,
    /// Model calls a run may make, across resumes.
    pub max_iterations: u32,
    /// The state a run starts with.
    pub state: Option<Value>,
    /// Size and depth limits.
    pub limits: Limits,
    /// The output schema, with how many invalid answers are fed back.
    pub output: Option<(Value, u32)>,
    /// How long runs stay within bounds.
    pub compaction: Option<Compaction>,
    /// Signing (and sealing) keys.
    pub checkpoint_keys: Option<CheckpointKeys>,
    /// Timeouts and retries of the tools that set none (`toolDefaults: { timeoutMs?, retry? }`).
    pub tool_defaults: crate::tool::CallPolicy,
    /// `toolConcurrency`: how many calls of a turn run at once (0, the default: all).
    pub tool_concurrency: u32,
    /// `compaction.summarize.instructions`: what a summary call is told to do.
    pub summary_instructions: Option<String>,
    /// `approval`: the source text of the host's approval policy over every call (the npm package's
    /// `(call, ctx) => 'allow' | 'ask' | 'deny' | { ask: true, … }`), which the host binds per call. The agent's
    /// fingerprint covers it.
    pub approval: Option<String>,
    /// `budget: { totalTokens?, inputTokens?, outputTokens?, onExceeded? }`.
    pub budget: Option<crate::approval::Budget>,
    /// `onDrift: 'error' | 'reapprove' | 'continue'`.
    pub on_drift: crate::approval::OnDrift,
}

const AGENT_KEYS: &[&str] = &[
    "instructions",
    "tools",
    "model",
    "maxIterations",
    "state",
    "checkpointKeys",
    "sealed",
    "limits",
    "output",
    "maxOutputRetries",
    "compaction",
    "toolDefaults",
    "toolConcurrency",
    "telemetry",
    "guardrails",
    "approval",
    "budget",
    "onDrift",
];
/// Other libraries' names for an agent's options (the AI SDK, the OpenAI Agents SDK, LangGraph).
const AGENT_HINTS: &[(&str, &str)] = &[
    ("system", "instructions"),
    ("systemPrompt", "instructions"),
    ("prompt", "instructions"),
    ("maxSteps", "maxIterations"),
    ("maxTurns", "maxIterations"),
    ("stopWhen", "maxIterations"),
    ("tool", "tools"),
    ("outputType", "output"),
    ("schema", "output"),
    ("keys", "checkpointKeys"),
    ("approvalPolicy", "approval"),
    ("needsApproval", "approval"),
    ("tokenBudget", "budget"),
    ("parallelToolCalls", "toolConcurrency"),
    ("maxConcurrency", "toolConcurrency"),
    ("maxTokens", "budget"),
];
const LIMIT_KEYS: &[&str] = &["maxCheckpointBytes", "maxDepth"];
const LIMIT_HINTS: &[(&str, &str)] = &[("maxBytes", "maxCheckpointBytes"), ("maxSize", "maxCheckpointBytes")];
const COMPACTION_KEYS: &[&str] = &["maxBytes", "maxMessages", "keepFirst", "keepLast", "summarize"];
const KEYS_KEYS: &[&str] = &["current", "keys", "agent"];

impl AgentSpec {
    /// Reads a spec from JSON text.
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the first key that is unknown or wrong (`config.limits.maxBytes: unknown
    /// option; did you mean "maxCheckpointBytes"?`).
    pub fn from_json(text: &str) -> Result<Self, AgentError> {
        // JSON written by JS may hold a lone surrogate (as an escape): it becomes U+FFFD, as everywhere.
        let value: Value = serde_json::from_str(&crate::limits::repair_lone_surrogates(text))
            .map_err(|e| AgentError::Config(format!("config: not JSON: {e}")))?;
        Self::from_value(value)
    }

    /// Reads a spec from a JSON value (see [`AgentSpec::from_json`]).
    ///
    /// # Errors
    /// As [`AgentSpec::from_json`].
    pub fn from_value(value: Value) -> Result<Self, AgentError> {
        Self::read(value).map_err(AgentError::Config)
    }

    fn read(value: Value) -> Result<Self, String> {
        let mut c = Options::new(value, "config", AGENT_KEYS, AGENT_HINTS)?;
        // The host's model; the spec knows only that there is one.
        c.take("model");
        let instructions = c.string("instructions")?;
        let max_iterations = c.small("maxIterations", 1)?.unwrap_or(DEFAULT_MAX_ITERATIONS);
        let tools = match c.take("tools") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(i, t)| ToolSpec::read(t, &format!("config.tools[{i}]")))
                .collect::<Result<_, _>>()?,
            Some(v) => {
                return Err(format!(
                    "config.tools: expected an array of tools, got {}",
                    describe(&v)
                ));
            }
        };
        // Present (even null) when the agent has a state: `take` would drop a null state.
        let state = c.take_present("state");
        let limits = limits(c.take("limits"))?;
        let retries = c.small("maxOutputRetries", 0)?;
        let output = match c.take("output") {
            Some(schema) => {
                crate::schema::check_definition(&schema, "config.output")?;
                Some((schema, retries.unwrap_or(DEFAULT_MAX_OUTPUT_RETRIES)))
            }
            None if retries.is_some() => {
                return Err("config.maxOutputRetries: only with config.output (a structured answer)".into());
            }
            None => None,
        };
        let (compaction, summary_instructions) = match c.take("compaction").map(compaction).transpose()? {
            Some((rule, instructions)) => (Some(rule), instructions),
            None => (None, None),
        };
        // The host's tracer and guardrail functions stay with the host; their options are checked here, as every
        // option is (the nearest known key named).
        if let Some(t) = c.take("telemetry") {
            check_telemetry(t)?;
        }
        if let Some(g) = c.take("guardrails") {
            check_guardrails(g)?;
        }
        let tool_defaults = match c.take("toolDefaults") {
            None => crate::tool::CallPolicy::default(),
            Some(v) => call_policy(&mut Options::new(
                v,
                "config.toolDefaults",
                &["timeoutMs", "retry"],
                &[("timeout", "timeoutMs")],
            )?)?,
        };
        let tool_concurrency = c.small("toolConcurrency", 1)?.unwrap_or(0);
        let approval = match c.take("approval") {
            None => None,
            Some(v) => match v.as_str().and_then(host_function_source) {
                Some(source) => Some(source.to_owned()),
                None => {
                    return Err(format!(
                        "config.approval: expected a function (call, ctx) => 'allow' | 'ask' | 'deny' | {{ ask: true, expiresInMs?, approvers? }}, got {}",
                        describe(&v)
                    ));
                }
            },
        };
        let budget = c.take("budget").map(budget).transpose()?;
        let on_drift = match c.string("onDrift")?.as_deref() {
            None | Some("error") => crate::approval::OnDrift::Error,
            Some("reapprove") => crate::approval::OnDrift::Reapprove,
            Some("continue") => crate::approval::OnDrift::Continue,
            Some(other) => {
                return Err(format!(
                    r#"config.onDrift: expected "error", "reapprove" or "continue", got {other:?}"#
                ));
            }
        };
        let sealed = c.boolean("sealed")?.unwrap_or(false);
        let checkpoint_keys = match c.take("checkpointKeys") {
            Some(k) => Some(keys(k)?.sealed(sealed)),
            None if sealed => {
                return Err("config.sealed: sealing needs config.checkpointKeys ({ current, keys })".into());
            }
            None => None,
        };
        Ok(AgentSpec {
            instructions,
            tools,
            max_iterations,
            state,
            limits,
            output,
            compaction,
            checkpoint_keys,
            tool_defaults,
            tool_concurrency,
            summary_instructions,
            approval,
            budget,
            on_drift,
        })
    }
}

/// `budget: { totalTokens?, inputTokens?, outputTokens?, onExceeded? }`: at least one limit.
fn budget(value: Value) -> Result<crate::approval::Budget, String> {
    let path = "config.budget";
    let mut budget = crate::approval::Budget::read(&value, path, &["onExceeded"])?;
    budget.on_exceeded = match value.get("onExceeded") {
        None | Some(Value::Null) => crate::approval::OnExceeded::Error,
        Some(Value::String(s)) if s == "error" => crate::approval::OnExceeded::Error,
        Some(Value::String(s)) if s == "ask" => crate::approval::OnExceeded::Ask,
        Some(other) => {
            return Err(format!(
                "{path}.onExceeded: expected \"error\" or \"ask\", got {}",
                match other {
                    Value::String(s) => format!("{s:?}"),
                    v => describe(v),
                }
            ));
        }
    };
    if budget.is_empty() {
        return Err("config.budget: give totalTokens, inputTokens, outputTokens or several".into());
    }
    Ok(budget)
}

/// `telemetry: { tracer, agentName?, recordContent?, scalarAttributes? }` (the tracer is the host's object).
fn check_telemetry(value: Value) -> Result<(), String> {
    let known = ["tracer", "agentName", "recordContent", "scalarAttributes"];
    let mut t = Options::new(
        value,
        "config.telemetry",
        &known,
        &[("name", "agentName"), ("recordInputs", "recordContent")],
    )?;
    t.take("tracer");
    if t.string("agentName")?.is_some_and(|n| n.is_empty()) {
        return Err(format!("{}: expected a non-empty string, got \"\"", t.at("agentName")));
    }
    t.boolean("recordContent")?;
    t.boolean("scalarAttributes")?;
    Ok(())
}

/// `guardrails: { input?: [function], output?: [function] }` (each function the host's).
fn check_guardrails(value: Value) -> Result<(), String> {
    let mut g = Options::new(value, "config.guardrails", &["input", "output"], &[])?;
    for kind in ["input", "output"] {
        match g.take(kind) {
            None => {}
            Some(Value::Array(fns)) => {
                for (i, f) in fns.iter().enumerate() {
                    if f.as_str().and_then(host_function_source).is_none() {
                        return Err(format!(
                            "{}[{i}]: expected a function ({{ kind, messages, text?, structured? }}) => {{ tripwire, info }} | undefined, got {}",
                            g.at(kind),
                            describe(f)
                        ));
                    }
                }
            }
            Some(v) => {
                return Err(format!(
                    "{}: expected an array of functions, got {}",
                    g.at(kind),
                    describe(&v)
                ));
            }
        }
    }
    Ok(())
}

/// `timeoutMs` and `retry: { maxAttempts, backoffMs, retryOn? }` of a tool or of `toolDefaults` (`retryOn` is the
/// host's code: the host applies it).
fn call_policy(o: &mut Options) -> Result<crate::tool::CallPolicy, String> {
    let mut policy = crate::tool::CallPolicy {
        timeout_ms: o.integer("timeoutMs", 1)?,
        ..crate::tool::CallPolicy::default()
    };
    if let Some(r) = o.take("retry") {
        let mut r = Options::new(
            r,
            &o.at("retry"),
            &["maxAttempts", "backoffMs", "retryOn"],
            &[
                ("attempts", "maxAttempts"),
                ("retries", "maxAttempts"),
                ("delayMs", "backoffMs"),
            ],
        )?;
        r.take("retryOn");
        policy.max_attempts = Some(r.small("maxAttempts", 1)?.unwrap_or(1));
        policy.backoff_ms = Some(r.integer("backoffMs", 0)?.unwrap_or(0));
    }
    Ok(policy)
}

fn limits(value: Option<Value>) -> Result<Limits, String> {
    let mut l = Options::optional(value, "config.limits", LIMIT_KEYS, LIMIT_HINTS)?;
    let mut limits = Limits::default();
    if let Some(n) = l.integer("maxCheckpointBytes", 1)? {
        limits = limits.max_checkpoint_bytes(usize::try_from(n).unwrap_or(usize::MAX));
    }
    if let Some(d) = l.integer("maxDepth", 1)? {
        if d > MAX_DEPTH_LIMIT as u64 {
            return Err(format!(
                "config.limits.maxDepth: {d} is over {MAX_DEPTH_LIMIT} (what a checkpoint can hold and still be read back)"
            ));
        }
        limits = limits.max_depth(usize::try_from(d).unwrap_or(MAX_DEPTH_LIMIT));
    }
    Ok(limits)
}

/// `compaction: { maxBytes?, maxMessages?, keepFirst?, keepLast?, summarize?: true | { maxBytes?, maxMessages?,
/// keepLast?, instructions?, model? } }`, and the summary instructions, if given (the host binds `model`).
fn compaction(value: Value) -> Result<(Compaction, Option<String>), String> {
    let mut k = Options::new(
        value,
        "config.compaction",
        COMPACTION_KEYS,
        &[("max", "maxBytes"), ("summary", "summarize")],
    )?;
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let mut rule = Compaction::default().keep_first(k.integer("keepFirst", 1)?.map_or(1, size));
    let bounds = |k: &mut Options, rule: &mut Compaction| -> Result<(), String> {
        if let Some(b) = k.integer("maxBytes", 1)? {
            *rule = rule.max_bytes(size(b));
        }
        if let Some(m) = k.integer("maxMessages", 1)? {
            *rule = rule.max_messages(size(m));
        }
        if let Some(n) = k.integer("keepLast", 0)? {
            *rule = rule.keep_last(size(n));
        }
        Ok(())
    };
    bounds(&mut k, &mut rule)?;
    let mut instructions = None;
    match k.take("summarize") {
        None | Some(Value::Bool(false)) => {}
        Some(_) if !crate::run::SUMMARIZES => {
            return Err("config.compaction.summarize: 'resumable-agent/core' has no summarizing compaction: import it from 'resumable-agent'".into());
        }
        Some(Value::Bool(true)) => rule = rule.summarize(),
        Some(v @ Value::Object(_)) => {
            let mut s = Options::new(
                v,
                "config.compaction.summarize",
                &["maxBytes", "maxMessages", "keepLast", "instructions", "model"],
                &[("prompt", "instructions"), ("system", "instructions")],
            )?;
            bounds(&mut s, &mut rule)?;
            instructions = s.string("instructions")?;
            // The host's model; the spec knows only that there may be one.
            s.take("model");
            rule = rule.summarize();
        }
        Some(v) => {
            return Err(format!(
                "config.compaction.summarize: expected true or {{ maxBytes?, maxMessages?, keepLast?, instructions?, model? }}, got {}",
                describe(&v)
            ));
        }
    }
    if rule.max_bytes.is_none() && rule.max_messages.is_none() {
        return Err(
            "config.compaction: give maxBytes, maxMessages or both (in compaction or in compaction.summarize)".into(),
        );
    }
    Ok((rule, instructions))
}

fn keys(value: Value) -> Result<CheckpointKeys, String> {
    let path = "config.checkpointKeys";
    let mut k = Options::new(
        value,
        path,
        KEYS_KEYS,
        &[("kid", "current"), ("secrets", "keys"), ("name", "agent")],
    )?;
    let current = match k.take("current") {
        Some(Value::String(s)) => s,
        other => {
            return Err(format!(
                "{path}.current: expected the id of the key that signs (a string), got {}",
                other.as_ref().map_or_else(|| "undefined".into(), describe)
            ));
        }
    };
    let mut out = CheckpointKeys::new(current);
    match k.take("keys") {
        Some(Value::Object(secrets)) => {
            for (kid, secret) in secrets {
                let bytes = match secret {
                    Value::String(s) => s.into_bytes(),
                    Value::Array(items) => items
                        .iter()
                        .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                        .collect::<Option<Vec<u8>>>()
                        .ok_or_else(|| format!("{path}.keys.{kid}: expected a secret (a string or bytes)"))?,
                    other => {
                        return Err(format!(
                            "{path}.keys.{kid}: expected a secret (a string, Uint8Array or ArrayBuffer), got {}",
                            if other.is_object() {
                                "an object".into()
                            } else {
                                describe(&other)
                            }
                        ));
                    }
                };
                out = out.key(kid, bytes);
            }
        }
        other => {
            return Err(format!(
                "{path}.keys: expected an object {{ [keyId]: secret }}, got {}",
                other.as_ref().map_or_else(|| "undefined".into(), describe)
            ));
        }
    }
    if let Some(name) = k.string("agent")? {
        if name.is_empty() || name.chars().count() > 200 {
            return Err(format!(
                "{path}.agent: expected the agent's name (a non-empty string of at most 200 characters)"
            ));
        }
        out = out.agent(name);
    }
    out.check().map_err(|p| format!("{path}: {p}"))?;
    Ok(out)
}

// ---- the options of the npm package's savers (read here, above the savers: a mistake is a ConfigError) ----

impl crate::saver::KvOptions {
    /// Reads the npm package's `kvSaver(namespace, { prefix?, expirationTtl? })` options (`null`: defaults),
    /// checked against KV's rules.
    ///
    /// # Errors
    /// [`AgentError::Config`](crate::AgentError) naming an unknown or wrong option; KV's rules as
    /// [`KvOptions::validate`](crate::KvOptions::validate) says them.
    pub fn from_value(value: Value) -> Result<Self, crate::AgentError> {
        let read = || -> Result<Self, String> {
            let mut o = Options::optional(
                Some(value).filter(|v| !v.is_null()),
                "kvSaver options",
                &["prefix", "expirationTtl"],
                &[("ttl", "expirationTtl"), ("expiration", "expirationTtl")],
            )?;
            Ok(crate::saver::KvOptions {
                prefix: o.string("prefix")?.unwrap_or_default(),
                expiration_ttl: o.integer("expirationTtl", 0)?,
            })
        };
        let options = read().map_err(crate::AgentError::Config)?;
        options.validate().map_err(|source| crate::AgentError::Saver {
            source,
            checkpoint: None,
        })?;
        Ok(options)
    }
}

#[cfg(all(target_arch = "wasm32", feature = "indexeddb"))]
impl crate::saver::IndexedDbOptions {
    /// Reads the npm package's `indexedDbSaver({ dbName?, storeName?, durability?: "strict" | "relaxed" |
    /// "default" })` options (`null`: defaults).
    ///
    /// # Errors
    /// [`AgentError::Config`](crate::AgentError) naming an unknown or wrong option.
    pub fn from_value(value: serde_json::Value) -> Result<Self, crate::AgentError> {
        let read = || -> Result<Self, String> {
            let what = "indexedDbSaver options";
            let mut o = Options::optional(
                Some(value).filter(|v| !v.is_null()),
                what,
                &["dbName", "storeName", "durability"],
                &[("name", "dbName"), ("store", "storeName")],
            )?;
            let d = crate::saver::IndexedDbOptions::default();
            let durability = match o.string("durability")?.as_deref() {
                None | Some("strict") => crate::saver::Durability::Strict,
                Some("relaxed") => crate::saver::Durability::Relaxed,
                Some("default") => crate::saver::Durability::Default,
                Some(other) => {
                    return Err(format!(
                        r#"{what}.durability: expected "strict", "relaxed" or "default", got {other:?}"#
                    ));
                }
            };
            let out = crate::saver::IndexedDbOptions {
                db_name: o.string("dbName")?.unwrap_or(d.db_name),
                store_name: o.string("storeName")?.unwrap_or(d.store_name),
                durability,
            };
            if out.db_name.is_empty() || out.store_name.is_empty() {
                return Err(format!("{what}: dbName and storeName must be non-empty"));
            }
            Ok(out)
        };
        read().map_err(crate::AgentError::Config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problem(v: Value) -> String {
        match AgentSpec::from_value(v) {
            Err(AgentError::Config(p)) => p,
            other => format!("not a config error: {other:?}"),
        }
    }

    #[test]
    fn unknown_options_are_refused_with_the_nearest_known_one() {
        assert!(
            problem(json!({"system": "x"}))
                .starts_with(r#"config.system: unknown option; did you mean "instructions"?"#)
        );
        assert!(problem(json!({"maxSteps": 3})).contains(r#"did you mean "maxIterations"?"#));
        assert!(problem(json!({"tool": []})).contains(r#"config.tool: unknown option; did you mean "tools"?"#));
        assert!(
            problem(json!({"limits": {"maxBytes": 1}}))
                .contains(r#"config.limits.maxBytes: unknown option; did you mean "maxCheckpointBytes"?"#)
        );
        assert!(problem(json!({"maxiterations": 3})).contains(r#"did you mean "maxIterations"?"#));
        assert!(problem(json!({"instrutcions": "x"})).contains(r#"did you mean "instructions"?"#));
        assert!(problem(json!({"zzz": 1})).starts_with("config.zzz: unknown option (known: instructions,"));
        let tool = json!({"tools": [{"name": "a", "parameters": {"type": "object"}}]});
        assert!(problem(tool).contains(r#"config.tools[0].parameters: unknown option; did you mean "schema"?"#));
    }

    #[test]
    fn every_value_is_checked_where_it_is() {
        assert_eq!(
            problem(json!({"maxIterations": 0})),
            "config.maxIterations: expected a positive integer, got number 0"
        );
        assert!(problem(json!({"maxIterations": "3"})).contains("got string \"3\""));
        assert!(problem(json!({"tools": {}})).starts_with("config.tools: expected an array"));
        assert!(problem(json!({"tools": [{"name": "has space"}]})).starts_with("config.tools[0].name: expected 1-64"));
        assert!(
            problem(json!({"tools": [{"name": "a", "needsApproval": "yes"}]}))
                .contains("needsApproval: expected a boolean")
        );
        assert!(
            problem(json!({"tools": [{"name": "a", "onExpire": "later"}]}))
                .contains("onExpire: expected \"deny\" or \"error\"")
        );
        assert!(problem(json!({"limits": {"maxDepth": 500}})).contains("maxDepth: 500 is over 120"));
        assert!(problem(json!({"compaction": {}})).contains("give maxBytes, maxMessages or both"));
        assert!(problem(json!({"compaction": {"summarize": true}})).contains("give maxBytes, maxMessages or both"));
        assert!(
            problem(json!({"compaction": {"summarize": "yes"}}))
                .contains("config.compaction.summarize: expected true or")
        );
        assert!(
            problem(json!({"compaction": {"summarize": {"maxMessages": 10, "prompt": "x"}}}))
                .contains(r#"config.compaction.summarize.prompt: unknown option; did you mean "instructions"?"#)
        );
        assert!(problem(json!({"sealed": true})).contains("sealing needs config.checkpointKeys"));
        assert!(problem(json!({"maxOutputRetries": 1})).contains("only with config.output"));
        let host = crate::options::HOST_FUNCTION;
        assert!(
            problem(json!({"telemetry": {"tracer": host, "agentname": "x"}})).contains("did you mean \"agentName\"")
        );
        assert!(
            problem(json!({"telemetry": {"tracer": host, "recordContent": "yes"}}))
                .contains("recordContent: expected a boolean")
        );
        assert!(problem(json!({"guardrails": {"inputs": []}})).contains("did you mean \"input\""));
        assert!(
            problem(json!({"guardrails": {"output": [host, 42]}}))
                .contains("config.guardrails.output[1]: expected a function")
        );
        assert!(
            AgentSpec::from_value(
                json!({"telemetry": {"tracer": host, "agentName": "a"}, "guardrails": {"input": [host]}})
            )
            .is_ok()
        );
        assert!(
            problem(json!({"checkpointKeys": {"current": "k", "keys": {"k": "short"}}}))
                .contains("config.checkpointKeys")
        );
    }

    #[test]
    fn a_valid_spec_reads_as_written() -> Result<(), AgentError> {
        let spec = AgentSpec::from_value(json!({
            "instructions": "Be brief.",
            "maxIterations": 7.0,
            "tools": [{"name": "send", "description": "Sends.", "needsApproval": {"expiresInMs": 60000}, "onExpire": "deny",
                       "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}}}],
            "state": null,
            "limits": {"maxDepth": 16},
            "compaction": {"maxMessages": 40},
            "checkpointKeys": {"current": "k1", "keys": {"k1": "a secret of sixteen+ bytes", "k0": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}},
            "sealed": true,
        }))?;
        assert_eq!(spec.max_iterations, 7);
        assert_eq!(
            spec.tools.first().map(|t| t.needs_approval),
            Some(NeedsApproval::Fixed(Approval::needed_within(60_000)))
        );
        assert_eq!(spec.state, Some(Value::Null));
        assert_eq!(spec.limits.max_depth, 16);
        assert!(spec.checkpoint_keys.as_ref().is_some_and(CheckpointKeys::is_sealed));
        Ok(())
    }
}
