//! `anthropic(...)`, `openai(...)`, `workersAI(...)`: each returns a model function
//! `(request) => Promise<response>` backed by the Rust providers, so it composes like any other model.

use std::rc::Rc;

use js_sys::{Function, Object, Promise};
use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use super::convert::{config_error, get, integer_option, json_text, model_error, string_option, to_js};
use super::glue::error_message;
use crate::error::ModelError;
use crate::message::ContentBlock;
use crate::message::Message;
use crate::model::ModelResponse;
use crate::model::{Model, ModelRequest, ToolDefinition};
use crate::provider::anthropic::Anthropic;
use crate::provider::openai::{OpenAi, chat_body, chat_response, tool_use, usage};
use crate::provider::{FetchClient, HttpModel, Retry, WireFormat};

/// The request as the model function receives it.
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

/// A JS function calling `model` with each request.
fn as_function<M: Model + 'static>(model: M) -> JsValue {
    let model = Rc::new(model);
    let f = Closure::<dyn FnMut(JsValue) -> Promise>::new(move |request: JsValue| {
        let model = Rc::clone(&model);
        future_to_promise(async move {
            let owned = decode(&request).map_err(model_error)?;
            let req = ModelRequest {
                system: owned.system.as_deref(),
                messages: &owned.messages,
                tools: &owned.tools,
            };
            model.complete(req).await.map(|r| to_js(&r)).map_err(model_error)
        })
    });
    f.into_js_value()
}

struct Common {
    api_key: String,
    model: String,
    base_url: Option<String>,
    max_tokens: Option<u32>,
    headers: Vec<(String, String)>,
    retry: Retry,
    timeout_ms: Option<u64>,
    signal: Option<JsValue>,
}

/// A string option that must be present when `needed`.
fn required(options: &JsValue, key: &str, what: &str, needed: bool) -> Result<Option<String>, JsValue> {
    match string_option(options, key, what)? {
        None if needed => Err(config_error(format!("{what}: {key} is required (a string)"))),
        v => Ok(v),
    }
}

/// The endpoint settings both wire formats share.
fn endpoint(c: &Common, base_url: &mut String, headers: &mut Vec<(String, String)>, timeout: &mut std::time::Duration) {
    if let Some(url) = &c.base_url {
        base_url.clone_from(url);
    }
    if let Some(ms) = c.timeout_ms {
        *timeout = std::time::Duration::from_millis(ms);
    }
    headers.clone_from(&c.headers);
}

fn common(options: &JsValue, what: &str, key_required: bool) -> Result<Common, JsValue> {
    if !options.is_object() {
        return Err(config_error(format!(
            "{what}: expected an options object {{ apiKey, model, ... }}"
        )));
    }
    let mut headers = Vec::new();
    let h = get(options, "headers");
    if h.is_object() {
        for entry in Object::entries(h.unchecked_ref()).iter() {
            let pair: js_sys::Array = entry.unchecked_into();
            let value = pair
                .get(1)
                .as_string()
                .ok_or_else(|| config_error(format!("{what}: header values must be strings")))?;
            headers.push((pair.get(0).as_string().unwrap_or_default(), value));
        }
    }
    let mut retry = Retry::default();
    if let Some(n) = integer_option(options, "maxRetries", what, 0)? {
        retry = retry.max_retries(u32::try_from(n).unwrap_or(u32::MAX));
    }
    let signal = Some(get(options, "signal")).filter(|s| s.is_object());
    Ok(Common {
        api_key: required(options, "apiKey", what, key_required)?.unwrap_or_default(),
        model: required(options, "model", what, true)?.unwrap_or_default(),
        base_url: string_option(options, "baseURL", what)?,
        max_tokens: integer_option(options, "maxTokens", what, 1)?.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        headers,
        retry,
        timeout_ms: integer_option(options, "timeoutMs", what, 0)?,
        signal,
    })
}

fn http_model<W: WireFormat>(wire: W, c: &Common) -> HttpModel<W, FetchClient> {
    let client = c
        .signal
        .clone()
        .map_or_else(FetchClient::default, FetchClient::with_signal);
    HttpModel::new(wire, client, c.api_key.clone()).retry(c.retry)
}

/// `anthropic({ apiKey, model, baseURL?, maxTokens?, headers?, dangerouslyAllowBrowser?, maxRetries?, timeoutMs?, signal? })`
#[wasm_bindgen]
pub fn anthropic(options: JsValue) -> Result<JsValue, JsValue> {
    let c = common(&options, "anthropic(options)", true)?;
    let mut wire = Anthropic::new(c.api_key.clone(), c.model.clone());
    endpoint(&c, &mut wire.base_url, &mut wire.headers, &mut wire.timeout);
    if let Some(max) = c.max_tokens {
        wire.max_tokens = max;
    }
    wire.browser_access = get(&options, "dangerouslyAllowBrowser").as_bool().unwrap_or(false);
    Ok(as_function(http_model(wire, &c)))
}

/// `openai({ apiKey?, model, baseURL?, maxTokens?, headers?, maxRetries?, timeoutMs?, signal? })`: OpenAI and
/// every server speaking Chat Completions.
#[wasm_bindgen]
pub fn openai(options: JsValue) -> Result<JsValue, JsValue> {
    let c = common(&options, "openai(options)", false)?;
    let mut wire = OpenAi::new(c.api_key.clone(), c.model.clone());
    endpoint(&c, &mut wire.base_url, &mut wire.headers, &mut wire.timeout);
    wire.max_tokens = c.max_tokens;
    Ok(as_function(http_model(wire, &c)))
}

#[wasm_bindgen]
extern "C" {
    type AiBinding;
    #[wasm_bindgen(method, catch)]
    fn run(this: &AiBinding, model: &str, inputs: &JsValue) -> Result<JsValue, JsValue>;
}

/// Workers AI through its binding: a Chat Completions body in, its own shape (or Chat Completions') out.
struct WorkersAi {
    binding: AiBinding,
    model: String,
}

impl Model for WorkersAi {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + crate::platform::MaybeSend + 'a {
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
            if body.get("choices").is_some() {
                return chat_response(&body);
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
            Ok(ModelResponse {
                content,
                usage: usage(&body),
            })
        }
    }
}

/// `workersAI(env.AI, { model })`: the Workers AI binding, for Workers without an API key.
#[wasm_bindgen(js_name = workersAI)]
pub fn workers_ai(binding: JsValue, options: JsValue) -> Result<JsValue, JsValue> {
    if !get(&binding, "run").is_instance_of::<Function>() {
        return Err(config_error(
            "workersAI(binding, options): expected the AI binding (env.AI)".into(),
        ));
    }
    let model = required(&options, "model", "workersAI(binding, options)", true)?.unwrap_or_default();
    Ok(as_function(WorkersAi {
        binding: binding.unchecked_into(),
        model,
    }))
}
