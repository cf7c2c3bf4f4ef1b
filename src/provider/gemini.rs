//! The Gemini API (`POST {base}/models/{model}:generateContent`, streamed by `:streamGenerateContent?alt=sse`):
//! mapping only, no I/O.
//!
//! Gemini signs its reasoning: a `thoughtSignature` on a part (a function call, a text, a thought) must come
//! back on that part, or the API refuses the call's result. Each signature is kept on its block in the
//! checkpoint (`signature` of a `text`, `tool_use` or `thinking` block) — an empty signed text too — and sent
//! back where it came.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::sse::SseEvent;
use super::{HttpRequest, StreamedBody, ToolChoice, WireFormat, join_url};
use crate::message::{Content, ContentBlock, Role, ToolUse, Usage};
use crate::model::{Delta, DeltaSink, ModelError, ModelRequest, ModelResponse, StopReason};

/// The name errors give this provider.
const NAME: &str = "gemini";

/// How much Gemini thinks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Thinking {
    /// `thinkingBudget`: at most this many tokens (Gemini 2.5; 0 turns thinking off where the model allows).
    Budget(u32),
    /// `thinkingLevel` (Gemini 3): `"minimal"`, `"low"`, `"medium"`, `"high"` or `"xhigh"` (sent as the API's enum
    /// names, `"LOW"`).
    Level(String),
}

/// Settings of the Gemini wire format.
#[derive(Clone)]
#[non_exhaustive]
pub struct Gemini {
    /// Model name, e.g. `gemini-2.5-flash` (a leading `models/` is taken off).
    pub model: String,
    api_key: String,
    /// API base including its version, default `https://generativelanguage.googleapis.com/v1beta`.
    pub base_url: String,
    /// `generationConfig.maxOutputTokens`, if set.
    pub max_tokens: Option<u32>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Per-request timeout (default 120 s).
    pub timeout: Duration,
    /// `generationConfig.thinkingConfig`, with `includeThoughts` (the thought summaries are kept like Anthropic's
    /// thinking blocks), if set.
    pub thinking: Option<Thinking>,
    /// Whether the model must call a tool (`toolConfig.functionCallingConfig`), sent when the request has tools.
    pub tool_choice: Option<ToolChoice>,
    /// Other body fields sent with every request (`safetySettings`, `cachedContent`, …); a field this format
    /// writes itself is not overridden.
    pub extra_body: Map<String, Value>,
}

/// Shows the settings without the API key (and without header values, which may be credentials).
impl std::fmt::Debug for Gemini {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemini")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("max_tokens", &self.max_tokens)
            .field("thinking", &self.thinking)
            .field("headers", &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("tool_choice", &self.tool_choice)
            .finish_non_exhaustive()
    }
}

impl Gemini {
    /// The format for `model` with `api_key`.
    pub fn new(api_key: impl Into<String>, model: impl Into<String>) -> Self {
        let model: String = model.into();
        Gemini {
            model: model.strip_prefix("models/").map(str::to_owned).unwrap_or(model),
            api_key: api_key.into(),
            base_url: "https://generativelanguage.googleapis.com/v1beta".into(),
            max_tokens: None,
            headers: Vec::new(),
            timeout: Duration::from_secs(120),
            thinking: None,
            tool_choice: None,
            extra_body: Map::new(),
        }
    }

