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

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn suspend_json_resume_equals_the_uninterrupted_run(script in script_strategy(), fail_at in prop::option::of(0usize..8)) {
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
        let fresh_agent = || agent_with(model.clone(), &counters).max_iterations(50).build().unwrap();
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
        prop_assert_eq!(Counters::get(&counters.ask), asks_in_script);
        // The model saw the same conversations (a model error retries the same request).
        let mut seen = model.requests.lock().unwrap().clone();
        seen.dedup();
        prop_assert_eq!(seen, inline_model.requests.lock().unwrap().clone());
    }
}
