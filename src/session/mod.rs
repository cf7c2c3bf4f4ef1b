//! Sessions: a run kept in a [`Saver`] under an id, with its history, so each request only says "prompt",
//! "reply" or "resume".
//!
//! A session stores its run as an append-only **log**: each saved step is a record under `<id>#~<seq>`
//! holding what the step changed (the messages and results it added, the fields that changed, its events),
//! written once; a small **head** under the id names the last record and the labels. So a step writes bytes in
//! proportion to what it added, not to the run, and no key is written twice — which keeps Workers KV's rule
//! of one write per second per key however fast the steps are. Loading reads the head, the records past
//! it, and the chain back to the last whole checkpoint (one is written when the records a load would read
//! grow past twice the run). Sessions saved by earlier releases (a whole checkpoint under the id and every
//! step under `<id>#~<step>`) load and continue in this format.
//!
//! Of several concurrent calls exactly one continues a session: a call's first write is the record after the
//! last one it loaded, and only if nobody wrote that key meanwhile — on every saver that compares and sets
//! ([`Saver::compare_and_set`]). The others get [`AgentError::SessionBusy`] before anything ran.

mod log;
mod store;
#[cfg_attr(not(all(target_arch = "wasm32", feature = "js-sessions")), allow(unused_imports))]
pub use store::Follow;

use serde_json::Value;
use std::sync::atomic::Ordering::Relaxed;

pub use log::EVENT_BLOCK;
pub use store::HISTORY_SEPARATOR;
use store::{Extra, Loaded, Log, Writer, delete_session};

use crate::agent::{Agent, AgentConfig, Hooks, Input, NoEvents, Outcome, Persist, drive};
use crate::checkpoint::Checkpoint;
use crate::checkpoint::CheckpointSummary;
use crate::error::AgentError;
use crate::event::{Event, EventSink};
use crate::interrupt::Resume;
use crate::model::DynModel;
use crate::platform::BoxFuture;
use crate::run::Saved;
use crate::saver::SaverError;
use crate::saver::{Condition, DynSaver, SavedCheckpoint, Saver, put_checked};

/// History bound by default: none. A step is a record of what changed, not a copy of the run, so the
/// history costs only the log itself.
pub const DEFAULT_MAX_HISTORY: usize = usize::MAX;

/// An end record older than this is left by a deletion that died: the next call finishes it.
const DELETION_STALE_MS: u64 = 60_000;

/// A conversation stored under `id` in a saver, as an append-only log of its steps.
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
    /// The saver with [`SessionOptions::timeout_ms`], when set.
    timed: Option<crate::saver::Timeout<&'a S>>,
    id: String,
    options: SessionOptions,
    unsettled: std::sync::atomic::AtomicBool,
}

/// How a session keeps its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionOptions {
    /// Keep the run when it completes (a later prompt continues the conversation), instead of deleting the
    /// session.
    pub keep_completed: bool,
    /// Records kept (the oldest unlabelled ones go first); default [`DEFAULT_MAX_HISTORY`] (all).
    pub max_history: usize,
    /// When the session saves: after every step (default), or only when the run starts and stops.
    pub auto_save: AutoSave,
    /// Bounds each saver operation (ms): a store that never answers cannot hang a call
    /// ([`SaverError::Timeout`](crate::SaverError)); see [`Timeout`](crate::Timeout) for where it holds.
    pub timeout_ms: Option<u64>,
}

/// When a session saves its run (the npm package's session option `autoSave`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AutoSave {
    /// After every step, so a process that dies mid-run loses nothing (`"step"`, the default).
    #[default]
    Step,
    /// When the run starts and when it stops: fewer writes; a crash loses the steps since the start (`"stop"`).
    Stop,
}

impl SessionOptions {
    /// Reads the npm package's session options `{ keepCompleted?, maxHistory?, autoSave?: "step" | "stop",
    /// timeoutMs?, waitUntil? }` (`waitUntil` is the host's; `null` is the defaults).
    ///
    /// # Errors
    /// [`AgentError::Config`] naming the option that is unknown or wrong.
    pub fn from_value(value: Value) -> Result<Self, AgentError> {
        let read = || -> Result<Self, String> {
            let mut o = crate::options::Options::optional(
                Some(value).filter(|v| !v.is_null()),
                "session options",
                &["keepCompleted", "maxHistory", "autoSave", "timeoutMs", "waitUntil"],
                &[
                    ("keep", "keepCompleted"),
                    ("history", "maxHistory"),
                    ("timeout", "timeoutMs"),
                    ("saveEveryStep", "autoSave"),
                ],
            )?;
            let auto_save = match o.string("autoSave")?.as_deref() {
                None | Some("step") => AutoSave::Step,
                Some("stop") => AutoSave::Stop,
                Some(other) => {
                    return Err(format!(
                        "session options.autoSave: expected \"step\" (after every step) or \"stop\" (when the run starts and stops), got {other:?}"
                    ));
                }
            };
            o.take("waitUntil");
            Ok(SessionOptions {
                keep_completed: o.boolean("keepCompleted")?.unwrap_or(false),
                max_history: o
                    .integer("maxHistory", 0)?
                    .map_or(DEFAULT_MAX_HISTORY, |n| usize::try_from(n).unwrap_or(usize::MAX)),
                auto_save,
                timeout_ms: o.integer("timeoutMs", 1)?,
            })
        };
        read().map_err(AgentError::Config)
    }
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            keep_completed: false,
            max_history: DEFAULT_MAX_HISTORY,
            auto_save: AutoSave::Step,
            timeout_ms: None,
        }
    }
}

