//! JS tools and models as the core's `Tool` and `Model`.

use std::cell::RefCell;
use std::future::Future;

use js_sys::{Array, Function, Object, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::JsAgentInner;
use super::convert::{fields, get, json_text, set, to_js};
use super::glue::{error_message, error_name, is_interrupt_error};
use crate::error::ModelError;
use crate::model::{Model, ModelRequest, ModelResponse, ToolDefinition};
use crate::platform::MaybeSend;
use crate::tool::{InterruptError, Tool, ToolContext, ToolError};

pub(crate) struct JsTool {
    pub(crate) definition: ToolDefinition,
    pub(crate) handle: Function,
}

fn classify(error: &JsValue) -> ToolError {
    if is_interrupt_error(error) {
        let question = get(error, "question")
            .as_string()
            .unwrap_or_else(|| error_message(error));
        return InterruptError::new(question).into();
    }
    ToolError::Failed(error_message(error))
}

/// Awaits whatever a JS callback returned (a value or a promise), keeping a synchronous throw as an error.
pub(crate) async fn settle(returned: Result<JsValue, JsValue>) -> Result<JsValue, JsValue> {
    JsFuture::from(Promise::resolve(&returned?)).await
}

impl Tool for JsTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a {
        let js_ctx = fields(&[("toolUseId", ctx.tool_use_id.into()), ("runId", ctx.run_id.into())]);
        async move {
            let returned = self.handle.call2(&JsValue::UNDEFINED, &to_js(&input), &js_ctx);
            let value = settle(returned).await.map_err(|e| classify(&e))?;
            if let Some(text) = value.as_string() {
                return Ok(Value::String(text));
            }
            if value.is_undefined() {
                return Ok(Value::String(String::new()));
            }
            match json_text(&value) {
                Ok(Some(text)) => Ok(Value::String(text)),
                Ok(None) => Err(ToolError::failed(
                    "the tool returned a value JSON cannot encode (a function or symbol)",
                )),
                Err(e) => Err(ToolError::failed(format!(
                    "the tool's result is not JSON-serializable: {e}"
                ))),
            }
        }
    }
}

/// The JS model for one run: the conversation mirrored as JS objects, grown by the new messages only.
pub(crate) struct JsModel {
    model: Function,
    tools: JsValue,
    system: JsValue,
    mirror: RefCell<Mirror>,
    pub(crate) last_error: RefCell<Option<JsValue>>,
}

/// JS objects equal to the run's first `synced` messages.
struct Mirror {
    array: Array,
    synced: usize,
    /// The JSON text a resumed checkpoint came in, and how many messages it holds: parsed (by the host's
    /// JSON.parse) only if the mirror is needed, instead of converting that history back out of Rust.
    seed: Option<(JsValue, usize)>,
}

#[wasm_bindgen]
extern "C" {
    // JSON.parse of a JS string, without copying it through wasm memory.
    #[wasm_bindgen(js_namespace = JSON, js_name = parse, catch)]
    fn parse_js(text: &JsValue) -> Result<JsValue, JsValue>;
}

impl JsModel {
    pub(crate) fn new(agent: &JsAgentInner, seed: Option<(JsValue, usize)>) -> Self {
        JsModel {
            model: agent.model.clone(),
            tools: agent.tools_js.clone(),
            system: agent
                .config
                .instructions
                .as_deref()
                .map(JsValue::from_str)
                .unwrap_or(JsValue::UNDEFINED),
            mirror: RefCell::new(Mirror {
                array: Array::new(),
                synced: 0,
                seed,
            }),
            last_error: RefCell::new(None),
        }
    }

    /// The run's messages as JS objects (a fresh array; the objects are shared with earlier requests).
    pub(crate) fn messages(&self, messages: &[crate::message::Message]) -> Array {
        let mut m = self.mirror.borrow_mut();
        if let Some((text, count)) = m.seed.take() {
            // Only a current-format checkpoint: a reference-format one may have been repaired on decode.
            let seeded = parse_js(&text)
                .ok()
                .filter(|v| get(v, "version").as_f64().is_some())
                .map(|v| get(&v, "messages"))
                .and_then(|v| v.dyn_into::<Array>().ok());
            if let Some(array) = seeded.filter(|a| a.length() as usize == count && count <= messages.len()) {
                m.array = array;
                m.synced = count;
            }
        }
        if m.synced > messages.len() {
            m.array = Array::new();
            m.synced = 0;
        }
        if let Some(added) = messages.get(m.synced..) {
            if let Ok(added) = to_js(added).dyn_into::<Array>() {
                for v in added.iter() {
                    m.array.push(&v);
                }
            }
        }
        m.synced = messages.len();
        m.array.slice(0, m.array.length())
    }

    fn failed(&self, error: JsValue) -> ModelError {
        let failure = ModelError::Failed {
            name: error_name(&error),
            message: error_message(&error),
        };
        *self.last_error.borrow_mut() = Some(error);
        failure
    }
}

impl Model for JsModel {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let js_request = Object::new();
        if !self.system.is_undefined() {
            set(&js_request, "system", &self.system);
        }
        set(&js_request, "messages", &self.messages(request.messages));
        set(&js_request, "tools", &self.tools);
        async move {
            let response = settle(self.model.call1(&JsValue::UNDEFINED, &js_request))
                .await
                .map_err(|e| self.failed(e))?;
            let invalid = |problem: String| ModelError::InvalidResponse {
                path: String::new(),
                problem,
            };
            match json_text(&response) {
                Ok(Some(text)) if response.is_object() => ModelResponse::from_json(&text),
                Ok(_) => Err(invalid(format!(
                    "expected an object {{ content, usage? }}, got {}",
                    if response.is_null() {
                        "null".to_owned()
                    } else {
                        response.js_typeof().as_string().unwrap_or_default()
                    }
                ))),
                Err(e) => Err(invalid(format!("not JSON-serializable: {e}"))),
            }
        }
    }
}
