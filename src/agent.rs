//! The agent and its async driver: the only place that awaits models and tools.

use serde_json::Value;

use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::message::{Message, ToolUse, Usage};
use crate::model::{DynModel, Model, ModelRequest, ToolDefinition};
use crate::platform::{new_run_id, now_ms};
use crate::run::{Run, Step, ToolOutcome};
use crate::tool::{DynTool, Tool, ToolContext, ToolError};

/// Default bound on model calls per run (across resumes).
pub const DEFAULT_MAX_ITERATIONS: u32 = 25;

/// The configuration a run needs besides the model: instructions, tools and limits.
pub(crate) struct AgentConfig {
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<Box<dyn DynTool>>,
    pub(crate) definitions: Vec<ToolDefinition>,
    pub(crate) max_iterations: u32,
}

/// An agent: a model, tools and instructions. Cheap to keep and share; every call is independent.
///
/// ```
/// use resumable_agent::{tool, Agent, InterruptError, ModelResponse, ScriptedModel};
/// use serde_json::json;
///
/// let model = ScriptedModel::new([
///     ModelResponse::tool_call("c1", "ask_user", json!({"question": "Your deadline?"})),
///     ModelResponse::text("Planned for the end of Q2."),
/// ]);
/// let ask = tool("ask_user", "Ask the human.", json!({"type": "object"}), |input, _| async move {
///     Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into())
/// });
/// let agent = Agent::builder(model).tool(ask).build()?;
///
/// let paused = pollster::block_on(agent.prompt("Plan my project."))?;
/// assert_eq!(paused.question(), Some("Your deadline?"));
/// let json = paused.checkpoint().to_json(); // store it anywhere
///
/// let checkpoint = resumable_agent::Checkpoint::from_json(&json)?;
/// let done = pollster::block_on(agent.resume(checkpoint, "end of Q2"))?.assert_complete()?;
/// assert_eq!(done.text, "Planned for the end of Q2.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Agent {
    pub(crate) config: AgentConfig,
    pub(crate) model: Box<dyn DynModel>,
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    model: Box<dyn DynModel>,
    instructions: Option<String>,
    tools: Vec<Box<dyn DynTool>>,
    max_iterations: u32,
}

impl Agent {
    /// Starts building an agent around `model`.
    pub fn builder(model: impl Model + 'static) -> AgentBuilder {
        AgentBuilder {
            model: Box::new(model),
            instructions: None,
            tools: Vec::new(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
        }
    }

    /// Starts a run with a user message.
    ///
    /// # Errors
    /// [`AgentError::Model`] or [`AgentError::MaxIterations`], each with the last checkpoint.
    pub async fn prompt(&self, message: &str) -> Result<Outcome, AgentError> {
        let run = Run::start(message, self.config.max_iterations, new_run_id(), now_ms());
        drive(&self.config, &*self.model, run).await
    }

    /// Continues a checkpoint. With a pending question, `answer` becomes that call's result; otherwise a
    /// non-empty `answer` is a new user turn and an empty one continues where the history stands.
    ///
    /// # Errors
    /// [`AgentError::Checkpoint`] before anything runs; then as [`Agent::prompt`].
    pub async fn resume(&self, checkpoint: Checkpoint, answer: &str) -> Result<Outcome, AgentError> {
        let run = Run::resume(checkpoint, answer, self.config.max_iterations, new_run_id)?;
        drive(&self.config, &*self.model, run).await
    }
}

impl AgentBuilder {
    /// The system instructions.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(Box::new(tool));
        self
    }

    /// Bounds the number of model calls of a run, counted across resumes (default 25).
    pub fn max_iterations(mut self, max_iterations: u32) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// Checks the configuration and builds the agent.
    ///
    /// # Errors
    /// [`AgentError::Config`] for an empty or duplicate tool name.
    pub fn build(self) -> Result<Agent, AgentError> {
        let config = AgentConfig::new(self.instructions, self.tools, self.max_iterations)?;
        Ok(Agent {
            config,
            model: self.model,
        })
    }
}

impl AgentConfig {
    pub(crate) fn new(
        instructions: Option<String>,
        tools: Vec<Box<dyn DynTool>>,
        max_iterations: u32,
    ) -> Result<Self, AgentError> {
        let definitions: Vec<ToolDefinition> = tools.iter().map(|t| t.definition()).collect();
        for (i, d) in definitions.iter().enumerate() {
            if d.name.is_empty() {
                return Err(AgentError::Config(format!("tools[{i}].name: empty")));
            }
            if definitions.iter().take(i).any(|p| p.name == d.name) {
                return Err(AgentError::Config(format!(
                    "tools[{i}].name: {:?} is used by an earlier tool",
                    d.name
                )));
            }
        }
        Ok(AgentConfig {
            instructions,
            tools,
            definitions,
            max_iterations,
        })
    }

    pub(crate) fn request<'a>(&'a self, messages: &'a [Message]) -> ModelRequest<'a> {
        ModelRequest {
            system: self.instructions.as_deref(),
            messages,
            tools: &self.definitions,
        }
    }
}

