//! Sessions as a step log (issue 21) and sessions you can trust (issue 22), through the Rust API: what a step
//! writes, the store's write rules, sessions saved by the previous release, replayed events, one run per
//! answer, and checkpoints bound to their session and agent. Native only (threads, a tokio race, std
//! timing); on wasm32 the same behaviour runs through the npm package (tests/node/steplog.test.mjs).
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use resumable_agent::{
    Agent, AgentError, CheckpointError, CheckpointKeys, CheckpointSummary, Condition, Event, InterruptError, MaybeSend,
    MemorySaver, ModelResponse, OnDrift, SavedCheckpoint, Saver, SaverError, ScriptedModel, Turn, tool,
};
use serde_json::{Value, json};

/// A memory saver that counts what it is given, and refuses a second write of a key within `interval` ms
/// (Workers KV's rule: production answers 429).
struct Counting {
    inner: MemorySaver,
    interval: u64,
    writes: AtomicUsize,
    bytes: AtomicUsize,
    last_write: Mutex<HashMap<String, std::time::Instant>>,
}

impl Counting {
    fn new(interval: u64) -> Self {
        Counting {
            inner: MemorySaver::new(),
            interval,
            writes: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            last_write: Mutex::default(),
        }
    }
    /// Bytes kept: every value and its summary.
    fn kept(&self) -> usize {
        let listed = block_on(self.inner.list("")).unwrap();
        listed
            .iter()
            .map(|e| block_on(self.inner.get_text(&e.key)).unwrap().unwrap().len() + e.summary.to_stored().len())
            .sum()
    }
    fn touch(&self, key: &str) -> Result<(), SaverError> {
        let now = std::time::Instant::now();
        let mut last = self.last_write.lock().unwrap();
        if let Some(t) = last.get(key) {
            if now.duration_since(*t).as_millis() < u128::from(self.interval) {
                return Err(SaverError::Backend {
                    message: format!("KV PUT failed: 429 Too Many Requests ({key:?} written again within a second)"),
                });
            }
        }
        last.insert(key.to_owned(), now);
        Ok(())
    }
}

impl Saver for Counting {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        self.inner.get_text(key)
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let touched = self.touch(key);
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.bytes
            .fetch_add(value.len() + summary.to_stored().len(), Ordering::SeqCst);
        let inner = &self.inner;
        let summary = summary.clone();
        async move {
            touched?;
            inner.put_text(key, value, &summary, condition).await
        }
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        let touched = self.touch(key);
        let inner = &self.inner;
        async move {
            touched?;
            inner.delete(key).await
        }
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        self.inner.list(prefix)
    }
    fn compare_and_set(&self) -> bool {
        self.interval == 0
    }
    fn min_write_interval_ms(&self) -> u64 {
        self.interval
    }
}

/// `steps` model calls: a `lookup` returning ~1 KB each, then the answer.
fn long_agent(steps: usize) -> Agent {
    let mut script: Vec<ModelResponse> = (1..steps)
        .map(|k| turn(vec![call(&format!("l{k}"), "lookup", json!({"key": format!("k{k}")}))]))
        .collect();
    script.push(ModelResponse::text("done"));
    script.push(ModelResponse::text("and again"));
    let lookup = tool(
        "lookup",
        "Look a key up.",
        json!({"type": "object"}),
        |input, _| async move {
            Ok(json!(format!(
                "{}: {}",
                input["key"].as_str().unwrap_or_default(),
                "x".repeat(1000)
            )))
        },
    );
    Agent::builder(ScriptedModel::new(script))
        .tool(lookup)
        .max_iterations(u32::try_from(steps).unwrap() + 1)
        .build()
        .unwrap()
}

