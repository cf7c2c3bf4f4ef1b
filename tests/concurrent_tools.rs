//! The calls of one model turn run together (issue 36, item 2): they overlap, their results, events and the
//! checkpoint keep the model's call order, one call's question lets the others finish and none of them runs again
//! on resume, a state set over another call's change is refused, and an abort stops them all.
//! Timing is by a controlled clock: each slow tool yields a set number of times; nothing waits on wall time.
//! Each runs natively and, compiled to wasm32, in Node under wasm-bindgen-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use common::*;
use resumable_agent::{Agent, AgentError, Checkpoint, Event, Input, ModelResponse, Outcome, tool};
use serde_json::{Value, json};

/// Ready after being polled `n` more times (waking itself each time): a tool's time, counted in polls.
struct Yield(u32);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// How many calls were under way at once, and the order they finished in.
#[derive(Default)]
struct Flight {
    now: AtomicUsize,
    max: AtomicUsize,
    finished: Mutex<Vec<String>>,
}

/// `slow`: takes `input.polls` polls, then returns its call id.
fn slow(flight: &Arc<Flight>) -> impl resumable_agent::Tool + use<> {
    let flight = flight.clone();
    tool(
        "slow",
        "Takes a while.",
        json!({"type": "object"}),
        move |input: Value, ctx| {
            let n = flight.now.fetch_add(1, Ordering::SeqCst) + 1;
            flight.max.fetch_max(n, Ordering::SeqCst);
            let (flight, id) = (flight.clone(), ctx.tool_use_id.to_owned());
            let polls = u32::try_from(input["polls"].as_u64().unwrap_or(0)).unwrap();
            async move {
                Yield(polls).await;
                flight.now.fetch_sub(1, Ordering::SeqCst);
                flight.finished.lock().unwrap().push(id.clone());
                Ok(Value::String(format!("done {id}")))
            }
        },
    )
}

fn three_slow() -> Arc<TestModel> {
    TestModel::by_turn([
        turn(vec![
            call("c1", "slow", json!({"polls": 6})),
            call("c2", "slow", json!({"polls": 4})),
            call("c3", "slow", json!({"polls": 2})),
        ]),
        ModelResponse::text("all done"),
    ])
}

