//! The async driver: runs the state machine to its next stop, doing the I/O it asks for (the model, the
//! tools, their approval checks) and reporting what happens — one function per [`Step`].

use serde_json::Value;

use super::{AgentConfig, AgentResponse, InterruptedResponse, Outcome};
use crate::checkpoint::Checkpoint;
use crate::error::AgentError;
use crate::event::{Event, EventSink};
use crate::guardrail::{GuardrailInput, GuardrailKind};
use crate::interrupt::Approval;
use crate::message::{Message, ToolUse, Usage};
use crate::model::DynModel;
use crate::platform::{BoxFuture, MaybeSend, now_ms};
use crate::run::{Run, Step, ToolOutcome};
use crate::tool::{StateSlot, ToolContext, ToolError};

/// False in the npm package's variants without telemetry (`js` without `js-telemetry`): no run is traced there,
/// and the compiler leaves the tracing code out of them.
const TRACED: bool = cfg!(any(not(feature = "js"), feature = "js-telemetry"));

/// False in the npm package's variants without guardrails (`js` without `js-guardrails`): the guardrail code is
/// left out of them too.
const GUARDED: bool = cfg!(any(not(feature = "js"), feature = "js-guardrails"));

/// An [`EventSink`] that drops everything (and lets the run skip building events).
pub(crate) struct NoEvents;

impl EventSink for NoEvents {
    fn event(&mut self, _: &Event<'_>) {}
    fn wants_deltas(&self) -> bool {
        false
    }
    fn listening(&self) -> bool {
        false
    }
}

/// A model's deltas as events of step `step`.
struct DeltaEvents<'e, 'h> {
    hooks: &'e mut Hooks<'h>,
    step: u32,
}

impl crate::model::DeltaSink for DeltaEvents<'_, '_> {
    fn delta(&mut self, delta: crate::model::Delta<'_>) {
        use crate::model::Delta;
        let step = self.step;
        let event = match delta {
            Delta::Text(text) => Event::TextDelta { step, text },
            Delta::ToolCall { id, name, input } => Event::ToolCallDelta {
                step,
                id,
                tool_name: name,
                input_delta: input,
            },
            Delta::Restart => Event::StepRestart { step },
        };
        self.hooks.emit_ref(&event);
    }
}

/// Saves each consistent state of a run (sessions): called before its `checkpoint` event, and awaited.
pub(crate) trait Persist: MaybeSend {
    /// Saves `checkpoint` (and may add thread information to it), reporting `checkpoint-saved` to `events`.
    /// `saved`: how its messages changed since the last call; `first`: the run's first save.
    fn persist<'a>(
        &'a mut self,
        checkpoint: &'a mut Checkpoint,
        saved: crate::run::Saved,
        first: bool,
        events: &'a mut dyn EventSink,
    ) -> BoxFuture<'a, Result<(), AgentError>>;

    /// The number of an event of the run (a session also logs the step-level ones); `None`: not numbered.
    fn observe(&mut self, event: &Event<'_>) -> Option<u64>;
}

/// What a driver reports to and asks of its caller besides the model and tools.
pub(crate) struct Hooks<'h> {
    /// Where events go; asked before each model and tool call whether to stop.
    pub(crate) events: &'h mut dyn EventSink,
    pub(crate) persist: Option<&'h mut dyn Persist>,
    /// Saves made so far by `persist`.
    pub(crate) saves: u32,
    /// The telemetry to trace the run with, the call's name and its conversation (a session's id).
    tracing: Option<(&'h crate::telemetry::Telemetry, &'static str, Option<&'h str>)>,
    /// The run's spans, while it runs traced.
    trace: Option<crate::telemetry::RunTrace>,
    /// For a subagent's run: the approval policies of the runs that called it (they review its calls too).
    pub(crate) policies: Vec<std::sync::Arc<dyn crate::approval::ApprovalPolicy>>,
    /// For a subagent's run: the call that runs it, whose trace it goes under.
    pub(crate) under: Option<Under<'h>>,
}

/// The call that runs a subagent, as the subagent's run is traced under it.
#[derive(Clone, Copy)]
pub(crate) struct Under<'a> {
    pub(crate) nest: &'a dyn crate::tool::Nesting,
    /// The agent tool's name.
    pub(crate) name: &'a str,
    /// `prompt` or `resume`.
    pub(crate) call: &'static str,
}

impl<'h> Hooks<'h> {
    pub(crate) fn new(events: &'h mut dyn EventSink) -> Self {
        Hooks {
            events,
            persist: None,
            saves: 0,
            tracing: None,
            trace: None,
            policies: Vec::new(),
            under: None,
        }
    }

    /// The run's spans, when it is traced (never in a build without telemetry: the tracing code is left out).
    fn trace(&mut self) -> Option<&mut crate::telemetry::RunTrace> {
        if TRACED { self.trace.as_mut() } else { None }
    }

    /// Traces the run with `telemetry`, when given, as call `call` of `conversation`.
    pub(crate) fn traced(
        &mut self,
        telemetry: Option<&'h crate::telemetry::Telemetry>,
        call: &'static str,
        conversation: Option<&'h str>,
    ) {
        self.tracing = telemetry.map(|t| (t, call, conversation));
    }

    /// True when events are listened to or logged: they must be made.
    fn watching(&self) -> bool {
        self.events.listening() || self.persist.is_some()
    }

    fn emit(&mut self, event: impl FnOnce() -> Event<'static>) {
        if self.watching() {
            self.emit_ref(&event());
        }
    }