impl Agent {
    /// The session `id` stored in `saver`.
    pub fn session<'a, S: Saver>(&'a self, saver: &'a S, id: impl Into<String>) -> Session<'a, S> {
        Session {
            agent: self,
            saver,
            timed: None,
            id: id.into(),
            options: SessionOptions::default(),
            unsettled: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// What a session call does with the run.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Turn {
    /// Start the session, or continue a finished, kept one with a new user message.
    Prompt(String),
    /// Answer what the session waits for (`""` or no decisions: continue, as [`Turn::Continue`]).
    Reply(Resume),
    /// Continue from the last saved step (after a crash): calls whose results were saved never run again.
    Continue,
}

pub(crate) fn check_id(id: &str) -> Result<(), AgentError> {
    if id.is_empty() || id.contains(HISTORY_SEPARATOR) {
        return Err(AgentError::Argument(format!(
            "session id {id:?}: must be non-empty and must not contain {HISTORY_SEPARATOR:?}"
        )));
    }
    Ok(())
}

/// The labels: the head's, or those an earlier release kept in its history entries' summaries.
fn labels_of(head: &store::HeadSeen, records: &[SavedCheckpoint]) -> log::Labels {
    if !head.labels.is_empty() {
        return head.labels.clone();
    }
    records
        .iter()
        .filter_map(|e| Some((e.summary.label.clone()?, Value::from(e.summary.step?))))
        .collect()
}

fn saver_error(source: SaverError) -> AgentError {
    AgentError::Saver {
        source,
        checkpoint: None,
    }
}

impl<S: Saver> Session<'_, S> {
    /// Keep the run after it completes (to continue the conversation later) instead of deleting it.
    pub fn keep_completed(mut self, keep: bool) -> Self {
        self.options.keep_completed = keep;
        self
    }

    /// Bounds the records kept (default: all).
    pub fn max_history(mut self, entries: usize) -> Self {
        self.options.max_history = entries;
        self
    }

    /// When the session saves (see [`AutoSave`]).
    pub fn auto_save(mut self, when: AutoSave) -> Self {
        self.options.auto_save = when;
        self
    }

    /// `auto_save(if every { AutoSave::Step } else { AutoSave::Stop })`.
    #[deprecated(
        since = "0.2.0",
        note = "use auto_save(AutoSave::Step | AutoSave::Stop): one name in Rust and JS (autoSave)"
    )]
    pub fn save_every_step(self, every: bool) -> Self {
        self.auto_save(if every { AutoSave::Step } else { AutoSave::Stop })
    }

    /// All options at once.
    pub fn options(mut self, options: SessionOptions) -> Self {
        self.options = options;
        self.timed = options.timeout_ms.map(|ms| crate::saver::Timeout::new(self.saver, ms));
        self
    }

    /// Bounds each saver operation by `ms` ([`SessionOptions::timeout_ms`]).
    pub fn timeout_ms(self, ms: u64) -> Self {
        let options = SessionOptions {
            timeout_ms: Some(ms),
            ..self.options
        };
        self.options(options)
    }

    /// The saver the session's calls use: with the time limit when there is one.
    fn store(&self) -> &dyn DynSaver {
        match &self.timed {
            Some(t) => t,
            None => self.saver,
        }
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
    /// [`AgentError::SessionNotFound`] when nothing is saved under the id; [`AgentError::Decision`] when the
    /// session waits for nothing (a reply sent twice: `prompt` starts a new turn); [`AgentError::SessionBusy`]
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
    /// `events`, numbered ([`EventSink::sequenced`]).
    ///
    /// # Errors
    /// As [`Session::prompt`], [`Session::reply`] and [`Session::resume`].
    pub async fn run(&self, turn: Turn, events: &mut dyn EventSink) -> Result<Outcome, AgentError> {
        let a = self.agent;
        let ran = run_session(&a.config, &*a.model, self.store(), &self.id, turn, self.options, events).await;
        if ran.unsettled {
            self.unsettled.store(true, Relaxed);
        }
        ran.outcome
    }

    /// True when a call of this session left work that a store's write interval (Workers KV: one write
    /// per key per second) held back: the head a listing reads still shows an earlier step, or a finished
    /// session's last keys are not deleted yet. [`Session::settle`] finishes it — in a Worker, hand it to
    /// `ctx.wait_until` so the response does not wait for it.
    pub fn unsettled(&self) -> bool {
        self.unsettled.load(Relaxed)
    }

    /// Finishes what a store's write interval held back (see [`Session::unsettled`]): writes the head for
    /// the newest record, or finishes deleting an ended session. Works from any process and at any later
    /// time; does nothing when nothing is pending. On wasm32 it waits for the interval (a host timer);
    /// natively there is no timer without a runtime, so it returns `false` while the interval still holds
    /// the work back — call it again later.
    ///
    /// # Errors
    /// [`AgentError::Saver`]; [`AgentError::Checkpoint`] for a record that fails its signature.
    pub async fn settle(&self) -> Result<bool, AgentError> {
        let done = self.thread().settle().await?;
        if done {
            self.unsettled.store(false, Relaxed);
        }
        Ok(done)
    }

    fn thread(&self) -> Thread<'_> {
        Thread {
            saver: self.store(),
            id: &self.id,
            config: &self.agent.config,
            max_history: self.options.max_history,
        }
    }

    /// The session's latest checkpoint (`step: None`), or the one saved at `step`.
    ///
    /// # Errors
    /// [`AgentError::Saver`]; [`AgentError::Checkpoint`] for a record that fails its signature.
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

    /// Names the step saved at `step` (a name is unique in a session: it moves from any other step).
    ///
    /// # Errors
    /// [`AgentError::Argument`] for an empty label or a step that is not in the history; [`AgentError::Saver`].
    pub async fn label(&self, step: u64, name: &str) -> Result<(), AgentError> {
        self.thread().label(step, name).await
    }

    /// Makes the step saved at `step` (or labelled `label`) the head again: the next call continues from it,
    /// as a new branch (a new step whose parent is the restored one). Later steps stay in the history.
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
    /// [`AgentError::Checkpoint`] for a checkpoint this agent did not sign or that belongs to another
    /// session; [`AgentError::SessionBusy`] when another call changed the session meanwhile;
    /// [`AgentError::Saver`].
    pub async fn save(&self, checkpoint: &Checkpoint) -> Result<Checkpoint, AgentError> {
        self.thread().save(checkpoint).await
    }

    /// Removes the session and its history.
    ///
    /// # Errors
    /// [`AgentError::SessionBusy`] when a call is writing it; [`AgentError::Saver`].
    pub async fn delete(&self) -> Result<(), AgentError> {
        let young = self.thread().delete().await?;
        if !young.is_empty() {
            self.unsettled.store(true, Relaxed);
        }
        Ok(())
    }

    /// Reports the session's logged events numbered above `after` (all without it), in order, to `events`
    /// ([`EventSink::sequenced`]) — from any process: step-level events (`step-start`, `step-finish`,
    /// `tool-call`, `tool-result`, `approval-requested`, `approval-response`, `state-changed`, `compacted`),
    /// `checkpoint-saved` for each step, `interrupt` where the session paused, and `done` or `error` where a
    /// call ended. Deltas are not logged.
    ///
    /// # Errors
    /// [`AgentError::SessionNotFound`] when nothing is stored under the id; as [`Session::checkpoint`].
    pub async fn replay(&self, after: Option<u64>, events: &mut dyn EventSink) -> Result<Replayed, AgentError> {
        self.thread().replay(after, events, None).await
    }

    /// [`Session::replay`], then what a call running the session in another process adds, as it adds it: the
    /// records written after the last one read, a batch per poll, until that call ends, `follow.timeout_ms`
    /// passes, or `events` says stop ([`EventSink::aborted`]). Natively there is no timer without a runtime:
    /// the polls then follow each other at once.
    ///
    /// # Errors
    /// As [`Session::replay`].
    pub async fn replay_following(
        &self,
        after: Option<u64>,
        events: &mut dyn EventSink,
        follow: Follow,
    ) -> Result<Replayed, AgentError> {
        self.thread().replay(after, events, Some(follow)).await
    }
}

