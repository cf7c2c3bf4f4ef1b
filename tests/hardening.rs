//! Checkpoints that cannot be forged or broken: decode → encode is the identity on what the library writes;
//! every tampering of a signed checkpoint is refused (or, when it is only another spelling of the same JSON,
//! decodes to exactly the signed checkpoint); forged resumes run nothing; and a saver failing at random never
//! loses a run or runs a tool twice. Counts are printed (`cargo test --test hardening -- --nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code
#![cfg(not(target_arch = "wasm32"))]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use resumable_agent::{
    AgentError, Checkpoint, CheckpointKeys, CheckpointSummary, Condition, Decision, InterruptError, MemorySaver,
    ModelResponse, Outcome, Resume, Run, RunConfig, SavedCheckpoint, Saver, SaverError, Step, ToolDefinition,
    ToolError, ToolOutcome, tool,
};
use serde_json::{Value, json};

fn keys() -> CheckpointKeys {
    CheckpointKeys::new("k2")
        .key("k1", "first secret, rotated out")
        .key("k2", "second secret, signs today")
}

// ---- decode → encode is the identity ------------------------------------------------------------------

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Debug, Clone)]
enum Outcome_ {
    Output(String),
    Error(String),
    Question(String, Option<Vec<String>>, Option<Value>),
}

#[derive(Debug, Clone)]
struct CallSpec {
    tool: &'static str,
    input: Value,
    outcome: Outcome_,
    deny: bool,
    /// Distinct approvers a gated call waits for (one per resume), and whether its approval is remembered.
    approvers: u32,
    remember: bool,
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    let outcome = prop_oneof![
        3 => any::<String>().prop_map(Outcome_::Output),
        1 => any::<String>().prop_map(Outcome_::Error),
        2 => (any::<String>(), prop::option::of(prop::collection::vec(any::<String>(), 1..3)), prop::option::of(json_value()))
            .prop_map(|(q, o, d)| Outcome_::Question(q, o, d)),
    ];
    (
        prop_oneof![Just("plain"), Just("gated"), Just("unknown")],
        json_value(),
        outcome,
        any::<bool>(),
        1u32..4,
        any::<bool>(),
    )
        .prop_map(|(tool, input, outcome, deny, approvers, remember)| CallSpec {
            tool,
            input,
            outcome,
            deny,
            approvers,
            remember,
        })
}

#[derive(Debug, Clone)]
struct RunSpec {
    prompt: String,
    turns: Vec<(Vec<CallSpec>, Option<String>)>,
    final_text: String,
    state: Option<Value>,
    thread: Option<(String, u64, Option<u64>, Option<String>)>,
    signature: bool,
    now: u64,
}

fn run_spec() -> impl Strategy<Value = RunSpec> {
    (
        // Agent::prompt refuses an empty message (providers refuse it); Run::start trusts its caller.
        any::<String>().prop_filter("a prompt is not empty", |p| !p.is_empty()),
        prop::collection::vec(
            (
                prop::collection::vec(call_spec(), 1..4),
                prop::option::of(any::<String>()),
            ),
            0..4,
        ),
        any::<String>(),
        prop::option::of(json_value()),
        prop::option::of((
            any::<String>(),
            1u64..1_000_000,
            prop::option::of(1u64..1000),
            prop::option::of(any::<String>()),
        )),
        any::<bool>(),
        0u64..4_000_000_000_000,
    )
        .prop_map(|(prompt, turns, final_text, state, thread, signature, now)| RunSpec {
            prompt,
            turns,
            final_text,
            state,
            thread,
            signature,
            now,
        })
}

