//! The Anthropic Messages API (`POST /v1/messages`): mapping only, no I/O.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::sse::SseEvent;
use super::{HttpRequest, StreamedBody, ToolChoice, WireFormat, join_url};
use crate::message::{Content, ContentBlock, Role, ToolUse, Usage};
use crate::model::ModelError;
use crate::model::{Delta, DeltaSink, ModelRequest, ModelResponse, StopReason};

/// The API version header this mapping speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Settings of the Anthropic wire format.
#[derive(Clone)]
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
    /// Extended thinking with this token budget (`thinking: { type: "enabled", budget_tokens }`; at least
    /// 1024 and below `max_tokens`). Its `thinking` blocks are kept and sent back as the API requires.
    pub thinking_budget: Option<u32>,
    /// Whether the model must call a tool (`tool_choice`), sent when the request has tools. With thinking, only
    /// `Auto` and `None` (the API refuses a forced call).
    pub tool_choice: Option<ToolChoice>,
    /// Other body fields sent with every request (`metadata`, `stop_sequences`, …); a field this format writes
    /// itself is not overridden.
    pub extra_body: Map<String, Value>,
}

/// Shows the settings without the API key (and without header values, which may be credentials).
impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("thinking_budget", &self.thinking_budget)
            .field("tool_choice", &self.tool_choice)
            .finish_non_exhaustive()
    }
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
            thinking_budget: None,
            tool_choice: None,
            extra_body: Map::new(),
        }
    }

    /// Checks what the API would refuse: a thinking budget under 1024 tokens or not below `max_tokens`, a
    /// forced tool call with thinking.
    ///
    /// # Errors
    /// The setting and its problem, e.g. `thinking.budgetTokens: must be below maxTokens (4096)`.
    pub fn check(&self) -> Result<(), String> {
        let forced = matches!(self.tool_choice, Some(ToolChoice::Required | ToolChoice::Tool(_)));
        if forced && self.thinking_budget.is_some() {
            return Err(
                "toolChoice: with thinking only 'auto' or 'none' (the API refuses a forced tool call with extended thinking)"
                    .to_owned(),
            );
        }
        match self.thinking_budget {
            Some(b) if b < 1024 => Err(format!("thinking.budgetTokens: at least 1024, got {b}")),
            Some(b) if b >= self.max_tokens => Err(format!(
                "thinking.budgetTokens: must be below maxTokens ({}), got {b}",
                self.max_tokens
            )),
            _ => Ok(()),
        }
    }

    /// The request with `extra` body fields (the stream flag), the body written once.
    fn http(&self, request: &ModelRequest<'_>, extra: &[(&str, Value)]) -> HttpRequest {
        // System messages kept in the history join the system prompt (the API has no system role).
        let mut system: Vec<String> = request.system.map(str::to_owned).into_iter().collect();
        let mut messages = Vec::new();
        for m in request.messages {
            let content = match &m.content {
                Content::Text(t) => Value::String(t.clone()),
                Content::Blocks(b) => Value::Array(b.iter().filter_map(block).collect()),
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
        body.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        if let Some(budget) = self.thinking_budget {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
                .collect();
            body.insert("tools".into(), tools.into());
            if let Some(choice) = &self.tool_choice {
                let choice = match choice {
                    ToolChoice::Auto => json!({"type": "auto"}),
                    ToolChoice::Required => json!({"type": "any"}),
                    ToolChoice::None => json!({"type": "none"}),
                    ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
                };
                body.insert("tool_choice".into(), choice);
            }
        }
        super::add_extra(&mut body, &self.extra_body);
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("x-api-key".to_owned(), self.api_key.clone()),
            ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
        ];
        if self.browser_access {
            headers.push(("anthropic-dangerous-direct-browser-access".into(), "true".into()));
        }
        headers.extend(self.headers.iter().cloned());
        let mut http = HttpRequest::post(
            join_url(&self.base_url, "v1/messages"),
            headers,
            Value::Object(body).to_string(),
            self.timeout,
        );
        http.max_response_bytes = request.max_response_bytes;
        http
    }
}