    fn emit_ref(&mut self, event: &Event<'_>) {
        let seq = self.persist.as_deref_mut().and_then(|p| p.observe(event));
        self.events.sequenced(seq, event);
    }

    /// A consistent state: saved (sessions) and then reported, signed.
    async fn checkpoint(&mut self, run: &mut Run<'_>, codec: crate::keys::Codec<'_>) -> Result<(), AgentError> {
        if let Some(p) = self.persist.as_deref_mut() {
            let first = self.saves == 0;
            let saved = run.take_saved();
            p.persist(run.checkpoint_mut(), saved, first, &mut *self.events).await?;
            self.saves = self.saves.saturating_add(1);
        }
        if self.events.listening() {
            if codec.keys.is_some() {
                codec.sign(run.checkpoint_mut()).await?;
            }
            self.emit_ref(&Event::Checkpoint {
                checkpoint: run.checkpoint(),
            });
        }
        Ok(())
    }

    fn result(&mut self, run: &Run<'_>, call: &ToolUse) {
        if !self.watching() {
            return;
        }
        if let Some(r) = run.checkpoint().tool_results.iter().find(|r| r.tool_use_id == call.id) {
            self.emit_ref(&Event::ToolResult {
                id: &call.id,
                tool_name: &call.name,
                content: &r.content,
                is_error: r.is_error,
            });
        }
    }
}

/// Runs the state machine to its next stop, doing the I/O it asks for and reporting what happens; the
/// checkpoint it ends with (in the outcome or the error) is signed when the agent has keys.
pub(crate) async fn drive(
    config: &AgentConfig,
    model: &dyn DynModel,
    mut run: Run<'_>,
    hooks: &mut Hooks<'_>,
) -> Result<Outcome, AgentError> {
    let tracing = hooks.tracing.take().filter(|_| TRACED);
    let under = hooks.under.take().filter(|_| TRACED && crate::subagent::NESTS);
    let mut trace = None;
    {
        let (checkpoint, applied) = (run.checkpoint(), run.applied());
        match (tracing, under) {
            (Some((telemetry, call, conversation)), under) => {
                let start = |parent: Option<&dyn crate::telemetry::Span>| {
                    crate::telemetry::RunTrace::start(telemetry, call, conversation, checkpoint, applied, parent)
                };
                match under {
                    // A subagent traced by its own telemetry: under the span of the call that runs it.
                    Some(u) => u.nest.traced(&mut |_, span| trace = Some(start(span))),
                    None => trace = Some(start(None)),
                }
            }
            // A subagent without telemetry of its own, called by a traced run: traced by that run's, named after its
            // tool, under the span of the call.
            (None, Some(u)) => u.nest.traced(&mut |telemetry, span| {
                if let Some(t) = telemetry {
                    let t = t.for_subagent(u.name);
                    trace = Some(crate::telemetry::RunTrace::start(
                        &t, u.call, None, checkpoint, applied, span,
                    ));
                }
            }),
            (None, None) => {}
        }
    }
    if let Some(trace) = trace {
        if let Some(t) = trace.traceparent() {
            run.checkpoint_mut().traceparent = Some(t);
        }
        hooks.trace = Some(trace);
    }
    let mut result = drive_steps(config, model, run, hooks).await;
    let checkpoint = match &mut result {
        Ok(outcome) => Some(outcome.checkpoint_mut()),
        Err(e) => e.checkpoint_mut(),
    };
    let signed = match checkpoint {
        Some(checkpoint) => config.codec().sign(checkpoint).await.map_err(AgentError::from),
        None => Ok(()),
    };
    if let Some(trace) = hooks.trace.take().filter(|_| TRACED) {
        match (&result, &signed) {
            (_, Err(e)) => trace.end(None, Some(e)),
            (Ok(outcome), Ok(())) => trace.end(Some(outcome.checkpoint()), None),
            (Err(e), Ok(())) => trace.end(e.checkpoint(), Some(e)),
        }
    }
    signed?;
    result
}

async fn drive_steps(
    config: &AgentConfig,
    model: &dyn DynModel,
    mut run: Run<'_>,
    hooks: &mut Hooks<'_>,
) -> Result<Outcome, AgentError> {
    report_applied(&run, hooks);
    // A turn that starts with the user's message: its input guardrails run before anything of it is saved or
    // sent (a session whose input tripped stays as it was before the call).
    if GUARDED && !config.guardrails.input.is_empty() && starts_turn(run.checkpoint()) {
        let input = GuardrailInput::new(GuardrailKind::Input, &run.checkpoint().messages);
        if let Some(t) = guard(config, input, hooks).await {
            return Err(tripped(t, GuardrailKind::Input, stopped(run)));
        }
    }
    hooks.checkpoint(&mut run, config.codec()).await?;
    loop {
        if hooks.events.aborted() {
            return Err(AgentError::Aborted {
                checkpoint: Box::new(stopped(run)),
            });
        }
        match run.next_step() {
            Step::CallModel => match call_model(config, model, &mut run, hooks).await? {
                None => {}
                Some(crate::model::ModelError::Aborted { .. }) => {
                    return Err(AgentError::Aborted {
                        checkpoint: Box::new(stopped(run)),
                    });
                }
                Some(source) => {
                    return Err(AgentError::Model {
                        source,
                        checkpoint: Box::new(stopped(run)),
                    });
                }
            },
            Step::Review(calls) => review(config, &mut run, &calls, hooks).await?,
            // Left out of the variants without summaries (where no run asks for one).
            #[cfg(any(not(feature = "js"), feature = "js-summaries"))]
            Step::Summarize(request) => {
                if summarize(config, model, &mut run, request, hooks).await? {
                    return Err(AgentError::Aborted {
                        checkpoint: Box::new(stopped(run)),
                    });
                }
            }
            #[cfg(all(feature = "js", not(feature = "js-summaries")))]
            Step::Summarize(_) => run.summary_failed(),
            Step::CallTool(call) => run_tools(config, &mut run, call, hooks).await?,
            Step::Refused(call, result) | Step::Answered(call, result) => {
                if hooks.watching() {
                    hooks.emit_ref(&Event::ToolCall {
                        id: &call.id,
                        tool_name: &call.name,
                        input: &call.input,
                    });
                    hooks.emit_ref(&Event::ToolResult {
                        id: &call.id,
                        tool_name: &call.name,
                        content: &result.content,
                        is_error: result.is_error,
                    });
                }
                hooks.checkpoint(&mut run, config.codec()).await?;
            }
            Step::InvalidOutput(problem) => {
                let checkpoint = stopped(run);
                return Err(AgentError::Output {
                    attempts: checkpoint.output_attempts,
                    problem,
                    checkpoint: Box::new(checkpoint),
                });
            }
            Step::OutOfIterations => {
                let limit = run.config().max_iterations;
                return Err(AgentError::MaxIterations {
                    limit,
                    checkpoint: Box::new(stopped(run)),
                });
            }
            Step::OverBudget(limit) => {
                let (budget, usage) = run.over_budget();
                return Err(AgentError::BudgetExceeded {
                    limit,
                    budget,
                    usage,
                    checkpoint: Box::new(stopped(run)),
                });
            }
            Step::Paused => return Ok(paused(run, hooks)),
            Step::Done(text) => return done(config, run, text, hooks).await,
        }
    }
}

