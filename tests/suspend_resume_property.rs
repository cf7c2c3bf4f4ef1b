//! The headline property: for random scripts, a run that is suspended, serialized to JSON and resumed
//! by a fresh agent at every interrupt (and, optionally, after every step via a model error) ends with
//! exactly the transcript of the same run answered inline, and runs every tool call exactly once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::*;
use proptest::prelude::*;
use resumable_agent::{AgentError, Checkpoint, Message, ModelResponse, Outcome};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
enum Call {
    Lookup(u8),
    Ask,
    Fail,
    Unknown,
}

fn call_strategy() -> impl Strategy<Value = Call> {
    prop_oneof![
        4 => any::<u8>().prop_map(Call::Lookup),
        3 => Just(Call::Ask),
        1 => Just(Call::Fail),
        1 => Just(Call::Unknown),
    ]
}

/// A script: turns of 0..4 calls (the last turn is the final text).
fn script_strategy() -> impl Strategy<Value = Vec<Vec<Call>>> {
    prop::collection::vec(prop::collection::vec(call_strategy(), 1..4), 0..6)
}

fn responses(script: &[Vec<Call>]) -> Vec<ModelResponse> {
    let mut out: Vec<ModelResponse> = script
        .iter()
        .enumerate()
        .map(|(t, calls)| {
            let blocks = calls
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let id = format!("t{t}c{k}");
                    let (name, input) = match c {
                        Call::Lookup(n) => ("lookup", json!({"key": n.to_string()})),
                        Call::Ask => ("ask_user", json!({"question": format!("q {id}")})),
                        Call::Fail => ("fail", json!({"why": id.clone()})),
                        Call::Unknown => ("missing_tool", json!({})),
                    };
                    call(&id, name, input)
                })
                .collect();
            turn(blocks).with_usage(10 + t as u64, 1)
        })
        .collect();
    out.push(ModelResponse::text("final").with_usage(1, 1));
    out
}

fn through_json(cp: &Checkpoint) -> Checkpoint {
    // Through a generic JSON value too, as a JS host would do with JSON.parse/JSON.stringify.
    let value: Value = serde_json::from_str(&cp.to_json()).unwrap();
    Checkpoint::from_value(value).unwrap()
}

fn transcript(messages: &[Message]) -> Vec<Message> {
    messages.to_vec()
}