/// A block in the API's shape, or `None` for one another provider's (a Responses reasoning item).
fn block(b: &ContentBlock) -> Option<Value> {
    Some(match b {
        // An empty text is another provider's signed part: the API refuses empty text blocks.
        ContentBlock::Text { text, .. } if text.is_empty() => return None,
        ContentBlock::Text { text, .. } => json!({"type": "text", "text": text}),
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
        ContentBlock::Reasoning(_) => return None,
    })
}

impl WireFormat for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn check(&self) -> Result<(), String> {
        Anthropic::check(self)
    }

    fn tool_choice(&self) -> Option<&ToolChoice> {
        self.tool_choice.as_ref()
    }

    fn request(&self, request: &ModelRequest<'_>) -> HttpRequest {
        self.http(request, &[])
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
                Some("text") => content.push(ContentBlock::text(
                    b.get("text").and_then(Value::as_str).unwrap_or_default(),
                )),
                Some("tool_use") => {
                    let field = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_owned);
                    let (Some(id), Some(name)) = (field("id"), field("name")) else {
                        return Err(invalid(&format!("content[{i}]"), "tool_use without id or name"));
                    };
                    content.push(ContentBlock::ToolUse(ToolUse {
                        id,
                        name,
                        input: b.get("input").cloned().unwrap_or(json!({})),
                        signature: None,
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

    fn stream_request(&self, request: &ModelRequest<'_>) -> Option<HttpRequest> {
        Some(self.http(request, &[("stream", Value::Bool(true))]))
    }

    /// The Messages API's stream: `message_start`, then per block `content_block_start`, its
    /// `content_block_delta`s (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`) and
    /// `content_block_stop`, then `message_delta` (stop reason, output tokens) and `message_stop`; `ping`
    /// any time, `error` when the API fails mid-stream.
    fn stream_event(
        &self,
        stream: &mut StreamedBody,
        event: &SseEvent,
        sink: &mut dyn DeltaSink,
    ) -> Result<(), ModelError> {
        if event.data.is_empty() || event.event.as_deref() == Some("ping") {
            return Ok(());
        }
        let data = super::event_json("anthropic", event)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let index = data
            .get("index")
            .and_then(Value::as_u64)
            .and_then(|i| usize::try_from(i).ok())
            .unwrap_or_default();
        match kind {
            "message_start" => {
                let mut message = data.get("message").cloned().unwrap_or_else(|| json!({}));
                if let Some(m) = message.as_object_mut() {
                    m.insert("content".into(), json!([]));
                }
                stream.body = message;
            }
            "content_block_start" => block_start(stream, index, &data)?,
            "content_block_delta" => block_delta(stream, index, &data, sink)?,
            "content_block_stop" => block_stop(stream, index),
            "message_delta" => message_delta(stream, &data),
            "message_stop" => stream.done = true,
            "error" => return Err(stream_error(&data)),
            _ => {}
        }
        Ok(())
    }
}

/// The blocks streamed so far, and the one at `index` (`what` names what came for it when there is none).
fn streamed_block<'a>(stream: &'a mut StreamedBody, index: usize, what: &str) -> Result<&'a mut Value, ModelError> {
    stream
        .body
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|b| b.get_mut(index))
        .ok_or_else(|| ModelError::InvalidResponse {
            path: format!("content[{index}]"),
            problem: format!("anthropic streamed {what} for a block it never started"),
        })
}

/// `content_block_start`: blocks arrive in order, a block is the next one or restarts one already seen (an
/// index from the stream never sizes an allocation).
fn block_start(stream: &mut StreamedBody, index: usize, data: &Value) -> Result<(), ModelError> {
    let block = data.get("content_block").cloned().unwrap_or(Value::Null);
    let Some(blocks) = stream.body.get_mut("content").and_then(Value::as_array_mut) else {
        return Err(ModelError::InvalidResponse {
            path: format!("content[{index}]"),
            problem: "anthropic streamed a content block before message_start".into(),
        });
    };
    let seen = blocks.len();
    if index == seen {
        blocks.push(block);
    } else if let Some(slot) = blocks.get_mut(index) {
        *slot = block;
    } else {
        return Err(ModelError::InvalidResponse {
            path: format!("content[{index}]"),
            problem: format!("anthropic streamed block {index} after {seen} blocks"),
        });
    }
    stream.partial_mut(index).clear();
    Ok(())
}

