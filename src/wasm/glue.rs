//! The JS half of the bindings (`glue.js`): error classes, the schema builder, small helpers.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(module = "/src/wasm/glue.js")]
extern "C" {
    #[wasm_bindgen(reexport = "InterruptError", js_name = InterruptError)]
    type JsInterruptErrorClass;
    #[wasm_bindgen(reexport = "AgentError", js_name = AgentError)]
    type JsAgentErrorClass;
    #[wasm_bindgen(reexport = "CheckpointError", js_name = CheckpointError)]
    type JsCheckpointErrorClass;
    #[wasm_bindgen(reexport = "ConfigError", js_name = ConfigError)]
    type JsConfigErrorClass;
    #[wasm_bindgen(reexport = "MaxIterationsError", js_name = MaxIterationsError)]
    type JsMaxIterationsErrorClass;
    #[wasm_bindgen(reexport = "ModelError", js_name = ModelError)]
    type JsModelErrorClass;
    #[wasm_bindgen(reexport = "RunInterruptedError", js_name = RunInterruptedError)]
    type JsRunInterruptedErrorClass;
    #[wasm_bindgen(reexport = "SessionNotFoundError", js_name = SessionNotFoundError)]
    type JsSessionNotFoundErrorClass;
    #[wasm_bindgen(reexport = "SessionBusyError", js_name = SessionBusyError)]
    type JsSessionBusyErrorClass;
    #[wasm_bindgen(reexport = "SaverError", js_name = SaverError)]
    type JsSaverErrorClass;
    #[wasm_bindgen(reexport = "DecisionError", js_name = DecisionError)]
    type JsDecisionErrorClass;
    #[wasm_bindgen(reexport = "InterruptExpiredError", js_name = InterruptExpiredError)]
    type JsInterruptExpiredErrorClass;
    #[wasm_bindgen(reexport = "OutputError", js_name = OutputError)]
    type JsOutputErrorClass;
    #[wasm_bindgen(reexport = "AbortedError", js_name = AbortedError)]
    type JsAbortedErrorClass;
    #[wasm_bindgen(reexport = "ReleasedError", js_name = ReleasedError)]
    type JsReleasedErrorClass;
    #[wasm_bindgen(reexport = "InstanceLostError", js_name = InstanceLostError)]
    type JsInstanceLostErrorClass;

    #[wasm_bindgen(js_name = makeError)]
    pub(crate) fn make_error(kind: &str, message: &str, fields: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = isInterruptError)]
    pub(crate) fn is_interrupt_error(e: &JsValue) -> bool;
    #[wasm_bindgen(js_name = errorMessage)]
    pub(crate) fn error_message(e: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorName)]
    pub(crate) fn error_name(e: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = describe)]
    pub(crate) fn describe(value: &JsValue) -> String;
    #[wasm_bindgen(js_name = freeze)]
    pub(crate) fn freeze(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = toolContext)]
    pub(crate) fn tool_context(tool_use_id: &str, run_id: &str, state_json: Option<String>) -> JsValue;
    #[wasm_bindgen(js_name = nextState)]
    pub(crate) fn next_state(ctx: &JsValue) -> Option<String>;
    /// `[promise, cancel]`: resolves after `ms`; `cancel()` clears the timer.
    #[wasm_bindgen(js_name = timer)]
    pub(crate) fn timer(ms: f64) -> js_sys::Array;
    /// `promise`, rejected after `ms` unless it settled.
    #[wasm_bindgen(js_name = race)]
    pub(crate) fn race(promise: &js_sys::Promise, ms: f64) -> js_sys::Promise;
    /// `o[k]` of an object this package made (a spec): no checks, nothing to catch.
    #[wasm_bindgen(js_name = prop)]
    fn prop_js(o: &JsValue, k: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = appendMessages)]
    pub(crate) fn append_messages(mirror: &js_sys::Array, added: Option<&str>) -> js_sys::Array;
    #[wasm_bindgen(js_name = modelRequest)]
    pub(crate) fn model_request(system: &JsValue, messages: &js_sys::Array, tools: &JsValue) -> JsValue;
    /// `f(a)` when `b` is undefined, else `f(a, b)`; a throw as `Err`.
    #[wasm_bindgen(js_name = callNow, catch)]
    pub(crate) fn call_now(f: &JsValue, a: &JsValue, b: &JsValue) -> Result<JsValue, JsValue>;
    /// `value` has a `then` method (a promise or another thenable).
    #[wasm_bindgen(js_name = isThenable)]
    pub(crate) fn is_thenable(value: &JsValue) -> bool;
    /// A run's result from its JSON text, with `messages` / `checkpoint` put in when given.
    #[wasm_bindgen(js_name = outcome)]
    pub(crate) fn outcome(text: &str, messages: &JsValue, checkpoint: &JsValue) -> JsValue;
    // Read by the package's front (api.js), not by Rust: re-exported from the glue.
    #[wasm_bindgen(reexport = "agentSpec", js_name = agentSpec)]
    fn agent_spec(config: &JsValue, builtin: &JsValue) -> JsValue;
    #[wasm_bindgen(reexport = "sealSpec", js_name = sealSpec)]
    fn seal_spec(spec: &JsValue, final_answer: &JsValue) -> JsValue;
    #[wasm_bindgen(reexport = "normalizeTool", js_name = normalizeTool)]
    fn normalize_tool(def: &JsValue, path: &str) -> JsValue;
}

/// `o[k]` of an object this package made (a spec): no checks, nothing to catch, the key interned.
pub(crate) fn prop(o: &JsValue, k: &'static str) -> JsValue {
    super::convert::with_key(k, |key| prop_js(o, key))
}