/// How often the asking tool ran: once per question one call at a time; with calls running together, a call that
/// asks while another's question waits is not recorded and asks again once the run goes on (each question still
/// reaches the human once).
fn asked_once_or_again(ran: usize, asked: usize, concurrency: u32) -> Result<(), TestCaseError> {
    if concurrency == 1 {
        prop_assert_eq!(ran, asked);
    } else {
        prop_assert!(ran >= asked && ran <= 2 * asked, "{} runs for {} questions", ran, asked);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn suspend_json_resume_equals_the_uninterrupted_run(
        script in script_strategy(),
        fail_at in prop::option::of(0usize..8),
        concurrency in prop::sample::select(vec![0u32, 1, 2]),
    ) {
        let all = responses(&script);

        // Uninterrupted: the human answers inline.
        let inline_counters = Counters::default();
        let inline_model = TestModel::new(all.clone());
        let expected = block_on(agent_answering_inline(inline_model.clone(), &inline_counters).max_iterations(50).build().unwrap().prompt("start"))
            .unwrap()
            .assert_complete()
            .unwrap();

        // Interrupted: every pause goes through JSON into a brand-new agent; optionally one model call fails
        // first and the error's checkpoint is resumed the same way.
        let mut script_with_failure: Vec<Result<ModelResponse, resumable_agent::ModelError>> = all.iter().cloned().map(Ok).collect();
        if let Some(at) = fail_at.filter(|a| *a < script_with_failure.len()) {
            script_with_failure.insert(at, Err(resumable_agent::ModelError::Failed { name: None, message: "transient".into() }));
        }
        let model = TestModel::with_results(script_with_failure);
        let counters = Counters::default();
        let fresh_agent = || agent_with(model.clone(), &counters).max_iterations(50).tool_concurrency(concurrency).build().unwrap();
        let mut result = block_on(fresh_agent().prompt("start"));
        let mut pauses = 0;
        let mut rounds = 0;
        let done = loop {
            rounds += 1;
            prop_assert!(rounds <= 64, "the run did not finish within 64 resumes");
            match result {
                Ok(Outcome::Complete(done)) => break done,
                Ok(Outcome::Interrupted(p)) => {
                    pauses += 1;
                    let answer = answer_for(&p.question);
                    result = block_on(fresh_agent().resume(through_json(&p.checkpoint), &answer));
                }
                Err(AgentError::Model { checkpoint, .. }) => {
                    result = block_on(fresh_agent().resume(through_json(&checkpoint), ""));
                }
                Err(other) => panic!("unexpected error {other:?}"),
            }
        };

        prop_assert_eq!(transcript(done.messages()), transcript(expected.messages()));
        prop_assert_eq!(&done.text, &expected.text);
        prop_assert_eq!(done.iterations(), expected.iterations());
        prop_assert_eq!(done.usage(), expected.usage());
        // Every side-effecting call ran exactly once, in the same order.
        prop_assert_eq!(counters.ran.lock().unwrap().clone(), inline_counters.ran.lock().unwrap().clone());
        let asks_in_script = script.iter().flatten().filter(|c| matches!(c, Call::Ask)).count();
        prop_assert_eq!(pauses, asks_in_script);
        asked_once_or_again(Counters::get(&counters.ask), asks_in_script, concurrency)?;
        // The model saw the same conversations (a model error retries the same request).
        let mut seen = model.requests.lock().unwrap().clone();
        seen.dedup();
        prop_assert_eq!(seen, inline_model.requests.lock().unwrap().clone());
    }
}

// ---- with approvals ------------------------------------------------------------------------------------

/// What the human decides for a gated call.
#[derive(Debug, Clone, Copy)]
enum Verdict {
    Approve,
    ApproveEdited,
    Deny,
}

#[derive(Debug, Clone)]
enum GatedCall {
    Plain(Call),
    Send(u8, Verdict),
}

fn gated_call_strategy() -> impl Strategy<Value = GatedCall> {
    let verdict = prop_oneof![
        Just(Verdict::Approve),
        Just(Verdict::ApproveEdited),
        Just(Verdict::Deny)
    ];
    prop_oneof![
        3 => call_strategy().prop_map(GatedCall::Plain),
        2 => (any::<u8>(), verdict).prop_map(|(n, v)| GatedCall::Send(n, v)),
    ]
}

/// The model's turns. With `as_ran`, approved-with-edits calls carry the edited input from the start (so
/// the uninterrupted run's transcript is what the interrupted one must end with).
fn gated_responses(script: &[Vec<GatedCall>], as_ran: bool) -> Vec<ModelResponse> {
    let mut out: Vec<ModelResponse> = script
        .iter()
        .enumerate()
        .map(|(t, calls)| {
            let blocks = calls
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let id = format!("t{t}c{k}");
                    let (name, input) = match c {
                        GatedCall::Plain(Call::Lookup(n)) => ("lookup", json!({"key": n.to_string()})),
                        GatedCall::Plain(Call::Ask) => ("ask_user", json!({"question": format!("q {id}")})),
                        GatedCall::Plain(Call::Fail) => ("fail", json!({"why": id.clone()})),
                        GatedCall::Plain(Call::Unknown) => ("missing_tool", json!({})),
                        GatedCall::Send(n, Verdict::ApproveEdited) if as_ran => {
                            ("send", json!({"to": format!("edited {n}")}))
                        }
                        GatedCall::Send(n, _) => ("send", json!({"to": format!("to {n}")})),
                    };
                    call(&id, name, input)
                })
                .collect();
            turn(blocks).with_usage(5, 1)
        })
        .collect();
    out.push(ModelResponse::text("final").with_usage(1, 1));
    out
}

fn verdicts(script: &[Vec<GatedCall>]) -> std::collections::HashMap<String, (u8, Verdict)> {
    let mut m = std::collections::HashMap::new();
    for (t, calls) in script.iter().enumerate() {
        for (k, c) in calls.iter().enumerate() {
            if let GatedCall::Send(n, v) = c {
                m.insert(format!("t{t}c{k}"), (*n, *v));
            }
        }
    }
    m
}

