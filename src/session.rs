//! Sessions: a run kept in a [`Saver`] under an id, with its history, so each request only says "prompt",
//! "reply" or "resume".
//!
//! The session's **head** is stored under its id (its latest checkpoint; a checkpoint saved there by older
//! releases is a head too), and every saved step also under `<id>#~<step>` (its **history**). Each
//! checkpoint carries its place: `thread: { id, step, parentStep?, label? }`. The run is saved after every
//! step; the first save of a call — the state with the human's input applied, before any model or tool call
//! — replaces the head only if it is still the one the call loaded (compare-and-set), so of several
//! concurrent replies exactly one runs and the others get [`AgentError::SessionBusy`].

use crate::agent::{Agent, AgentConfig, Hooks, Input, NoEvents, Outcome, Persist, drive};
use crate::checkpoint::{Checkpoint, ThreadInfo};
use crate::error::{AgentError, SaverError};
use crate::event::{Event, EventSink};
use crate::interrupt::Resume;
use crate::keys::Codec;
use crate::model::DynModel;
use crate::platform::BoxFuture;
use crate::saver::{Condition, SavedCheckpoint, Saver};

/// Separates a session id from a history step in keys (`<id>#~<step>`); session ids may not contain it.
pub const HISTORY_SEPARATOR: &str = "#~";

/// Default bound on history entries kept per session.
pub const DEFAULT_MAX_HISTORY: usize = 100;

/// A conversation stored under `id` in a saver. See the [module docs](self).
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
/// let session = agent.session(&saver, "s1").keep_completed(true);
/// let done = pollster::block_on(session.reply("end of Q2"))?.assert_complete()?;
/// assert_eq!(done.text, "Planned.");
/// let history = pollster::block_on(session.history(10, None))?;
/// // Newest first, saved after every step: the prompt (1), the model's call (2), the pause (3), the answer
/// // (4) and the final answer (5).
/// assert_eq!(history[0].summary.step, Some(5));
/// # Ok::<(), resumable_agent::AgentError>(())
/// ```
pub struct Session<'a, S> {
    agent: &'a Agent,
    saver: &'a S,
    id: String,
    options: SessionOptions,
}

/// How a session keeps its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionOptions {
    /// Keep the checkpoint (and history) when the run completes, instead of deleting the session.
    pub keep_completed: bool,
    /// History entries kept (oldest unlabelled ones are removed first); 0 keeps no history.
    pub max_history: usize,
    /// Save after every step (default), or only when the run starts and stops.
    pub save_every_step: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            keep_completed: false,
            max_history: DEFAULT_MAX_HISTORY,
            save_every_step: true,
        }
    }
}

impl Agent {
    /// The session `id` stored in `saver`.
    pub fn session<'a, S: Saver>(&'a self, saver: &'a S, id: impl Into<String>) -> Session<'a, S> {
        Session {
            agent: self,
            saver,
            id: id.into(),
            options: SessionOptions::default(),
        }
    }
}

/// What a session call does with the run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Turn {
    /// Start the session, or continue a finished one with a new user message.
    Prompt(String),
    /// Answer what the session waits for (or add a user turn to a kept session).
    Reply(Resume),
    /// Continue from the last saved step (after a crash): calls whose results were saved never run again.
    Continue,
}

/// The key of a session's history entry.
fn entry_key(id: &str, step: u64) -> String {
    format!("{id}{HISTORY_SEPARATOR}{step:010}")
}

fn check_id(id: &str) -> Result<(), AgentError> {
    if id.is_empty() || id.contains(HISTORY_SEPARATOR) {
        return Err(AgentError::Argument(format!(
            "session id {id:?}: must be non-empty and must not contain {HISTORY_SEPARATOR:?}"
        )));
    }
    Ok(())
}

fn saver_error(source: SaverError, checkpoint: Option<&Checkpoint>) -> AgentError {
    AgentError::Saver {
        source,
        checkpoint: checkpoint.map(|c| Box::new(c.clone())),
    }
}

