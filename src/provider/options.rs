//! The options objects of the npm package's `anthropic({...})` and `openai({...})`, read as every options
//! object is (unknown keys refused with a hint, each value checked where it is), into the wire formats'
//! settings: one reader for every host.

use std::time::Duration;

use serde_json::Value;

use super::anthropic::Anthropic;
use super::gemini::{Gemini, Thinking};
use super::openai::OpenAi;
use super::responses::OpenAiResponses;
use super::{HttpClient, HttpModel, Retry, ToolChoice, WireFormat};
use crate::error::AgentError;
use crate::options::Options;

const ANTHROPIC_KEYS: &[&str] = &[
    "apiKey",
    "model",
    "baseURL",
    "maxTokens",
    "thinking",
    "headers",
    "dangerouslyAllowBrowser",
    "maxRetries",
    "timeoutMs",
    "signal",
    "toolChoice",
    "extraBody",
];
const OPENAI_KEYS: &[&str] = &[
    "apiKey",
    "model",
    "baseURL",
    "maxTokens",
    "headers",
    "maxRetries",
    "timeoutMs",
    "signal",
    "toolChoice",
    "extraBody",
];
const RESPONSES_KEYS: &[&str] = &[
    "apiKey",
    "model",
    "baseURL",
    "maxTokens",
    "headers",
    "maxRetries",
    "timeoutMs",
    "signal",
    "toolChoice",
    "extraBody",
    "store",
    "reasoning",
];
const GEMINI_KEYS: &[&str] = &[
    "apiKey",
    "model",
    "baseURL",
    "maxTokens",
    "thinking",
    "headers",
    "maxRetries",
    "timeoutMs",
    "signal",
    "toolChoice",
    "extraBody",
];
/// Other SDKs' names for the same options.
const HINTS: &[(&str, &str)] = &[
    ("baseUrl", "baseURL"),
    ("base_url", "baseURL"),
    ("endpoint", "baseURL"),
    ("api_key", "apiKey"),
    ("key", "apiKey"),
    ("max_tokens", "maxTokens"),
    ("maxOutputTokens", "maxTokens"),
    ("timeout", "timeoutMs"),
    ("retries", "maxRetries"),
    ("abortSignal", "signal"),
    ("tool_choice", "toolChoice"),
    ("extra_body", "extraBody"),
    ("body", "extraBody"),
    ("providerOptions", "extraBody"),
];

/// The body fields Anthropic's format writes itself, and the option (or config) that sets each.
const ANTHROPIC_WRITES: &[(&str, &str)] = &[
    ("model", "model"),
    ("max_tokens", "maxTokens"),
    ("system", "the agent's instructions"),
    ("messages", "the run"),
    ("tools", "the agent's tools"),
    ("tool_choice", "toolChoice"),
    ("thinking", "thinking"),
    ("stream", "the run (it streams when watched)"),
];
/// The body fields the Responses format writes itself.
const RESPONSES_WRITES: &[(&str, &str)] = &[
    ("model", "model"),
    ("max_output_tokens", "maxTokens"),
    ("instructions", "the agent's instructions"),
    ("input", "the run"),
    ("tools", "the agent's tools"),
    ("tool_choice", "toolChoice"),
    ("store", "store"),
    ("include", "store (false asks for the encrypted reasoning)"),
    ("reasoning", "reasoning"),
    ("stream", "the run (it streams when watched)"),
];
/// The body fields Gemini's format writes itself (`generationConfig` takes other settings beside these).
const GEMINI_WRITES: &[(&str, &str)] = &[
    ("contents", "the run"),
    ("systemInstruction", "the agent's instructions"),
    ("tools", "the agent's tools"),
    ("toolConfig", "toolChoice"),
];
/// The body fields Chat Completions' format writes itself.
const OPENAI_WRITES: &[(&str, &str)] = &[
    ("model", "model"),
    ("max_tokens", "maxTokens"),
    ("messages", "the run"),
    ("tools", "the agent's tools"),
    ("tool_choice", "toolChoice"),
    ("stream", "the run (it streams when watched)"),
    ("stream_options", "the run (it streams when watched)"),
];

/// A wire format's settings read from options, with its retry policy and API key: a model once given a client.
#[derive(Clone)]
#[non_exhaustive]
pub struct Configured<W> {
    /// The wire format's settings.
    pub wire: W,
    /// The retry policy.
    pub retry: Retry,
    api_key: String,
}

impl<W: WireFormat> Configured<W> {
    /// The model over `client` (the key scrubbed from its errors).
    pub fn model<C: HttpClient>(self, client: C) -> HttpModel<W, C> {
        HttpModel::new(self.wire, client, self.api_key).retry(self.retry)
    }
}

