//! `anthropic(...)`, `openai(...)`, `workersAI(...)`: validated once into a spec (a frozen JS object the
//! package's front keeps out of reach), from which each call builds the Rust provider. An agent given one
//! of these models calls the Rust provider directly; called as a plain function, it works the same.

use js_sys::{Array, Function, Object, Promise};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use super::convert::{config_error, fields, get, integer_option, json_text, model_error, string_option, to_js};
use super::glue::{error_message, freeze};
use crate::error::ModelError;
use crate::message::{ContentBlock, Message};
use crate::model::{Model, ModelRequest, ModelResponse, ToolDefinition};
use crate::platform::MaybeSend;
use crate::provider::anthropic::Anthropic;
use crate::provider::openai::{OpenAi, chat_body, chat_response, tool_use, usage};
use crate::provider::{FetchClient, HttpModel, Retry, WireFormat};

/// The request as a model function receives it.
#[derive(Deserialize)]
struct OwnedRequest {
    #[serde(default)]
    system: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    tools: Vec<ToolDefinition>,
}

fn decode(request: &JsValue) -> Result<OwnedRequest, ModelError> {
    let text = json_text(request).ok().flatten().unwrap_or_default();
    serde_json::from_str(&text).map_err(|e| ModelError::InvalidResponse {
        path: "request".into(),
        problem: format!("not a model request: {e}"),
    })
}

/// A string option that must be present when `needed`.
fn required(options: &JsValue, key: &'static str, what: &str, needed: bool) -> Result<Option<String>, JsValue> {
    match string_option(options, key, what)? {
        None if needed => Err(config_error(format!("{what}: {key} is required (a string)"))),
        v => Ok(v),
    }
}

fn http_spec(kind: &str, options: &JsValue) -> Result<JsValue, JsValue> {
    let what = format!("{kind}(options)");
    if !options.is_object() {
        return Err(config_error(format!(
            "{what}: expected an options object {{ apiKey, model, ... }}"
        )));
    }
    let headers = Array::new();
    let h = get(options, "headers");
    if h.is_object() {
        for entry in Object::entries(h.unchecked_ref()).iter() {
            let pair: Array = entry.unchecked_into();
            if pair.get(1).as_string().is_none() {
                return Err(config_error(format!("{what}: header values must be strings")));
            }
            headers.push(&pair);
        }
    } else if !h.is_undefined() && !h.is_null() {
        return Err(config_error(format!("{what}.headers: expected an object of strings")));
    }
    let api_key = required(options, "apiKey", &what, kind == "anthropic")?;
    let model = required(options, "model", &what, true)?;
    let base_url = string_option(options, "baseURL", &what)?;
    let max_tokens = integer_option(options, "maxTokens", &what, 1)?;
    let max_retries = integer_option(options, "maxRetries", &what, 0)?;
    let timeout_ms = integer_option(options, "timeoutMs", &what, 0)?;
    // Anthropic extended thinking: `thinking: { budgetTokens }` (at least 1024, below maxTokens).
    let thinking = match get(options, "thinking") {
        t if t.is_undefined() || t.is_null() || kind != "anthropic" => None,
        t => {
            let budget = integer_option(&t, "budgetTokens", &format!("{what}.thinking"), 1024)?.ok_or_else(|| {
                config_error(format!(
                    "{what}.thinking: expected {{ budgetTokens }} (an integer, at least 1024)"
                ))
            })?;
            if budget >= max_tokens.unwrap_or(4096) {
                return Err(config_error(format!(
                    "{what}.thinking.budgetTokens: must be below maxTokens ({})",
                    max_tokens.unwrap_or(4096)
                )));
            }
            Some(budget)
        }
    };
    let num = |n: Option<u64>| n.map_or(JsValue::UNDEFINED, |n| JsValue::from_f64(n as f64));
    let opt = |s: Option<String>| s.map_or(JsValue::UNDEFINED, JsValue::from);
    let signal = Some(get(options, "signal"))
        .filter(|s| s.is_object())
        .unwrap_or(JsValue::UNDEFINED);
    Ok(freeze(&fields(&[
        ("kind", kind.into()),
        ("apiKey", opt(api_key)),
        ("model", opt(model)),
        ("baseURL", opt(base_url)),
        ("maxTokens", num(max_tokens)),
        ("maxRetries", num(max_retries)),
        ("timeoutMs", num(timeout_ms)),
        ("thinkingBudget", num(thinking)),
        ("headers", headers.into()),
        ("signal", signal),
        (
            "browserAccess",
            get(options, "dangerouslyAllowBrowser")
                .as_bool()
                .unwrap_or(false)
                .into(),
        ),
    ])))
}