/// Every checkpoint a run of `spec` goes through, driven on the sans-IO state machine.
fn checkpoints_of(spec: &RunSpec) -> Vec<Checkpoint> {
    let definition = |name: &str| ToolDefinition {
        name: name.into(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
    };
    let mut fingerprint = resumable_agent::Fingerprint::default();
    fingerprint.instructions = Some("0badcafe".into());
    fingerprint.tools.insert("gated".into(), json!("12345678"));
    let config = RunConfig::new([definition("plain"), definition("gated")])
        .approval("gated", resumable_agent::OnExpire::Deny)
        .max_iterations(100)
        .fingerprint(fingerprint, resumable_agent::OnDrift::Error);
    let specs: HashMap<String, CallSpec> = spec
        .turns
        .iter()
        .enumerate()
        .flat_map(|(t, (calls, _))| {
            calls
                .iter()
                .enumerate()
                .map(move |(k, c)| (format!("t{t}c{k}"), c.clone()))
        })
        .collect();
    let mut out = Vec::new();
    let mut run = Run::start(&config, &spec.prompt, "run-1", spec.now);
    if let Some(s) = &spec.state {
        run.set_state(s.clone());
    }
    let mut turn = 0;
    for _ in 0..200 {
        out.push(run.checkpoint().clone());
        match run.next_step() {
            Step::CallModel => {
                let response = match spec.turns.get(turn) {
                    Some((calls, text)) => {
                        let mut blocks: Vec<_> = text
                            .iter()
                            .map(|t| resumable_agent::ContentBlock::text(t.clone()))
                            .collect();
                        blocks.extend(
                            calls
                                .iter()
                                .enumerate()
                                .map(|(k, c)| call(&format!("t{turn}c{k}"), c.tool, c.input.clone())),
                        );
                        ModelResponse::new(blocks).with_usage(7 * turn as u64, 3)
                    }
                    None => ModelResponse::text(spec.final_text.clone()),
                };
                turn += 1;
                if run.model_replied(response, spec.now + turn as u64).is_err() {
                    break; // e.g. an input nested deeper than the limits: refused, not written
                }
            }
            Step::Review(calls) => {
                // As the agent's driver does: a remembered approval answers a call that waits for one approver.
                let mut needed = Vec::new();
                for c in calls.iter().filter(|c| c.name == "gated") {
                    let k = specs[&c.id].approvers;
                    if k > 1 || !run.approve_remembered(&c.id) {
                        needed.push(resumable_agent::Need::new(c.id.clone(), Some(60_000)).approvers(k));
                    }
                }
                run.reviewed_with(needed, spec.now);
            }
            Step::CallTool(c) => {
                let outcome = match &specs[&c.id].outcome {
                    Outcome_::Output(s) => ToolOutcome::Output(s.clone()),
                    Outcome_::Error(s) => ToolOutcome::Error(s.clone()),
                    Outcome_::Question(q, options, data) => {
                        let mut i = InterruptError::new(q.clone());
                        if let Some(o) = options {
                            i = i.with_options(o.clone());
                        }
                        if let Some(d) = data {
                            i = i.with_data(d.clone());
                        }
                        ToolOutcome::Interrupt(i)
                    }
                };
                run.tool_finished(&c.id, outcome, spec.now);
            }
            Step::Refused(..) => {}
            Step::Paused => {
                let cp = run.into_checkpoint();
                let input = if cp.interrupts[0].kind == resumable_agent::InterruptKind::Question {
                    Resume::Answer(format!("answer {}", cp.interrupts[0].id))
                } else {
                    // One more approver per resume ("a0", "a1", …) where several are needed; denials by the next one.
                    Resume::decisions(cp.interrupts.iter().map(|i| {
                        let c = &specs[&i.id];
                        let by = format!("a{}", i.approvals.len());
                        if c.deny {
                            Decision::deny("no").by(by)
                        } else if i.approvers.is_some() {
                            Decision::approve().by(by)
                        } else if c.remember {
                            Decision::approve_and_remember()
                        } else {
                            Decision::approve()
                        }
                    }))
                };
                run = Run::resume(&config, cp, input, spec.now + 1).expect("our own checkpoint resumes");
            }
            _ => break, // done, out of iterations
        }
    }
    for cp in &mut out {
        if let Some((id, step, parent, label)) = &spec.thread {
            let mut thread = resumable_agent::ThreadInfo::new(id.clone(), *step);
            thread.parent_step = *parent;
            thread.label = label.clone();
            cp.thread = Some(thread);
        }
        if spec.signature {
            pollster::block_on(keys().sign(cp)).unwrap();
        }
    }
    out
}

#[test]
fn decode_then_encode_is_byte_identical_for_10_000_random_checkpoints() {
    let checked = Arc::new(AtomicU64::new(0));
    let count = checked.clone();
    // Checkpoints with approvals of several approvers under way, and with remembered approvals.
    let (several, remembered) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (several_, remembered_) = (several.clone(), remembered.clone());
    let mut runner = TestRunner::new(Config {
        cases: 1_600,
        ..Config::default()
    });
    runner
        .run(&run_spec(), move |spec| {
            for cp in checkpoints_of(&spec) {
                if cp.interrupts.iter().any(|i| !i.approvals.is_empty()) {
                    several_.fetch_add(1, Ordering::Relaxed);
                }
                if !cp.remembered.is_empty() {
                    remembered_.fetch_add(1, Ordering::Relaxed);
                }
                let text = cp.to_json();
                let decoded = Checkpoint::from_json(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
                prop_assert_eq!(&decoded.to_json(), &text);
                prop_assert_eq!(&decoded, &cp);
                // Through a generic JSON value too, as a JS host hands it over.
                let value: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(Checkpoint::from_value(value).unwrap().to_json(), text);
                count.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap();
    let n = checked.load(Ordering::Relaxed);
    let (several, remembered) = (several.load(Ordering::Relaxed), remembered.load(Ordering::Relaxed));
    println!(
        "decode→encode identical: {n} random checkpoints ({several} with approvals under way, {remembered} with remembered ones)"
    );
    assert!(n >= 10_000, "only {n} checkpoints");
    assert!(
        several >= 100 && remembered >= 100,
        "too few: {several} with approvals, {remembered} remembered"
    );
}

/// Two JSON values as a JS host sees them after `JSON.parse`: numbers as doubles, keys in any order.
fn same_in_js(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_in_js(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_in_js(v, w)))
        }
        _ => a == b,
    }
}

/// One change to a checkpoint's JSON that a writer other than the library might make (`pick` chooses which
/// and where); `false` when there was nothing of that kind to change.
fn alter(value: &mut Value, pick: (u8, usize)) -> bool {
    let (kind, at) = pick;
    if kind == 7 {
        value["version"] = json!(1);
        return true;
    }
    let messages = value["messages"].as_array_mut().unwrap();
    let n = messages.len();
    let message = &mut messages[at % n];
    if kind == 0 {
        message["name"] = json!("someone");
        return true;
    }
    if kind == 1 {
        // A text as one text block: another message, read as written.
        let Some(text) = message["content"].as_str().map(str::to_owned) else {
            return false;
        };
        message["content"] = json!([{"type": "text", "text": text}]);
        return true;
    }
    let Some(blocks) = message["content"].as_array_mut() else {
        return false;
    };
    let which = at / n % blocks.len().max(1);
    let Some(block) = blocks.get_mut(which) else {
        return false;
    };
    let kind_of = block["type"].as_str().unwrap_or_default().to_owned();
    match (kind, kind_of.as_str()) {
        (2, _) => block["cache_control"] = json!({"type": "ephemeral"}),
        (3, "text") => block["url"] = json!("https://example.invalid/"),
        (3, _) => block["text"] = json!("stray"),
        (4, "tool_result") => block["isError"] = json!(false),
        // Numbers spelled otherwise: the same values once parsed.
        (5, "tool_use") => block["input"] = json!({"n": 1.0, "m": 2.5e0, "s": "é"}),
        (6, "tool_use") => block["input"] = json!(null),
        _ => return false,
    }
    true
}

#[test]
fn messages_read_as_written_exactly_when_a_plain_parse_of_the_text_holds_the_same_messages() {
    let (written, altered) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (w, a) = (written.clone(), altered.clone());
    let agent = resumable_agent::Agent::builder(TestModel::by_turn([])).build().unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 400,
        ..Config::default()
    });
    runner
        .run(&(run_spec(), 0u8..8, any::<usize>()), move |(spec, kind, at)| {
            for cp in checkpoints_of(&spec) {
                let mut value: Value = serde_json::from_str(&cp.to_json()).unwrap();
                let changed = alter(&mut value, (kind, at));
                let text = value.to_string();
                let Ok(decoded) = block_on(agent.decode(&text)) else {
                    continue;
                };
                let ours = serde_json::to_value(&decoded.checkpoint().messages).unwrap();
                let same = same_in_js(&value["messages"], &ours);
                // Never "as written" when a plain parse differs; always for the library's own text and for
                // another spelling of the same messages; never after a change the library reads otherwise
                // (an older format's upgrade may leave the messages alike: it counts as changed).
                let respelled = matches!(kind, 1 | 5 | 6);
                let expected = !changed || respelled;
                prop_assert!(
                    !decoded.messages_as_written() || same,
                    "as written, but differs: {}",
                    text
                );
                prop_assert_eq!(
                    decoded.messages_as_written(),
                    expected,
                    "kind {} changed {}: {}",
                    kind,
                    changed,
                    text
                );
                if same {
                    w.fetch_add(1, Ordering::Relaxed)
                } else {
                    a.fetch_add(1, Ordering::Relaxed)
                };
            }
            Ok(())
        })
        .unwrap();
    let (w, a) = (written.load(Ordering::Relaxed), altered.load(Ordering::Relaxed));
    println!("messages as written: {w} checkpoints; read otherwise (and said so): {a}");
    assert!(w >= 500 && a >= 200, "too few of one kind: {w} as written, {a} altered");
}

