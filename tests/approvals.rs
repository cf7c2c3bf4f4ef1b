//! Approvals, structured questions, decisions, expiry and events, through the public Rust API.
//! Each runs natively and, compiled to wasm32, in Node under wasm-bindgen-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use common::*;
use resumable_agent::{
    AgentError, Checkpoint, Decision, Event, Input, InterruptError, InterruptKind, Message, ModelResponse, Outcome,
    Resume, ToolError, tool,
};
use serde_json::{Value, json};

fn roundtrip(cp: &Checkpoint) -> Checkpoint {
    Checkpoint::from_json(&cp.to_json()).expect("a checkpoint we wrote must decode")
}

fn results(m: &Message) -> Vec<(String, String, bool)> {
    m.tool_results()
        .map(|r| (r.tool_use_id.clone(), r.content.clone(), r.is_error))
        .collect()
}

/// A turn with two approval-gated calls around a plain one.
fn gated_turn() -> ModelResponse {
    turn(vec![
        call("a1", "send", json!({"to": "ann"})),
        call("p1", "lookup", json!({"key": "k"})),
        call("a2", "charge", json!({"n": 500})),
    ])
}

fn paused_on_approvals(counters: &Counters) -> (std::sync::Arc<TestModel>, Checkpoint) {
    let model = TestModel::new([gated_turn(), ModelResponse::text("Done.")]);
    let agent = agent_with_gates(model.clone(), counters).build().unwrap();
    let Outcome::Interrupted(paused) = block_on(agent.prompt("Pay and tell Ann")).unwrap() else {
        panic!("expected a pause for approval")
    };
    (model, paused.checkpoint)
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_turn_with_two_gated_calls_pauses_once_before_anything_runs_then_runs_as_decided() {
    let counters = Counters::default();
    let (model, cp) = paused_on_approvals(&counters);
    assert_eq!(model.calls(), 1);
    assert!(
        counters.ran.lock().unwrap().is_empty(),
        "no call of the turn ran before the decisions"
    );
    let kinds: Vec<(InterruptKind, &str, &str)> = cp
        .interrupts
        .iter()
        .map(|i| (i.kind, i.id.as_str(), i.tool_name.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (InterruptKind::Approval, "a1", "send"),
            (InterruptKind::Approval, "a2", "charge")
        ]
    );
    assert_eq!(cp.interrupts[0].input, json!({"to": "ann"}));
    assert!(cp.interrupts[1].expires_at.is_some(), "charge's request expires");
    assert_eq!(cp.pending_tool_use_id.as_deref(), Some("a1"));
    assert_eq!(cp.question.as_deref(), Some("Approve the call to send?"));

    // A fresh agent, as in another process.
    let agent = agent_with_gates(model.clone(), &counters).build().unwrap();
    let decisions = Resume::decisions_by_id([
        ("a2", Decision::deny("too expensive")),
        ("a1", Decision::approve_with(json!({"to": "bob"}))),
    ]);
    let done = block_on(agent.resume(roundtrip(&cp), decisions))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Done.");
    assert_eq!(
        *counters.gated.lock().unwrap(),
        [("send".to_owned(), "a1".to_owned(), json!({"to": "bob"}))],
        "send ran once with the edited input; charge never ran"
    );
    assert_eq!(Counters::get(&counters.lookup), 1, "the plain call ran once");
    let request = model.last_request();
    let answered = results(request.last().unwrap());
    assert_eq!(
        answered.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["a1", "p1", "a2"],
        "three results, in call order"
    );
    assert!(!answered[0].2 && !answered[1].2);
    assert!(answered[2].2, "the denied call is an error result");
    assert_eq!(
        answered[2].1,
        "The user denied this call to charge; it did not run: too expensive"
    );
    let call = request[1].tool_uses().next().unwrap();
    assert_eq!(
        call.input,
        json!({"to": "bob"}),
        "the transcript shows the input the tool ran with"
    );
    assert_provider_valid(done.messages());
    assert!(done.checkpoint.approved.is_empty() && !done.checkpoint.reviewed);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn decisions_that_do_not_fit_are_typed_errors_naming_the_interrupt_before_anything_runs() {
    let counters = Counters::default();
    let (model, cp) = paused_on_approvals(&counters);
    let agent = agent_with_gates(model.clone(), &counters).build().unwrap();
    let cases: Vec<(Resume, Option<&str>, &str)> = vec![
        ("yes".into(), Some("a1"), "resume with { decisions }"),
        (
            Resume::decisions([Decision::approve()]),
            Some("a2"),
            "expected 2 decision(s)",
        ),
        (
            Resume::decisions([Decision::approve(), Decision::approve(), Decision::approve()]),
            None,
            "expected 2 decision(s)",
        ),
        (
            Resume::decisions_by_id([("a1", Decision::approve()), ("zz", Decision::approve())]),
            Some("zz"),
            "no pending interrupt has this id",
        ),
        (
            Resume::decisions_by_id([("a1", Decision::approve())]),
            Some("a2"),
            "missing decision",
        ),
        (
            Resume::decisions_by_id([
                ("a1", Decision::approve()),
                ("a1", Decision::deny("x")),
                ("a2", Decision::approve()),
            ]),
            Some("a1"),
            "more than one decision",
        ),
        (
            Resume::decisions([Decision::answer("sure"), Decision::approve()]),
            Some("a1"),
            "expected \"approve\" or \"deny\" for an approval request, got \"answer\"",
        ),
        (
            Resume::decisions([Decision::approve_with(json!({"to": 5})), Decision::approve()]),
            Some("a1"),
            "modifiedArgs.to: expected string, got integer",
        ),
        (
            Resume::decisions([Decision::approve_with(json!("bob")), Decision::approve()]),
            Some("a1"),
            "modifiedArgs: expected a JSON object",
        ),
    ];
    for (input, id, problem) in cases {
        let label = format!("{input:?}");
        match block_on(agent.resume(roundtrip(&cp), input)) {
            Err(AgentError::Decision { id: got, problem: p }) => {
                assert_eq!(got.as_deref(), id, "{label}");
                assert!(p.contains(problem), "{label}: {p}");
            }
            other => panic!("{label}: expected a decision error, got {other:?}"),
        }
    }
    assert!(counters.ran.lock().unwrap().is_empty(), "nothing ran");
    assert_eq!(model.calls(), 1, "no model call");
    // Nothing pending: decisions are extra, a text answer mid-turn is refused.
    let done = block_on(agent.resume(
        roundtrip(&cp),
        Resume::decisions([Decision::deny("no"), Decision::deny("no")]),
    ))
    .unwrap()
    .assert_complete()
    .unwrap();
    let err = block_on(agent.resume(done.checkpoint.clone(), Resume::decisions([Decision::approve()]))).unwrap_err();
    assert!(matches!(err, AgentError::Decision { id: None, .. }), "{err:?}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_expired_interrupt_applies_its_tools_policy() {
    let counters = Counters::default();
    let (model, cp) = paused_on_approvals(&counters);
    let mut value: Value = serde_json::from_str(&cp.to_json()).unwrap();
    value["interrupts"][0]["expiresAt"] = json!(1); // send: policy "error"
    let expired_send = Checkpoint::from_value(value.clone()).unwrap();
    let agent = agent_with_gates(model.clone(), &counters).build().unwrap();
    let both = || Resume::decisions([Decision::approve(), Decision::approve()]);
    match block_on(agent.resume(expired_send.clone(), both())) {
        Err(AgentError::InterruptExpired {
            id,
            expires_at,
            checkpoint,
        }) => {
            assert_eq!((id.as_str(), expires_at), ("a1", 1));
            assert_eq!(*checkpoint, expired_send, "the error carries the run, unchanged");
        }
        other => panic!("expected InterruptExpired, got {other:?}"),
    }
    assert!(counters.ran.lock().unwrap().is_empty());
    value["interrupts"][0]["expiresAt"] = Value::Null;
    value["interrupts"][1]["expiresAt"] = json!(1); // charge: policy "deny"
    let done = block_on(agent.resume(Checkpoint::from_value(value).unwrap(), both()))
        .unwrap()
        .assert_complete()
        .unwrap();
    let answered = results(&done.messages()[2]);
    assert_eq!(answered[2].0, "a2");
    assert!(
        answered[2].2 && answered[2].1.contains("approval request expired"),
        "{:?}",
        answered[2]
    );
    assert_eq!(counters.gated.lock().unwrap().len(), 1, "only send ran");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_question_carries_options_and_data_and_is_answered_by_text_or_decision() {
    let pick = tool("pick", "Ask to pick.", json!({"type": "object"}), |_, _| async move {
        Err::<Value, ToolError>(
            InterruptError::new("Which plan?")
                .with_options(["basic", "pro"])
                .with_data(json!({"prices": [5, 20]}))
                .into(),
        )
    });
    let model = TestModel::new([
        turn(vec![call("q", "pick", json!({}))]),
        ModelResponse::text("ok"),
        turn(vec![call("q2", "pick", json!({}))]),
        ModelResponse::text("declined"),
    ]);
    let agent = resumable_agent::Agent::builder(model.clone())
        .tool(pick)
        .build()
        .unwrap();
    let Outcome::Interrupted(p) = block_on(agent.prompt("go")).unwrap() else {
        panic!()
    };
    let i = &p.interrupts()[0];
    assert_eq!(
        (i.kind, i.question.as_deref()),
        (InterruptKind::Question, Some("Which plan?"))
    );
    assert_eq!(i.options.as_deref(), Some(&["basic".to_owned(), "pro".to_owned()][..]));
    assert_eq!(i.data, Some(json!({"prices": [5, 20]})));
    let done = block_on(agent.resume(roundtrip(&p.checkpoint), Resume::decisions([Decision::answer("pro")])))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(results(&done.messages()[2])[0].1, "pro");
    let Outcome::Interrupted(p) = block_on(agent.resume(done.checkpoint, "again")).unwrap() else {
        panic!()
    };
    let done = block_on(agent.resume(p.checkpoint, Resume::decisions([Decision::deny("not now")])))
        .unwrap()
        .assert_complete()
        .unwrap();
    let last = results(&done.messages()[done.messages().len() - 2]);
    assert_eq!(last[0].1, "The user declined to answer: not now");
    assert!(last[0].2);
}

fn event_types(input: Input, agent: &resumable_agent::Agent) -> (Vec<String>, Result<Outcome, AgentError>) {
    let mut seen = Vec::new();
    let outcome = block_on(agent.run(input, &mut |e: &Event<'_>| {
        let v: Value = serde_json::from_str(&e.to_json()).unwrap();
        seen.push(v["type"].as_str().unwrap().to_owned());
    }));
    (seen, outcome)
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_events_of_a_three_step_run_and_of_a_pause_for_approval() {
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![call("l1", "lookup", json!({"key": "a"}))]),
        turn(vec![call("l2", "lookup", json!({"key": "b"}))]),
        ModelResponse::text("two lookups").with_usage(3, 1),
    ]);
    let agent = agent_with_gates(model, &counters).build().unwrap();
    let (seen, outcome) = event_types(Input::prompt("go"), &agent);
    assert_eq!(outcome.unwrap().assert_complete().unwrap().text, "two lookups");
    let step = [
        "step-start",
        "step-finish",
        "checkpoint",
        "tool-call",
        "tool-result",
        "checkpoint",
    ];
    let mut expected = vec!["checkpoint"];
    expected.extend(step);
    expected.extend(step);
    expected.extend(["step-start", "step-finish", "checkpoint"]);
    assert_eq!(seen, expected);

    let counters = Counters::default();
    let model = TestModel::new([gated_turn(), ModelResponse::text("Done.")]);
    // One call at a time (with calls running together, see `calls_that_run_together_report_in_call_order`).
    let agent = agent_with_gates(model, &counters).tool_concurrency(1).build().unwrap();
    let (seen, outcome) = event_types(Input::prompt("go"), &agent);
    assert_eq!(
        seen,
        [
            "checkpoint",
            "step-start",
            "step-finish",
            "checkpoint",
            "approval-requested",
            "approval-requested",
            "checkpoint",
            "interrupt"
        ]
    );
    let cp = outcome.unwrap().checkpoint().clone();
    let (seen, _) = event_types(
        Input::resume(cp, Resume::decisions([Decision::approve(), Decision::deny("no")])),
        &agent,
    );
    assert_eq!(
        seen[..6],
        [
            "approval-response",
            "approval-response",
            "checkpoint",
            "tool-call",
            "tool-result",
            "checkpoint"
        ]
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn resuming_any_checkpoint_event_gives_the_same_final_transcript() {
    // One call at a time (a checkpoint after each call), and calls running together (one after the calls of a turn).
    for (concurrency, at_least) in [(1, 12), (0, 8)] {
        resumed_from_each_checkpoint(concurrency, at_least);
    }
}

fn resumed_from_each_checkpoint(concurrency: u32, at_least: usize) {
    let script = || {
        TestModel::by_turn([
            turn(vec![
                call("l1", "lookup", json!({"key": "a"})),
                call("s1", "send", json!({"to": "ann"})),
                call("l2", "lookup", json!({"key": "b"})),
            ]),
            turn(vec![
                call("q1", "ask_user", json!({"question": "Sure?"})),
                call("l3", "lookup", json!({"key": "c"})),
            ]),
            ModelResponse::text("finished"),
        ])
    };
    let answer = |cp: &Checkpoint| -> Resume {
        match cp.interrupts.first().map(|i| i.kind) {
            Some(InterruptKind::Approval) => Resume::decisions([Decision::approve()]),
            Some(InterruptKind::Question) => "yes".into(),
            Some(InterruptKind::Elicitation) => Resume::decisions([Decision::Cancel]),
            Some(_) => Resume::decisions([Decision::deny("no")]),
            None => "".into(),
        }
    };
    // The reference run, pausing and resuming as a caller would, recording every checkpoint event.
    let counters = Counters::default();
    let agent = agent_with_gates(script(), &counters)
        .tool_concurrency(concurrency)
        .build()
        .unwrap();
    let mut checkpoints = Vec::new();
    let mut input = Input::prompt("go");
    let done = loop {
        let outcome = block_on(agent.run(input, &mut |e: &Event<'_>| {
            if let Event::Checkpoint { checkpoint } = e {
                checkpoints.push(checkpoint.to_json());
            }
        }))
        .unwrap();
        match outcome {
            Outcome::Complete(r) => break r,
            Outcome::Interrupted(p) => input = Input::Resume(p.checkpoint.clone(), answer(&p.checkpoint)),
        }
    };
    assert!(checkpoints.len() >= at_least, "{}", checkpoints.len());
    for (k, json) in checkpoints.iter().enumerate() {
        let fresh_counters = Counters::default();
        let agent = agent_with_gates(script(), &fresh_counters)
            .tool_concurrency(concurrency)
            .build()
            .unwrap();
        let mut cp = Checkpoint::from_json(json).unwrap();
        let final_run = loop {
            match block_on(agent.resume(cp.clone(), answer(&cp))).unwrap() {
                Outcome::Complete(r) => break r,
                Outcome::Interrupted(p) => cp = p.checkpoint,
            }
        };
        assert_eq!(
            final_run.messages(),
            done.messages(),
            "from checkpoint event {k} ({concurrency})"
        );
        assert_eq!(final_run.text, done.text);
    }
}