/// `providerSpec(kind, a, b)`: checks a provider's options and returns its spec. `anthropic(options)`,
/// `openai(options)`, `workersAI(binding, options)`.
#[wasm_bindgen(js_name = providerSpec)]
pub fn provider_spec(kind: &str, a: JsValue, b: JsValue) -> Result<JsValue, JsValue> {
    match kind {
        "anthropic" | "openai" => http_spec(kind, &a),
        "workers-ai" => {
            if !get(&a, "run").is_instance_of::<Function>() {
                return Err(config_error(
                    "workersAI(binding, options): expected the AI binding (env.AI)".into(),
                ));
            }
            let model = required(&b, "model", "workersAI(binding, options)", true)?.unwrap_or_default();
            Ok(freeze(&fields(&[
                ("kind", kind.into()),
                ("binding", a),
                ("model", model.into()),
            ])))
        }
        other => Err(config_error(format!("unknown provider {other:?}"))),
    }
}

/// A provider built from its spec, for one call or one run.
pub(crate) enum Provider {
    Anthropic(HttpModel<Anthropic, FetchClient>),
    OpenAi(HttpModel<OpenAi, FetchClient>),
    WorkersAi(WorkersAi),
}

fn text(spec: &JsValue, key: &'static str) -> Option<String> {
    get(spec, key).as_string()
}

fn number(spec: &JsValue, key: &'static str) -> Option<u64> {
    get(spec, key).as_f64().map(|n| n as u64)
}

fn http_model<W: WireFormat>(wire: W, spec: &JsValue, secret: String) -> HttpModel<W, FetchClient> {
    let signal = get(spec, "signal");
    let client = if signal.is_object() {
        FetchClient::with_signal(signal)
    } else {
        FetchClient::default()
    };
    let mut retry = Retry::default();
    if let Some(n) = number(spec, "maxRetries") {
        retry = retry.max_retries(u32::try_from(n).unwrap_or(u32::MAX));
    }
    HttpModel::new(wire, client, secret).retry(retry)
}

fn headers(spec: &JsValue) -> Vec<(String, String)> {
    Array::from(&get(spec, "headers"))
        .iter()
        .filter_map(|pair| {
            let pair = Array::from(&pair);
            Some((pair.get(0).as_string()?, pair.get(1).as_string()?))
        })
        .collect()
}

impl Provider {
    /// The provider a spec describes; `None` when it is not a provider spec.
    pub(crate) fn from_spec(spec: &JsValue) -> Option<Self> {
        let kind = text(spec, "kind")?;
        let key = text(spec, "apiKey").unwrap_or_default();
        let model = text(spec, "model").unwrap_or_default();
        let timeout = number(spec, "timeoutMs").map(std::time::Duration::from_millis);
        match kind.as_str() {
            "anthropic" => {
                let mut wire = Anthropic::new(key.clone(), model);
                if let Some(url) = text(spec, "baseURL") {
                    wire.base_url = url;
                }
                if let Some(max) = number(spec, "maxTokens") {
                    wire.max_tokens = u32::try_from(max).unwrap_or(u32::MAX);
                }
                wire.headers = headers(spec);
                wire.browser_access = get(spec, "browserAccess").as_bool().unwrap_or(false);
                wire.thinking_budget = number(spec, "thinkingBudget").map(|n| u32::try_from(n).unwrap_or(u32::MAX));
                if let Some(t) = timeout {
                    wire.timeout = t;
                }
                Some(Provider::Anthropic(http_model(wire, spec, key)))
            }
            "openai" => {
                let mut wire = OpenAi::new(key.clone(), model);
                if let Some(url) = text(spec, "baseURL") {
                    wire.base_url = url;
                }
                wire.max_tokens = number(spec, "maxTokens").map(|n| u32::try_from(n).unwrap_or(u32::MAX));
                wire.headers = headers(spec);
                if let Some(t) = timeout {
                    wire.timeout = t;
                }
                Some(Provider::OpenAi(http_model(wire, spec, key)))
            }
            "workers-ai" => Some(Provider::WorkersAi(WorkersAi {
                binding: get(spec, "binding").unchecked_into(),
                model,
            })),
            _ => None,
        }
    }
}

impl Model for Provider {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        async move {
            match self {
                Provider::Anthropic(m) => m.complete(request).await,
                Provider::OpenAi(m) => m.complete(request).await,
                Provider::WorkersAi(m) => m.complete(request).await,
            }
        }
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn crate::model::DeltaSink,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        async move {
            match self {
                Provider::Anthropic(m) => m.stream(request, sink).await,
                Provider::OpenAi(m) => m.stream(request, sink).await,
                Provider::WorkersAi(m) => m.stream(request, sink).await,
            }
        }
    }
}

/// `providerComplete(spec, request)`: one model call, for a provider used as a plain function.
#[wasm_bindgen(js_name = providerComplete)]
pub fn provider_complete(spec: JsValue, request: JsValue) -> Promise {
    future_to_promise(async move {
        let model = Provider::from_spec(&spec).ok_or_else(|| config_error("not a provider spec".into()))?;
        let owned = decode(&request).map_err(model_error)?;
        let req = ModelRequest {
            system: owned.system.as_deref(),
            ..ModelRequest::new(&owned.messages, &owned.tools)
        };
        model.complete(req).await.map(|r| to_js(&r)).map_err(model_error)
    })
}