    /// The request to `method` (`generateContent`, `streamGenerateContent?alt=sse`), the body written once.
    fn http(&self, request: &ModelRequest<'_>, method: &str) -> HttpRequest {
        let (contents, system) = contents(request);
        let mut body = Map::new();
        body.insert("contents".into(), contents.into());
        if !system.is_empty() {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system.join("\n\n")}]}),
            );
        }
        if !request.tools.is_empty() {
            // `parametersJsonSchema` takes a whole JSON Schema (`parameters` refuses `additionalProperties`).
            let declarations: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema}))
                .collect();
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
            if let Some(choice) = &self.tool_choice {
                let config = match choice {
                    ToolChoice::Auto => json!({"mode": "AUTO"}),
                    ToolChoice::Required => json!({"mode": "ANY"}),
                    ToolChoice::None => json!({"mode": "NONE"}),
                    ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
                };
                body.insert("toolConfig".into(), json!({"functionCallingConfig": config}));
            }
        }
        let generation = self.generation();
        if !generation.is_empty() {
            body.insert("generationConfig".into(), generation.into());
        }
        super::add_extra(&mut body, &self.extra_body);
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            // The key goes in a header, never in the URL (where logs and errors would show it).
            ("x-goog-api-key".to_owned(), self.api_key.clone()),
        ];
        headers.extend(self.headers.iter().cloned());
        let mut http = HttpRequest::post(
            join_url(&self.base_url, &format!("models/{}:{method}", self.model)),
            headers,
            Value::Object(body).to_string(),
            self.timeout,
        );
        http.max_response_bytes = request.max_response_bytes;
        http
    }

    /// `generationConfig`: the output limit, the thinking settings, and the other settings of
    /// `extraBody.generationConfig` (`temperature`, `topP`, …) beside them.
    fn generation(&self) -> Map<String, Value> {
        let mut generation = Map::new();
        if let Some(max) = self.max_tokens {
            generation.insert("maxOutputTokens".into(), max.into());
        }
        let thinking = match &self.thinking {
            Some(Thinking::Budget(b)) => Some(json!({"thinkingBudget": b, "includeThoughts": true})),
            // The API's enum names (`LOW`), as Google's published types have them.
            Some(Thinking::Level(l)) => Some(json!({"thinkingLevel": l.to_ascii_uppercase(), "includeThoughts": true})),
            None => None,
        };
        if let Some(t) = thinking {
            generation.insert("thinkingConfig".into(), t);
        }
        if let Some(Value::Object(more)) = self.extra_body.get("generationConfig") {
            for (k, v) in more {
                generation.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        generation
    }
}

/// The conversation as `contents` (the model's turns as `model`), and the system texts (the instructions and
/// the system messages kept in the history, which Gemini takes as `systemInstruction`).
fn contents(request: &ModelRequest<'_>) -> (Vec<Value>, Vec<String>) {
    let mut system: Vec<String> = request.system.map(str::to_owned).into_iter().collect();
    let mut contents = Vec::new();
    // Gemini answers a call by its name: each result is paired with the call it answers.
    let mut names = std::collections::HashMap::new();
    for m in request.messages {
        match m.role {
            Role::System => system.push(m.text()),
            Role::Assistant => {
                for u in m.tool_uses() {
                    names.insert(u.id.as_str(), u.name.as_str());
                }
                let parts = model_parts(&m.content);
                if !parts.is_empty() {
                    contents.push(json!({"role": "model", "parts": parts}));
                }
            }
            Role::User => contents.push(json!({"role": "user", "parts": user_parts(&m.content, &names)})),
        }
    }
    (contents, system)
}

/// `part` with `thoughtSignature` when there is one.
fn signed(mut part: Value, signature: Option<&str>) -> Value {
    if let (Some(s), Some(o)) = (signature.filter(|s| !s.is_empty()), part.as_object_mut()) {
        o.insert("thoughtSignature".into(), s.into());
    }
    part
}

/// The model's parts, each signature on the part it came on; other providers' reasoning is left out.
fn model_parts(content: &Content) -> Vec<Value> {
    let blocks = match content {
        Content::Text(t) => return vec![json!({"text": t})],
        Content::Blocks(b) => b,
    };
    blocks
        .iter()
        .filter_map(|b| {
            Some(match b {
                ContentBlock::Text { text, signature } => signed(json!({"text": text}), signature.as_deref()),
                ContentBlock::Thinking { thinking, signature } => {
                    signed(json!({"text": thinking, "thought": true}), Some(signature))
                }
                // Arguments that were not a JSON object are kept, wrapped (Gemini wants an object).
                ContentBlock::ToolUse(u) => {
                    let args = if u.input.is_object() {
                        u.input.clone()
                    } else {
                        json!({"invalid_arguments": u.input})
                    };
                    signed(
                        json!({"functionCall": {"name": u.name, "args": args}}),
                        u.signature.as_deref(),
                    )
                }
                _ => return None,
            })
        })
        .collect()
}

/// A user turn's parts: text, images, and each tool result as the `functionResponse` of the call it answers
/// (`response` is always an object: `{ output }`, or `{ error }` for a failed call).
fn user_parts(content: &Content, names: &std::collections::HashMap<&str, &str>) -> Vec<Value> {
    let blocks = match content {
        Content::Text(t) => return vec![json!({"text": t})],
        Content::Blocks(b) => b,
    };
    blocks
        .iter()
        .filter_map(|b| {
            Some(match b {
                ContentBlock::Text { text, .. } => json!({"text": text}),
                ContentBlock::ToolResult(r) => {
                    let name = names.get(r.tool_use_id.as_str()).copied().unwrap_or_default();
                    let response = if r.is_error {
                        json!({"error": r.content})
                    } else {
                        json!({"output": r.content})
                    };
                    json!({"functionResponse": {"name": name, "response": response}})
                }
                ContentBlock::ImageBase64 { data, mime_type } => {
                    json!({"inlineData": {"mimeType": mime_type, "data": data}})
                }
                ContentBlock::Image { url, mime_type } => {
                    let mut file = json!({"fileUri": url});
                    if let (Some(m), Some(o)) = (mime_type, file.as_object_mut()) {
                        o.insert("mimeType".into(), m.clone().into());
                    }
                    json!({"fileData": file})
                }
                _ => return None,
            })
        })
        .collect()
}

impl WireFormat for Gemini {
    fn name(&self) -> &'static str {
        NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn provider(&self) -> &'static str {
        "gcp.gemini"
    }

    fn tool_choice(&self) -> Option<&ToolChoice> {
        self.tool_choice.as_ref()
    }

    fn request(&self, request: &ModelRequest<'_>) -> HttpRequest {
        self.http(request, "generateContent")
    }

    fn response(&self, body: &Value) -> Result<ModelResponse, ModelError> {
        response(body)
    }

    fn stream_request(&self, request: &ModelRequest<'_>) -> Option<HttpRequest> {
        Some(self.http(request, "streamGenerateContent?alt=sse"))
    }

    /// Each event is a whole `GenerateContentResponse` carrying the next parts: a text continues the text part
    /// before it (a signed empty text stays its own part), a function call comes whole; the chunk with a
    /// `finishReason` (or a blocked prompt) ends the answer.
    fn stream_event(
        &self,
        stream: &mut StreamedBody,
        event: &SseEvent,
        sink: &mut dyn DeltaSink,
    ) -> Result<(), ModelError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let chunk = super::event_json(NAME, event)?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(error));
        }
        fold_chunk(stream, &chunk, sink);
        Ok(())
    }
}

