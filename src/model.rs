//! The model contract: one request with the whole conversation in, one assistant turn out.

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{ContentBlock, Message, Usage};
use crate::platform::{BoxFuture, MaybeSend, MaybeSync};

/// A tool as the model sees it: `{ name, description, inputSchema }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// Unique name the model calls it by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the input (an object schema).
    pub input_schema: Value,
}

impl ToolDefinition {
    /// A definition from its parts.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }
}

/// What the model is asked: `{ system?, messages, tools }`.
#[derive(Debug, Clone, Copy, Serialize)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The agent's instructions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<&'a str>,
    /// The whole conversation; every `tool_use` is answered in the following message.
    pub messages: &'a [Message],
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition],
    /// How many leading messages are the same as in the previous request of the same run (0 for a run's first
    /// request, or when unknown): a model that converts the conversation into another form (the npm package's
    /// JS objects, a provider's body) can keep what it converted before and convert only the rest.
    #[serde(skip)]
    pub unchanged: usize,
    /// The most bytes of an answer worth reading: the agent's `maxCheckpointBytes` (an answer larger than a
    /// checkpoint may be could not be kept). A model over HTTP stops reading there and fails the call.
    #[serde(skip)]
    pub max_response_bytes: usize,
    /// Where a model that retries its request counts the retries it made (a traced run reports them on the
    /// call's `chat` span); `None`: nobody counts.
    #[serde(skip)]
    pub retries: Option<&'a std::sync::atomic::AtomicU32>,
}

impl<'a> ModelRequest<'a> {
    /// A request without system instructions.
    pub fn new(messages: &'a [Message], tools: &'a [ToolDefinition]) -> Self {
        ModelRequest {
            system: None,
            messages,
            tools,
            unchanged: 0,
            max_response_bytes: crate::limits::DEFAULT_MAX_CHECKPOINT_BYTES,
            retries: None,
        }
    }

    /// The same request with system instructions.
    pub fn with_system(mut self, system: &'a str) -> Self {
        self.system = Some(system);
        self
    }
}

/// The model's answer: `{ content, usage?, stopReason? }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ModelResponse {
    /// The assistant turn: text and `tool_use` blocks (and thinking).
    pub content: Vec<ContentBlock>,
    /// Tokens this call used, if the model reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped, when it says. A cut answer, a refusal or a content filter is not recorded as an
    /// answer: the run stops with [`ModelError::Stopped`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// The provider's id of this answer (`msg_…`, `chatcmpl-…`, `resp_…`), when it gives one: reported on a
    /// traced run's `chat` span, never kept in the checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that answered, as the provider names it (it may be more exact than the one asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Why a model stopped writing: `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `refusal`,
/// `content_filter`, or what else a provider says (kept as its own text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum StopReason {
    /// A finished answer (Anthropic `end_turn`, OpenAI `stop`).
    EndTurn,
    /// The model calls tools (`tool_use`, `tool_calls`).
    ToolUse,
    /// Cut at the output token limit (`max_tokens`, OpenAI `length` and `max_output_tokens`; also a full context
    /// window).
    MaxTokens,
    /// A stop sequence ended it.
    StopSequence,
    /// The model declined (Anthropic `refusal`, an OpenAI `refusal`).
    Refusal,
    /// The provider's content filter stopped it (`content_filter`; Gemini `SAFETY`, `PROHIBITED_CONTENT`,
    /// `BLOCKLIST`, `SPII`, `IMAGE_SAFETY`).
    ContentFilter,
    /// Stopped for reciting training data (`recitation`, Gemini `RECITATION`).
    Recitation,
    /// The prompt itself was blocked, nothing was written (`prompt_blocked`, Gemini `promptFeedback.blockReason`).
    PromptBlocked,
    /// Anything else, as the provider wrote it.
    Other(String),
}

impl StopReason {
    /// The answer is not one to keep: cut, refused, filtered, recited or blocked.
    pub fn is_unusable(&self) -> bool {
        matches!(
            self,
            StopReason::MaxTokens
                | StopReason::Refusal
                | StopReason::ContentFilter
                | StopReason::Recitation
                | StopReason::PromptBlocked
        )
    }
}

impl From<String> for StopReason {
    fn from(s: String) -> Self {
        match s.as_str() {
            "end_turn" | "stop" => StopReason::EndTurn,
            "tool_use" | "tool_calls" | "function_call" => StopReason::ToolUse,
            "max_tokens" | "length" | "model_context_window_exceeded" | "max_output_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "refusal" => StopReason::Refusal,
            "content_filter" => StopReason::ContentFilter,
            "recitation" => StopReason::Recitation,
            "prompt_blocked" => StopReason::PromptBlocked,
            _ => StopReason::Other(s),
        }
    }
}

