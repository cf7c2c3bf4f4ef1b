//! Sessions as threads: saved after every step, history, labels, restore, agent state, exactly one of
//! concurrent replies, and crash consistency (natively; the same behaviour through the package is in
//! tests/node/threads.test.mjs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use proptest::prelude::*;
use resumable_agent::{
    AgentError, CheckpointSummary, Condition, Event, MemorySaver, ModelResponse, Outcome, SavedCheckpoint, Saver,
    SaverError, Turn, tool,
};
use serde_json::{Value, json};

fn script() -> Arc<TestModel> {
    TestModel::by_turn([
        turn(vec![call("l1", "lookup", json!({"key": "a"}))]),
        turn(vec![
            call("q1", "ask_user", json!({"question": "Which city?"})),
            call("l2", "lookup", json!({"key": "b"})),
        ]),
        ModelResponse::text("done"),
    ])
}

#[test]
fn every_step_is_saved_and_listed_newest_first() {
    let saver = MemorySaver::new();
    let agent = agent_with(script(), &Counters::default()).build().unwrap();
    let session = agent.session(&saver, "trip").keep_completed(true);
    let paused = block_on(session.prompt("Plan")).unwrap();
    assert!(paused.is_interrupted());
    let history = block_on(session.history(100, None)).unwrap();
    let steps: Vec<u64> = history.iter().map(|h| h.summary.step.unwrap()).collect();
    assert_eq!(steps, [5, 4, 3, 2, 1]);
    let parents: Vec<Option<u64>> = history.iter().map(|h| h.summary.parent_step).collect();
    assert_eq!(parents, [Some(4), Some(3), Some(2), Some(1), None]);
    let head = block_on(session.checkpoint(None)).unwrap().unwrap();
    assert_eq!(
        &head,
        paused.checkpoint(),
        "the head is the latest step, and what the call returned"
    );
    assert_eq!(head.thread.as_ref().unwrap().step, 5);
    let before_4 = block_on(session.history(2, Some(4))).unwrap();
    assert_eq!(
        before_4.iter().map(|h| h.summary.step.unwrap()).collect::<Vec<_>>(),
        [3, 2]
    );
}

#[test]
fn restore_continues_from_a_labelled_step_as_a_branch() {
    let saver = MemorySaver::new();
    let counters = Counters::default();
    let agent = agent_with(script(), &counters).build().unwrap();
    let session = agent.session(&saver, "b").keep_completed(true);
    block_on(session.prompt("Plan")).unwrap();
    block_on(session.label(5, "asked")).unwrap();
    let first = block_on(session.reply("Paris")).unwrap().assert_complete().unwrap();
    let restored = block_on(session.restore("asked")).unwrap();
    assert_eq!(restored.thread.as_ref().unwrap().parent_step, Some(5));
    assert!(restored.is_interrupted());
    let second = block_on(session.reply("Rome")).unwrap().assert_complete().unwrap();
    let asked = block_on(session.checkpoint(Some(5))).unwrap().unwrap();
    assert_eq!(&second.messages()[..asked.messages.len()], &asked.messages[..]);
    assert_ne!(first.messages(), second.messages(), "a different answer on the branch");
    let history = block_on(session.history(100, None)).unwrap();
    assert!(
        history
            .iter()
            .any(|h| h.summary.label.as_deref() == Some("asked") && h.summary.step == Some(5))
    );
    assert!(history.len() > 8, "the first branch's steps are still there");
    assert!(matches!(
        block_on(session.restore("missing")),
        Err(AgentError::Argument(_))
    ));
}