/// The checkpoint stored under `key`, read as the agent reads checkpoints: under its limits, opened when
/// sealed, verified when it has keys. A signature that fails is a [`CheckpointError`](crate::CheckpointError)
/// naming the key; anything else that does not decode is a corrupt entry.
async fn load<S: Saver + ?Sized>(saver: &S, codec: Codec<'_>, key: &str) -> Result<Option<Checkpoint>, AgentError> {
    let Some(text) = saver.get_text(key).await.map_err(|e| saver_error(e, None))? else {
        return Ok(None);
    };
    match codec.decode(&text).await {
        Ok(cp) => Ok(Some(cp)),
        Err(crate::CheckpointError::Signature { problem }) => {
            Err(AgentError::Checkpoint(crate::CheckpointError::Signature {
                problem: format!("saved under {key:?}: {problem}"),
            }))
        }
        Err(source) => Err(saver_error(
            SaverError::Corrupt {
                key: key.to_owned(),
                source,
            },
            None,
        )),
    }
}

/// Stores `cp` under `key` as the agent writes checkpoints (signed, sealed when configured).
async fn store<S: Saver + ?Sized>(
    saver: &S,
    codec: Codec<'_>,
    key: &str,
    cp: &mut Checkpoint,
    condition: Condition,
) -> Result<(), SaverError> {
    let text = codec.encode(cp).await.map_err(|source| SaverError::Corrupt {
        key: key.to_owned(),
        source,
    })?;
    crate::saver::put_checked(saver, key, text, &codec.summary(cp), condition).await
}

impl<S: Saver> Session<'_, S> {
    /// Keep the checkpoint after the run completes (to continue the conversation later) instead of deleting it.
    pub fn keep_completed(mut self, keep: bool) -> Self {
        self.options.keep_completed = keep;
        self
    }

    /// Bounds the history kept (default [`DEFAULT_MAX_HISTORY`]); 0 keeps none.
    pub fn max_history(mut self, entries: usize) -> Self {
        self.options.max_history = entries;
        self
    }

    /// Saves only when the run starts and stops instead of after every step (fewer writes, e.g. for Workers
    /// KV, which takes one write per second per key; a crash then loses the steps since the start).
    pub fn save_every_step(mut self, every: bool) -> Self {
        self.options.save_every_step = every;
        self
    }

    /// All options at once.
    pub fn options(mut self, options: SessionOptions) -> Self {
        self.options = options;
        self
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Starts the session with `message`; a completed, kept session continues with it as a new user turn.
    ///
    /// # Errors
    /// [`AgentError::SessionBusy`] when the session waits for an answer or another call runs it;
    /// [`AgentError::Saver`]; and as [`Agent::prompt`].
    pub async fn prompt(&self, message: &str) -> Result<Outcome, AgentError> {
        self.run(Turn::Prompt(message.to_owned()), &mut NoEvents).await
    }

    /// Answers what the session waits for: a text answer or decisions.
    ///
    /// # Errors
    /// [`AgentError::SessionNotFound`] when nothing is saved under the id; [`AgentError::SessionBusy`]
    /// when another call got there first; [`AgentError::Saver`]; and as [`Agent::resume`].
    pub async fn reply(&self, input: impl Into<Resume>) -> Result<Outcome, AgentError> {
        self.run(Turn::Reply(input.into()), &mut NoEvents).await
    }

    /// Continues from the last saved step, e.g. after the process running the session died mid-run. A
    /// session waiting for a human answers with its pause as it is (nothing runs).
    ///
    /// # Errors
    /// As [`Session::reply`].
    pub async fn resume(&self) -> Result<Outcome, AgentError> {
        self.run(Turn::Continue, &mut NoEvents).await
    }

    /// Runs `turn`, reporting every [`Event`] (including `checkpoint-loaded` and `checkpoint-saved`) to
    /// `events`.
    ///
    /// # Errors
    /// As [`Session::prompt`], [`Session::reply`] and [`Session::resume`].
    pub async fn run(&self, turn: Turn, events: &mut dyn EventSink) -> Result<Outcome, AgentError> {
        let a = self.agent;
        run_session(
            &a.config,
            &*a.model,
            self.saver,
            &self.id,
            turn,
            self.options,
            events,
            None,
        )
        .await
    }

    fn thread(&self) -> Thread<'_, S> {
        Thread {
            saver: self.saver,
            id: &self.id,
            options: self.options,
            codec: self.agent.config.codec(),
        }
    }

    /// The session's latest checkpoint (`step: None`), or the one saved at `step`.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub async fn checkpoint(&self, step: Option<u64>) -> Result<Option<Checkpoint>, AgentError> {
        self.thread().checkpoint(step).await
    }

    /// The saved steps, newest first, at most `limit`, only those before step `before` when given — read
    /// from summaries, without loading conversations.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub async fn history(&self, limit: usize, before: Option<u64>) -> Result<Vec<SavedCheckpoint>, AgentError> {
        self.thread().history(limit, before).await
    }

    /// Names the checkpoint saved at `step` (a name is unique in a session: it moves from any other step).
    ///
    /// # Errors
    /// [`AgentError::Argument`] for an empty label or a step that is not in the history; [`AgentError::Saver`].
    pub async fn label(&self, step: u64, name: &str) -> Result<(), AgentError> {
        self.thread().label(step, name).await
    }

    /// Makes the checkpoint saved at `step` (or labelled `label`) the head again: the next call continues
    /// from it, as a new branch (a new step whose parent is the restored one). Later steps stay in the
    /// history.
    ///
    /// # Errors
    /// [`AgentError::Argument`] when no step has that number or label; [`AgentError::SessionBusy`] when
    /// another call changed the session meanwhile; [`AgentError::Saver`].
    pub async fn restore(&self, step_or_label: &str) -> Result<Checkpoint, AgentError> {
        self.thread().restore(step_or_label).await
    }

    /// Saves `checkpoint` as the session's new head (a new step): e.g. to put back the checkpoint a
    /// [`AgentError::Saver`] carried once the store works again.
    ///
    /// # Errors
    /// [`AgentError::SessionBusy`] when another call changed the session meanwhile; [`AgentError::Saver`].
    pub async fn save(&self, checkpoint: &Checkpoint) -> Result<Checkpoint, AgentError> {
        self.thread().save(checkpoint).await
    }

    /// Removes the session and its history.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub async fn delete(&self) -> Result<(), AgentError> {
        self.thread().delete().await
    }
}

