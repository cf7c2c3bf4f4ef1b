//! The JS half of the bindings (`glue.js`): error classes, InterruptError, a tool's context, small helpers.

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
    #[wasm_bindgen(reexport = "McpError", js_name = McpError)]
    type JsMcpErrorClass;
    #[wasm_bindgen(reexport = "ReleasedError", js_name = ReleasedError)]
    type JsReleasedErrorClass;
    #[wasm_bindgen(reexport = "InstanceLostError", js_name = InstanceLostError)]
    type JsInstanceLostErrorClass;
    // Used by the package's front (api.js) as well.
    #[wasm_bindgen(reexport = "checkPlainJson", js_name = checkPlainJson)]
    fn check_plain_json(value: &JsValue, what: &str);
    #[wasm_bindgen(reexport = "describe", js_name = describe)]
    pub(super) fn describe(value: &JsValue) -> String;

    #[wasm_bindgen(js_name = makeError)]
    pub(super) fn make_error(kind: &str, message: &str, fields: &JsValue) -> JsValue;
    /// `{ question, options?, expiresInMs? }` of a thrown InterruptError; `undefined` for anything else.
    #[wasm_bindgen(js_name = interruptOf)]
    pub(super) fn interrupt_of(e: &JsValue) -> JsValue;
    /// The JSON text of an InterruptError's `data`.
    #[wasm_bindgen(js_name = interruptData)]
    pub(super) fn interrupt_data(e: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = errorMessage)]
    pub(super) fn error_message(e: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorName)]
    pub(super) fn error_name(e: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = toolContext)]
    pub(super) fn tool_context(tool_use_id: &str, run_id: &str, state_json: Option<String>) -> JsValue;
    #[wasm_bindgen(js_name = nextState)]
    pub(super) fn next_state(ctx: &JsValue) -> Option<String>;
    /// `promise`, rejected with code `TIMEOUT` after `ms` unless it settled (`ms` undefined: as it is).
    #[wasm_bindgen(js_name = race)]
    pub(super) fn race(promise: &JsValue, ms: Option<f64>) -> js_sys::Promise;
    /// A promise resolved after `ms`.
    #[wasm_bindgen(js_name = sleep)]
    pub(super) fn sleep(ms: f64) -> js_sys::Promise;
    #[wasm_bindgen(js_name = appendMessages)]
    pub(super) fn append_messages(mirror: &js_sys::Array, added: Option<&str>) -> js_sys::Array;
    /// `promise`, which also settles once its `cancel()` is called (when the wait for it is dropped).
    #[wasm_bindgen(js_name = settling)]
    pub(super) fn settling(promise: &JsValue) -> js_sys::Promise;
    /// `{ promise, cancel }`: resolves when `signal` aborts; `undefined` when it is not an AbortSignal.
    #[wasm_bindgen(js_name = onAbort)]
    pub(super) fn on_abort(signal: &JsValue) -> JsValue;
    /// The `messages` array of a checkpoint's JSON text, parsed by JS; `undefined` if it has none.
    #[wasm_bindgen(js_name = messagesOf)]
    pub(super) fn messages_of(text: &js_sys::JsString) -> JsValue;
    #[wasm_bindgen(js_name = modelRequest)]
    pub(super) fn model_request(system: &JsValue, messages: &js_sys::Array, tools: &JsValue) -> JsValue;
    /// `f(a)` when `b` is undefined, else `f(a, b)`; a throw as `Err`.
    #[wasm_bindgen(js_name = callNow, catch)]
    pub(super) fn call_now(f: &JsValue, a: &JsValue, b: &JsValue) -> Result<JsValue, JsValue>;
    /// `value` has a `then` method (a promise or another thenable).
    #[wasm_bindgen(js_name = isThenable)]
    pub(super) fn is_thenable(value: &JsValue) -> bool;
    /// A run's result from its JSON text; `sealed`: the envelope that stands in for its checkpoint.
    #[wasm_bindgen(js_name = outcome)]
    pub(super) fn outcome(text: &str, sealed: Option<String>) -> JsValue;
}
