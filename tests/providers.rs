//! The HTTP providers natively (reqwest), against the strict loopback server of tests/providers/server.mjs
//! (the same one the npm package is tested against), on 127.0.0.1.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use resumable_agent::provider::anthropic::Anthropic;
use resumable_agent::provider::gemini::Gemini;
use resumable_agent::provider::openai::OpenAi;
use resumable_agent::provider::responses::OpenAiResponses;
use resumable_agent::provider::{HttpModel, ReqwestClient, Retry};
use resumable_agent::{
    Agent, AgentError, Checkpoint, Content, ContentBlock, Event, Input, InterruptError, Model, ModelError, Outcome,
    StopReason, tool,
};
use serde_json::{Value, json};

const API_KEY: &str = "sk-test-6f1c2a9be0d44c1f8a7e-SECRET";

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    base: String,
}

impl Server {
    fn start() -> Server {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/providers/server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node must be on PATH (make test puts it there)");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let port = serde_json::from_str::<Value>(&line).unwrap()["port"].as_u64().unwrap();
        Server {
            child,
            stdin,
            stdout,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// The wire-format violations the server recorded.
    fn violations(&mut self) -> Vec<String> {
        writeln!(self.stdin, "report").unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn model(provider: &str, base: &str, retries: u32) -> Box<dyn Fn() -> Agent> {
    let (provider, base) = (provider.to_owned(), base.to_owned());
    Box::new(move || {
        let retry = Retry::default().max_retries(retries);
        let lookup = tool(
            "lookup",
            "Looks a key up.",
            json!({"type": "object"}),
            |input, _| async move {
                Ok(json!({"key": input["key"], "value": format!("v-{}", input["key"].as_str().unwrap_or_default())}))
            },
        );
        let ask = tool(
            "ask_user",
            "Asks the human.",
            json!({"type": "object"}),
            |input, _| async move { Err(InterruptError::new(input["question"].as_str().unwrap_or_default()).into()) },
        );
        let builder = if provider == "anthropic" {
            let mut wire = Anthropic::new(API_KEY, "claude-test");
            wire.base_url = format!("{base}/anthropic");
            wire.thinking_budget = Some(1024); // extended thinking on (the server checks the setting)
            Agent::builder(HttpModel::new(wire, ReqwestClient::default(), API_KEY).retry(retry))
        } else if provider == "openai" {
            let mut wire = OpenAi::new(API_KEY, "gpt-test");
            wire.base_url = format!("{base}/openai");
            Agent::builder(HttpModel::new(wire, ReqwestClient::default(), API_KEY).retry(retry))
        } else if provider == "gemini" {
            let mut wire = Gemini::new(API_KEY, "gemini-test");
            wire.base_url = format!("{base}/gemini");
            Agent::builder(HttpModel::new(wire, ReqwestClient::default(), API_KEY).retry(retry))
        } else {
            let mut wire = OpenAiResponses::new(API_KEY, "gpt-test");
            wire.base_url = format!("{base}/openai-responses");
            Agent::builder(HttpModel::new(wire, ReqwestClient::default(), API_KEY).retry(retry))
        };
        builder
            .instructions("Be brief.")
            .tool(lookup)
            .tool(ask)
            .build()
            .unwrap()
    })
}

fn compact(v: &Value) -> String {
    v.to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn both_providers_natively_through_every_scenario() {
    let mut server = Server::start();
    let mut everything = String::new(); // every checkpoint and error, for the key check
    for provider in ["anthropic", "openai", "openai-responses", "gemini"] {
        let agent = model(provider, &server.base, 2);

        let text = agent()
            .prompt("scenario:text")
            .await
            .unwrap()
            .assert_complete()
            .unwrap();
        assert_eq!(text.text, "Hello from the model.", "{provider}");
        assert_eq!((text.usage().input_tokens, text.usage().output_tokens), (100, 10));

        let tool = agent()
            .prompt("scenario:tool")
            .await
            .unwrap()
            .assert_complete()
            .unwrap();
        assert_eq!(tool.text, r#"Found {"key":"a","value":"v-a"}."#);
        assert_eq!((tool.usage().input_tokens, tool.usage().output_tokens), (300, 21));
        everything += &tool.checkpoint.to_json();

        // Three parallel calls, an interrupt in the middle, resumed by a fresh agent from JSON.
        let Outcome::Interrupted(paused) = agent().prompt("scenario:parallel").await.unwrap() else {
            panic!()
        };
        assert_eq!(paused.question, "Which colour?");
        // The calls ran together: the two around the question finished.
        assert_eq!(paused.checkpoint.tool_results.len(), 2);
        let json = paused.checkpoint.to_json();
        everything += &json;
        let done = agent()
            .resume(Checkpoint::from_json(&json).unwrap(), "blue")
            .await
            .unwrap()
            .assert_complete()
            .unwrap();
        assert_eq!(
            done.text,
            r#"Results: {"key":"a","value":"v-a"} | blue | {"key":"c","value":"v-c"}"#
        );

        let started = Instant::now();
        let retried = agent()
            .prompt("scenario:retry429")
            .await
            .unwrap()
            .assert_complete()
            .unwrap();
        assert_eq!(retried.text, "Hello from the model.");
        assert!(started.elapsed().as_millis() >= 950, "retry-after: 1 was honoured");

        let err = agent().prompt("scenario:error500").await.unwrap_err();
        let AgentError::Model {
            source:
                ModelError::Http {
                    status: Some(500),
                    retryable: true,
                    message,
                    ..
                },
            checkpoint,
        } = &err
        else {
            panic!("expected an HTTP 500 model error, got {err:?}")
        };
        assert!(message.contains("(key [redacted])"), "{message}");
        assert_eq!(checkpoint.messages.len(), 1);
        everything += &format!("{err} {err:?} {}", checkpoint.to_json());

        // Cut at max_tokens in the middle of a tool call: nothing recorded, no tool ran; resuming the error's
        // checkpoint with "" asks the model again.
        let err = agent().prompt("scenario:cut").await.unwrap_err();
        let AgentError::Model {
            source: ModelError::Stopped { reason, text, usage },
            checkpoint,
        } = err
        else {
            panic!("{provider}: expected a stopped model error, got {err:?}")
        };
        // The cut call's tokens were spent: on the error, and in the run's usage.
        let counted = usage.map(|u| (u.input_tokens, u.output_tokens));
        assert_eq!(counted, Some((100, 10)), "{provider}");
        assert_eq!(
            (checkpoint.usage.input_tokens, checkpoint.usage.output_tokens),
            (100, 10),
            "{provider}"
        );
        assert_eq!(
            (reason, text.as_str()),
            (StopReason::MaxTokens, "Let me look"),
            "{provider}"
        );
        assert_eq!(
            checkpoint.messages.len(),
            1,
            "{provider}: the cut answer is not in the history"
        );
        assert!(checkpoint.tool_results.is_empty());
        let again = agent()
            .resume(*checkpoint, "")
            .await
            .unwrap()
            .assert_complete()
            .unwrap();
        assert_eq!(again.text, "Complete answer.");
        assert_eq!(again.checkpoint.messages.len(), 2);
        assert_eq!(
            (again.usage().input_tokens, again.usage().output_tokens),
            (200, 20),
            "{provider}: both calls counted"
        );

        for (scenario, want, want_text) in [
            (
                "refusal",
                if provider == "gemini" {
                    StopReason::Recitation
                } else {
                    StopReason::Refusal
                },
                "I cannot help with that.",
            ),
            (
                "filter",
                match provider {
                    "anthropic" => StopReason::Refusal,
                    "gemini" => StopReason::PromptBlocked,
                    _ => StopReason::ContentFilter,
                },
                "",
            ),
        ] {
            let err = agent().prompt(&format!("scenario:{scenario}")).await.unwrap_err();
            let AgentError::Model {
                source: ModelError::Stopped { reason, text, .. },
                ..
            } = &err
            else {
                panic!("{provider} {scenario}: expected a stopped model error, got {err:?}")
            };
            assert_eq!((reason, text.as_str()), (&want, want_text), "{provider} {scenario}");
        }

        // An empty answer ends the run with ""; it is never sent back (the server refuses empty messages).
        for scenario in ["empty", "emptytext"] {
            let first = agent()
                .prompt(&format!("scenario:{scenario}"))
                .await
                .unwrap()
                .assert_complete()
                .unwrap();
            assert_eq!(first.text, "", "{provider} {scenario}");
            let next = agent()
                .resume(first.checkpoint, "Say something.")
                .await
                .unwrap()
                .assert_complete()
                .unwrap();
            assert_eq!(next.text, "After an empty answer.", "{provider} {scenario}");
            assert_eq!(next.checkpoint.messages.len(), 2, "{provider} {scenario}");
        }
    }

    // Anthropic thinking blocks come back unchanged before the tool_use (the server checks them).
    let thought = model("anthropic", &server.base, 0)()
        .prompt("scenario:thinking")
        .await
        .unwrap()
        .assert_complete()
        .unwrap();
    assert_eq!(thought.text, "Thought it through.");
    assert!(matches!(
        thought.checkpoint.messages[1].content,
        Content::Blocks(ref b) if matches!(b[0], ContentBlock::Thinking { .. }) && matches!(b[1], ContentBlock::RedactedThinking { .. })
    ));

    // Streaming natively (reqwest chunks → SSE → deltas), for every wire format.
    for provider in ["anthropic", "openai", "openai-responses", "gemini"] {
        let agent = model(provider, &server.base, 2);
        let stream = |scenario: &'static str| {
            let agent = agent();
            async move {
                let mut events: Vec<Value> = Vec::new();
                let outcome = agent
                    .run(Input::prompt(format!("scenario:{scenario}")), &mut |e: &Event<'_>| {
                        events.push(serde_json::from_str(&e.to_json()).unwrap());
                    })
                    .await;
                (events, outcome)
            }
        };
        let deltas = |events: &[Value], kind: &str, key: &str| -> String {
            let after = events
                .iter()
                .rposition(|e| e["type"] == "step-restart")
                .map_or(0, |i| i + 1);
            events[after..]
                .iter()
                .filter(|e| e["type"] == kind)
                .map(|e| e[key].as_str().unwrap().to_owned())
                .collect()
        };
        let (events, outcome) = stream("text").await;
        assert_eq!(
            outcome.unwrap().assert_complete().unwrap().text,
            "Hello from the model."
        );
        assert!(
            events.iter().filter(|e| e["type"] == "text-delta").count() >= 2,
            "{provider}: several deltas"
        );
        assert_eq!(deltas(&events, "text-delta", "text"), "Hello from the model.");

        let (events, outcome) = stream("cutargs").await;
        let done = outcome.unwrap().assert_complete().unwrap();
        assert_eq!(done.text, r#"Found {"key":"a","value":"v-a"}."#, "{provider}");
        assert_eq!(
            events.iter().filter(|e| e["type"] == "step-restart").count(),
            1,
            "{provider}"
        );
        assert_eq!(
            events.iter().filter(|e| e["type"] == "tool-call").count(),
            1,
            "{provider}"
        );
        let step1: Vec<Value> = events.iter().filter(|e| e["step"] == 1).cloned().collect();
        let input: Value = serde_json::from_str(&deltas(&step1, "tool-call-delta", "inputDelta")).unwrap();
        assert_eq!(input, json!({"key": "a"}));

        let (_, outcome) = stream("alwayscut").await;
        let err = outcome.unwrap_err();
        let AgentError::Model {
            source:
                ModelError::Http {
                    status: None,
                    retryable: true,
                    message,
                    ..
                },
            checkpoint,
        } = &err
        else {
            panic!("{provider}: expected a retryable stream error, got {err:?}")
        };
        assert!(message.contains("stream broke"), "{message}");
        assert_eq!(checkpoint.messages.len(), 1);
        everything += &format!("{err:?}");
    }

    let recovered = model("openai", &server.base, 0)()
        .prompt("scenario:badargs")
        .await
        .unwrap()
        .assert_complete()
        .unwrap();
    assert!(
        recovered
            .text
            .starts_with("Recovered after: Error: the arguments of this call are not a JSON object"),
        "{}",
        recovered.text
    );
    everything += &compact(&serde_json::to_value(recovered.checkpoint.to_json()).unwrap());

    assert!(
        !everything.contains(API_KEY),
        "the API key appears in no checkpoint and no error"
    );
    assert_eq!(
        server.violations(),
        Vec::<String>::new(),
        "every request was valid for its wire format"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_network_failure_is_a_retryable_error_without_status() {
    let mut wire = OpenAi::new(API_KEY, "gpt-test");
    wire.base_url = "http://127.0.0.1:9/v1".into(); // discard port: nothing listens
    let m = HttpModel::new(wire, ReqwestClient::default(), API_KEY).retry(Retry::default().max_retries(0));
    let messages = [resumable_agent::Message::user("hi")];
    let req = resumable_agent::ModelRequest::new(&messages, &[]);
    let err = m.complete(req).await.unwrap_err();
    assert!(
        matches!(
            &err,
            ModelError::Http {
                status: None,
                retryable: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains(API_KEY));
}
