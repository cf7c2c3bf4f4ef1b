//! A tool that needs input ([`ToolError::Input`], what an MCP server's elicitation becomes): the run pauses
//! with one `elicitation` interrupt per request, the checkpoint keeps the tool's state, and the resume calls
//! the tool again with the answers — in another process, from the checkpoint's JSON alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use resumable_agent::{
    AgentError, Checkpoint, Decision, InputRequest, InputRequired, InterruptKind, ModelResponse, Outcome, Resume,
    ToolError, tool,
};
use serde_json::{Value, json};

/// What each call of `book` saw: `(state, responses)` of its context's input, if any.
type Seen = Arc<Mutex<Vec<Option<(Value, Value)>>>>;

/// An agent whose `book` tool asks for a date and a seat count (a second round asks to confirm when the date
/// is in December), and answers once it has what it needs.
fn agent(model: Arc<TestModel>, seen: &Seen) -> resumable_agent::Agent {
    let seen = seen.clone();
    let book = tool(
        "book",
        "Books a table.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |input, ctx| {
            let seen = seen.clone();
            let given = ctx
                .input()
                .map(|p| (p.state.clone(), Value::Object(p.responses.clone())));
            async move {
                seen.lock().unwrap().push(given.clone());
                let city = input["city"].as_str().unwrap_or("?").to_owned();
                let Some((state, responses)) = given else {
                    return Err(ToolError::Input(InputRequired::new(
                        vec![
                            InputRequest::new(
                                "date",
                                format!("Which day in {city}?"),
                                json!({"type": "object", "properties": {"date": {"type": "string", "format": "date"}}, "required": ["date"]}),
                            ),
                            InputRequest::new(
                                "seats",
                                "How many seats?",
                                json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 8}}, "required": ["n"]}),
                            ),
                        ],
                        json!({"round": 1, "city": city}),
                    )));
                };
                if state["round"] == 2 {
                    let sure = responses["sure"]["content"]["yes"] == true;
                    let date = state["date"].as_str().unwrap_or_default();
                    return Ok(Value::String(if sure {
                        format!("booked {city} on {date}")
                    } else {
                        "not booked".into()
                    }));
                }
                if responses["date"]["action"] != "accept" {
                    return Ok(Value::String(format!(
                        "not booked: date {}",
                        responses["date"]["action"]
                    )));
                }
                let date = responses["date"]["content"]["date"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if state["round"] == 1 && date.starts_with("2026-12") {
                    return Err(ToolError::Input(InputRequired::new(
                        vec![InputRequest::new(
                            "sure",
                            "December is busy. Sure?",
                            json!({"type": "object", "properties": {"yes": {"type": "boolean"}}, "required": ["yes"]}),
                        )],
                        json!({"round": 2, "city": city, "date": date}),
                    )));
                }
                Ok(Value::String(format!("booked {city} on {date}")))
            }
        },
    );
    resumable_agent::Agent::builder(model).tool(book).build().unwrap()
}

fn script() -> Arc<TestModel> {
    TestModel::by_turn([
        turn(vec![call("c1", "book", json!({"city": "Oslo"}))]),
        ModelResponse::text("Done."),
    ])
}

fn paused(outcome: Outcome) -> Checkpoint {
    match outcome {
        Outcome::Interrupted(p) => p.checkpoint,
        Outcome::Complete(c) => panic!("expected a pause, got {:?}", c.text),
    }
}

