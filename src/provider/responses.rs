//! The OpenAI Responses API (`POST /responses`) and the servers that implement its open specification (Open
//! Responses): mapping only, no I/O.
//!
//! Stateless by default (`store: false`): the API keeps nothing between requests, so each reasoning item comes
//! back with its encrypted reasoning (`include: ["reasoning.encrypted_content"]`), is kept in the checkpoint
//! as a [`Reasoning`] block, and is sent back as it was, before the calls it led to — across a pause in
//! another process too.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::openai::{arguments, role_name};
use super::sse::SseEvent;
use super::{HttpRequest, StreamedBody, ToolChoice, WireFormat, join_url};
use crate::message::{Content, ContentBlock, Reasoning, Role, ToolUse, Usage};
use crate::model::{Delta, DeltaSink, ModelError, ModelRequest, ModelResponse, StopReason};

/// The name errors give this provider.
const NAME: &str = "openai-responses";

/// Settings of the Responses wire format.
#[derive(Clone)]
#[non_exhaustive]
pub struct OpenAiResponses {
    /// Model name, e.g. `gpt-5-mini`.
    pub model: String,
    api_key: String,
    /// API base, default `https://api.openai.com/v1` (the request goes to `{base_url}/responses`).
    pub base_url: String,
    /// `max_output_tokens` of each response, if set.
    pub max_tokens: Option<u32>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Per-request timeout (default 120 s).
    pub timeout: Duration,
    /// `store` (default false): whether the API keeps the responses. Without it the encrypted reasoning is
    /// asked for and carried in the checkpoint.
    pub store: bool,
    /// `reasoning.effort` (`"none"`, `"minimal"`, `"low"`, `"medium"`, `"high"`, `"xhigh"`), if set.
    pub reasoning_effort: Option<String>,
    /// `reasoning.summary` (`"auto"`, `"concise"`, `"detailed"`), if set: the reasoning's summary texts.
    pub reasoning_summary: Option<String>,
    /// Whether the model must call a tool (`tool_choice`), sent when the request has tools.
    pub tool_choice: Option<ToolChoice>,
    /// Other body fields sent with every request; a field this format writes itself is not overridden.
    pub extra_body: Map<String, Value>,
}

/// Shows the settings without the API key (and without header values, which may be credentials).
impl std::fmt::Debug for OpenAiResponses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponses")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("store", &self.store)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("tool_choice", &self.tool_choice)
            .finish_non_exhaustive()
    }
}