/// A call's id: Gemini's own when it gives one, else made from the response's id and the call's place, so a
/// streamed and a plain reading of one answer name it alike.
fn call_id(given: Option<&str>, response_id: Option<&str>, index: usize) -> String {
    match (given.filter(|s| !s.is_empty()), response_id.filter(|s| !s.is_empty())) {
        (Some(id), _) => id.to_owned(),
        (None, Some(r)) => format!("gc_{r}_{index}"),
        (None, None) => format!(
            "gc_{}_{index}",
            crate::platform::new_run_id().get(..12).unwrap_or_default()
        ),
    }
}

/// Our response from a `GenerateContentResponse`: the first candidate's parts, its finish reason, the usage.
fn response(body: &Value) -> Result<ModelResponse, ModelError> {
    let usage = body.get("usageMetadata").filter(|u| u.is_object()).map(|u| {
        let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or_default();
        Usage {
            input_tokens: count("promptTokenCount"),
            // Thinking is billed as output.
            output_tokens: count("candidatesTokenCount").saturating_add(count("thoughtsTokenCount")),
        }
    });
    let Some(candidate) = body.pointer("/candidates/0") else {
        if body.pointer("/promptFeedback/blockReason").is_some() {
            let mut r = ModelResponse::new(Vec::new());
            r.usage = usage;
            r.stop_reason = Some(StopReason::PromptBlocked);
            return Ok(r);
        }
        return Err(ModelError::InvalidResponse {
            path: "candidates".into(),
            problem: "missing (and no promptFeedback.blockReason)".into(),
        });
    };
    let parts = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let content = blocks_of(parts, body.get("responseId").and_then(Value::as_str));
    let calls = content.iter().filter(|b| matches!(b, ContentBlock::ToolUse(_))).count();
    let reason = candidate.get("finishReason").and_then(Value::as_str).unwrap_or("STOP");
    let mut r = ModelResponse::new(content);
    r.usage = usage;
    r.stop_reason = Some(match reason {
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" | "IMAGE_SAFETY" => StopReason::ContentFilter,
        "RECITATION" => StopReason::Recitation,
        "STOP" | "FINISH_REASON_UNSPECIFIED" if calls > 0 => StopReason::ToolUse,
        "STOP" | "FINISH_REASON_UNSPECIFIED" => StopReason::EndTurn,
        // MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS, LANGUAGE, OTHER and reasons not
        // documented yet: the answer ended abnormally, and none of its calls may run.
        other => {
            return Err(ModelError::Stopped {
                reason: StopReason::Other(other.to_ascii_lowercase()),
                text: crate::Message::assistant(r.content).text(),
                usage: r.usage,
            });
        }
    });
    Ok(r)
}

