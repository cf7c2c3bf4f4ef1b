//! OpenAI Chat Completions (`POST /chat/completions`) and the servers that speak it (Ollama, vLLM,
//! llama.cpp, OpenRouter, Groq, Workers AI's OpenAI endpoint): mapping only, no I/O.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::sse::SseEvent;
use super::{HttpRequest, StreamedBody, ToolChoice, WireFormat, join_url};
use crate::message::{Content, ContentBlock, Role, ToolUse, Usage};
use crate::model::ModelError;
use crate::model::{Delta, DeltaSink, ModelRequest, ModelResponse, StopReason};

/// Settings of the Chat Completions wire format.
#[derive(Clone)]
#[non_exhaustive]
pub struct OpenAi {
    /// Model name, e.g. `gpt-4.1-mini`.
    pub model: String,
    api_key: String,
    /// API base, default `https://api.openai.com/v1`; point it at any compatible server.
    pub base_url: String,
    /// `max_tokens` of each response, if set.
    pub max_tokens: Option<u32>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Per-request timeout (default 120 s).
    pub timeout: Duration,
    /// Whether the model must call a tool (`tool_choice`), sent when the request has tools.
    pub tool_choice: Option<ToolChoice>,
    /// Other body fields sent with every request (`temperature`, `parallel_tool_calls`, …); a field this format
    /// writes itself is not overridden.
    pub extra_body: Map<String, Value>,
}

/// Shows the settings without the API key (and without header values, which may be credentials).
impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAi")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("tool_choice", &self.tool_choice)
            .finish_non_exhaustive()
    }
}

impl OpenAi {
    /// The format for `model` with `api_key` (may be empty for local servers).
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAi {
            model: model.into(),
            api_key: api_key.into(),
            base_url: "https://api.openai.com/v1".into(),
            max_tokens: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            tool_choice: None,
            extra_body: Map::new(),
        }
    }
}

/// `tool_choice` of Chat Completions (and Workers AI's OpenAI-style models).
pub(crate) fn chat_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// The Chat Completions body for `request` (without `model`): shared with the Workers AI binding.
pub(crate) fn chat_body(request: &ModelRequest<'_>) -> Map<String, Value> {
    let mut messages = Vec::new();
    if let Some(system) = request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in request.messages {
        match (&m.role, &m.content) {
            (role, Content::Text(t)) => messages.push(json!({"role": role_name(*role), "content": t})),
            (Role::Assistant, Content::Blocks(blocks)) => messages.push(assistant(blocks)),
            (role, Content::Blocks(blocks)) => {
                // Each tool result is its own `tool` message, in order, before any other content.
                let mut parts = Vec::new();
                for b in blocks {
                    match b {
                        ContentBlock::ToolResult(r) => {
                            let content = if r.is_error { format!("Error: {}", r.content) } else { r.content.clone() };
                            messages.push(json!({"role": "tool", "tool_call_id": r.tool_use_id, "content": content}));
                        }
                        ContentBlock::Text { text, .. } => parts.push(json!({"type": "text", "text": text})),
                        ContentBlock::Image { url, .. } => parts.push(json!({"type": "image_url", "image_url": {"url": url}})),
                        ContentBlock::ImageBase64 { data, mime_type } => parts.push(
                            json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}}),
                        ),
                        // Tool calls and thinking are the assistant's; Chat Completions has no thinking or reasoning items.
                        ContentBlock::ToolUse(_)
                        | ContentBlock::Thinking { .. }
                        | ContentBlock::RedactedThinking { .. }
                        | ContentBlock::Reasoning(_) => {}
                    }
                }
                if !parts.is_empty() {
                    messages.push(json!({"role": role_name(*role), "content": parts}));
                }
            }
        }
    }
    let mut body = Map::new();
    body.insert("messages".into(), messages.into());
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}))
            .collect();
        body.insert("tools".into(), tools.into());
    }
    body
}

pub(super) fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "system",
    }
}

fn assistant(blocks: &[ContentBlock]) -> Value {
    let text: String = blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let calls: Vec<Value> = blocks
        .iter()
        .filter_map(|b| match b {
            // Arguments that were not valid JSON go back exactly as the model wrote them.
            ContentBlock::ToolUse(u) => Some(json!({"id": u.id, "type": "function", "function": {
                "name": u.name,
                "arguments": u.input.as_str().map_or_else(|| u.input.to_string(), str::to_owned),
            }})),
            _ => None,
        })
        .collect();
    // A turn of only tool calls has `""` as its content: OpenAI's schema allows a string or null there, and
    // some servers (llama-cpp-python) answer `null` with an HTTP 500.
    let mut m = json!({"role": "assistant", "content": text});
    if let (false, Some(o)) = (calls.is_empty(), m.as_object_mut()) {
        o.insert("tool_calls".into(), calls.into());
    }
    m
}