impl From<StopReason> for String {
    fn from(r: StopReason) -> Self {
        r.as_str().to_owned()
    }
}

impl StopReason {
    /// The reason as the package names it (`max_tokens`, `refusal`, …).
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::Refusal => "refusal",
            StopReason::ContentFilter => "content_filter",
            StopReason::Recitation => "recitation",
            StopReason::PromptBlocked => "prompt_blocked",
            StopReason::Other(s) => s,
        }
    }
}

impl ModelResponse {
    /// An answer made of `content`.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        ModelResponse {
            content,
            usage: None,
            stop_reason: None,
            id: None,
            model: None,
        }
    }

    /// A final text answer.
    pub fn text(text: impl Into<String>) -> Self {
        ModelResponse::new(vec![ContentBlock::text(text.into())])
    }

    /// The same response with its stop reason.
    pub fn with_stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// One tool call (plus nothing else).
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ModelResponse::tool_calls([(id, name, input)])
    }

    /// Several tool calls in one turn, in order.
    pub fn tool_calls<I, N>(calls: impl IntoIterator<Item = (I, N, Value)>) -> Self
    where
        I: Into<String>,
        N: Into<String>,
    {
        let content = calls
            .into_iter()
            .map(|(id, name, input)| ContentBlock::ToolUse(crate::message::ToolUse::new(id, name, input)))
            .collect();
        ModelResponse::new(content)
    }

    /// The same response reporting `usage`.
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
        });
        self
    }

    /// Decodes a response from JSON text, naming the path of the first problem.
    ///
    /// # Errors
    /// [`ModelError::InvalidResponse`].
    pub fn from_json(json: &str) -> Result<Self, ModelError> {
        serde_json::from_str::<ModelResponse>(json).or_else(|fast| {
            let invalid = |path: &str, problem: String| ModelError::InvalidResponse {
                path: path.to_owned(),
                problem,
            };
            let value: Value = serde_json::from_str(json).map_err(|e| invalid("", e.to_string()))?;
            let content = value
                .get("content")
                .ok_or_else(|| invalid("content", "missing (expected an array of content blocks)".into()))?;
            let blocks = content
                .as_array()
                .ok_or_else(|| invalid("content", "expected an array of content blocks".into()))?;
            crate::checkpoint::explain_blocks(blocks, "content").map_err(|e| match e {
                crate::CheckpointError::Invalid { path, problem } => invalid(&path, problem),
                other => invalid("content", other.to_string()),
            })?;
            Err(invalid("", fast.to_string()))
        })
    }
}

/// A piece of a model's answer as it streams in. Only the whole answer a stream ends with is recorded;
/// deltas are for showing it as it is written.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Delta<'a> {
    /// More text of the answer.
    Text(&'a str),
    /// More of a tool call's input (JSON text, in pieces that need not parse alone).
    ToolCall {
        /// The call's id.
        id: &'a str,
        /// The tool it calls.
        name: &'a str,
        /// The next piece of its input.
        input: &'a str,
    },
    /// The stream broke and the model is being asked again: forget the deltas of this answer so far.
    Restart,
}

/// Receives the [`Delta`]s of a streaming answer.
pub trait DeltaSink: MaybeSend {
    /// Called for each piece, in order.
    fn delta(&mut self, delta: Delta<'_>);
}

impl<F: FnMut(Delta<'_>) + MaybeSend> DeltaSink for F {
    fn delta(&mut self, delta: Delta<'_>) {
        self(delta)
    }
}

/// A language model. Implement it for your own client, or use a provider or [`ScriptedModel`].
///
/// Futures are `Send` natively and need not be on wasm32 (see [`MaybeSend`]).
pub trait Model: MaybeSend + MaybeSync {
    /// Produces the next assistant turn.
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a;

    /// Produces the next assistant turn, reporting it to `sink` as it arrives (a caller that shows the run
    /// live). The answer returned is the whole turn, as from [`Model::complete`]; the default streams
    /// nothing and calls it.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let _ = sink;
        self.complete(request)
    }

    /// Who serves the model and its name, as a traced run reports them (`gen_ai.provider.name`,
    /// `gen_ai.request.model`). The default names neither.
    fn info(&self) -> ModelInfo<'_> {
        ModelInfo::default()
    }
}

