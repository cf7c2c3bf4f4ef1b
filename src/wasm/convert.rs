//! Conversions at the edge: values as JSON text, Rust errors as JS error classes.

use js_sys::{JSON, Object, Reflect};
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::glue::{error_message, make_error};
use crate::{AgentError, CheckpointError, ModelError, SaverError};

/// Any serializable value as a fresh JS value (JSON text + one `JSON.parse`).
pub(super) fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    crate::json::to_string(value)
        .ok()
        .and_then(|text| JSON::parse(&text).ok())
        .unwrap_or(JsValue::UNDEFINED)
}

#[wasm_bindgen]
extern "C" {
    type TextEncoder;
    #[wasm_bindgen(constructor)]
    fn new() -> TextEncoder;
    /// Writes UTF-8 straight into `dest`, a view of wasm memory (nothing in between to copy).
    #[wasm_bindgen(method, js_name = encodeInto)]
    fn encode_into(this: &TextEncoder, text: &js_sys::JsString, dest: &mut [u8]) -> EncodeResult;
    type EncodeResult;
    #[wasm_bindgen(method, getter)]
    fn read(this: &EncodeResult) -> u32;
    #[wasm_bindgen(method, getter)]
    fn written(this: &EncodeResult) -> u32;
}

thread_local! {
    static ENCODER: TextEncoder = TextEncoder::new();
}