/// True when the run's last message is the user's own (not tool results): a turn that has not asked the model yet.
fn starts_turn(checkpoint: &Checkpoint) -> bool {
    checkpoint.messages.last().is_some_and(|m| {
        m.role == crate::message::Role::User
            && !m
                .blocks()
                .iter()
                .any(|b| matches!(b, crate::message::ContentBlock::ToolResult(_)))
    })
}

/// Runs the guardrails of `input.kind`, reporting each verdict as a `guardrail` event; what tripped, if any.
///
/// Boxed: each place that awaits it holds a pointer, not a copy of its states (the run's future stays small).
fn guard<'a>(
    config: &'a AgentConfig,
    input: GuardrailInput<'a>,
    hooks: &'a mut Hooks<'_>,
) -> crate::platform::BoxFuture<'a, Option<crate::guardrail::Tripped>> {
    Box::pin(guard_in_order(config, input, hooks))
}

async fn guard_in_order(
    config: &AgentConfig,
    input: GuardrailInput<'_>,
    hooks: &mut Hooks<'_>,
) -> Option<crate::guardrail::Tripped> {
    let kind = input.kind;
    for g in config.guardrails.of(kind) {
        let tripped = crate::guardrail::check(&**g, input).await;
        if hooks.watching() {
            hooks.emit_ref(&Event::Guardrail {
                kind,
                name: g.name(),
                tripwire: tripped.is_some(),
            });
        }
        if tripped.is_some() {
            return tripped;
        }
    }
    None
}

fn tripped(t: crate::guardrail::Tripped, kind: GuardrailKind, checkpoint: Checkpoint) -> AgentError {
    AgentError::Guardrail {
        guardrail: t.name,
        kind,
        info: t.info,
        checkpoint: Box::new(checkpoint),
    }
}

/// The checkpoint of a run that stops here, stamped with the time.
fn stopped(mut run: Run<'_>) -> Checkpoint {
    run.touch(now_ms());
    run.into_checkpoint()
}

/// What the resume applied (decisions, answers) as the events a live run would have reported.
fn report_applied(run: &Run<'_>, hooks: &mut Hooks<'_>) {
    if !hooks.watching() {
        return;
    }
    if let Some(d) = run.drift() {
        hooks.emit_ref(&Event::ConfigDrift {
            added: &d.added,
            removed: &d.removed,
            changed: &d.changed,
        });
    }
    // A subagent's decisions are reported by its run (with their path), when the call resumes it.
    for a in run.applied().iter().filter(|a| !a.interrupt.is_nested()) {
        let (id, tool_name) = (&a.interrupt.id, &a.interrupt.tool_name);
        match (&a.interrupt.kind, &a.result) {
            (crate::interrupt::InterruptKind::Approval, result) => hooks.emit_ref(&Event::ApprovalResponse {
                id,
                tool_name,
                approved: a.approved,
                modified_args: a.modified_args.as_ref(),
                message: result.as_ref().map(|r| r.content.as_str()),
                by: a.by.as_deref(),
                remembered: false,
                pending: a.pending,
            }),
            (_, Some(r)) => hooks.emit_ref(&Event::ToolResult {
                id,
                tool_name,
                content: &r.content,
                is_error: r.is_error,
            }),
            (_, None) => {}
        }
    }
}