/// A checkpoint paused on a question whose first call's input is `count` numbers spelled `1e15`, the
/// spelling the library writes longest (`1000000000000000.0`).
fn respelled_numbers(count: usize) -> String {
    let numbers = vec!["1e15"; count].join(",");
    format!(
        r#"{{"version":2,"runId":"r","iterations":2,"usage":{{"inputTokens":0,"outputTokens":0}},"messages":[{{"role":"user","content":"go"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"c1","name":"lookup","input":{{"n":[{numbers}]}}}}]}},{{"role":"user","content":[{{"type":"tool_result","toolUseId":"c1","content":"ok"}}]}},{{"role":"assistant","content":[{{"type":"tool_use","id":"q1","name":"ask_user","input":{{"question":"When?"}}}}]}}],"pendingToolUseId":"q1","question":"When?","reviewed":true,"interrupts":[{{"kind":"question","id":"q1","toolName":"ask_user","input":{{"question":"When?"}},"question":"When?"}}]}}"#
    )
}

#[test]
fn a_resumed_run_still_refuses_what_would_not_read_back_when_its_text_was_short_for_its_numbers() {
    let text = respelled_numbers(10_000);
    let written = Checkpoint::from_json(&text).unwrap().to_json().len();
    // The library writes these messages almost 4 times as long as they were read: the size check after a
    // resume must not take the text's length for theirs.
    assert!(
        written > 3 * text.len() && written <= 5 * text.len(),
        "{written} for {}",
        text.len()
    );
    let counters = Counters::default();
    let limit = 2 * text.len();
    let agent = agent_with(TestModel::by_turn([ModelResponse::text("done")]), &counters)
        .limits(resumable_agent::Limits::default().max_checkpoint_bytes(limit))
        .build()
        .unwrap();
    let decoded = block_on(agent.decode(&text)).unwrap();
    let err = block_on(agent.run(
        resumable_agent::Input::Decoded(decoded, Resume::Answer("Friday".into())),
        &mut |_: &resumable_agent::Event<'_>| {},
    ))
    .map(|_| "ran")
    .unwrap_err();
    assert!(err.to_string().contains("the answer was not taken"), "{err}");
    // Within the limit, the same resume runs.
    let answers = [
        ModelResponse::text("done"),
        ModelResponse::text("done"),
        ModelResponse::text("done"),
    ];
    let roomy = agent_with(TestModel::by_turn(answers), &counters)
        .limits(resumable_agent::Limits::default().max_checkpoint_bytes(written + 10_000))
        .build()
        .unwrap();
    let decoded = block_on(roomy.decode(&text)).unwrap();
    let done = block_on(roomy.run(
        resumable_agent::Input::Decoded(decoded, Resume::Answer("Friday".into())),
        &mut |_: &resumable_agent::Event<'_>| {},
    ))
    .map_err(|e| e.to_string())
    .unwrap();
    assert!(!done.is_interrupted());
}

