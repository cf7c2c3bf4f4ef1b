//! Models: a JS function or script as the core's [`Model`], and the providers `anthropic(...)`,
//! `openai(...)`, `workersAI(...)` — their options read once by the core into a spec (a frozen JS object
//! the front keeps out of reach), from which each call builds the Rust provider.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Array, Function};
use serde::Deserialize;
#[cfg(feature = "js-providers")]
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::agent::call_js;
#[cfg(feature = "js-providers")]
use super::convert::{agent_error, string_of};
use super::convert::{config_error, fields, get, json_text, model_error, to_js};
use super::glue::{append_messages, describe, error_message, error_name, model_request};
#[cfg(feature = "js-providers")]
use crate::provider::anthropic::Anthropic;
#[cfg(feature = "js-providers")]
use crate::provider::gemini::Gemini;
#[cfg(feature = "js-providers")]
use crate::provider::openai::OpenAi;
#[cfg(feature = "js-providers")]
use crate::provider::responses::OpenAiResponses;
#[cfg(feature = "js-providers")]
use crate::provider::{FetchClient, WorkersAi};
use crate::{
    DeltaSink, DynModel, Message, Model, ModelError, ModelRequest, ModelResponse, ScriptedModel, ToolDefinition,
};

/// What answers a JS model's requests: a function, or a script (`scriptedModel([...])`).
enum Callee {
    Function(Function),
    Script(Array),
}

/// A JS model for one run: the conversation mirrored as JS objects, grown by the new messages only.
pub(super) struct JsModel {
    callee: Callee,
    tools: JsValue,
    system: JsValue,
    /// `system` as Rust reads it: a request whose system text differs (a summary follows the instructions) is
    /// shown its own.
    system_text: Option<String>,
    mirror: Rc<RefCell<Mirror>>,
    thrown: Rc<RefCell<Option<JsValue>>>,
    /// `{ signal }`, the second argument of a model function, when the call has a signal.
    context: Option<JsValue>,
    /// The model function's `provider` and `modelId` (as AI SDK models name themselves), for its spans.
    #[cfg(feature = "js-telemetry")]
    info: (String, String),
}

/// JS objects equal to the run's first `synced` messages.
pub(super) struct Mirror {
    array: Array,
    synced: usize,
}

impl Mirror {
    /// Starts the mirror from `messages`, JS's own parse of the text of the checkpoint the run resumes — when
    /// the core read that text's messages exactly as written ([`crate::Decoded::messages_as_written`]), so
    /// they are the run's first messages, not a second copy written out of Rust and parsed again.
    pub(super) fn seed(&mut self, messages: Array) {
        self.synced = messages.length() as usize;
        self.array = messages;
    }
}

impl Default for Mirror {
    fn default() -> Self {
        Mirror {
            array: Array::new(),
            synced: 0,
        }
    }
}

impl JsModel {
    /// The model of agent spec `spec` (`spec.model`, or `spec.builtin.script`), shown `spec.tools` and
    /// `spec.system` (the caller's own JS string, not copied out of Rust on every call).
    pub(super) fn new(
        spec: &JsValue,
        thrown: Rc<RefCell<Option<JsValue>>>,
        mirror: Rc<RefCell<Mirror>>,
        signal: Option<&JsValue>,
    ) -> Self {
        let script = get(&get(spec, "builtin"), "script");
        let callee = if Array::is_array(&script) {
            Callee::Script(script.unchecked_into())
        } else {
            Callee::Function(get(spec, "model").unchecked_into())
        };
        #[cfg(feature = "js-telemetry")]
        let info = match &callee {
            Callee::Script(_) => ("scripted".to_owned(), "scripted".to_owned()),
            Callee::Function(f) => {
                let text = |key| get(f, key).as_string().unwrap_or_default();
                (text("provider"), text("modelId"))
            }
        };
        let mut model = Self::with(callee, get(spec, "tools"), get(spec, "system"), thrown, mirror);
        model.context = signal.map(|s| fields(&[("signal", s.clone())]));
        #[cfg(feature = "js-telemetry")]
        {
            model.info = info;
        }
        model
    }

    fn with(
        callee: Callee,
        tools: JsValue,
        system: JsValue,
        thrown: Rc<RefCell<Option<JsValue>>>,
        mirror: Rc<RefCell<Mirror>>,
    ) -> Self {
        JsModel {
            callee,
            tools,
            system_text: system.as_string(),
            system: if system.is_string() { system } else { JsValue::UNDEFINED },
            mirror,
            thrown,
            context: None,
            #[cfg(feature = "js-telemetry")]
            info: (String::new(), String::new()),
        }
    }

