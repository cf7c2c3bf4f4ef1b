//! Workers AI through its binding (`env.AI`): no API key and no HTTP of ours. The request is a Chat
//! Completions body; the answer comes in Workers AI's own shape (`{ response, tool_calls, usage }`) or in
//! Chat Completions'. wasm32 only (feature `fetch`), for JS Workers (the npm package's `workersAI`) and Rust
//! Workers alike:
//!
//! ```ignore
//! use resumable_agent::{Agent, provider::WorkersAi};
//! let agent = Agent::builder(WorkersAi::new(env.ai("AI")?, "@cf/meta/llama-3.3-70b-instruct-fp8-fast")).build()?;
//! ```

use std::future::Future;

use js_sys::Promise;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::openai::{chat_body, chat_response, chat_stream_chunk, tool_use, usage};
use super::sse::{SseEvent, SseParser};
use super::{BodySink, StreamedBody, ToolChoice, event_json};

/// The inputs this provider writes itself, and what sets each.
const WRITES: &[(&str, &str)] = &[
    ("messages", "the run"),
    ("tools", "the agent's tools"),
    ("tool_choice", "toolChoice"),
    ("stream", "the run (it streams when watched)"),
];
use crate::message::ContentBlock;
use crate::model::ModelError;
use crate::model::{Delta, DeltaSink, Model, ModelRequest, ModelResponse};
use crate::platform::MaybeSend;

#[wasm_bindgen]
extern "C" {
    /// The binding's one method we call.
    type AiBinding;
    #[wasm_bindgen(method, catch)]
    fn run(this: &AiBinding, model: &str, inputs: &JsValue) -> Result<JsValue, JsValue>;
}

/// A model on Workers AI, called through the Worker's AI binding.
pub struct WorkersAi {
    binding: AiBinding,
    model: String,
    /// Whether the model must call a tool, sent as Chat Completions' `tool_choice` when the request has tools
    /// (a model that does not take it ignores it).
    pub tool_choice: Option<ToolChoice>,
    /// Other inputs sent with every call (`temperature`, `max_tokens`, …); an input this provider writes itself
    /// is not overridden.
    pub extra_inputs: serde_json::Map<String, Value>,
}

impl WorkersAi {
    /// The model `model` (`@cf/…`) through `binding`: `env.ai("AI")?` in a Rust Worker, `env.AI` from JS.
    pub fn new(binding: impl AsRef<JsValue>, model: impl Into<String>) -> Self {
        WorkersAi {
            binding: binding.as_ref().clone().unchecked_into(),
            model: model.into(),
            tool_choice: None,
            extra_inputs: serde_json::Map::new(),
        }
    }

    /// Reads the npm package's `workersAI(binding, { model, toolChoice?, extraBody? })` options for `binding`.
    ///
    /// # Errors
    /// [`AgentError::Config`](crate::AgentError) naming an unknown, missing or wrong option.
    pub fn from_options(binding: impl AsRef<JsValue>, options: Value) -> Result<Self, crate::AgentError> {
        let what = "workersAI(binding, options)";
        let read = || -> Result<WorkersAi, String> {
            let mut o = crate::options::Options::new(
                options,
                what,
                &["model", "toolChoice", "extraBody"],
                &[
                    ("name", "model"),
                    ("tool_choice", "toolChoice"),
                    ("extra_body", "extraBody"),
                ],
            )?;
            let model = o
                .string("model")?
                .ok_or_else(|| format!("{what}: model is required (a string)"))?;
            let mut ai = WorkersAi::new(&binding, model);
            ai.tool_choice = super::options::tool_choice(&mut o)?;
            ai.extra_inputs = super::options::extra_body(&mut o, WRITES)?;
            Ok(ai)
        };
        read().map_err(crate::AgentError::Config)
    }

    /// The inputs of a call: a Chat Completions body, the tool choice and the extra inputs.
    fn inputs(&self, request: &ModelRequest<'_>) -> Result<serde_json::Map<String, Value>, ModelError> {
        let mut inputs = chat_body(request);
        if let (Some(choice), false) = (&self.tool_choice, request.tools.is_empty()) {
            inputs.insert("tool_choice".into(), super::openai::chat_tool_choice(choice));
        }
        if let Some(choice) = &self.tool_choice {
            choice.check(request.tools).map_err(|problem| ModelError::Settings {
                provider: "workers-ai".into(),
                problem,
            })?;
        }
        super::add_extra(&mut inputs, &self.extra_inputs);
        Ok(inputs)
    }

    /// Calls the binding with `inputs` and waits for what it answers.
    async fn call(&self, inputs: serde_json::Map<String, Value>) -> Result<JsValue, ModelError> {
        let failed = |e: JsValue| http_error(message(&e), false);
        let inputs = js_sys::JSON::parse(&Value::Object(inputs).to_string()).map_err(failed)?;
        let returned = self.binding.run(&self.model, &inputs).map_err(failed)?;
        JsFuture::from(Promise::resolve(&returned)).await.map_err(failed)
    }
}

