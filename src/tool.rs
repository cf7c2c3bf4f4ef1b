//! Tools: what the model can call, and how a tool pauses the run for a human.

use std::future::Future;

use serde_json::Value;

use crate::model::ToolDefinition;
use crate::platform::{BoxFuture, MaybeSend, MaybeSync};

/// Raised by a tool to pause the run and ask the human `question`.
///
/// The run stops at once; [`Agent::resume`](crate::Agent::resume) later turns the answer into this
/// call's result.
///
/// ```
/// use resumable_agent::{InterruptError, ToolError};
/// fn ask(question: &str) -> Result<serde_json::Value, ToolError> {
///     Err(InterruptError::new(question).into())
/// }
/// assert!(matches!(ask("Your deadline?"), Err(ToolError::Interrupt(_))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("interrupted: {question}")]
pub struct InterruptError {
    /// What to ask the human.
    pub question: String,
}

impl InterruptError {
    /// Pauses with `question`.
    pub fn new(question: impl Into<String>) -> Self {
        InterruptError {
            question: question.into(),
        }
    }
}

/// How a tool call can end other than with a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// Pause the run for a human answer.
    #[error(transparent)]
    Interrupt(#[from] InterruptError),
    /// The tool failed; the model receives the message as an error result and can recover.
    #[error("{0}")]
    Failed(String),
}

impl ToolError {
    /// A failure the model will read.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::Failed(message.into())
    }
}

/// Where a call happens: stable ids to make side effects idempotent.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ToolContext<'a> {
    /// The model's id for this call (its `tool_use` id).
    pub tool_use_id: &'a str,
    /// The run's id (stable across pauses and resumes).
    pub run_id: &'a str,
}

/// A tool the model can call.
pub trait Tool: MaybeSend + MaybeSync {
    /// Name, description and input schema, as sent to the model.
    fn definition(&self) -> ToolDefinition;

    /// Runs the call. Return a string (sent as is) or any JSON value (sent JSON-encoded).
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a;
}

/// Object-safe form of [`Tool`], implemented for every tool.
pub(crate) trait DynTool: MaybeSend + MaybeSync {
    fn definition(&self) -> ToolDefinition;
    fn call_dyn<'a>(&'a self, input: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value, ToolError>>;
}

impl<T: Tool> DynTool for T {
    fn definition(&self) -> ToolDefinition {
        Tool::definition(self)
    }
    fn call_dyn<'a>(&'a self, input: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.call(input, ctx))
    }
}

/// A tool made of a definition and an async function; see [`tool`].
pub struct FnTool<F> {
    definition: ToolDefinition,
    f: F,
}

/// Makes a tool from a closure returning a future.
///
/// ```
/// use resumable_agent::{tool, InterruptError};
/// use serde_json::json;
/// let ask_user = tool(
///     "ask_user",
///     "Ask the human a clarifying question.",
///     json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}),
///     |input, _ctx| async move {
///         let q = input["question"].as_str().unwrap_or("?").to_owned();
///         Err(InterruptError::new(q).into())
///     },
/// );
/// # let _ = ask_user;
/// ```
pub fn tool<F, Fut>(name: impl Into<String>, description: impl Into<String>, input_schema: Value, f: F) -> FnTool<F>
where
    F: Fn(Value, ToolContext<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<Value, ToolError>> + MaybeSend + 'static,
{
    FnTool {
        definition: ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema,
        },
        f,
    }
}

impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(Value, ToolContext<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<Value, ToolError>> + MaybeSend + 'static,
{
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }
    fn call<'a>(
        &'a self,
        input: Value,
        ctx: ToolContext<'a>,
    ) -> impl Future<Output = Result<Value, ToolError>> + MaybeSend + 'a {
        (self.f)(input, ctx)
    }
}
