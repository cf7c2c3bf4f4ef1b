//! Per-tool timeouts and retries through the public Rust API, with a controlled clock (the agent's timer): a
//! tool failing twice then succeeding, a timeout the timer fires at once, `ToolError::Final` never retried, the
//! agent's defaults, and the retry events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use resumable_agent::{Agent, CallPolicy, Event, Input, ModelResponse, ToolError, tool};
use serde_json::{Value, json};

fn results(done: &resumable_agent::Outcome) -> Vec<(String, bool)> {
    done.checkpoint().messages[2]
        .tool_results()
        .map(|r| (r.content.clone(), r.is_error))
        .collect()
}

#[test]
fn a_tool_failing_twice_then_succeeding_is_tried_three_times_with_waits_from_the_timer() {
    let calls = Arc::new(Mutex::new(0u32));
    let c = calls.clone();
    let flaky = tool("flaky", "Fails twice.", json!({"type": "object"}), move |_, _| {
        let n = {
            let mut n = c.lock().unwrap();
            *n += 1;
            *n
        };
        async move {
            if n < 3 {
                Err(ToolError::Failed(format!("busy {n}")))
            } else {
                Ok(Value::from("done"))
            }
        }
    })
    .call_policy(CallPolicy::default().retry(3, 100));
    let waits = Arc::new(Mutex::new(Vec::new()));
    let w = waits.clone();
    let model = TestModel::new([turn(vec![call("f", "flaky", json!({}))]), ModelResponse::text("ok")]);
    let agent = Agent::builder(model)
        .tool(flaky)
        .timer(move |ms| {
            w.lock().unwrap().push(ms);
            Box::pin(std::future::ready(()))
        })
        .build()
        .unwrap();
    let mut retries = Vec::new();
    let done = block_on(agent.run(Input::prompt("go"), &mut |e: &Event<'_>| {
        if let Event::ToolRetry {
            attempt,
            error,
            delay_ms,
            ..
        } = e
        {
            retries.push((*attempt, (*error).to_owned(), *delay_ms));
        }
    }))
    .unwrap();
    assert_eq!(*calls.lock().unwrap(), 3);
    assert_eq!(results(&done), [("done".to_owned(), false)]);
    assert_eq!(retries, [(1, "busy 1".to_owned(), 100), (2, "busy 2".to_owned(), 200)]);
    assert_eq!(
        *waits.lock().unwrap(),
        [100, 200],
        "the backoff doubles, waited on the agent's timer"
    );
}

#[test]
fn a_timeout_the_timer_fires_makes_the_attempt_fail_and_the_next_one_answers() {
    let calls = Arc::new(Mutex::new(0u32));
    let c = calls.clone();
    let slow = tool("slow", "Hangs once.", json!({"type": "object"}), move |_, _| {
        let n = {
            let mut n = c.lock().unwrap();
            *n += 1;
            *n
        };
        async move {
            if n == 1 {
                std::future::pending::<()>().await;
            }
            Ok(Value::from("fast"))
        }
    })
    .call_policy(CallPolicy::default().timeout_ms(50).retry(2, 0));
    let model = TestModel::new([turn(vec![call("s", "slow", json!({}))]), ModelResponse::text("ok")]);
    // The controlled clock: every wait is over at once, so the hung attempt times out on its first poll.
    let agent = Agent::builder(model)
        .tool(slow)
        .timer(|_| Box::pin(std::future::ready(())))
        .build()
        .unwrap();
    let done = block_on(agent.prompt("go")).unwrap();
    assert_eq!(*calls.lock().unwrap(), 2);
    assert_eq!(results(&done), [("fast".to_owned(), false)]);
}

#[test]
fn a_final_error_is_not_retried_and_the_agent_defaults_apply_to_tools_without_a_policy() {
    let calls = Arc::new(Mutex::new(0u32));
    let c = calls.clone();
    let refusing = tool("refusing", "Refuses.", json!({"type": "object"}), move |_, _| {
        *c.lock().unwrap() += 1;
        async { Err(ToolError::Final("bad input".into())) }
    });
    let plain_calls = Arc::new(Mutex::new(0u32));
    let p = plain_calls.clone();
    let plain = tool("plain", "Fails.", json!({"type": "object"}), move |_, _| {
        *p.lock().unwrap() += 1;
        async { Err(ToolError::Failed("nope".into())) }
    });
    let model = TestModel::new([
        turn(vec![call("r", "refusing", json!({})), call("p", "plain", json!({}))]),
        ModelResponse::text("ok"),
    ]);
    let agent = Agent::builder(model)
        .tool(refusing)
        .tool(plain)
        .tool_defaults(CallPolicy::default().retry(4, 0))
        .build()
        .unwrap();
    let done = block_on(agent.prompt("go")).unwrap();
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(*plain_calls.lock().unwrap(), 4);
    assert_eq!(
        results(&done),
        [
            ("bad input".to_owned(), true),
            ("nope (after 4 attempts)".to_owned(), true)
        ]
    );
}
