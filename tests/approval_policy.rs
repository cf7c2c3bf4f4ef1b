//! Issue 34's agent-level rules through the public Rust API: an approval policy over every call (the stricter
//! of it and a tool's own rule), sticky approvals (`remember: "tool"`), calls that wait for several approvers,
//! and token budgets that survive a resume. Every pause is carried across as JSON text, as a host would store
//! it. Natively and, compiled to wasm32, in Node under wasm-bindgen-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use resumable_agent::{
    Agent, AgentBuilder, AgentError, Budget, Checkpoint, CheckpointKeys, Decision, Event, Input, ModelResponse,
    OnDrift, Outcome, PolicyDecision, Resume, approval_policy, tool,
};
use serde_json::{Value, json};

/// A tool named `name` that counts its runs and answers `done`.
fn counted(name: &'static str, runs: &Arc<AtomicUsize>) -> impl resumable_agent::Tool + use<> {
    let runs = runs.clone();
    tool(name, "Does it.", json!({"type": "object"}), move |_, _| {
        runs.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!("done")) }
    })
}

/// Payments over 100 wait for two approvers, `wipe` is never allowed, everything else runs.
fn payments_policy() -> impl resumable_agent::ApprovalPolicy {
    approval_policy("payments", |call, _ctx| {
        let decision = match call.name.as_str() {
            "pay" if call.input.get("amount").and_then(Value::as_u64).unwrap_or(0) > 100 => {
                PolicyDecision::ask_approvers(2)
            }
            "pay" => PolicyDecision::ask(),
            "wipe" => PolicyDecision::deny("wiping is never allowed"),
            _ => PolicyDecision::Allow,
        };
        async move { Ok(decision) }
    })
}

/// The checkpoint as a host stores it: JSON text, read back.
fn stored(outcome: &Outcome) -> Checkpoint {
    Checkpoint::from_json(&outcome.checkpoint().to_json()).unwrap()
}