/// The checkpoint as another process reads it.
fn moved(cp: &Checkpoint) -> Checkpoint {
    Checkpoint::from_json(&cp.to_json()).unwrap()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_request_for_input_pauses_with_one_elicitation_per_request_and_the_resume_calls_the_tool_again() {
    let seen: Seen = Arc::default();
    let model = script();
    let cp = paused(block_on(agent(model.clone(), &seen).prompt("Book Oslo")).unwrap());
    let ids: Vec<&str> = cp.interrupts.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["c1/date", "c1/seats"]);
    assert!(
        cp.interrupts
            .iter()
            .all(|i| i.kind == InterruptKind::Elicitation && i.tool_name == "book")
    );
    assert_eq!(cp.interrupts[0].message.as_deref(), Some("Which day in Oslo?"));
    assert_eq!(cp.question.as_deref(), Some("Which day in Oslo?"));
    assert_eq!(
        cp.pending_input.as_ref().unwrap().state,
        json!({"round": 1, "city": "Oslo"})
    );
    let text = cp.to_json();
    assert!(text.contains("\"kind\":\"elicitation\"") && text.contains("\"requestedSchema\""));

    // Another process: a new agent, the checkpoint's JSON only.
    let answers = Resume::decisions_by_id([
        ("c1/seats", Decision::accept(json!({"n": 2}))),
        ("c1/date", Decision::accept(json!({"date": "2026-11-30"}))),
    ]);
    let done = block_on(agent(model.clone(), &seen).resume(moved(&cp), answers))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(done.text, "Done.");
    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "called once, then once again with the answers");
    assert_eq!(calls[0], None);
    let (state, responses) = calls[1].clone().unwrap();
    assert_eq!(state, json!({"round": 1, "city": "Oslo"}));
    assert_eq!(
        responses,
        json!({"date": {"action": "accept", "content": {"date": "2026-11-30"}}, "seats": {"action": "accept", "content": {"n": 2}}})
    );
    let result = done.messages()[2].tool_results().next().unwrap().clone();
    assert_eq!(
        (result.content.as_str(), result.is_error),
        ("booked Oslo on 2026-11-30", false)
    );
    assert!(done.checkpoint.pending_input.is_none());
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_second_round_pauses_again_and_decline_and_cancel_reach_the_tool() {
    let seen: Seen = Arc::default();
    let model = script();
    let cp = paused(block_on(agent(model.clone(), &seen).prompt("Book Oslo")).unwrap());
    let answers = Resume::decisions([Decision::accept(json!({"date": "2026-12-24"})), Decision::Cancel]);
    let again = paused(block_on(agent(model.clone(), &seen).resume(moved(&cp), answers)).unwrap());
    assert_eq!(again.interrupts.len(), 1);
    assert_eq!(again.interrupts[0].id, "c1/sure");
    assert_eq!(again.pending_input.as_ref().unwrap().state["round"], 2);
    assert!(
        again.pending_input.as_ref().unwrap().responses.is_empty(),
        "the first round's answers are used up"
    );
    let done = block_on(agent(model.clone(), &seen).resume(
        moved(&again),
        Resume::decisions([Decision::accept(json!({"yes": true}))]),
    ))
    .unwrap()
    .assert_complete()
    .unwrap();
    let result = done.messages()[2].tool_results().next().unwrap().clone();
    assert_eq!(result.content, "booked Oslo on 2026-12-24");
    assert_eq!(
        seen.lock().unwrap()[1].clone().unwrap().1["seats"],
        json!({"action": "cancel"})
    );

    // Declined: the tool reads it and decides.
    let seen: Seen = Arc::default();
    let cp = paused(block_on(agent(script(), &seen).prompt("Book Oslo")).unwrap());
    let done =
        block_on(agent(script(), &seen).resume(moved(&cp), Resume::decisions([Decision::Decline, Decision::Decline])))
            .unwrap()
            .assert_complete()
            .unwrap();
    assert_eq!(
        done.messages()[2].tool_results().next().unwrap().content,
        "not booked: date \"decline\""
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_denied_elicitation_ends_the_call_without_calling_the_tool_again() {
    let seen: Seen = Arc::default();
    let cp = paused(block_on(agent(script(), &seen).prompt("Book Oslo")).unwrap());
    let answers = Resume::decisions([
        Decision::accept(json!({"date": "2026-11-30"})),
        Decision::deny("not now"),
    ]);
    let done = block_on(agent(script(), &seen).resume(moved(&cp), answers))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "not called again");
    let result = done.messages()[2].tool_results().next().unwrap().clone();
    assert_eq!(
        (result.content.as_str(), result.is_error),
        ("The user declined to answer: not now", true)
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn content_that_misses_the_requested_schema_is_a_decision_error_naming_the_request_and_nothing_changes() {
    let seen: Seen = Arc::default();
    let cp = paused(block_on(agent(script(), &seen).prompt("Book Oslo")).unwrap());
    let cases: Vec<(Resume, &str, &str)> = vec![
        (
            Resume::decisions([Decision::accept(json!({"date": "2026-02-30"})), Decision::Cancel]),
            "c1/date",
            "content.date: expected a date",
        ),
        (
            Resume::decisions([Decision::accept(json!({"date": "soon"})), Decision::Cancel]),
            "c1/date",
            "expected a date",
        ),
        (
            Resume::decisions([Decision::accept(json!({})), Decision::Cancel]),
            "c1/date",
            "missing required property \"date\"",
        ),
        (
            Resume::decisions([Decision::Cancel, Decision::accept(json!({"n": 9}))]),
            "c1/seats",
            "content.n",
        ),
        (
            Resume::decisions([Decision::Cancel, Decision::accept(json!({"n": "2"}))]),
            "c1/seats",
            "content.n",
        ),
        (
            Resume::decisions([Decision::Cancel, Decision::accept(json!({"n": {"deep": 1}}))]),
            "c1/seats",
            "expected a string, number, boolean or array of strings",
        ),
        (
            Resume::decisions([Decision::Cancel, Decision::answer("2")]),
            "c1/seats",
            "\"accept\" (with content), \"decline\" or \"cancel\"",
        ),
        (
            Resume::decisions([Decision::Cancel]),
            "c1/seats",
            "expected 2 decision(s)",
        ),
        (Resume::Answer("tomorrow".into()), "c1/date", "not a text answer"),
        (Resume::Nothing, "c1/date", "waits for input"),
    ];
    for (input, id, says) in cases {
        let before = seen.lock().unwrap().len();
        match block_on(agent(script(), &seen).resume(moved(&cp), input)) {
            Err(AgentError::Decision { id: Some(got), problem }) => {
                assert_eq!(got, id, "{problem}");
                assert!(problem.contains(says), "{problem:?} should say {says:?}");
            }
            other => panic!("expected a DecisionError about {id}, got {other:?}"),
        }
        assert_eq!(seen.lock().unwrap().len(), before, "the tool was not called");
    }
    // The JSON form, as the npm package reads it.
    let json = Resume::from_answer_json(
        r#"{"decisions":{"c1/date":{"type":"accept","content":{"date":"2026-11-30"}},"c1/seats":{"type":"decline"}}}"#,
    )
    .unwrap();
    let done = block_on(agent(script(), &seen).resume(moved(&cp), json))
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(
        done.messages()[2].tool_results().next().unwrap().content,
        "booked Oslo on 2026-11-30"
    );
    let bad = Resume::from_answer_json(r#"{"decisions":[{"type":"accept","content":"2026"},{"type":"cancel"}]}"#);
    let err = match bad {
        Err(e) => e,
        Ok(r) => block_on(agent(script(), &seen).resume(moved(&cp), r)).unwrap_err(),
    };
    assert!(err.to_string().contains("content: expected an object"), "{err}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_checkpoint_whose_pending_input_was_tampered_with_is_refused_with_its_path() {
    let seen: Seen = Arc::default();
    let cp = paused(block_on(agent(script(), &seen).prompt("Book Oslo")).unwrap());
    let mut v: Value = serde_json::from_str(&cp.to_json()).unwrap();
    type Alter = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(Alter, &str)> = vec![
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("pendingInput");
            }),
            "pendingInput",
        ),
        (
            Box::new(|v| v["pendingInput"]["call"] = json!("c9")),
            "interrupts[0].id",
        ),
        (Box::new(|v| v["interrupts"][0]["id"] = json!("c1")), "interrupts[0].id"),
        (
            Box::new(|v| {
                v["interrupts"][1].as_object_mut().unwrap().remove("requestedSchema");
            }),
            "interrupts[1].requestedSchema",
        ),
        (
            Box::new(|v| v["pendingInput"]["responses"] = json!({"date": {"action": "maybe"}})),
            "pendingInput.responses[\"date\"].action",
        ),
    ];
    for (alter, path) in cases {
        let mut bad = v.clone();
        alter(&mut bad);
        match Checkpoint::from_json(&bad.to_string()) {
            Err(e) => assert!(e.to_string().contains(path), "{e} should name {path}"),
            Ok(_) => panic!("accepted a checkpoint altered at {path}"),
        }
    }
    v["pendingInput"]["state"] = json!({"round": 1, "city": "Bergen"});
    assert!(
        Checkpoint::from_json(&v.to_string()).is_ok(),
        "the tool's state is the tool's to check"
    );
}