impl OpenAiResponses {
    /// The format for `model` with `api_key` (may be empty for a local server).
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiResponses {
            model: model.into(),
            api_key: api_key.into(),
            base_url: "https://api.openai.com/v1".into(),
            max_tokens: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            store: false,
            reasoning_effort: None,
            reasoning_summary: None,
            tool_choice: None,
            extra_body: Map::new(),
        }
    }

    /// The request with `extra` body fields (the stream flag), the body written once.
    fn http(&self, request: &ModelRequest<'_>, extra: &[(&str, Value)]) -> HttpRequest {
        let mut body = Map::new();
        body.insert("model".into(), self.model.clone().into());
        if let Some(system) = request.system {
            body.insert("instructions".into(), system.into());
        }
        body.insert("input".into(), self.input(request.messages).into());
        if !request.tools.is_empty() {
            // `strict: false`: strict mode would hold every tool to a subset of JSON Schema (every property
            // required, `additionalProperties: false` everywhere); the run checks each call's input against the
            // tool's whole schema itself.
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema, "strict": false}))
                .collect();
            body.insert("tools".into(), tools.into());
            if let Some(choice) = &self.tool_choice {
                let choice = match choice {
                    ToolChoice::Auto => "auto".into(),
                    ToolChoice::Required => "required".into(),
                    ToolChoice::None => "none".into(),
                    ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
                };
                body.insert("tool_choice".into(), choice);
            }
        }
        if let Some(max) = self.max_tokens {
            body.insert("max_output_tokens".into(), max.into());
        }
        body.insert("store".into(), self.store.into());
        if !self.store {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        if self.reasoning_effort.is_some() || self.reasoning_summary.is_some() {
            let mut reasoning = Map::new();
            if let Some(effort) = &self.reasoning_effort {
                reasoning.insert("effort".into(), effort.clone().into());
            }
            if let Some(summary) = &self.reasoning_summary {
                reasoning.insert("summary".into(), summary.clone().into());
            }
            body.insert("reasoning".into(), reasoning.into());
        }
        body.extend(extra.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
        super::add_extra(&mut body, &self.extra_body);
        let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        if !self.api_key.is_empty() {
            headers.push(("authorization".into(), format!("Bearer {}", self.api_key)));
        }
        headers.extend(self.headers.iter().cloned());
        let mut http = HttpRequest::post(
            join_url(&self.base_url, "responses"),
            headers,
            Value::Object(body).to_string(),
            self.timeout,
        );
        http.max_response_bytes = request.max_response_bytes;
        http
    }

    /// The conversation as input items, in order: messages, reasoning items, function calls and their outputs.
    fn input(&self, messages: &[crate::Message]) -> Vec<Value> {
        let mut items = Vec::new();
        for m in messages {
            match (&m.role, &m.content) {
                // `type: "message"` spelled out: OpenAI infers it, other servers (llama-server) refuse an item
                // without it.
                (role, Content::Text(t)) => {
                    items.push(json!({"type": "message", "role": role_name(*role), "content": t}))
                }
                (Role::Assistant, Content::Blocks(blocks)) => self.assistant(blocks, &mut items),
                (role, Content::Blocks(blocks)) => user(*role, blocks, &mut items),
            }
        }
        items
    }

    /// An assistant turn's blocks as items in their order: its text as a message, each reasoning item, each call.
    fn assistant(&self, blocks: &[ContentBlock], items: &mut Vec<Value>) {
        let mut text = String::new();
        let flush = |text: &mut String, items: &mut Vec<Value>| {
            if !text.is_empty() {
                items.push(json!({"type": "message", "role": "assistant", "content": std::mem::take(text)}));
            }
        };
        for b in blocks {
            match b {
                ContentBlock::Text { text: t, .. } => text.push_str(t),
                ContentBlock::Reasoning(r) => {
                    flush(&mut text, items);
                    if let Some(item) = self.reasoning_item(r) {
                        items.push(item);
                    }
                }
                ContentBlock::ToolUse(u) => {
                    flush(&mut text, items);
                    // Arguments that were not valid JSON go back exactly as the model wrote them.
                    let args = u.input.as_str().map_or_else(|| u.input.to_string(), str::to_owned);
                    items.push(json!({"type": "function_call", "call_id": u.id, "name": u.name, "arguments": args}));
                }
                // Another provider's thinking; images and results are not the assistant's.
                _ => {}
            }
        }
        flush(&mut text, items);
    }

    /// A reasoning item as the API takes it back: whole (with its encrypted reasoning) when nothing is stored,
    /// by id when the API stored it. One without its encrypted reasoning cannot go back statelessly.
    fn reasoning_item(&self, r: &Reasoning) -> Option<Value> {
        let summary: Vec<Value> = r
            .summary
            .iter()
            .map(|t| json!({"type": "summary_text", "text": t}))
            .collect();
        let mut item = json!({"type": "reasoning", "id": r.id, "summary": summary});
        match (&r.encrypted_content, self.store) {
            (Some(e), _) => {
                if let Some(o) = item.as_object_mut() {
                    o.insert("encrypted_content".into(), e.clone().into());
                }
            }
            (None, false) => return None,
            (None, true) => {}
        }
        Some(item)
    }
}

/// A user (or system) turn's blocks: each tool result as a `function_call_output` item, in order, then the rest
/// as one message of input parts.
fn user(role: Role, blocks: &[ContentBlock], items: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for b in blocks {
        match b {
            ContentBlock::ToolResult(r) => {
                let output = if r.is_error { format!("Error: {}", r.content) } else { r.content.clone() };
                items.push(json!({"type": "function_call_output", "call_id": r.tool_use_id, "output": output}));
            }
            ContentBlock::Text { text, .. } => parts.push(json!({"type": "input_text", "text": text})),
            ContentBlock::Image { url, .. } => {
                parts.push(json!({"type": "input_image", "image_url": url, "detail": "auto"}));
            }
            ContentBlock::ImageBase64 { data, mime_type } => parts.push(
                json!({"type": "input_image", "image_url": format!("data:{mime_type};base64,{data}"), "detail": "auto"}),
            ),
            _ => {}
        }
    }
    if !parts.is_empty() {
        items.push(json!({"type": "message", "role": role_name(role), "content": parts}));
    }
}