/// What [`Session::replay`] found after the events it reported.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Replayed {
    /// The number of the last event reported (`after` when none was).
    pub last: u64,
    /// True while the session's last record is neither a pause, an answer nor an error: a call is running it
    /// (or died; `resume()` continues it).
    pub running: bool,
}

/// What a session call ended with, for the bindings.
pub(crate) struct SessionRun {
    pub(crate) outcome: Result<Outcome, AgentError>,
    /// A store's write interval (Workers KV) held back a write: the head, or deleting young keys
    /// ([`Session::settle`] finishes it).
    pub(crate) unsettled: bool,
}

/// The session's part in a run: numbering its events and writing a record per saved step.
struct Persisting<'w, 'l> {
    writer: &'w mut Writer<'l>,
    every_step: bool,
    /// How the messages changed since the last record, when steps were not written (autoSave: stop).
    unsaved: Option<Saved>,
}

/// Two descriptions of how messages changed, one after the other, as one (ranges dropped become edits).
fn fold(first: Option<Saved>, then: Saved) -> Saved {
    let prefix = |s: Saved| s.dropped.map_or(s.unchanged, |(start, _)| start.min(s.unchanged));
    match first {
        None => then,
        Some(a) => Saved {
            unchanged: prefix(a).min(prefix(then)),
            dropped: None,
        },
    }
}

