//! Hostile servers and answers natively (issue 38): a redirect to another origin is refused by the providers over
//! `ReqwestClient` (nothing reaches it), a same-origin one is followed; and the agent's fingerprint covers each tool's approval rule, so a rule changed while a run waits is refused.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use resumable_agent::provider::anthropic::Anthropic;
use resumable_agent::provider::{HttpModel, ReqwestClient, Retry};
use resumable_agent::{
    Agent, Approval, CheckpointKeys, ContentBlock, Decision, Model, ModelError, ModelRequest, ModelResponse, Resume,
    ScriptedModel, ToolUse, tool,
};
use serde_json::{Value, json};

// ---- redirects ------------------------------------------------------------------------------------------

/// A server on 127.0.0.1 answering every request with `answer(request head)`; the heads it got.
fn serve(answer: impl Fn(&str) -> String + Send + 'static) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(20) {
            let Ok(mut stream) = stream else { continue };
            let mut buf = vec![0u8; 65536];
            let mut got = Vec::new();
            // The head, then the body its content-length announces.
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if got.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let head = String::from_utf8_lossy(&got).to_string();
            log.lock().unwrap().push(head.clone());
            let _ = stream.write_all(answer(&head).as_bytes());
        }
    });
    (base, seen)
}

fn model(base: &str) -> HttpModel<Anthropic, ReqwestClient> {
    let mut wire = Anthropic::new("sk-native-hostile-0123456789", "claude-test");
    wire.base_url = base.to_owned();
    HttpModel::new(wire, ReqwestClient::default(), "sk-native-hostile-0123456789")
        .retry(Retry::default().max_retries(0))
}

fn ask(m: &HttpModel<Anthropic, ReqwestClient>) -> Result<resumable_agent::ModelResponse, ModelError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let messages = [resumable_agent::Message::user("hi")];
    rt.block_on(m.complete(ModelRequest::new(&messages, &[])))
}

#[test]
fn a_redirect_to_another_origin_is_refused_and_nothing_reaches_it() {
    let (elsewhere, reached) = serve(|_| "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}".into());
    let target = elsewhere.clone();
    let (endpoint, asked) = serve(move |_| {
        format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {target}/steal\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
    });
    let err = ask(&model(&endpoint)).unwrap_err();
    match &err {
        ModelError::Http {
            status: Some(307),
            retryable: false,
            message,
            ..
        } => {
            assert!(
                message.contains(&format!("redirected the request to another origin, {elsewhere}")),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(asked.lock().unwrap().len(), 1);
    assert!(
        asked.lock().unwrap()[0].contains("x-api-key: sk-native-hostile"),
        "the key went to its own origin"
    );
    assert!(reached.lock().unwrap().is_empty(), "nothing reached the other origin");
}

#[test]
fn a_redirect_within_the_origin_is_followed_with_the_same_request() {
    let ok = r#"{"content":[{"type":"text","text":"moved fine"}],"stop_reason":"end_turn"}"#;
    let (endpoint, asked) = serve(move |head| {
        if head.starts_with("POST /old/") {
            "HTTP/1.1 308 Permanent Redirect\r\nlocation: /new/v1/messages\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()
        } else {
            format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{ok}",
                ok.len()
            )
        }
    });
    let answer = ask(&model(&format!("{endpoint}/old"))).unwrap();
    assert_eq!(resumable_agent::Message::assistant(answer.content).text(), "moved fine");
    let heads = asked.lock().unwrap();
    assert_eq!(heads.len(), 2);
    assert!(
        heads[1].starts_with("POST /new/v1/messages") && heads[1].contains("\"messages\""),
        "{}",
        heads[1]
    );
}

// ---- the fingerprint covers each approval rule -----------------------------------------------------------

fn keys() -> CheckpointKeys {
    CheckpointKeys::new("k").key("k", "a secret long enough for an hmac key, 32+ bytes")
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

type Rule = Box<dyn Fn() -> Agent>;

/// An agent with keys whose `pay` tool waits for approval as `rule` sets it up.
fn paying<F>(rule: impl FnOnce(resumable_agent::FnTool<F>) -> resumable_agent::FnTool<F>, f: F) -> Agent
where
    F: Fn(Value, resumable_agent::ToolContext<'_>) -> std::future::Ready<Result<Value, resumable_agent::ToolError>>
        + Send
        + Sync
        + 'static,
{
    let model = ScriptedModel::new([
        ModelResponse::new(vec![ContentBlock::ToolUse(ToolUse {
            id: "p1".into(),
            name: "pay".into(),
            input: json!({"amount": 50}),
            signature: None,
        })]),
        ModelResponse::text("paid"),
    ]);
    let tool = rule(tool("pay", "Pays.", json!({"type": "object"}), f));
    Agent::builder(model)
        .tool(tool)
        .checkpoint_keys(keys())
        .build()
        .unwrap()
}

fn pay(_: Value, _: resumable_agent::ToolContext<'_>) -> std::future::Ready<Result<Value, resumable_agent::ToolError>> {
    std::future::ready(Ok(json!("paid")))
}

fn over(limit: u64) -> impl Fn(&Value) -> Approval + Send + Sync + 'static {
    move |input: &Value| {
        if input["amount"].as_u64().unwrap_or(0) > limit {
            Approval::needed()
        } else {
            Approval::NotNeeded
        }
    }
}

#[test]
fn an_approval_rule_changed_while_a_run_waits_is_refused_as_binding() {
    let rules: Vec<(&str, Rule)> = vec![
        ("always", Box::new(|| paying(|t| t.needs_approval(), pay))),
        (
            "within a minute",
            Box::new(|| paying(|t| t.needs_approval_within(60_000), pay)),
        ),
        (
            "rule amount > 10",
            Box::new(|| paying(|t| t.needs_approval_by("amount > 10", over(10)), pay)),
        ),
        (
            "rule amount > 40",
            Box::new(|| paying(|t| t.needs_approval_by("amount > 40", over(40)), pay)),
        ),
    ];
    for (from, make_from) in &rules {
        let paused = block(make_from().prompt("pay")).unwrap();
        assert!(paused.is_interrupted(), "{from}");
        let text = paused.checkpoint().to_json();
        for (to, make_to) in &rules {
            let other = make_to();
            let decoded = block(other.decode_checkpoint(&text));
            if from == to {
                let done = block(other.resume(decoded.unwrap(), Resume::decisions([Decision::approve()]))).unwrap();
                assert!(!done.is_interrupted(), "{from}: the same rule resumes");
            } else {
                assert_eq!(
                    decoded.map(|_| ()).map_err(|e| e.code()),
                    Err("BINDING"),
                    "{from} → {to}"
                );
            }
        }
    }
}