/// [`Step::CallModel`]: compaction reported (and saved) first, then the model asked — streamed when the run is
/// shown live — and its answer recorded. What the model failed with is returned: the run ends there, with the
/// checkpoint from before the call.
async fn call_model(
    config: &AgentConfig,
    model: &dyn DynModel,
    run: &mut Run<'_>,
    hooks: &mut Hooks<'_>,
) -> Result<Option<crate::model::ModelError>, AgentError> {
    let step = run.checkpoint().iterations.saturating_add(1);
    if let Some(c) = run.take_compacted() {
        hooks.emit_ref(&Event::Compacted {
            removed_messages: c.messages,
            removed_bytes: c.bytes,
            messages: run.checkpoint().messages.len(),
        });
        run.touch(now_ms());
        hooks.checkpoint(run, config.codec()).await?;
    }
    hooks.emit(|| Event::StepStart { step });
    let unchanged = run.take_unchanged();
    let retries = std::sync::atomic::AtomicU32::new(0);
    let system = run.system(config.instructions.as_deref());
    let mut request = config.request(&run.checkpoint().messages, unchanged);
    request.system = system.as_deref();
    if let Some(trace) = hooks.trace() {
        request.retries = Some(&retries);
        trace.chat_start(step, model.info_dyn(), &request);
    }
    // A call the watcher stops is dropped unfinished (a provider's request with it): the model is taken to
    // have been stopped by the signal.
    let stop = hooks.events.when_aborted();
    let stopped_by_signal = || {
        Err(crate::model::ModelError::Aborted {
            provider: "model".to_owned(),
        })
    };
    let reply = if hooks.events.wants_deltas() {
        let mut sink = DeltaEvents { hooks, step };
        crate::platform::unless_stopped(model.stream_dyn(request, &mut sink), stop).await
    } else {
        crate::platform::unless_stopped(model.complete_dyn(request), stop).await
    }
    .unwrap_or_else(stopped_by_signal);
    if let Some(trace) = hooks.trace() {
        trace.chat_end(reply.as_ref(), retries.load(std::sync::atomic::Ordering::Relaxed));
    }
    if let Err(e) = &reply {
        run.model_failed(e);
    }
    let mut usage: Option<Usage> = None;
    let recorded = reply.and_then(|response| {
        usage = response.usage;
        run.model_replied(response, now_ms())
    });
    if let Err(source) = recorded {
        return Ok(Some(source));
    }
    if hooks.watching() {
        let content = run
            .checkpoint()
            .messages
            .last()
            .map(Message::blocks)
            .unwrap_or_default();
        hooks.emit_ref(&Event::StepFinish { step, content, usage });
    }
    hooks.checkpoint(run, config.codec()).await?;
    Ok(None)
}