/// `send`, as it ran: records the call and echoes its input.
fn send_tool(
    c: Counters,
) -> resumable_agent::FnTool<
    impl Fn(Value, resumable_agent::ToolContext<'_>) -> std::future::Ready<Result<Value, resumable_agent::ToolError>>
    + Send
    + Sync,
> {
    resumable_agent::tool(
        "send",
        "Send.",
        json!({"type": "object", "properties": {"to": {"type": "string"}}}),
        move |input: Value, ctx| {
            c.ran.lock().unwrap().push(ctx.tool_use_id.to_owned());
            std::future::ready(Ok(json!({"sent": input})))
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn approvals_and_questions_through_json_equal_the_uninterrupted_run_given_the_same_decisions(
        script in prop::collection::vec(prop::collection::vec(gated_call_strategy(), 1..4), 0..6),
    ) {
        let decided = verdicts(&script);

        // Uninterrupted: nothing is gated; the human's decisions are already in the script (edited inputs)
        // and in the tool (a denied call answers with the denial and does not run).
        let inline_counters = Counters::default();
        let inline_model = TestModel::by_turn(gated_responses(&script, true));
        let c = inline_counters.clone();
        let denied = decided.clone();
        let inline_send = resumable_agent::tool("send", "Send.", json!({"type": "object", "properties": {"to": {"type": "string"}}}), move |input: Value, ctx| {
            let verdict = denied.get(ctx.tool_use_id).map(|(_, v)| *v);
            let out = if matches!(verdict, Some(Verdict::Deny)) {
                Err(resumable_agent::ToolError::failed(format!("The user denied this call to send; it did not run: no {}", ctx.tool_use_id)))
            } else {
                c.ran.lock().unwrap().push(ctx.tool_use_id.to_owned());
                Ok(json!({"sent": input}))
            };
            std::future::ready(out)
        });
        let expected = block_on(agent_answering_inline(inline_model, &inline_counters).tool(inline_send).max_iterations(50).build().unwrap().prompt("start"))
            .unwrap()
            .assert_complete()
            .unwrap();

        // Interrupted: `send` needs approval; every pause goes through JSON into a brand-new agent.
        let model = TestModel::by_turn(gated_responses(&script, false));
        let counters = Counters::default();
        let fresh_agent = || agent_with(model.clone(), &counters).tool(send_tool(counters.clone()).needs_approval()).max_iterations(50).build().unwrap();
        let mut result = block_on(fresh_agent().prompt("start"));
        let mut rounds = 0;
        let mut approval_pauses = 0;
        let done = loop {
            rounds += 1;
            prop_assert!(rounds <= 64, "the run did not finish within 64 resumes");
            match result {
                Ok(Outcome::Complete(done)) => break done,
                Ok(Outcome::Interrupted(p)) => {
                    if p.interrupts()[0].kind == resumable_agent::InterruptKind::Approval {
                        approval_pauses += 1;
                        let sends_in_turn = p.checkpoint.messages.last().unwrap().tool_uses().filter(|u| u.name == "send").count();
                        prop_assert_eq!(p.interrupts().len(), sends_in_turn, "one pause with every gated call of the turn");
                    }
                    let input = if p.interrupts()[0].kind == resumable_agent::InterruptKind::Question {
                        resumable_agent::Resume::from(answer_for(&p.question))
                    } else {
                        resumable_agent::Resume::decisions(p.interrupts().iter().map(|i| match decided[&i.id] {
                            (_, Verdict::Approve) => resumable_agent::Decision::approve(),
                            (n, Verdict::ApproveEdited) => resumable_agent::Decision::approve_with(json!({"to": format!("edited {n}")})),
                            (_, Verdict::Deny) => resumable_agent::Decision::deny(format!("no {}", i.id)),
                        }))
                    };
                    result = block_on(fresh_agent().resume(through_json(&p.checkpoint), input));
                }
                Err(other) => panic!("unexpected error {other:?}"),
            }
        };
        prop_assert_eq!(done.messages(), expected.messages());
        prop_assert_eq!(done.iterations(), expected.iterations());
        let gated_turns = script.iter().filter(|t| t.iter().any(|c| matches!(c, GatedCall::Send(..)))).count();
        prop_assert_eq!(approval_pauses, gated_turns, "one approval pause per turn with gated calls");
        let ran = counters.ran.lock().unwrap().clone();
        prop_assert_eq!(&ran, &*inline_counters.ran.lock().unwrap(), "the same calls ran, in the same order");
        let mut unique = ran.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), ran.len(), "no call ran twice");
    }
}

// ---- inside a subagent ---------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    /// The same random scripts run by a subagent (issue 34): its questions surface in the parent, each answered with
    /// a text to a brand-new parent resumed from JSON; the subagent's conversation, answer and tool runs are those of
    /// the run answered inline, and the parent's usage counts the subagent's.
    #[test]
    fn a_subagent_suspended_and_resumed_through_its_parent_equals_the_uninterrupted_run(
        script in script_strategy(),
        asked_by_id in any::<bool>(),
        concurrency in prop::sample::select(vec![0u32, 1, 2]),
    ) {
        let all = responses(&script);
        let inline_counters = Counters::default();
        let inline_model = TestModel::new(all.clone());
        let expected = block_on(agent_answering_inline(inline_model.clone(), &inline_counters).max_iterations(50).build().unwrap().prompt("start"))
            .unwrap()
            .assert_complete()
            .unwrap();

        let child_model = TestModel::new(all.clone());
        let counters = Counters::default();
        let parent_model = TestModel::by_turn([
            turn(vec![call("p1", "child", json!({"task": "start"}))]).with_usage(3, 1),
            ModelResponse::text("parent done").with_usage(1, 1),
        ]);
        let fresh_parent = || {
            let child = agent_with(child_model.clone(), &counters).max_iterations(50).tool_concurrency(concurrency).build().unwrap();
            resumable_agent::Agent::builder(parent_model.clone())
                .tool(resumable_agent::agent_tool("child", "Runs the child.", child))
                .build()
                .unwrap()
        };
        let mut result = block_on(fresh_parent().prompt("go"));
        let mut pauses = 0;
        let done = loop {
            prop_assert!(pauses <= 64, "the run did not finish within 64 resumes");
            match result {
                Ok(Outcome::Complete(done)) => break done,
                Ok(Outcome::Interrupted(p)) => {
                    pauses += 1;
                    let i = &p.checkpoint.interrupts[0];
                    prop_assert_eq!(&i.path, &vec!["p1".to_owned()]);
                    let answer = answer_for(&p.question);
                    // A text, or the same answer as a decision by the interrupt's id in the parent.
                    let input = if asked_by_id {
                        resumable_agent::Resume::decisions_by_id([(i.id.clone(), resumable_agent::Decision::Answer { text: answer })])
                    } else {
                        resumable_agent::Resume::Answer(answer)
                    };
                    result = block_on(fresh_parent().resume(through_json(&p.checkpoint), input));
                }
                Err(other) => panic!("unexpected error {other:?}"),
            }
        };
        prop_assert_eq!(&done.text, "parent done");
        let child_result = done.messages().iter().flat_map(|m| m.tool_results()).find(|r| r.tool_use_id == "p1").unwrap().clone();
        prop_assert_eq!(&child_result.content, &expected.text);
        prop_assert_eq!(counters.ran.lock().unwrap().clone(), inline_counters.ran.lock().unwrap().clone());
        let asks_in_script = script.iter().flatten().filter(|c| matches!(c, Call::Ask)).count();
        prop_assert_eq!(pauses, asks_in_script);
        asked_once_or_again(Counters::get(&counters.ask), asks_in_script, concurrency)?;
        prop_assert_eq!(child_model.requests.lock().unwrap().clone(), inline_model.requests.lock().unwrap().clone());
        let mut usage = expected.usage();
        usage.add(resumable_agent::Usage { input_tokens: 4, output_tokens: 2 });
        prop_assert_eq!(done.usage(), usage);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    /// A subagent whose model fails at a random call (issue 34): the parent completes with the failure as the call's
    /// error result and keeps the subagent's run; the subagent's agent, resuming that run from the parent's JSON,
    /// ends as the uninterrupted run does — same answer, same requests from the failed call on, every tool run once.
    #[test]
    fn a_failed_subagents_kept_run_resumed_by_its_agent_equals_the_uninterrupted_run(
        script in script_strategy(),
        fail_at in any::<prop::sample::Index>(),
    ) {
        let all = responses(&script);
        let inline_counters = Counters::default();
        let inline_model = TestModel::new(all.clone());
        let expected = block_on(agent_answering_inline(inline_model.clone(), &inline_counters).max_iterations(50).build().unwrap().prompt("start"))
            .unwrap()
            .assert_complete()
            .unwrap();
        let k = fail_at.index(all.len());
        let failing = TestModel::with_results(all[..k].iter().cloned().map(Ok).chain([Err(resumable_agent::ModelError::Http {
            provider: "anthropic".into(),
            status: Some(529),
            message: "overloaded".into(),
            retryable: true,
        })]));
        let counters = Counters::default();
        let parent = resumable_agent::Agent::builder(TestModel::by_turn([
            turn(vec![call("p1", "child", json!({"task": "start"}))]),
            ModelResponse::text("parent done"),
        ]))
        .tool(resumable_agent::agent_tool(
            "child",
            "Runs the child.",
            agent_answering_inline(failing.clone(), &counters).max_iterations(50).build().unwrap(),
        ))
        .build()
        .unwrap();
        let done = block_on(parent.prompt("go")).unwrap().assert_complete().unwrap();
        prop_assert_eq!(&done.text, "parent done");
        let kept = through_json(&done.checkpoint).failed_subagents;
        prop_assert_eq!(kept.len(), 1);
        prop_assert_eq!(&kept[0].id, "p1");
        let run = kept[0].checkpoint().unwrap();

        let resumed_model = TestModel::new(all[k..].to_vec());
        let resumed = block_on(agent_answering_inline(resumed_model.clone(), &counters).max_iterations(50).build().unwrap()
            .resume(run, resumable_agent::Resume::Answer(String::new())))
            .unwrap()
            .assert_complete()
            .unwrap();
        prop_assert_eq!(&resumed.text, &expected.text);
        prop_assert_eq!(transcript(resumed.messages()), transcript(expected.messages()));
        prop_assert_eq!(counters.ran.lock().unwrap().clone(), inline_counters.ran.lock().unwrap().clone());
        let inline_requests = inline_model.requests.lock().unwrap().clone();
        prop_assert_eq!(failing.requests.lock().unwrap().clone(), inline_requests[..=k].to_vec());
        prop_assert_eq!(resumed_model.requests.lock().unwrap().clone(), inline_requests[k..].to_vec());
    }
}

// ---- random decisions through a parent ------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Gated {
    Lookup(u8),
    Ask,
    Send(u8),
}