/// A session's history and head, without an agent (what `history`, `label`, `restore`, … need).
pub(crate) struct Thread<'s, S: ?Sized> {
    pub(crate) saver: &'s S,
    pub(crate) id: &'s str,
    pub(crate) options: SessionOptions,
    /// How the agent's checkpoints are read and written (limits, keys).
    pub(crate) codec: Codec<'s>,
}

impl<S: Saver + ?Sized> Thread<'_, S> {
    /// The session's latest checkpoint (`step: None`), or the one saved at `step`.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub(crate) async fn checkpoint(&self, step: Option<u64>) -> Result<Option<Checkpoint>, AgentError> {
        check_id(self.id)?;
        let key = step.map_or_else(|| self.id.to_owned(), |s| entry_key(self.id, s));
        load(self.saver, self.codec, &key).await
    }

    /// The saved steps, newest first, at most `limit`, only those before step `before` when given — read
    /// from summaries, without loading conversations.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub(crate) async fn history(&self, limit: usize, before: Option<u64>) -> Result<Vec<SavedCheckpoint>, AgentError> {
        check_id(self.id)?;
        let mut entries = list_history(self.saver, self.id).await?;
        entries.retain(|e| before.is_none_or(|b| e.summary.step.is_some_and(|s| s < b)));
        entries.sort_by_key(|e| std::cmp::Reverse(e.summary.step));
        entries.truncate(limit);
        Ok(entries)
    }

    /// Names the checkpoint saved at `step` (a name is unique in a session: it moves from any other step).
    ///
    /// # Errors
    /// [`AgentError::Argument`] for an empty label or a step that is not in the history; [`AgentError::Saver`].
    pub(crate) async fn label(&self, step: u64, name: &str) -> Result<(), AgentError> {
        check_id(self.id)?;
        if name.is_empty() {
            return Err(AgentError::Argument("label: the name must be non-empty".into()));
        }
        let history = list_history(self.saver, self.id).await?;
        for holder in history.iter().filter(|e| e.summary.label.as_deref() == Some(name)) {
            if holder.summary.step != Some(step) {
                self.relabel(holder.summary.step.unwrap_or(0), None).await?;
            }
        }
        self.relabel(step, Some(name)).await
    }

    async fn relabel(&self, step: u64, label: Option<&str>) -> Result<(), AgentError> {
        let key = entry_key(self.id, step);
        let mut cp = load(self.saver, self.codec, &key).await?.ok_or_else(|| {
            AgentError::Argument(format!("step {step} is not in the history of session {:?}", self.id))
        })?;
        if let Some(t) = cp.thread.as_mut() {
            t.label = label.map(str::to_owned);
        }
        store(self.saver, self.codec, &key, &mut cp, Condition::Any)
            .await
            .map_err(|e| saver_error(e, None))?;
        // The head is a copy of the latest step: keep it the same.
        if let Some(mut head) = load(self.saver, self.codec, self.id).await? {
            if let Some(t) = head.thread.as_mut().filter(|t| t.step == step) {
                t.label = label.map(str::to_owned);
                store(self.saver, self.codec, self.id, &mut head, Condition::Step(step))
                    .await
                    .map_err(|e| saver_error(e, None))?;
            }
        }
        Ok(())
    }

    /// Makes the checkpoint saved at `step` (or labelled `label`) the head again: the next call continues
    /// from it, as a new branch (a new step whose parent is the restored one). Later steps stay in the
    /// history.
    ///
    /// # Errors
    /// [`AgentError::Argument`] when no step has that number or label; [`AgentError::SessionBusy`] when
    /// another call changed the session meanwhile; [`AgentError::Saver`].
    pub(crate) async fn restore(&self, step_or_label: &str) -> Result<Checkpoint, AgentError> {
        check_id(self.id)?;
        let history = list_history(self.saver, self.id).await?;
        let found = history
            .iter()
            .find(|e| e.summary.label.as_deref() == Some(step_or_label))
            .or_else(|| {
                let n = step_or_label.parse::<u64>().ok()?;
                history.iter().find(|e| e.summary.step == Some(n))
            })
            .ok_or_else(|| {
                AgentError::Argument(format!(
                    "restore: session {:?} has no step or label {step_or_label:?}",
                    self.id
                ))
            })?;
        let mut cp = load(self.saver, self.codec, &found.key)
            .await?
            .ok_or_else(|| AgentError::Argument(format!("restore: {step_or_label:?} was removed meanwhile")))?;
        let from = found.summary.step;
        self.append(&mut cp, from).await?;
        Ok(cp)
    }

    /// Saves `checkpoint` as the session's new head (a new step): e.g. to put back the checkpoint a
    /// [`AgentError::Saver`] carried once the store works again.
    ///
    /// # Errors
    /// [`AgentError::SessionBusy`] when another call changed the session meanwhile; [`AgentError::Saver`].
    pub(crate) async fn save(&self, checkpoint: &Checkpoint) -> Result<Checkpoint, AgentError> {
        check_id(self.id)?;
        // Saving signs it again: only what this agent signed may be saved (no laundering of forged ones).
        self.codec.verify(checkpoint).await?;
        let mut cp = checkpoint.clone();
        let parent = cp.thread.as_ref().map(|t| t.step);
        self.append(&mut cp, parent).await?;
        Ok(cp)
    }

    /// Appends `cp` as the next step after the current head.
    async fn append(&self, cp: &mut Checkpoint, parent: Option<u64>) -> Result<(), AgentError> {
        let head = load(self.saver, self.codec, self.id).await?;
        let mut writer = Writer::new(self.saver, self.codec, self.id, head.as_ref(), self.options);
        if let Some(p) = parent {
            writer.parent = Some(p);
        }
        writer.write(cp, true, &mut NoEvents).await
    }

    /// Removes the session and its history.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub(crate) async fn delete(&self) -> Result<(), AgentError> {
        check_id(self.id)?;
        delete_session(self.saver, self.id).await
    }
}