/// Our response from a Chat Completions body (`choices[0].message`, `usage`).
pub(crate) fn chat_response(body: &Value) -> Result<ModelResponse, ModelError> {
    let message = body
        .pointer("/choices/0/message")
        .ok_or_else(|| ModelError::InvalidResponse {
            path: "choices[0].message".into(),
            problem: "missing".into(),
        })?;
    let mut content = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        content.push(ContentBlock::text(text));
    }
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        content.push(tool_use(
            call.get("id"),
            call.pointer("/function/name"),
            call.pointer("/function/arguments"),
            i,
        ));
    }
    let mut response = ModelResponse::new(content);
    response.usage = usage(body);
    response.stop_reason = body
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
        .map(|r| StopReason::from(r.to_owned()));
    // A refusal (structured outputs) is its own field; it is the model declining, not an answer.
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str).filter(|r| !r.is_empty()) {
        response.content = vec![ContentBlock::text(refusal)];
        response.stop_reason = Some(StopReason::Refusal);
    }
    Ok(response)
}

/// A tool call from its id (generated when a server sends none), name and arguments.
pub(crate) fn tool_use(id: Option<&Value>, name: Option<&Value>, args: Option<&Value>, index: usize) -> ContentBlock {
    let id = id.and_then(Value::as_str).filter(|s| !s.is_empty()).map_or_else(
        || {
            format!(
                "call_{}_{index}",
                crate::platform::new_run_id().get(..12).unwrap_or_default()
            )
        },
        str::to_owned,
    );
    let name = name.and_then(Value::as_str).unwrap_or_default().to_owned();
    ContentBlock::ToolUse(ToolUse {
        id,
        name,
        input: arguments(args),
        signature: None,
    })
}

/// `usage: { prompt_tokens, completion_tokens }`, when present.
pub(crate) fn usage(body: &Value) -> Option<Usage> {
    let count = |k: &str| {
        body.pointer(&format!("/usage/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or_default()
    };
    body.get("usage").map(|_| Usage {
        input_tokens: count("prompt_tokens"),
        output_tokens: count("completion_tokens"),
    })
}

/// Arguments as a JSON object; anything else is kept as its raw text, which the loop answers with an
/// error result (so the model can correct itself) instead of running the tool.
pub(crate) fn arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(s)) => match crate::limits::parse_untrusted(s) {
            Ok(v) if v.is_object() => v,
            _ => Value::String(s.clone()),
        },
        Some(v @ Value::Object(_)) => v.clone(),
        Some(other) => Value::String(other.to_string()),
        None => json!({}),
    }
}

impl WireFormat for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn request(&self, request: &ModelRequest<'_>) -> HttpRequest {
        self.http(request, &[])
    }

    fn response(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        chat_response(body)
    }

    fn tool_choice(&self) -> Option<&ToolChoice> {
        self.tool_choice.as_ref()
    }

    fn stream_request(&self, request: &ModelRequest<'_>) -> Option<HttpRequest> {
        let fields = [
            ("stream", Value::Bool(true)),
            ("stream_options", json!({"include_usage": true})),
        ];
        Some(self.http(request, &fields))
    }

    fn stream_event(
        &self,
        stream: &mut StreamedBody,
        event: &SseEvent,
        sink: &mut dyn DeltaSink,
    ) -> Result<(), ModelError> {
        chat_stream_event("openai", stream, event, sink)
    }
}

impl OpenAi {
    /// The request with `extra` body fields (the stream flags), the body written once.
    fn http(&self, request: &ModelRequest<'_>, extra: &[(&str, Value)]) -> HttpRequest {
        let mut body = chat_body(request);
        body.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        body.insert("model".into(), self.model.clone().into());
        if let Some(max) = self.max_tokens {
            body.insert("max_tokens".into(), max.into());
        }
        if let (Some(choice), false) = (&self.tool_choice, request.tools.is_empty()) {
            body.insert("tool_choice".into(), chat_tool_choice(choice));
        }
        super::add_extra(&mut body, &self.extra_body);
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if !self.api_key.is_empty() {
            headers.push(("authorization".into(), format!("Bearer {}", self.api_key)));
        }
        headers.extend(self.headers.iter().cloned());
        let mut http = HttpRequest::post(
            join_url(&self.base_url, "chat/completions"),
            headers,
            Value::Object(body).to_string(),
            self.timeout,
        );
        http.max_response_bytes = request.max_response_bytes;
        http
    }
}