/// A candidate's parts as blocks, each signature on the block of its part: calls (named from the response id
/// when Gemini gives none), thoughts, texts.
fn blocks_of(parts: &[Value], response_id: Option<&str>) -> Vec<ContentBlock> {
    let mut content = Vec::new();
    let mut calls = 0;
    for part in parts {
        let signature = part.get("thoughtSignature").and_then(Value::as_str).map(str::to_owned);
        if let Some(call) = part.get("functionCall") {
            let name = call.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
            let id = call_id(call.get("id").and_then(Value::as_str), response_id, calls);
            calls += 1;
            content.push(ContentBlock::ToolUse(ToolUse {
                id,
                name,
                input: call.get("args").cloned().unwrap_or_else(|| json!({})),
                signature,
            }));
        } else if let Some(text) = part.get("text").and_then(Value::as_str) {
            if part.get("thought").and_then(Value::as_bool) == Some(true) {
                content.push(ContentBlock::Thinking {
                    thinking: text.to_owned(),
                    signature: signature.unwrap_or_default(),
                });
            } else {
                content.push(ContentBlock::Text {
                    text: text.to_owned(),
                    signature,
                });
            }
        }
    }
    content
}

/// An `error` in a stream (`{ code, message, status }`): rate limits and server errors may be retried.
fn stream_error(error: &Value) -> ModelError {
    let code = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok());
    let message = error.get("message").and_then(Value::as_str).unwrap_or("an error");
    ModelError::Http {
        provider: NAME.into(),
        status: code,
        message: format!("the stream reported: {message}"),
        retryable: code.is_none_or(|c| c == 429 || c == 408 || c >= 500),
    }
}