impl WireFormat for OpenAiResponses {
    fn name(&self) -> &'static str {
        NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &'static str {
        "openai"
    }

    fn tool_choice(&self) -> Option<&ToolChoice> {
        self.tool_choice.as_ref()
    }

    fn request(&self, request: &ModelRequest<'_>) -> HttpRequest {
        self.http(request, &[])
    }

    fn response(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        response(body)
    }

    fn stream_request(&self, request: &ModelRequest<'_>) -> Option<HttpRequest> {
        Some(self.http(request, &[("stream", Value::Bool(true))]))
    }

    /// The Responses stream: `response.created`, then per output item `response.output_item.added`, its
    /// deltas (`response.output_text.delta`, `response.function_call_arguments.delta`, …) and
    /// `response.output_item.done` (the item whole: the final encrypted reasoning is here, not in `.added`),
    /// then `response.completed` / `.incomplete` / `.failed` with the whole response; `error` when it fails.
    fn stream_event(
        &self,
        stream: &mut StreamedBody,
        event: &SseEvent,
        sink: &mut dyn DeltaSink,
    ) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let data = super::event_json(NAME, event)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        match kind {
            "response.created" | "response.in_progress" => started(stream, &data),
            "response.output_item.added" | "response.output_item.done" => item(stream, &data)?,
            "response.content_part.added" => part(stream, &data)?,
            "response.output_text.delta" | "response.refusal.delta" => text_delta(stream, &data, kind, sink)?,
            "response.function_call_arguments.delta" => arguments_delta(stream, &data, sink)?,
            "response.completed" | "response.incomplete" | "response.failed" => finished(stream, &data),
            "error" => return Err(stream_error(&data)),
            _ => {}
        }
        Ok(())
    }
}

/// Our response from a Responses body: `output` items, `status`, `incomplete_details`, `usage`.
fn response(body: &Value) -> Result<ModelResponse, ModelError> {
    let status = body.get("status").and_then(Value::as_str).unwrap_or("completed");
    if status == "failed" {
        return Err(failed(body.get("error").unwrap_or(&Value::Null)));
    }
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("output", "missing"))?;
    let (content, refusal) = blocks_of(output)?;
    let calls = content.iter().any(|b| matches!(b, ContentBlock::ToolUse(_)));
    let mut response = ModelResponse::new(content);
    response.usage = body.get("usage").filter(|u| u.is_object()).map(|u| Usage {
        input_tokens: u.get("input_tokens").and_then(Value::as_u64).unwrap_or_default(),
        output_tokens: u.get("output_tokens").and_then(Value::as_u64).unwrap_or_default(),
    });
    response.stop_reason = Some(if status == "incomplete" {
        let reason = body
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            .unwrap_or("incomplete");
        match StopReason::from(reason.to_owned()) {
            cut @ (StopReason::MaxTokens | StopReason::ContentFilter) => cut,
            // Any other reason still cut the answer: it is not one to keep.
            _ => {
                return Err(ModelError::Stopped {
                    reason: StopReason::Other(reason.to_owned()),
                    text: crate::Message::assistant(response.content).text(),
                    usage: response.usage,
                });
            }
        }
    } else if calls {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    });
    if let Some(r) = refusal {
        response.content = vec![ContentBlock::text(r)];
        response.stop_reason = Some(StopReason::Refusal);
    }
    Ok(response)
}

fn invalid(path: &str, problem: &str) -> ModelError {
    ModelError::InvalidResponse {
        path: path.into(),
        problem: problem.into(),
    }
}

