//! Conversions at the edge: values as JSON text, Rust errors as JS error classes.

use js_sys::{JSON, Object, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::glue::{error_message, make_error};
use crate::agent::Outcome;
use crate::checkpoint::Checkpoint;
use crate::error::{AgentError, ModelError, SaverError};

/// Any serializable value as a fresh JS value (JSON text + one `JSON.parse`).
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    serde_json::to_string(value)
        .ok()
        .and_then(|text| JSON::parse(&text).ok())
        .unwrap_or(JsValue::UNDEFINED)
}

/// JSON text of a JS value; `None` for `undefined`, functions, or values `JSON.stringify` rejects.
pub(crate) fn json_text(value: &JsValue) -> Result<Option<String>, String> {
    match JSON::stringify(value) {
        Ok(s) => Ok(s.as_string()),
        Err(e) => Err(error_message(&e)),
    }
}

pub(crate) fn set(target: &Object, key: &str, value: &JsValue) {
    // Defining a property on a plain, extensible object cannot fail.
    let _ = Reflect::set(target, &JsValue::from_str(key), value);
}

pub(crate) fn get(target: &JsValue, key: &str) -> JsValue {
    Reflect::get(target, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// `obj[key]` when it is set (neither undefined nor null).
fn set_option(obj: &JsValue, key: &str) -> Option<JsValue> {
    Some(get(obj, key)).filter(|v| !v.is_undefined() && !v.is_null())
}

/// An optional string option; `owner` names the object in the error (`config`, `kvSaver options`, ...).
pub(crate) fn string_option(obj: &JsValue, key: &str, owner: &str) -> Result<Option<String>, JsValue> {
    set_option(obj, key)
        .map(|v| {
            v.as_string()
                .ok_or_else(|| config_error(format!("{owner}.{key}: expected a string")))
        })
        .transpose()
}

/// An optional whole-number option of at least `min` (0 or 1).
pub(crate) fn integer_option(obj: &JsValue, key: &str, owner: &str, min: u64) -> Result<Option<u64>, JsValue> {
    let kind = if min == 0 {
        "a non-negative integer"
    } else {
        "a positive integer"
    };
    set_option(obj, key)
        .map(|v| {
            v.as_f64()
                .filter(|n| n.fract() == 0.0 && *n >= min as f64 && *n <= 9.0e15)
                .map(|n| n as u64)
                .ok_or_else(|| config_error(format!("{owner}.{key}: expected {kind}")))
        })
        .transpose()
}

pub(crate) fn fields(pairs: &[(&str, JsValue)]) -> JsValue {
    let o = Object::new();
    for (k, v) in pairs {
        set(&o, k, v);
    }
    o.into()
}

pub(crate) fn config_error(message: String) -> JsValue {
    make_error("ConfigError", &message, &JsValue::UNDEFINED)
}

pub(crate) fn agent_error(error: AgentError, cause: Option<JsValue>) -> JsValue {
    let message = error.to_string();
    match error {
        AgentError::Checkpoint(e) => {
            let path = e.path().map(JsValue::from_str).unwrap_or(JsValue::UNDEFINED);
            make_error("CheckpointError", &message, &fields(&[("path", path)]))
        }
        AgentError::Config(_) => make_error("ConfigError", &message, &JsValue::UNDEFINED),
        AgentError::MaxIterations { limit, checkpoint } => make_error(
            "MaxIterationsError",
            &message,
            &fields(&[("maxIterations", limit.into()), ("checkpoint", to_js(&*checkpoint))]),
        ),
        AgentError::Model { checkpoint, .. } => {
            let mut pairs = vec![("checkpoint", to_js(&*checkpoint))];
            // A provider's HTTP details travel up from the error the model function threw.
            for key in ["provider", "status", "retryable"] {
                if let Some(v) = cause.as_ref().map(|c| get(c, key)).filter(|v| !v.is_undefined()) {
                    pairs.push((key, v));
                }
            }
            pairs.extend(cause.map(|c| ("cause", c)));
            make_error("ModelError", &message, &fields(&pairs))
        }
        AgentError::SessionNotFound { id } => {
            make_error("SessionNotFoundError", &message, &fields(&[("sessionId", id.into())]))
        }
        AgentError::SessionBusy { id, question } => make_error(
            "SessionBusyError",
            &message,
            &fields(&[("sessionId", id.into()), ("question", question.into())]),
        ),
        AgentError::Saver { source, checkpoint } => {
            let cause_code = cause.as_ref().map(|c| get(c, "code")).and_then(|c| c.as_string());
            let code = cause_code.unwrap_or_else(|| source.code().to_owned());
            let mut pairs = vec![("code", JsValue::from_str(&code))];
            pairs.extend(checkpoint.map(|c| ("checkpoint", to_js(&*c))));
            pairs.extend(cause.map(|c| ("cause", c)));
            make_error("SaverError", &message, &fields(&pairs))
        }
        AgentError::Interrupted { question, checkpoint } => make_error(
            "RunInterruptedError",
            &message,
            &fields(&[("question", question.into()), ("checkpoint", to_js(&*checkpoint))]),
        ),
    }
}

/// The JS result. `messages` is the run's conversation already mirrored in JS, when there is one.
pub(crate) fn outcome_to_js(outcome: &Outcome, messages: Option<JsValue>) -> JsValue {
    match outcome {
        Outcome::Interrupted(i) => fields(&[
            ("interrupted", JsValue::TRUE),
            ("question", JsValue::from_str(&i.question)),
            ("checkpoint", to_js(&i.checkpoint)),
        ]),
        Outcome::Complete(r) => fields(&[
            ("text", JsValue::from_str(&r.text)),
            ("usage", to_js(&r.checkpoint.usage)),
            // Separate objects from the checkpoint's: changing one cannot alter the other.
            ("messages", messages.unwrap_or_else(|| to_js(&r.checkpoint.messages))),
            ("checkpoint", to_js(&r.checkpoint)),
            ("iterations", r.checkpoint.iterations.into()),
        ]),
    }
}

/// The JSON text of a checkpoint given as an object or as text: as a JS string and as a Rust string.
pub(crate) fn checkpoint_text(value: &JsValue) -> Result<(JsValue, String), AgentError> {
    if let Some(text) = value.as_string() {
        return Ok((value.clone(), text));
    }
    if value.is_object() {
        let js = JSON::stringify(value).map_err(|e| crate::CheckpointError::Json {
            message: format!("JSON.stringify failed: {}", error_message(&e)),
        })?;
        let text = js.as_string().unwrap_or_default();
        return Ok((js.into(), text));
    }
    let got = if value.is_null() {
        "null".to_owned()
    } else {
        value.js_typeof().as_string().unwrap_or_default()
    };
    Err(crate::CheckpointError::at(
        "checkpoint",
        format!("expected a checkpoint object or its JSON text, got {got}"),
    )
    .into())
}

pub(crate) fn checkpoint_from_js(value: &JsValue) -> Result<Checkpoint, AgentError> {
    Ok(Checkpoint::from_json(&checkpoint_text(value)?.1)?)
}

/// A model failure as a JS `ModelError`, with `provider`, `status` and `retryable` for HTTP failures.
pub(crate) fn model_error(e: ModelError) -> JsValue {
    let message = e.to_string();
    let pairs: Vec<(&str, JsValue)> = match e {
        ModelError::Http {
            provider,
            status,
            retryable,
            ..
        } => vec![
            ("provider", provider.into()),
            ("status", status.map_or(JsValue::NULL, JsValue::from)),
            ("retryable", retryable.into()),
        ],
        _ => Vec::new(),
    };
    make_error("ModelError", &message, &fields(&pairs))
}

/// A saver's own failure (outside a session) as a JS `SaverError` with its `code`.
pub(crate) fn saver_error(e: SaverError) -> JsValue {
    make_error("SaverError", &e.to_string(), &fields(&[("code", e.code().into())]))
}