// ---- tampering -----------------------------------------------------------------------------------------

/// A signed, paused checkpoint as an agent with keys writes it: a call that ran, a question pending.
fn signed_paused(counters: &Counters) -> (resumable_agent::Agent, String) {
    let model = TestModel::by_turn([
        turn(vec![
            resumable_agent::ContentBlock::text("Looking it up — café ☕\n"),
            call(
                "c1",
                "lookup",
                json!({"key": "k\"1\"", "n": 1.5e-7, "big": 12_345_678_901_234_567_890u64, "tags": ["a", "b"]}),
            ),
            call("c2", "ask_user", json!({"question": "When?"})),
        ]),
        ModelResponse::text("Done."),
    ]);
    let agent = agent_with(model, counters).checkpoint_keys(keys()).build().unwrap();
    let paused = block_on(agent.prompt("Plan my week.")).unwrap();
    assert!(paused.is_interrupted());
    (agent, paused.checkpoint().to_json())
}

#[test]
fn every_tampering_of_a_signed_checkpoint_is_refused_before_anything_runs() {
    let counters = Counters::default();
    let (agent, text) = signed_paused(&counters);
    let original = block_on(agent.decode_checkpoint(&text)).unwrap();
    let ran_before = (Counters::get(&counters.lookup), Counters::get(&counters.ask));
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut equivalent = Vec::new();
    let mut try_text = |kind: &str, candidate: &str| match block_on(agent.decode_checkpoint(candidate)) {
        Err(e) => *counts.entry(format!("{kind}: refused {}", e.code())).or_default() += 1,
        Ok(cp) => {
            assert_eq!(cp, original, "{kind}: a changed checkpoint was accepted:\n{candidate}");
            *counts
                .entry(format!("{kind}: same checkpoint, other spelling"))
                .or_default() += 1;
            equivalent.push(candidate.to_owned());
        }
    };
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        for b in 0..=255u8 {
            if b == bytes[i] {
                continue;
            }
            let mut changed = bytes.to_vec();
            changed[i] = b;
            // A store hands back text: invalid UTF-8 arrives with replacement characters.
            try_text("byte changed", &String::from_utf8_lossy(&changed));
        }
    }
    for len in 0..bytes.len() {
        try_text("truncated", &String::from_utf8_lossy(&bytes[..len]));
    }
    for b in 0..=255u8 {
        let mut longer = bytes.to_vec();
        longer.push(b);
        try_text("byte appended", &String::from_utf8_lossy(&longer));
    }
    let mut value: Value = serde_json::from_str(&text).unwrap();
    let signature = value["signature"].clone();
    value.as_object_mut().unwrap().remove("signature");
    try_text("signature stripped", &value.to_string());
    let other = {
        let old = CheckpointKeys::new("k1").key("k1", "first secret, rotated out");
        let mut cp = original.clone();
        block_on(old.sign(&mut cp)).unwrap();
        cp.signature.unwrap()
    };
    value["signature"] = json!({"kid": "k1", "mac": signature["mac"]});
    try_text("key id swapped", &value.to_string());
    value["signature"] = json!({"kid": "k2", "mac": other.mac});
    try_text("key id swapped", &value.to_string());
    value["signature"] = json!({"kid": "k3", "mac": signature["mac"]});
    try_text("unknown key id", &value.to_string());
    // A field the format does not know, added to a signed checkpoint: the MAC covers the text as parsed, so it
    // is refused rather than dropped without a word.
    let mut added: Value = serde_json::from_str(&text).unwrap();
    added["note"] = json!("approved by the admin");
    try_text("unknown field added", &added.to_string());
    let mut nested: Value = serde_json::from_str(&text).unwrap();
    nested["messages"][0]["name"] = json!("admin");
    try_text("unknown field added", &nested.to_string());

    // Authenticated before it is read: whatever still parses is refused by its signature, never by what the
    // change made of it (text that is no longer JSON cannot be authenticated and says so).
    assert!(
        counts
            .keys()
            .all(|k| !k.contains("refused") || k.ends_with("SIGNATURE") || k.ends_with("JSON")),
        "{counts:?}"
    );
    assert_eq!(
        counts.get("unknown field added: refused SIGNATURE"),
        Some(&2),
        "{counts:?}"
    );
    let total: u64 = counts.values().sum();
    let same: u64 = counts
        .iter()
        .filter(|(k, _)| k.contains("other spelling"))
        .map(|(_, v)| v)
        .sum();
    println!(
        "tampering a signed checkpoint of {} bytes: {total} variants",
        bytes.len()
    );
    for (k, v) in &counts {
        println!("  {k}: {v}");
    }
    println!(
        "  refused: {} of {total}; the other {same} decode to the very checkpoint that was signed",
        total - same
    );
    for e in equivalent.iter().take(5) {
        let at = e
            .bytes()
            .zip(bytes)
            .position(|(a, b)| a != *b)
            .unwrap_or(bytes.len() - 1);
        println!(
            "  e.g. at byte {at}: {:?}",
            &e[at.saturating_sub(12)..(at + 12).min(e.len())]
        );
    }
    assert!(counts.keys().any(|k| k.contains("SIGNATURE")));
    assert_eq!(counts.get("signature stripped: refused SIGNATURE"), Some(&1));
    assert_eq!(counts.get("key id swapped: refused SIGNATURE"), Some(&2));
    assert_eq!(counts.get("unknown key id: refused SIGNATURE"), Some(&1));
    // Nothing ran while all of that was tried.
    assert_eq!(
        (Counters::get(&counters.lookup), Counters::get(&counters.ask)),
        ran_before
    );
}