/// The output items as blocks (reasoning, text, calls), and a refusal's text when the model refused.
fn blocks_of(output: &[Value]) -> Result<(Vec<ContentBlock>, Option<String>), ModelError> {
    let mut content = Vec::new();
    let mut refusal = None;
    for (i, item) in output.iter().enumerate() {
        let field = |k: &str| item.get(k).and_then(Value::as_str).map(str::to_owned);
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => content.push(ContentBlock::Reasoning(Reasoning {
                id: field("id").ok_or_else(|| invalid(&format!("output[{i}].id"), "a reasoning item without id"))?,
                summary: item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.get("text").and_then(Value::as_str).map(str::to_owned))
                    .collect(),
                encrypted_content: field("encrypted_content"),
            })),
            Some("message") => {
                for part in item.get("content").and_then(Value::as_array).into_iter().flatten() {
                    let text = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                    match part.get("type").and_then(Value::as_str) {
                        Some("output_text") => content.push(ContentBlock::text(text("text"))),
                        Some("refusal") => refusal = Some(text("refusal")),
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                let (Some(id), Some(name)) = (field("call_id"), field("name")) else {
                    return Err(invalid(
                        &format!("output[{i}]"),
                        "a function_call without call_id or name",
                    ));
                };
                content.push(ContentBlock::ToolUse(ToolUse {
                    id,
                    name,
                    input: arguments(item.get("arguments")),
                    signature: None,
                }));
            }
            // Built-in tools' items (web search, …) carry nothing this loop acts on.
            _ => {}
        }
    }
    Ok((content, refusal))
}

/// A failed response's `error` (`server_error` and rate limits may be retried).
fn failed(error: &Value) -> ModelError {
    let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the response failed");
    ModelError::Http {
        provider: NAME.into(),
        status: None,
        message: format!("the response failed ({code}): {message}"),
        retryable: matches!(code, "server_error" | "rate_limit_exceeded" | "vector_store_timeout"),
    }
}

/// `error` in a stream: the API failed mid-answer.
fn stream_error(data: &Value) -> ModelError {
    let error = data.get("error").unwrap_or(data);
    let code = error.get("code").and_then(Value::as_str).unwrap_or_default();
    let message = error.get("message").and_then(Value::as_str).unwrap_or("an error");
    ModelError::Http {
        provider: NAME.into(),
        status: None,
        message: format!("the stream reported {code}: {message}"),
        retryable: !matches!(code, "invalid_request_error" | "invalid_prompt"),
    }
}

/// `response.created`: the response so far, its output emptied (items arrive one by one).
fn started(stream: &mut StreamedBody, data: &Value) {
    let mut body = data.get("response").cloned().unwrap_or_else(|| json!({}));
    if let Some(o) = body.as_object_mut() {
        o.insert("output".into(), json!([]));
    }
    stream.body = body;
}

/// The output items so far.
fn output(stream: &mut StreamedBody) -> Option<&mut Vec<Value>> {
    if !stream.body.is_object() {
        started(stream, &Value::Null);
    }
    stream
        .body
        .as_object_mut()?
        .entry("output")
        .or_insert_with(|| json!([]))
        .as_array_mut()
}

/// The `output_index` of an event, an index already seen or the next one (a stream's index never sizes an
/// allocation).
fn index_of(data: &Value, seen: usize) -> Result<usize, ModelError> {
    let index = data
        .get("output_index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(seen);
    if index > seen {
        return Err(ModelError::InvalidResponse {
            path: format!("output[{index}]"),
            problem: format!("{NAME} streamed item {index} after {seen} items"),
        });
    }
    Ok(index)
}

/// The item at the event's `output_index`, or an error naming what came for an item never added.
fn streamed_item<'a>(stream: &'a mut StreamedBody, data: &Value, what: &str) -> Result<&'a mut Value, ModelError> {
    let index = data.get("output_index").and_then(Value::as_u64).unwrap_or_default();
    output(stream)
        .and_then(|items| items.get_mut(usize::try_from(index).ok()?))
        .ok_or_else(|| ModelError::InvalidResponse {
            path: format!("output[{index}]"),
            problem: format!("{NAME} streamed {what} for an item it never added"),
        })
}

/// `response.output_item.added` / `.done`: the item as it stands; `.done`'s is final (its encrypted reasoning,
/// its whole arguments), so it replaces what the deltas built.
fn item(stream: &mut StreamedBody, data: &Value) -> Result<(), ModelError> {
    let item = data.get("item").cloned().unwrap_or(Value::Null);
    let Some(items) = output(stream) else {
        return Ok(());
    };
    let index = index_of(data, items.len())?;
    if index == items.len() {
        items.push(item);
    } else if let Some(slot) = items.get_mut(index) {
        *slot = item;
    }
    Ok(())
}

