//! The npm package's low-level API: converts at the edge and calls the core's public API. No rule lives here.
//!
//! Nothing this module hands to JS owns wasm memory: `agent(config)` is a frozen JS object (the config's JSON
//! text, the functions beside it), read by the core's `AgentSpec` and checked once at `agent()`; each call
//! builds the core `Agent` (and saver) from it, runs, and drops everything when its promise settles. So an
//! agent, session or saver the package's front hands out is released by the garbage collector like any JS
//! object — no finalizer has to run (workerd and tight `await` loops may never run them).
//!
//! Data crosses the boundary as JSON text (`serde_json` here, `JSON.parse`/`JSON.stringify` there): one call
//! per value instead of one per field.

//! Built in variants, each with only some capabilities (cargo features `js-sessions`, `js-providers`, `js-mcp` on
//! top of the core `js`): the package loads the smallest variant that has what the program imported.

mod agent;
mod convert;
mod glue;
mod model;
#[cfg(feature = "js-sessions")]
mod saver;
#[cfg(feature = "js-sessions")]
mod session;
#[cfg(feature = "js-telemetry")]
mod telemetry;

use wasm_bindgen::prelude::*;

use convert::{fields, get};

/// Returns a finished result; throws `RunInterruptedError` (with the same checkpoint object) for a paused one.
#[wasm_bindgen(js_name = assertComplete)]
pub fn assert_complete(result: JsValue) -> Result<JsValue, JsValue> {
    if get(&result, "interrupted").as_bool() != Some(true) {
        return Ok(result);
    }
    let question = get(&result, "question").as_string().unwrap_or_default();
    let message = format!("the run is interrupted, waiting for an answer to: {question}");
    Err(glue::make_error(
        "RunInterruptedError",
        &message,
        &fields(&[
            ("question", question.into()),
            ("checkpoint", get(&result, "checkpoint")),
        ]),
    ))
}

/// `capabilities()`: what this variant of the package's .wasm can do, beside the core: `sessions`, `providers`,
/// `mcp`, `telemetry`, `guardrails`, `subagents`.
#[wasm_bindgen]
pub fn capabilities() -> js_sys::Array {
    let all: [(&str, bool); 6] = [
        ("sessions", cfg!(feature = "js-sessions")),
        ("providers", cfg!(feature = "js-providers")),
        ("mcp", cfg!(feature = "js-mcp")),
        ("telemetry", cfg!(feature = "js-telemetry")),
        ("guardrails", cfg!(feature = "js-guardrails")),
        ("subagents", cfg!(feature = "js-subagents")),
    ];
    all.iter()
        .filter(|(_, on)| *on)
        .map(|(name, _)| JsValue::from_str(name))
        .collect()
}

/// `memoryUsage()`: `{ wasmBytes }`, the size of this package's WebAssembly memory (it only grows; a
/// long-lived isolate can watch it).
#[wasm_bindgen(js_name = memoryUsage)]
pub fn memory_usage() -> JsValue {
    let bytes = wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .map(|m| m.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length())
        .unwrap_or(0);
    fields(&[("wasmBytes", JsValue::from_f64(f64::from(bytes)))])
}
