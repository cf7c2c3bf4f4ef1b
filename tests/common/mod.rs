//! Test doubles: a model that checks every request is provider-valid and records it, and counting tools.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    dead_code
)] // test code
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use resumable_agent::{
    Agent, AgentBuilder, ContentBlock, InterruptError, MaybeSend, Message, Model, ModelError, ModelRequest,
    ModelResponse, Role, ToolError, tool,
};
use serde_json::{Value, json};

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    pollster::block_on(f)
}

/// Asserts what every provider requires: each tool_use answered by exactly one tool_result in the
/// next (user) message, no stray results, and no unanswered calls at the end.
pub fn assert_provider_valid(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        let calls: Vec<&str> = m.tool_uses().map(|u| u.id.as_str()).collect();
        let results_here: Vec<&str> = m.tool_results().map(|r| r.tool_use_id.as_str()).collect();
        if !results_here.is_empty() {
            let prev = &messages[i - 1];
            let prev_calls: Vec<&str> = prev.tool_uses().map(|u| u.id.as_str()).collect();
            assert_eq!(m.role, Role::User, "messages[{i}]: tool results outside a user message");
            assert_eq!(
                results_here,
                prev_calls,
                "messages[{i}]: results must answer messages[{}] in order",
                i - 1
            );
        }
        if !calls.is_empty() {
            let next = messages
                .get(i + 1)
                .unwrap_or_else(|| panic!("messages[{i}]: unanswered tool calls sent to the model"));
            let answered: Vec<&str> = next.tool_results().map(|r| r.tool_use_id.as_str()).collect();
            assert_eq!(
                answered,
                calls,
                "messages[{}] must answer every call of messages[{i}]",
                i + 1
            );
        }
    }
}

/// A scripted model that validates and records every request.
#[derive(Default)]
pub struct TestModel {
    script: Mutex<VecDeque<Result<ModelResponse, ModelError>>>,
    /// Answer by the number of assistant turns in the request (as `ScriptedModel` does), not in call order.
    by_turn: Option<Vec<ModelResponse>>,
    pub requests: Mutex<Vec<Vec<Message>>>,
    pub systems: Mutex<Vec<Option<String>>>,
    /// The tool names of each request.
    pub tools: Mutex<Vec<Vec<String>>>,
}

impl TestModel {
    pub fn new(script: impl IntoIterator<Item = ModelResponse>) -> Arc<Self> {
        Arc::new(TestModel {
            script: Mutex::new(script.into_iter().map(Ok).collect()),
            ..Default::default()
        })
    }
    pub fn with_results(script: impl IntoIterator<Item = Result<ModelResponse, ModelError>>) -> Arc<Self> {
        Arc::new(TestModel {
            script: Mutex::new(script.into_iter().collect()),
            ..Default::default()
        })
    }
    /// A model whose answer depends on the conversation only, so a fresh instance continues any run.
    pub fn by_turn(script: impl IntoIterator<Item = ModelResponse>) -> Arc<Self> {
        Arc::new(TestModel {
            by_turn: Some(script.into_iter().collect()),
            ..Default::default()
        })
    }
    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
    pub fn last_request(&self) -> Vec<Message> {
        self.requests
            .lock()
            .unwrap()
            .last()
            .cloned()
            .expect("the model was never called")
    }
}

impl Model for TestModel {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        assert_provider_valid(request.messages);
        self.requests.lock().unwrap().push(request.messages.to_vec());
        self.systems.lock().unwrap().push(request.system.map(str::to_owned));
        self.tools
            .lock()
            .unwrap()
            .push(request.tools.iter().map(|t| t.name.clone()).collect());
        let next = match &self.by_turn {
            Some(script) => {
                let turn = resumable_agent::ScriptedModel::turn_of(request.messages);
                script.get(turn).cloned().ok_or(ModelError::ScriptExhausted {
                    len: script.len(),
                    turn,
                })
            }
            None => self
                .script
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or(Err(ModelError::ScriptExhausted { len: 0, turn: 0 })),
        };
        std::future::ready(next)
    }
}