#[test]
fn agent_state_is_read_and_replaced_by_tools_and_kept_in_the_checkpoint() {
    let todo = tool("todo", "Add a todo.", json!({"type": "object"}), |input: Value, ctx| {
        let mut todos = ctx.state().unwrap()["todos"].as_array().cloned().unwrap_or_default();
        todos.push(input["item"].clone());
        let n = todos.len();
        ctx.set_state(json!({ "todos": todos }));
        assert_eq!(ctx.idempotency_key(), format!("{}:{}", ctx.run_id, ctx.tool_use_id));
        async move { Ok(json!(format!("{n} todos"))) }
    });
    let model = TestModel::by_turn([
        turn(vec![
            call("t1", "todo", json!({"item": "flights"})),
            call("t2", "todo", json!({"item": "hotel"})),
        ]),
        ModelResponse::text("ok"),
    ]);
    let agent = resumable_agent::Agent::builder(model)
        .tool(todo)
        .state(json!({"todos": []}))
        .build()
        .unwrap();
    let mut changes = Vec::new();
    let done = block_on(agent.run(resumable_agent::Input::prompt("plan"), &mut |e: &Event<'_>| {
        if let Event::StateChanged { state } = e {
            changes.push((*state).clone());
        }
    }))
    .unwrap()
    .assert_complete()
    .unwrap();
    assert_eq!(
        changes,
        [json!({"todos": ["flights"]}), json!({"todos": ["flights", "hotel"]})]
    );
    assert_eq!(done.checkpoint.state, Some(json!({"todos": ["flights", "hotel"]})));
    let json = done.checkpoint.to_json();
    assert!(json.contains(r#""state":{"todos":["flights","hotel"]}"#), "{json}");
}

/// MemorySaver that yields to the runtime around every operation, so concurrent sessions interleave.
struct Yielding(MemorySaver);

impl Saver for Yielding {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + Send {
        async move {
            tokio::task::yield_now().await;
            self.0.get_text(key).await
        }
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + Send {
        async move {
            tokio::task::yield_now().await;
            self.0.put_text(key, value, summary, condition).await
        }
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + Send {
        self.0.delete(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + Send {
        self.0.list(prefix)
    }
    fn compare_and_set(&self) -> bool {
        true
    }
}

#[test]
fn of_fifty_concurrent_replies_exactly_one_runs() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let saver = Arc::new(Yielding(MemorySaver::new()));
        let counters = Counters::default();
        let model = script();
        // One call at a time: the lookup after the question is left for the reply that wins.
        let agent = Arc::new(
            agent_with(model.clone(), &counters)
                .tool_concurrency(1)
                .build()
                .unwrap(),
        );
        agent.session(&*saver, "race").prompt("Plan").await.unwrap();
        let (calls, lookups) = (model.calls(), Counters::get(&counters.lookup));
        let mut set = tokio::task::JoinSet::new();
        for i in 0..50 {
            let (agent, saver) = (Arc::clone(&agent), Arc::clone(&saver));
            set.spawn(async move { agent.session(&*saver, "race").reply(format!("city {i}")).await });
        }
        let results = set.join_all().await;
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "exactly one reply ran");
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(matches!(r, AgentError::SessionBusy { .. }), "{r:?}");
        }
        assert_eq!(model.calls() - calls, 1, "one model call in all");
        assert_eq!(
            Counters::get(&counters.lookup) - lookups,
            1,
            "the remaining lookup ran once"
        );
    });
}

/// A saver whose process "dies" at its `kill`-th save (of a step record or the head): before writing it
/// (`before`), or right after. Afterwards it works again, as a restarted process's would.
struct Dying {
    inner: MemorySaver,
    saves: AtomicUsize,
    kill: usize,
    before: bool,
}

