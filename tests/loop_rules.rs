//! The loop's rules, one test (or a few) per rule, through the public Rust API.
//! Each runs natively and, compiled to wasm32, in Node under wasm-bindgen-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use common::*;
use resumable_agent::{
    AgentError, Checkpoint, CheckpointError, Content, ContentBlock, ModelError, ModelResponse, Outcome, Role,
};
use serde_json::json;

fn roundtrip(cp: &Checkpoint) -> Checkpoint {
    Checkpoint::from_json(&cp.to_json()).expect("a checkpoint we wrote must decode")
}

fn result_blocks(m: &resumable_agent::Message) -> Vec<(String, String, bool)> {
    m.tool_results()
        .map(|r| (r.tool_use_id.clone(), r.content.clone(), r.is_error))
        .collect()
}

// ---- rule 1 --------------------------------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule1_text_only_completes_with_joined_text_usage_and_one_iteration() {
    let model =
        TestModel::new([turn(vec![ContentBlock::text("Hello, "), ContentBlock::text("world.")]).with_usage(12, 3)]);
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let done = block_on(agent.prompt("Hi")).unwrap().assert_complete().unwrap();
    assert_eq!(done.text, "Hello, world.");
    assert_eq!(done.iterations(), 1);
    assert_eq!((done.usage().input_tokens, done.usage().output_tokens), (12, 3));
    assert_eq!(done.messages().len(), 2);
    assert_eq!(done.messages()[0].text(), "Hi");
    assert_eq!(model.systems.lock().unwrap()[0].as_deref(), Some("Be brief."));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule1_calls_run_in_order_and_are_answered_in_one_message_including_errors() {
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![
            ContentBlock::text("Working."),
            call("a", "lookup", json!({"key": "x"})),
            call("b", "nope", json!({})),
            call("c", "fail", json!({"why": "disk"})),
            call("d", "lookup", json!({"key": "y"})),
        ]),
        ModelResponse::text("All done."),
    ]);
    let agent = agent_with(model.clone(), &counters).build().unwrap();
    let done = block_on(agent.prompt("Go")).unwrap().assert_complete().unwrap();
    assert_eq!(done.text, "All done.");
    assert_eq!(done.iterations(), 2);
    let answers = &done.messages()[2];
    assert_eq!(answers.role, Role::User);
    let results = result_blocks(answers);
    assert_eq!(results.len(), 4);
    assert_eq!(results[0], ("a".into(), r#"{"key":"x","value":"v-x"}"#.into(), false));
    assert_eq!(results[1].0, "b");
    assert!(results[1].2, "an unknown tool is an error result");
    assert!(results[1].1.contains("unknown tool \"nope\""), "{}", results[1].1);
    assert!(
        results[1].1.contains("lookup, ask_user, fail"),
        "lists the tools: {}",
        results[1].1
    );
    assert_eq!(results[2], ("c".into(), "boom: disk".into(), true));
    assert_eq!(results[3], ("d".into(), r#"{"key":"y","value":"v-y"}"#.into(), false));
    assert_eq!(Counters::get(&counters.lookup), 2);
    // The model saw the results before answering.
    assert_eq!(model.last_request().len(), 3);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule1_string_outputs_go_to_the_model_as_is() {
    let echo = resumable_agent::tool("echo", "Echo.", json!({"type": "object"}), |input, _| async move {
        Ok(input["say"].clone())
    });
    let model = TestModel::new([
        turn(vec![call("e", "echo", json!({"say": "plain \"text\""}))]),
        ModelResponse::text("ok"),
    ]);
    let agent = resumable_agent::Agent::builder(model).tool(echo).build().unwrap();
    let done = block_on(agent.prompt("x")).unwrap().assert_complete().unwrap();
    assert_eq!(result_blocks(&done.messages()[2])[0].1, "plain \"text\"");
}

// ---- rule 2 --------------------------------------------------------------------------------------------

fn three_calls_with_interrupt_in_the_middle() -> ModelResponse {
    turn(vec![
        call("c1", "lookup", json!({"key": "k1"})),
        call("c2", "ask_user", json!({"question": "Your deadline?"})),
        call("c3", "lookup", json!({"key": "k3"})),
    ])
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule2_interrupt_stops_at_once_keeping_earlier_results_and_not_running_later_calls() {
    let counters = Counters::default();
    let model = TestModel::new([three_calls_with_interrupt_in_the_middle()]);
    // The reference's rule, kept by `tool_concurrency(1)` (by default the calls run together: see
    // `rule2_with_calls_running_together_the_others_finish_and_none_runs_again`).
    let agent = agent_with(model, &counters).tool_concurrency(1).build().unwrap();
    let outcome = block_on(agent.prompt("Plan")).unwrap();
    let Outcome::Interrupted(paused) = outcome else {
        panic!("expected an interrupt")
    };
    assert_eq!(paused.question, "Your deadline?");
    let cp = &paused.checkpoint;
    assert_eq!(cp.pending_tool_use_id.as_deref(), Some("c2"));
    assert_eq!(cp.question.as_deref(), Some("Your deadline?"));
    assert_eq!(cp.tool_results.len(), 1);
    assert_eq!(cp.tool_results[0].tool_use_id, "c1");
    assert_eq!(Counters::get(&counters.lookup), 1, "c3 must not have run");
    assert_eq!(cp.messages.last().unwrap().role, Role::Assistant);
}

// ---- rule 3 --------------------------------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule3_resume_answers_the_pending_call_runs_the_rest_and_never_repeats_a_call() {
    let counters = Counters::default();
    let model = TestModel::new([
        three_calls_with_interrupt_in_the_middle(),
        ModelResponse::text("Planned."),
    ]);
    let agent = agent_with(model.clone(), &counters).build().unwrap();
    let paused = block_on(agent.prompt("Plan")).unwrap();
    let restored = roundtrip(paused.checkpoint());

    // A different agent object, as in a new process; the counters are shared so we see every run.
    let agent2 = agent_with(model.clone(), &counters).build().unwrap();
    let done = block_on(agent2.resume(restored, "end of Q2"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Planned.");
    assert_eq!(
        Counters::get(&counters.lookup),
        2,
        "c1 once before the pause, c3 once after"
    );
    assert_eq!(
        Counters::get(&counters.ask),
        1,
        "the interrupting call is answered, not re-run"
    );
    let results = result_blocks(&done.messages()[2]);
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids, ["c1", "c2", "c3"], "results in call order");
    assert_eq!(results[1].1, "end of Q2");
    assert!(done.checkpoint.pending_tool_use_id.is_none());
    assert!(done.checkpoint.tool_results.is_empty());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule3_a_second_interrupt_in_the_same_turn_pauses_again() {
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![
            call("q1", "ask_user", json!({"question": "First?"})),
            call("l1", "lookup", json!({"key": "z"})),
            call("q2", "ask_user", json!({"question": "Second?"})),
        ]),
        ModelResponse::text("Both answered."),
    ]);
    let agent = agent_with(model, &counters).build().unwrap();
    let first = block_on(agent.prompt("Go")).unwrap();
    assert_eq!(first.question(), Some("First?"));
    let second = block_on(agent.resume(roundtrip(first.checkpoint()), "one")).unwrap();
    assert_eq!(second.question(), Some("Second?"), "the second question is not lost");
    assert_eq!(second.checkpoint().pending_tool_use_id.as_deref(), Some("q2"));
    assert_eq!(Counters::get(&counters.lookup), 1);
    let done = block_on(agent.resume(roundtrip(second.checkpoint()), "two"))
        .unwrap()
        .assert_complete()
        .unwrap();
    let contents: Vec<String> = result_blocks(&done.messages()[2]).into_iter().map(|r| r.1).collect();
    assert_eq!(contents, ["one", r#"{"key":"z","value":"v-z"}"#, "two"]);
    assert_eq!(Counters::get(&counters.lookup), 1, "l1 ran exactly once");
}

// ---- rule 4 --------------------------------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule4_non_empty_answer_without_pending_call_is_a_new_user_turn() {
    let model = TestModel::new([ModelResponse::text("First."), ModelResponse::text("Second.")]);
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let first = block_on(agent.prompt("One")).unwrap();
    let done = block_on(agent.resume(roundtrip(first.checkpoint()), "Two"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Second.");
    let sent = model.last_request();
    assert_eq!(sent.len(), 3);
    assert_eq!((sent[2].role, sent[2].text()), (Role::User, "Two".to_owned()));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule4_empty_answer_on_a_finished_run_returns_its_text_without_a_model_call() {
    let model = TestModel::new([ModelResponse::text("The analysis.")]);
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let first = block_on(agent.prompt("Analyse")).unwrap().assert_complete().unwrap();
    let again = block_on(agent.resume(roundtrip(&first.checkpoint), ""))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(again.text, "The analysis.");
    assert_eq!(model.calls(), 1, "no second model call");
    assert_eq!(
        again.messages(),
        first.messages(),
        "nothing injected (the reference added an undefined tool_result)"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule4_empty_answer_after_a_user_message_calls_the_model() {
    let cp = Checkpoint::from_json(
        r#"{"messages":[{"role":"user","content":"Hi"}],"iterations":0,"usage":{"inputTokens":0,"outputTokens":0}}"#,
    )
    .unwrap();
    let model = TestModel::new([ModelResponse::text("Hello.")]);
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let done = block_on(agent.resume(cp, "")).unwrap().assert_complete().unwrap();
    assert_eq!(done.text, "Hello.");
    assert_eq!(model.last_request().len(), 1);
}

// ---- rule 5 --------------------------------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule5_iterations_and_usage_continue_across_resumes() {
    let model = TestModel::new([
        turn(vec![call("q", "ask_user", json!({"question": "?"}))]).with_usage(100, 10),
        ModelResponse::text("done").with_usage(150, 20),
    ]);
    let agent = agent_with(model, &Counters::default()).build().unwrap();
    let paused = block_on(agent.prompt("x")).unwrap();
    assert_eq!(paused.checkpoint().iterations, 1);
    let done = block_on(agent.resume(roundtrip(paused.checkpoint()), "a"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.iterations(), 2);
    assert_eq!((done.usage().input_tokens, done.usage().output_tokens), (250, 30));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule5_max_iterations_bounds_the_total_across_resumes_and_the_error_keeps_the_run() {
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![call("l1", "lookup", json!({"key": "a"}))]),
        turn(vec![call("q", "ask_user", json!({"question": "Go on?"}))]),
        turn(vec![call("l2", "lookup", json!({"key": "b"}))]),
        ModelResponse::text("finally"),
    ]);
    let agent = agent_with(model.clone(), &counters).max_iterations(3).build().unwrap();
    let paused = block_on(agent.prompt("x")).unwrap();
    assert_eq!(paused.checkpoint().iterations, 2);
    let err = block_on(agent.resume(roundtrip(paused.checkpoint()), "yes")).unwrap_err();
    let AgentError::MaxIterations { limit, checkpoint } = &err else {
        panic!("expected MaxIterations, got {err:?}")
    };
    assert_eq!(*limit, 3);
    assert_eq!(checkpoint.iterations, 3);
    assert_eq!(model.calls(), 3, "the fourth call was not made");
    assert!(err.to_string().contains("max iterations"), "{err}");
    // Nothing is lost: the answer and l2's result are in the error's checkpoint.
    let last = checkpoint.messages.last().unwrap();
    assert_eq!(result_blocks(last)[0].0, "l2");
    assert!(
        checkpoint
            .messages
            .iter()
            .any(|m| m.tool_results().any(|r| r.content == "yes"))
    );
    // A higher limit continues from there without repeating anything.
    let agent = agent_with(model.clone(), &counters).max_iterations(10).build().unwrap();
    let done = block_on(agent.resume(roundtrip(checkpoint), ""))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "finally");
    assert_eq!(done.iterations(), 4);
    assert_eq!(Counters::get(&counters.lookup), 2);
}

// ---- rule 6 is checked on every request by TestModel; this one stresses it --------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule6_every_request_is_provider_valid_through_interrupts_errors_and_unknown_tools() {
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![
            call("a", "fail", json!({})),
            call("b", "ask_user", json!({"question": "1"})),
            call("c", "zzz", json!({})),
        ]),
        turn(vec![
            call("d", "ask_user", json!({"question": "2"})),
            call("e", "ask_user", json!({"question": "3"})),
        ]),
        ModelResponse::text("end"),
    ]);
    let agent = agent_with(model.clone(), &counters).build().unwrap();
    let mut outcome = block_on(agent.prompt("go")).unwrap();
    let mut answers = 0;
    while let Outcome::Interrupted(p) = outcome {
        answers += 1;
        outcome = block_on(agent.resume(roundtrip(&p.checkpoint), &format!("answer {answers}"))).unwrap();
    }
    assert_eq!(answers, 3);
    let done = outcome.assert_complete().unwrap();
    assert_provider_valid(done.messages());
    assert_eq!(model.calls(), 3);
}

// ---- rule 7 --------------------------------------------------------------------------------------------

fn resume_err(json: &str) -> (CheckpointError, usize) {
    let model = TestModel::new([ModelResponse::text("never")]);
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let err = match Checkpoint::from_json(json) {
        Err(e) => e,
        Ok(cp) => match block_on(agent.resume(cp, "answer")) {
            Err(AgentError::Checkpoint(e)) => e,
            other => panic!("expected a checkpoint error, got {other:?}"),
        },
    };
    (err, model.calls())
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule7_malformed_checkpoints_name_the_path_and_run_nothing() {
    let u = r#""iterations":1,"usage":{"inputTokens":0,"outputTokens":0}"#;
    let cases = [
        (
            format!(
                r#"{{"messages":[{{"role":"user","content":"a"}},{{"role":"assistant","content":"b"}},{{"role":"user","content":[{{"type":"foo"}}]}}],{u}}}"#
            ),
            r#"messages[2].content[0].type: unknown block type "foo" (expected text, image, image_base64, tool_use, tool_result, thinking, redacted_thinking or reasoning)"#,
        ),
        (
            format!(r#"{{"messages":[{{"role":"bot","content":"a"}}],{u}}}"#),
            r#"messages[0].role: expected "user", "assistant" or "system", got "bot""#,
        ),
        (
            format!(r#"{{"messages":{{}},{u}}}"#),
            "messages: expected an array, got object",
        ),
        (
            r#"{"messages":[],"usage":{"inputTokens":0,"outputTokens":0}}"#.to_owned(),
            "iterations: missing",
        ),
        (
            r#"{"messages":[],"iterations":-1,"usage":{"inputTokens":0,"outputTokens":0}}"#.to_owned(),
            "iterations: expected a non-negative integer, got number",
        ),
        (
            format!(
                r#"{{"messages":[{{"role":"assistant","content":[{{"type":"tool_use","name":"x","input":{{}}}}]}}],{u}}}"#
            ),
            "messages[0].content[0].id: missing",
        ),
        (
            format!(
                r#"{{"messages":[{{"role":"user","content":[{{"type":"tool_result","toolUseId":"t","content":3}}]}}],{u}}}"#
            ),
            "messages[0].content[0].content: expected a string, got number",
        ),
        (
            format!(
                r#"{{"messages":[{{"role":"user","content":"a"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"x","input":{{}}}}]}},{{"role":"user","content":[{{"type":"tool_result","toolUseId":"zz","content":"r"}}]}}],{u}}}"#
            ),
            r#"messages[2].content[0].toolUseId: "zz" answers no tool call of messages[1]"#,
        ),
        (
            format!(
                r#"{{"messages":[{{"role":"user","content":"a"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"x","input":{{}}}}]}}],"version":1,{u}}}"#
            ),
            "pendingToolUseId: missing, but messages[1] has tool calls without results",
        ),
        (
            format!(
                r#"{{"messages":[{{"role":"user","content":"a"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"t1","name":"x","input":{{}}}}]}}],"pendingToolUseId":"t9",{u}}}"#
            ),
            r#"pendingToolUseId: "t9" is not a tool call of the last message (messages[1])"#,
        ),
        (
            format!(r#"{{"messages":[{{"role":"user","content":"a"}}],"pendingToolUseId":"t1",{u}}}"#),
            r#"pendingToolUseId: "t1" is set but the last message has no tool calls to answer"#,
        ),
        ("[1,2]".to_owned(), "checkpoint: expected an object, got array"),
    ];
    for (json, want) in cases {
        let (err, calls) = resume_err(&json);
        assert_eq!(err.to_string(), want, "for {json}");
        assert_eq!(calls, 0, "no model call for {json}");
    }
    let (err, _) = resume_err("{not json");
    assert!(err.to_string().starts_with("checkpoint is not valid JSON: "), "{err}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule7_a_future_version_says_so() {
    let (err, calls) =
        resume_err(r#"{"version":7,"messages":[],"iterations":0,"usage":{"inputTokens":0,"outputTokens":0}}"#);
    assert_eq!(err, CheckpointError::UnsupportedVersion { found: 7, supported: 2 });
    assert!(
        err.to_string()
            .contains("version 7 is newer than this library supports (up to 2)"),
        "{err}"
    );
    assert_eq!(calls, 0);
    // Even when the rest of the shape is unknown to us.
    let (err, _) = resume_err(r#"{"version":3,"state":{"whatever":true}}"#);
    assert!(
        matches!(err, CheckpointError::UnsupportedVersion { found: 3, .. }),
        "{err:?}"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule7_a_failing_model_gives_an_error_with_the_last_consistent_checkpoint() {
    let counters = Counters::default();
    let model = TestModel::with_results([
        Ok(turn(vec![call("l", "lookup", json!({"key": "a"}))]).with_usage(5, 5)),
        Err(ModelError::Failed {
            name: Some("Error".into()),
            message: "overloaded".into(),
        }),
        Ok(ModelResponse::text("recovered")),
    ]);
    let agent = agent_with(model.clone(), &counters).build().unwrap();
    let err = block_on(agent.prompt("go")).unwrap_err();
    assert_eq!(err.to_string(), "model call failed: overloaded");
    let cp = err.checkpoint().expect("a model error carries the checkpoint").clone();
    assert_eq!(cp.iterations, 1);
    assert_eq!(
        cp.messages.len(),
        3,
        "prompt, tool call, its result: the paid-for work is kept"
    );
    assert_eq!(Counters::get(&counters.lookup), 1);
    let done = block_on(agent.resume(roundtrip(&cp), ""))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "recovered");
    assert_eq!(Counters::get(&counters.lookup), 1, "the tool did not run again");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn rule7_an_invalid_model_response_is_refused_whole() {
    let model = TestModel::new([turn(vec![
        call("x", "lookup", json!({})),
        call("x", "lookup", json!({})),
    ])]);
    let agent = agent_with(model, &Counters::default()).build().unwrap();
    let err = block_on(agent.prompt("go")).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"model response content[1]: tool_use id "x" appears twice in one response"#
    );
    assert_eq!(err.checkpoint().unwrap().messages.len(), 1);
    assert_eq!(err.checkpoint().unwrap().iterations, 0);
}

// ---- the reference's format -----------------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn reference_format_checkpoint_resumes() {
    // As the reference writes it: no version, no runId, pending call in the last assistant message.
    let json = r#"{"messages":[{"role":"user","content":"Plan my project."},
        {"role":"assistant","content":[{"type":"text","text":"Let me ask."},
        {"type":"tool_use","id":"toolu_1","name":"ask_user","input":{"question":"Your deadline?"}}]}],
        "iterations":1,"usage":{"inputTokens":40,"outputTokens":12},"pendingToolUseId":"toolu_1"}"#;
    let cp = Checkpoint::from_json(json).unwrap();
    assert_eq!(cp.version, 2, "upgraded to the current format");
    let model = TestModel::new([ModelResponse::text("Planned for Q2.").with_usage(60, 8)]);
    let agent = agent_with(model.clone(), &Counters::default()).build().unwrap();
    let done = block_on(agent.resume(cp, "end of Q2"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Planned for Q2.");
    assert_eq!(done.iterations(), 2);
    assert_eq!(done.usage().input_tokens, 100);
    assert_eq!(
        result_blocks(&model.last_request()[2]),
        [("toolu_1".to_owned(), "end of Q2".to_owned(), false)]
    );
    assert!(done.checkpoint.run_id.is_some(), "an upgraded checkpoint gets a run id");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn reference_format_with_dropped_results_is_repaired_without_rerunning_calls() {
    // The reference's defect: three calls, the middle one interrupted, resumed with only its result.
    let json = r#"{"messages":[{"role":"user","content":"go"},
        {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"lookup","input":{"key":"1"}},
          {"type":"tool_use","id":"b","name":"ask_user","input":{"question":"?"}},
          {"type":"tool_use","id":"c","name":"lookup","input":{"key":"3"}}]},
        {"role":"user","content":[{"type":"tool_result","toolUseId":"b","content":"yes"}]}],
        "iterations":1,"usage":{"inputTokens":0,"outputTokens":0}}"#;
    let cp = Checkpoint::from_json(json).unwrap();
    let results = result_blocks(&cp.messages[2]);
    let ids: Vec<&str> = results.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert!(results[0].2 && results[2].2, "lost results are error results");
    let counters = Counters::default();
    let model = TestModel::new([ModelResponse::text("ok")]);
    let agent = agent_with(model, &counters).build().unwrap();
    block_on(agent.resume(cp, "")).unwrap().assert_complete().unwrap();
    assert_eq!(Counters::get(&counters.lookup), 0, "nothing re-ran");
    // A versioned checkpoint with the same hole is refused, not silently patched.
    let versioned = json.replacen('{', r#"{"version":1,"#, 1);
    let err = Checkpoint::from_json(&versioned).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"messages[2]: no tool_result for tool call "a" of messages[1]"#
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn reference_format_pending_turn_with_earlier_calls_marks_their_results_lost() {
    let json = r#"{"messages":[{"role":"user","content":"go"},
        {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"lookup","input":{"key":"1"}},
          {"type":"tool_use","id":"b","name":"ask_user","input":{"question":"?"}},
          {"type":"tool_use","id":"c","name":"lookup","input":{"key":"3"}}]}],
        "iterations":1,"usage":{"inputTokens":0,"outputTokens":0},"pendingToolUseId":"b"}"#;
    let counters = Counters::default();
    let model = TestModel::new([ModelResponse::text("ok")]);
    let agent = agent_with(model.clone(), &counters).build().unwrap();
    block_on(agent.resume(Checkpoint::from_json(json).unwrap(), "yes"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(
        Counters::get(&counters.lookup),
        1,
        "only c ran: a may have run before the pause"
    );
    let results = result_blocks(&model.last_request()[2]);
    assert!(results[0].2 && results[0].1.contains("not saved"), "{results:?}");
    assert_eq!(results[1].1, "yes");
    assert_eq!(results[2].1, r#"{"key":"3","value":"v-3"}"#);
}

// ---- the checkpoint format ---------------------------------------------------------------------------------

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn checkpoint_json_is_camel_case_and_stable_through_a_json_roundtrip() {
    let model = TestModel::new([three_calls_with_interrupt_in_the_middle()]);
    let agent = agent_with(model, &Counters::default()).build().unwrap();
    let paused = block_on(agent.prompt("Plan")).unwrap();
    let json = paused.checkpoint().to_json();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    for key in [
        "version",
        "runId",
        "messages",
        "iterations",
        "usage",
        "pendingToolUseId",
        "question",
        "toolResults",
        "createdAt",
        "updatedAt",
    ] {
        assert!(value.get(key).is_some(), "{key} missing in {json}");
    }
    assert_eq!(value["toolResults"][0]["toolUseId"], "c1");
    assert_eq!(roundtrip(paused.checkpoint()).to_json(), json);
    let s = paused.checkpoint().summary();
    assert!(s.interrupted);
    assert_eq!(s.question.as_deref(), Some("Your deadline?"));
    assert_eq!(s.message_count, 2);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn content_string_and_blocks_both_decode() {
    let cp = Checkpoint::from_json(
        r#"{"messages":[{"role":"system","content":"rules"},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","url":"https://x/y.png"},{"type":"image_base64","data":"AAA=","mimeType":"image/png"}]}],"iterations":0,"usage":{"inputTokens":0,"outputTokens":0}}"#,
    )
    .unwrap();
    assert!(matches!(cp.messages[0].content, Content::Text(_)));
    assert_eq!(cp.messages[1].blocks().len(), 3);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn config_errors_are_clear() {
    let model = TestModel::new([]);
    let dup = resumable_agent::tool("lookup", "dup", json!({"type": "object"}), |_, _| async {
        Ok(json!(1))
    });
    let err = agent_with(model, &Counters::default()).tool(dup).build().err().unwrap();
    assert_eq!(
        err.to_string(),
        r#"invalid agent config: tools[3].name: "lookup" is used by an earlier tool"#
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn scripted_model_answers_by_conversation_turn_so_a_fresh_instance_resumes_correctly() {
    use resumable_agent::{Agent, ScriptedModel};
    let script = || {
        ScriptedModel::new([turn(vec![call("q", "ask_user", json!({"question": "Name?"}))])]).then(|req| {
            ModelResponse::text(format!(
                "Hi {}",
                req.messages.last().unwrap().tool_results().next().unwrap().content
            ))
        })
    };
    let build = |model: ScriptedModel| {
        let ask = resumable_agent::tool("ask_user", "Ask.", json!({"type": "object"}), |input, _| async move {
            Err(resumable_agent::InterruptError::new(input["question"].as_str().unwrap_or_default()).into())
        });
        Agent::builder(model).tool(ask).build().unwrap()
    };
    let paused = block_on(build(script()).prompt("hello")).unwrap();
    // A new model instance, as in a new Worker instance: it picks the turn from the history.
    let done = block_on(build(script()).resume(roundtrip(paused.checkpoint()), "Ada"))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Hi Ada");
    let err = block_on(build(script()).resume(done.checkpoint, "again")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "scriptedModel: the script has 2 responses but the conversation asks for assistant turn 3; add a response to the script"
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn arguments_that_are_not_a_json_object_are_answered_with_an_error_and_the_tool_does_not_run() {
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![call("bad", "lookup", json!("{\"key\": oops"))]),
        turn(vec![call("good", "lookup", json!({"key": "k"}))]),
        ModelResponse::text("recovered"),
    ]);
    let agent = agent_with(model, &counters).build().unwrap();
    let done = block_on(agent.prompt("go")).unwrap().assert_complete().unwrap();
    let (id, content, is_error) = result_blocks(&done.messages()[2]).remove(0);
    assert_eq!(id, "bad");
    assert!(is_error);
    assert!(
        content.contains("not a JSON object, so lookup did not run: {\"key\": oops"),
        "{content}"
    );
    assert_eq!(Counters::get(&counters.lookup), 1, "only the corrected call ran");
    assert_eq!(done.text, "recovered");
}

// ---- one text per tool result ----------------------------------------------------------------------------

/// A tool's object result reaches the model spelled as JS writes it — keys sorted, `1.0` as `1` — so the same
/// result reads the same whatever host ran the tool (tests/node/binding.test.mjs checks a JS tool).
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_tool_result_object_has_one_text_in_every_host() {
    let lookup = resumable_agent::tool("lookup", "Looks up.", json!({"type": "object"}), |_, _| async {
        Ok(json!({"b": 1, "a": 1.0, "c": {"z": [2.5, "x"], "y": null}}))
    });
    let model = TestModel::new([turn(vec![call("c1", "lookup", json!({}))]), ModelResponse::text("done")]);
    let agent = resumable_agent::Agent::builder(model).tool(lookup).build().unwrap();
    let done = block_on(agent.prompt("go")).unwrap().assert_complete().unwrap();
    assert_eq!(
        result_blocks(&done.messages()[2]),
        vec![(
            "c1".into(),
            r#"{"a":1,"b":1,"c":{"y":null,"z":[2.5,"x"]}}"#.into(),
            false
        )]
    );
}

/// Whole numbers a store re-spelled (`1.0`, `2e0`) read as written; fractions where a count goes are refused.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn whole_numbers_read_however_a_store_spells_them() {
    let text = r#"{"version":2e0,"messages":[{"role":"user","content":"hi"}],"iterations":0.0,
        "usage":{"inputTokens":5.0,"outputTokens":0},"createdAt":1.7e12}"#;
    let cp = Checkpoint::from_json(text).unwrap();
    assert_eq!(
        (cp.iterations, cp.usage.input_tokens, cp.created_at),
        (0, 5, Some(1_700_000_000_000))
    );
    let err = Checkpoint::from_json(&text.replace("0.0", "0.5")).unwrap_err();
    assert_eq!(err.path(), Some("iterations"), "{err}");
}

/// A model whose answer never comes.
struct Silent;

impl resumable_agent::Model for Silent {
    fn complete<'a>(
        &'a self,
        _: resumable_agent::ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, resumable_agent::ModelError>> + Send + 'a {
        std::future::pending()
    }
}

/// A watcher that wants the run stopped: at once between steps when `now`, else only through `when_aborted`.
struct Stopping {
    now: bool,
}

impl resumable_agent::EventSink for Stopping {
    fn event(&mut self, _: &resumable_agent::Event<'_>) {}
    fn aborted(&self) -> bool {
        self.now
    }
    fn when_aborted(&self) -> Option<resumable_agent::BoxFuture<'static, ()>> {
        Some(Box::pin(std::future::ready(())))
    }
}

#[test]
fn an_abort_stops_a_model_call_in_flight_and_keeps_the_run_from_before_it() {
    let agent = resumable_agent::Agent::builder(Silent).build().unwrap();
    let err = block_on(agent.run(resumable_agent::Input::prompt("Plan."), &mut Stopping { now: false }))
        .map(|_| "ran")
        .unwrap_err();
    let resumable_agent::AgentError::Aborted { checkpoint } = &err else {
        panic!("expected Aborted, got {err}");
    };
    assert_eq!(checkpoint.messages.len(), 1);
    assert_eq!(checkpoint.iterations, 0);
    // Aborted before the first step: nothing is called.
    let err = block_on(agent.run(resumable_agent::Input::prompt("Plan."), &mut Stopping { now: true }))
        .map(|_| "ran")
        .unwrap_err();
    assert!(matches!(err, resumable_agent::AgentError::Aborted { .. }), "{err}");
}
