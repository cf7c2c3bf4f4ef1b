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

use serde_json::{Map, Value};

use crate::error::AgentError;
use crate::interrupt::{Approval, OnExpire};
use crate::keys::CheckpointKeys;
use crate::limits::{Limits, MAX_DEPTH_LIMIT};
use crate::model::ToolDefinition;
use crate::run::{Compaction, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_OUTPUT_RETRIES};

/// How a host writes "a function was given here" in a spec's JSON (the npm package: a JS function, which
/// JSON cannot hold). Only the host that wrote it knows the function; the spec only sees that there is one.
pub const HOST_FUNCTION: &str = "\u{0}function";

/// The largest whole number an option takes (below 2^53, so it reads the same in JS).
const MAX_OPTION: u64 = 9_000_000_000_000_000;

/// A JSON value as an error message describes what was given: `string "x"`, `number 0`, `an object`.
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s == HOST_FUNCTION => "a function".into(),
        Value::String(s) => {
            let shown: String = s.chars().take(40).collect();
            let more = if shown.len() < s.len() { "…" } else { "" };
            format!("string {shown:?}{more}")
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// The known key nearest to `key`: a hint given for it, the same key in another case, or a spelling at most
/// two edits (or a third of its length) away.
pub(crate) fn nearest<'k>(key: &str, known: &[&'k str], hints: &[(&str, &'k str)]) -> Option<&'k str> {
    if let Some((_, to)) = hints.iter().find(|(from, _)| from.eq_ignore_ascii_case(key)) {
        return Some(to);
    }
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(key)) {
        return Some(k);
    }
    let bound = (key.chars().count() / 3).max(2);
    known
        .iter()
        .map(|k| (edits(&key.to_ascii_lowercase(), &k.to_ascii_lowercase()), *k))
        .filter(|(d, _)| *d <= bound)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edit distance with adjacent transpositions (optimal string alignment).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=a.len() {
        if let Some(c) = d.get_mut(at(i, 0)) {
            *c = i;
        }
    }
    for j in 0..=b.len() {
        if let Some(c) = d.get_mut(at(0, j)) {
            *c = j;
        }
    }
    let get = |d: &[usize], i, j| d.get(at(i, j)).copied().unwrap_or(usize::MAX / 2);
    for (i, ca) in a.iter().enumerate() {
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut best = (get(&d, i, j + 1) + 1)
                .min(get(&d, i + 1, j) + 1)
                .min(get(&d, i, j) + cost);
            if i > 0 && j > 0 && a.get(i - 1) == Some(cb) && b.get(j - 1) == Some(ca) {
                best = best.min(get(&d, i - 1, j - 1) + 1);
            }
            if let Some(c) = d.get_mut(at(i + 1, j + 1)) {
                *c = best;
            }
        }
    }
    get(&d, a.len(), b.len())
}

/// An options object being read: each key is taken once, and what is left at the end is refused.
///
/// Absent and `null` are the same (not given), as JS callers write them.
pub(crate) struct Options {
    path: String,
    map: Map<String, Value>,
}

/// The message for a key an options object does not have.
pub(crate) fn unknown_option(path: &str, key: &str, known: &[&str], hints: &[(&str, &str)]) -> String {
    let hint = nearest(key, known, hints).map_or_else(String::new, |k| format!("; did you mean {k:?}?"));
    format!("{path}.{key}: unknown option{hint} (known: {})", known.join(", "))
}

impl Options {
    /// Reads `value` as the options object at `path`, refusing keys outside `known` (with the nearest as a
    /// hint; `hints` maps common mistakes, such as another library's name for an option, to ours).
    pub(crate) fn new(value: Value, path: &str, known: &[&str], hints: &[(&str, &str)]) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "{path}: expected {{ {} }}, got {}",
                known.join(", "),
                describe(&value)
            ));
        };
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(unknown_option(path, key, known, hints));
        }
        Ok(Options {
            path: path.to_owned(),
            map,
        })
    }

    /// Optional options: `None` (absent or null) is an empty object.
    pub(crate) fn optional(
        value: Option<Value>,
        path: &str,
        known: &[&str],
        hints: &[(&str, &str)],
    ) -> Result<Self, String> {
        Self::new(value.unwrap_or_else(|| Value::Object(Map::new())), path, known, hints)
    }

    /// The path of `key`.
    pub(crate) fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    /// The value of `key`, when given (not absent, not null).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// True when `key` is given.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    pub(crate) fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) if s != HOST_FUNCTION => Ok(Some(s)),
            Some(v) => Err(format!("{}: expected a string, got {}", self.at(key), describe(&v))),
        }
    }

    pub(crate) fn boolean(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(v) => Err(format!("{}: expected a boolean, got {}", self.at(key), describe(&v))),
        }
    }

    /// A whole number of at least `min` (0 or 1); `1.0` counts as `1`, as JS reads it.
    pub(crate) fn integer(&mut self, key: &str, min: u64) -> Result<Option<u64>, String> {
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        whole(&v, min).map(Some).ok_or_else(|| {
            let kind = if min == 0 {
                "a non-negative integer"
            } else {
                "a positive integer"
            };
            format!("{}: expected {kind}, got {}", self.at(key), describe(&v))
        })
    }

    /// [`Options::integer`] as a `u32` (larger numbers are refused).
    pub(crate) fn small(&mut self, key: &str, min: u64) -> Result<Option<u32>, String> {
        let at = self.at(key);
        self.integer(key, min)?
            .map(|n| u32::try_from(n).map_err(|_| format!("{at}: {n} is too large (at most {})", u32::MAX)))
            .transpose()
    }
}