#[cfg(any(not(feature = "js"), feature = "js-summaries"))]
/// [`Step::Summarize`]: the summarizer (the agent's model unless it has one of its own) writes the summary of the
/// oldest steps, which replaces them (reported and saved); a failed call leaves the run as it was, says so, and the
/// run goes on to its model call. True when the run's signal stopped the call.
async fn summarize(
    config: &AgentConfig,
    model: &dyn DynModel,
    run: &mut Run<'_>,
    request: crate::run::SummaryRequest,
    hooks: &mut Hooks<'_>,
) -> Result<bool, AgentError> {
    let summarizer = config.summarizer.model.as_deref().unwrap_or(model);
    let messages = [Message::user(request.transcript)];
    let instructions = config
        .summarizer
        .instructions
        .as_deref()
        .unwrap_or(crate::run::DEFAULT_SUMMARY_INSTRUCTIONS);
    let mut ask = config.request(&messages, 0);
    ask.system = Some(instructions);
    ask.tools = &[];
    let reply = crate::platform::unless_stopped(summarizer.complete_dyn(ask), hooks.events.when_aborted()).await;
    // The model was sent other messages than the run's: its next request is not a continuation of this one.
    run.forget_unchanged();
    let failed = match reply {
        None | Some(Err(crate::model::ModelError::Aborted { .. })) => return Ok(true),
        Some(Ok(response)) => {
            let text: String = response
                .content
                .iter()
                .filter_map(|b| match b {
                    crate::message::ContentBlock::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            match run.replace_with_summary(text, response.usage, now_ms()) {
                Ok(made) => {
                    let cp = run.checkpoint();
                    if let Some(s) = &cp.summarized {
                        hooks.emit_ref(&Event::Summarized {
                            removed_messages: made.messages,
                            removed_bytes: made.bytes,
                            messages: cp.messages.len(),
                            summary: &s.text,
                        });
                    }
                    hooks.checkpoint(run, config.codec()).await?;
                    return Ok(false);
                }
                Err(why) => why,
            }
        }
        Some(Err(e)) => {
            run.summary_failed();
            e.to_string()
        }
    };
    hooks.emit_ref(&Event::SummaryFailed { error: &failed });
    Ok(false)
}

/// [`Step::Review`]: each call that may need approval asks its tool, and the agent's policy (if any) is asked of
/// every call; the stricter answer applies. A policy's denial answers the call at once; a remembered approval
/// of its tool approves it without asking (never one that waits for several approvers); the turn pauses once
/// for all the others that need approval.
async fn review(
    config: &AgentConfig,
    run: &mut Run<'_>,
    calls: &[ToolUse],
    hooks: &mut Hooks<'_>,
) -> Result<(), AgentError> {
    let mut needed = Vec::new();
    // Whether the review changed anything worth a checkpoint of its own (see the end).
    let mut changed = false;
    for call in calls {
        let Some(tool) = config.tool(&call.name) else { continue };
        changed |= tool.may_need_approval();
        let own = if tool.may_need_approval() {
            tool.needs_approval_dyn(&call.input, ToolContext::new(&call.id, run.run_id()))
                .await
        } else {
            Ok(Approval::NotNeeded)
        };
        let ruled = if config.policy.is_none() && (!crate::subagent::NESTS || hooks.policies.is_empty()) {
            Ok(crate::approval::PolicyDecision::Allow)
        } else {
            let cp = run.checkpoint();
            let ctx = crate::approval::PolicyContext {
                run_id: run.run_id(),
                state: cp.state.as_ref(),
                iterations: cp.iterations,
                usage: cp.usage,
            };
            let mut ruled = Ok(crate::approval::PolicyDecision::Allow);
            // The agent's own, then those over it (a subagent's callers'): the stricter answer wins.
            let outer: &[std::sync::Arc<dyn crate::approval::ApprovalPolicy>] =
                if crate::subagent::NESTS { &hooks.policies } else { &[] };
            for policy in config.policy.iter().chain(outer) {
                match policy.decide(call, ctx).await {
                    // One policy but in a subagent's run (a variant without subagents has no other).
                    Ok(d) if !crate::subagent::NESTS => ruled = Ok(d),
                    Ok(d) => ruled = ruled.map(|r| crate::approval::stricter_policy(r, d)),
                    Err(e) => {
                        ruled = Err(format!("the approval policy failed: {e}"));
                        break;
                    }
                }
            }
            ruled
        };
        let refused = match (own, ruled) {
            (Err(e), _) => Some(format!(
                "the approval check of {} failed, so it did not run: {e}",
                call.name
            )),
            (_, Err(e)) => Some(format!("{e}; so the call to {} did not run", call.name)),
            (_, Ok(crate::approval::PolicyDecision::Deny { message })) => Some(match message {
                Some(m) if !m.is_empty() => format!(
                    "The agent's approval policy denied this call to {}; it did not run: {m}",
                    call.name
                ),
                _ => format!(
                    "The agent's approval policy denied this call to {}; it did not run.",
                    call.name
                ),
            }),
            (Ok(own), Ok(rule)) => {
                let (need, expires_in_ms, approvers) = crate::approval::stricter(own, &rule);
                // By name first: approve_remembered looks the call up (a copy of it).
                if need && approvers <= 1 && run.remembers(&call.name) && run.approve_remembered(&call.id) {
                    changed = true;
                    hooks.emit_ref(&Event::ApprovalResponse {
                        id: &call.id,
                        tool_name: &call.name,
                        approved: true,
                        modified_args: None,
                        message: None,
                        by: None,
                        remembered: true,
                        pending: false,
                    });
                } else if need {
                    needed.push(crate::run::Need::new(call.id.clone(), expires_in_ms).approvers(approvers));
                }
                None
            }
        };
        if let Some(message) = refused {
            changed = true;
            run.tool_finished(&call.id, ToolOutcome::Error(message), now_ms());
            hooks.result(run, call);
        }
    }
    changed |= !needed.is_empty();
    run.reviewed_with(needed, now_ms());
    if hooks.watching() {
        for i in &run.checkpoint().interrupts {
            hooks.emit_ref(&Event::ApprovalRequested {
                id: &i.id,
                tool_name: &i.tool_name,
                input: &i.input,
                expires_at: i.expires_at,
                approvers: i.approvers,
            });
        }
    }
    // A review only the agent's policy asked for, which let every call run, is not a step of its own (a session
    // would write it: one more store write per turn); the tool that runs next saves it. Were the run stopped between,
    // the review runs again, to the same end.
    if !changed {
        return Ok(());
    }
    hooks.checkpoint(run, config.codec()).await
}

/// The run's hooks, shared by the calls of a turn that run together (each takes them for a moment, never across a
/// wait).
type Shared<'a, 'h> = std::sync::Mutex<&'a mut Hooks<'h>>;

fn lock<'g, T>(m: &'g std::sync::Mutex<T>) -> std::sync::MutexGuard<'g, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a call did: its outcome, or `Err(Some(why))` when what it stands for could not be reached, `Err(None)` when
/// the run's signal stopped it.
type Called = Result<ToolOutcome, Option<crate::tool::Unavailable>>;

/// [`Step::CallTool`]: the call, and the calls of the turn after it that may run with it, at most
/// `config.tool_concurrency` at a time (a subagent's call runs alone).
async fn run_tools(
    config: &AgentConfig,
    run: &mut Run<'_>,
    call: ToolUse,
    hooks: &mut Hooks<'_>,
) -> Result<(), AgentError> {
    let calls = if config.tool_concurrency == 1 {
        vec![call]
    } else {
        run.runs_with(call, |name| {
            config
                .tool(name)
                .is_some_and(|t| !(crate::subagent::NESTS && t.runs_agent()))
        })
    };
    for call in &calls {
        started(call, hooks);
    }
    // A subagent's call (it runs alone) is lent the run's events, policies and budgets, and counts the tokens the
    // subagent spends; it goes on with the subagent's run the check before this resume opened, if it did.
    let lent = match calls.as_slice() {
        [call] if crate::subagent::NESTS && config.tool(&call.name).is_some_and(|t| t.runs_agent()) => Some(Lend {
            policies: config.policy.iter().chain(&hooks.policies).cloned().collect(),
            budgets: run.budgets_within(),
            spent: std::sync::Mutex::new(Usage::default()),
            failed: std::sync::Mutex::new(Vec::new()),
            opened: run.take_opened(&call.id),
        }),
        _ => None,
    };
    // Each call sees the state as the calls before it in time left it; what they set is kept in call order.
    let current = run.state().cloned();
    let latest = std::sync::Mutex::new((0, None));
    let slots: Vec<StateSlot<'_>> = calls
        .iter()
        .map(|_| StateSlot::new(current.as_ref(), Some(&latest)))
        .collect();
    let inputs: Vec<Option<crate::tool::PendingInput>> = calls
        .iter()
        .map(|c| run.checkpoint().pending_input.clone().filter(|p| p.call == c.id))
        .collect();
    let run_id = run.run_id().to_owned();
    let width = match config.tool_concurrency {
        0 => calls.len(),
        n => usize::try_from(n).unwrap_or(usize::MAX),
    };
    // The run's signal stops every call under way at once — but those that see it themselves and end after what
    // they must do then (a subagent keeps its run, an MCP call tells its server): the abort waits for those.
    let mut stop = hooks.events.when_aborted();
    let waited: Vec<bool> = calls
        .iter()
        .map(|c| config.tool(&c.name).is_some_and(|t| t.stops_itself()))
        .collect();
    let mut stopping = false;
    let shared: Shared<'_, '_> = std::sync::Mutex::new(&mut *hooks);
    let mut running: Vec<Option<BoxFuture<'_, Called>>> = calls.iter().map(|_| None).collect();
    let mut done: Vec<Option<Called>> = calls.iter().map(|_| None).collect();
    let (mut started, mut finished, mut taken) = (0, 0, 0);
    // Ok: all taken; Err(k): call k was not (stopped, or unreachable: its outcome says which).
    let ended = std::future::poll_fn(|cx| {
        loop {
            let room = width.saturating_sub(started - finished);
            let starting = running.iter_mut().zip(calls.iter().zip(slots.iter().zip(&inputs)));
            for (work, (call, (slot, input))) in starting.skip(started).take(room) {
                *work = Some(Box::pin(call_tool(
                    config,
                    &run_id,
                    call,
                    slot,
                    input.as_ref(),
                    lent.as_ref(),
                    &shared,
                )));
                started += 1;
            }
            if !stopping && stop.as_mut().is_some_and(|s| s.as_mut().poll(cx).is_ready()) {
                // Nothing more starts; what does not end by itself is dropped.
                stopping = true;
                started = calls.len();
                for (work, _) in running.iter_mut().zip(&waited).filter(|(_, w)| !**w) {
                    *work = None;
                }
            }
            let mut progressed = false;
            for (work, out) in running.iter_mut().zip(done.iter_mut()) {
                if let Some(std::task::Poll::Ready(called)) = work.as_mut().map(|w| w.as_mut().poll(cx)) {
                    *work = None;
                    *out = Some(called);
                    finished += 1;
                    progressed = true;
                }
            }
            // Taken in call order, as each call and those before it have ended.
            for (out, (call, slot)) in done.iter_mut().zip(calls.iter().zip(&slots)).skip(taken) {
                let Some(called) = out.take() else { break };
                let mut outcome = match called {
                    Ok(outcome) => outcome,
                    Err(why) => {
                        *out = Some(Err(why));
                        return std::task::Poll::Ready(Err(taken));
                    }
                };
                if let Some(lend) = &lent {
                    run.spent(*lock(&lend.spent));
                    // A subagent's failed runs, kept with the call's result (in the same checkpoint).
                    if let Some(why) = run.keep_failed(std::mem::take(&mut *lock(&lend.failed))) {
                        if let ToolOutcome::Error(message) = &mut outcome {
                            message.push_str(&format!(" ({why})"));
                        }
                    }
                }
                let mut next_state = lock(&slot.next).take();
                if next_state.is_some() && slot.stale.load(std::sync::atomic::Ordering::Relaxed) {
                    next_state = None;
                    if !matches!(outcome, ToolOutcome::Interrupt(_) | ToolOutcome::Input(_)) {
                        outcome = ToolOutcome::Error(format!(
                            "{} set the state after a call running with it had changed it: its state was not kept \
                             (toolConcurrency: 1 runs a turn's calls one at a time)",
                            call.name
                        ));
                    }
                }
                finish(config, run, call, outcome, next_state, &mut lock(&shared));
                taken += 1;
            }
            if taken == calls.len() {
                return std::task::Poll::Ready(Ok(()));
            }
            if stopping && running.iter().all(Option::is_none) {
                return std::task::Poll::Ready(Err(taken));
            }
            if !progressed {
                return std::task::Poll::Pending;
            }
        }
    })
    .await;
    // What still runs is dropped: a result it gives later is ignored.
    drop(running);
    let hooks = shared.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    match ended {
        Ok(()) => hooks.checkpoint(run, config.codec()).await,
        Err(k) => match (done.get_mut(k).and_then(Option::take), calls.get(k)) {
            (Some(Err(Some(source))), Some(call)) if !hooks.events.aborted() => {
                Err(unavailable(run, call, source, hooks))
            }
            _ => Err(aborted(run, hooks)),
        },
    }
}

/// A tool call starts: reported and traced.
fn started(call: &ToolUse, hooks: &mut Hooks<'_>) {
    if hooks.watching() {
        hooks.emit_ref(&Event::ToolCall {
            id: &call.id,
            tool_name: &call.name,
            input: &call.input,
        });
    }
    if let Some(trace) = hooks.trace() {
        trace.tool_start(call);
    }
}

/// Stopped by the run's signal (its request cancelled, or a wait before a retry): the run is aborted, the call not
/// recorded.
fn aborted(run: &Run<'_>, hooks: &mut Hooks<'_>) -> AgentError {
    if let Some(trace) = hooks.trace() {
        trace.end_tools("aborted");
    }
    AgentError::Aborted {
        checkpoint: Box::new(stopped(run.clone())),
    }
}

/// What `call` stands for could not be reached. Not recorded: the checkpoint from before the call calls it again
/// when resumed — or, for a call resumed with answers to its requests for input, waits for those answers again.
fn unavailable(run: &Run<'_>, call: &ToolUse, source: crate::tool::Unavailable, hooks: &mut Hooks<'_>) -> AgentError {
    if let Some(trace) = hooks.trace() {
        trace.end_tools("unavailable");
    }
    let mut before = run.clone();
    before.reopen_input(&call.id);
    AgentError::Mcp {
        source,
        checkpoint: Some(Box::new(stopped(before))),
    }
}

/// Takes a call's outcome into the run: the state it set (unless it breaks the limits: then the call's result says
/// so), its result, reported and traced. A call that pauses while the run already waits for another (calls that ran
/// together) is not recorded: it runs again once the run goes on.
fn finish(
    config: &AgentConfig,
    run: &mut Run<'_>,
    call: &ToolUse,
    mut outcome: ToolOutcome,
    next: Option<Value>,
    hooks: &mut Hooks<'_>,
) {
    let pauses = matches!(
        outcome,
        ToolOutcome::Interrupt(_) | ToolOutcome::Input(_) | ToolOutcome::Nested(_)
    );
    if pauses && run.checkpoint().is_interrupted() {
        if let Some(trace) = hooks.trace() {
            trace.tool_end(&call.id, None, None);
        }
        return;
    }
    if let Some(state) = next {
        if let Err(why) = keep_state(config, run, state, call, hooks) {
            outcome = ToolOutcome::Error(why);
        }
    }
    run.tool_finished(&call.id, outcome, now_ms());
    if let Some(trace) = hooks.trace() {
        let result = run.checkpoint().tool_results.iter().find(|r| r.tool_use_id == call.id);
        trace.tool_end(&call.id, result, None);
    }
    hooks.result(run, call);
}

/// Keeps the state a tool set, refused like any input over the limits (so the run can always be read back).
fn keep_state(
    config: &AgentConfig,
    run: &mut Run<'_>,
    state: Value,
    call: &ToolUse,
    hooks: &mut Hooks<'_>,
) -> Result<(), String> {
    let max = config.rules.limits.max_depth;
    let depth = crate::limits::value_depth(&state);
    if depth > max {
        return Err(format!(
            "{} set a state nested {depth} deep; at most {max} (limits.maxDepth): the state was not changed",
            call.name
        ));
    }
    let now = run.state().map_or(0, crate::json::len);
    if let Some(why) = run.too_large(crate::json::len(&state), now) {
        return Err(format!("{} set a state that was not kept: {why}", call.name));
    }
    run.set_state(state);
    if let (Some(state), true) = (run.state(), hooks.watching()) {
        hooks.emit_ref(&Event::StateChanged { state });
    }
    Ok(())
}

/// [`Step::Paused`]: the run waits for a human.
fn paused(run: Run<'_>, hooks: &mut Hooks<'_>) -> Outcome {
    let checkpoint = run.into_checkpoint();
    if hooks.watching() {
        hooks.emit_ref(&Event::Interrupt {
            question: checkpoint.question.as_deref().unwrap_or_default(),
            interrupts: &checkpoint.interrupts,
        });
    }
    Outcome::Interrupted(InterruptedResponse {
        question: checkpoint.question.clone().unwrap_or_default(),
        checkpoint,
    })
}

/// [`Step::Done`]: the final answer (saved first when the last step changed the run).
async fn done(
    config: &AgentConfig,
    mut run: Run<'_>,
    text: String,
    hooks: &mut Hooks<'_>,
) -> Result<Outcome, AgentError> {
    if run.take_changed_at_done() {
        run.touch(now_ms());
        hooks.checkpoint(&mut run, config.codec()).await?;
    }
    if GUARDED && !config.guardrails.output.is_empty() {
        let cp = run.checkpoint();
        let mut input = GuardrailInput::new(GuardrailKind::Output, &cp.messages);
        input.text = Some(&text);
        input.structured = cp.structured.as_ref();
        if let Some(t) = guard(config, input, hooks).await {
            return Err(tripped(t, GuardrailKind::Output, run.into_checkpoint()));
        }
    }
    Ok(Outcome::Complete(AgentResponse {
        text,
        checkpoint: run.into_checkpoint(),
    }))
}

/// Calls the tool (with the answers to its request for input, when resumed with them) under its
/// [`CallPolicy`](crate::CallPolicy): each attempt bounded by its timeout, a failed or timed-out attempt tried
/// again after its backoff (a `tool-retry` event each time). `Err(Some(why))` when what it stands for could not
/// be reached, `Err(None)` when the run's signal stopped a wait before a retry.
async fn call_tool(
    config: &AgentConfig,
    run_id: &str,
    call: &ToolUse,
    state: &StateSlot<'_>,
    input: Option<&crate::tool::PendingInput>,
    lent: Option<&Lend>,
    hooks: &Shared<'_, '_>,
) -> Called {
    let Some(tool) = config.tool(&call.name) else {
        return Ok(ToolOutcome::Error(format!("unknown tool {:?}", call.name)));
    };
    let policy = tool.call_policy().or(config.tool_defaults);
    let attempts = policy.max_attempts.unwrap_or(1).max(1);
    let mut backoff = policy.backoff_ms.unwrap_or(0);
    let mut attempt = 1;
    loop {
        let answer = {
            let nest = lent.filter(|_| crate::subagent::NESTS).map(|lend| Lent { hooks, lend });
            let ctx = ToolContext {
                tool_use_id: &call.id,
                run_id,
                state: Some(state),
                input,
                nest: nest.as_ref().map(|n| n as &dyn crate::tool::Nesting),
            };
            let work = tool.call_dyn(call.input.clone(), ctx);
            match policy.timeout_ms {
                Some(ms) => crate::platform::unless_stopped(work, config.wait(ms)).await,
                None => Some(work.await),
            }
        };
        let failed = match answer {
            Some(Ok(Value::String(text))) => return Ok(ToolOutcome::Output(text)),
            // Spelled as a JS tool's result is (keys sorted, numbers as JS reads them): one text in every host.
            Some(Ok(value)) => return Ok(ToolOutcome::Output(crate::keys::canonical_json(&value))),
            Some(Err(ToolError::Interrupt(i))) => return Ok(ToolOutcome::Interrupt(i)),
            Some(Err(ToolError::Input(input))) => return Ok(ToolOutcome::Input(input)),
            Some(Err(ToolError::Nested(pause))) if crate::subagent::NESTS => return Ok(ToolOutcome::Nested(pause)),
            Some(Err(ToolError::Nested(_))) => {
                return Ok(ToolOutcome::Error(
                    "this variant of the package runs no subagent".into(),
                ));
            }
            // What the tool stands for could not be reached: tried again while attempts remain, then the run
            // ends (with the checkpoint from before the call).
            Some(Err(ToolError::Unavailable(why))) if attempt >= attempts => return Err(Some(why)),
            Some(Err(ToolError::Unavailable(why))) => why.to_string(),
            Some(Err(ToolError::Final(message))) => return Ok(ToolOutcome::Error(message)),
            Some(Err(ToolError::Failed(message))) => message,
            // Timed out: what the attempt does later is not waited for, and its result is ignored.
            None => format!(
                "{} took longer than its timeout of {} ms",
                call.name,
                policy.timeout_ms.unwrap_or_default()
            ),
        };
        if attempt >= attempts {
            let tried = if attempts > 1 {
                format!(" (after {attempts} attempts)")
            } else {
                String::new()
            };
            return Ok(ToolOutcome::Error(format!("{failed}{tried}")));
        }
        {
            let mut hooks = lock(hooks);
            if hooks.watching() {
                hooks.emit_ref(&Event::ToolRetry {
                    id: &call.id,
                    tool_name: &call.name,
                    attempt,
                    error: &failed,
                    delay_ms: backoff,
                });
            }
        }
        // What a failed attempt set is not kept.
        *lock(&state.next) = None;
        if backoff > 0 {
            let stop = lock(hooks).events.when_aborted();
            let waited = match config.wait(backoff) {
                Some(wait) => crate::platform::unless_stopped(wait, stop).await,
                None => Some(()),
            };
            if waited.is_none() || lock(hooks).events.aborted() {
                return Err(None);
            }
        }
        backoff = backoff.saturating_mul(2);
        attempt += 1;
    }
}

/// What a run lends a call that runs a subagent ([`crate::tool::Nesting`]): the policies and budgets over it, and the
/// tokens it spent.
struct Lend {
    policies: Vec<std::sync::Arc<dyn crate::approval::ApprovalPolicy>>,
    budgets: Vec<(crate::approval::Budget, Usage)>,
    spent: std::sync::Mutex<Usage>,
    failed: std::sync::Mutex<Vec<crate::subagent::FailedSubagent>>,
    opened: Option<crate::agent::Decoded>,
}

/// [`Lend`] with the run's hooks: its listener, its session's numbering and its trace (whose tool span is the
/// call's), for one attempt of the call.
struct Lent<'a, 'b, 'h> {
    hooks: &'a Shared<'b, 'h>,
    lend: &'a Lend,
}