/// What both formats read the same way: `{ model, baseURL?, maxTokens?, headers?, maxRetries?, timeoutMs? }`.
struct Common {
    api_key: Option<String>,
    model: String,
    base_url: Option<String>,
    max_tokens: Option<u32>,
    headers: Vec<(String, String)>,
    retry: Retry,
    timeout: Option<Duration>,
    tool_choice: Option<ToolChoice>,
    extra_body: serde_json::Map<String, Value>,
}

/// `toolChoice`: `'auto' | 'required' | 'none' | { name }`.
pub(super) fn tool_choice(o: &mut Options) -> Result<Option<ToolChoice>, String> {
    let at = o.at("toolChoice");
    let Some(v) = o.take("toolChoice") else {
        return Ok(None);
    };
    let choice = match &v {
        Value::String(s) => match s.as_str() {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            "any" => return Err(format!("{at}: 'any' is written 'required' here")),
            _ => {
                return Err(format!(
                    "{at}: expected 'auto', 'required', 'none' or {{ name }}, got {}",
                    crate::options::describe(&v)
                ));
            }
        },
        Value::Object(_) => {
            let mut t = Options::new(
                v,
                &at,
                &["name"],
                &[("toolName", "name"), ("tool", "name"), ("function", "name")],
            )?;
            let name = t.string("name")?.filter(|n| !n.is_empty());
            ToolChoice::Tool(name.ok_or_else(|| format!("{at}.name: the tool's name is required (a string)"))?)
        }
        other => {
            return Err(format!(
                "{at}: expected 'auto', 'required', 'none' or {{ name }}, got {}",
                crate::options::describe(other)
            ));
        }
    };
    Ok(Some(choice))
}

/// `extraBody`: an object of body fields, none of them one the format writes itself (`writes`, with the option
/// that sets it).
pub(super) fn extra_body(o: &mut Options, writes: &[(&str, &str)]) -> Result<serde_json::Map<String, Value>, String> {
    let at = o.at("extraBody");
    match o.take("extraBody") {
        None => Ok(serde_json::Map::new()),
        Some(Value::Object(fields)) => {
            if let Some((k, by)) = writes.iter().find(|(k, _)| fields.contains_key(*k)) {
                return Err(format!("{at}.{k}: written by the provider itself; set it with {by}"));
            }
            Ok(fields)
        }
        Some(other) => Err(format!(
            "{at}: expected an object of request body fields, got {}",
            crate::options::describe(&other)
        )),
    }
}

fn common(o: &mut Options, what: &str, key_required: bool, writes: &[(&str, &str)]) -> Result<Common, String> {
    let api_key = o.string("apiKey")?;
    if key_required && api_key.as_deref().is_none_or(str::is_empty) {
        return Err(format!("{what}: apiKey is required (a string)"));
    }
    let model = o
        .string("model")?
        .filter(|m| !m.is_empty())
        .ok_or_else(|| format!("{what}: model is required (a string)"))?;
    let headers = match o.take("headers") {
        None => Vec::new(),
        Some(Value::Object(h)) => h
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                other => Err(format!(
                    "{what}.headers.{k}: header values must be strings, got {}",
                    crate::options::describe(&other)
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "{what}.headers: expected an object of strings, got {}",
                crate::options::describe(&other)
            ));
        }
    };
    let mut retry = Retry::default();
    if let Some(n) = o.small("maxRetries", 0)? {
        retry = retry.max_retries(n);
    }
    // The host's AbortSignal; the options only say there is one.
    o.take("signal");
    Ok(Common {
        api_key,
        model,
        base_url: o.string("baseURL")?,
        max_tokens: o.small("maxTokens", 1)?,
        headers,
        retry,
        timeout: o.integer("timeoutMs", 0)?.map(Duration::from_millis),
        tool_choice: tool_choice(o)?,
        extra_body: extra_body(o, writes)?,
    })
}