fn builder(model: Arc<TestModel>, runs: &Arc<AtomicUsize>) -> AgentBuilder {
    Agent::builder(model)
        .tool(counted("pay", runs))
        .tool(counted("wipe", runs))
        .tool(counted("look", runs))
        .approval_policy(payments_policy())
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_policy_asks_denies_and_allows_calls_of_tools_that_have_no_rule_of_their_own() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = TestModel::by_turn([
        turn(vec![
            call("c1", "look", json!({})),
            call("c2", "wipe", json!({})),
            call("c3", "pay", json!({"amount": 20})),
        ]),
        ModelResponse::text("All done."),
    ]);
    let agent = builder(model.clone(), &runs).build().unwrap();
    let paused = block_on(agent.prompt("tidy up")).unwrap();
    let cp = stored(&paused);
    // Only the payment waits; nothing of the turn ran before the pause, the denial is answered at once.
    assert_eq!(cp.interrupts.len(), 1);
    assert_eq!((cp.interrupts[0].id.as_str(), cp.interrupts[0].approvers), ("c3", None));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let denied = cp.tool_results.iter().find(|r| r.tool_use_id == "c2").unwrap();
    assert!(denied.is_error);
    assert!(
        denied.content.contains("approval policy denied this call to wipe"),
        "{}",
        denied.content
    );
    assert!(denied.content.contains("wiping is never allowed"));
    let done = block_on(agent.resume(cp, Resume::decisions_by_id([("c3", Decision::approve())]))).unwrap();
    assert_eq!(done.assert_complete().unwrap().text, "All done.");
    assert_eq!(runs.load(Ordering::SeqCst), 2, "look and pay ran once each; wipe never");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_stricter_rule_wins_and_a_failing_policy_lets_nothing_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    // The tool asks for approval itself; a policy that allows everything does not skip it.
    let model = TestModel::by_turn([turn(vec![call("c1", "send", json!({}))]), ModelResponse::text("ok")]);
    let agent = Agent::builder(model)
        .tool(
            tool("send", "Sends.", json!({"type": "object"}), |_, _| async {
                Ok(json!("sent"))
            })
            .needs_approval_within(60_000),
        )
        .approval_policy(approval_policy("allow-all", |_, _| async { Ok(PolicyDecision::Allow) }))
        .build()
        .unwrap();
    let paused = block_on(agent.prompt("send it")).unwrap();
    assert!(paused.is_interrupted(), "the tool's own needs_approval still applies");
    assert!(paused.checkpoint().interrupts[0].expires_at.is_some());

    let model = TestModel::by_turn([turn(vec![call("c1", "look", json!({}))]), ModelResponse::text("ok")]);
    let agent = Agent::builder(model.clone())
        .tool(counted("look", &runs))
        .approval_policy(approval_policy("broken", |_, _| async {
            Err("the rules service is down".to_owned())
        }))
        .build()
        .unwrap();
    let done = block_on(agent.prompt("look")).unwrap().assert_complete().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a policy that failed lets no call run");
    let result = done.checkpoint.messages[2].tool_results().next().unwrap();
    assert!(
        result.is_error
            && result
                .content
                .contains("the approval policy failed: the rules service is down")
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_remembered_approval_approves_later_calls_of_the_tool_across_a_pause_but_never_a_denied_one() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = TestModel::by_turn([
        turn(vec![call("c1", "pay", json!({"amount": 10}))]),
        turn(vec![call("c2", "pay", json!({"amount": 30}))]),
        turn(vec![call("c3", "pay", json!({"amount": 500}))]),
        ModelResponse::text("paid"),
    ]);
    let agent = builder(model, &runs).build().unwrap();
    let paused = block_on(agent.prompt("pay three bills")).unwrap();
    let answer =
        Resume::from_answer_json(r#"{"decisions":{"c1":{"type":"approve","remember":"tool","by":"ann"}}}"#).unwrap();
    let mut events = Vec::new();
    let out = block_on(agent.run(Input::resume(stored(&paused), answer), &mut |e: &Event<'_>| {
        if let Event::ApprovalResponse { id, remembered, by, .. } = e {
            events.push(((*id).to_owned(), *remembered, by.map(str::to_owned)));
        }
    }))
    .unwrap();
    // c2 was approved by the remembered approval; c3 (over 100) waits for two approvers all the same.
    assert_eq!(
        events,
        [
            ("c1".to_owned(), false, Some("ann".to_owned())),
            ("c2".to_owned(), true, None)
        ]
    );
    let cp = stored(&out);
    assert_eq!(cp.remembered, ["pay"]);
    assert_eq!(
        (cp.interrupts[0].id.as_str(), cp.interrupts[0].approvers),
        ("c3", Some(2))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // A remembered approval does not lift a policy's denial.
    let model = TestModel::by_turn([turn(vec![call("c1", "wipe", json!({}))]), ModelResponse::text("no")]);
    let mut carried = Checkpoint::new("r", 0);
    carried.messages.push(resumable_agent::Message::user("wipe it"));
    carried.remembered = vec!["wipe".to_owned()];
    let agent = builder(model, &runs).build().unwrap();
    let done = block_on(agent.resume(carried, "")).unwrap().assert_complete().unwrap();
    assert!(done.checkpoint.messages[2].tool_results().next().unwrap().is_error);
    assert_eq!(runs.load(Ordering::SeqCst), 2, "wipe never ran");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn two_distinct_approvers_are_needed_the_same_one_twice_counts_once_and_any_denial_denies() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = || {
        TestModel::by_turn([
            turn(vec![
                call("big", "pay", json!({"amount": 900})),
                call("small", "pay", json!({"amount": 5})),
            ]),
            ModelResponse::text("finished"),
        ])
    };
    let agent = builder(script(), &runs).build().unwrap();
    let paused = block_on(agent.prompt("pay")).unwrap();
    let cp = stored(&paused);
    assert_eq!(
        cp.interrupts.iter().map(|i| i.approvers).collect::<Vec<_>>(),
        [Some(2), None]
    );
    let by_id = |pairs: Vec<(&str, Decision)>| Resume::decisions_by_id(pairs);

    // Without a name an approval of a two-approver call is refused, naming the call; so is modifiedArgs.
    let e = block_on(agent.resume(cp.clone(), by_id(vec![("big", Decision::approve())]))).unwrap_err();
    assert!(
        matches!(&e, AgentError::Decision { id: Some(id), problem } if id == "big" && problem.contains("2 distinct approvers")),
        "{e}"
    );
    let e = block_on(agent.resume(
        cp.clone(),
        by_id(vec![("big", Decision::approve_with(json!({"amount": 1})).by("ann"))]),
    ))
    .unwrap_err();
    assert!(e.to_string().contains("modifiedArgs"), "{e}");
    // Ann approves the big one only: the run stays paused (the small one may wait too), her approval recorded.
    let first = block_on(agent.resume(cp, by_id(vec![("big", Decision::approve().by("ann"))]))).unwrap();
    assert!(first.is_interrupted());
    let cp = stored(&first);
    assert_eq!(cp.interrupts.len(), 2);
    assert_eq!(
        cp.interrupts[0]
            .approvals
            .iter()
            .map(|a| a.by.as_str())
            .collect::<Vec<_>>(),
        ["ann"]
    );
    // Ann again, and the small one: still one approver of two.
    let again = block_on(agent.resume(
        cp,
        by_id(vec![
            ("big", Decision::approve().by("ann")),
            ("small", Decision::approve().by("ann")),
        ]),
    ))
    .unwrap();
    let cp = stored(&again);
    assert_eq!(cp.interrupts.len(), 1);
    assert_eq!(cp.interrupts[0].approvals.len(), 1);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing of the turn runs while a call waits"
    );
    // Bob makes two: every call runs once and the run completes.
    let done = block_on(agent.resume(cp.clone(), by_id(vec![("big", Decision::approve().by("bob"))]))).unwrap();
    assert_eq!(done.assert_complete().unwrap().text, "finished");
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // From the same pause, Bob denies instead: denied, whoever approved before; the model reads who denied.
    let done = block_on(agent.resume(cp, by_id(vec![("big", Decision::deny("too much").by("bob"))])))
        .unwrap()
        .assert_complete()
        .unwrap();
    let results: Vec<_> = done.checkpoint.messages[2].tool_results().collect();
    assert!(
        results[0].is_error && results[0].content.contains("\"bob\" denied this call to pay"),
        "{}",
        results[0].content
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "only the small payment (approved by Ann) ran on this branch"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn remember_never_lowers_several_approvers_and_undecided_interrupts_need_a_multi_approver_pause() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = TestModel::by_turn([
        turn(vec![call("c1", "pay", json!({"amount": 900}))]),
        turn(vec![call("c2", "pay", json!({"amount": 900}))]),
        ModelResponse::text("ok"),
    ]);
    let agent = builder(model, &runs).build().unwrap();
    let cp = stored(&block_on(agent.prompt("pay")).unwrap());
    let remember = |by: &str| Decision::approve_and_remember().by(by);
    let cp = stored(&block_on(agent.resume(cp, Resume::decisions_by_id([("c1", remember("ann"))]))).unwrap());
    let out = block_on(agent.resume(cp, Resume::decisions_by_id([("c1", remember("bob"))]))).unwrap();
    // c1 ran; c2 asks two approvers again, and nothing was remembered.
    let cp = stored(&out);
    assert!(cp.remembered.is_empty());
    assert_eq!(
        (cp.interrupts[0].id.as_str(), cp.interrupts[0].approvers),
        ("c2", Some(2))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Where every pending interrupt waits for one approver, each needs a decision.
    let model = TestModel::by_turn([turn(vec![call("a", "pay", json!({})), call("b", "pay", json!({}))])]);
    let agent = builder(model, &runs).build().unwrap();
    let cp = stored(&block_on(agent.prompt("pay")).unwrap());
    let e = block_on(agent.resume(cp, Resume::decisions_by_id([("a", Decision::approve())]))).unwrap_err();
    assert!(
        matches!(&e, AgentError::Decision { id: Some(id), .. } if id == "b"),
        "{e}"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_budget_counts_usage_across_resumes_and_a_larger_one_continues() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = || {
        TestModel::by_turn([
            turn(vec![call("c1", "pay", json!({"amount": 1}))]).with_usage(40, 20),
            turn(vec![call("c2", "look", json!({}))]).with_usage(40, 20),
            ModelResponse::text("done").with_usage(40, 20),
        ])
    };
    let agent = builder(script(), &runs)
        .budget(Budget::total_tokens(100))
        .build()
        .unwrap();
    let paused = block_on(agent.prompt("go")).unwrap();
    assert!(
        paused.is_interrupted(),
        "60 tokens of 100: the run goes on to its pause"
    );
    // A new process resumes: the usage in the checkpoint counts.
    let e = block_on(agent.resume(stored(&paused), Resume::decisions([Decision::approve()]))).unwrap_err();
    let AgentError::BudgetExceeded {
        limit,
        usage,
        checkpoint,
        ..
    } = e
    else {
        panic!("expected BudgetExceeded, got {e:?}")
    };
    assert_eq!((limit, usage.input_tokens + usage.output_tokens), ("totalTokens", 120));
    assert_eq!(checkpoint.iterations, 2, "the third model call was refused");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the calls of the second turn ran before the budget stopped it"
    );
    // A larger budget continues from the error's checkpoint; nothing runs twice.
    let text = Checkpoint::from_json(&checkpoint.to_json()).unwrap();
    let more = builder(script(), &runs)
        .budget(Budget::total_tokens(1000))
        .build()
        .unwrap();
    let done = block_on(more.resume(text, "")).unwrap().assert_complete().unwrap();
    assert_eq!(done.text, "done");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // An output-token limit on its own.
    let tight = builder(script(), &runs)
        .budget(Budget::default().output_tokens(20))
        .build()
        .unwrap();
    let e = block_on(tight.resume(stored(&paused), Resume::decisions([Decision::approve()]))).unwrap_err();
    assert!(
        matches!(
            e,
            AgentError::BudgetExceeded {
                limit: "outputTokens",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("reaching its outputTokens of 20"), "{e}");
}

/// Signing goes through Web Crypto on wasm32 (asynchronous): awaited there, blocked on natively.
async fn a_signed_checkpoint_is_bound_to_the_policy() {
    let runs = Arc::new(AtomicUsize::new(0));
    let keys = || CheckpointKeys::new("k1").key("k1", b"0123456789abcdef0123456789abcdef");
    let model = || TestModel::by_turn([turn(vec![call("c1", "pay", json!({}))]), ModelResponse::text("ok")]);
    let agent = builder(model(), &runs).checkpoint_keys(keys()).build().unwrap();
    let paused = agent.prompt("pay").await.unwrap();
    let text = paused.checkpoint().to_json();
    // The same tools under a different (looser) policy are another agent.
    let loose = Agent::builder(model())
        .tool(counted("pay", &runs))
        .tool(counted("wipe", &runs))
        .tool(counted("look", &runs))
        .approval_policy(approval_policy("allow-all", |_, _| async { Ok(PolicyDecision::Allow) }))
        .checkpoint_keys(keys())
        .build()
        .unwrap();
    let e = loose
        .resume(
            Checkpoint::from_json(&text).unwrap(),
            Resume::decisions([Decision::approve()]),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("BINDING"), "{e}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let same = builder(model(), &runs).checkpoint_keys(keys()).build().unwrap();
    let done = same
        .resume(
            Checkpoint::from_json(&text).unwrap(),
            Resume::decisions([Decision::approve()]),
        )
        .await;
    assert!(done.unwrap().assert_complete().is_ok());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn a_signed_checkpoint_is_bound_to_the_policy_natively() {
    block_on(a_signed_checkpoint_is_bound_to_the_policy());
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test::wasm_bindgen_test]
async fn a_signed_checkpoint_is_bound_to_the_policy_in_wasm() {
    a_signed_checkpoint_is_bound_to_the_policy().await;
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn checkpoints_with_broken_approval_bookkeeping_are_refused_by_path() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = TestModel::by_turn([turn(vec![call("c1", "pay", json!({"amount": 900}))])]);
    let agent = builder(model, &runs).build().unwrap();
    let cp = block_on(agent.prompt("pay")).unwrap().checkpoint().clone();
    let mut v: Value = serde_json::from_str(&cp.to_json()).unwrap();
    let refused = |v: &Value| Checkpoint::from_json(&v.to_string()).unwrap_err();
    let mut full = v.clone();
    full["interrupts"][0]["approvals"] = json!([{"by": "ann", "at": 1}, {"by": "bob", "at": 2}]);
    assert_eq!(refused(&full).path(), Some("interrupts[0].approvals"));
    let mut twice = v.clone();
    twice["interrupts"][0]["approvals"] = json!([{"by": "ann", "at": 1}]);
    twice["interrupts"][0]["approvers"] = json!(3);
    assert!(Checkpoint::from_json(&twice.to_string()).is_ok());
    twice["interrupts"][0]["approvals"] = json!([{"by": "ann", "at": 1}, {"by": "ann", "at": 2}]);
    assert_eq!(refused(&twice).path(), Some("interrupts[0].approvals[1].by"));
    let mut one = v.clone();
    one["interrupts"][0]["approvers"] = json!(1);
    assert_eq!(refused(&one).path(), Some("interrupts[0].approvers"));
    v["remembered"] = json!(["has space"]);
    assert_eq!(refused(&v).path(), Some("remembered[0]"));
    v["remembered"] = json!([7]);
    assert_eq!(refused(&v).path(), Some("remembered[0]"));
}

/// The payments agent of these tests as deployed later: `pay` takes a currency now, `refund` is new, `wipe` went.
fn v2(model: Arc<TestModel>, runs: &Arc<AtomicUsize>, on_drift: OnDrift) -> Agent {
    let counted_with = |name: &'static str, schema: Value| {
        let runs = runs.clone();
        tool(name, "Does it.", schema, move |_, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!("done")) }
        })
    };
    Agent::builder(model)
        .tool(counted_with(
            "pay",
            json!({"type": "object", "properties": {"currency": {"type": "string"}}}),
        ))
        .tool(counted_with("look", json!({"type": "object"})))
        .tool(counted_with("refund", json!({"type": "object"})))
        .approval_policy(payments_policy())
        .on_drift(on_drift)
        .build()
        .unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_run_paused_under_one_agent_and_resumed_under_a_changed_one_is_refused_by_default_naming_the_drift() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = || {
        TestModel::by_turn([
            turn(vec![call("c1", "pay", json!({"amount": 5}))]),
            ModelResponse::text("ok"),
        ])
    };
    let paused = block_on(builder(script(), &runs).build().unwrap().prompt("pay")).unwrap();
    let cp = stored(&paused);
    let fp = cp.fingerprint.clone().unwrap();
    assert_eq!(fp.tools.keys().collect::<Vec<_>>(), ["look", "pay", "wipe"]);
    assert!(fp.approval.is_some() && fp.instructions.is_none());
    let e = block_on(v2(script(), &runs, OnDrift::Error).resume(cp.clone(), Resume::decisions([Decision::approve()])))
        .unwrap_err();
    let AgentError::ConfigDrift { drift, checkpoint } = &e else {
        panic!("expected ConfigDrift, got {e:?}")
    };
    assert_eq!(
        (&drift.added[..], &drift.removed[..], &drift.changed[..]),
        (
            &["refund".to_owned()][..],
            &["wipe".to_owned()][..],
            &["pay".to_owned()][..]
        )
    );
    assert_eq!(**checkpoint, cp, "the checkpoint is handed back as it was");
    assert!(
        e.to_string()
            .contains("added: [refund], removed: [wipe], changed: [pay]"),
        "{e}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // 'continue' goes on as if nothing changed; the new checkpoint records the new agent.
    let done = block_on(v2(script(), &runs, OnDrift::Continue).resume(cp, Resume::decisions([Decision::approve()])))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(done.checkpoint.fingerprint.unwrap().tools.contains_key("refund"));
}

/// `pay` (its schema given), `look` (approval by its own rule) and `ask` (a question), under the payments policy.
fn drifting(model: Arc<TestModel>, runs: &Arc<AtomicUsize>, pay_schema: Value, on_drift: OnDrift) -> Agent {
    let (r1, r2) = (runs.clone(), runs.clone());
    // One call at a time: a question before the payment pauses the run before the payment runs.
    Agent::builder(model)
        .tool_concurrency(1)
        .tool(tool("pay", "Pays.", pay_schema, move |_, _| {
            r1.fetch_add(1, Ordering::SeqCst);
            async { Ok(json!("paid")) }
        }))
        .tool(
            tool("look", "Looks.", json!({"type": "object"}), move |_, _| {
                r2.fetch_add(1, Ordering::SeqCst);
                async { Ok(json!("seen")) }
            })
            .needs_approval(),
        )
        .tool(tool("ask", "Asks.", json!({"type": "object"}), |_, ctx| {
            let answered = ctx.input().is_some();
            async move {
                if answered {
                    Ok(json!("answered"))
                } else {
                    Err(resumable_agent::InterruptError::new("Which account?").into())
                }
            }
        }))
        .approval_policy(payments_policy())
        .on_drift(on_drift)
        .build()
        .unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn reapprove_asks_again_for_the_changed_tools_only_setting_their_decisions_aside() {
    let runs = Arc::new(AtomicUsize::new(0));
    let schema1 = json!({"type": "object"});
    let schema2 = json!({"type": "object", "properties": {"amount": {"type": "number"}}});
    let model = || {
        TestModel::by_turn([
            turn(vec![
                call("p", "pay", json!({"amount": 900})),
                call("l", "look", json!({})),
            ]),
            ModelResponse::text("ok"),
        ])
    };
    let v1 = drifting(model(), &runs, schema1, OnDrift::Error);
    let cp = stored(&block_on(v1.prompt("go")).unwrap());
    // Ann approves the payment under v1 (one of two).
    let cp = stored(&block_on(v1.resume(cp, Resume::decisions_by_id([("p", Decision::approve().by("ann"))]))).unwrap());
    assert_eq!(cp.interrupts[0].approvals.len(), 1);
    // v2 changed pay's schema. Bob's approval of the payment and an approval of look arrive.
    let v2 = drifting(model(), &runs, schema2, OnDrift::Reapprove);
    let mut drifts = Vec::new();
    let out = block_on(v2.run(
        Input::resume(
            cp,
            Resume::decisions_by_id([("p", Decision::approve().by("bob")), ("l", Decision::approve())]),
        ),
        &mut |e: &Event<'_>| {
            if let Event::ConfigDrift { changed, .. } = e {
                drifts.push(changed.to_vec());
            }
        },
    ))
    .unwrap();
    assert_eq!(drifts, [vec!["pay".to_owned()]]);
    // look's approval stands; the payment is asked again, fresh: Ann's approval under v1 does not count.
    let cp = stored(&out);
    assert_eq!(cp.interrupts.len(), 1);
    assert_eq!(
        (cp.interrupts[0].id.as_str(), cp.interrupts[0].approvals.len()),
        ("p", 0)
    );
    assert_eq!(cp.approved, ["l"]);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing of the turn ran");
    // Two approvers under v2: both calls run once.
    let v2 = drifting(
        model(),
        &runs,
        json!({"type": "object", "properties": {"amount": {"type": "number"}}}),
        OnDrift::Reapprove,
    );
    let cp = stored(&block_on(v2.resume(cp, Resume::decisions_by_id([("p", Decision::approve().by("ann"))]))).unwrap());
    let done = block_on(v2.resume(cp, Resume::decisions_by_id([("p", Decision::approve().by("bob"))]))).unwrap();
    assert_eq!(done.assert_complete().unwrap().text, "ok");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn reapprove_asks_again_for_an_approved_call_that_has_not_run_and_a_finished_run_only_reports_drift() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = || {
        TestModel::by_turn([
            turn(vec![
                call("q", "ask", json!({})),
                call("p", "pay", json!({"amount": 5})),
            ]),
            ModelResponse::text("ok"),
            ModelResponse::text("again"),
        ])
    };
    let v1 = drifting(model(), &runs, json!({"type": "object"}), OnDrift::Error);
    let cp = stored(&block_on(v1.prompt("go")).unwrap());
    // The payment is approved; the question of the call before it pauses the run: the payment has not run.
    let cp = stored(&block_on(v1.resume(cp, Resume::decisions([Decision::approve()]))).unwrap());
    assert_eq!(
        (cp.interrupts[0].id.as_str(), &cp.approved[..]),
        ("q", &["p".to_owned()][..])
    );
    let v2 = drifting(
        model(),
        &runs,
        json!({"type": "object", "properties": {"amount": {"type": "integer"}}}),
        OnDrift::Reapprove,
    );
    let out = block_on(v2.resume(cp, "savings")).unwrap();
    let cp = stored(&out);
    assert_eq!(
        cp.interrupts.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(),
        ["p"],
        "asked again"
    );
    assert!(cp.approved.is_empty());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let done = block_on(v2.resume(cp, Resume::decisions([Decision::approve()])))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A finished run continued by another agent: the drift is reported, and the run goes on (nothing is pending).
    let v3 = drifting(model(), &runs, json!({"type": "object"}), OnDrift::Error);
    let mut drifted = false;
    let again = block_on(
        v3.run(Input::resume(done.checkpoint, "once more"), &mut |e: &Event<'_>| {
            drifted |= matches!(e, Event::ConfigDrift { .. });
        }),
    )
    .unwrap();
    assert!(drifted);
    assert_eq!(again.assert_complete().unwrap().text, "again");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_changed_policy_is_drift_of_every_tool_and_checkpoints_without_a_fingerprint_resume_as_before() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = || {
        TestModel::by_turn([
            turn(vec![call("c1", "pay", json!({"amount": 5}))]),
            ModelResponse::text("ok"),
        ])
    };
    let cp = stored(&block_on(builder(model(), &runs).build().unwrap().prompt("pay")).unwrap());
    let stricter = |on_drift| {
        Agent::builder(model())
            .tool(counted("pay", &runs))
            .tool(counted("wipe", &runs))
            .tool(counted("look", &runs))
            .approval_policy(approval_policy("stricter", |_, _| async {
                Ok(PolicyDecision::ask_approvers(2))
            }))
            .on_drift(on_drift)
            .build()
            .unwrap()
    };
    let e =
        block_on(stricter(OnDrift::Error).resume(cp.clone(), Resume::decisions([Decision::approve()]))).unwrap_err();
    assert!(
        matches!(&e, AgentError::ConfigDrift { drift, .. } if drift.changed == ["approval"]),
        "{e:?}"
    );
    // Asked again: the decision sent for the old interrupt is set aside.
    let out =
        block_on(stricter(OnDrift::Reapprove).resume(cp.clone(), Resume::decisions([Decision::approve()]))).unwrap();
    assert!(out.is_interrupted());
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // A checkpoint of an older release (no fingerprint) resumes without a check, and gets one.
    let mut old = cp;
    old.fingerprint = None;
    let done = block_on(stricter(OnDrift::Error).resume(old, Resume::decisions([Decision::approve()]))).unwrap();
    assert!(
        done.checkpoint()
            .fingerprint
            .as_ref()
            .is_some_and(|f| f.approval.is_some())
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_spent_budget_that_asks_pauses_between_turns_and_a_raise_or_a_denial_answers_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = || {
        TestModel::by_turn([
            turn(vec![call("c1", "look", json!({}))]).with_usage(40, 20),
            turn(vec![call("c2", "look", json!({}))]).with_usage(40, 20),
            turn(vec![call("c3", "look", json!({}))]).with_usage(40, 20),
            ModelResponse::text("done").with_usage(40, 20),
        ])
    };
    let agent = builder(script(), &runs)
        .budget(Budget::total_tokens(100).ask())
        .build()
        .unwrap();
    let paused = block_on(agent.prompt("go")).unwrap();
    let cp = stored(&paused);
    let i = &cp.interrupts[0];
    assert_eq!(
        (i.kind, i.id.as_str(), cp.iterations),
        (resumable_agent::InterruptKind::Budget, "budget", 2)
    );
    assert_eq!(i.input["limit"], "totalTokens");
    assert_eq!(i.input["usage"], json!({"inputTokens": 80, "outputTokens": 40}));
    assert!(paused.question().unwrap().contains("80 input and 40 output tokens"));
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    // Decisions that do not raise it enough, or that are not a raise, are refused by name.
    let refused = |d: Decision| {
        block_on(agent.resume(cp.clone(), Resume::decisions([d])))
            .unwrap_err()
            .to_string()
    };
    assert!(refused(Decision::approve()).contains("budget: missing"));
    assert!(refused(Decision::raise_budget(Budget::total_tokens(110))).contains("still reaches the totalTokens"));
    assert!(refused(Decision::answer("more")).contains("for a budget request"));
    // Raised to 150: one more model call, then it asks again (the raise is kept in the checkpoint).
    let more = block_on(agent.resume(
        cp.clone(),
        Resume::decisions([Decision::raise_budget(Budget::total_tokens(150))]),
    ))
    .unwrap();
    let again = stored(&more);
    assert_eq!(again.budget.map(|b| b.total_tokens), Some(Some(150)));
    assert_eq!((again.interrupts[0].id.as_str(), again.iterations), ("budget", 3));
    let answer = Resume::from_answer_json(r#"{"type":"approve","budget":{"totalTokens":1000}}"#).unwrap();
    let done = block_on(agent.resume(again, answer))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!((done.text.as_str(), runs.load(Ordering::SeqCst)), ("done", 3));
    // A denial ends the run in BudgetExceeded, its checkpoint no longer paused.
    let e = block_on(agent.resume(cp, Resume::decisions([Decision::deny("enough")]))).unwrap_err();
    let AgentError::BudgetExceeded { checkpoint, .. } = e else {
        panic!("expected BudgetExceeded")
    };
    assert!(checkpoint.interrupts.is_empty() && Checkpoint::from_json(&checkpoint.to_json()).is_ok());
    // A raise is only for a budget request.
    let model = TestModel::by_turn([turn(vec![call("p", "pay", json!({"amount": 1}))])]);
    let cp = stored(&block_on(builder(model.clone(), &runs).build().unwrap().prompt("pay")).unwrap());
    let e = block_on(
        builder(model, &runs)
            .build()
            .unwrap()
            .resume(cp, Resume::decisions([Decision::raise_budget(Budget::total_tokens(5))])),
    )
    .unwrap_err();
    assert!(e.to_string().contains("only a budget request takes one"), "{e}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_policy_that_lets_every_call_run_costs_no_checkpoint_of_its_own() {
    let runs = Arc::new(AtomicUsize::new(0));
    let script = || {
        TestModel::by_turn([
            turn(vec![call("c1", "look", json!({}))]),
            turn(vec![call("c2", "look", json!({}))]),
            ModelResponse::text("done"),
        ])
    };
    let checkpoints = |agent: Agent| {
        let mut n = 0;
        block_on(agent.run(Input::prompt("go"), &mut |e: &Event<'_>| {
            n += usize::from(matches!(e, Event::Checkpoint { .. }));
        }))
        .unwrap();
        n
    };
    let plain = checkpoints(Agent::builder(script()).tool(counted("look", &runs)).build().unwrap());
    let policed = checkpoints(builder(script(), &runs).build().unwrap());
    assert_eq!(
        policed, plain,
        "a session saves no more often under a policy that allows"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}

/// The sans-IO run's own knobs for what the agent does with a policy and a budget: `review_all` lists every call for
/// review, `budget` ends in `OverBudget` once usage reaches it (or pauses on the budget interrupt when it asks).
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_state_machine_reviews_every_call_and_stops_at_the_budget_when_told_to() {
    use resumable_agent::{Run, RunConfig, Step, ToolDefinition, ToolOutcome};
    let tools = || [ToolDefinition::new("look", "Looks.", json!({"type": "object"}))];
    let plain = RunConfig::new(tools());
    let policed = RunConfig::new(tools()).review_all().budget(Budget::total_tokens(30));
    let reply = || turn(vec![call("c1", "look", json!({}))]).with_usage(20, 10);
    let mut run = Run::start(&plain, "go", "r", 0);
    assert_eq!(run.next_step(), Step::CallModel);
    run.model_replied(reply(), 1).unwrap();
    assert!(
        matches!(run.next_step(), Step::CallTool(_)),
        "no review without a policy"
    );
    let mut run = Run::start(&policed, "go", "r", 0);
    assert_eq!(run.next_step(), Step::CallModel);
    run.model_replied(reply(), 1).unwrap();
    assert!(matches!(run.next_step(), Step::Review(calls) if calls.len() == 1));
    run.reviewed(Vec::new(), 2);
    let Step::CallTool(c) = run.next_step() else {
        panic!("expected the call")
    };
    run.tool_finished(&c.id, ToolOutcome::Output("seen".into()), 3);
    assert_eq!(run.next_step(), Step::OverBudget("totalTokens"));
    let asking = RunConfig::new(tools()).budget(Budget::total_tokens(30).ask());
    let mut run = Run::start(&asking, "go", "r", 0);
    run.next_step();
    run.model_replied(reply(), 1).unwrap();
    let Step::CallTool(c) = run.next_step() else {
        panic!("expected the call")
    };
    run.tool_finished(&c.id, ToolOutcome::Output("seen".into()), 3);
    assert_eq!(run.next_step(), Step::Paused);
    assert_eq!(run.checkpoint().interrupts[0].id, resumable_agent::BUDGET_INTERRUPT);
}
