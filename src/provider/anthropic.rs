//! The Anthropic Messages API (`POST /v1/messages`): mapping only, no I/O.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{HttpRequest, WireFormat, join_url};
use crate::error::ModelError;
use crate::message::{Content, ContentBlock, Role, ToolUse, Usage};
use crate::model::{ModelRequest, ModelResponse, StopReason};

/// The API version header this mapping speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Settings of the Anthropic wire format.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Anthropic {
    /// Model name, e.g. `claude-sonnet-4-5`.
    pub model: String,
    api_key: String,
    /// API base, default `https://api.anthropic.com`.
    pub base_url: String,
    /// `max_tokens` of each response (default 4096).
    pub max_tokens: u32,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Sends `anthropic-dangerous-direct-browser-access: true` (calling the API from a browser page).
    pub browser_access: bool,
    /// Per-request timeout (default 120 s).
    pub timeout: Duration,
}

impl Anthropic {
    /// The format for `model` with `api_key`.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        Anthropic {
            model: model.into(),
            api_key: api_key.into(),
            base_url: "https://api.anthropic.com".into(),
            max_tokens: 4096,
            headers: Vec::new(),
            browser_access: false,
            timeout: Duration::from_secs(120),
        }
    }
}

fn block(b: &ContentBlock) -> Value {
    match b {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Image { url, .. } => json!({"type": "image", "source": {"type": "url", "url": url}}),
        ContentBlock::ImageBase64 { data, mime_type } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}})
        }
        // Anthropic wants an object; arguments that were not one are kept, wrapped.
        ContentBlock::ToolUse(u) => {
            let input = if u.input.is_object() {
                u.input.clone()
            } else {
                json!({"invalid_arguments": u.input})
            };
            json!({"type": "tool_use", "id": u.id, "name": u.name, "input": input})
        }
        ContentBlock::ToolResult(r) => {
            let mut v = json!({"type": "tool_result", "tool_use_id": r.tool_use_id, "content": r.content});
            if let (true, Some(o)) = (r.is_error, v.as_object_mut()) {
                o.insert("is_error".into(), Value::Bool(true));
            }
            v
        }
        // Sent back unchanged: the API checks the signature, and requires the thinking that preceded a
        // tool call in the turn that answers it.
        ContentBlock::Thinking { thinking, signature } => {
            json!({"type": "thinking", "thinking": thinking, "signature": signature})
        }
        ContentBlock::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
    }
}

impl WireFormat for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn request(&self, request: &ModelRequest<'_>) -> HttpRequest {
        // System messages kept in the history join the system prompt (the API has no system role).
        let mut system: Vec<String> = request.system.map(str::to_owned).into_iter().collect();
        let mut messages = Vec::new();
        for m in request.messages {
            let content = match &m.content {
                Content::Text(t) => Value::String(t.clone()),
                Content::Blocks(b) => Value::Array(b.iter().map(block).collect()),
            };
            match m.role {
                Role::System => system.push(m.text()),
                Role::User => messages.push(json!({"role": "user", "content": content})),
                Role::Assistant => messages.push(json!({"role": "assistant", "content": content})),
            }
        }
        let mut body = Map::new();
        body.insert("model".into(), self.model.clone().into());
        body.insert("max_tokens".into(), self.max_tokens.into());
        if !system.is_empty() {
            body.insert("system".into(), system.join("\n\n").into());
        }
        body.insert("messages".into(), messages.into());
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                .collect();
            body.insert("tools".into(), tools.into());
        }
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("x-api-key".to_owned(), self.api_key.clone()),
            ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
        ];
        if self.browser_access {
            headers.push(("anthropic-dangerous-direct-browser-access".into(), "true".into()));
        }
        headers.extend(self.headers.iter().cloned());
        HttpRequest {
            url: join_url(&self.base_url, "v1/messages"),
            headers,
            body: Value::Object(body).to_string(),
            timeout: self.timeout,
        }
    }

    fn response(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        let invalid = |path: &str, problem: &str| ModelError::InvalidResponse {
            path: path.into(),
            problem: problem.into(),
        };
        let blocks = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("content", "missing"))?;
        let mut content = Vec::new();
        for (i, b) in blocks.iter().enumerate() {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => content.push(ContentBlock::Text {
                    text: b.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
                }),
                Some("tool_use") => {
                    let field = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
                    let (Some(id), Some(name)) = (field("id"), field("name")) else {
                        return Err(invalid(&format!("content[{i}]"), "tool_use without id or name"));
                    };
                    content.push(ContentBlock::ToolUse(ToolUse {
                        id,
                        name,
                        input: b.get("input").cloned().unwrap_or(json!({})),
                    }));
                }
                Some("thinking") => content.push(ContentBlock::Thinking {
                    thinking: b.get("thinking").and_then(Value::as_str).unwrap_or_default().to_owned(),
                    signature: b
                        .get("signature")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                }),
                Some("redacted_thinking") => content.push(ContentBlock::RedactedThinking {
                    data: b.get("data").and_then(Value::as_str).unwrap_or_default().to_owned(),
                }),
                // Server-side tool blocks carry nothing this loop acts on.
                _ => {}
            }
        }
        let count = |k: &str| {
            body.pointer(&format!("/usage/{k}"))
                .and_then(Value::as_u64)
                .unwrap_or_default()
        };
        let usage = body.get("usage").map(|_| Usage {
            input_tokens: count("input_tokens"),
            output_tokens: count("output_tokens"),
        });
        let stop_reason = body
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(|r| StopReason::from(r.to_owned()));
        let mut response = ModelResponse::new(content);
        response.usage = usage;
        response.stop_reason = stop_reason;
        Ok(response)
    }
}