/// A failure of the binding (it has no status code).
fn http_error(message: String, retryable: bool) -> ModelError {
    ModelError::Http {
        provider: "workers-ai".into(),
        status: None,
        message,
        retryable,
    }
}

fn message(e: &JsValue) -> String {
    match e.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.message()),
        None => e.as_string().unwrap_or_else(|| "the AI binding failed".into()),
    }
}

/// A JS value the binding answered, as JSON.
fn json_of(v: &JsValue) -> Value {
    js_sys::JSON::stringify(v)
        .ok()
        .and_then(|s| s.as_string())
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

impl Model for WorkersAi {
    fn info(&self) -> crate::model::ModelInfo<'_> {
        crate::model::ModelInfo::new("cloudflare.workers_ai", &self.model)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let inputs = self.inputs(&request);
        async move { response(&json_of(&self.call(inputs?).await?)) }
    }

    /// `stream: true`: the binding answers a `ReadableStream` of server-sent events, each
    /// `{ response, tool_calls?, usage? }` (or a Chat Completions chunk), then `[DONE]`. A model that does
    /// not stream answers whole, as without it.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let inputs = self.inputs(&request).map(|mut i| {
            i.insert("stream".into(), Value::Bool(true));
            i
        });
        async move {
            let output = self.call(inputs?).await?;
            let readable = js_sys::Reflect::get(&output, &"getReader".into()).is_ok_and(|f| f.is_function());
            if !readable {
                return response(&json_of(&output));
            }
            let mut reader = Folded {
                parser: SseParser::default(),
                chat: StreamedBody::default(),
                own: serde_json::json!({"response": ""}),
                done: false,
                error: None,
                sink,
            };
            super::fetch::read_stream(&output, &mut reader, None)
                .await
                .map_err(|m| http_error(format!("the stream broke: {m}"), true))?;
            let mut events = Vec::new();
            reader.parser.finish(&mut events);
            reader.take(events);
            if let Some(e) = reader.error {
                return Err(e);
            }
            if !reader.done {
                return Err(http_error(
                    "the stream ended before the answer was complete".into(),
                    true,
                ));
            }
            if !reader.chat.body.is_null() {
                return chat_response(&reader.chat.body);
            }
            response(&reader.own)
        }
    }
}

/// A Workers AI stream folded into the answer it would have given whole.
struct Folded<'s> {
    parser: SseParser,
    /// Chat Completions chunks (models that answer in that shape).
    chat: StreamedBody,
    /// Workers AI's own shape: `{ response, tool_calls, usage }`.
    own: Value,
    done: bool,
    error: Option<ModelError>,
    sink: &'s mut dyn DeltaSink,
}

impl Folded<'_> {
    fn take(&mut self, events: Vec<SseEvent>) {
        for event in events {
            if let Err(e) = self.event(&event) {
                self.error.get_or_insert(e);
            }
        }
    }

    fn event(&mut self, event: &SseEvent) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk = event_json("workers-ai", event)?;
        if chunk.get("choices").is_some() {
            return chat_stream_chunk("workers-ai", &mut self.chat, &chunk, &mut *self.sink);
        }
        let Some(own) = self.own.as_object_mut() else {
            return Ok(());
        };
        if let Some(piece) = chunk.get("response").and_then(Value::as_str).filter(|p| !p.is_empty()) {
            if let Some(Value::String(text)) = own.get_mut("response") {
                text.push_str(piece);
            }
            self.sink.delta(Delta::Text(piece));
        }
        for call in chunk.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let field = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or_default();
            let args = call
                .get("arguments")
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned));
            self.sink.delta(Delta::ToolCall {
                id: field("id"),
                name: field("name"),
                input: args.as_deref().unwrap_or_default(),
            });
            if let Some(calls) = own
                .entry("tool_calls")
                .or_insert_with(|| serde_json::json!([]))
                .as_array_mut()
            {
                calls.push(call.clone());
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            own.insert("usage".into(), usage.clone());
        }
        Ok(())
    }
}

impl BodySink for Folded<'_> {
    fn chunk(&mut self, bytes: &[u8]) -> bool {
        let mut events = Vec::new();
        if let Err(problem) = self.parser.push(bytes, &mut events) {
            self.error = Some(ModelError::InvalidResponse {
                path: String::new(),
                problem,
            });
            return false;
        }
        self.take(events);
        self.error.is_none()
    }
}

/// Our response from a Workers AI answer: its own `{ response, tool_calls, usage }` or Chat Completions'.
fn response(body: &Value) -> Result<ModelResponse, ModelError> {
    if body.get("choices").is_some() {
        return chat_response(body);
    }
    let mut content = Vec::new();
    if let Some(text) = body.get("response").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        content.push(ContentBlock::text(text));
    }
    for (i, call) in body
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        content.push(tool_use(call.get("id"), call.get("name"), call.get("arguments"), i));
    }
    if content.is_empty() && body.get("response").is_none() {
        return Err(ModelError::InvalidResponse {
            path: String::new(),
            problem: "Workers AI answered without response or tool_calls".into(),
        });
    }
    let mut response = ModelResponse::new(content);
    response.usage = usage(body);
    Ok(response)
}
