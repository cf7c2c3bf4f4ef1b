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

/// A JS string as a Rust string (`None` for any other value), for a resumed checkpoint's text and JSON of
/// tool results and model answers. wasm-bindgen copies a string into wasm one character at a time in JS
/// while it is ASCII (161 µs for 61 KB here); a long one is written by `TextEncoder.encodeInto` straight
/// into the string's buffer instead: one byte per character first, the rest (non-ASCII) in a second call
/// with room for 3 bytes per UTF-16 unit. Both make a lone surrogate U+FFFD. Savers' reads keep
/// wasm-bindgen's copy: there it gained nothing measurable and raised the example Worker's wasm high-water
/// mark by a page.
pub(crate) fn string_of(value: &JsValue) -> Option<String> {
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

/// JSON text of a JS value; `None` for `undefined`, functions, or values `JSON.stringify` rejects.
/// Lone surrogates (which `JSON.stringify` writes as `\udXXX` escapes) become U+FFFD, as everywhere else.
pub(crate) fn json_text(value: &JsValue) -> Result<Option<String>, String> {
    match JSON::stringify(value) {
        Ok(s) => Ok(string_of(&s).map(|t| match crate::limits::repair_lone_surrogates(&t) {
            std::borrow::Cow::Borrowed(_) => t,
            std::borrow::Cow::Owned(repaired) => repaired,
        })),
        Err(e) => Err(error_message(&e)),
    }
}

thread_local! {
    /// Property names as JS strings, made once: a key crosses into JS as a handle, not as UTF-8 to decode.
    static KEYS: std::cell::RefCell<Vec<(&'static str, JsValue)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Calls `f` with `key` as a JS string, made at most once per key.
pub(crate) fn with_key<R>(key: &'static str, f: impl FnOnce(&JsValue) -> R) -> R {
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

pub(crate) fn set(target: &Object, key: &'static str, value: &JsValue) {
    // Defining a property on a plain, extensible object cannot fail.
    with_key(key, |k| {
        let _ = Reflect::set(target, k, value);
    })
}

/// `target[key]`, or `undefined` when `target` is not an object (without throwing: an exception costs a
/// stack trace).
pub(crate) fn get(target: &JsValue, key: &'static str) -> JsValue {
    if !target.is_object() && !target.is_function() {
        return JsValue::UNDEFINED;
    }
    with_key(key, |k| Reflect::get(target, k).unwrap_or(JsValue::UNDEFINED))
}

/// `obj[key]` when it is set (neither undefined nor null).
fn set_option(obj: &JsValue, key: &'static str) -> Option<JsValue> {
    Some(get(obj, key)).filter(|v| !v.is_undefined() && !v.is_null())
}

/// An optional string option; `owner` names the object in the error (`config`, `kvSaver options`, ...).
pub(crate) fn string_option(obj: &JsValue, key: &'static str, owner: &str) -> Result<Option<String>, JsValue> {
    set_option(obj, key)
        .map(|v| {
            v.as_string()
                .ok_or_else(|| config_error(format!("{owner}.{key}: expected a string")))
        })
        .transpose()
}

/// An optional whole-number option of at least `min` (0 or 1).
pub(crate) fn integer_option(obj: &JsValue, key: &'static str, owner: &str, min: u64) -> Result<Option<u64>, JsValue> {
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

pub(crate) fn fields(pairs: &[(&'static str, JsValue)]) -> JsValue {
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
    agent_error_as(error, cause, None)
}

/// [`agent_error`] with the error's checkpoint given as the JS value to hand out (a sealed envelope).
pub(crate) fn agent_error_as(error: AgentError, cause: Option<JsValue>, given: Option<JsValue>) -> JsValue {
    let message = error.to_string();
    let checkpoint_js = |c: &Checkpoint| given.clone().unwrap_or_else(|| to_js(c));
    match error {
        AgentError::Checkpoint(e) => {
            let path = e.path().map(JsValue::from_str).unwrap_or(JsValue::UNDEFINED);
            make_error(
                "CheckpointError",
                &message,
                &fields(&[("path", path), ("code", e.code().into())]),
            )
        }
        AgentError::Config(_) | AgentError::Argument(_) => make_error("ConfigError", &message, &JsValue::UNDEFINED),
        AgentError::MaxIterations { limit, checkpoint } => make_error(
            "MaxIterationsError",
            &message,
            &fields(&[
                ("maxIterations", limit.into()),
                ("checkpoint", checkpoint_js(&checkpoint)),
            ]),
        ),
        AgentError::Model { checkpoint, source } => {
            let mut pairs = vec![("checkpoint", checkpoint_js(&checkpoint))];
            if let ModelError::Http {
                provider,
                status,
                retryable,
                ..
            } = source
            {
                // A provider called directly from Rust.
                pairs.push(("provider", provider.into()));
                pairs.push(("status", status.map_or(JsValue::NULL, JsValue::from)));
                pairs.push(("retryable", retryable.into()));
            } else if let ModelError::Stopped { reason, text } = source {
                pairs.push(("stopReason", reason.as_str().into()));
                pairs.push(("text", text.into()));
            } else {
                // A provider wrapped in a JS function: its details travel up from the error it threw.
                for key in ["provider", "status", "retryable"] {
                    if let Some(v) = cause.as_ref().map(|c| get(c, key)).filter(|v| !v.is_undefined()) {
                        pairs.push((key, v));
                    }
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
            // Always one of our codes; the cause keeps its own (e.g. ECONNRESET).
            let mut pairs = vec![("code", JsValue::from_str(source.code()))];
            pairs.extend(checkpoint.map(|c| ("checkpoint", checkpoint_js(&c))));
            pairs.extend(cause.map(|c| ("cause", c)));
            make_error("SaverError", &message, &fields(&pairs))
        }
        AgentError::Decision { id, .. } => make_error(
            "DecisionError",
            &message,
            &fields(&[("interruptId", id.map_or(JsValue::UNDEFINED, JsValue::from))]),
        ),
        AgentError::InterruptExpired {
            id,
            expires_at,
            checkpoint,
        } => make_error(
            "InterruptExpiredError",
            &message,
            &fields(&[
                ("interruptId", id.into()),
                ("expiresAt", JsValue::from_f64(expires_at as f64)),
                ("checkpoint", checkpoint_js(&checkpoint)),
            ]),
        ),
        AgentError::Output {
            attempts,
            problem,
            checkpoint,
        } => make_error(
            "OutputError",
            &message,
            &fields(&[
                ("attempts", attempts.into()),
                ("problem", problem.into()),
                ("checkpoint", checkpoint_js(&checkpoint)),
            ]),
        ),
        AgentError::Aborted { checkpoint } => make_error(
            "AbortedError",
            &message,
            &fields(&[("checkpoint", checkpoint_js(&checkpoint))]),
        ),
        AgentError::Interrupted { question, checkpoint } => make_error(
            "RunInterruptedError",
            &message,
            &fields(&[
                ("question", question.into()),
                ("checkpoint", checkpoint_js(&checkpoint)),
            ]),
        ),
    }
}

/// The JS result. `messages` is the run's conversation already mirrored in JS, when there is one;
/// `given` the checkpoint as the JS value to hand out (a sealed envelope). Written as one JSON text and
/// parsed once in JS; the JS values given take the places held for them (`null` in the text), so the
/// result's keys keep their order.
pub(crate) fn outcome_to_js(outcome: &Outcome, messages: Option<JsValue>, given: Option<JsValue>) -> JsValue {
    use crate::message::Message;
    use serde_json::Value;
    #[derive(Serialize)]
    struct Paused<'a> {
        interrupted: bool,
        question: &'a str,
        checkpoint: Option<&'a Checkpoint>,
        interrupts: &'a [crate::interrupt::Interrupt],
    }
    #[derive(Serialize)]
    struct Complete<'a> {
        text: &'a str,
        usage: &'a crate::message::Usage,
        messages: Option<&'a [Message]>,
        checkpoint: Option<&'a Checkpoint>,
        iterations: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        structured: Option<&'a Value>,
    }
    let text = match outcome {
        Outcome::Interrupted(i) => crate::json::to_string(&Paused {
            interrupted: true,
            question: &i.question,
            checkpoint: given.is_none().then_some(&i.checkpoint),
            interrupts: i.interrupts(),
        }),
        Outcome::Complete(r) => crate::json::to_string(&Complete {
            text: &r.text,
            usage: &r.checkpoint.usage,
            messages: messages.is_none().then_some(&r.checkpoint.messages[..]),
            checkpoint: given.is_none().then_some(&r.checkpoint),
            iterations: r.checkpoint.iterations,
            // Only with an output schema: a result stays the plain JSON its `done` event carries.
            structured: r.structured(),
        }),
    };
    let undefined = JsValue::UNDEFINED;
    super::glue::outcome(
        &text.unwrap_or_default(),
        messages.as_ref().unwrap_or(&undefined),
        given.as_ref().unwrap_or(&undefined),
    )
}

/// The JSON text of a checkpoint given as an object or as text: as a JS string and as a Rust string. Text
/// longer than `max_bytes` is refused before it is copied into wasm memory (its UTF-8 form is at least as
/// many bytes as its UTF-16 length).
pub(crate) fn checkpoint_text(value: &JsValue, max_bytes: usize) -> Result<(JsValue, String), AgentError> {
    let copy = |js: &js_sys::JsString| -> Result<String, AgentError> {
        let units = js.length() as usize;
        if units > max_bytes {
            return Err(crate::CheckpointError::TooLarge {
                bytes: units,
                max: max_bytes,
            }
            .into());
        }
        Ok(string_of(js).unwrap_or_default())
    };
    if let Some(js) = value.dyn_ref::<js_sys::JsString>() {
        return Ok((value.clone(), copy(js)?));
    }
    if value.is_object() {
        let js = JSON::stringify(value).map_err(|e| crate::CheckpointError::Json {
            message: format!("JSON.stringify failed: {}", error_message(&e)),
        })?;
        let text = copy(&js)?;
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
        ModelError::Stopped { reason, text } => vec![("stopReason", reason.as_str().into()), ("text", text.into())],
        _ => Vec::new(),
    };
    make_error("ModelError", &message, &fields(&pairs))
}

/// A saver's own failure (outside a session) as a JS `SaverError` with its `code`.
pub(crate) fn saver_error(e: SaverError) -> JsValue {
    make_error("SaverError", &e.to_string(), &fields(&[("code", e.code().into())]))
}
