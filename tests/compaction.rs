//! Compaction: a long run stays within its bounds, every request provider-valid, the first message kept.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use common::*;
use std::sync::atomic::{AtomicUsize, Ordering};

use resumable_agent::{
    AgentError, Compaction, Event, Input, MaybeSend, Model, ModelError, ModelRequest, ModelResponse,
};
use serde_json::json;

/// Calls `lookup` with a ~1 KB input `steps` times, then answers; checks that every request is
/// provider-valid and keeps only the largest request's size (a recording model would copy ~2 GB here).
struct LongModel {
    steps: usize,
    calls: AtomicUsize,
    largest_request: AtomicUsize,
    pad: String,
}

impl Model for LongModel {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        assert_provider_valid(request.messages);
        assert_eq!(
            request.messages[0].text(),
            "Look up every key.",
            "the first user message is kept"
        );
        self.largest_request
            .fetch_max(request.messages.len(), Ordering::Relaxed);
        let i = self.calls.fetch_add(1, Ordering::Relaxed);
        std::future::ready(Ok(if i < self.steps {
            ModelResponse::tool_call(
                format!("c{i}"),
                "lookup",
                json!({"key": format!("k{i}"), "pad": self.pad}),
            )
        } else {
            ModelResponse::text("all done")
        }))
    }
}

/// A model that calls `lookup` with a ~1 KB input `steps` times, then answers.
fn long_script(steps: usize) -> std::sync::Arc<TestModel> {
    let pad = "x".repeat(1000);
    let mut script: Vec<ModelResponse> = (0..steps)
        .map(|i| ModelResponse::tool_call(format!("c{i}"), "lookup", json!({"key": format!("k{i}"), "pad": pad})))
        .collect();
    script.push(ModelResponse::text("all done"));
    TestModel::new(script)
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn a_2000_step_run_stays_under_1_mb_and_every_request_is_provider_valid() {
    const STEPS: usize = 2000;
    const MAX: usize = 1_000_000;
    let model = std::sync::Arc::new(LongModel {
        steps: STEPS,
        calls: AtomicUsize::new(0),
        largest_request: AtomicUsize::new(0),
        pad: "x".repeat(1000),
    });
    let counters = Counters::default();
    let agent = agent_with_model(model.clone(), &counters)
        .max_iterations(STEPS as u32 + 1)
        .compaction(Compaction::default().max_bytes(900_000))
        .build()
        .unwrap();
    let (mut compactions, mut removed, mut largest, mut checkpoints) = (0usize, 0usize, 0usize, 0usize);
    let outcome = block_on(
        agent.run(Input::prompt("Look up every key."), &mut |e: &Event<'_>| match e {
            Event::Compacted {
                messages,
                removed_bytes,
                ..
            } => {
                compactions += 1;
                removed += removed_bytes;
                assert!(*messages >= 3);
            }
            Event::Checkpoint { checkpoint } => {
                checkpoints += 1;
                // Measuring every one would dominate the test's time: every 250th (and the final one below).
                if checkpoints % 250 == 0 {
                    largest = largest.max(checkpoint.to_json().len());
                }
            }
            _ => {}
        }),
    )
    .unwrap();
    let done = outcome.assert_complete().unwrap();
    assert_eq!(done.text, "all done");
    assert_eq!(Counters::get(&counters.lookup), STEPS, "every step ran once");
    assert_eq!(model.calls.load(Ordering::Relaxed), STEPS + 1);
    assert!(compactions > 100, "compacted {compactions} times");
    assert!(largest > 800_000 && largest < MAX, "largest checkpoint {largest} bytes");
    assert!(
        removed + largest > 2 * MAX,
        "without compaction the history would pass 2 MB"
    );
    let json = done.checkpoint.to_json();
    assert!(json.len() < MAX, "{}", json.len());
    assert_eq!(done.messages()[0].text(), "Look up every key.");
    assert_provider_valid(done.messages());
    println!(
        "{STEPS} steps: {compactions} compactions, {removed} bytes dropped, largest checkpoint {largest} bytes, largest request {} messages",
        model.largest_request.load(Ordering::Relaxed)
    );
}

#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
#[cfg_attr(not(target_arch = "wasm32"), test)]
fn max_messages_keep_first_and_bad_settings() {
    let model = long_script(30);
    let agent = agent_with(model.clone(), &Counters::default())
        .compaction(Compaction::default().max_messages(9).keep_first(1))
        .max_iterations(40)
        .build()
        .unwrap();
    let done = block_on(agent.prompt("go")).unwrap().assert_complete().unwrap();
    assert!(done.messages().len() <= 10, "{}", done.messages().len()); // 9 before the last answer
    for request in model.requests.lock().unwrap().iter() {
        assert!(request.len() <= 9, "a request of {} messages", request.len());
        assert_eq!(request[0].text(), "go");
    }
    let err = agent_with(TestModel::new([]), &Counters::default())
        .compaction(Compaction::default().max_bytes(10).keep_first(0))
        .build()
        .err()
        .unwrap();
    assert!(
        matches!(&err, AgentError::Config(m) if m.contains("keepFirst")),
        "{err}"
    );
    let err = agent_with(TestModel::new([]), &Counters::default())
        .compaction(Compaction::default())
        .build()
        .err()
        .unwrap();
    assert!(matches!(&err, AgentError::Config(m) if m.contains("maxBytes")), "{err}");
}
