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
    #[wasm_bindgen(js_name = compileSchema, catch)]
    pub(crate) fn compile_schema(schema: &JsValue, path: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = compileOutputSchema, catch)]
    pub(crate) fn compile_output_schema(schema: &JsValue, path: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(js_name = describe)]
    pub(crate) fn describe(value: &JsValue) -> String;
    #[wasm_bindgen(js_name = freeze)]
    pub(crate) fn freeze(value: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = plainJsonText, catch)]
    pub(crate) fn plain_json_text(value: &JsValue, what: &str) -> Result<String, JsValue>;
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
    #[wasm_bindgen(js_name = checkpointKeysSpec, catch)]
    pub(crate) fn checkpoint_keys_spec(config: &JsValue) -> Result<JsValue, JsValue>;
    /// `f(...args)` as a promise, whatever `f` does (returns, returns a promise, throws).
    #[wasm_bindgen(js_name = settle)]
    pub(crate) fn settle_call(f: &JsValue, args: &js_sys::Array) -> js_sys::Promise;
}
