//! The npm package's API: converts at the edge and calls the core. No loop logic lives here.
//!
//! Data crosses the boundary as JSON text (`serde_json` here, `JSON.parse`/`JSON.stringify` there):
//! one call per value instead of one per field. The conversation is mirrored into JS incrementally,
//! so each model call converts only the messages added since the previous one.

mod adapters;
mod convert;
mod glue;
mod providers;
mod savers;

use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use adapters::{JsModel, JsTool};
use convert::{
    agent_error, checkpoint_text, config_error, fields, get, integer_option, json_text, outcome_to_js, string_option,
};
use glue::normalize_tool;
use savers::JsSaver;

use crate::agent::{AgentConfig, DEFAULT_MAX_ITERATIONS, Outcome, drive};
use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::model::ToolDefinition;
use crate::platform::{new_run_id, now_ms};
use crate::run::Run;
use crate::session::{Turn, run_session};

pub(crate) struct JsAgentInner {
    pub(crate) config: AgentConfig,
    pub(crate) model: Function,
    pub(crate) tools_js: JsValue,
}

/// A configured agent; `prompt` and `resume` each return a promise of the outcome.
#[wasm_bindgen(js_name = Agent)]
pub struct JsAgent {
    inner: Rc<JsAgentInner>,
}

fn parse_config(config: &JsValue) -> Result<JsAgentInner, JsValue> {
    if !config.is_object() {
        return Err(config_error(
            "agent(config): expected a config object { instructions?, tools?, model, maxIterations? }".into(),
        ));
    }
    let instructions = string_option(config, "instructions", "config")?;
    let model = get(config, "model").dyn_into::<Function>().map_err(|_| {
        config_error(
            "config.model: expected a model function (request) => response, e.g. scriptedModel([...]) or a provider"
                .into(),
        )
    })?;
    let max_iterations = integer_option(config, "maxIterations", "config", 1)?
        .map_or(DEFAULT_MAX_ITERATIONS, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let tools_value = get(config, "tools");
    let listed: Array = match tools_value {
        v if v.is_undefined() || v.is_null() => Array::new(),
        v => v
            .dyn_into::<Array>()
            .map_err(|_| config_error("config.tools: expected an array of tools".into()))?,
    };
    let mut tools: Vec<Box<dyn crate::tool::DynTool>> = Vec::new();
    let tools_js = Array::new();
    for (i, raw) in listed.iter().enumerate() {
        let t = normalize_tool(&raw, &format!("config.tools[{i}]"))?;
        let schema = get(&t, "inputSchema");
        let definition = ToolDefinition {
            name: get(&t, "name").as_string().unwrap_or_default(),
            description: get(&t, "description").as_string().unwrap_or_default(),
            input_schema: serde_json::from_str(&json_text(&schema).ok().flatten().unwrap_or_default())
                .unwrap_or(Value::Null),
        };
        // What the model sees, from the JS values at hand (not converted back out of Rust).
        tools_js.push(&fields(&[
            ("name", get(&t, "name")),
            ("description", get(&t, "description")),
            ("inputSchema", schema),
        ]));
        let handle = get(&t, "handle")
            .dyn_into::<Function>()
            .map_err(|_| config_error(format!("config.tools[{i}].handle: expected a function")))?;
        tools.push(Box::new(JsTool { definition, handle }));
    }
    let config = AgentConfig::new(instructions, tools, max_iterations).map_err(|e| agent_error(e, None))?;
    Ok(JsAgentInner {
        config,
        model,
        tools_js: tools_js.into(),
    })
}

/// `agent(config)`: `{ instructions?, tools?, model, maxIterations? }`.
#[wasm_bindgen]
pub fn agent(config: JsValue) -> Result<JsAgent, JsValue> {
    Ok(JsAgent {
        inner: Rc::new(parse_config(&config)?),
    })
}

async fn run_to_js(
    inner: Rc<JsAgentInner>,
    run: Result<Run, AgentError>,
    seed: Option<(JsValue, usize)>,
) -> Result<JsValue, JsValue> {
    let run = run.map_err(|e| agent_error(e, None))?;
    let model = JsModel::new(&inner, seed);
    match drive(&inner.config, &model, run).await {
        Ok(outcome @ Outcome::Complete(_)) => Ok(outcome_to_js(
            &outcome,
            Some(model.messages(&outcome.checkpoint().messages).into()),
        )),
        Ok(outcome) => Ok(outcome_to_js(&outcome, None)),
        Err(e) => Err(agent_error(e, model.last_error.borrow_mut().take())),
    }
}

#[wasm_bindgen(js_class = Agent)]
impl JsAgent {
    /// Starts a run with a user message.
    pub fn prompt(&self, message: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        let run = match message.as_string() {
            Some(m) => Ok(Run::start(&m, inner.config.max_iterations, new_run_id(), now_ms())),
            None => Err(AgentError::Config("prompt(message): expected a string".into())),
        };
        future_to_promise(run_to_js(inner, run, None))
    }

    /// Continues a checkpoint (object or JSON text) with the human's answer.
    pub fn resume(&self, checkpoint: JsValue, answer: JsValue) -> Promise {
        let inner = Rc::clone(&self.inner);
        let answer = match answer.as_string() {
            Some(a) => Ok(a),
            None if answer.is_undefined() => Ok(String::new()),
            None => Err(AgentError::Config(
                "resume(checkpoint, answer): answer must be a string".into(),
            )),
        };
        let mut seed = None;
        let run = answer.and_then(|answer| {
            let (js_text, text) = checkpoint_text(&checkpoint)?;
            let cp = Checkpoint::from_json(&text)?;
            seed = Some((js_text, cp.messages.len()));
            Ok(Run::resume(cp, &answer, inner.config.max_iterations, new_run_id)?)
        });
        future_to_promise(run_to_js(inner, run, seed))
    }

    /// `session(saver, id, { keepCompleted? })`: the run stored under `id` in `saver`.
    pub fn session(&self, saver: JsValue, id: JsValue, options: JsValue) -> Result<JsSession, JsValue> {
        let saver = JsSaver::new(saver)?;
        let id = id
            .as_string()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| config_error("session(saver, id): id must be a non-empty string".into()))?;
        let keep = match get(&options, "keepCompleted") {
            k if k.is_undefined() || k.is_null() => false,
            k => k
                .as_bool()
                .ok_or_else(|| config_error("session options.keepCompleted: expected a boolean".into()))?,
        };
        Ok(JsSession {
            agent: Rc::clone(&self.inner),
            saver: Rc::new(saver),
            id,
            keep,
        })
    }
}

