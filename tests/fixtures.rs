//! Every checkpoint format ever written still resumes, to a known transcript (tests/fixtures/).
//! Runs natively and, compiled to wasm32, in Node under wasm-bindgen-test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

use resumable_agent::{
    Agent, Checkpoint, Decision, InterruptError, Model, ModelError, ModelRequest, ModelResponse, Outcome, Resume, tool,
};
use serde_json::{Value, json};

const CASES: &str = include_str!("fixtures/cases.json");

fn fixture(name: &str) -> &'static str {
    match name {
        "reference-paused.json" => include_str!("fixtures/reference-paused.json"),
        "reference-dropped-results.json" => include_str!("fixtures/reference-dropped-results.json"),
        "v1-paused.json" => include_str!("fixtures/v1-paused.json"),
        "v1-tool-results.json" => include_str!("fixtures/v1-tool-results.json"),
        "v1-complete.json" => include_str!("fixtures/v1-complete.json"),
        "v2-approvals.json" => include_str!("fixtures/v2-approvals.json"),
        "v2-question.json" => include_str!("fixtures/v2-question.json"),
        other => panic!("no fixture {other}"),
    }
}

/// Answers "done after N messages".
struct Counting;

impl Model for Counting {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl std::future::Future<Output = Result<ModelResponse, ModelError>> + resumable_agent::MaybeSend + 'a {
        std::future::ready(Ok(ModelResponse::text(format!(
            "done after {} messages",
            request.messages.len()
        ))))
    }
}

fn agent() -> Agent {
    let lookup = tool(
        "lookup",
        "Look a key up.",
        json!({"type": "object"}),
        |input, _| async move {
            let key = input["key"].as_str().unwrap_or_default().to_owned();
            Ok(json!({"key": key, "value": format!("v-{key}")}))
        },
    );
    let ask = tool(
        "ask_user",
        "Ask the human.",
        json!({"type": "object"}),
        |input, _| async move { Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into()) },
    );
    let send = tool("send", "Send.", json!({"type": "object"}), |input, _| async move {
        Ok(json!({"sent": input["to"]}))
    })
    .needs_approval();
    Agent::builder(Counting)
        .tool(lookup)
        .tool(ask)
        .tool(send)
        .build()
        .unwrap()
}

fn resume_input(answer: &Value) -> Resume {
    if let Some(text) = answer.as_str() {
        return text.into();
    }
    let decision = |d: &Value| serde_json::from_value::<Decision>(d.clone()).unwrap();
    match &answer["decisions"] {
        Value::Array(list) => Resume::decisions(list.iter().map(decision)),
        Value::Object(map) => Resume::decisions_by_id(map.iter().map(|(id, d)| (id.clone(), decision(d)))),
        other => panic!("bad decisions {other}"),
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn every_format_resumes_to_its_known_transcript() {
    let cases: Value = serde_json::from_str(CASES).unwrap();
    // PRINT_FIXTURE_EXPECTATIONS=1 prints the transcripts instead of checking them (to review a new case).
    #[cfg(not(target_arch = "wasm32"))]
    let print = std::env::var_os("PRINT_FIXTURE_EXPECTATIONS").is_some();
    #[cfg(target_arch = "wasm32")]
    let print = false;
    let mut generated = Vec::new();
    for case in cases["cases"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let cp = Checkpoint::from_json(fixture(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(cp.version, 2, "{file} is upgraded on decode");
        let outcome = pollster::block_on(agent().resume(cp, resume_input(&case["answer"])))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let Outcome::Complete(done) = outcome else {
            panic!("{file}: paused again")
        };
        let messages = serde_json::to_value(done.messages()).unwrap();
        let mut with_expected = case.clone();
        with_expected["expect"] = json!({"text": done.text, "messages": messages});
        generated.push(with_expected);
        if print {
            continue;
        }
        let expect = case
            .get("expect")
            .unwrap_or_else(|| panic!("{file}: no expected transcript in cases.json"));
        assert_eq!(done.text, expect["text"].as_str().unwrap(), "{file}");
        assert_eq!(messages, expect["messages"], "{file}: transcript");
    }
    if print {
        println!("{}", serde_json::to_string(&generated).unwrap());
    }
}

/// Checkpoints signed and sealed by the npm package (Web Crypto) verify and open natively (RustCrypto) and
/// in wasm32 (Web Crypto again), resume, and re-signing gives the very same MAC (HMAC is deterministic).
async fn signed_and_sealed_fixtures_open_everywhere() {
    use resumable_agent::CheckpointKeys;
    let keys = || CheckpointKeys::new("fixture-1").key("fixture-1", "fixture secret, not for production");
    let signed_text = include_str!("fixtures/v2-signed.json").trim();
    let sealed_text = include_str!("fixtures/v2-sealed.json").trim();
    let agent = Agent::builder(Counting)
        .tool(tool(
            "lookup",
            "Look a key up.",
            json!({"type": "object"}),
            |_, _| async move { Ok(json!("unused")) },
        ))
        .tool(tool(
            "ask_user",
            "Ask the human.",
            json!({"type": "object"}),
            |_, _| async move { Ok(json!("unused")) },
        ))
        .checkpoint_keys(keys())
        .build()
        .unwrap();
    let signed = agent.decode_checkpoint(signed_text).await.unwrap();
    let mut again = signed.clone();
    keys().sign(&mut again).await.unwrap();
    assert_eq!(
        again.signature, signed.signature,
        "the same MAC from either implementation"
    );
    let opened = agent.decode_checkpoint(sealed_text).await.unwrap();
    assert_eq!(opened.question.as_deref(), Some("Which month?"));
    assert!(opened.signature.is_some());
    // A one-character change is refused by both.
    let changed = signed_text.replace("Which month?", "Which month!");
    assert_eq!(agent.decode_checkpoint(&changed).await.unwrap_err().code(), "SIGNATURE");
    let done = agent.resume(signed, "May").await.unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(
        done.checkpoint().signature.as_ref().map(|s| s.kid.as_str()),
        Some("fixture-1")
    );
}

#[cfg(not(target_arch = "wasm32"))]
#[test]
fn signed_and_sealed_fixtures_open_natively() {
    pollster::block_on(signed_and_sealed_fixtures_open_everywhere());
}

#[cfg(target_arch = "wasm32")]
#[wasm_bindgen_test::wasm_bindgen_test]
async fn signed_and_sealed_fixtures_open_in_wasm() {
    signed_and_sealed_fixtures_open_everywhere().await;
}