/// `content_block_delta`: text, a tool call's input as JSON pieces (kept until the block stops), thinking and
/// its signature.
fn block_delta(
    stream: &mut StreamedBody,
    index: usize,
    data: &Value,
    sink: &mut dyn DeltaSink,
) -> Result<(), ModelError> {
    let delta = data.get("delta").cloned().unwrap_or(Value::Null);
    let piece = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default();
    let kind = delta.get("type").and_then(Value::as_str).unwrap_or_default();
    if kind == "input_json_delta" {
        stream.partial_mut(index).push_str(piece("partial_json"));
    }
    let block = streamed_block(stream, index, "a delta")?;
    match kind {
        "text_delta" => {
            append(block, "text", piece("text"));
            sink.delta(Delta::Text(piece("text")));
        }
        "input_json_delta" => {
            let field = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
            sink.delta(Delta::ToolCall {
                id: field("id"),
                name: field("name"),
                input: piece("partial_json"),
            });
        }
        "thinking_delta" => append(block, "thinking", piece("thinking")),
        "signature_delta" => append(block, "signature", piece("signature")),
        _ => {}
    }
    Ok(())
}

/// `content_block_stop`: a tool call's input, whole. Input that does not parse stays text: the run refuses it
/// as arguments that are not a JSON object, and the model reads why.
fn block_stop(stream: &mut StreamedBody, index: usize) {
    let partial = stream.partial_mut(index).trim().to_owned();
    let Ok(block) = streamed_block(stream, index, "a stop") else {
        return;
    };
    if let Some(block) = block
        .as_object_mut()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
    {
        let input = if partial.is_empty() {
            json!({})
        } else {
            crate::limits::parse_untrusted(&partial).unwrap_or(Value::String(partial))
        };
        block.insert("input".into(), input);
    }
}

/// `message_delta`: the stop reason and the token counts it gives (a count that is `null` is not given: the one
/// from `message_start` stands).
fn message_delta(stream: &mut StreamedBody, data: &Value) {
    let Some(body) = stream.body.as_object_mut() else {
        return;
    };
    if let Some(reason) = data.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
        body.insert("stop_reason".into(), reason.clone());
    }
    if let Some(usage) = data.get("usage").and_then(Value::as_object) {
        let total = body.entry("usage").or_insert_with(|| json!({}));
        if let Some(total) = total.as_object_mut() {
            for (k, v) in usage.iter().filter(|(_, v)| !v.is_null()) {
                total.insert(k.clone(), v.clone());
            }
        }
    }
}

/// `error`: the API failed mid-stream (overloaded, rate-limited and server errors may be retried).
fn stream_error(data: &Value) -> ModelError {
    let kind = data.pointer("/error/type").and_then(Value::as_str).unwrap_or_default();
    let message = data.pointer("/error/message").and_then(Value::as_str).unwrap_or(kind);
    let status = match kind {
        "overloaded_error" => Some(529),
        "api_error" => Some(500),
        "rate_limit_error" => Some(429),
        _ => None,
    };
    ModelError::Http {
        provider: "anthropic".into(),
        status,
        message: format!("the stream reported {kind}: {message}"),
        retryable: status.is_some(),
    }
}

/// Appends `piece` to the string field `key` of `block`.
fn append(block: &mut Value, key: &str, piece: &str) {
    if let Some(Value::String(s)) = block
        .as_object_mut()
        .map(|b| b.entry(key).or_insert_with(|| Value::String(String::new())))
    {
        s.push_str(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Delta;

    struct Nothing;
    impl DeltaSink for Nothing {
        fn delta(&mut self, _: Delta<'_>) {}
    }

    fn event(data: Value) -> SseEvent {
        SseEvent {
            event: data.get("type").and_then(Value::as_str).map(str::to_owned),
            data: data.to_string(),
            id: None,
        }
    }

    #[test]
    fn a_null_count_in_message_delta_leaves_message_starts_count() {
        let wire = Anthropic::new("k", "m");
        let mut stream = StreamedBody::default();
        for data in [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 120, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                   "usage": {"input_tokens": null, "cache_read_input_tokens": null, "output_tokens": 7}}),
            json!({"type": "message_stop"}),
        ] {
            wire.stream_event(&mut stream, &event(data), &mut Nothing).unwrap();
        }
        let usage = wire.response(&stream.body).unwrap().usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (120, 7));
    }
}