/// A model's provider and name, as OpenTelemetry's GenAI conventions name them (`anthropic`, `openai`,
/// `gcp.gemini`, …; `claude-sonnet-4-5`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelInfo<'a> {
    /// `gen_ai.provider.name`; empty when unknown.
    pub provider: &'a str,
    /// `gen_ai.request.model`; empty when unknown.
    pub model: &'a str,
}

impl<'a> ModelInfo<'a> {
    /// `model` served by `provider`.
    pub fn new(provider: &'a str, model: &'a str) -> Self {
        ModelInfo { provider, model }
    }
}

/// A [`Model`] behind a pointer (`Box<dyn DynModel>`), for code that picks its model at run time (a provider
/// named in configuration): every [`Model`] is one, and a boxed one is a [`Model`] again. Its futures are
/// boxed.
///
/// ```
/// use resumable_agent::{Agent, DynModel, ModelResponse, ScriptedModel};
/// let model: Box<dyn DynModel> = Box::new(ScriptedModel::new([ModelResponse::text("Hi!")]));
/// let agent = Agent::builder(model).build()?;
/// # let _ = agent;
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub trait DynModel: MaybeSend + MaybeSync {
    /// [`Model::complete`].
    fn complete_dyn<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
    /// [`Model::stream`].
    fn stream_dyn<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;
    /// [`Model::info`].
    fn info_dyn(&self) -> ModelInfo<'_>;
}

impl<M: Model> DynModel for M {
    fn complete_dyn<'a>(&'a self, request: ModelRequest<'a>) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(self.complete(request))
    }
    fn stream_dyn<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(self.stream(request, sink))
    }
    fn info_dyn(&self) -> ModelInfo<'_> {
        self.info()
    }
}

impl Model for Box<dyn DynModel> {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        (**self).complete_dyn(request)
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        (**self).stream_dyn(request, sink)
    }

    fn info(&self) -> ModelInfo<'_> {
        (**self).info_dyn()
    }
}

impl ModelResponse {
    /// Reports this whole answer to `sink` as a streamed one would arrive: its text word by word, each tool
    /// call's input whole. How a model whose answers exist whole from the start (a script) shows what
    /// streaming looks like.
    pub fn stream_to(&self, sink: &mut dyn DeltaSink) {
        for block in &self.content {
            match block {
                ContentBlock::Text { text, .. } => {
                    for word in text.split_inclusive(' ') {
                        sink.delta(Delta::Text(word));
                    }
                }
                ContentBlock::ToolUse(u) => sink.delta(Delta::ToolCall {
                    id: &u.id,
                    name: &u.name,
                    input: &u.input.to_string(),
                }),
                _ => {}
            }
        }
    }
}

type ScriptFn = Box<dyn Fn(&ModelRequest<'_>) -> ModelResponse + Send + Sync>;

enum Scripted {
    Fixed(ModelResponse),
    Computed(ScriptFn),
}

/// A model that plays back a script, for tests and demos.
///
/// Response *k* answers a conversation that holds *k* assistant messages, so the script depends only on
/// the history it is shown: a run resumed in another process, Worker instance or tab gets the same
/// answers as one that never stopped, and retrying a failed call gets the same response.
///
/// ```
/// use resumable_agent::{Agent, ModelResponse, ScriptedModel};
/// let model = ScriptedModel::new([ModelResponse::text("Hello!")]);
/// let agent = Agent::builder(model).build()?;
/// let done = pollster::block_on(agent.prompt("Hi"))?.assert_complete()?;
/// assert_eq!(done.text, "Hello!");
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub struct ScriptedModel {
    script: Vec<Scripted>,
}

impl ScriptedModel {
    /// A model answering with `responses` in turn.
    pub fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        ScriptedModel {
            script: responses.into_iter().map(Scripted::Fixed).collect(),
        }
    }

    /// Appends a response computed from the request (e.g. to echo a tool result).
    pub fn then(mut self, f: impl Fn(&ModelRequest<'_>) -> ModelResponse + Send + Sync + 'static) -> Self {
        self.script.push(Scripted::Computed(Box::new(f)));
        self
    }

    /// Which response of a script answers `messages`: the number of assistant turns they hold.
    pub fn turn_of(messages: &[Message]) -> usize {
        messages
            .iter()
            .filter(|m| m.role == crate::message::Role::Assistant)
            .count()
    }

    /// Appends a fixed response.
    pub fn then_respond(mut self, response: ModelResponse) -> Self {
        self.script.push(Scripted::Fixed(response));
        self
    }
}

impl Model for ScriptedModel {
    /// Plays the response back as deltas (its text word by word, each call's input whole), then returns it.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let result = self.play(&request);
        if let Ok(response) = &result {
            response.stream_to(sink);
        }
        std::future::ready(result)
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        std::future::ready(self.play(&request))
    }

    fn info(&self) -> ModelInfo<'_> {
        ModelInfo::new("scripted", "scripted")
    }
}