    /// The run's messages as JS objects (a fresh array; the objects are shared with earlier requests). The
    /// request says how many leading messages are as in the previous one: the mirror keeps that many and
    /// takes the rest anew.
    fn messages(&self, request: &ModelRequest<'_>) -> Array {
        let mut m = self.mirror.borrow_mut();
        let messages = request.messages;
        let keep = m.synced.min(request.unchanged).min(messages.len());
        if keep < m.synced {
            m.array.set_length(u32::try_from(keep).unwrap_or(0));
            m.synced = keep;
        }
        let added = messages
            .get(m.synced..)
            .filter(|a| !a.is_empty())
            .and_then(|a| crate::json::to_string(a).ok());
        m.synced = messages.len();
        append_messages(&m.array, added.as_deref())
    }

    fn failed(&self, error: JsValue) -> ModelError {
        let failure = ModelError::Failed {
            name: error_name(&error),
            message: error_message(&error),
        };
        *self.thrown.borrow_mut() = Some(error);
        failure
    }

    fn js_request(&self, request: &ModelRequest<'_>) -> JsValue {
        // A summary call is shown no tools.
        let tools = if request.tools.is_empty() {
            Array::new().into()
        } else {
            self.tools.clone()
        };
        if request.system == self.system_text.as_deref() {
            return model_request(&self.system, &self.messages(request), &tools);
        }
        let system = request.system.map_or(JsValue::UNDEFINED, JsValue::from_str);
        model_request(&system, &self.messages(request), &tools)
    }

    /// A model function that writes a summarizing compaction's summaries (`compaction.summarize.model`): shown no
    /// tools, and the request's own system text.
    #[cfg(feature = "js-summaries")]
    pub(super) fn summarizer(f: JsValue, thrown: Rc<RefCell<Option<JsValue>>>, signal: Option<&JsValue>) -> Self {
        let mut model = Self::with(
            Callee::Function(f.unchecked_into()),
            Array::new().into(),
            JsValue::UNDEFINED,
            thrown,
            Rc::new(RefCell::new(Mirror::default())),
        );
        model.context = signal.map(|s| fields(&[("signal", s.clone())]));
        model
    }
}

/// A model's answer (an object, or a string for a final text) as a [`ModelResponse`].
fn response_of(response: &JsValue) -> Result<ModelResponse, ModelError> {
    if let Some(text) = response.as_string() {
        return Ok(ModelResponse::text(text));
    }
    let invalid = |problem: String| ModelError::InvalidResponse {
        path: String::new(),
        problem,
    };
    match json_text(response) {
        Ok(Some(text)) if response.is_object() => ModelResponse::from_json(&text),
        Ok(_) => Err(invalid(format!(
            "expected an object {{ content, usage? }}, got {}",
            describe(response)
        ))),
        Err(e) => Err(invalid(format!("not JSON-serializable: {e}"))),
    }
}

impl Model for JsModel {
    #[cfg(feature = "js-telemetry")]
    fn info(&self) -> crate::ModelInfo<'_> {
        crate::ModelInfo::new(&self.info.0, &self.info.1)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + 'a {
        async move {
            let response = match &self.callee {
                Callee::Function(f) => {
                    let r = call_js(f, &self.js_request(&request), self.context.as_ref())
                        .await
                        .map_err(|e| self.failed(e))?;
                    if r.is_string() {
                        // A model function answers with an object; only scripts may use plain strings.
                        return Err(ModelError::InvalidResponse {
                            path: String::new(),
                            problem: "expected an object { content, usage? }, got string".into(),
                        });
                    }
                    r
                }
                Callee::Script(script) => {
                    let turn = ScriptedModel::turn_of(request.messages);
                    if turn >= script.length() as usize {
                        return Err(ModelError::ScriptExhausted {
                            len: script.length() as usize,
                            turn: turn.saturating_add(1),
                        });
                    }
                    let entry = script.get(u32::try_from(turn).unwrap_or(u32::MAX));
                    if entry.is_function() {
                        call_js(&entry, &self.js_request(&request), self.context.as_ref())
                            .await
                            .map_err(|e| self.failed(e))?
                    } else {
                        entry
                    }
                }
            };
            response_of(&response)
        }
    }

    /// A script's answers play back as deltas (text word by word); a model function's arrive whole.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + 'a {
        async move {
            let response = self.complete(request).await?;
            if matches!(self.callee, Callee::Script(_)) {
                response.stream_to(sink);
            }
            Ok(response)
        }
    }
}

/// The built-in model a spec describes (`None`: a JS model, or a script); a variant without the providers has
/// none.
#[cfg(not(feature = "js-providers"))]
pub(super) fn model_of(spec: &JsValue, _call_signal: Option<&JsValue>) -> Result<Option<Box<dyn DynModel>>, JsValue> {
    match get(spec, "kind").as_string().as_deref() {
        None | Some("scripted") => Ok(None),
        Some(other) => Err(config_error(format!(
            "this variant of the package has no provider {other:?}"
        ))),
    }
}