/// One Chat Completions chunk (`data: {"choices":[{"delta":…,"finish_reason":…}],"usage":…}`, then
/// `data: [DONE]`) folded into the body a plain request would have answered.
pub(crate) fn chat_stream_event(
    provider: &str,
    stream: &mut StreamedBody,
    event: &SseEvent,
    sink: &mut dyn DeltaSink,
) -> Result<(), ModelError> {
    let data = event.data.trim();
    if data.is_empty() {
        return Ok(());
    }
    if data == "[DONE]" {
        stream.done = true;
        return Ok(());
    }
    chat_stream_chunk(provider, stream, &super::event_json(provider, event)?, sink)
}

/// One Chat Completions chunk, already parsed, folded into `stream`.
pub(crate) fn chat_stream_chunk(
    provider: &str,
    stream: &mut StreamedBody,
    chunk: &Value,
    sink: &mut dyn DeltaSink,
) -> Result<(), ModelError> {
    if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
        let message = error.get("message").and_then(Value::as_str).unwrap_or("an error");
        return Err(ModelError::Http {
            provider: provider.to_owned(),
            status: None,
            message: format!("the stream reported: {message}"),
            retryable: true,
        });
    }
    if stream.body.is_null() {
        stream.body = json!({"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": null}]});
    }
    let Some(body) = stream.body.as_object_mut() else {
        return Ok(());
    };
    if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
        body.insert("usage".into(), usage.clone());
    }
    let Some(choice) = chunk.pointer("/choices/0") else {
        return Ok(());
    };
    let Some(out) = body
        .get_mut("choices")
        .and_then(|c| c.get_mut(0))
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
        out.insert("finish_reason".into(), reason.clone());
        stream.done = true;
    }
    let Some(message) = out.get_mut("message").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let delta = choice.get("delta").cloned().unwrap_or(Value::Null);
    for key in ["content", "refusal"] {
        if let Some(piece) = delta.get(key).and_then(Value::as_str).filter(|p| !p.is_empty()) {
            let slot = message.entry(key).or_insert(Value::Null);
            match slot {
                Value::String(s) => s.push_str(piece),
                other => *other = Value::String(piece.to_owned()),
            }
            if key == "content" {
                sink.delta(Delta::Text(piece));
            }
        }
    }
    let calls = delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten();
    for (k, call) in calls.enumerate() {
        tool_call_delta(provider, message, k, call, sink)?;
    }
    Ok(())
}

/// The `k`-th tool call piece of a chunk, added to the call it continues (its `index`) in `message`.
fn tool_call_delta(
    provider: &str,
    message: &mut serde_json::Map<String, Value>,
    k: usize,
    call: &Value,
    sink: &mut dyn DeltaSink,
) -> Result<(), ModelError> {
    let index = call
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(k);
    let Some(calls) = message.entry("tool_calls").or_insert_with(|| json!([])).as_array_mut() else {
        return Ok(());
    };
    // Calls arrive in order: an index is one already seen or the next (it never sizes an allocation).
    if index == calls.len() {
        calls.push(json!({"id": "", "type": "function", "function": {"name": "", "arguments": ""}}));
    }
    let Some(entry) = calls.get_mut(index) else {
        return Err(ModelError::InvalidResponse {
            path: format!("choices[0].delta.tool_calls[{k}].index"),
            problem: format!("{provider} streamed tool call {index} after {} calls", calls.len()),
        });
    };
    if let Some(id) = call.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
        if let Some(e) = entry.as_object_mut() {
            e.insert("id".into(), id.into());
        }
    }
    let piece = call
        .pointer("/function/arguments")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(f) = entry.get_mut("function").and_then(Value::as_object_mut) {
        if let Some(name) = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            f.insert("name".into(), name.into());
        }
        if let Some(Value::String(args)) = f.get_mut("arguments") {
            args.push_str(piece);
        }
    }
    if !piece.is_empty() {
        let field = |p: &str| entry.pointer(p).and_then(Value::as_str).unwrap_or_default();
        sink.delta(Delta::ToolCall {
            id: field("/id"),
            name: field("/function/name"),
            input: piece,
        });
    }
    Ok(())
}