#[test]
fn a_sealed_checkpoint_opens_only_untouched() {
    let counters = Counters::default();
    let model = TestModel::by_turn([
        turn(vec![call("c1", "ask_user", json!({"question": "Card number?"}))]),
        ModelResponse::text("Done."),
    ]);
    let agent = agent_with(model, &counters)
        .checkpoint_keys(keys().sealed(true))
        .build()
        .unwrap();
    let paused = block_on(agent.prompt("Pay.")).unwrap();
    let sealed = block_on(agent.encode_checkpoint(paused.checkpoint())).unwrap();
    assert!(!sealed.contains("Card number"));
    let opened = block_on(agent.decode_checkpoint(&sealed)).unwrap();
    assert_eq!(&opened, paused.checkpoint());
    let bytes = sealed.as_bytes();
    let (mut refused, mut total) = (0u64, 0u64);
    for i in 0..bytes.len() {
        for b in [b'A', b'z', b'0', b'-', b'"', b' '] {
            if b == bytes[i] {
                continue;
            }
            let mut changed = bytes.to_vec();
            changed[i] = b;
            total += 1;
            match block_on(agent.decode_checkpoint(&String::from_utf8_lossy(&changed))) {
                Err(_) => refused += 1,
                Ok(cp) => assert_eq!(cp, opened, "a changed sealed checkpoint opened to something else"),
            }
        }
    }
    println!(
        "sealed envelope of {} bytes: {refused} of {total} one-byte changes refused",
        bytes.len()
    );
    assert!(refused * 100 >= total * 99, "{refused} of {total}");
    let done = block_on(agent.resume(opened, "4242")).unwrap();
    assert!(!done.is_interrupted());
}

