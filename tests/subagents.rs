//! Subagents (`agent_tool`) through the public Rust API: a child's interrupts surface in the parent's with ids
//! `<call>/<child id>` and a path, decisions by those ids reach the child (checked before anything runs), the child's
//! run lives inside the parent's checkpoint (carried across as JSON text, as a host stores it), every tool of either
//! runs once, the parent's approval policy reviews the child's calls, its budget counts the child's tokens, and the
//! child's events reach the parent's listener with their path. Natively and, compiled to wasm32, in Node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use resumable_agent::{
    Agent, AgentError, Budget, Checkpoint, Decision, Event, Input, InterruptError, InterruptKind, ModelResponse,
    Outcome, PolicyDecision, Resume, agent_tool, approval_policy, tool,
};
use serde_json::{Value, json};

/// A tool named `name` that counts its runs and answers `done <name>`.
fn counted(
    name: &'static str,
    runs: &Arc<AtomicUsize>,
) -> resumable_agent::FnTool<
    impl Fn(Value, resumable_agent::ToolContext<'_>) -> std::future::Ready<Result<Value, resumable_agent::ToolError>>
    + Send
    + Sync
    + use<>,
> {
    let runs = runs.clone();
    tool(name, "Does it.", json!({"type": "object"}), move |_, _| {
        runs.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(json!(format!("done {name}"))))
    })
}

/// `counted`, asking for approval of every call.
fn gated(name: &'static str, runs: &Arc<AtomicUsize>) -> impl resumable_agent::Tool + use<> {
    counted(name, runs).needs_approval()
}

/// The checkpoint as a host stores it: JSON text, read back.
fn stored(outcome: &Outcome) -> Checkpoint {
    Checkpoint::from_json(&outcome.checkpoint().to_json()).unwrap()
}

/// A child that calls `pay` (which needs approval) and then answers.
fn payer(runs: &Arc<AtomicUsize>) -> Agent {
    let model = TestModel::by_turn([
        turn(vec![call("k1", "pay", json!({"amount": 20}))]),
        ModelResponse::text("Paid."),
    ]);
    Agent::builder(model)
        .instructions("You pay.")
        .tool(gated("pay", runs))
        .build()
        .unwrap()
}

/// A parent that calls `look`, then the child `payments`, then `look` again, in one turn, and answers.
fn parent(child: Agent, runs: &Arc<AtomicUsize>) -> Agent {
    let model = TestModel::by_turn([
        turn(vec![
            call("c0", "look", json!({})),
            call("c1", "payments", json!({"task": "pay the invoice"})),
            call("c2", "look", json!({})),
        ]),
        ModelResponse::text("All settled."),
    ]);
    Agent::builder(model)
        .tool(counted("look", runs))
        .tool(agent_tool("payments", "Pays invoices.", child))
        .build()
        .unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_childs_approval_surfaces_in_the_parent_and_each_tool_runs_once_across_a_json_round_trip() {
    let (child_runs, parent_runs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let agent = parent(payer(&child_runs), &parent_runs);
    let paused = block_on(agent.prompt("settle up")).unwrap();
    let cp = stored(&paused);
    assert_eq!(cp.interrupts.len(), 1);
    let i = &cp.interrupts[0];
    assert_eq!(
        (i.id.as_str(), i.kind, i.tool_name.as_str()),
        ("c1/k1", InterruptKind::Approval, "pay")
    );
    assert_eq!(i.path, vec!["c1".to_owned()]);
    assert_eq!(i.input, json!({"amount": 20}));
    // The call before the child ran; the one after waits; the child's run is in the parent's checkpoint.
    assert_eq!(
        (parent_runs.load(Ordering::SeqCst), child_runs.load(Ordering::SeqCst)),
        (1, 0)
    );
    let kept = cp.pending_input.as_ref().unwrap();
    assert!(kept.nested);
    assert_eq!(kept.call, "c1");
    assert_eq!(kept.state["interrupts"][0]["id"], "k1");
    assert!(Checkpoint::from_value(kept.state.clone()).is_ok());

    // A new process: a new agent, the same config.
    let (child_runs2, parent_runs2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let agent = parent(payer(&child_runs2), &parent_runs2);
    let done = block_on(agent.resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())])))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "All settled.");
    assert_eq!(child_runs2.load(Ordering::SeqCst), 1, "the child's tool ran once");
    assert_eq!(
        parent_runs2.load(Ordering::SeqCst),
        1,
        "c0 did not run again, c2 ran once"
    );
    let results: Vec<(String, String)> = done
        .checkpoint
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| (r.tool_use_id.clone(), r.content.clone()))
        .collect();
    assert_eq!(
        results,
        vec![
            ("c0".into(), "done look".into()),
            ("c1".into(), "Paid.".into()),
            ("c2".into(), "done look".into())
        ]
    );
    assert!(done.checkpoint.pending_input.is_none());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_denial_through_the_parent_reaches_the_child_whose_model_reads_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
    let cp = stored(&block_on(agent.prompt("settle up")).unwrap());
    let done = block_on(agent.resume(
        cp,
        Resume::decisions_by_id([("c1/k1", Decision::deny("not this month"))]),
    ))
    .unwrap()
    .assert_complete()
    .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // The child answered after reading the denial (its script's next turn), and that is the parent's result.
    let c1 = done
        .checkpoint
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "c1")
        .unwrap()
        .clone();
    assert_eq!(c1.content, "Paid.");
}