impl ScriptedModel {
    fn play(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let turn = ScriptedModel::turn_of(request.messages);
        match self.script.get(turn) {
            Some(Scripted::Fixed(r)) => Ok(r.clone()),
            Some(Scripted::Computed(f)) => Ok(f(request)),
            None => Err(ModelError::ScriptExhausted {
                len: self.script.len(),
                turn: turn.saturating_add(1),
            }),
        }
    }
}

/// Share one model between agents (or keep a handle to inspect it).
impl<M: Model> Model for std::sync::Arc<M> {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        (**self).complete(request)
    }

    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        (**self).stream(request, sink)
    }

    fn info(&self) -> ModelInfo<'_> {
        (**self).info()
    }
}

/// A model call that failed or answered with something unusable.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model (a JS function, an HTTP provider, ...) failed.
    #[error("model call failed: {message}")]
    Failed {
        /// The error's name, e.g. `TypeError`, when it has one.
        name: Option<String>,
        /// What the model reported.
        message: String,
    },
    /// An HTTP provider answered with an error status, or could not be reached (`status` is `None`).
    #[error("{provider} request failed{}: {message}", status.map(|s| format!(" with HTTP {s}")).unwrap_or_default())]
    Http {
        /// `"anthropic"`, `"openai"`, ...
        provider: String,
        /// The HTTP status, or `None` for a network failure or timeout.
        status: Option<u16>,
        /// The provider's own message (the API key is never in it).
        message: String,
        /// True for 408, 429, 529, 5xx and network failures: trying again may work.
        retryable: bool,
    },
    /// The provider's settings are unusable (a setting the API would refuse); nothing was sent.
    #[error("{provider} settings: {problem}")]
    Settings {
        /// `"anthropic"`, `"openai"`, ...
        provider: String,
        /// The setting and what is wrong with it.
        problem: String,
    },
    /// The response does not have the expected shape.
    #[error("model response {path}: {problem}")]
    InvalidResponse {
        /// JSON path inside the response, e.g. `content[1].id`.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// The model stopped without an answer to keep: cut at its output token limit, a refusal, or a content
    /// filter. Nothing of the answer was recorded (a cut tool call never runs); the run is as before the call
    /// but for its usage, which counts the tokens this call spent (they were billed).
    #[error("{}", stopped_message(reason, text))]
    Stopped {
        /// Why it stopped.
        reason: StopReason,
        /// The text it wrote before stopping (for a refusal, its explanation).
        text: String,
        /// What this call spent, when the provider said.
        usage: Option<Usage>,
    },
    /// The request was stopped by its abort signal (the provider's own, or the call's): not retried, and the
    /// run ends in [`AgentError::Aborted`](crate::AgentError::Aborted) with its checkpoint from before the
    /// call.
    #[error("{provider} request aborted by its signal")]
    Aborted {
        /// `"anthropic"`, `"openai"`, ...
        provider: String,
    },
    /// A [`ScriptedModel`](crate::ScriptedModel) was asked for a turn its script does not have.
    #[error(
        "scriptedModel: the script has {len} responses but the conversation asks for assistant turn {turn}; add a response to the script"
    )]
    ScriptExhausted {
        /// Responses in the script.
        len: usize,
        /// 1-based number of the assistant turn asked for.
        turn: usize,
    },
}

fn stopped_message(reason: &StopReason, text: &str) -> String {
    use StopReason;
    match reason {
        StopReason::MaxTokens => "the model's answer was cut at its output token limit (max_tokens), so none of it was kept and no tool call of it ran: raise the model's maxTokens and resume the error's checkpoint with ''".to_owned(),
        StopReason::Refusal if text.is_empty() => "the model refused to answer (refusal)".to_owned(),
        StopReason::Refusal => format!("the model refused to answer (refusal): {text}"),
        StopReason::ContentFilter => "the provider's content filter stopped the model's answer (content_filter)".to_owned(),
        StopReason::Recitation => "the provider stopped the model's answer for reciting its training data (recitation)".to_owned(),
        StopReason::PromptBlocked => "the provider blocked the prompt, so the model wrote nothing (prompt_blocked)".to_owned(),
        other => format!(
            "the model's answer ended abnormally ({}), so none of it was kept and no tool call of it ran",
            other.as_str()
        ),
    }
}