impl Persist for Persisting<'_, '_> {
    fn persist<'a>(
        &'a mut self,
        checkpoint: &'a mut Checkpoint,
        saved: Saved,
        first: bool,
        events: &'a mut dyn EventSink,
    ) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            let saved = fold(self.unsaved.take(), saved);
            if first || self.every_step {
                self.writer
                    .write(checkpoint, Some(saved), first, Extra::default())
                    .await?;
                self.writer.saved_event(checkpoint.messages.len(), events);
            } else {
                self.unsaved = Some(saved);
            }
            Ok(())
        })
    }

    fn observe(&mut self, event: &Event<'_>) -> Option<u64> {
        Some(self.writer.numbering.observe(event))
    }
}

/// True when `text` is a session's head or step record (not a checkpoint).
#[cfg_attr(not(all(target_arch = "wasm32", feature = "js-sessions")), allow(dead_code))]
pub(crate) fn is_session_value(text: &str) -> bool {
    matches!(
        log::parse(text, &crate::limits::Limits::default()),
        Ok(log::Stored::Head(_) | log::Stored::Diff(..))
    )
}

/// What a saver's checkpoint-level read hands out for a stored text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // made once per read and handed out at once
pub enum Stored {
    /// A checkpoint, decoded and valid.
    Checkpoint(Checkpoint),
    /// Text to hand out as it is: a sealed envelope (only its agent opens it), or a session's step kept whole.
    AsIs(String),
}

/// Reads what is stored under `key` as a saver's checkpoint-level `get` does (the npm package's
/// `saver.get(key)`): a checkpoint under the default limits, or a text handed out as it is.
///
/// # Errors
/// [`SaverError::NotCheckpoint`] for a session's log record or head; [`SaverError::Corrupt`] for anything else
/// that is not a checkpoint.
pub fn read_stored(key: &str, text: String) -> Result<Stored, SaverError> {
    match crate::keys::read_text(&text, &crate::limits::Limits::default()) {
        crate::keys::Text::Sealed => Ok(Stored::AsIs(text)),
        crate::keys::Text::Plain(Ok(_)) if is_kept_step(&text) => Ok(Stored::AsIs(text)),
        crate::keys::Text::Plain(Ok(cp)) => Ok(Stored::Checkpoint(cp)),
        crate::keys::Text::Plain(Err(_)) if is_session_value(&text) => {
            Err(SaverError::NotCheckpoint { key: key.to_owned() })
        }
        crate::keys::Text::Plain(Err(source)) => Err(SaverError::Corrupt {
            key: key.to_owned(),
            source,
        }),
    }
}

/// Stores checkpoint JSON `text` under `key` as a saver's checkpoint-level `put` does (the npm package's
/// `saver.put(key, checkpoint, condition)`): a checkpoint is checked and stored with its summary; a sealed
/// envelope or a session's step kept whole is stored as it is.
///
/// # Errors
/// [`AgentError::Checkpoint`](crate::AgentError) for text that is not a checkpoint; the saver's own errors.
pub async fn put_stored<S: Saver + ?Sized>(
    saver: &S,
    key: &str,
    text: String,
    condition: Condition,
) -> Result<(), crate::AgentError> {
    let saver_error = |source| crate::AgentError::Saver {
        source,
        checkpoint: None,
    };
    let summary = match crate::keys::read_text(&text, &crate::limits::Limits::default()) {
        crate::keys::Text::Sealed => CheckpointSummary::default(),
        crate::keys::Text::Plain(cp) => {
            let cp = cp?;
            if !is_kept_step(&text) {
                return put_checked(saver, key, cp.to_json(), &cp.summary(), condition)
                    .await
                    .map_err(saver_error);
            }
            cp.summary()
        }
    };
    put_checked(saver, key, text, &summary, condition)
        .await
        .map_err(saver_error)
}

/// True for a checkpoint a session stored whole with its log member (`{"log":…, …}`).
fn is_kept_step(text: &str) -> bool {
    text.starts_with("{\"log\":")
}

/// Load → decide → run, writing a record per step → end the session when it completes and is not kept,
/// or write the head.
#[allow(clippy::too_many_arguments)] // the session's parts, passed once from two callers
pub(crate) async fn run_session(
    config: &AgentConfig,
    model: &dyn DynModel,
    saver: &dyn DynSaver,
    id: &str,
    turn: Turn,
    options: SessionOptions,
    events: &mut dyn EventSink,
) -> SessionRun {
    let log = Log {
        saver,
        id,
        codec: config.codec(),
    };
    match session_turn(config, model, &log, turn, options, events).await {
        Ok(run) => run,
        Err(e) => SessionRun {
            outcome: Err(e),
            unsettled: false,
        },
    }
}