/// The run's listener as a subagent's events reach it: numbered, and logged by the run's session, like the run's own.
struct Numbered<'a> {
    events: &'a mut dyn EventSink,
    persist: Option<&'a mut dyn Persist>,
}

impl EventSink for Numbered<'_> {
    fn event(&mut self, event: &Event<'_>) {
        let seq = self.persist.as_deref_mut().and_then(|p| p.observe(event));
        if self.events.listening() {
            self.events.sequenced(seq, event);
        }
    }
    fn wants_deltas(&self) -> bool {
        self.events.wants_deltas()
    }
    /// A session logs the subagent's step-level events even when nobody listens.
    fn listening(&self) -> bool {
        self.events.listening() || self.persist.is_some()
    }
    fn aborted(&self) -> bool {
        self.events.aborted()
    }
    fn when_aborted(&self) -> Option<BoxFuture<'static, ()>> {
        self.events.when_aborted()
    }
}

impl crate::tool::Nesting for Lent<'_, '_, '_> {
    fn sink(&self, f: &mut dyn FnMut(&mut dyn EventSink)) {
        let mut hooks = lock(self.hooks);
        let hooks = &mut **hooks;
        f(&mut Numbered {
            events: &mut *hooks.events,
            persist: hooks.persist.as_mut().map(|p| &mut **p as &mut dyn Persist),
        });
    }
    fn policies(&self) -> &[std::sync::Arc<dyn crate::approval::ApprovalPolicy>] {
        &self.lend.policies
    }
    fn budgets(&self) -> &[(crate::approval::Budget, Usage)] {
        &self.lend.budgets
    }
    fn spend(&self, usage: Usage) {
        self.lend
            .spent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .add(usage);
    }
    fn opened(&self) -> Option<&crate::agent::Decoded> {
        self.lend.opened.as_ref()
    }
    fn traced(&self, f: &mut crate::tool::UnderTrace<'_>) {
        let hooks = lock(self.hooks);
        match hooks.trace.as_ref().filter(|_| TRACED) {
            Some(t) => f(Some(t.telemetry()), t.tool_span()),
            None => f(None, None),
        }
    }
    fn failed(&self, failed: crate::subagent::FailedSubagent) {
        self.lend
            .failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(failed);
    }
}