impl Saver for Dying {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + Send {
        self.inner.get_text(key)
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + Send {
        async move {
            let n = self.saves.fetch_add(1, Ordering::SeqCst) + 1;
            let died = || SaverError::Backend {
                message: "process killed".into(),
            };
            if n == self.kill && self.before {
                return Err(died());
            }
            self.inner.put_text(key, value, summary, condition).await?;
            if n == self.kill {
                return Err(died());
            }
            Ok(())
        }
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + Send {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + Send {
        self.inner.list(prefix)
    }
    fn compare_and_set(&self) -> bool {
        true
    }
}

fn crash_script(turns: &[Vec<u8>]) -> Vec<ModelResponse> {
    let mut out: Vec<ModelResponse> = turns
        .iter()
        .enumerate()
        .map(|(t, calls)| {
            turn(
                calls
                    .iter()
                    .enumerate()
                    .map(|(k, c)| {
                        let id = format!("t{t}c{k}");
                        if *c % 4 == 0 {
                            call(&id, "ask_user", json!({"question": format!("q {id}")}))
                        } else {
                            call(&id, "lookup", json!({"key": format!("{c}")}))
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    out.push(ModelResponse::text("final"));
    out
}

/// Drives a session to completion, answering questions, resuming after every failure.
fn finish(
    agent: &resumable_agent::Agent,
    saver: &Dying,
    first: Result<Outcome, AgentError>,
) -> Vec<resumable_agent::Message> {
    let mut result = first;
    for _ in 0..64 {
        let session = agent.session(saver, "crash").keep_completed(true);
        result = match result {
            Ok(Outcome::Complete(done)) => return done.messages().to_vec(),
            Ok(Outcome::Interrupted(p)) => block_on(session.reply(answer_for(&p.question))),
            // The first save never happened: nothing was kept (and no model was called), start again.
            Err(AgentError::SessionNotFound { .. }) => block_on(session.prompt("start")),
            Err(_) => block_on(session.run(Turn::Continue, &mut |_: &Event<'_>| {})),
        };
    }
    panic!("the session did not finish");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// Kill the run at every saved step (before and after the write); resuming reaches the uninterrupted
    /// run's transcript, and a tool whose result was saved never runs again.
    #[test]
    fn a_crash_at_any_save_loses_nothing_and_repeats_no_saved_tool(
        turns in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..4), 1..5),
        concurrency in prop::sample::select(vec![0u32, 1, 2]),
    ) {
        let responses = crash_script(&turns);
        let inline = Counters::default();
        let expected = block_on(agent_answering_inline(TestModel::by_turn(responses.clone()), &inline).max_iterations(50).build().unwrap().prompt("start"))
            .unwrap().assert_complete().unwrap();
        let total_saves = {
            let probe = Dying { inner: MemorySaver::new(), saves: AtomicUsize::new(0), kill: usize::MAX, before: false };
            let counters = Counters::default();
            let agent = agent_with(TestModel::by_turn(responses.clone()), &counters).max_iterations(50).tool_concurrency(concurrency).build().unwrap();
            let first = block_on(agent.session(&probe, "crash").keep_completed(true).prompt("start"));
            finish(&agent, &probe, first);
            probe.saves.load(Ordering::SeqCst)
        };
        for kill in 1..=total_saves {
            for before in [false, true] {
                let saver = Dying { inner: MemorySaver::new(), saves: AtomicUsize::new(0), kill, before };
                let counters = Counters::default();
                let agent = agent_with(TestModel::by_turn(responses.clone()), &counters).max_iterations(50).tool_concurrency(concurrency).build().unwrap();
                let first = block_on(agent.session(&saver, "crash").keep_completed(true).prompt("start"));
                let messages = finish(&agent, &saver, first);
                prop_assert_eq!(&messages, &expected.messages().to_vec(), "kill at save {} ({})", kill, if before { "before" } else { "after" });
                let ran = counters.ran.lock().unwrap().clone();
                let mut repeated: Vec<&String> = ran.iter().filter(|id| ran.iter().filter(|x| x == id).count() > 1).collect();
                repeated.dedup();
                let once = repeated.iter().all(|id| ran.iter().filter(|x| x == id).count() == 2);
                if before && concurrency == 1 {
                    // The killed save held one tool's result at most: only that call may run again, once.
                    prop_assert!(repeated.len() <= 1 && ran.len() <= inline.ran.lock().unwrap().len() + 1, "kill before save {}: {:?}", kill, ran);
                } else if before {
                    // It held the results of calls that ran together: only calls of one turn may run again, once.
                    let turn = |id: &str| id.split('c').next().map(str::to_owned);
                    let turns: std::collections::HashSet<_> = repeated.iter().map(|id| turn(id)).collect();
                    prop_assert!(turns.len() <= 1 && once, "kill before save {}: {:?}", kill, ran);
                } else {
                    prop_assert!(repeated.is_empty(), "kill after save {}: a saved tool ran again: {:?}", kill, ran);
                }
            }
        }
    }
}

#[test]
fn the_rust_conformance_suite_passes_memory_and_catches_a_broken_saver() {
    let results = block_on(resumable_agent::testing::saver_conformance(|_| MemorySaver::new()));
    let failed: Vec<_> = results.iter().filter(|r| !r.ok).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(
        results
            .iter()
            .filter(|r| r.skipped.is_some())
            .map(|r| r.name)
            .collect::<Vec<_>>(),
        ["list reads summaries, not values"]
    );

    /// A saver whose listing drops the first key.
    struct Dropping(MemorySaver);
    impl Saver for Dropping {
        fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + Send {
            self.0.get_text(key)
        }
        fn put_text(
            &self,
            key: &str,
            value: String,
            summary: &CheckpointSummary,
            condition: Condition,
        ) -> impl Future<Output = Result<(), SaverError>> + Send {
            self.0.put_text(key, value, summary, condition)
        }
        fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + Send {
            self.0.delete(key)
        }
        fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + Send {
            async move { Ok(self.0.list(prefix).await?.into_iter().skip(1).collect()) }
        }
    }
    let broken = block_on(resumable_agent::testing::saver_conformance(|_| {
        Dropping(MemorySaver::new())
    }));
    let failed: Vec<&str> = broken.iter().filter(|r| !r.ok).map(|r| r.name).collect();
    assert!(
        failed.contains(&"list: every key under the prefix, in key order, with its summary"),
        "{failed:?}"
    );
}