impl Anthropic {
    /// Reads the options of the npm package's `anthropic({ apiKey, model, baseURL?, maxTokens?, thinking?: {
    /// budgetTokens }, headers?, dangerouslyAllowBrowser?, maxRetries?, timeoutMs? })`: the settings and the
    /// retry policy, checked ([`Anthropic::check`]).
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the option that is unknown, missing or wrong.
    pub fn from_options(options: Value) -> Result<Configured<Self>, AgentError> {
        let what = "anthropic(options)";
        let read = || -> Result<Configured<Self>, String> {
            let mut o = Options::new(options, what, ANTHROPIC_KEYS, HINTS)?;
            let c = common(&mut o, what, true, ANTHROPIC_WRITES)?;
            let api_key = c.api_key.unwrap_or_default();
            let mut wire = Anthropic::new(&api_key, c.model);
            if let Some(url) = c.base_url {
                wire.base_url = url;
            }
            if let Some(n) = c.max_tokens {
                wire.max_tokens = n;
            }
            wire.headers = c.headers;
            if let Some(t) = c.timeout {
                wire.timeout = t;
            }
            wire.browser_access = o.boolean("dangerouslyAllowBrowser")?.unwrap_or(false);
            wire.tool_choice = c.tool_choice;
            wire.extra_body = c.extra_body;
            if let Some(t) = o.take("thinking") {
                let mut t = Options::new(
                    t,
                    &format!("{what}.thinking"),
                    &["budgetTokens"],
                    &[("budget_tokens", "budgetTokens"), ("budget", "budgetTokens")],
                )?;
                wire.thinking_budget = Some(t.small("budgetTokens", 1)?.ok_or_else(|| {
                    format!("{what}.thinking: expected {{ budgetTokens }} (an integer, at least 1024)")
                })?);
            }
            wire.check().map_err(|p| format!("{what}.{p}"))?;
            Ok(Configured {
                wire,
                retry: c.retry,
                api_key,
            })
        };
        read().map_err(AgentError::Config)
    }
}

impl OpenAi {
    /// Reads the options of the npm package's `openai({ apiKey?, model, baseURL?, maxTokens?, headers?,
    /// maxRetries?, timeoutMs? })`: the settings and the retry policy.
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the option that is unknown, missing or wrong.
    pub fn from_options(options: Value) -> Result<Configured<Self>, AgentError> {
        let what = "openai(options)";
        let read = || -> Result<Configured<Self>, String> {
            let mut o = Options::new(options, what, OPENAI_KEYS, HINTS)?;
            let c = common(&mut o, what, false, OPENAI_WRITES)?;
            let api_key = c.api_key.unwrap_or_default();
            let mut wire = OpenAi::new(&api_key, c.model);
            if let Some(url) = c.base_url {
                wire.base_url = url;
            }
            wire.max_tokens = c.max_tokens;
            wire.headers = c.headers;
            wire.tool_choice = c.tool_choice;
            wire.extra_body = c.extra_body;
            if let Some(t) = c.timeout {
                wire.timeout = t;
            }
            Ok(Configured {
                wire,
                retry: c.retry,
                api_key,
            })
        };
        read().map_err(AgentError::Config)
    }
}

impl OpenAiResponses {
    /// Reads the options of the npm package's `openaiResponses({ apiKey?, model, baseURL?, store?, reasoning?: {
    /// effort?, summary? }, maxTokens?, toolChoice?, extraBody?, headers?, maxRetries?, timeoutMs? })`: the
    /// settings and the retry policy.
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the option that is unknown, missing or wrong.
    pub fn from_options(options: Value) -> Result<Configured<Self>, AgentError> {
        let what = "openaiResponses(options)";
        let read = || -> Result<Configured<Self>, String> {
            let mut o = Options::new(options, what, RESPONSES_KEYS, HINTS)?;
            let c = common(&mut o, what, false, RESPONSES_WRITES)?;
            let api_key = c.api_key.unwrap_or_default();
            let mut wire = OpenAiResponses::new(&api_key, c.model);
            if let Some(url) = c.base_url {
                wire.base_url = url;
            }
            wire.max_tokens = c.max_tokens;
            wire.headers = c.headers;
            if let Some(t) = c.timeout {
                wire.timeout = t;
            }
            wire.tool_choice = c.tool_choice;
            wire.extra_body = c.extra_body;
            wire.store = o.boolean("store")?.unwrap_or(false);
            if let Some(r) = o.take("reasoning") {
                let mut r = Options::new(
                    r,
                    &format!("{what}.reasoning"),
                    &["effort", "summary"],
                    &[("reasoning_effort", "effort")],
                )?;
                wire.reasoning_effort =
                    one_of(&mut r, "effort", &["none", "minimal", "low", "medium", "high", "xhigh"])?;
                wire.reasoning_summary = one_of(&mut r, "summary", &["auto", "concise", "detailed"])?;
            }
            Ok(Configured {
                wire,
                retry: c.retry,
                api_key,
            })
        };
        read().map_err(AgentError::Config)
    }
}