/// The session heads stored in `saver` under keys starting with `prefix` (not their history entries).
///
/// # Errors
/// [`AgentError::Saver`].
pub async fn list_sessions<S: Saver + ?Sized>(saver: &S, prefix: &str) -> Result<Vec<SavedCheckpoint>, AgentError> {
    let mut all = saver.list(prefix).await.map_err(|e| saver_error(e, None))?;
    all.retain(|e| !e.key.contains(HISTORY_SEPARATOR));
    Ok(all)
}

async fn list_history<S: Saver + ?Sized>(saver: &S, id: &str) -> Result<Vec<SavedCheckpoint>, AgentError> {
    let prefix = format!("{id}{HISTORY_SEPARATOR}");
    saver.list(&prefix).await.map_err(|e| saver_error(e, None))
}

async fn delete_session<S: Saver + ?Sized>(saver: &S, id: &str) -> Result<(), AgentError> {
    for e in list_history(saver, id).await? {
        saver.delete(&e.key).await.map_err(|e| saver_error(e, None))?;
    }
    saver.delete(id).await.map_err(|e| saver_error(e, None))
}

/// Writes a session's steps: the head (compare-and-set on the step it replaces), then the history entry.
struct Writer<'s, S: ?Sized> {
    saver: &'s S,
    codec: Codec<'s>,
    id: &'s str,
    /// The head's step now (`None`: no head).
    head: Option<u64>,
    /// What the next step continues from.
    parent: Option<u64>,
    options: SessionOptions,
    /// What the session waited for when loaded, to name in a busy error.
    question: Option<String>,
}