/// `v` as a whole number of at least `min` and at most [`MAX_OPTION`].
fn whole(v: &Value, min: u64) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return (min..=MAX_OPTION).contains(&n).then_some(n);
    }
    let f = v.as_f64()?;
    #[allow(clippy::cast_precision_loss)] // both bounds are exact doubles
    let ok = f.fract() == 0.0 && f >= min as f64 && f <= MAX_OPTION as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // checked just above
    ok.then_some(f as u64)
}

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
    /// What a resume does once the tool's interrupt expired.
    pub on_expire: OnExpire,
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
        let input_schema = match o.take("inputSchema") {
            None => serde_json::json!({"type": "object", "properties": {}}),
            Some(s) => {
                crate::schema::check_definition(&s, &o.at("inputSchema"))?;
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
        let needs_approval = needs_approval(o.take("needsApproval"), &o.at("needsApproval"))?;
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
        Ok(ToolSpec {
            definition: ToolDefinition::new(name, description, input_schema),
            needs_approval,
            on_expire,
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
        let tool = crate::tool::tool(d.name, d.description, d.input_schema, f).on_expire(self.on_expire);
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

/// `needsApproval`: a boolean, `{ expiresInMs }`, or a host function (decided per call).
fn needs_approval(value: Option<Value>, path: &str) -> Result<NeedsApproval, String> {
    match value {
        None | Some(Value::Bool(false)) => Ok(NeedsApproval::Fixed(Approval::NotNeeded)),
        Some(Value::Bool(true)) => Ok(NeedsApproval::Fixed(Approval::needed())),
        Some(Value::String(s)) if s == HOST_FUNCTION => Ok(NeedsApproval::PerCall),
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
/// agent? }, sealed? }`. A secret is a string (its UTF-8 bytes) or an array of bytes.
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
];
const LIMIT_KEYS: &[&str] = &["maxCheckpointBytes", "maxDepth"];
const LIMIT_HINTS: &[(&str, &str)] = &[("maxBytes", "maxCheckpointBytes"), ("maxSize", "maxCheckpointBytes")];
const COMPACTION_KEYS: &[&str] = &["maxBytes", "maxMessages", "keepFirst", "summarize"];
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
        let state = c.map.remove("state");
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
        let compaction = c.take("compaction").map(compaction).transpose()?;
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
        })
    }
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

fn compaction(value: Value) -> Result<Compaction, String> {
    let mut k = Options::new(value, "config.compaction", COMPACTION_KEYS, &[("max", "maxBytes")])?;
    if k.has("summarize") {
        return Err("config.compaction.summarize: not supported yet; compaction drops the oldest whole steps".into());
    }
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    let mut rule = Compaction::default().keep_first(k.integer("keepFirst", 1)?.map_or(1, size));
    if let Some(b) = k.integer("maxBytes", 1)? {
        rule = rule.max_bytes(size(b));
    }
    if let Some(m) = k.integer("maxMessages", 1)? {
        rule = rule.max_messages(size(m));
    }
    if rule.max_bytes.is_none() && rule.max_messages.is_none() {
        return Err("config.compaction: give maxBytes, maxMessages or both".into());
    }
    Ok(rule)
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
        assert!(problem(json!({"compaction": {"summarize": true}})).contains("summarize: not supported yet"));
        assert!(problem(json!({"sealed": true})).contains("sealing needs config.checkpointKeys"));
        assert!(problem(json!({"maxOutputRetries": 1})).contains("only with config.output"));
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

    #[test]
    fn edit_distance_counts_transpositions_once() {
        assert_eq!(edits("agnet", "agent"), 1);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("kitten", "sitting"), 3);
    }
}
