//! Guardrails through the public Rust API: input guardrails before a turn's first model call (a tripped input is
//! never sent), output guardrails on the final answer, their events, a failing guardrail, sessions resumed after
//! a trip. Natively and, compiled to wasm32, in Node under wasm-bindgen-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use resumable_agent::{
    Agent, AgentError, Event, GuardrailKind, Input, MemorySaver, ModelResponse, Outcome, Verdict, guardrail,
};
use serde_json::json;

/// Trips when the last user text mentions `word`.
fn blocks_word(word: &'static str) -> impl resumable_agent::Guardrail {
    guardrail(format!("no-{word}"), move |input| {
        let said = input.messages.last().map(|m| m.text()).unwrap_or_default();
        let hit = said.contains(word);
        async move {
            Ok(if hit {
                Verdict::Tripwire(json!({"word": word}))
            } else {
                Verdict::Pass
            })
        }
    })
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_input_guardrail_trips_before_the_model_is_asked_and_the_checkpoint_keeps_the_message() {
    let model = TestModel::new([ModelResponse::text("never said")]);
    let agent = Agent::builder(model.clone())
        .input_guardrail(blocks_word("password"))
        .build()
        .unwrap();
    let err = block_on(agent.prompt("my password is hunter2")).unwrap_err();
    let AgentError::Guardrail {
        guardrail,
        kind,
        info,
        checkpoint,
    } = err
    else {
        panic!("expected a guardrail error")
    };
    assert_eq!(
        (guardrail.as_str(), kind, info),
        ("no-password", GuardrailKind::Input, json!({"word": "password"}))
    );
    assert_eq!(model.calls(), 0, "nothing was sent to the model");
    assert_eq!(checkpoint.messages.len(), 1);
    assert_eq!(checkpoint.iterations, 0);
    // A clean prompt passes.
    let ok = Agent::builder(TestModel::new([ModelResponse::text("hi")]))
        .input_guardrail(blocks_word("password"))
        .build()
        .unwrap();
    assert!(matches!(block_on(ok.prompt("hello")).unwrap(), Outcome::Complete(_)));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn input_guardrails_run_once_per_turn_not_after_tool_results_and_not_on_a_resumed_pause() {
    let seen = Arc::new(Mutex::new(0u32));
    let count = seen.clone();
    let counting = guardrail("count", move |_| {
        *count.lock().unwrap() += 1;
        async { Ok(Verdict::Pass) }
    });
    let counters = Counters::default();
    let model = TestModel::new([
        turn(vec![call("l1", "lookup", json!({"key": "a"}))]),
        turn(vec![call("a1", "send", json!({"to": "ann"}))]),
        ModelResponse::text("sent"),
    ]);
    let agent = agent_with_gates(model, &counters)
        .input_guardrail(counting)
        .build()
        .unwrap();
    let Outcome::Interrupted(paused) = block_on(agent.prompt("look up and send")).unwrap() else {
        panic!("expected a pause")
    };
    assert_eq!(
        *seen.lock().unwrap(),
        1,
        "one turn, one check (not after the lookup's result)"
    );
    let done = block_on(agent.resume(
        paused.checkpoint,
        resumable_agent::Resume::decisions_by_id([("a1", resumable_agent::Decision::approve())]),
    ))
    .unwrap();
    assert!(matches!(done, Outcome::Complete(_)));
    assert_eq!(*seen.lock().unwrap(), 1, "a resumed pause is the same turn");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_output_guardrail_sees_the_answer_and_trips_with_the_run_that_has_it() {
    let no_keys = guardrail("no-keys", |input| {
        let leaked = input.text.is_some_and(|t| t.contains("sk-"));
        async move {
            Ok(if leaked {
                Verdict::Tripwire(json!("a key"))
            } else {
                Verdict::Pass
            })
        }
    });
    let agent = Agent::builder(TestModel::new([ModelResponse::text("your key: sk-123")]))
        .output_guardrail(no_keys)
        .build()
        .unwrap();
    let mut events = Vec::new();
    let err = block_on(agent.run(Input::prompt("key?"), &mut |e: &Event<'_>| {
        if let Event::Guardrail { kind, name, tripwire } = e {
            events.push((*kind, (*name).to_owned(), *tripwire));
        }
    }))
    .unwrap_err();
    let AgentError::Guardrail { kind, checkpoint, .. } = err else {
        panic!("expected a guardrail error")
    };
    assert_eq!(kind, GuardrailKind::Output);
    assert_eq!(
        checkpoint.messages.last().unwrap().text(),
        "your key: sk-123",
        "nothing lost: the answer is kept"
    );
    assert_eq!(events, [(GuardrailKind::Output, "no-keys".to_owned(), true)]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_guardrail_that_fails_stops_the_run_as_a_tripped_one_and_the_first_trip_stops_the_rest() {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (ran.clone(), ran.clone());
    let failing = guardrail("flaky", move |_| {
        a.lock().unwrap().push("flaky");
        async { Err("policy service down".to_owned()) }
    });
    let later = guardrail("later", move |_| {
        b.lock().unwrap().push("later");
        async { Ok(Verdict::Pass) }
    });
    let agent = Agent::builder(TestModel::new([ModelResponse::text("x")]))
        .input_guardrail(failing)
        .input_guardrail(later)
        .build()
        .unwrap();
    let err = block_on(agent.prompt("hi")).unwrap_err();
    let AgentError::Guardrail { guardrail, info, .. } = err else {
        panic!("expected a guardrail error")
    };
    assert_eq!(guardrail, "flaky");
    assert_eq!(info, json!({"error": "policy service down"}));
    assert_eq!(*ran.lock().unwrap(), ["flaky"]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn in_a_session_a_tripped_input_is_kept_and_the_conversation_goes_on_afterwards() {
    let saver = MemorySaver::new();
    let model = TestModel::new([ModelResponse::text("fine"), ModelResponse::text("also fine")]);
    let agent = Agent::builder(model.clone())
        .input_guardrail(blocks_word("password"))
        .build()
        .unwrap();
    let session = agent.session(&saver, "s1").keep_completed(true);
    assert!(matches!(
        block_on(session.prompt("hello")).unwrap(),
        Outcome::Complete(_)
    ));
    let err = block_on(session.prompt("the password is x")).unwrap_err();
    assert_eq!(err.kind_name(), "GuardrailError");
    assert_eq!(model.calls(), 1);
    // The session is as it was before the tripped call: the next prompt goes on from there, without the message.
    let Outcome::Complete(done) = block_on(session.prompt("sorry, forget it")).unwrap() else {
        panic!("expected an answer")
    };
    assert_eq!(done.text, "also fine");
    assert_eq!(model.calls(), 2);
    let said: Vec<String> = done.checkpoint.messages.iter().map(|m| m.text()).collect();
    assert_eq!(said, ["hello", "fine", "sorry, forget it", "also fine"]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn in_a_session_a_tripped_output_is_saved_with_its_error_and_the_next_prompt_goes_on() {
    let saver = MemorySaver::new();
    let no_keys = guardrail("no-keys", |input| {
        let leaked = input.text.is_some_and(|t| t.contains("sk-"));
        async move {
            Ok(if leaked {
                Verdict::Tripwire(json!("a key"))
            } else {
                Verdict::Pass
            })
        }
    });
    let model = TestModel::new([ModelResponse::text("sk-123"), ModelResponse::text("no keys here")]);
    let agent = Agent::builder(model).output_guardrail(no_keys).build().unwrap();
    let session = agent.session(&saver, "s2").keep_completed(true);
    let err = block_on(session.prompt("key?")).unwrap_err();
    assert_eq!(err.kind_name(), "GuardrailError");
    let Outcome::Complete(done) = block_on(session.prompt("something else")).unwrap() else {
        panic!("expected an answer")
    };
    assert_eq!(done.text, "no keys here");
    assert_eq!(
        done.checkpoint.messages.len(),
        4,
        "the tripped answer stays in the history (nothing is lost)"
    );
}