/// A JS string as a Rust string (`None` for any other value). wasm-bindgen copies a string into wasm one
/// character at a time in JS while it is ASCII (161 µs for 61 KB); a long one is written by
/// `TextEncoder.encodeInto` straight into the string's buffer instead: one byte per character first, the rest
/// (non-ASCII) in a second call with room for 3 bytes per UTF-16 unit. Both make a lone surrogate U+FFFD.
pub(super) fn string_of(value: &JsValue) -> Option<String> {
    let text = value.dyn_ref::<js_sys::JsString>()?;
    let units = text.length() as usize;
    if units < 256 {
        return value.as_string();
    }
    let mut bytes = vec![0u8; units];
    let first = ENCODER.with(|e| e.encode_into(text, &mut bytes));
    let (read, mut written) = (first.read(), first.written() as usize);
    if (read as usize) < units {
        let rest = text.slice(read, text.length());
        bytes.resize(written + (units - read as usize) * 3, 0);
        let tail = bytes.get_mut(written..).unwrap_or_default();
        written += ENCODER.with(|e| e.encode_into(&rest, tail)).written() as usize;
    }
    bytes.truncate(written);
    Some(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// JSON text of a JS value; `None` for `undefined`, functions, or values `JSON.stringify` rejects (`Err`).
/// Lone surrogates (which `JSON.stringify` writes as `\udXXX` escapes) become U+FFFD, as everywhere else.
pub(super) fn json_text(value: &JsValue) -> Result<Option<String>, String> {
    match JSON::stringify(value) {
        Ok(s) => Ok(string_of(&s).map(|t| crate::repair_lone_surrogates(&t).into_owned())),
        Err(e) => Err(error_message(&e)),
    }
}

/// JSON text written by JS (lone surrogates as U+FFFD) as a value; `null` when it is not JSON.
pub(super) fn parse_json(text: &str) -> Value {
    serde_json::from_str(&crate::repair_lone_surrogates(text)).unwrap_or(Value::Null)
}

/// A JS value as JSON (`null` for what JSON cannot hold).
pub(super) fn json_value(value: &JsValue) -> Value {
    json_text(value)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

thread_local! {
    /// Property names as JS strings, made once: a key crosses into JS as a handle, not as UTF-8 to decode.
    static KEYS: std::cell::RefCell<Vec<(&'static str, JsValue)>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn with_key<R>(key: &'static str, f: impl FnOnce(&JsValue) -> R) -> R {
    KEYS.with(|keys| {
        let Ok(mut keys) = keys.try_borrow_mut() else {
            // Called again from inside `f` (a getter that calls back into the package): no cache then.
            return f(&JsValue::from_str(key));
        };
        if let Some((_, k)) = keys.iter().find(|(k, _)| *k == key) {
            return f(k);
        }
        let k = JsValue::from_str(key);
        let out = f(&k);
        keys.push((key, k));
        out
    })
}

/// `target[key]`, or `undefined` when `target` is not an object (without throwing: an exception costs a
/// stack trace).
pub(super) fn get(target: &JsValue, key: &'static str) -> JsValue {
    if !target.is_object() && !target.is_function() {
        return JsValue::UNDEFINED;
    }
    with_key(key, |k| Reflect::get(target, k).unwrap_or(JsValue::UNDEFINED))
}

/// A plain object of `pairs`.
pub(super) fn fields(pairs: &[(&'static str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        // Defining a property on a plain, extensible object cannot fail.
        with_key(k, |k| {
            let _ = Reflect::set(&o, k, v);
        });
    }
    o.into()
}

pub(super) fn config_error(message: String) -> JsValue {
    make_error("ConfigError", &message, &JsValue::UNDEFINED)
}

/// The JS form of an error; `cause`: what JS threw behind it; `given`: the error's checkpoint as the JS value to
/// hand out (a sealed envelope).
pub(super) fn agent_error(error: AgentError, cause: Option<JsValue>, given: Option<JsValue>) -> JsValue {
    let message = error.to_string();
    let kind = error.kind_name();
    let mut pairs: Vec<(&'static str, JsValue)> = Vec::new();
    if let Some(cp) = error.checkpoint() {
        pairs.push(("checkpoint", given.unwrap_or_else(|| to_js(cp))));
    }
    match error {
        AgentError::Checkpoint(e) => {
            pairs.push(("path", e.path().map_or(JsValue::UNDEFINED, JsValue::from_str)));
            pairs.push(("code", e.code().into()));
        }
        AgentError::MaxIterations { limit, .. } => pairs.push(("maxIterations", limit.into())),
        AgentError::ConfigDrift { drift, .. } => {
            pairs.push(("added", to_js(&drift.added)));
            pairs.push(("removed", to_js(&drift.removed)));
            pairs.push(("changed", to_js(&drift.changed)));
        }
        AgentError::BudgetExceeded {
            limit, budget, usage, ..
        } => {
            pairs.push(("limit", limit.into()));
            pairs.push(("budget", to_js(&budget.to_value())));
            pairs.push(("usage", to_js(&usage)));
        }
        AgentError::Model { source, .. } => model_fields(source, cause.as_ref(), &mut pairs),
        AgentError::SessionNotFound { id } => pairs.push(("sessionId", id.into())),
        AgentError::SessionBusy { id, question } => {
            pairs.push(("sessionId", id.into()));
            pairs.push(("question", question.into()));
        }
        AgentError::Saver { source, .. } => pairs.push(("code", source.code().into())),
        AgentError::Decision { id, .. } => pairs.push(("interruptId", id.map_or(JsValue::UNDEFINED, JsValue::from))),
        AgentError::InterruptExpired { id, expires_at, .. } => {
            pairs.push(("interruptId", id.into()));
            pairs.push(("expiresAt", JsValue::from_f64(expires_at as f64)));
        }
        AgentError::Output { attempts, problem, .. } => {
            pairs.push(("attempts", attempts.into()));
            pairs.push(("problem", problem.into()));
        }
        AgentError::Interrupted { question, .. } => pairs.push(("question", question.into())),
        AgentError::Guardrail {
            guardrail, kind, info, ..
        } => {
            pairs.push(("guardrail", guardrail.into()));
            pairs.push(("kind", kind.as_str().into()));
            pairs.push(("info", to_js(&info)));
        }
        AgentError::Mcp { source, .. } => {
            pairs.push(("server", source.server.into()));
            pairs.push(("status", source.status.map_or(JsValue::NULL, JsValue::from)));
        }
        _ => {}
    }
    pairs.extend(cause.map(|c| ("cause", c)));
    make_error(kind, &message, &fields(&pairs))
}

/// `provider`, `status`, `retryable` of an HTTP failure; `stopReason`, `text` of a stopped answer; for a
/// provider wrapped in a JS function, its details travel up from the error it threw.
fn model_fields(source: ModelError, cause: Option<&JsValue>, pairs: &mut Vec<(&'static str, JsValue)>) {
    match source {
        ModelError::Http {
            provider,
            status,
            retryable,
            ..
        } => {
            pairs.push(("provider", provider.into()));
            pairs.push(("status", status.map_or(JsValue::NULL, JsValue::from)));
            pairs.push(("retryable", retryable.into()));
        }
        ModelError::Stopped { reason, text, usage } => {
            pairs.push(("stopReason", reason.as_str().into()));
            pairs.push(("text", text.into()));
            if let Some(u) = usage {
                let count = |n: u64| JsValue::from(n as f64);
                let usage = [
                    ("inputTokens", count(u.input_tokens)),
                    ("outputTokens", count(u.output_tokens)),
                ];
                pairs.push(("usage", fields(&usage)));
            }
        }
        ModelError::Settings { provider, .. } => pairs.push(("provider", provider.into())),
        _ => {
            for key in ["provider", "status", "retryable"] {
                if let Some(v) = cause.map(|c| get(c, key)).filter(|v| !v.is_undefined()) {
                    pairs.push((key, v));
                }
            }
        }
    }
}

/// A model failure outside a run (a provider called as a plain function) as a JS `ModelError`.
pub(super) fn model_error(e: ModelError) -> JsValue {
    let message = e.to_string();
    let mut pairs = Vec::new();
    model_fields(e, None, &mut pairs);
    make_error("ModelError", &message, &fields(&pairs))
}

/// A saver's own failure (outside a session) as a JS `SaverError` with its `code`.
#[cfg_attr(not(feature = "js-sessions"), allow(dead_code))]
pub(super) fn saver_error(e: SaverError) -> JsValue {
    make_error("SaverError", &e.to_string(), &fields(&[("code", e.code().into())]))
}

/// The JSON text of a checkpoint handed in as an object or as text, in Rust and as the JS string it was read
/// from. Text longer than `max_bytes` is refused before it is copied into wasm memory (its UTF-8 form is at
/// least as many bytes as its UTF-16 length).
pub(super) fn checkpoint_text(
    value: &JsValue,
    max_bytes: usize,
) -> Result<(String, js_sys::JsString), CheckpointError> {
    let copy = |js: js_sys::JsString| -> Result<(String, js_sys::JsString), CheckpointError> {
        let units = js.length() as usize;
        if units > max_bytes {
            return Err(CheckpointError::TooLarge {
                bytes: units,
                max: max_bytes,
            });
        }
        Ok((string_of(&js).unwrap_or_default(), js))
    };
    if let Some(js) = value.dyn_ref::<js_sys::JsString>() {
        return copy(js.clone());
    }
    if value.is_instance_of::<js_sys::Uint8Array>() {
        return Err(CheckpointError::at(
            "checkpoint",
            "expected a checkpoint object or its JSON text, got bytes (read the file as text: readFileSync(path, 'utf8'))",
        ));
    }
    if value.is_object() {
        let js = JSON::stringify(value).map_err(|e| CheckpointError::Json {
            message: format!("JSON.stringify failed: {}", error_message(&e)),
        })?;
        return copy(js);
    }
    let got = if value.is_null() {
        "null".to_owned()
    } else {
        value.js_typeof().as_string().unwrap_or_default()
    };
    Err(CheckpointError::at(
        "checkpoint",
        format!("expected a checkpoint object or its JSON text, got {got}"),
    ))
}