/// Runs the state machine to its next stop, doing the I/O it asks for.
pub(crate) async fn drive(config: &AgentConfig, model: &dyn DynModel, mut run: Run) -> Result<Outcome, AgentError> {
    loop {
        match run.next() {
            Step::CallModel => {
                let reply = model.complete_dyn(config.request(&run.checkpoint().messages)).await;
                if let Err(source) = reply.and_then(|response| run.model_replied(response)) {
                    run.touch(now_ms());
                    return Err(AgentError::Model {
                        source,
                        checkpoint: Box::new(run.into_checkpoint()),
                    });
                }
            }
            Step::CallTool(ToolUse { id, name, input }) => {
                let outcome = call_tool(config, run.run_id(), &id, &name, input).await;
                run.tool_finished(id, outcome);
            }
            Step::OutOfIterations => {
                run.touch(now_ms());
                return Err(AgentError::MaxIterations {
                    limit: config.max_iterations,
                    checkpoint: Box::new(run.into_checkpoint()),
                });
            }
            Step::Interrupted(question) => {
                run.touch(now_ms());
                return Ok(Outcome::Interrupted(Interrupted {
                    question,
                    checkpoint: run.into_checkpoint(),
                }));
            }
            Step::Done(text) => {
                run.touch(now_ms());
                return Ok(Outcome::Complete(AgentResponse {
                    text,
                    checkpoint: run.into_checkpoint(),
                }));
            }
        }
    }
}

async fn call_tool(config: &AgentConfig, run_id: &str, id: &str, name: &str, input: Value) -> ToolOutcome {
    let found = config.definitions.iter().position(|d| d.name == name);
    let Some(tool) = found.and_then(|i| config.tools.get(i)) else {
        let known: Vec<&str> = config.definitions.iter().map(|d| d.name.as_str()).collect();
        return ToolOutcome::Error(format!("unknown tool {name:?}; available tools: {}", known.join(", ")));
    };
    // Providers keep arguments that were not a JSON object as their raw text: answer, don't run.
    if !input.is_object() {
        let raw = input.as_str().map_or_else(|| input.to_string(), str::to_owned);
        return ToolOutcome::Error(format!(
            "the arguments of this call are not a JSON object, so {name} did not run: {raw}; call it again with valid JSON arguments"
        ));
    }
    match tool
        .call_dyn(
            input,
            ToolContext {
                tool_use_id: id,
                run_id,
            },
        )
        .await
    {
        Ok(Value::String(text)) => ToolOutcome::Output(text),
        Ok(value) => ToolOutcome::Output(value.to_string()),
        Err(ToolError::Interrupt(i)) => ToolOutcome::Interrupt(i.question),
        Err(ToolError::Failed(message)) => ToolOutcome::Error(message),
    }
}

/// A run that finished: the final text and the checkpoint of the whole run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentResponse {
    /// The model's final text (its text blocks joined).
    pub text: String,
    /// The whole run; save it to continue the conversation later.
    pub checkpoint: Checkpoint,
}

impl AgentResponse {
    /// The conversation.
    pub fn messages(&self) -> &[Message] {
        &self.checkpoint.messages
    }
    /// Tokens used by the whole run.
    pub fn usage(&self) -> Usage {
        self.checkpoint.usage
    }
    /// Model calls made by the whole run.
    pub fn iterations(&self) -> u32 {
        self.checkpoint.iterations
    }
}

/// A run paused by a tool's [`InterruptError`](crate::InterruptError).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Interrupted {
    /// What to ask the human.
    pub question: String,
    /// Save it; pass it to [`Agent::resume`] with the answer.
    pub checkpoint: Checkpoint,
}

/// How a call to [`Agent::prompt`] or [`Agent::resume`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Finished.
    Complete(AgentResponse),
    /// Paused on a question.
    Interrupted(Interrupted),
}

impl Outcome {
    /// True when paused on a question.
    pub fn is_interrupted(&self) -> bool {
        matches!(self, Outcome::Interrupted(_))
    }

    /// The pending question, if paused.
    pub fn question(&self) -> Option<&str> {
        match self {
            Outcome::Interrupted(i) => Some(&i.question),
            Outcome::Complete(_) => None,
        }
    }

    /// The checkpoint, either way.
    pub fn checkpoint(&self) -> &Checkpoint {
        match self {
            Outcome::Complete(r) => &r.checkpoint,
            Outcome::Interrupted(i) => &i.checkpoint,
        }
    }

    /// The response of a finished run.
    ///
    /// # Errors
    /// [`AgentError::Interrupted`] (with the question and checkpoint) when the run is paused.
    pub fn assert_complete(self) -> Result<AgentResponse, AgentError> {
        match self {
            Outcome::Complete(r) => Ok(r),
            Outcome::Interrupted(i) => Err(AgentError::Interrupted {
                question: i.question,
                checkpoint: Box::new(i.checkpoint),
            }),
        }
    }
}
