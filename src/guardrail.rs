//! Guardrails: checks that stop a run on policy. Input guardrails see a turn's conversation before its first
//! model call (a tripped input is never sent to the model); output guardrails see the final answer before it is
//! returned. A guardrail passes, or trips a wire with what it found: the run ends in
//! [`AgentError::Guardrail`](crate::AgentError::Guardrail), carrying the checkpoint.

use std::future::Future;

use serde::Serialize;
use serde_json::Value;

use crate::message::Message;
use crate::platform::{BoxFuture, MaybeSend, MaybeSync};

/// Which side of a turn a guardrail checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum GuardrailKind {
    /// The conversation, before a turn's first model call.
    Input,
    /// The final answer, before it is returned.
    Output,
}

impl GuardrailKind {
    /// `input` or `output`.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardrailKind::Input => "input",
            GuardrailKind::Output => "output",
        }
    }
}

/// What a guardrail is shown.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GuardrailInput<'a> {
    /// `input` or `output`.
    pub kind: GuardrailKind,
    /// The conversation (for an output guardrail, ending with the answer).
    pub messages: &'a [Message],
    /// The answer's text (output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<&'a str>,
    /// The structured answer (output, with an output schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<&'a Value>,
}

impl<'a> GuardrailInput<'a> {
    /// What a guardrail of `kind` is shown of `messages` (no answer).
    pub fn new(kind: GuardrailKind, messages: &'a [Message]) -> Self {
        GuardrailInput {
            kind,
            messages,
            text: None,
            structured: None,
        }
    }
}

/// A guardrail's verdict.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// The run goes on.
    Pass,
    /// The run stops; `info` says why (plain JSON, handed to the caller with the error).
    Tripwire(Value),
}

/// A check on a turn's input or final answer. A guardrail that fails (`Err`) stops the run as a tripped one
/// would, its message as the `info`: a policy that could not be checked is not taken as passed.
pub trait Guardrail: MaybeSend + MaybeSync {
    /// Its name, in events and errors.
    fn name(&self) -> &str;
    /// Checks `input`.
    fn check<'a>(&'a self, input: GuardrailInput<'a>) -> BoxFuture<'a, Result<Verdict, String>>;
}

/// A [`Guardrail`] from a closure; see [`guardrail`].
pub struct FnGuardrail<F> {
    name: String,
    f: F,
}

/// A guardrail named `name` that runs `f`.
///
/// ```
/// use resumable_agent::{guardrail, Agent, AgentError, ModelResponse, ScriptedModel, Verdict};
/// let no_secrets = guardrail("no-secrets", |input| {
///     let leaked = input.text.is_some_and(|t| t.contains("sk-"));
///     async move { Ok(if leaked { Verdict::Tripwire(serde_json::json!({"reason": "a key"})) } else { Verdict::Pass }) }
/// });
/// let agent = Agent::builder(ScriptedModel::new([ModelResponse::text("the key is sk-123")]))
///     .output_guardrail(no_secrets)
///     .build()?;
/// let err = pollster::block_on(agent.prompt("key?")).unwrap_err();
/// assert!(matches!(err, AgentError::Guardrail { .. }));
/// # Ok::<(), AgentError>(())
/// ```
pub fn guardrail<F, Fut>(name: impl Into<String>, f: F) -> FnGuardrail<F>
where
    F: Fn(GuardrailInput<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<Verdict, String>> + MaybeSend + 'static,
{
    FnGuardrail { name: name.into(), f }
}

impl<F, Fut> Guardrail for FnGuardrail<F>
where
    F: Fn(GuardrailInput<'_>) -> Fut + MaybeSend + MaybeSync,
    Fut: Future<Output = Result<Verdict, String>> + MaybeSend + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn check<'a>(&'a self, input: GuardrailInput<'a>) -> BoxFuture<'a, Result<Verdict, String>> {
        Box::pin((self.f)(input))
    }
}

/// The guardrails of an agent.
#[derive(Clone, Default)]
pub(crate) struct Guardrails {
    pub(crate) input: Vec<std::sync::Arc<dyn Guardrail>>,
    pub(crate) output: Vec<std::sync::Arc<dyn Guardrail>>,
}

impl Guardrails {
    pub(crate) fn of(&self, kind: GuardrailKind) -> &[std::sync::Arc<dyn Guardrail>] {
        match kind {
            GuardrailKind::Input => &self.input,
            GuardrailKind::Output => &self.output,
        }
    }
}

/// What tripped: the guardrail's name and its info.
pub(crate) struct Tripped {
    pub(crate) name: String,
    pub(crate) info: Value,
}

/// Checks `input` with `g`: what it tripped on (a failure is tripped, its message the info), or `None`.
pub(crate) async fn check(g: &dyn Guardrail, input: GuardrailInput<'_>) -> Option<Tripped> {
    let info = match g.check(input).await {
        Ok(Verdict::Pass) => return None,
        Ok(Verdict::Tripwire(info)) => info,
        Err(message) => serde_json::json!({ "error": message }),
    };
    Some(Tripped {
        name: g.name().to_owned(),
        info,
    })
}
