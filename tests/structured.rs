//! Structured output: `AgentBuilder::output` — the final_answer tool, JSON text answers, corrections fed
//! back to the model within a bound, and the typed error after it. Natively and, on wasm32, in Node.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use common::*;
use resumable_agent::{AgentError, Checkpoint, FINAL_ANSWER_TOOL, Message, ModelResponse, Outcome, tool};
use serde_json::{Value, json};

fn city_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "number"}},
        "required": ["city", "population"]
    })
}

fn results(m: &Message) -> Vec<(String, bool)> {
    m.tool_results().map(|r| (r.content.clone(), r.is_error)).collect()
}

fn done(outcome: Outcome) -> resumable_agent::AgentResponse {
    outcome.assert_complete().expect("a finished run")
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn an_invalid_final_answer_is_fed_back_and_the_corrected_one_ends_the_run() {
    let model = TestModel::new([
        ModelResponse::tool_call("f1", FINAL_ANSWER_TOOL, json!({"city": "Paris"})),
        ModelResponse::tool_call(
            "f2",
            FINAL_ANSWER_TOOL,
            json!({"city": "Paris", "population": 2_100_000}),
        ),
    ]);
    let agent = agent_with(model.clone(), &Counters::default())
        .output(city_schema(), 2)
        .build()
        .unwrap();
    let r = done(block_on(agent.prompt("The capital of France?")).unwrap());
    assert_eq!(r.structured(), Some(&json!({"city": "Paris", "population": 2_100_000})));
    assert_eq!(r.iterations(), 2);
    assert!(model.tools.lock().unwrap()[0].contains(&FINAL_ANSWER_TOOL.to_owned()));
    let m = r.messages();
    assert_eq!(m.len(), 5, "user, call, error result, call, result");
    let (feedback, is_error) = results(&m[2]).remove(0);
    assert!(is_error);
    assert!(feedback.contains("population"), "{feedback}");
    assert_eq!(results(&m[4]), [("Received.".to_owned(), false)]);
    assert_eq!(r.checkpoint.output_attempts, 1);
    // The finished checkpoint keeps the answer; resuming it with "" returns it without a model call.
    let again = done(block_on(agent.resume(Checkpoint::from_json(&r.checkpoint.to_json()).unwrap(), "")).unwrap());
    assert_eq!(again.structured(), r.structured());
    assert_eq!(model.calls(), 2);
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_json_text_answer_counts_and_prose_is_corrected() {
    let model = TestModel::new([
        ModelResponse::text("Paris, of course."),
        ModelResponse::text("```json\n{\"city\": \"Paris\", \"population\": 2}\n```"),
    ]);
    let agent = agent_with(model.clone(), &Counters::default())
        .output(city_schema(), 2)
        .build()
        .unwrap();
    let r = done(block_on(agent.prompt("The capital of France?")).unwrap());
    assert_eq!(r.structured(), Some(&json!({"city": "Paris", "population": 2})));
    let second = &model.requests.lock().unwrap()[1];
    let feedback = second.last().unwrap().text();
    assert!(
        feedback.contains("not JSON") && feedback.contains(FINAL_ANSWER_TOOL),
        "{feedback}"
    );
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_schema_that_is_not_an_object_is_wrapped_in_value() {
    let schema = json!({"type": "string", "enum": ["yes", "no"]});
    let model = TestModel::new([ModelResponse::tool_call(
        "f1",
        FINAL_ANSWER_TOOL,
        json!({"value": "yes"}),
    )]);
    let agent = agent_with(model.clone(), &Counters::default())
        .output(schema.clone(), 2)
        .build()
        .unwrap();
    assert_eq!(
        done(block_on(agent.prompt("Ready?")).unwrap()).structured(),
        Some(&json!("yes"))
    );
    // Plain text is the answer itself where the schema takes a string.
    let model = TestModel::new([ModelResponse::text("maybe"), ModelResponse::text("no")]);
    let agent = agent_with(model.clone(), &Counters::default())
        .output(schema, 2)
        .build()
        .unwrap();
    let r = done(block_on(agent.prompt("Ready?")).unwrap());
    assert_eq!(r.structured(), Some(&json!("no")));
    assert_eq!(model.calls(), 2, "\"maybe\" is not in the enum and was corrected");
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn past_the_bound_the_run_ends_in_a_typed_error_with_a_checkpoint_that_resumes() {
    let bad = |id: &str| ModelResponse::tool_call(id, FINAL_ANSWER_TOOL, json!({"city": 7, "population": 1}));
    let model = TestModel::new([
        bad("f1"),
        bad("f2"),
        bad("f3"),
        ModelResponse::tool_call("f4", FINAL_ANSWER_TOOL, json!({"city": "Rome", "population": 3})),
    ]);
    let counters = Counters::default();
    let agent = agent_with(model.clone(), &counters)
        .output(city_schema(), 2)
        .build()
        .unwrap();
    let err = block_on(agent.prompt("Italy?")).unwrap_err();
    let AgentError::Output {
        attempts,
        problem,
        checkpoint,
    } = err
    else {
        panic!("expected an output error, got {err:?}")
    };
    assert_eq!(attempts, 3);
    assert!(problem.contains("answer.city"), "{problem}");
    assert_eq!(model.calls(), 3);
    assert!(
        checkpoint.tool_results[0].is_error,
        "the third answer's error result is recorded"
    );
    // The checkpoint holds the third answer and its error result; a resume gets a new bound.
    let json = checkpoint.to_json();
    let r = done(block_on(agent.resume(Checkpoint::from_json(&json).unwrap(), "")).unwrap());
    assert_eq!(r.structured(), Some(&json!({"city": "Rome", "population": 3})));
    assert_provider_valid(r.messages());
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_new_user_turn_after_a_structured_answer_asks_again() {
    let model = TestModel::new([
        ModelResponse::tool_call("f1", FINAL_ANSWER_TOOL, json!({"city": "Paris", "population": 2})),
        ModelResponse::tool_call("f2", FINAL_ANSWER_TOOL, json!({"city": "Lyon", "population": 1})),
    ]);
    let agent = agent_with(model.clone(), &Counters::default())
        .output(city_schema(), 2)
        .build()
        .unwrap();
    let first = done(block_on(agent.prompt("France?")).unwrap());
    let second = done(block_on(agent.resume(first.checkpoint, "And the second city?")).unwrap());
    assert_eq!(second.structured(), Some(&json!({"city": "Lyon", "population": 1})));
    // The new text joined the user message that answered the first final_answer call.
    let asked = &model.requests.lock().unwrap()[1];
    assert_provider_valid(asked);
    assert_eq!(asked.last().unwrap().tool_results().count(), 1);
    assert_eq!(asked.last().unwrap().text(), "And the second city?");
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn other_calls_of_the_final_turn_still_run_and_a_tool_named_final_answer_is_refused() {
    let counters = Counters::default();
    let model = TestModel::new([ModelResponse::tool_calls([
        ("l1", "lookup", json!({"key": "k"})),
        ("f1", FINAL_ANSWER_TOOL, json!({"city": "Oslo", "population": 1})),
    ])]);
    let agent = agent_with(model.clone(), &counters)
        .output(city_schema(), 2)
        .build()
        .unwrap();
    let r = done(block_on(agent.prompt("Norway?")).unwrap());
    assert_eq!(Counters::get(&counters.lookup), 1);
    assert_eq!(r.structured().unwrap()["city"], "Oslo");

    let own = tool(FINAL_ANSWER_TOOL, "mine", json!({"type": "object"}), |_, _| async {
        Ok(json!(1))
    });
    let err = agent_with(TestModel::new([]), &counters)
        .tool(own)
        .output(city_schema(), 2)
        .build()
        .err()
        .expect("refused");
    assert!(
        matches!(&err, AgentError::Config(m) if m.contains("final_answer") && m.contains("rename")),
        "{err}"
    );
    // Without an output schema, a final_answer call is an unknown tool like any other.
    let model = TestModel::new([
        ModelResponse::tool_call("f1", FINAL_ANSWER_TOOL, json!({})),
        ModelResponse::text("ok"),
    ]);
    let r = done(block_on(agent_with(model, &counters).build().unwrap().prompt("hi")).unwrap());
    assert_eq!(r.structured(), None);
    assert!(results(&r.messages()[2])[0].0.contains("unknown tool"));
}