/// Three levels: the parent's `c1` runs a middle agent whose `m1` runs a leaf that asks a question.
fn three_levels(asked: &Arc<AtomicUsize>) -> Agent {
    let asked = asked.clone();
    let ask = tool("ask", "Asks the human.", json!({"type": "object"}), move |_, ctx| {
        let asked = asked.clone();
        let answered = ctx.input().is_some();
        async move {
            let _ = answered;
            asked.fetch_add(1, Ordering::SeqCst);
            Err(InterruptError::new("Which account?")
                .with_options(["main", "savings"])
                .into())
        }
    });
    let leaf = Agent::builder(TestModel::by_turn([
        turn(vec![call("g1", "ask", json!({}))]),
        ModelResponse::text("Leaf used the answer."),
    ]))
    .tool(ask)
    .build()
    .unwrap();
    let middle = Agent::builder(TestModel::by_turn([
        turn(vec![call("m1", "leaf", json!({"task": "find the account"}))]),
        ModelResponse::text("Middle done."),
    ]))
    .tool(agent_tool("leaf", "The leaf.", leaf))
    .build()
    .unwrap();
    Agent::builder(TestModel::by_turn([
        turn(vec![call("c1", "middle", json!({"task": "go"}))]),
        ModelResponse::text("Top done."),
    ]))
    .tool(agent_tool("middle", "The middle.", middle))
    .build()
    .unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn two_levels_of_nesting_answer_a_grandchilds_question_through_the_top() {
    let asked = Arc::new(AtomicUsize::new(0));
    let agent = three_levels(&asked);
    let paused = block_on(agent.prompt("start")).unwrap();
    assert_eq!(paused.question(), Some("Which account?"));
    let cp = stored(&paused);
    let i = &cp.interrupts[0];
    assert_eq!((i.id.as_str(), i.kind), ("c1/m1/g1", InterruptKind::Question));
    assert_eq!(i.path, vec!["c1".to_owned(), "m1".to_owned()]);
    assert_eq!(
        i.options.as_deref(),
        Some(&["main".to_owned(), "savings".to_owned()][..])
    );
    // The grandchild's run sits in the child's, which sits in the parent's: one JSON.
    let middle = &cp.pending_input.as_ref().unwrap().state;
    assert_eq!(middle["pendingInput"]["nested"], true);
    assert_eq!(middle["interrupts"][0]["id"], "m1/g1");

    let asked_then = asked.load(Ordering::SeqCst);
    let done = block_on(three_levels(&asked).resume(cp, "savings"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Top done.");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        asked_then,
        "the question's tool did not run again"
    );
    // The leaf's model read the answer as its tool's result.
    let leaf_answer = done
        .checkpoint
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "c1")
        .unwrap()
        .content
        .clone();
    assert_eq!(leaf_answer, "Middle done.");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn malformed_unknown_or_mistyped_nested_decisions_are_decision_errors_naming_the_id_and_change_nothing() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
    let cp = stored(&block_on(agent.prompt("settle up")).unwrap());
    let refused = |input: Resume| match block_on(agent.resume(cp.clone(), input)) {
        Err(AgentError::Decision { id, problem }) => (id, problem),
        other => panic!("expected a DecisionError, got {other:?}"),
    };
    let (id, problem) = refused(Resume::decisions_by_id([("c1/k9", Decision::approve())]));
    assert_eq!(id.as_deref(), Some("c1/k9"));
    assert!(problem.contains("no pending interrupt has this id"), "{problem}");
    let (id, _) = refused(Resume::decisions_by_id([("c1", Decision::approve())]));
    assert_eq!(id.as_deref(), Some("c1"));
    let (id, problem) = refused(Resume::Json(json!({"c1/k1": {"type": "answer", "text": "yes"}})));
    assert_eq!(id.as_deref(), Some("c1/k1"));
    assert!(problem.contains("\"approve\" or \"deny\""), "{problem}");
    // Checked by the child against its own tool's schema, before anything runs; named by the parent's id.
    let strict = tool(
        "pay",
        "Pays.",
        json!({"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]}),
        |_, _| async { Ok(json!("paid")) },
    )
    .needs_approval();
    let child = Agent::builder(TestModel::by_turn([
        turn(vec![call("k1", "pay", json!({"amount": 20}))]),
        ModelResponse::text("Paid."),
    ]))
    .instructions("You pay.")
    .tool(strict)
    .build()
    .unwrap();
    let strict_parent = parent(child, &Arc::new(AtomicUsize::new(0)));
    let cp2 = stored(&block_on(strict_parent.prompt("settle up")).unwrap());
    let before = cp2.to_json();
    match block_on(strict_parent.resume(
        cp2,
        Resume::decisions_by_id([("c1/k1", Decision::approve_with(json!({"amount": "lots"})))]),
    )) {
        Err(AgentError::Decision { id, problem }) => {
            assert_eq!(id.as_deref(), Some("c1/k1"));
            assert!(problem.contains("modifiedArgs"), "{problem}");
        }
        other => panic!("expected a DecisionError, got {other:?}"),
    }
    assert_eq!(Checkpoint::from_json(&before).unwrap().to_json(), before);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_parents_policy_reviews_the_childs_calls_and_two_approvers_are_counted_in_the_child() {
    let runs = Arc::new(AtomicUsize::new(0));
    // The child has no rule of its own: `pay` and `wipe` are plain tools.
    let child = Agent::builder(TestModel::by_turn([
        turn(vec![
            call("k1", "wipe", json!({})),
            call("k2", "pay", json!({"amount": 500})),
        ]),
        ModelResponse::text("Child done."),
    ]))
    .tool(counted("wipe", &runs))
    .tool(counted("pay", &runs))
    .build()
    .unwrap();
    let policy = || {
        approval_policy("over children", |call, _| {
            let d = match call.name.as_str() {
                "wipe" => PolicyDecision::deny("never"),
                "pay" => PolicyDecision::ask_approvers(2),
                _ => PolicyDecision::Allow,
            };
            async move { Ok(d) }
        })
    };
    let make = |child| {
        Agent::builder(TestModel::by_turn([
            turn(vec![call("c1", "worker", json!({"task": "clean and pay"}))]),
            ModelResponse::text("Parent done."),
        ]))
        .tool(agent_tool("worker", "Works.", child))
        .approval_policy(policy())
        .build()
        .unwrap()
    };
    let agent = make(child);
    let cp = stored(&block_on(agent.prompt("go")).unwrap());
    assert_eq!(cp.interrupts.len(), 1);
    assert_eq!(
        (cp.interrupts[0].id.as_str(), cp.interrupts[0].approvers),
        ("c1/k2", Some(2))
    );
    // The denial was answered inside the child at once.
    let child_cp = &cp.pending_input.as_ref().unwrap().state;
    assert!(
        child_cp["toolResults"][0]["content"]
            .as_str()
            .unwrap()
            .contains("denied this call to wipe")
    );

    let approve = |by: &str| Resume::decisions_by_id([("c1/k2", Decision::approve().by(by))]);
    let once = stored(&block_on(agent.resume(cp, approve("alice"))).unwrap());
    assert_eq!(once.interrupts[0].approvals.len(), 1, "one approval so far");
    let twice = stored(&block_on(agent.resume(once, approve("alice"))).unwrap());
    assert_eq!(twice.interrupts[0].approvals.len(), 1, "the same approver counts once");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let done = block_on(agent.resume(twice, approve("bob")))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Parent done.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "pay ran once, wipe never");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_parents_budget_counts_the_childs_tokens_and_bounds_its_model_calls() {
    let runs = Arc::new(AtomicUsize::new(0));
    let child = || {
        Agent::builder(TestModel::by_turn([
            turn(vec![call("k1", "pay", json!({"amount": 1}))]).with_usage(40, 10),
            ModelResponse::text("Paid.").with_usage(40, 10),
        ]))
        .tool(gated("pay", &runs))
        .build()
        .unwrap()
    };
    let make = |budget: Budget, child: Agent| {
        Agent::builder(TestModel::by_turn([
            turn(vec![call("c1", "payments", json!({"task": "pay"}))]).with_usage(10, 0),
            ModelResponse::text("Done.").with_usage(10, 0),
        ]))
        .tool(agent_tool("payments", "Pays.", child))
        .budget(budget)
        .build()
        .unwrap()
    };
    // 10 (parent) + 50 (child's first call) = 60 when the child pauses: counted in the parent.
    let agent = make(Budget::total_tokens(100), child());
    let cp = stored(&block_on(agent.prompt("go")).unwrap());
    assert_eq!((cp.usage.input_tokens, cp.usage.output_tokens), (50, 10));
    // Resumed: the child's second call starts at 60 (< 100) and brings it to 110; the parent's next call is refused.
    match block_on(agent.resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())]))) {
        Err(AgentError::BudgetExceeded { usage, checkpoint, .. }) => {
            assert_eq!(usage.input_tokens + usage.output_tokens, 110);
            assert_eq!(runs.load(Ordering::SeqCst), 1);
            // A larger budget goes on, nothing runs twice.
            let more = make(Budget::total_tokens(1000), child());
            let done = block_on(more.resume(*checkpoint, ""))
                .unwrap()
                .assert_complete()
                .unwrap();
            assert_eq!(done.text, "Done.");
            assert_eq!(runs.load(Ordering::SeqCst), 1);
        }
        other => panic!("expected BudgetExceeded, got {other:?}"),
    }
    // A budget the child reaches mid-run stops the child: its call is an error result the parent's model reads.
    let tight = make(Budget::total_tokens(55), child());
    let cp = stored(&block_on(tight.prompt("go")).unwrap());
    match block_on(tight.resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())]))) {
        Err(AgentError::BudgetExceeded { checkpoint, .. }) => {
            let c1 = checkpoint
                .messages
                .iter()
                .flat_map(|m| m.tool_results())
                .find(|r| r.tool_use_id == "c1")
                .cloned();
            // The child's run stopped before its second model call: the parent's call records why.
            let c1 = c1.expect("the child's call has a result");
            assert!(c1.is_error && c1.content.contains("budget"), "{}", c1.content);
        }
        other => panic!("expected BudgetExceeded, got {other:?}"),
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_childs_events_reach_the_parents_listener_with_their_path() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = seen.clone();
    let mut events = move |e: &Event<'_>| sink.lock().unwrap().push(serde_json::from_str(&e.to_json()).unwrap());
    let paused = block_on(agent.run(Input::prompt("settle up"), &mut events)).unwrap();
    let cp = stored(&paused);
    let seen_now = seen.lock().unwrap().clone();
    let nested: Vec<&Value> = seen_now.iter().filter(|e| e.get("path").is_some()).collect();
    assert!(nested.iter().all(|e| e["path"] == json!(["c1"])), "{nested:?}");
    let kinds: Vec<&str> = nested.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"step-finish") && kinds.contains(&"approval-requested"),
        "{kinds:?}"
    );
    assert!(
        nested
            .iter()
            .any(|e| e["type"] == "approval-requested" && e["id"] == "k1")
    );
    // The parent's own pause lists the child's interrupt by the parent's id.
    let pause = seen_now
        .iter()
        .rev()
        .find(|e| e["type"] == "interrupt" && e.get("path").is_none())
        .unwrap();
    assert_eq!(pause["interrupts"][0]["id"], "c1/k1");
    seen.lock().unwrap().clear();
    block_on(agent.run(
        Input::Resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())])),
        &mut events,
    ))
    .unwrap();
    let after = seen.lock().unwrap().clone();
    // The child reports the decision it received, and its tool's run, with the path; the parent does not repeat it.
    assert!(
        after
            .iter()
            .any(|e| e["type"] == "approval-response" && e["path"] == json!(["c1"]) && e["id"] == "k1")
    );
    assert!(
        !after
            .iter()
            .any(|e| e["type"] == "approval-response" && e.get("path").is_none())
    );
    assert!(
        after
            .iter()
            .any(|e| e["type"] == "tool-result" && e["path"] == json!(["c1"]) && e["content"] == "done pay")
    );
}