#[test]
fn a_step_writes_what_it_added_at_20_and_at_400_steps() {
    for steps in [20, 400] {
        let saver = Counting::new(0);
        let agent = long_agent(steps);
        let done = block_on(agent.session(&saver, "long").keep_completed(true).prompt("go"))
            .unwrap()
            .assert_complete()
            .unwrap();
        let final_bytes = done.checkpoint.to_json().len();
        let (writes, written, kept) = (
            saver.writes.load(Ordering::SeqCst),
            saver.bytes.load(Ordering::SeqCst),
            saver.kept(),
        );
        let (w, k) = (written as f64 / final_bytes as f64, kept as f64 / final_bytes as f64);
        let per_call = writes as f64 / steps as f64;
        println!(
            "{steps} steps: final checkpoint {final_bytes} B; written {written} B ({w:.3}x) in {writes} writes ({per_call:.4} per model call); kept {kept} B ({k:.3}x)"
        );
        assert!(w <= 1.5, "bytes written {w:.3}x the final checkpoint");
        assert!(k <= 1.3, "bytes kept {k:.3}x the final checkpoint");
        // Two saved steps per model call (its answer, then its tool's result), and the head once per call.
        assert_eq!(writes, 2 * steps + 1, "{writes} writes");
        // What a later request reads back is the run.
        let back = block_on(agent.session(&saver, "long").checkpoint(None))
            .unwrap()
            .unwrap();
        assert_eq!(back, done.checkpoint);
    }
}

#[test]
fn no_key_is_written_twice_within_the_stores_interval_however_fast_the_steps() {
    // A store with Workers KV's rule: one write per second per key, else 429.
    let saver = Counting::new(1000);
    let agent = long_agent(60);
    let done = block_on(agent.session(&saver, "fast").keep_completed(true).prompt("go"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "done");
    // Straight away, a second call on the same session: its head write is held back.
    let session = agent.session(&saver, "fast").keep_completed(true);
    let more = block_on(session.prompt("again"));
    assert!(more.is_ok(), "{more:?}");
    assert!(session.unsettled(), "the head could not be written within the interval");
    let listed = |id: &str| {
        block_on(resumable_agent::list_sessions(&saver, id))
            .unwrap()
            .into_iter()
            .map(|e| e.summary.step)
            .collect::<Vec<_>>()
    };
    let tip = more.as_ref().unwrap().checkpoint().thread.as_ref().unwrap().step;
    assert_ne!(listed("fast"), vec![Some(tip)], "the listing lags behind the records");
    let back = block_on(agent.session(&saver, "fast").checkpoint(None))
        .unwrap()
        .unwrap();
    assert_eq!(
        back,
        more.unwrap().checkpoint().clone(),
        "the records past the older head are found"
    );
    // settle() writes the head once the interval allows: the listing shows the newest step. (Natively it
    // has no timer and says when it is too early; on wasm32 it waits.)
    assert!(!block_on(session.settle()).unwrap(), "too early: the store refuses");
    assert!(session.unsettled());
    std::thread::sleep(std::time::Duration::from_millis(1300));
    assert!(block_on(session.settle()).unwrap());
    assert!(!session.unsettled());
    assert_eq!(listed("fast"), vec![Some(tip)]);
    // And deleting a session whose keys were just written removes what it may now; the rest is returned for
    // later (the npm package deletes it once the store allows).
    let short = long_agent(3);
    let gone = short.session(&saver, "gone");
    let r = block_on(gone.prompt("go")).unwrap();
    assert_eq!(r.checkpoint().messages.len(), 6);
    assert_eq!(block_on(short.session(&saver, "gone").checkpoint(None)).unwrap(), None);
    assert!(
        gone.unsettled(),
        "keys written within the interval are left for settle()"
    );
    assert!(!block_on(saver.list("gone")).unwrap().is_empty());
    std::thread::sleep(std::time::Duration::from_millis(1300));
    assert!(block_on(gone.settle()).unwrap());
    assert_eq!(
        block_on(saver.list("gone")).unwrap(),
        vec![],
        "every key of the finished session deleted"
    );
}

/// The agent the fixtures of the previous release were saved with.
fn fixture_agent(keys: Option<CheckpointKeys>) -> Agent {
    let model = ScriptedModel::new([
        ModelResponse::new(vec![resumable_agent::ContentBlock::ToolUse(
            resumable_agent::ToolUse::new("l1", "lookup", json!({"key": "a"})),
        )]),
        ModelResponse::new(vec![
            resumable_agent::ContentBlock::ToolUse(resumable_agent::ToolUse::new(
                "q1",
                "ask_user",
                json!({"question": "Which city?"}),
            )),
            resumable_agent::ContentBlock::ToolUse(resumable_agent::ToolUse::new("l2", "lookup", json!({"key": "b"}))),
        ]),
    ])
    .then(|req| {
        let parts: Vec<String> = req
            .messages
            .last()
            .unwrap()
            .tool_results()
            .map(|r| r.content.clone())
            .collect();
        ModelResponse::text(format!("Done: {}", parts.join(", ")))
    })
    .then(|_| ModelResponse::text("Noted."));
    let lookup = tool(
        "lookup",
        "Look a key up.",
        json!({"type": "object"}),
        |input, _| async move { Ok(json!(format!("v-{}", input["key"].as_str().unwrap_or_default()))) },
    );
    let ask = tool(
        "ask_user",
        "Ask the human.",
        json!({"type": "object"}),
        |input, _| async move { Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into()) },
    );
    let b = Agent::builder(model).instructions("Plan trips.").tool(lookup).tool(ask);
    match keys {
        Some(k) => b.checkpoint_keys(k).build().unwrap(),
        None => b.build().unwrap(),
    }
}