/// A conversation stored in a saver under an id: `prompt(message)` and `reply(answer)`.
#[wasm_bindgen(js_name = Session)]
pub struct JsSession {
    agent: Rc<JsAgentInner>,
    saver: Rc<JsSaver>,
    id: String,
    keep: bool,
}

impl JsSession {
    fn turn(&self, text: JsValue, reply: bool) -> Promise {
        let (agent, saver, id, keep) = (
            Rc::clone(&self.agent),
            Rc::clone(&self.saver),
            self.id.clone(),
            self.keep,
        );
        future_to_promise(async move {
            let what = if reply { "reply(answer)" } else { "prompt(message)" };
            let text = text
                .as_string()
                .ok_or_else(|| config_error(format!("{what}: expected a string")))?;
            let model = JsModel::new(&agent, None);
            let turn = if reply { Turn::Reply(&text) } else { Turn::Prompt(&text) };
            match run_session(&agent.config, &model, &*saver, &id, turn, keep).await {
                Ok(outcome) => Ok(outcome_to_js(&outcome, None)),
                Err(e) => {
                    let cause = match &e {
                        AgentError::Saver { .. } => saver.last_error.borrow_mut().take(),
                        _ => model.last_error.borrow_mut().take(),
                    };
                    Err(agent_error(e, cause))
                }
            }
        })
    }
}

#[wasm_bindgen(js_class = Session)]
impl JsSession {
    /// Starts the session (or continues a completed, kept one) with `message`.
    pub fn prompt(&self, message: JsValue) -> Promise {
        self.turn(message, false)
    }

    /// Answers the session's pending question.
    pub fn reply(&self, answer: JsValue) -> Promise {
        self.turn(answer, true)
    }

    /// The session's id.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.id.clone()
    }
}