/// A listener of a session's numbered events: `(seq, JSON)` in order.
struct Numbered<'a>(&'a mut Vec<(u64, String)>);

impl resumable_agent::EventSink for Numbered<'_> {
    fn event(&mut self, e: &Event<'_>) {
        panic!("a session's events are numbered: {}", e.to_json());
    }
    fn sequenced(&mut self, seq: Option<u64>, e: &Event<'_>) {
        self.0.push((seq.expect("numbered"), e.to_json()));
    }
    fn wants_deltas(&self) -> bool {
        false
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn in_a_session_the_childs_step_events_are_numbered_logged_and_replayed_as_they_happened() {
    let saver = resumable_agent::MemorySaver::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let mut live = Vec::new();
    {
        let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
        let s = agent.session(&saver, "team").keep_completed(true);
        block_on(s.run(
            resumable_agent::Turn::Prompt("settle up".into()),
            &mut Numbered(&mut live),
        ))
        .unwrap();
    }
    {
        // Another process: a new agent answers the child's approval by the parent's id.
        let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
        let s = agent.session(&saver, "team").keep_completed(true);
        let reply = resumable_agent::Turn::Reply(Resume::decisions_by_id([("c1/k1", Decision::approve())]));
        block_on(s.run(reply, &mut Numbered(&mut live)))
            .unwrap()
            .assert_complete()
            .unwrap();
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let seqs: Vec<u64> = live.iter().map(|(s, _)| *s).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "the child's events are numbered in the parent's order: {seqs:?}"
    );
    // A child's event: its own `path` (the parent's `interrupt` lists interrupts with theirs).
    let nested = |e: &str| serde_json::from_str::<Value>(e).unwrap().get("path") == Some(&json!(["c1"]));
    for kind in [
        "step-start",
        "step-finish",
        "approval-requested",
        "approval-response",
        "tool-call",
        "tool-result",
    ] {
        assert!(
            live.iter()
                .any(|(_, e)| nested(e) && e.starts_with(&format!(r#"{{"type":"{kind}""#))),
            "the child's {kind} was reported live: {live:?}"
        );
    }

    // Replayed by a third agent from the store: the step-level events of both runs, the child's with their path,
    // each as it was reported live and with its number. Not logged: checkpoints, loads, and the child's own
    // `interrupt` (the parent's, with the parent's ids, is).
    let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
    let mut replayed = Vec::new();
    block_on(agent.session(&saver, "team").replay(None, &mut Numbered(&mut replayed))).unwrap();
    let logged: Vec<(u64, String)> = live
        .iter()
        .filter(|(_, e)| {
            let not_logged = e.starts_with(r#"{"type":"checkpoint""#)
                || e.starts_with(r#"{"type":"checkpoint-loaded""#)
                || nested(e) && e.starts_with(r#"{"type":"interrupt""#);
            !not_logged
        })
        .cloned()
        .collect();
    assert_eq!(replayed, logged);
    assert!(
        replayed.iter().any(|(_, e)| nested(e)
            && e.starts_with(r#"{"type":"tool-result","id":"k1","toolName":"pay","content":"done pay""#))
    );
    // From a number in the middle of the child's events: only what came after it.
    let (i, _) = replayed.iter().enumerate().find(|(_, (_, e))| nested(e)).unwrap();
    let mut tail = Vec::new();
    block_on(
        agent
            .session(&saver, "team")
            .replay(Some(replayed[i].0), &mut Numbered(&mut tail)),
    )
    .unwrap();
    assert_eq!(tail, replayed[i + 1..].to_vec());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_changed_child_is_config_drift_of_the_parent() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = parent(payer(&runs), &Arc::new(AtomicUsize::new(0)));
    let cp = stored(&block_on(agent.prompt("settle up")).unwrap());
    let changed_child = Agent::builder(TestModel::by_turn([ModelResponse::text("x")]))
        .instructions("You pay, carefully.")
        .tool(gated("pay", &runs))
        .build()
        .unwrap();
    let changed = parent(changed_child, &Arc::new(AtomicUsize::new(0)));
    match block_on(changed.resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())]))) {
        Err(AgentError::ConfigDrift { drift, .. }) => assert_eq!(drift.changed, vec!["payments".to_owned()]),
        other => panic!("expected ConfigDrift, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_remembered_approval_given_through_the_parent_holds_in_the_child_across_its_next_pause() {
    let runs = Arc::new(AtomicUsize::new(0));
    let child = || {
        Agent::builder(TestModel::by_turn([
            turn(vec![call("k1", "pay", json!({"amount": 1}))]),
            turn(vec![call("k2", "pay", json!({"amount": 2}))]),
            ModelResponse::text("Paid twice."),
        ]))
        .tool(gated("pay", &runs))
        .build()
        .unwrap()
    };
    let make = |child| {
        Agent::builder(TestModel::by_turn([
            turn(vec![call("c1", "payments", json!({"task": "pay twice"}))]),
            ModelResponse::text("Done."),
        ]))
        .tool(agent_tool("payments", "Pays.", child))
        .build()
        .unwrap()
    };
    let cp = stored(&block_on(make(child()).prompt("go")).unwrap());
    let done = block_on(make(child()).resume(
        cp,
        Resume::decisions_by_id([("c1/k1", Decision::approve_and_remember())]),
    ))
    .unwrap()
    .assert_complete()
    .unwrap();
    assert_eq!(done.text, "Done.");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the second payment was approved by the remembered decision"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_childs_request_for_input_an_mcp_elicitation_is_answered_through_the_parent() {
    use resumable_agent::{InputRequest, InputRequired, ToolError};
    let calls = Arc::new(AtomicUsize::new(0));
    let make = || {
        let calls = calls.clone();
        // What an MCP tool whose server elicits does: ask for input, then go on with the answer.
        let book = tool("book", "Books a table.", json!({"type": "object"}), move |_, ctx| {
            calls.fetch_add(1, Ordering::SeqCst);
            let answered = ctx.input().map(|p| p.responses.get("date").cloned());
            async move {
                match answered {
                    None => Err(ToolError::Input(InputRequired::new(
                        vec![InputRequest::new(
                            "date",
                            "Which day?",
                            json!({"type": "object", "properties": {"date": {"type": "string"}}, "required": ["date"]}),
                        )],
                        json!({"round": 1}),
                    ))),
                    Some(Some(a)) => Ok(json!(format!(
                        "booked {}",
                        a["content"]["date"].as_str().unwrap_or("?")
                    ))),
                    Some(None) => Ok(json!("no date")),
                }
            }
        });
        let child = Agent::builder(TestModel::by_turn([
            turn(vec![call("k1", "book", json!({}))]),
            ModelResponse::text("Child booked it."),
        ]))
        .tool(book)
        .build()
        .unwrap();
        Agent::builder(TestModel::by_turn([
            turn(vec![call("c1", "concierge", json!({"task": "book a table"}))]),
            ModelResponse::text("Done."),
        ]))
        .tool(agent_tool("concierge", "Books things.", child))
        .build()
        .unwrap()
    };
    let cp = stored(&block_on(make().prompt("dinner")).unwrap());
    let i = &cp.interrupts[0];
    assert_eq!(
        (i.id.as_str(), i.kind, i.message.as_deref()),
        ("c1/k1/date", InterruptKind::Elicitation, Some("Which day?"))
    );
    assert_eq!(i.path, vec!["c1".to_owned()]);
    // Content that breaks the requested schema is refused by id before anything runs.
    match block_on(make().resume(
        cp.clone(),
        Resume::decisions_by_id([(
            "c1/k1/date",
            Decision::Accept {
                content: Some(json!({"date": 5})),
            },
        )]),
    )) {
        Err(AgentError::Decision { id, .. }) => assert_eq!(id.as_deref(), Some("c1/k1/date")),
        other => panic!("expected a DecisionError, got {other:?}"),
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let done = block_on(make().resume(
        cp,
        Resume::decisions_by_id([(
            "c1/k1/date",
            Decision::Accept {
                content: Some(json!({"date": "2026-12-01"})),
            },
        )]),
    ))
    .unwrap()
    .assert_complete()
    .unwrap();
    assert_eq!(done.text, "Done.");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "called again once, with the answer");
    let c1 = done
        .messages()
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "c1")
        .unwrap()
        .clone();
    assert_eq!(c1.content, "Child booked it.");
}

// Natively only: on wasm32 signing goes through the host's Web Crypto (promises), which this file's block_on cannot
// wait for; the npm package's signed runs are tested in Node (tests/node/hardening.test.mjs).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_signed_childs_run_tampered_inside_an_unsigned_parent_is_refused_before_anything_runs() {
    use resumable_agent::CheckpointKeys;
    let runs = Arc::new(AtomicUsize::new(0));
    let make = || {
        let child = Agent::builder(TestModel::by_turn([
            turn(vec![call("k1", "pay", json!({"amount": 20}))]),
            ModelResponse::text("Paid."),
        ]))
        .tool(gated("pay", &runs))
        .checkpoint_keys(CheckpointKeys::new("k").key("k", "a secret the child's agent signs with"))
        .build()
        .unwrap();
        parent(child, &Arc::new(AtomicUsize::new(0)))
    };
    let cp = stored(&block_on(make().prompt("settle up")).unwrap());
    assert!(
        cp.pending_input.as_ref().unwrap().state.get("signature").is_some(),
        "the child's run is signed"
    );
    // Someone raises the amount inside the child's run (the parent is not signed): the child's signature refuses it.
    let mut text: Value = serde_json::from_str(&cp.to_json()).unwrap();
    text["pendingInput"]["state"]["messages"][1]["content"][0]["input"]["amount"] = json!(20_000);
    text["pendingInput"]["state"]["interrupts"][0]["input"]["amount"] = json!(20_000);
    let forged = Checkpoint::from_json(&text.to_string()).unwrap();
    match block_on(make().resume(forged, Resume::decisions_by_id([("c1/k1", Decision::approve())]))) {
        Err(AgentError::Checkpoint(e)) => {
            let e = e.to_string();
            assert!(
                e.contains("pendingInput.state") && e.contains("c1") && e.contains("checkpoint signature"),
                "{e}"
            );
        }
        other => panic!("expected a CheckpointError, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    // Untouched, it goes on.
    let done = block_on(make().resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())])))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "All settled.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_childs_pause_moved_to_an_agent_whose_tool_runs_no_subagent_is_refused_and_nothing_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let cp = stored(&block_on(parent(payer(&runs), &Arc::new(AtomicUsize::new(0))).prompt("settle up")).unwrap());
    // Another agent: the same names, but `payments` is a plain tool; it goes on through drift.
    let plain = Agent::builder(TestModel::by_turn([ModelResponse::text("x")]))
        .tool(counted("look", &runs))
        .tool(counted("payments", &runs))
        .on_drift(resumable_agent::OnDrift::Continue)
        .build()
        .unwrap();
    match block_on(plain.resume(cp, Resume::decisions_by_id([("c1/k1", Decision::approve())]))) {
        Err(AgentError::Checkpoint(e)) => {
            let e = e.to_string();
            assert!(e.starts_with("pendingInput.nested:") && e.contains("\"c1\""), "{e}");
        }
        other => panic!("expected a CheckpointError, got {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the plain tool did not run unasked");
}

/// A child that pays (no approval) and then fails: its model is down at its second call.
fn failing_payer(runs: &Arc<AtomicUsize>) -> Agent {
    let model = TestModel::with_results([
        Ok(turn(vec![call("k1", "pay", json!({"amount": 20}))])),
        Err(resumable_agent::ModelError::Http {
            provider: "anthropic".into(),
            status: Some(529),
            message: "overloaded".into(),
            retryable: true,
        }),
    ]);
    Agent::builder(model)
        .instructions("You pay.")
        .tool(counted("pay", runs))
        .build()
        .unwrap()
}

/// A parent that calls `payments` and answers after reading its result.
fn caller(child: Agent) -> Agent {
    let model = TestModel::by_turn([
        turn(vec![call("c1", "payments", json!({"task": "pay the invoice"}))]),
        ModelResponse::text("The payment could not finish."),
    ]);
    Agent::builder(model)
        .tool(agent_tool("payments", "Pays invoices.", child))
        .build()
        .unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_failed_childs_run_is_kept_in_the_parents_checkpoint_and_its_agent_resumes_it_without_paying_twice() {
    let runs = Arc::new(AtomicUsize::new(0));
    let done = block_on(caller(failing_payer(&runs)).prompt("settle up"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "The payment could not finish.");
    // The model read the failure as the call's error result.
    let c1 = done
        .checkpoint
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .find(|r| r.tool_use_id == "c1")
        .unwrap();
    assert!(
        c1.is_error && c1.content.starts_with("the subagent payments failed: "),
        "{c1:?}"
    );
    // The child's run is kept beside it, through a JSON round trip.
    let cp = Checkpoint::from_json(&done.checkpoint.to_json()).unwrap();
    assert_eq!(cp.failed_subagents.len(), 1);
    let failed = &cp.failed_subagents[0];
    assert_eq!((failed.id.as_str(), failed.tool_name.as_str()), ("c1", "payments"));
    assert_eq!(failed.error["name"], "ModelError");
    assert!(
        failed.error["message"].as_str().unwrap().contains("overloaded"),
        "{}",
        failed.error
    );
    let child_run = failed.checkpoint().unwrap();
    assert_eq!(child_run.messages.len(), 3, "the task, the child's call, its result");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Once the provider is back: the child's agent resumes its run; `pay` is not run again.
    let back = Agent::builder(TestModel::new([ModelResponse::text("Paid.")]))
        .instructions("You pay.")
        .tool(counted("pay", &runs))
        .build()
        .unwrap();
    let resumed = block_on(back.resume(child_run, Resume::Answer(String::new())))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(resumed.text, "Paid.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "pay ran once in all");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_grandchilds_failed_run_moves_out_with_the_child_that_completes_and_is_kept_by_its_path() {
    let runs = Arc::new(AtomicUsize::new(0));
    // The middle agent calls the failing payer as m1, reads the failure and answers.
    let middle = Agent::builder(TestModel::by_turn([
        turn(vec![call("m1", "payments", json!({"task": "pay"}))]),
        ModelResponse::text("Payments are down."),
    ]))
    .tool(agent_tool("payments", "Pays invoices.", failing_payer(&runs)))
    .build()
    .unwrap();
    let top = Agent::builder(TestModel::by_turn([
        turn(vec![call("c1", "office", json!({"task": "settle"}))]),
        ModelResponse::text("Reported."),
    ]))
    .tool(agent_tool("office", "Runs the office.", middle))
    .build()
    .unwrap();
    let done = block_on(top.prompt("go")).unwrap().assert_complete().unwrap();
    let kept: Vec<(&str, &str)> = done
        .checkpoint
        .failed_subagents
        .iter()
        .map(|f| (f.id.as_str(), f.tool_name.as_str()))
        .collect();
    assert_eq!(kept, vec![("c1/m1", "payments")]);
    assert_eq!(
        done.checkpoint.failed_subagents[0].checkpoint().unwrap().messages.len(),
        3
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_failed_childs_run_kept_in_a_session_reads_back_from_the_step_log() {
    let saver = resumable_agent::MemorySaver::new();
    let runs = Arc::new(AtomicUsize::new(0));
    let done = block_on(
        caller(failing_payer(&runs))
            .session(&saver, "f")
            .keep_completed(true)
            .prompt("settle up"),
    )
    .unwrap()
    .assert_complete()
    .unwrap();
    assert_eq!(done.checkpoint.failed_subagents.len(), 1);
    // Another agent loads the session: the kept run comes back from the records, as it was.
    let back = block_on(caller(failing_payer(&runs)).session(&saver, "f").checkpoint(None))
        .unwrap()
        .unwrap();
    assert_eq!(back.failed_subagents, done.checkpoint.failed_subagents);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_kept_run_that_is_malformed_or_edited_under_a_signature_is_refused_by_its_path() {
    let runs = Arc::new(AtomicUsize::new(0));
    let done = block_on(caller(failing_payer(&runs)).prompt("settle up")).unwrap();
    let good: Value = serde_json::from_str(&done.checkpoint().to_json()).unwrap();
    for (edit, path) in [
        (
            json!({"id": "", "toolName": "payments", "error": {"message": "x"}, "checkpoint": {}}),
            "failedSubagents[0].id",
        ),
        (
            json!({"id": "c1//m1", "toolName": "payments", "error": {"message": "x"}, "checkpoint": {}}),
            "failedSubagents[0].id",
        ),
        (
            json!({"id": "c1", "toolName": "not a name", "error": {"message": "x"}, "checkpoint": {}}),
            "failedSubagents[0].toolName",
        ),
        (
            json!({"id": "c1", "toolName": "payments", "error": "x", "checkpoint": {}}),
            "failedSubagents[0].error",
        ),
        (
            json!({"id": "c1", "toolName": "payments", "error": {"message": "x"}, "checkpoint": "{}"}),
            "failedSubagents[0].checkpoint",
        ),
    ] {
        let mut bad = good.clone();
        bad["failedSubagents"][0] = edit;
        let e = Checkpoint::from_value(bad).unwrap_err();
        assert!(e.to_string().contains(path), "{path}: {e}");
    }
}

/// Signing needs the host's crypto, which `block_on` cannot wait for in wasm32 (the npm package's test signs there).
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_kept_run_edited_under_the_parents_signature_is_refused() {
    let runs = Arc::new(AtomicUsize::new(0));
    let keys = || resumable_agent::CheckpointKeys::new("k").key("k", "a secret only the lead agent signs with");
    let signed = |child| {
        let model = TestModel::by_turn([
            turn(vec![call("c1", "payments", json!({"task": "pay the invoice"}))]),
            ModelResponse::text("The payment could not finish."),
        ]);
        Agent::builder(model)
            .tool(agent_tool("payments", "Pays invoices.", child))
            .checkpoint_keys(keys())
            .build()
            .unwrap()
    };
    let done = block_on(signed(failing_payer(&runs)).prompt("settle up")).unwrap();
    let mut forged: Value = serde_json::from_str(&done.checkpoint().to_json()).unwrap();
    forged["failedSubagents"][0]["checkpoint"]["messages"][1]["content"][0]["input"]["amount"] = json!(20_000);
    let e = block_on(signed(failing_payer(&runs)).resume(
        Checkpoint::from_value(forged).unwrap(),
        Resume::Answer("And now?".into()),
    ))
    .unwrap_err();
    assert!(matches!(e, AgentError::Checkpoint(_)), "{e:?}");
    assert!(e.to_string().contains("signature"), "{e}");
}
