//! Sessions over savers through the Rust API (natively and on wasm32 in Node).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::future::Future;

use common::*;
use resumable_agent::{AgentError, MaybeSend, MemorySaver, ModelResponse, SavedCheckpoint, Saver, SaverError};
use serde_json::json;

/// The session's latest checkpoint, as a later request reads it.
fn stored(agent: &resumable_agent::Agent, saver: &MemorySaver, id: &str) -> Option<resumable_agent::Checkpoint> {
    block_on(agent.session(saver, id).checkpoint(None)).unwrap()
}

fn script() -> std::sync::Arc<TestModel> {
    TestModel::new([
        turn(vec![call("q1", "ask_user", json!({"question": "Your deadline?"}))]),
        ModelResponse::text("Planned."),
    ])
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn prompt_saves_the_pause_reply_completes_and_deletes() {
    let saver = MemorySaver::new();
    let agent = agent_with(script(), &Counters::default()).build().unwrap();
    let paused = block_on(agent.session(&saver, "s1").prompt("Plan")).unwrap();
    assert_eq!(paused.question(), Some("Your deadline?"));
    assert_eq!(stored(&agent, &saver, "s1").as_ref(), Some(paused.checkpoint()));
    let done = block_on(agent.session(&saver, "s1").reply("Q2"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Planned.");
    assert_eq!(stored(&agent, &saver, "s1"), None);
    assert_eq!(
        block_on(saver.list("")).unwrap(),
        Vec::new(),
        "every key of the session is gone"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn keep_completed_keeps_the_finished_checkpoint() {
    let saver = MemorySaver::new();
    let agent = agent_with(script(), &Counters::default()).build().unwrap();
    block_on(agent.session(&saver, "k").keep_completed(true).prompt("Plan")).unwrap();
    let done = block_on(agent.session(&saver, "k").keep_completed(true).reply("Q2")).unwrap();
    assert_eq!(stored(&agent, &saver, "k").as_ref(), Some(done.checkpoint()));
    let listed = block_on(resumable_agent::list_sessions(&saver, "")).unwrap();
    assert_eq!(listed.len(), 1, "one session; its history entries are not sessions");
    assert!(!listed[0].summary.interrupted);
}

/// A reply that loads a finished state while the call that finished it is still ending an unkept session (its
/// end record not yet written) lost a race: it is told the session is gone, as it would be a moment later —
/// not that its answer was already given. A kept session says the latter.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_reply_that_finds_an_unkept_session_finishing_is_told_it_is_gone() {
    let saver = MemorySaver::new();
    let agent = agent_with(script(), &Counters::default()).build().unwrap();
    block_on(agent.session(&saver, "e").keep_completed(true).prompt("Plan")).unwrap();
    // The finished state, stored as the winner writes it just before its end record.
    block_on(agent.session(&saver, "e").keep_completed(true).reply("Q2")).unwrap();
    let late = block_on(agent.session(&saver, "e").reply("Q2 again")).unwrap_err();
    assert!(
        matches!(late, AgentError::SessionNotFound { ref id } if id == "e"),
        "{late:?}"
    );
    let kept = block_on(agent.session(&saver, "e").keep_completed(true).reply("Q2 again")).unwrap_err();
    assert!(matches!(kept, AgentError::Decision { .. }), "{kept:?}");
    assert!(stored(&agent, &saver, "e").is_some(), "nothing changed");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn not_found_and_busy_are_typed_and_change_nothing() {
    let saver = MemorySaver::new();
    let model = script();
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let err = block_on(agent.session(&saver, "none").reply("x")).unwrap_err();
    assert_eq!(err, AgentError::SessionNotFound { id: "none".into() });
    block_on(agent.session(&saver, "b").prompt("Plan")).unwrap();
    let before = block_on(saver.list("")).unwrap();
    let err = block_on(agent.session(&saver, "b").prompt("again")).unwrap_err();
    assert!(
        matches!(&err, AgentError::SessionBusy { question, .. } if question == "Your deadline?"),
        "{err:?}"
    );
    assert_eq!(block_on(saver.list("")).unwrap(), before, "nothing was written");
    assert_eq!(model.calls(), 1);
}

/// Stores nothing and says so.
struct FullDisk;

impl Saver for FullDisk {
    fn get_text(&self, _: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        std::future::ready(Ok(None))
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        _: &resumable_agent::CheckpointSummary,
        _: resumable_agent::Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        std::future::ready(Err(SaverError::TooLarge {
            key: key.into(),
            bytes: value.len(),
            max: 10,
        }))
    }
    fn delete(&self, _: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        std::future::ready(Ok(()))
    }
    fn list(&self, _: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        std::future::ready(Ok(Vec::new()))
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_refused_first_save_stops_before_any_model_call_and_hands_back_the_checkpoint() {
    let model = script();
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let err = block_on(agent.session(&FullDisk, "s").prompt("Plan")).unwrap_err();
    let AgentError::Saver {
        source: SaverError::TooLarge { max: 10, .. },
        checkpoint: Some(cp),
    } = &err
    else {
        panic!("expected a saver error with the checkpoint, got {err:?}")
    };
    assert_eq!(cp.messages[0].text(), "Plan", "the run so far: the user's message");
    assert_eq!(model.calls(), 0, "nothing paid for that could not be saved");
    assert!(
        err.to_string()
            .starts_with("saver: checkpoint for key \"s#~0000000001\" is "),
        "{err}"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_model_failure_saves_the_progress_made_before_it() {
    let saver = MemorySaver::new();
    let model = TestModel::with_results([
        Ok(turn(vec![call("q1", "ask_user", json!({"question": "Q?"}))])),
        Err(resumable_agent::ModelError::Failed {
            name: None,
            message: "overloaded".into(),
        }),
        Ok(ModelResponse::text("done")),
    ]);
    let agent = agent_with(model, &Counters::default()).build().unwrap();
    block_on(agent.session(&saver, "f").prompt("go")).unwrap();
    assert!(matches!(
        block_on(agent.session(&saver, "f").reply("yes")),
        Err(AgentError::Model { .. })
    ));
    let saved = stored(&agent, &saver, "f").unwrap();
    assert!(!saved.is_interrupted(), "the answer is in the saved checkpoint");
    let done = block_on(agent.session(&saver, "f").reply(""))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "done");
}