/// A memory saver holding one of the fixtures' sessions as the previous release stored it.
fn fixture(name: &str) -> MemorySaver {
    let all: Value =
        serde_json::from_str(&std::fs::read_to_string("tests/fixtures/sessions-v0.json").unwrap()).unwrap();
    let saver = MemorySaver::new();
    for (key, entry) in all["sessions"][name]["keys"].as_object().unwrap() {
        let summary: CheckpointSummary = serde_json::from_str(entry["summary"].as_str().unwrap()).unwrap();
        let value = entry["value"].as_str().unwrap().to_owned();
        block_on(saver.put_text(key, value, &summary, Condition::Any)).unwrap();
    }
    saver
}

fn fixture_keys(sealed: bool) -> CheckpointKeys {
    CheckpointKeys::new("k1")
        .key("k1", "fixture-secret-0123456789")
        .sealed(sealed)
}

#[test]
fn sessions_saved_by_the_previous_release_continue_in_the_log_format() {
    for (name, keys) in [
        ("plain-paused", None),
        ("signed-paused", Some(fixture_keys(false))),
        ("sealed-paused", Some(fixture_keys(true))),
    ] {
        let saver = fixture(name);
        let agent = fixture_agent(keys);
        let s = agent.session(&saver, "trip").keep_completed(true);
        let before = block_on(s.history(100, None)).unwrap();
        assert_eq!(
            before.iter().map(|h| h.summary.step.unwrap()).collect::<Vec<_>>(),
            [5, 4, 3, 2, 1],
            "{name}"
        );
        let done = block_on(s.reply("Paris")).unwrap().assert_complete().unwrap();
        assert_eq!(done.text, "Done: Paris, v-b", "{name}");
        let history = block_on(s.history(100, None)).unwrap();
        // The answer (6), the remaining lookup (7), the model's answer (8): the numbering goes on.
        assert_eq!(
            history[0].summary.step,
            Some(8),
            "{name}: the steps continue the old numbering"
        );
        // The new steps are records of what changed; the head is a small one.
        let record = block_on(saver.get_text("trip#~0000000007")).unwrap().unwrap();
        let head = block_on(saver.get_text("trip")).unwrap().unwrap();
        if name != "sealed-paused" {
            assert!(record.contains(r#""d":"#), "{name}: {record}");
            assert!(head.starts_with(r#"{"session":1,"seq":8"#), "{name}: {head}");
        }
        assert_eq!(
            block_on(s.checkpoint(Some(5))).unwrap().unwrap().question.as_deref(),
            Some("Which city?")
        );
        let again = block_on(s.prompt("And a hotel?")).unwrap().assert_complete().unwrap();
        assert_eq!(again.text, "Noted.", "{name}");
    }
    // A branch (restored from a label), a completed session, a run that died mid-way.
    let saver = fixture("plain-branched");
    let agent = fixture_agent(None);
    let s = agent.session(&saver, "trip").keep_completed(true);
    let history = block_on(s.history(100, None)).unwrap();
    assert_eq!(
        history[0].summary.parent_step,
        Some(5),
        "the head is the restored branch"
    );
    assert_eq!(
        history
            .iter()
            .find(|h| h.summary.label.is_some())
            .map(|h| h.summary.step),
        Some(Some(5)),
        "the label of the previous release"
    );
    assert_eq!(
        block_on(s.reply("Rome")).unwrap().assert_complete().unwrap().text,
        "Done: Rome, v-b"
    );
    assert_eq!(
        block_on(s.restore("asked-city")).unwrap().question.as_deref(),
        Some("Which city?")
    );
    let saver = fixture("plain-completed");
    let s = agent.session(&saver, "trip").keep_completed(true);
    assert!(matches!(
        block_on(s.reply("Paris again")),
        Err(AgentError::Decision { .. })
    ));
    assert_eq!(
        block_on(s.prompt("And a hotel?"))
            .unwrap()
            .assert_complete()
            .unwrap()
            .text,
        "Noted."
    );
    let saver = fixture("plain-running");
    let s = agent.session(&saver, "trip").keep_completed(true);
    assert!(
        matches!(block_on(s.reply("x")), Err(AgentError::SessionBusy { .. })),
        "still running"
    );
    assert_eq!(block_on(s.resume()).unwrap().question(), Some("Which city?"));
}

#[test]
fn replayed_events_are_the_logged_events_as_they_happened() {
    let saver = MemorySaver::new();
    let agent = fixture_agent(None);
    let s = agent.session(&saver, "r").keep_completed(true);
    let mut live: Vec<(u64, String)> = Vec::new();
    let mut sink = |seq: Option<u64>, e: &Event<'_>| live.push((seq.unwrap(), e.to_json()));
    struct Seq<'a>(&'a mut (dyn FnMut(Option<u64>, &Event<'_>) + Send));
    impl resumable_agent::EventSink for Seq<'_> {
        fn event(&mut self, _: &Event<'_>) {
            panic!("a session's events are numbered");
        }
        fn sequenced(&mut self, seq: Option<u64>, event: &Event<'_>) {
            (self.0)(seq, event);
        }
        fn wants_deltas(&self) -> bool {
            false
        }
    }
    block_on(s.run(Turn::Prompt("Plan a trip".into()), &mut Seq(&mut sink))).unwrap();
    block_on(s.run(Turn::Reply("Paris".into()), &mut Seq(&mut sink))).unwrap();
    let seqs: Vec<u64> = live.iter().map(|(s, _)| *s).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "strictly increasing: {seqs:?}");
    let mut replayed: Vec<(u64, String)> = Vec::new();
    let mut collect = |seq: Option<u64>, e: &Event<'_>| replayed.push((seq.unwrap(), e.to_json()));
    block_on(agent.session(&saver, "r").replay(None, &mut Seq(&mut collect))).unwrap();
    // Everything replayed was seen live, with the same number; what was not logged is what changes per
    // call (the loaded and checkpoint events).
    let logged: Vec<&(u64, String)> = live
        .iter()
        .filter(|(_, e)| !e.starts_with(r#"{"type":"checkpoint""#) && !e.starts_with(r#"{"type":"checkpoint-loaded""#))
        .collect();
    assert_eq!(replayed.iter().collect::<Vec<_>>(), logged);
    assert!(
        replayed
            .iter()
            .any(|(_, e)| e.starts_with(r#"{"type":"tool-result","id":"l2","toolName":"lookup","content":"v-b""#))
    );
    assert!(replayed.iter().any(|(_, e)| e.starts_with(r#"{"type":"interrupt""#)));
    assert_eq!(
        replayed.last().map(|(_, e)| e.as_str()),
        Some(r#"{"type":"done","result":{"text":"Done: Paris, v-b"}}"#)
    );
    // From an offset: only what came after it.
    let cut = replayed[5].0;
    let mut after: Vec<u64> = Vec::new();
    let mut tail = |seq: Option<u64>, _: &Event<'_>| after.push(seq.unwrap());
    block_on(agent.session(&saver, "r").replay(Some(cut), &mut Seq(&mut tail))).unwrap();
    assert_eq!(after, replayed[6..].iter().map(|(s, _)| *s).collect::<Vec<_>>());
}

#[test]
fn a_reply_sent_twice_runs_once_and_the_second_is_told_nothing_is_pending() {
    for keep in [true, false] {
        let saver = MemorySaver::new();
        let counters = Counters::default();
        let model = TestModel::by_turn([
            turn(vec![call("q1", "ask_user", json!({"question": "Send it?"}))]),
            turn(vec![call("l1", "lookup", json!({"key": "money"}))]),
            ModelResponse::text("Sent."),
        ]);
        let agent = agent_with(model, &counters).build().unwrap();
        let s = agent.session(&saver, "pay").keep_completed(keep);
        block_on(s.prompt("Pay Ann")).unwrap();
        assert_eq!(
            block_on(s.reply("yes")).unwrap().assert_complete().unwrap().text,
            "Sent."
        );
        let again = block_on(s.reply("yes")).unwrap_err();
        if keep {
            assert!(matches!(&again, AgentError::Decision { .. }), "{again:?}");
            assert!(again.to_string().contains("waits for no answer"), "{again}");
        } else {
            assert_eq!(again, AgentError::SessionNotFound { id: "pay".into() });
        }
        assert_eq!(Counters::get(&counters.lookup), 1, "keep {keep}: the tool ran once");
    }
}

#[test]
fn a_signed_session_authenticates_each_record_before_reading_it() {
    let keys = || CheckpointKeys::new("k").key("k", "a secret of sixteen bytes");
    let agent = fixture_agent(Some(keys()));
    let saver = MemorySaver::new();
    block_on(agent.session(&saver, "s").prompt("Plan a trip")).unwrap();
    let records = block_on(saver.list("s#~")).unwrap();
    assert!(records.len() >= 2, "a whole record and a diff at least");
    for e in &records {
        let text = block_on(saver.get_text(&e.key)).unwrap().unwrap();
        let mut value: Value = serde_json::from_str(&text).unwrap();
        // A member the format does not know, added where it would otherwise be dropped unread.
        if value.get("d").is_some() {
            value["d"]["note"] = json!("approved");
        } else {
            value["messages"][0]["name"] = json!("admin");
        }
        let copy = MemorySaver::new();
        for other in &records {
            let t = block_on(saver.get_text(&other.key)).unwrap().unwrap();
            let t = if other.key == e.key { value.to_string() } else { t };
            block_on(copy.put_text(&other.key, t, &other.summary, Condition::Any)).unwrap();
        }
        let err = block_on(agent.session(&copy, "s").reply("Paris")).unwrap_err();
        assert!(
            matches!(&err, AgentError::Checkpoint(CheckpointError::Signature { .. })),
            "{}: {err:?}",
            e.key
        );
        // Every one-byte change that still parses is refused by its signature, never by what it made.
        let bytes = text.as_bytes();
        let mut refused = std::collections::BTreeMap::<String, u32>::new();
        for i in (0..bytes.len()).step_by(7) {
            let mut changed = bytes.to_vec();
            changed[i] = if changed[i] == b'1' { b'2' } else { b'1' };
            let changed = String::from_utf8_lossy(&changed).into_owned();
            block_on(copy.put_text(&e.key, changed, &e.summary, Condition::Any)).unwrap();
            match block_on(agent.session(&copy, "s").checkpoint(None)) {
                Err(AgentError::Checkpoint(c)) => *refused.entry(c.code().to_owned()).or_default() += 1,
                Err(AgentError::Saver {
                    source: SaverError::Corrupt { source, .. },
                    ..
                }) => *refused.entry(format!("corrupt {}", source.code())).or_default() += 1,
                other => {
                    *refused
                        .entry(format!("{other:?}").chars().take(40).collect())
                        .or_default() += 1
                }
            }
        }
        println!("{}: one-byte changes {refused:?}", e.key);
        assert!(
            refused.keys().all(|k| k == "SIGNATURE" || k == "corrupt JSON"),
            "{}: {refused:?}",
            e.key
        );
    }
}

#[test]
fn a_checkpoint_is_bound_to_its_session_and_its_agent() {
    let saver = MemorySaver::new();
    let keys = || CheckpointKeys::new("k").key("k", "a secret of sixteen bytes");
    let agent = fixture_agent(Some(keys()));
    let alice = block_on(agent.session(&saver, "alice").prompt("Plan a trip")).unwrap();
    // Alice's checkpoint saved under mallory's id is refused, signed or not.
    let err = block_on(agent.session(&saver, "mallory").save(alice.checkpoint())).unwrap_err();
    assert!(
        matches!(err, AgentError::Checkpoint(CheckpointError::Binding { .. })),
        "{err:?}"
    );
    let plain = fixture_agent(None);
    let alice2 = block_on(plain.session(&saver, "alice2").prompt("Plan a trip")).unwrap();
    let err = block_on(plain.session(&saver, "mallory").save(alice2.checkpoint())).unwrap_err();
    assert!(
        matches!(err, AgentError::Checkpoint(CheckpointError::Binding { .. })),
        "{err:?}"
    );
    // Alice's records copied under mallory's id do not load there.
    for e in block_on(saver.list("alice#~")).unwrap() {
        let text = block_on(saver.get_text(&e.key)).unwrap().unwrap();
        let key = e.key.replacen("alice", "mallory", 1);
        block_on(saver.put_text(&key, text, &e.summary, Condition::Any)).unwrap();
    }
    let err = block_on(agent.session(&saver, "mallory").reply("Paris")).unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::Checkpoint(CheckpointError::Binding { .. } | CheckpointError::Signature { .. })
        ),
        "{err:?}"
    );
    // An agent whose approval rules differ (same keys) refuses Alice's checkpoint before anything runs.
    let gated = {
        let lookup = tool("lookup", "Look a key up.", json!({"type": "object"}), |_, _| async {
            Ok(json!("x"))
        })
        .needs_approval();
        let ask = tool("ask_user", "Ask the human.", json!({"type": "object"}), |_, _| async {
            Err(InterruptError::new("?").into())
        });
        Agent::builder(ScriptedModel::new([ModelResponse::text("no")]))
            .instructions("Plan trips.")
            .tool(lookup)
            .tool(ask)
            .checkpoint_keys(keys())
            .build()
            .unwrap()
    };
    let err = block_on(gated.resume(alice.checkpoint().clone(), "Paris")).unwrap_err();
    assert!(
        matches!(&err, AgentError::Checkpoint(CheckpointError::Binding { problem }) if problem.contains("another agent")),
        "{err:?}"
    );
    // Both named alike: the checkpoint crosses (a deploy that keeps the name).
    let named = fixture_agent(Some(keys().agent("planner")));
    let p = block_on(named.prompt("Plan a trip")).unwrap();
    let renamed = |on_drift| {
        let lookup = tool(
            "lookup",
            "Look a key up, v2.",
            json!({"type": "object"}),
            |_, _| async { Ok(json!("v-b")) },
        );
        let ask = tool("ask_user", "Ask.", json!({"type": "object"}), |_, _| async {
            Err(InterruptError::new("?").into())
        });
        Agent::builder(ScriptedModel::new([
            ModelResponse::text("a"),
            ModelResponse::text("b"),
            ModelResponse::text("Done."),
        ]))
        .instructions("Plan trips, v2.")
        .tool(lookup)
        .tool(ask)
        .checkpoint_keys(keys().agent("planner"))
        .on_drift(on_drift)
        .build()
        .unwrap()
    };
    // The signature lets it through; the drift of a run paused mid-turn is refused by default, naming what changed.
    let err = block_on(renamed(OnDrift::Error).resume(p.checkpoint().clone(), "Paris")).unwrap_err();
    assert!(
        matches!(&err, AgentError::ConfigDrift { drift, .. } if drift.changed == ["instructions"]),
        "{err:?}"
    );
    assert!(block_on(renamed(OnDrift::Continue).resume(p.checkpoint().clone(), "Paris")).is_ok());
}

/// A memory saver whose deletes are slow: each yields to the runtime many times first.
struct SlowDeletes(MemorySaver);

impl Saver for SlowDeletes {
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
        async move {
            for _ in 0..20 {
                tokio::task::yield_now().await;
            }
            self.0.delete(key).await
        }
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + Send {
        self.0.list(prefix)
    }
    fn compare_and_set(&self) -> bool {
        true
    }
}

#[test]
fn one_run_per_answer_while_a_completed_session_is_deleted_slowly_and_replies_are_retried() {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        for round in 0..20 {
            let saver = Arc::new(SlowDeletes(MemorySaver::new()));
            let counters = Counters::default();
            let model = TestModel::by_turn([
                turn(vec![call("q1", "ask_user", json!({"question": "Send it?"}))]),
                turn(vec![call("l1", "lookup", json!({"key": "money"}))]),
                ModelResponse::text("Sent."),
            ]);
            let agent = Arc::new(agent_with(model, &counters).build().unwrap());
            agent.session(&*saver, "pay").prompt("Pay Ann").await.unwrap();
            let mut set = tokio::task::JoinSet::new();
            // Replies arrive over time: before, during and after the winner's completion and deletion.
            for i in 0..50 {
                let (agent, saver) = (Arc::clone(&agent), Arc::clone(&saver));
                set.spawn(async move {
                    for _ in 0..(i * (round + 1)) % 97 {
                        tokio::task::yield_now().await;
                    }
                    agent.session(&*saver, "pay").reply("yes").await
                });
            }
            let results = set.join_all().await;
            let ok = results.iter().filter(|r| r.is_ok()).count();
            assert_eq!(ok, 1, "round {round}: exactly one reply ran");
            for r in results.iter().filter_map(|r| r.as_ref().err()) {
                assert!(
                    matches!(r, AgentError::SessionBusy { .. } | AgentError::SessionNotFound { .. }),
                    "round {round}: {r:?}"
                );
            }
            assert_eq!(Counters::get(&counters.lookup), 1, "round {round}: the tool ran once");
            assert!(
                block_on(saver.0.list("")).unwrap().is_empty(),
                "round {round}: the session is gone"
            );
        }
    });
}

/// Finding 7: a value over the size limit is refused where it enters the run, so a session never saves
/// what it then refuses to read.
#[test]
fn a_tool_result_or_state_over_the_size_limit_is_refused_where_it_enters_and_the_session_goes_on() {
    let big = tool("fetch", "Fetch a page.", json!({"type": "object"}), |_, _| async move {
        Ok(json!("y".repeat(3_000_000)))
    });
    let ask = tool("ask", "Ask the user.", json!({"type": "object"}), |_, _| async move {
        Err::<Value, _>(InterruptError::new("Which page?").into())
    });
    let hoard = tool("hoard", "Keep a lot.", json!({"type": "object"}), |_, ctx| {
        ctx.set_state(json!({"blob": "z".repeat(2_000_000)}));
        async move { Ok(json!("kept")) }
    });
    let script = vec![
        turn(vec![call("c1", "fetch", json!({}))]),
        turn(vec![call("c2", "hoard", json!({}))]),
        turn(vec![call("c3", "ask", json!({}))]),
        ModelResponse::text("done"),
    ];
    let agent = Agent::builder(ScriptedModel::new(script))
        .tool(big)
        .tool(ask)
        .tool(hoard)
        .limits(resumable_agent::Limits::default().max_checkpoint_bytes(1_000_000))
        .build()
        .unwrap();
    let saver = MemorySaver::new();
    let session = agent.session(&saver, "big");
    let paused = block_on(session.prompt("go")).unwrap();
    let cp = paused.checkpoint().clone();
    let results: Vec<(String, bool)> = cp
        .messages
        .iter()
        .flat_map(|m| {
            m.tool_results()
                .map(|r| (r.content.clone(), r.is_error))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].1 && results[0].0.contains("limits.maxCheckpointBytes"),
        "{:?}",
        results[0]
    );
    assert!(
        results[0].0.contains("the tool's result was not kept"),
        "{:?}",
        results[0]
    );
    assert!(
        results[1].1 && results[1].0.contains("hoard set a state that was not kept"),
        "{:?}",
        results[1]
    );
    assert_eq!(cp.state, None, "the state was not changed");
    // The saved session reads back, and the reply runs.
    let done = block_on(session.reply("the first")).unwrap().assert_complete().unwrap();
    assert_eq!(done.text, "done");
    // A message over the limit is refused before anything is saved.
    let huge = "w".repeat(1_100_000);
    let refused = block_on(agent.session(&saver, "huge").prompt(&huge)).unwrap_err();
    assert!(
        matches!(&refused, AgentError::Argument(m) if m.contains("the message was not taken")),
        "{refused}"
    );
    assert_eq!(block_on(saver.list("huge")).unwrap(), vec![]);
}

/// A memory saver whose values hold at most `max` bytes (a Durable Object holds 2 MB).
struct SmallValues {
    inner: MemorySaver,
    max: usize,
}

impl Saver for SmallValues {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        self.inner.get_text(key)
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.inner.put_text(key, value, summary, condition)
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        self.inner.list(prefix)
    }
    fn compare_and_set(&self) -> bool {
        true
    }
    fn max_value_bytes(&self) -> Option<usize> {
        Some(self.max)
    }
}

#[test]
fn a_run_larger_than_one_value_of_the_store_is_kept_across_records() {
    // 400 steps of ~1 KB: a 475 KB run in a store of 100 KB values (as a 3 MB run in a Durable Object's 2 MB).
    // maxHistory makes a whole record due every 50 records: past 100 KB there is none (it would not fit).
    let saver = SmallValues {
        inner: MemorySaver::new(),
        max: 100_000,
    };
    let agent = long_agent(400);
    let done = block_on(
        agent
            .session(&saver, "big")
            .keep_completed(true)
            .max_history(50)
            .prompt("go"),
    )
    .unwrap()
    .assert_complete()
    .unwrap();
    assert!(done.checkpoint.to_json().len() > 450_000);
    let listed = block_on(saver.inner.list("big")).unwrap();
    assert!(listed.len() > 400);
    let largest = listed
        .iter()
        .map(|e| block_on(saver.inner.get_text(&e.key)).unwrap().unwrap().len())
        .max()
        .unwrap();
    assert!(largest <= 100_000, "a value of {largest} bytes");
    let back = block_on(agent.session(&saver, "big").checkpoint(None))
        .unwrap()
        .unwrap();
    assert_eq!(back, done.checkpoint);
    // And it goes on.
    let more = block_on(
        agent
            .session(&saver, "big")
            .keep_completed(true)
            .max_history(50)
            .prompt("again"),
    )
    .unwrap();
    assert_eq!(more.checkpoint().messages.len(), done.checkpoint.messages.len() + 2);
}

/// A memory saver that counts the values it is asked for.
struct CountingReads {
    inner: MemorySaver,
    reads: AtomicUsize,
}

impl Saver for CountingReads {
    fn get_text(&self, key: &str) -> impl Future<Output = Result<Option<String>, SaverError>> + MaybeSend {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.get_text(key)
    }
    fn get_many(&self, keys: &[String]) -> impl Future<Output = Result<Vec<Option<String>>, SaverError>> + MaybeSend {
        self.reads.fetch_add(keys.len(), Ordering::SeqCst);
        self.inner.get_many(keys)
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.inner.put_text(key, value, summary, condition)
    }
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), SaverError>> + MaybeSend {
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> impl Future<Output = Result<Vec<SavedCheckpoint>, SaverError>> + MaybeSend {
        self.inner.list(prefix)
    }
    fn compare_and_set(&self) -> bool {
        true
    }
}

#[test]
fn history_reads_summaries_and_the_head_only_at_20_and_at_400_steps() {
    for steps in [20, 400] {
        let saver = CountingReads {
            inner: MemorySaver::new(),
            reads: AtomicUsize::new(0),
        };
        let agent = long_agent(steps);
        let session = agent.session(&saver, "h").keep_completed(true);
        block_on(session.prompt("go")).unwrap();
        let tip = block_on(session.history(1, None)).unwrap()[0].summary.step.unwrap();
        block_on(session.label(tip, "end")).unwrap();
        saver.reads.store(0, Ordering::SeqCst);
        let history = block_on(session.history(usize::MAX, None)).unwrap();
        assert_eq!(
            history.len(),
            2 * steps,
            "a record per model answer and per tool result"
        );
        assert_eq!(history[0].summary.label.as_deref(), Some("end"));
        let reads = saver.reads.load(Ordering::SeqCst);
        println!("history of a {steps}-step session: {reads} value read");
        assert_eq!(reads, 1, "the head, not the records ({steps} steps)");
    }
}
