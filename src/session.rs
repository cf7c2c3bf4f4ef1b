//! Sessions: a run kept in a [`Saver`] under an id, so each request only says "prompt" or "reply".

use crate::agent::{Agent, AgentConfig, Outcome, drive};
use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::model::DynModel;
use crate::platform::{new_run_id, now_ms};
use crate::run::Run;
use crate::saver::Saver;

/// A conversation stored under `id` in a saver: load the checkpoint, run, save it if paused, and on
/// completion delete it (default) or keep it. The saver holds checkpoints only — no other copy of state.
///
/// ```
/// use resumable_agent::{tool, Agent, InterruptError, MemorySaver, ModelResponse, ScriptedModel};
/// use serde_json::json;
/// let model = ScriptedModel::new([
///     ModelResponse::tool_call("c1", "ask_user", json!({"question": "Your deadline?"})),
///     ModelResponse::text("Planned."),
/// ]);
/// let ask = tool("ask_user", "Ask.", json!({"type": "object"}), |input, _| async move {
///     Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into())
/// });
/// let agent = Agent::builder(model).tool(ask).build()?;
/// let saver = MemorySaver::new();
///
/// let first = pollster::block_on(agent.session(&saver, "s1").prompt("Plan my project."))?;
/// assert_eq!(first.question(), Some("Your deadline?"));
/// // A later request, maybe in another Worker instance:
/// let done = pollster::block_on(agent.session(&saver, "s1").reply("end of Q2"))?.assert_complete()?;
/// assert_eq!(done.text, "Planned.");
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub struct Session<'a, S> {
    agent: &'a Agent,
    saver: &'a S,
    id: String,
    keep_completed: bool,
}

impl Agent {
    /// The session `id` stored in `saver`.
    pub fn session<'a, S: Saver>(&'a self, saver: &'a S, id: impl Into<String>) -> Session<'a, S> {
        Session {
            agent: self,
            saver,
            id: id.into(),
            keep_completed: false,
        }
    }
}

/// What a session call does with the run.
pub(crate) enum Turn<'a> {
    /// Start the session, or continue a finished one with a new user message.
    Prompt(&'a str),
    /// Answer the pending question (or add a user turn to a kept session).
    Reply(&'a str),
}

impl<S: Saver> Session<'_, S> {
    /// Keep the checkpoint after the run completes (to continue the conversation later) instead of deleting it.
    pub fn keep_completed(mut self, keep: bool) -> Self {
        self.keep_completed = keep;
        self
    }

    /// Starts the session with `message`; a completed, kept session continues with it as a new user turn.
    ///
    /// # Errors
    /// [`AgentError::SessionBusy`] when the session waits for an answer; [`AgentError::Saver`]; and as
    /// [`Agent::prompt`].
    pub async fn prompt(&self, message: &str) -> Result<Outcome, AgentError> {
        self.run(Turn::Prompt(message)).await
    }

    /// Answers the session's pending question.
    ///
    /// # Errors
    /// [`AgentError::SessionNotFound`] when nothing is saved under the id; [`AgentError::Saver`]; and as
    /// [`Agent::resume`].
    pub async fn reply(&self, answer: &str) -> Result<Outcome, AgentError> {
        self.run(Turn::Reply(answer)).await
    }

    async fn run(&self, turn: Turn<'_>) -> Result<Outcome, AgentError> {
        let a = self.agent;
        run_session(&a.config, &*a.model, self.saver, &self.id, turn, self.keep_completed).await
    }
}

/// Load → run → save (paused, or failed after progress) / delete or keep (completed).
pub(crate) async fn run_session<S: Saver + ?Sized>(
    config: &AgentConfig,
    model: &dyn DynModel,
    saver: &S,
    id: &str,
    turn: Turn<'_>,
    keep_completed: bool,
) -> Result<Outcome, AgentError> {
    let saved = saver.get(id).await.map_err(|source| AgentError::Saver {
        source,
        checkpoint: None,
    })?;
    let run = match (turn, saved) {
        (Turn::Prompt(_), Some(cp)) if cp.is_interrupted() => {
            return Err(AgentError::SessionBusy {
                id: id.to_owned(),
                question: cp.question.unwrap_or_default(),
            });
        }
        (Turn::Prompt(message), None) => Run::start(message, config.max_iterations, new_run_id(), now_ms()),
        (Turn::Prompt(text) | Turn::Reply(text), Some(cp)) => Run::resume(cp, text, config.max_iterations, new_run_id)?,
        (Turn::Reply(_), None) => return Err(AgentError::SessionNotFound { id: id.to_owned() }),
    };
    let outcome = drive(config, model, run).await;
    let to_save: Option<&Checkpoint> = match &outcome {
        Ok(Outcome::Interrupted(i)) => Some(&i.checkpoint),
        Ok(Outcome::Complete(r)) if keep_completed => Some(&r.checkpoint),
        Ok(Outcome::Complete(_)) => None,
        // Progress made before a failure is saved, so the next request continues from it.
        Err(e) => e.checkpoint(),
    };
    let stored = match to_save {
        Some(cp) => saver.put(id, cp).await,
        None => saver.delete(id).await,
    };
    match (stored, outcome) {
        (Ok(()), outcome) => outcome,
        (Err(source), Ok(o)) => Err(AgentError::Saver {
            source,
            checkpoint: Some(Box::new(o.checkpoint().clone())),
        }),
        // The run's own error already carries its checkpoint; it says more than the saver's.
        (Err(_), Err(e)) => Err(e),
    }
}