// ---- forged resumes --------------------------------------------------------------------------------------

#[test]
fn forged_unsigned_checkpoints_run_nothing_that_already_ran_or_was_never_called() {
    let counters = Counters::default();
    let model = TestModel::by_turn([
        turn(vec![call("c1", "lookup", json!({"key": "a"}))]),
        turn(vec![
            call("c2", "lookup", json!({"key": "b"})),
            call("c3", "ask_user", json!({"question": "Ok?"})),
        ]),
        ModelResponse::text("Done."),
    ]);
    let agent = agent_with(model.clone(), &counters).build().unwrap();
    let paused = block_on(agent.prompt("Go.")).unwrap();
    let good: Value = serde_json::from_str(&paused.checkpoint().to_json()).unwrap();
    let lookups = Counters::get(&counters.lookup);
    let calls = model.calls();
    let refused = |forged: Value, what: &str| {
        let err = Checkpoint::from_value(forged).map(|cp| block_on(agent.resume(cp, "yes")));
        match err {
            Err(e) => e.to_string(),
            Ok(Err(AgentError::Checkpoint(e))) => e.to_string(),
            Ok(other) => panic!("{what}: accepted: {other:?}"),
        }
    };
    // The open call c2 renamed to c1, the id of a call that already ran.
    let mut reused = good.clone();
    let last = reused["messages"].as_array().unwrap().len() - 1;
    reused["messages"][last]["content"][0]["id"] = json!("c1");
    reused["toolResults"][0]["toolUseId"] = json!("c1");
    assert!(refused(reused, "reused id").contains("\"c1\""));
    // A result for a call the model never made.
    let mut fake = good.clone();
    fake["toolResults"]
        .as_array_mut()
        .unwrap()
        .push(json!({"toolUseId": "c9", "content": "fake"}));
    assert!(refused(fake, "fake result").contains("c9"));
    // A second result for a call that has one.
    let mut twice = good.clone();
    twice["toolResults"]
        .as_array_mut()
        .unwrap()
        .push(json!({"toolUseId": "c2", "content": "again"}));
    assert!(refused(twice, "answered twice").contains("twice"));
    // Text before a tool_result in a user message.
    let mut text_first = good.clone();
    text_first["messages"][2]["content"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"type": "text", "text": "hi"}));
    assert!(refused(text_first, "text first").contains("tool_result after another block"));
    // Empty content.
    let mut empty = good.clone();
    empty["messages"][1]["content"] = json!([]);
    assert!(refused(empty, "empty").contains("says nothing"));
    assert_eq!(
        (Counters::get(&counters.lookup), model.calls()),
        (lookups, calls),
        "nothing ran"
    );

    // With keys, the forgeries that still make a consistent checkpoint are refused too.
    let signing = agent_with(model.clone(), &counters)
        .checkpoint_keys(keys())
        .build()
        .unwrap();
    let signed = {
        let mut cp = paused.checkpoint().clone();
        block_on(keys().sign(&mut cp)).unwrap();
        serde_json::to_value(&cp).unwrap()
    };
    type Forge = Box<dyn Fn(&mut Value)>;
    let forgeries: Vec<(&str, Forge)> = vec![
        (
            "a call added to the open turn",
            Box::new(|v: &mut Value| {
                let last = v["messages"].as_array().unwrap().len() - 1;
                v["messages"][last]["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"type": "tool_use", "id": "c8", "name": "lookup", "input": {"key": "x"}}));
            }),
        ),
        (
            "the pending call's input changed",
            Box::new(|v: &mut Value| {
                let last = v["messages"].as_array().unwrap().len() - 1;
                v["messages"][last]["content"][1]["input"] = json!({"question": "Wire $1M?"});
                v["interrupts"][0]["input"] = json!({"question": "Wire $1M?"});
            }),
        ),
        (
            "a fake tool result",
            Box::new(|v: &mut Value| v["toolResults"][0]["content"] = json!("{\"value\": \"forged\"}")),
        ),
        ("usage reset", Box::new(|v: &mut Value| v["iterations"] = json!(0))),
    ];
    for (what, forge) in forgeries {
        let mut v = signed.clone();
        forge(&mut v);
        let cp = Checkpoint::from_value(v).unwrap();
        match block_on(signing.resume(cp, "yes")) {
            Err(AgentError::Checkpoint(e)) => assert_eq!(e.code(), "SIGNATURE", "{what}"),
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!(
        (Counters::get(&counters.lookup), model.calls()),
        (lookups, calls),
        "nothing ran"
    );
    let cp = Checkpoint::from_value(signed).unwrap();
    assert!(block_on(signing.resume(cp, "yes")).is_ok(), "the untouched one resumes");
}

// ---- a saver that fails at random ----------------------------------------------------------------------

/// A memory saver whose operations fail 10 % of the time, half of the failed writes after writing (the
/// ambiguous failure real stores have).
struct FlakySaver {
    inner: MemorySaver,
    rng: Mutex<u64>,
    failures: Mutex<BTreeMap<&'static str, u64>>,
}

impl FlakySaver {
    fn roll(&self, op: &'static str) -> Option<bool> {
        let mut s = self.rng.lock().unwrap();
        // SplitMix64.
        *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        if z % 10 != 0 {
            return None;
        }
        *self.failures.lock().unwrap().entry(op).or_default() += 1;
        Some(z % 20 == 0)
    }
    fn error(op: &str, key: &str) -> SaverError {
        SaverError::Backend {
            message: format!("injected failure of {op} {key:?}"),
        }
    }
}

impl Saver for FlakySaver {
    async fn get_text(&self, key: &str) -> Result<Option<String>, SaverError> {
        if self.roll("get").is_some() {
            return Err(Self::error("get", key));
        }
        self.inner.get_text(key).await
    }
    async fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> Result<(), SaverError> {
        match self.roll("put") {
            None => self.inner.put_text(key, value, summary, condition).await,
            Some(after) => {
                if after {
                    self.inner.put_text(key, value, summary, condition).await?;
                }
                Err(Self::error("put", key))
            }
        }
    }
    async fn delete(&self, key: &str) -> Result<(), SaverError> {
        if self.roll("delete").is_some() {
            return Err(Self::error("delete", key));
        }
        self.inner.delete(key).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<SavedCheckpoint>, SaverError> {
        if self.roll("list").is_some() {
            return Err(Self::error("list", prefix));
        }
        self.inner.list(prefix).await
    }
    fn compare_and_set(&self) -> bool {
        true
    }
}

#[test]
fn a_saver_failing_ten_percent_of_calls_loses_no_run_and_runs_no_tool_twice() {
    // Tools record (run id, call id): each call of each run must run exactly once.
    let ran: Arc<Mutex<HashMap<(String, String), u32>>> = Arc::default();
    let record = |ran: &Arc<Mutex<HashMap<(String, String), u32>>>, ctx: resumable_agent::ToolContext<'_>| {
        *ran.lock()
            .unwrap()
            .entry((ctx.run_id.to_owned(), ctx.tool_use_id.to_owned()))
            .or_default() += 1;
    };
    let r = ran.clone();
    let lookup = tool(
        "lookup",
        "Look up.",
        json!({"type": "object"}),
        move |input: Value, ctx| {
            record(&r, ctx);
            async move { Ok(json!({"found": input["key"]})) }
        },
    );
    let r = ran.clone();
    let ask = tool("ask_user", "Ask.", json!({"type": "object"}), move |_: Value, ctx| {
        record(&r, ctx);
        async move { Err::<Value, ToolError>(InterruptError::new("Which?").into()) }
    });
    let model = TestModel::by_turn([
        turn(vec![
            call("a", "lookup", json!({"key": 1})),
            call("b", "ask_user", json!({})),
        ]),
        turn(vec![call("c", "lookup", json!({"key": 2}))]),
        ModelResponse::text("Done."),
    ]);
    let agent = resumable_agent::Agent::builder(model.clone())
        .tool(lookup)
        .tool(ask)
        .checkpoint_keys(keys())
        .build()
        .unwrap();
    let saver = FlakySaver {
        inner: MemorySaver::new(),
        rng: Mutex::new(12_345),
        failures: Mutex::default(),
    };
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let (mut completed, mut recovered_from_error, mut session_calls) = (0u64, 0u64, 0u64);
    let steps = || model.calls() as u64 + ran.lock().unwrap().values().map(|n| u64::from(*n)).sum::<u64>();
    let mut n = 0;
    while steps() < 10_000 {
        n += 1;
        let session = agent.session(&saver, format!("s{n}"));
        let mut next = Some(resumable_agent::Turn::Prompt("Plan.".into()));
        let mut prompt_done = false;
        let mut guard = 0;
        while let Some(t) = next.take() {
            guard += 1;
            assert!(guard < 1_000, "session s{n} never finished");
            session_calls += 1;
            match block_on(session.run(t.clone(), &mut |_: &resumable_agent::Event<'_>| {})) {
                Ok(Outcome::Interrupted(_)) => {
                    prompt_done = true;
                    next = Some(resumable_agent::Turn::Reply("this one".into()));
                }
                Ok(Outcome::Complete(done)) => {
                    assert_eq!(done.text, "Done.");
                    completed += 1;
                }
                Err(e) => {
                    let code = match &e {
                        AgentError::Saver { source, .. } => source.code().to_owned(),
                        other => panic!("s{n}: an untyped or unexpected error: {other:?}"),
                    };
                    *errors.entry(code).or_default() += 1;
                    if let Some(cp) = e.checkpoint() {
                        // The progress the error carries goes back into the saver (retried until it lands).
                        let mut saved = false;
                        for _ in 0..50 {
                            session_calls += 1;
                            if block_on(session.save(cp)).is_ok() {
                                saved = true;
                                break;
                            }
                        }
                        assert!(saved, "s{n}: could not put the error's checkpoint back");
                        recovered_from_error += 1;
                        prompt_done = true;
                        next = Some(resumable_agent::Turn::Continue);
                    } else if !prompt_done
                        && block_on(agent.session(&saver.inner, session.id()).checkpoint(None))
                            .unwrap()
                            .is_none()
                    {
                        next = Some(t); // nothing happened yet: try the prompt again
                    } else {
                        prompt_done = true;
                        next = Some(resumable_agent::Turn::Continue);
                    }
                }
            }
        }
    }
    let twice: Vec<_> = ran
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, n)| **n != 1)
        .map(|(k, n)| (k.clone(), *n))
        .collect();
    println!(
        "fault injection: {} steps ({} model calls), {session_calls} session calls, {completed} sessions completed; errors by code {errors:?}; {recovered_from_error} recovered from the error's checkpoint; injected failures {:?}",
        steps(),
        model.calls(),
        saver.failures.lock().unwrap()
    );
    assert!(twice.is_empty(), "tools ran more than once: {twice:?}");
    assert_eq!(completed, n, "every session completed");
    assert!(errors.values().sum::<u64>() > 100, "the saver did fail: {errors:?}");
}

#[test]
fn a_value_nested_beyond_the_limit_is_refused_with_the_depth_of_the_text() {
    use resumable_agent::{CheckpointError, Limits};
    let nest = |n: usize| format!("{}0{}", "[".repeat(n), "]".repeat(n));
    let base = r#"{"version":2,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"t","input":INPUT}]}],"iterations":1,"usage":{"inputTokens":0,"outputTokens":0},"interrupts":[{"kind":"question","id":"c1","toolName":"t","input":INPUT,"question":"q?","data":DATA}],"pendingToolUseId":"c1","question":"q?","reviewed":true,"state":STATE}"#;
    let text = |input: &str, data: &str, state: &str| {
        base.replace("INPUT", input)
            .replace("DATA", data)
            .replace("STATE", state)
    };
    let limits = Limits::default().max_depth(10);
    let depth_of = |t: &str| match Checkpoint::from_json_with(t, &limits) {
        Err(CheckpointError::TooDeep { depth, max }) => Some((depth, max)),
        Ok(_) => None,
        Err(e) => panic!("expected TooDeep or Ok, got {e}"),
    };
    // The limit (10) plus the checkpoint's frame (6) is 16 levels of text: a tool input starts 5 in (and
    // the interrupt's copy of it 3), an interrupt's data 3, the state 1.
    assert_eq!(depth_of(&text(&nest(11), "0", "0")), None);
    assert_eq!(depth_of(&text(&nest(12), "0", "0")), Some((17, 16)));
    assert_eq!(depth_of(&text("0", &nest(13), "0")), None);
    assert_eq!(depth_of(&text("0", &nest(14), "0")), Some((17, 16)));
    assert_eq!(depth_of(&text("0", "0", &nest(15))), None);
    assert_eq!(depth_of(&text("0", "0", &nest(16))), Some((17, 16)));
    // Beyond what serde_json parses at all (128): still TooDeep, with the depth of the text.
    assert_eq!(depth_of(&text("0", "0", &nest(300))), Some((301, 16)));
    // A field the format does not have is skipped, however it nests (below serde_json's own bound).
    let unknown = text("0", "0", "0").replacen('{', &format!("{{\"extra\":{},", nest(60)), 1);
    assert_eq!(depth_of(&unknown), None);
}
