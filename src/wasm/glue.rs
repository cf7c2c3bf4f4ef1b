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

    #[wasm_bindgen(reexport, js_name = defineTool)]
    fn define_tool(def: JsValue) -> JsValue;
    #[wasm_bindgen(reexport, js_name = isInterrupted)]
    fn is_interrupted(result: JsValue) -> bool;
    #[wasm_bindgen(reexport, js_name = assertComplete)]
    fn assert_complete(result: JsValue) -> JsValue;
    #[wasm_bindgen(reexport, js_name = scriptedModel)]
    fn scripted_model(responses: JsValue) -> JsValue;

    #[wasm_bindgen(js_name = makeError)]
    pub(crate) fn make_error(kind: &str, message: &str, fields: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = isInterruptError)]
    pub(crate) fn is_interrupt_error(e: &JsValue) -> bool;
    #[wasm_bindgen(js_name = errorMessage)]
    pub(crate) fn error_message(e: &JsValue) -> String;
    #[wasm_bindgen(js_name = errorName)]
    pub(crate) fn error_name(e: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = normalizeTool, catch)]
    pub(crate) fn normalize_tool(def: &JsValue, path: &str) -> Result<JsValue, JsValue>;
}