impl<'s, S: Saver + ?Sized> Writer<'s, S> {
    fn new(saver: &'s S, codec: Codec<'s>, id: &'s str, head: Option<&Checkpoint>, options: SessionOptions) -> Self {
        let step = head.map(|h| h.thread.as_ref().map_or(0, |t| t.step));
        Writer {
            saver,
            codec,
            id,
            head: step,
            parent: step,
            options,
            question: head.and_then(|h| h.question.clone()),
        }
    }

    /// Saves `cp` as the next step. `claim`: the first write of a call, which must find the head it loaded.
    async fn write(&mut self, cp: &mut Checkpoint, claim: bool, events: &mut dyn EventSink) -> Result<(), AgentError> {
        let step = self.head.unwrap_or(0).saturating_add(1);
        cp.thread = Some(ThreadInfo {
            id: self.id.to_owned(),
            step,
            parent_step: self.parent,
            label: None,
        });
        let condition = self.head.map_or(Condition::Absent, Condition::Step);
        let text = self.codec.encode(cp).await.map_err(|source| {
            saver_error(
                SaverError::Corrupt {
                    key: self.id.to_owned(),
                    source,
                },
                Some(cp),
            )
        })?;
        let summary = self.codec.summary(cp);
        let put = crate::saver::put_checked(self.saver, self.id, text.clone(), &summary, condition).await;
        if let Err(e) = put {
            return Err(match e {
                SaverError::Conflict { .. } if claim => AgentError::SessionBusy {
                    id: self.id.to_owned(),
                    question: self
                        .question
                        .clone()
                        .unwrap_or_else(|| "another call is running this session".to_owned()),
                },
                other => saver_error(other, Some(cp)),
            });
        }
        self.head = Some(step);
        self.parent = Some(step);
        if self.options.max_history > 0 {
            crate::saver::put_checked(self.saver, &entry_key(self.id, step), text, &summary, Condition::Any)
                .await
                .map_err(|e| saver_error(e, Some(cp)))?;
        }
        events.event(&Event::CheckpointSaved {
            key: self.id,
            message_count: cp.messages.len(),
        });
        Ok(())
    }

    /// Removes the oldest unlabelled history entries beyond the bound.
    async fn prune(&self) -> Result<(), AgentError> {
        let mut entries = list_history(self.saver, self.id).await?;
        if entries.len() <= self.options.max_history {
            return Ok(());
        }
        entries.sort_by_key(|e| e.summary.step);
        let excess = entries.len() - self.options.max_history;
        for e in entries.iter().filter(|e| e.summary.label.is_none()).take(excess) {
            self.saver.delete(&e.key).await.map_err(|err| saver_error(err, None))?;
        }
        Ok(())
    }
}

impl<S: Saver + ?Sized> Persist for Writer<'_, S> {
    fn persist<'a>(
        &'a mut self,
        checkpoint: &'a mut Checkpoint,
        first: bool,
        events: &'a mut dyn EventSink,
    ) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            if first || self.options.save_every_step {
                self.write(checkpoint, first, events).await?;
            }
            Ok(())
        })
    }
}