/// Counts how often each tool ran, and the order in which side-effecting calls (lookup, fail) ran.
#[derive(Clone, Default)]
pub struct Counters {
    pub lookup: Arc<AtomicUsize>,
    pub ask: Arc<AtomicUsize>,
    pub fail: Arc<AtomicUsize>,
    pub ran: Arc<Mutex<Vec<String>>>,
    /// Inputs the approval-gated tools ran with, as `(tool, call id, input)`.
    pub gated: Arc<Mutex<Vec<(String, String, Value)>>>,
}

impl Counters {
    pub fn get(c: &Arc<AtomicUsize>) -> usize {
        c.load(Ordering::SeqCst)
    }
}

/// The human's answer to `question` when `ask_user` answers inline.
pub fn answer_for(question: &str) -> String {
    format!("answer to {question}")
}

/// `lookup` returns `{"key": <input.key>, "value": "v-<key>"}`; `ask_user` interrupts with `input.question`;
/// `fail` fails with "boom: <input.why>".
pub fn agent_with(model: Arc<TestModel>, counters: &Counters) -> AgentBuilder {
    agent_asking(model, counters, false)
}

/// [`agent_with`] over any model.
pub fn agent_with_model(model: impl Model + 'static, counters: &Counters) -> AgentBuilder {
    agent_asking(model, counters, false)
}

/// As [`agent_with`], but `ask_user` returns [`answer_for`] at once instead of pausing.
pub fn agent_answering_inline(model: Arc<TestModel>, counters: &Counters) -> AgentBuilder {
    agent_asking(model, counters, true)
}

fn agent_asking(model: impl Model + 'static, counters: &Counters, inline: bool) -> AgentBuilder {
    let c = counters.clone();
    let lookup = tool(
        "lookup",
        "Look a key up.",
        json!({"type": "object"}),
        move |input: Value, ctx| {
            c.lookup.fetch_add(1, Ordering::SeqCst);
            c.ran.lock().unwrap().push(ctx.tool_use_id.to_owned());
            let key = input["key"].as_str().unwrap_or("").to_owned();
            async move { Ok(json!({"key": key, "value": format!("v-{key}")})) }
        },
    );
    let c = counters.clone();
    let ask = tool(
        "ask_user",
        "Ask the human.",
        json!({"type": "object"}),
        move |input: Value, _| {
            c.ask.fetch_add(1, Ordering::SeqCst);
            let q = input["question"].as_str().unwrap_or("?").to_owned();
            async move {
                if inline {
                    Ok(Value::String(answer_for(&q)))
                } else {
                    Err::<Value, ToolError>(InterruptError::new(q).into())
                }
            }
        },
    );
    let c = counters.clone();
    let fail = tool(
        "fail",
        "Always fails.",
        json!({"type": "object"}),
        move |input: Value, ctx| {
            c.fail.fetch_add(1, Ordering::SeqCst);
            c.ran.lock().unwrap().push(ctx.tool_use_id.to_owned());
            let why = input["why"].as_str().unwrap_or("").to_owned();
            async move { Err::<Value, ToolError>(ToolError::failed(format!("boom: {why}"))) }
        },
    );
    Agent::builder(model)
        .instructions("Be brief.")
        .tool(lookup)
        .tool(ask)
        .tool(fail)
}

/// [`agent_with`] plus two tools whose calls need a human's approval: `send` (always) and `charge` (always,
/// within an hour, denied when that passes). Both record the input they ran with in `counters.gated`.
pub fn agent_with_gates(model: Arc<TestModel>, counters: &Counters) -> AgentBuilder {
    let gated = |name: &'static str| {
        let c = counters.clone();
        tool(
            name,
            "Needs approval.",
            json!({"type": "object", "properties": {"to": {"type": "string"}, "n": {"type": "integer"}}}),
            move |input: Value, ctx| {
                c.gated
                    .lock()
                    .unwrap()
                    .push((name.to_owned(), ctx.tool_use_id.to_owned(), input.clone()));
                c.ran.lock().unwrap().push(ctx.tool_use_id.to_owned());
                async move { Ok(json!({"done": name, "input": input})) }
            },
        )
    };
    agent_with(model, counters).tool(gated("send").needs_approval()).tool(
        gated("charge")
            .needs_approval_within(3_600_000)
            .on_expire(resumable_agent::OnExpire::Deny),
    )
}

pub fn call(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(resumable_agent::ToolUse::new(id, name, input))
}

pub fn turn(blocks: Vec<ContentBlock>) -> ModelResponse {
    ModelResponse::new(blocks)
}