impl Gemini {
    /// Reads the options of the npm package's `gemini({ apiKey, model, baseURL?, maxTokens?, thinking?: {
    /// budgetTokens } | { level }, toolChoice?, extraBody?, headers?, maxRetries?, timeoutMs? })`: the settings and
    /// the retry policy.
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the option that is unknown, missing or wrong.
    pub fn from_options(options: Value) -> Result<Configured<Self>, AgentError> {
        let what = "gemini(options)";
        let read = || -> Result<Configured<Self>, String> {
            let mut o = Options::new(options, what, GEMINI_KEYS, HINTS)?;
            let c = common(&mut o, what, true, GEMINI_WRITES)?;
            if let Some(Value::Object(g)) = c.extra_body.get("generationConfig") {
                for (k, by) in [("maxOutputTokens", "maxTokens"), ("thinkingConfig", "thinking")] {
                    if g.contains_key(k) {
                        return Err(format!(
                            "{what}.extraBody.generationConfig.{k}: written by the provider itself; set it with {by}"
                        ));
                    }
                }
            }
            let api_key = c.api_key.unwrap_or_default();
            let mut wire = Gemini::new(&api_key, c.model);
            if let Some(url) = c.base_url {
                wire.base_url = url;
            }
            wire.max_tokens = c.max_tokens;
            wire.headers = c.headers;
            if let Some(t) = c.timeout {
                wire.timeout = t;
            }
            wire.tool_choice = c.tool_choice;
            wire.extra_body = c.extra_body;
            if let Some(t) = o.take("thinking") {
                let at = format!("{what}.thinking");
                let mut t = Options::new(
                    t,
                    &at,
                    &["budgetTokens", "level"],
                    &[
                        ("thinkingBudget", "budgetTokens"),
                        ("thinkingLevel", "level"),
                        ("budget", "budgetTokens"),
                    ],
                )?;
                let budget = t.integer("budgetTokens", 0)?;
                let level = one_of(&mut t, "level", &["minimal", "low", "medium", "high", "xhigh"])?;
                wire.thinking = Some(match (budget, level) {
                    (Some(b), None) => {
                        Thinking::Budget(u32::try_from(b).map_err(|_| format!("{at}.budgetTokens: too large"))?)
                    }
                    (None, Some(l)) => Thinking::Level(l),
                    _ => return Err(format!("{at}: expected {{ budgetTokens }} or {{ level }}, one of them")),
                });
            }
            Ok(Configured {
                wire,
                retry: c.retry,
                api_key,
            })
        };
        read().map_err(AgentError::Config)
    }
}

/// A string option that must be one of `allowed`.
fn one_of(o: &mut Options, key: &str, allowed: &[&str]) -> Result<Option<String>, String> {
    let at = o.at(key);
    match o.string(key)? {
        Some(v) if !allowed.contains(&v.as_str()) => Err(format!(
            "{at}: expected one of {}, got {v:?}",
            allowed.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(", ")
        )),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problem<W>(r: Result<Configured<W>, AgentError>) -> String {
        match r {
            Err(AgentError::Config(p)) => p,
            _ => "accepted".into(),
        }
    }

    #[test]
    fn provider_options_are_read_with_every_rule() {
        assert!(
            problem(OpenAi::from_options(json!({"model": "m", "baseUrl": "http://x"})))
                .contains(r#"openai(options).baseUrl: unknown option; did you mean "baseURL"?"#)
        );
        assert!(problem(Anthropic::from_options(json!({"model": "m"}))).contains("apiKey is required"));
        assert!(
            problem(Anthropic::from_options(
                json!({"apiKey": "k", "model": "m", "thinking": {"budgetTokens": 512}})
            ))
            .contains("thinking.budgetTokens: at least 1024")
        );
        assert!(
            problem(Anthropic::from_options(
                json!({"apiKey": "k", "model": "m", "thinking": {"budgetTokens": 5000}})
            ))
            .contains("must be below maxTokens (4096)")
        );
        assert!(
            problem(OpenAi::from_options(json!({"model": "m", "headers": {"x": 1}})))
                .contains("header values must be strings")
        );
        assert!(
            problem(OpenAi::from_options(json!({"model": "m", "maxTokens": 0})))
                .contains("maxTokens: expected a positive integer")
        );
        let c = OpenAi::from_options(json!({"model": "m", "toolChoice": {"name": "lookup"}, "extraBody": {"seed": 1}}));
        assert!(
            c.is_ok_and(|c| c.wire.tool_choice == Some(ToolChoice::Tool("lookup".into()))
                && c.wire.extra_body.get("seed") == Some(&json!(1)))
        );
        assert!(
            problem(OpenAi::from_options(
                json!({"model": "m", "extraBody": {"stream": true}})
            ))
            .contains("extraBody.stream: written by the provider itself")
        );
        assert!(
            problem(OpenAi::from_options(json!({"model": "m", "toolChoice": "always"})))
                .contains("toolChoice: expected 'auto', 'required', 'none' or { name }, got string \"always\"")
        );
        let c =
            OpenAi::from_options(json!({"model": "m", "maxRetries": 0, "timeoutMs": 300, "signal": "\u{0}function"}));
        assert!(c.is_ok_and(|c| (c.wire.timeout, c.retry.max_retries) == (Duration::from_millis(300), 0)));
    }
}