/// `response.content_part.added`: a message's next part (text or refusal), filled by the deltas.
fn part(stream: &mut StreamedBody, data: &Value) -> Result<(), ModelError> {
    let part = data.get("part").cloned().unwrap_or(Value::Null);
    let message = streamed_item(stream, data, "a content part")?;
    let Some(parts) = message
        .as_object_mut()
        .map(|m| m.entry("content").or_insert_with(|| json!([])))
        .and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    let at = data.get("content_index").and_then(Value::as_u64).unwrap_or_default();
    match usize::try_from(at).ok() {
        Some(i) if i == parts.len() => parts.push(part),
        Some(i) if i < parts.len() => {
            if let Some(slot) = parts.get_mut(i) {
                *slot = part;
            }
        }
        _ => {
            return Err(ModelError::InvalidResponse {
                path: format!("content[{at}]"),
                problem: format!("{NAME} streamed content part {at} after {} parts", parts.len()),
            });
        }
    }
    Ok(())
}

/// `response.output_text.delta` / `response.refusal.delta`: text added to the part it continues.
fn text_delta(stream: &mut StreamedBody, data: &Value, kind: &str, sink: &mut dyn DeltaSink) -> Result<(), ModelError> {
    let piece = data.get("delta").and_then(Value::as_str).unwrap_or_default();
    let (key, part_type) = if kind == "response.refusal.delta" {
        ("refusal", "refusal")
    } else {
        ("text", "output_text")
    };
    let message = streamed_item(stream, data, "text")?;
    let at = data.get("content_index").and_then(Value::as_u64).unwrap_or_default();
    let part = message
        .get_mut("content")
        .and_then(Value::as_array_mut)
        .and_then(|parts| parts.get_mut(usize::try_from(at).ok()?))
        .ok_or_else(|| ModelError::InvalidResponse {
            path: format!("content[{at}]"),
            problem: format!("{NAME} streamed text for a content part it never added"),
        })?;
    if let Some(p) = part.as_object_mut() {
        p.entry("type").or_insert_with(|| part_type.into());
        match p.entry(key).or_insert_with(|| Value::String(String::new())) {
            Value::String(s) => s.push_str(piece),
            other => *other = Value::String(piece.to_owned()),
        }
    }
    if key == "text" && !piece.is_empty() {
        sink.delta(Delta::Text(piece));
    }
    Ok(())
}

/// `response.function_call_arguments.delta`: a piece of a call's arguments.
fn arguments_delta(stream: &mut StreamedBody, data: &Value, sink: &mut dyn DeltaSink) -> Result<(), ModelError> {
    let piece = data.get("delta").and_then(Value::as_str).unwrap_or_default();
    let call = streamed_item(stream, data, "arguments")?;
    if let Some(c) = call.as_object_mut() {
        match c.entry("arguments").or_insert_with(|| Value::String(String::new())) {
            Value::String(s) => s.push_str(piece),
            other => *other = Value::String(piece.to_owned()),
        }
    }
    if !piece.is_empty() {
        let field = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or_default();
        sink.delta(Delta::ToolCall {
            id: field("call_id"),
            name: field("name"),
            input: piece,
        });
    }
    Ok(())
}

/// `response.completed` / `.incomplete` / `.failed`: the response whole. Its own `output` is final when it has
/// one; otherwise the items streamed stand, with its status, usage and details.
fn finished(stream: &mut StreamedBody, data: &Value) {
    let Some(mut response) = data.get("response").cloned().filter(Value::is_object) else {
        stream.done = true;
        return;
    };
    let given = response
        .get("output")
        .and_then(Value::as_array)
        .is_some_and(|o| !o.is_empty());
    if !given {
        let streamed = output(stream).map(std::mem::take).unwrap_or_default();
        if let Some(o) = response.as_object_mut() {
            o.insert("output".into(), streamed.into());
        }
    }
    stream.body = response;
    stream.done = true;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_incomplete_answer_is_stopped_with_its_reason() {
        let body = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Let me"}]}],
            "usage": {"input_tokens": 5, "output_tokens": 9}});
        let r = response(&body).unwrap();
        assert_eq!(r.stop_reason, Some(StopReason::MaxTokens));
        let body = json!({"status": "incomplete", "incomplete_details": {"reason": "something_new"}, "output": []});
        assert!(
            matches!(response(&body), Err(ModelError::Stopped { reason: StopReason::Other(r), .. }) if r == "something_new")
        );
    }
}