/// True when a saved run neither waits for a human nor has finished: a call is in the middle of it.
fn running(cp: &Checkpoint) -> bool {
    !cp.is_interrupted() && !cp.is_finished()
}

/// Load → claim → run, saving each step → keep, or delete when completed.
#[allow(clippy::too_many_arguments)] // the session's parts, passed once from two callers
pub(crate) async fn run_session<S: Saver + ?Sized>(
    config: &AgentConfig,
    model: &dyn DynModel,
    saver: &S,
    id: &str,
    turn: Turn,
    options: SessionOptions,
    events: &mut dyn EventSink,
    aborted: Option<&dyn crate::agent::Abort>,
) -> Result<Outcome, AgentError> {
    check_id(id)?;
    let saved = load(saver, config.codec(), id).await?;
    if let Some(cp) = &saved {
        events.event(&Event::CheckpointLoaded {
            key: id,
            message_count: cp.messages.len(),
            interrupted: cp.is_interrupted(),
        });
    }
    // `reply('')` (or no decisions) means "continue", as `resume()` does.
    let turn = match turn {
        Turn::Reply(Resume::Answer(a)) if a.is_empty() => Turn::Continue,
        Turn::Reply(Resume::Decisions(d)) if d.is_empty() => Turn::Continue,
        other => other,
    };
    let input = match (turn, &saved) {
        (Turn::Prompt(_), Some(cp)) if cp.is_interrupted() => {
            return Err(AgentError::SessionBusy {
                id: id.to_owned(),
                question: cp.question.clone().unwrap_or_default(),
            });
        }
        // Neither waiting for a human nor finished: another call is running it (or its process died, and
        // `resume()` continues it). A prompt or an answer must not take it over.
        (Turn::Prompt(_) | Turn::Reply(_), Some(cp)) if running(cp) => {
            return Err(AgentError::SessionBusy {
                id: id.to_owned(),
                question: "the session is running (if the process running it died, resume() continues it)".to_owned(),
            });
        }
        (Turn::Continue, Some(cp)) if cp.is_interrupted() => {
            // Waiting for a human: nothing to run; the pause as it is.
            return Ok(Outcome::Interrupted(crate::agent::InterruptedResponse {
                question: cp.question.clone().unwrap_or_default(),
                checkpoint: cp.clone(),
            }));
        }
        (Turn::Prompt(message), None) => Input::Prompt(message),
        (Turn::Prompt(text), Some(cp)) => Input::Resume(cp.clone(), Resume::Answer(text)),
        (Turn::Reply(input), Some(cp)) => Input::Resume(cp.clone(), input),
        (Turn::Continue, Some(cp)) => Input::Resume(cp.clone(), Resume::Answer(String::new())),
        (Turn::Reply(_) | Turn::Continue, None) => return Err(AgentError::SessionNotFound { id: id.to_owned() }),
    };
    let run = config.begin(input)?;
    let mut writer = Writer::new(saver, config.codec(), id, saved.as_ref(), options);
    let (outcome, saves) = {
        let mut hooks = Hooks {
            events: Some(&mut *events),
            aborted,
            persist: Some(&mut writer),
            saves: 0,
        };
        let outcome = drive(config, model, run, &mut hooks).await;
        (outcome, hooks.saves)
    };
    match &outcome {
        // Completed and not kept: the session is over.
        Ok(Outcome::Complete(_)) if !options.keep_completed => {
            delete_session(saver, id).await?;
            return outcome;
        }
        // Saved only at the start: save where it stopped.
        Ok(o) if !options.save_every_step => {
            writer.write(&mut o.checkpoint().clone(), false, events).await?;
        }
        // Failed after progress: save where it stopped (a closed tool turn, an answer applied, ...).
        Err(e) if saves > 0 => {
            if let (Some(cp), false) = (
                e.checkpoint(),
                matches!(e, AgentError::Saver { .. } | AgentError::SessionBusy { .. }),
            ) {
                writer.write(&mut cp.clone(), false, events).await?;
            }
        }
        _ => {}
    }
    if outcome.is_ok() && options.max_history > 0 {
        writer.prune().await?;
    }
    outcome
}