/// The built-in model a spec describes (`None`: a JS model); its requests stop with its own signal or the
/// call's.
#[cfg(feature = "js-providers")]
pub(super) fn model_of(spec: &JsValue, call_signal: Option<&JsValue>) -> Result<Option<Box<dyn DynModel>>, JsValue> {
    let kind = get(spec, "kind").as_string();
    let options = || -> Result<Value, JsValue> {
        Ok(super::convert::parse_json(
            &string_of(&get(spec, "options")).unwrap_or_default(),
        ))
    };
    // The provider's own signal and the call's both stop its requests.
    let client = || {
        [get(spec, "signal"), call_signal.cloned().unwrap_or(JsValue::UNDEFINED)]
            .into_iter()
            .filter(JsValue::is_object)
            .fold(FetchClient::default(), FetchClient::also_stopped_by)
    };
    let model: Box<dyn DynModel> = match kind.as_deref() {
        Some("anthropic") => Box::new(
            Anthropic::from_options(options()?)
                .map_err(|e| agent_error(e, None, None))?
                .model(client()),
        ),
        Some("openai") => Box::new(
            OpenAi::from_options(options()?)
                .map_err(|e| agent_error(e, None, None))?
                .model(client()),
        ),
        Some("gemini") => Box::new(
            Gemini::from_options(options()?)
                .map_err(|e| agent_error(e, None, None))?
                .model(client()),
        ),
        Some("openai-responses") => Box::new(
            OpenAiResponses::from_options(options()?)
                .map_err(|e| agent_error(e, None, None))?
                .model(client()),
        ),
        Some("workers-ai") => {
            Box::new(WorkersAi::from_options(get(spec, "binding"), options()?).map_err(|e| agent_error(e, None, None))?)
        }
        _ => return Ok(None),
    };
    Ok(Some(model))
}

#[cfg(feature = "js-providers")]
/// `providerSpec(kind, options, extra)`: `anthropic(options)` and `openai(options)` (options as JSON text,
/// `extra` the AbortSignal) or `workersAI(binding, options)`, read and checked now; returns the spec.
#[wasm_bindgen(js_name = providerSpec)]
pub fn provider_spec(kind: &str, options: JsValue, extra: JsValue) -> Result<JsValue, JsValue> {
    let spec = match kind {
        "anthropic" | "openai" | "openai-responses" | "gemini" => {
            fields(&[("kind", kind.into()), ("options", options), ("signal", extra)])
        }
        "workers-ai" => {
            if !get(&extra, "run").is_function() {
                return Err(config_error(
                    "workersAI(binding, options): expected the AI binding (env.AI)".into(),
                ));
            }
            fields(&[("kind", kind.into()), ("binding", extra), ("options", options)])
        }
        other => return Err(config_error(format!("unknown provider {other:?}"))),
    };
    model_of(&spec, None)?;
    Ok(spec)
}

/// The request as a model function receives it.
#[derive(Deserialize)]
struct OwnedRequest {
    #[serde(default)]
    system: Option<String>,
    messages: Vec<Message>,
    #[serde(default)]
    tools: Vec<ToolDefinition>,
}

/// `modelComplete(spec, request)`: one call of a built-in model used as a plain function.
#[wasm_bindgen(js_name = modelComplete)]
pub fn model_complete(spec: JsValue, request: JsValue) -> js_sys::Promise {
    future_to_promise(async move {
        let text = json_text(&request).ok().flatten().unwrap_or_default();
        let owned: OwnedRequest = serde_json::from_str(&text).map_err(|e| {
            model_error(ModelError::InvalidResponse {
                path: "request".into(),
                problem: format!("not a model request: {e}"),
            })
        })?;
        let req = ModelRequest::new(&owned.messages, &owned.tools);
        let req = match owned.system.as_deref() {
            Some(s) => req.with_system(s),
            None => req,
        };
        let thrown = Rc::new(RefCell::new(None));
        let script = get(&spec, "script");
        let model: Box<dyn DynModel> = match model_of(&spec, None)? {
            Some(m) => m,
            None => Box::new(JsModel::with(
                Callee::Script(script.unchecked_into()),
                get(&request, "tools"),
                get(&request, "system"),
                thrown.clone(),
                Rc::default(),
            )),
        };
        match model.complete(req).await {
            Ok(response) => Ok(to_js(&response)),
            Err(e) => Err(thrown.borrow_mut().take().unwrap_or_else(|| model_error(e))),
        }
    })
}

/// `scriptedSpec(responses)`: a script for `scriptedModel(responses)`.
#[wasm_bindgen(js_name = scriptedSpec)]
pub fn scripted_spec(responses: JsValue) -> Result<JsValue, JsValue> {
    if !Array::is_array(&responses) {
        return Err(config_error(format!(
            "scriptedModel(responses): expected an array, got {}",
            describe(&responses)
        )));
    }
    let script = Array::from(&responses).slice(0, Array::from(&responses).length());
    Ok(fields(&[
        ("kind", "scripted".into()),
        ("script", js_sys::Object::freeze(&script).into()),
    ]))
}