/// Turns of 1..4 calls among `lookup`, `ask_user` and `send` (which needs approval); the last turn is the final text.
fn gated_script_strategy() -> impl Strategy<Value = Vec<ModelResponse>> {
    let one = prop_oneof![
        2 => any::<u8>().prop_map(Gated::Lookup),
        2 => Just(Gated::Ask),
        3 => any::<u8>().prop_map(Gated::Send),
    ];
    prop::collection::vec(prop::collection::vec(one, 1..4), 0..5).prop_map(|turns| {
        let mut out: Vec<ModelResponse> = turns
            .iter()
            .enumerate()
            .map(|(t, calls)| {
                let blocks = calls
                    .iter()
                    .enumerate()
                    .map(|(k, c)| {
                        let id = format!("t{t}c{k}");
                        let (name, input) = match c {
                            Gated::Lookup(n) => ("lookup", json!({"key": n.to_string()})),
                            Gated::Ask => ("ask_user", json!({"question": format!("q {id}")})),
                            Gated::Send(n) => ("send", json!({"to": format!("r{n}"), "n": n})),
                        };
                        call(&id, name, input)
                    })
                    .collect();
                turn(blocks)
            })
            .collect();
        out.push(ModelResponse::text("final"));
        out
    })
}

/// Decides every pending interrupt, in order, from `choices` (cycled; `*next` counts the decisions made): an
/// approval is approved or denied, a question answered; each under the id the run shows (`prefix` + the child's).
fn decide(
    interrupts: &[resumable_agent::Interrupt],
    prefix: &str,
    choices: &[bool],
    next: &mut usize,
) -> (resumable_agent::Resume, Vec<String>) {
    let mut ids = Vec::new();
    let decisions = interrupts
        .iter()
        .map(|i| {
            let approve = choices[*next % choices.len()];
            *next += 1;
            let own = i.id.strip_prefix(prefix).unwrap_or("not under the prefix").to_owned();
            ids.push(own);
            let d = match i.kind {
                resumable_agent::InterruptKind::Question => resumable_agent::Decision::Answer {
                    text: answer_for(i.question.as_deref().unwrap_or_default()),
                },
                _ if approve => resumable_agent::Decision::approve(),
                _ => resumable_agent::Decision::deny("not now"),
            };
            (i.id.clone(), d)
        })
        .collect::<Vec<_>>();
    (resumable_agent::Resume::decisions_by_id(decisions), ids)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, .. ProptestConfig::default() })]

    /// Random approvals, denials and answers (issue 34): a child agent paused on them, decided through its parent by
    /// the parent's ids (`p1/<child id>`) and resumed from JSON by a brand-new parent each time, makes the same model
    /// requests, runs the same tools once each with the same inputs, pauses on the same interrupts and gives the same
    /// answer as the same agent run and decided on its own.
    #[test]
    fn a_subagent_decided_at_random_through_its_parent_equals_the_same_agent_decided_alone(
        script in gated_script_strategy(),
        choices in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        // Alone.
        let alone_model = TestModel::new(script.clone());
        let alone_counters = Counters::default();
        let alone = || agent_with_gates(alone_model.clone(), &alone_counters).max_iterations(50).build().unwrap();
        let mut next = 0;
        let mut alone_asked = Vec::new();
        let mut result = block_on(alone().prompt("start")).unwrap();
        let expected = loop {
            prop_assert!(alone_asked.len() <= 64);
            match result {
                Outcome::Complete(done) => break done,
                Outcome::Interrupted(p) => {
                    let (resume, ids) = decide(&p.checkpoint.interrupts, "", &choices, &mut next);
                    alone_asked.push(ids);
                    result = block_on(alone().resume(through_json(&p.checkpoint), resume)).unwrap();
                }
            }
        };

        // Through a parent: a fresh parent (and child) for every resume.
        let child_model = TestModel::new(script.clone());
        let counters = Counters::default();
        let parent_model = TestModel::by_turn([
            turn(vec![call("p1", "child", json!({"task": "start"}))]),
            ModelResponse::text("parent done"),
        ]);
        let parent = || {
            let child = agent_with_gates(child_model.clone(), &counters).max_iterations(50).build().unwrap();
            resumable_agent::Agent::builder(parent_model.clone())
                .tool(resumable_agent::agent_tool("child", "Runs the child.", child))
                .build()
                .unwrap()
        };
        let mut next = 0;
        let mut asked = Vec::new();
        let mut result = block_on(parent().prompt("go")).unwrap();
        let done = loop {
            prop_assert!(asked.len() <= 64);
            match result {
                Outcome::Complete(done) => break done,
                Outcome::Interrupted(p) => {
                    prop_assert!(p.checkpoint.interrupts.iter().all(|i| i.path == vec!["p1".to_owned()]));
                    let (resume, ids) = decide(&p.checkpoint.interrupts, "p1/", &choices, &mut next);
                    asked.push(ids);
                    result = block_on(parent().resume(through_json(&p.checkpoint), resume)).unwrap();
                }
            }
        };
        prop_assert_eq!(&asked, &alone_asked);
        let child_result = done.messages().iter().flat_map(|m| m.tool_results()).find(|r| r.tool_use_id == "p1").unwrap().clone();
        prop_assert_eq!(&child_result.content, &expected.text);
        prop_assert_eq!(child_model.requests.lock().unwrap().clone(), alone_model.requests.lock().unwrap().clone());
        prop_assert_eq!(counters.ran.lock().unwrap().clone(), alone_counters.ran.lock().unwrap().clone());
        prop_assert_eq!(counters.gated.lock().unwrap().clone(), alone_counters.gated.lock().unwrap().clone());
    }
}