/// The kinds of events a run reports, with the call id of tool events.
fn events(agent: &Agent) -> (Vec<String>, Outcome) {
    let mut seen = Vec::new();
    let outcome = block_on(agent.run(Input::prompt("go"), &mut |e: &Event<'_>| match e {
        Event::ToolCall { id, .. } => seen.push(format!("call {id}")),
        Event::ToolResult { id, .. } => seen.push(format!("result {id}")),
        Event::Checkpoint { .. } => seen.push("checkpoint".to_owned()),
        _ => {}
    }))
    .unwrap();
    (seen, outcome)
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_turns_calls_overlap_and_report_in_call_order_whatever_order_they_finish_in() {
    let mut transcripts = Vec::new();
    for (concurrency, overlap, finished) in [
        (0, 3, ["c3", "c2", "c1"]),
        (2, 2, ["c2", "c1", "c3"]),
        (1, 1, ["c1", "c2", "c3"]),
    ] {
        let flight = Arc::new(Flight::default());
        let agent = Agent::builder(three_slow())
            .tool(slow(&flight))
            .tool_concurrency(concurrency)
            .build()
            .unwrap();
        let (seen, outcome) = events(&agent);
        assert_eq!(
            flight.max.load(Ordering::SeqCst),
            overlap,
            "at most {concurrency} at once"
        );
        assert_eq!(*flight.finished.lock().unwrap(), finished, "{concurrency}");
        let tool_events: Vec<&str> = seen.iter().map(String::as_str).filter(|e| e != &"checkpoint").collect();
        if concurrency == 1 {
            assert_eq!(
                tool_events,
                ["call c1", "result c1", "call c2", "result c2", "call c3", "result c3"]
            );
        } else {
            // Every call starts at once (the bound holds back the running, not the reporting); results in call order;
            // the calls of the turn are saved together.
            assert_eq!(
                tool_events,
                ["call c1", "call c2", "call c3", "result c1", "result c2", "result c3"]
            );
            assert_eq!(seen.iter().filter(|e| *e == "checkpoint").count(), 4, "{seen:?}");
        }
        let done = outcome.assert_complete().unwrap();
        assert_eq!(done.text, "all done");
        transcripts.push(done.messages().to_vec());
    }
    // The same conversation, one call at a time or together: results in the model's call order.
    assert_eq!(transcripts[0], transcripts[2]);
    assert_eq!(transcripts[1], transcripts[2]);
    let results: Vec<String> = transcripts[0][2].tool_results().map(|r| r.content.clone()).collect();
    assert_eq!(results, ["done c1", "done c2", "done c3"]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule2_with_calls_running_together_the_others_finish_and_none_runs_again() {
    let script = || {
        TestModel::by_turn([
            turn(vec![
                call("c1", "lookup", json!({"key": "k1"})),
                call("c2", "ask_user", json!({"question": "Your deadline?"})),
                call("c3", "lookup", json!({"key": "k3"})),
            ]),
            ModelResponse::text("Planned."),
        ])
    };
    let counters = Counters::default();
    let Outcome::Interrupted(paused) =
        block_on(agent_with(script(), &counters).build().unwrap().prompt("Plan")).unwrap()
    else {
        panic!("expected the question")
    };
    let cp = &paused.checkpoint;
    assert_eq!(
        (paused.question.as_str(), cp.pending_tool_use_id.as_deref()),
        ("Your deadline?", Some("c2"))
    );
    let answered: Vec<&str> = cp.tool_results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(answered, ["c1", "c3"], "the calls around the question finished");
    assert_eq!(Counters::get(&counters.lookup), 2);
    // A fresh agent resumes it from JSON: no lookup runs again, and the conversation is the one-at-a-time run's.
    let json = cp.to_json();
    let done = block_on(
        agent_with(script(), &counters)
            .build()
            .unwrap()
            .resume(Checkpoint::from_json(&json).unwrap(), "Friday"),
    )
    .unwrap()
    .assert_complete()
    .unwrap();
    assert_eq!(Counters::get(&counters.lookup), 2, "none ran again");
    let one_by_one = Counters::default();
    let agent = agent_with(script(), &one_by_one).tool_concurrency(1).build().unwrap();
    let Outcome::Interrupted(p) = block_on(agent.prompt("Plan")).unwrap() else {
        panic!()
    };
    let sequential = block_on(agent.resume(p.checkpoint, "Friday"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.messages(), sequential.messages());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn two_questions_of_one_turn_reach_the_human_one_after_the_other() {
    let counters = Counters::default();
    let agent = agent_with(
        TestModel::by_turn([
            turn(vec![
                call("q1", "ask_user", json!({"question": "Which day?"})),
                call("l1", "lookup", json!({"key": "k"})),
                call("q2", "ask_user", json!({"question": "Which room?"})),
            ]),
            ModelResponse::text("Booked."),
        ]),
        &counters,
    )
    .build()
    .unwrap();
    let Outcome::Interrupted(first) = block_on(agent.prompt("Book")).unwrap() else {
        panic!()
    };
    assert_eq!(first.question, "Which day?");
    // The second question was asked while the first waited: not recorded, it asks again once the run goes on.
    let answered: Vec<&str> = first
        .checkpoint
        .tool_results
        .iter()
        .map(|r| r.tool_use_id.as_str())
        .collect();
    assert_eq!(answered, ["l1"]);
    let Outcome::Interrupted(second) = block_on(agent.resume(first.checkpoint, "Friday")).unwrap() else {
        panic!()
    };
    assert_eq!(second.question, "Which room?");
    let done = block_on(agent.resume(second.checkpoint, "Blue"))
        .unwrap()
        .assert_complete()
        .unwrap();
    let results: Vec<(String, String)> = done.messages()[2]
        .tool_results()
        .map(|r| (r.tool_use_id.clone(), r.content.clone()))
        .collect();
    assert_eq!(
        results,
        [
            ("q1".to_owned(), "Friday".to_owned()),
            ("l1".to_owned(), r#"{"key":"k","value":"v-k"}"#.to_owned()),
            ("q2".to_owned(), "Blue".to_owned())
        ]
    );
    assert_eq!(Counters::get(&counters.lookup), 1);
    assert_eq!(
        Counters::get(&counters.ask),
        3,
        "the second question's call ran twice, asked once"
    );
}

/// `add`: reads the list in the state, takes `input.polls` polls, then sets it with `input.item` added.
fn adding() -> impl resumable_agent::Tool {
    tool(
        "add",
        "Adds an item.",
        json!({"type": "object"}),
        |input: Value, ctx| {
            let mut items = ctx
                .state()
                .and_then(|s| s["items"].as_array().cloned())
                .unwrap_or_default();
            items.push(input["item"].clone());
            let polls = u32::try_from(input["polls"].as_u64().unwrap_or(0)).unwrap();
            // Set before the wait when it takes none (the next call then reads it), else after it.
            if polls == 0 {
                ctx.set_state(json!({ "items": items }));
            }
            let later = (polls > 0).then(|| json!({ "items": items }));
            async move {
                Yield(polls).await;
                Ok(later.map_or_else(|| json!("added"), |state| json!({ "set": state })))
            }
        },
    )
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn calls_that_run_together_see_each_others_state_and_a_set_over_a_change_it_missed_is_refused() {
    // Both set at once: the second reads what the first set; both count.
    let agent = Agent::builder(TestModel::by_turn([
        turn(vec![
            call("a", "add", json!({"item": "a"})),
            call("b", "add", json!({"item": "b"})),
        ]),
        ModelResponse::text("ok"),
    ]))
    .tool(adding())
    .state(json!({"items": []}))
    .build()
    .unwrap();
    let done = block_on(agent.prompt("go")).unwrap().assert_complete().unwrap();
    assert_eq!(done.checkpoint.state, Some(json!({"items": ["a", "b"]})));

    // A call that read the state, waited, and set it after another call changed it would lose that change: its
    // set is refused, and its result tells the model.
    let agent = Agent::builder(TestModel::by_turn([
        turn(vec![
            call("a", "set_after", json!({"item": "a", "polls": 2})),
            call("b", "set_after", json!({"item": "b", "polls": 4})),
        ]),
        ModelResponse::text("ok"),
    ]))
    .tool(setter())
    .state(json!({"items": []}))
    .build()
    .unwrap();
    let done = block_on(agent.prompt("go")).unwrap().assert_complete().unwrap();
    assert_eq!(
        done.checkpoint.state,
        Some(json!({"items": ["a"]})),
        "the lost update was not kept"
    );
    let results: Vec<(String, bool)> = done.messages()[2]
        .tool_results()
        .map(|r| (r.content.clone(), r.is_error))
        .collect();
    assert_eq!(results[0], ("set a".to_owned(), false));
    assert!(
        results[1].1 && results[1].0.contains("toolConcurrency: 1"),
        "{results:?}"
    );

    // One at a time, the same calls both count.
    let agent = Agent::builder(TestModel::by_turn([
        turn(vec![
            call("a", "set_after", json!({"item": "a", "polls": 2})),
            call("b", "set_after", json!({"item": "b", "polls": 4})),
        ]),
        ModelResponse::text("ok"),
    ]))
    .tool(setter())
    .state(json!({"items": []}))
    .tool_concurrency(1)
    .build()
    .unwrap();
    let done = block_on(agent.prompt("go")).unwrap().assert_complete().unwrap();
    assert_eq!(done.checkpoint.state, Some(json!({"items": ["a", "b"]})));
}

/// `set_after`: reads the list, waits `input.polls` polls, then sets it with `input.item` added — through a context
/// it keeps for the wait (a host tool does so: the npm package's `ctx.setState` after an `await`).
fn setter() -> impl resumable_agent::Tool {
    struct SetAfter;
    impl resumable_agent::Tool for SetAfter {
        fn definition(&self) -> resumable_agent::ToolDefinition {
            resumable_agent::ToolDefinition::new("set_after", "Sets after a wait.", json!({"type": "object"}))
        }
        fn call<'a>(
            &'a self,
            input: Value,
            ctx: resumable_agent::ToolContext<'a>,
        ) -> impl Future<Output = Result<Value, resumable_agent::ToolError>> + resumable_agent::MaybeSend + 'a {
            async move {
                let mut items = ctx
                    .state()
                    .and_then(|s| s["items"].as_array().cloned())
                    .unwrap_or_default();
                items.push(input["item"].clone());
                Yield(u32::try_from(input["polls"].as_u64().unwrap_or(0)).unwrap()).await;
                ctx.set_state(json!({ "items": items }));
                Ok(Value::String(format!(
                    "set {}",
                    input["item"].as_str().unwrap_or_default()
                )))
            }
        }
    }
    SetAfter
}

/// Stops the run through `when_aborted` only (never between steps).
struct Stopping;

impl resumable_agent::EventSink for Stopping {
    fn event(&mut self, _: &Event<'_>) {}
    fn when_aborted(&self) -> Option<resumable_agent::BoxFuture<'static, ()>> {
        Some(Box::pin(Yield(3)))
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_abort_stops_every_call_under_way_keeping_the_results_taken_before() {
    let flight = Arc::new(Flight::default());
    let agent = Agent::builder(TestModel::by_turn([
        turn(vec![
            call("c1", "slow", json!({"polls": 0})),
            call("c2", "slow", json!({"polls": 1000})),
            call("c3", "slow", json!({"polls": 1})),
        ]),
        ModelResponse::text("never"),
    ]))
    .tool(slow(&flight))
    .build()
    .unwrap();
    let err = block_on(agent.run(Input::prompt("go"), &mut Stopping))
        .map(|_| ())
        .unwrap_err();
    let AgentError::Aborted { checkpoint } = err else {
        panic!("expected Aborted, got {err}")
    };
    // c1 was taken; c2 was stopped under way; c3 finished, but after c2 in call order: it runs again on resume.
    let taken: Vec<&str> = checkpoint.tool_results.iter().map(|r| r.tool_use_id.as_str()).collect();
    assert_eq!(taken, ["c1"]);
    assert_eq!(*flight.finished.lock().unwrap(), ["c1", "c3"]);
    assert_eq!(flight.now.load(Ordering::SeqCst), 1, "c2 was dropped under way");
}