/// [`run_session`]; `Err` when the turn failed before its run began (or its last save failed).
async fn session_turn(
    config: &AgentConfig,
    model: &dyn DynModel,
    log: &Log<'_>,
    turn: Turn,
    options: SessionOptions,
    events: &mut dyn EventSink,
) -> Result<SessionRun, AgentError> {
    check_id(log.id)?;
    let call = match &turn {
        Turn::Prompt(_) => "session.prompt",
        Turn::Reply(_) => "session.reply",
        Turn::Continue => "session.resume",
    };
    let (mut loaded, mut unsettled) = load_live(log, &turn).await?;
    let mut writer = Writer::new(log, &loaded);
    writer.max_chain = (options.max_history < DEFAULT_MAX_HISTORY).then_some(options.max_history);
    if let Some(cp) = loaded.state.as_ref().filter(|_| !loaded.ended) {
        let event = Event::CheckpointLoaded {
            key: log.id,
            message_count: cp.messages.len(),
            interrupted: cp.is_interrupted(),
        };
        let seq = writer.numbering.observe(&event);
        events.sequenced(Some(seq), &event);
    }
    let state = if loaded.ended { None } else { loaded.state.take() };
    let input = match decide(log.id, turn, state, config, options.keep_completed)? {
        Decided::Run(input) => input,
        Decided::Answer(outcome) => {
            return Ok(SessionRun {
                outcome: Ok(outcome),
                unsettled,
            });
        }
    };
    let mut run = config.begin(input)?;
    config.check_nested(&mut run).await?;
    let (outcome, unsaved) = {
        let mut persisting = Persisting {
            writer: &mut writer,
            every_step: options.auto_save == AutoSave::Step,
            unsaved: None,
        };
        let mut hooks = Hooks::new(&mut *events);
        hooks.persist = Some(&mut persisting);
        hooks.traced(config.telemetry.as_ref(), call, Some(log.id));
        let outcome = drive(config, model, run, &mut hooks).await;
        (outcome, persisting.unsaved)
    };
    if let Ok(Outcome::Complete(done)) = &outcome {
        if !options.keep_completed {
            // Completed and not kept: the session is over. Numbered in the block of the run's last state (the
            // end record after it is the deletion's).
            let end_seq = writer_end_seq(&writer);
            let cp = done.checkpoint.clone();
            unsettled |= end_completed(log, &loaded, &mut writer, cp).await;
            announce_end(&outcome, end_seq, events);
            return Ok(SessionRun { outcome, unsettled });
        }
    }
    save_where_stopped(&mut writer, &outcome, unsaved, options, events).await?;
    if writer.written > 0 {
        // The head is a hint: failing to write it loses nothing (a load probes past it); a listing shows
        // the session as it was until `settle` writes it.
        unsettled |= !matches!(writer.write_head(None).await, Ok(true));
        if options.max_history < DEFAULT_MAX_HISTORY {
            store::prune(log, &writer, &loaded.head.labels, options.max_history).await?;
        }
        announce_end(&outcome, writer_end_seq(&writer), events);
    }
    Ok(SessionRun { outcome, unsettled })
}

/// The number of the `done`/`error` event that ends a call: in the block of the run's last state, as a replay
/// numbers it.
fn writer_end_seq(writer: &Writer<'_>) -> u64 {
    writer.tip.saturating_mul(EVENT_BLOCK) + log::END_AT
}

/// The session as a turn finds it; `true` when a deletion it finished left work for later. A deletion that
/// stopped long ago is finished first by a prompt; a recent one may still be running (busy).
async fn load_live(log: &Log<'_>, turn: &Turn) -> Result<(Loaded, bool), AgentError> {
    let loaded = log.load().await?;
    if !loaded.ended || !matches!(turn, Turn::Prompt(_)) {
        return Ok((loaded, false));
    }
    let busy = || AgentError::SessionBusy {
        id: log.id.to_owned(),
        question: "the session is being deleted; try again in a moment".to_owned(),
    };
    if crate::platform::now_ms() <= loaded.ended_at + DELETION_STALE_MS {
        return Err(busy());
    }
    let unsettled = !delete_session(log, &loaded, None).await?.is_empty();
    match log.load().await? {
        l if !l.ended => Ok((l, unsettled)),
        _ => Err(busy()),
    }
}

/// Ends a completed session (its final state `cp` recorded first); `true` when work is left for later. The
/// run is done and paid for: a deletion that stops half-way (its end record written) is finished by a later
/// call.
async fn end_completed(log: &Log<'_>, loaded: &Loaded, writer: &mut Writer<'_>, mut cp: Checkpoint) -> bool {
    let after = Loaded {
        head: loaded.head.clone(),
        tip: writer.tip,
        ..Loaded::default()
    };
    match delete_session(log, &after, Some((writer, &mut cp))).await {
        Ok(more) => !more.is_empty(),
        Err(_) => true,
    }
}