/// One streamed chunk folded into the body a plain request would have answered.
fn fold_chunk(stream: &mut StreamedBody, chunk: &Value, sink: &mut dyn DeltaSink) {
    if !stream.body.is_object() {
        stream.body = json!({"candidates": [{"content": {"role": "model", "parts": []}}]});
    }
    let Some(body) = stream.body.as_object_mut() else {
        return;
    };
    for key in ["usageMetadata", "responseId", "modelVersion", "promptFeedback"] {
        if let Some(v) = chunk.get(key).filter(|v| !v.is_null()) {
            body.insert(key.into(), v.clone());
        }
    }
    if chunk.pointer("/promptFeedback/blockReason").is_some() {
        stream.done = true;
    }
    let Some(candidate) = chunk.pointer("/candidates/0") else {
        return;
    };
    let Some(out) = body
        .get_mut("candidates")
        .and_then(|c| c.get_mut(0))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if let Some(reason) = candidate.get("finishReason").filter(|r| !r.is_null()) {
        out.insert("finishReason".into(), reason.clone());
        stream.done = true;
    }
    let Some(parts) = out
        .get_mut("content")
        .and_then(|c| c.get_mut("parts"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for part in candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        add_part(parts, part, sink);
    }
}

/// A streamed part: a text (or thought) continues the unsigned text part of its kind before it, unless it is an
/// empty signed one (which stays its own part, as Gemini sends it); anything else is a part of its own.
fn add_part(parts: &mut Vec<Value>, part: &Value, sink: &mut dyn DeltaSink) {
    let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
    let signature = part.get("thoughtSignature").and_then(Value::as_str);
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        if !thought && !text.is_empty() {
            sink.delta(Delta::Text(text));
        }
        let continues = |p: &Value| {
            p.get("text").is_some()
                && p.get("thoughtSignature").is_none()
                && (p.get("thought").and_then(Value::as_bool) == Some(true)) == thought
        };
        let own = text.is_empty() && signature.is_some();
        if let (false, Some(last)) = (own, parts.last_mut().filter(|p| continues(p))) {
            if let Some(Value::String(t)) = last.get_mut("text") {
                t.push_str(text);
            }
            if let (Some(s), Some(o)) = (signature, last.as_object_mut()) {
                o.insert("thoughtSignature".into(), s.into());
            }
            return;
        }
    } else if let Some(call) = part.get("functionCall") {
        let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
        let args = call.get("args").map(Value::to_string).unwrap_or_default();
        sink.delta(Delta::ToolCall {
            id: call.get("id").and_then(Value::as_str).unwrap_or_default(),
            name,
            input: &args,
        });
    }
    parts.push(part.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nothing;
    impl DeltaSink for Nothing {
        fn delta(&mut self, _: Delta<'_>) {}
    }

    #[test]
    fn streamed_parts_fold_into_the_plain_parts() {
        let chunks = [
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}], "responseId": "r1"}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo", "thoughtSignature": "s1"}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "More"}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "", "thoughtSignature": "s2"}]}, "finishReason": "STOP"}],
                   "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2, "thoughtsTokenCount": 4}}),
        ];
        let mut stream = StreamedBody::default();
        for c in &chunks {
            fold_chunk(&mut stream, c, &mut Nothing);
        }
        assert!(stream.done);
        let r = response(&stream.body).unwrap();
        assert_eq!(
            r.content,
            vec![
                ContentBlock::Text {
                    text: "Hello".into(),
                    signature: Some("s1".into())
                },
                ContentBlock::text("More"),
                ContentBlock::Text {
                    text: String::new(),
                    signature: Some("s2".into())
                },
            ]
        );
        assert_eq!(r.usage.map(|u| (u.input_tokens, u.output_tokens)), Some((3, 6)));
    }

    #[test]
    fn finish_reasons_and_a_blocked_prompt() {
        let with =
            |reason: &str| json!({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]});
        assert_eq!(
            response(&with("MAX_TOKENS")).unwrap().stop_reason,
            Some(StopReason::MaxTokens)
        );
        assert_eq!(
            response(&with("SAFETY")).unwrap().stop_reason,
            Some(StopReason::ContentFilter)
        );
        assert_eq!(
            response(&with("RECITATION")).unwrap().stop_reason,
            Some(StopReason::Recitation)
        );
        let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}});
        assert_eq!(response(&blocked).unwrap().stop_reason, Some(StopReason::PromptBlocked));
        // An abnormal end is not an answer, even with calls in it: none of them may run.
        for reason in [
            "MALFORMED_FUNCTION_CALL",
            "UNEXPECTED_TOOL_CALL",
            "TOO_MANY_TOOL_CALLS",
            "OTHER",
            "LANGUAGE",
            "SOMETHING_NEW",
        ] {
            let body = json!({"candidates": [{"content": {"parts": [{"text": "half"}, {"functionCall": {"name": "pay", "args": {}}}]}, "finishReason": reason}],
                "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2}});
            match response(&body) {
                Err(ModelError::Stopped {
                    reason: StopReason::Other(r),
                    text,
                    usage,
                }) => {
                    assert_eq!(r, reason.to_ascii_lowercase());
                    assert_eq!(text, "half");
                    assert_eq!(usage.map(|u| u.input_tokens), Some(4));
                }
                other => panic!("{reason}: {other:?}"),
            }
        }
    }
}