#[wasm_bindgen]
extern "C" {
    pub(crate) type AiBinding;
    #[wasm_bindgen(method, catch)]
    fn run(this: &AiBinding, model: &str, inputs: &JsValue) -> Result<JsValue, JsValue>;
}

/// Workers AI through its binding: a Chat Completions body in, its own shape (or Chat Completions') out.
pub(crate) struct WorkersAi {
    binding: AiBinding,
    model: String,
}

impl Model for WorkersAi {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let returned = self
            .binding
            .run(&self.model, &to_js(&Value::Object(chat_body(&request))));
        async move {
            let failed = |e: JsValue| ModelError::Http {
                provider: "workers-ai".into(),
                status: None,
                message: error_message(&e),
                retryable: false,
            };
            let output = JsFuture::from(Promise::resolve(&returned.map_err(failed)?))
                .await
                .map_err(failed)?;
            let body: Value =
                serde_json::from_str(&json_text(&output).ok().flatten().unwrap_or_default()).unwrap_or(Value::Null);
            workers_ai_response(&body)
        }
    }

    /// `stream: true`: the binding answers a `ReadableStream` of server-sent events, each
    /// `{ response, tool_calls?, usage? }` (or a Chat Completions chunk), then `[DONE]`. A model that does
    /// not stream answers whole, as without it.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn crate::model::DeltaSink,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let mut inputs = chat_body(&request);
        inputs.insert("stream".into(), Value::Bool(true));
        let returned = self.binding.run(&self.model, &to_js(&Value::Object(inputs)));
        async move {
            let failed = |message: String, retryable: bool| ModelError::Http {
                provider: "workers-ai".into(),
                status: None,
                message,
                retryable,
            };
            let output = JsFuture::from(Promise::resolve(
                &returned.map_err(|e| failed(error_message(&e), false))?,
            ))
            .await
            .map_err(|e| failed(error_message(&e), false))?;
            if !get(&output, "getReader").is_function() {
                let body = json_text(&output).ok().flatten().unwrap_or_default();
                return workers_ai_response(&serde_json::from_str(&body).unwrap_or(Value::Null));
            }
            let mut reader = WorkersAiStream {
                parser: crate::provider::sse::SseParser::default(),
                chat: crate::provider::StreamedBody::default(),
                own: serde_json::json!({"response": ""}),
                done: false,
                error: None,
                sink,
            };
            crate::provider::fetch::read_stream(&output, &mut reader)
                .await
                .map_err(|m| failed(format!("the stream broke: {m}"), true))?;
            let mut events = Vec::new();
            reader.parser.finish(&mut events);
            reader.take(events);
            if let Some(e) = reader.error {
                return Err(e);
            }
            if !reader.done {
                return Err(failed("the stream ended before the answer was complete".into(), true));
            }
            if !reader.chat.body.is_null() {
                return chat_response(&reader.chat.body);
            }
            workers_ai_response(&reader.own)
        }
    }
}

/// A Workers AI stream folded into the answer it would have given whole.
struct WorkersAiStream<'s> {
    parser: crate::provider::sse::SseParser,
    /// Chat Completions chunks (models that answer in that shape).
    chat: crate::provider::StreamedBody,
    /// Workers AI's own shape: `{ response, tool_calls, usage }`.
    own: Value,
    done: bool,
    error: Option<ModelError>,
    sink: &'s mut dyn crate::model::DeltaSink,
}

impl WorkersAiStream<'_> {
    fn take(&mut self, events: Vec<crate::provider::sse::SseEvent>) {
        for event in events {
            if let Err(e) = self.event(&event) {
                self.error.get_or_insert(e);
            }
        }
    }

    fn event(&mut self, event: &crate::provider::sse::SseEvent) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk = crate::provider::event_json("workers-ai", event)?;
        if chunk.get("choices").is_some() {
            return crate::provider::openai::chat_stream_chunk("workers-ai", &mut self.chat, &chunk, &mut *self.sink);
        }
        let Some(own) = self.own.as_object_mut() else {
            return Ok(());
        };
        if let Some(piece) = chunk.get("response").and_then(Value::as_str).filter(|p| !p.is_empty()) {
            if let Some(Value::String(text)) = own.get_mut("response") {
                text.push_str(piece);
            }
            self.sink.delta(crate::model::Delta::Text(piece));
        }
        for call in chunk.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let field = |k: &str| call.get(k).and_then(Value::as_str).unwrap_or_default();
            let args = call
                .get("arguments")
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned));
            self.sink.delta(crate::model::Delta::ToolCall {
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

impl crate::provider::BodySink for WorkersAiStream<'_> {
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
fn workers_ai_response(body: &Value) -> Result<ModelResponse, ModelError> {
    if body.get("choices").is_some() {
        return chat_response(body);
    }
    let mut content = Vec::new();
    if let Some(text) = body.get("response").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        content.push(ContentBlock::Text { text: text.to_owned() });
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