/// Saves where the run stopped when its steps were not all saved: with `autoSave: 'stop'`, and after a
/// failure that followed progress (with the error).
async fn save_where_stopped(
    writer: &mut Writer<'_>,
    outcome: &Result<Outcome, AgentError>,
    unsaved: Option<Saved>,
    options: SessionOptions,
    events: &mut dyn EventSink,
) -> Result<(), AgentError> {
    let all = |cp: &Checkpoint| Saved {
        unchanged: cp.messages.len(),
        dropped: None,
    };
    match outcome {
        Ok(o) if options.auto_save == AutoSave::Stop => {
            let mut cp = o.checkpoint().clone();
            let saved = unsaved.unwrap_or_else(|| all(&cp));
            writer.write(&mut cp, Some(saved), false, Extra::default()).await?;
            writer.saved_event(cp.messages.len(), events);
        }
        Err(e) if writer.written > 0 && !matches!(e, AgentError::Saver { .. } | AgentError::SessionBusy { .. }) => {
            if let Some(cp) = e.checkpoint() {
                let mut cp = cp.clone();
                let saved = fold(unsaved, all(&cp));
                let extra = Extra {
                    err: Some(e.to_plain_json()),
                    ..Extra::default()
                };
                if writer.write(&mut cp, Some(saved), false, extra).await.is_ok() {
                    writer.saved_event(cp.messages.len(), events);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Reports how a call that wrote to its session ended: `done` or `error`, numbered.
fn announce_end(outcome: &Result<Outcome, AgentError>, seq: u64, events: &mut dyn EventSink) {
    match outcome {
        Ok(o) => {
            let text = match o {
                Outcome::Complete(r) => r.text.as_str(),
                Outcome::Interrupted(_) => "",
            };
            let result = crate::event::CallResult::of(o.checkpoint(), text);
            events.sequenced(Some(seq), &Event::Done { result });
        }
        Err(e) => {
            let error = e.to_plain_json();
            events.sequenced(Some(seq), &Event::Error { error: &error });
        }
    }
}

/// What a call does with what it loaded.
enum Decided {
    Run(Input),
    /// Nothing runs: the answer is what is stored.
    Answer(Outcome),
}

/// `state` was read and checked by the session's load (a [`Decoded`](crate::Decoded) checkpoint: not checked again).
/// What a turn does with the session's state. `kept`: finished sessions are kept; when they are not, a finished
/// state is one whose call is ending it right now (its end record not yet written), and a reply is answered as
/// for a session already gone.
fn decide(
    id: &str,
    turn: Turn,
    state: Option<Checkpoint>,
    config: &AgentConfig,
    kept: bool,
) -> Result<Decided, AgentError> {
    let loaded = |cp| crate::agent::Decoded::checked(cp, config);
    // `reply('')` (or no decisions) means "continue", as `resume()` does.
    let turn = match turn {
        Turn::Reply(Resume::Answer(a)) if a.is_empty() => Turn::Continue,
        Turn::Reply(Resume::Nothing) => Turn::Continue,
        Turn::Reply(Resume::Decisions(d)) if d.is_empty() => Turn::Continue,
        Turn::Reply(Resume::DecisionsById(d)) if d.is_empty() => Turn::Continue,
        other => other,
    };
    let busy = |question: String| AgentError::SessionBusy {
        id: id.to_owned(),
        question,
    };
    let running = "the session is running (if the process running it died, resume() continues it)";
    Ok(match (turn, state) {
        (Turn::Prompt(message), None) => Decided::Run(Input::Prompt(message)),
        (Turn::Reply(_) | Turn::Continue, None) => return Err(AgentError::SessionNotFound { id: id.to_owned() }),
        // A concurrent reply that won completed the session and is deleting it: this one lost the race, and
        // learns what it would a moment later.
        (Turn::Reply(_), Some(cp)) if !kept && cp.is_finished() => {
            return Err(AgentError::SessionNotFound { id: id.to_owned() });
        }
        (Turn::Prompt(_), Some(cp)) if cp.is_interrupted() => {
            return Err(busy(cp.question.clone().unwrap_or_default()));
        }
        // Neither waiting for a human nor finished: another call is running it (or its process died, and
        // `resume()` continues it). A prompt or an answer must not take it over.
        (Turn::Prompt(_) | Turn::Reply(_), Some(cp)) if !cp.is_interrupted() && !cp.is_finished() => {
            return Err(busy(running.to_owned()));
        }
        (Turn::Prompt(text), Some(cp)) => Decided::Run(Input::Decoded(loaded(cp), Resume::Answer(text))),
        (Turn::Reply(input), Some(cp)) if cp.is_interrupted() => Decided::Run(Input::Decoded(loaded(cp), input)),
        // A reply with nothing pending: the same answer sent twice (a retry after a lost response). It must
        // not run again as a new turn; that is what prompt() is for.
        (Turn::Reply(_), Some(_)) => {
            return Err(AgentError::Decision {
                id: None,
                problem: format!(
                    "session {id:?} waits for no answer (it finished, or this reply was already given): reply() answers a pending question; use prompt() for a new turn"
                ),
            });
        }
        (Turn::Continue, Some(cp)) if cp.is_interrupted() => {
            Decided::Answer(Outcome::Interrupted(crate::agent::InterruptedResponse {
                question: cp.question.clone().unwrap_or_default(),
                checkpoint: cp,
            }))
        }
        (Turn::Continue, Some(cp)) if cp.is_finished() => {
            Decided::Answer(Outcome::Complete(crate::agent::AgentResponse {
                text: log::answer_text(&cp),
                checkpoint: cp,
            }))
        }
        (Turn::Continue, Some(cp)) => Decided::Run(Input::Decoded(loaded(cp), Resume::Answer(String::new()))),
    })
}

/// A session's history and head, without running it (what `history`, `label`, `restore`, … need).
pub(crate) struct Thread<'s> {
    pub(crate) saver: &'s dyn DynSaver,
    pub(crate) id: &'s str,
    pub(crate) config: &'s AgentConfig,
    /// The history shown is at most this long.
    pub(crate) max_history: usize,
}

impl Thread<'_> {
    fn log(&self) -> Log<'_> {
        Log {
            saver: self.saver,
            id: self.id,
            codec: self.config.codec(),
        }
    }

    /// The session's latest checkpoint (`step: None`), or the one saved at `step`, signed when the agent
    /// signs.
    ///
    /// # Errors
    /// [`AgentError::Saver`]; [`AgentError::Checkpoint`].
    pub(crate) async fn checkpoint(&self, step: Option<u64>) -> Result<Option<Checkpoint>, AgentError> {
        check_id(self.id)?;
        let log = self.log();
        let loaded = log.load().await?;
        let state = match step {
            None if loaded.ended => None,
            None => loaded.state,
            Some(n) if n == loaded.tip => loaded.state,
            Some(n) => log.state_at(n, &loaded.head).await?,
        };
        match state {
            Some(mut cp) => {
                self.config.codec().sign(&mut cp).await?;
                Ok(Some(cp))
            }
            None => Ok(None),
        }
    }

    /// The saved steps, newest first, at most `limit`, only those before step `before` when given.
    ///
    /// # Errors
    /// [`AgentError::Saver`].
    pub(crate) async fn history(&self, limit: usize, before: Option<u64>) -> Result<Vec<SavedCheckpoint>, AgentError> {
        check_id(self.id)?;
        let log = self.log();
        // Summaries and the head only: no record is read, the run is not rebuilt.
        let head = log.read_head().await?;
        let mut entries = log.records().await?;
        let labels = labels_of(&head, &entries);
        entries.retain(|e| before.is_none_or(|b| e.summary.step.is_some_and(|s| s < b)));
        for e in &mut entries {
            let seq = e.summary.step.unwrap_or(0);
            e.summary.label = store::label_of(&labels, seq);
        }
        entries.sort_by_key(|e| std::cmp::Reverse(e.summary.step));
        entries.truncate(limit.min(self.max_history));
        Ok(entries)
    }

    /// Names the step saved at `step` (a name is unique in a session: it moves from any other step).
    ///
    /// # Errors
    /// [`AgentError::Argument`] for an empty label or a step that is not in the history; [`AgentError::Saver`].
    pub(crate) async fn label(&self, step: u64, name: &str) -> Result<(), AgentError> {
        check_id(self.id)?;
        if name.is_empty() {
            return Err(AgentError::Argument("label: the name must be non-empty".into()));
        }
        let log = self.log();
        let loaded = log.load().await?;
        let records = log.records().await?;
        let known = records.iter().any(|e| e.summary.step == Some(step)) || step == loaded.tip;
        if !known || loaded.state.is_none() {
            return Err(AgentError::Argument(format!(
                "step {step} is not in the history of session {:?}",
                self.id
            )));
        }
        let mut labels = labels_of(&loaded.head, &records);
        store::relabel(&mut labels, step, name);
        let mut writer = Writer::new(&log, &loaded);
        writer.describe_tip(&loaded);
        if !writer.write_head(Some(labels.clone())).await? {
            // The store takes one write per key per interval (Workers KV): wait for it once.
            let wait = loaded.head.at + log.saver.min_write_interval_ms_dyn() + 250;
            crate::platform::sleep_until(wait).await;
            writer.write_head(Some(labels)).await?;
        }
        Ok(())
    }

    /// Makes a saved step (by number or label) the head again, as a new step whose parent it is.
    ///
    /// # Errors
    /// [`AgentError::Argument`] when no step has that number or label; [`AgentError::SessionBusy`];
    /// [`AgentError::Saver`].
    pub(crate) async fn restore(&self, step_or_label: &str) -> Result<Checkpoint, AgentError> {
        check_id(self.id)?;
        let log = self.log();
        let loaded = log.load().await?;
        let labels = if loaded.head.labels.is_empty() {
            labels_of(&loaded.head, &log.records().await?)
        } else {
            loaded.head.labels.clone()
        };
        let target = labels
            .get(step_or_label)
            .and_then(Value::as_u64)
            .or_else(|| step_or_label.parse::<u64>().ok());
        let state = match target {
            Some(n) if n == loaded.tip => loaded.state.clone(),
            Some(n) if n > 0 => log.state_at(n, &loaded.head).await?,
            _ => None,
        };
        let (Some(target), Some(mut cp)) = (target, state) else {
            return Err(AgentError::Argument(format!(
                "restore: session {:?} has no step or label {step_or_label:?}",
                self.id
            )));
        };
        cp.updated_at = Some(crate::platform::now_ms());
        let mut writer = Writer::new(&log, &loaded);
        let extra = Extra {
            parent: Some(target),
            ..Extra::default()
        };
        writer.write(&mut cp, None, true, extra).await?;
        let _ = writer.write_head(Some(labels)).await;
        self.config.codec().sign(&mut cp).await?;
        Ok(cp)
    }

    /// Saves `checkpoint` as the session's next step.
    ///
    /// # Errors
    /// [`AgentError::Checkpoint`]; [`AgentError::SessionBusy`]; [`AgentError::Saver`].
    pub(crate) async fn save(&self, checkpoint: &Checkpoint) -> Result<Checkpoint, AgentError> {
        check_id(self.id)?;
        // Saving signs it again: only what this agent signed may be saved (no laundering of forged ones).
        self.config.codec().verify(checkpoint).await?;
        if let Some(t) = checkpoint.thread.as_ref().filter(|t| t.id != self.id) {
            return Err(AgentError::Checkpoint(crate::CheckpointError::Binding {
                problem: format!("it belongs to session {:?}, not {:?}", t.id, self.id),
            }));
        }
        checkpoint.validate()?;
        let log = self.log();
        let loaded = log.load().await?;
        let mut cp = checkpoint.clone();
        let mut writer = Writer::new(&log, &loaded);
        writer.write(&mut cp, None, true, Extra::default()).await?;
        let _ = writer.write_head(None).await;
        self.config.codec().sign(&mut cp).await?;
        Ok(cp)
    }

    /// Removes the session and its history; returns keys a store with a write interval could not delete yet.
    ///
    /// # Errors
    /// [`AgentError::SessionBusy`]; [`AgentError::Saver`].
    pub(crate) async fn delete(&self) -> Result<Vec<String>, AgentError> {
        check_id(self.id)?;
        let log = self.log();
        let loaded = log.load().await?;
        if loaded.state.is_none() && !loaded.head.present {
            return Ok(Vec::new());
        }
        let mut writer = Writer::new(&log, &loaded);
        let mut cp = loaded
            .state
            .clone()
            .unwrap_or_else(|| Checkpoint::new("", crate::platform::now_ms()));
        if loaded.state.is_some() && !loaded.ended {
            writer
                .write(
                    &mut cp,
                    None,
                    true,
                    Extra {
                        end: true,
                        ..Extra::default()
                    },
                )
                .await?;
        }
        let after = Loaded {
            head: loaded.head.clone(),
            tip: writer.tip,
            ..Loaded::default()
        };
        delete_session(&log, &after, None).await
    }

    /// Finishes what a store's write interval held back: a head behind the newest record is rewritten,
    /// an ended session's keys are deleted. Waits for the interval (at most three rounds); `false` when it
    /// still holds the work back.
    ///
    /// # Errors
    /// [`AgentError::Saver`]; [`AgentError::Checkpoint`].
    pub(crate) async fn settle(&self) -> Result<bool, AgentError> {
        check_id(self.id)?;
        let log = self.log();
        let interval = log.saver.min_write_interval_ms_dyn();
        for _ in 0..3 {
            let loaded = log.load().await?;
            let now = crate::platform::now_ms();
            let ready = |at: u64| {
                if interval == 0 {
                    0
                } else {
                    at + interval + store::INTERVAL_MARGIN_MS
                }
            };
            if loaded.ended {
                let due = ready(loaded.ended_at.max(loaded.head.at));
                if due > now {
                    crate::platform::sleep_until(due).await;
                    continue;
                }
                if delete_session(&log, &loaded, None).await?.is_empty() {
                    return Ok(true);
                }
                continue;
            }
            if loaded.state.is_none() && loaded.head.present {
                // A head left by a deletion that stopped before it (its records are gone).
                let due = ready(loaded.head.at);
                if due > now {
                    crate::platform::sleep_until(due).await;
                    continue;
                }
                if log.records().await?.is_empty() {
                    log.saver
                        .delete_dyn(log.id)
                        .await
                        .map_err(|e| store::saver_error(e, None))?;
                }
                return Ok(true);
            }
            if loaded.state.is_none() || (loaded.head.present && loaded.head.seq >= loaded.tip) {
                return Ok(true);
            }
            let due = if loaded.head.present { ready(loaded.head.at) } else { 0 };
            if due > now {
                crate::platform::sleep_until(due).await;
                continue;
            }
            let mut writer = Writer::new(&log, &loaded);
            writer.describe_tip(&loaded);
            if writer.write_head(None).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Reports the logged events numbered above `after`, in order; with `follow`, then what the call running
    /// the session adds, until it ends.
    ///
    /// # Errors
    /// [`AgentError::SessionNotFound`] when nothing is stored under the id; as [`Thread::checkpoint`].
    pub(crate) async fn replay(
        &self,
        after: Option<u64>,
        events: &mut dyn EventSink,
        follow: Option<store::Follow>,
    ) -> Result<Replayed, AgentError> {
        check_id(self.id)?;
        self.log().replay(after.unwrap_or(0), events, follow).await
    }
}

/// The session heads stored in `saver` under keys starting with `prefix` (not their records).
///
/// # Errors
/// [`AgentError::Saver`].
pub async fn list_sessions<S: Saver + ?Sized>(saver: &S, prefix: &str) -> Result<Vec<SavedCheckpoint>, AgentError> {
    // A store's own listing of sessions (an index of them), or everything with the records left out.
    let mut all = saver.list_heads(prefix).await.map_err(saver_error)?;
    all.retain(|e| !e.key.contains(HISTORY_SEPARATOR));
    Ok(all)
}
