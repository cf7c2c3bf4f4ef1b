//! MCP tools natively (reqwest), against the servers the npm package is tested against
//! (tests/mcp/servers.mjs, on 127.0.0.1): both protocol eras, an elicitation paused and answered by another
//! agent from the checkpoint's JSON, and a wrong token.
#![cfg(not(target_arch = "wasm32"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)] // test code

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use common::{TestModel, call, turn};
use resumable_agent::mcp::{McpClient, McpServer, tools};
use resumable_agent::provider::ReqwestClient;
use resumable_agent::{Agent, AgentError, Checkpoint, Decision, ModelResponse, Outcome, Resume};
use serde_json::json;

const TOKEN: &str = "mcp-test-token-7f3a9c2e51";

struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(kind: &str) -> Server {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/servers.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .arg(kind)
            .stdout(Stdio::piped())
            .spawn()
            .expect("node must be on PATH (make test puts it there)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().strip_prefix("listening ").unwrap().to_owned();
        Server {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An agent with the server's tools (listed now, as a new process would) and `model`.
async fn agent(url: &str, token: Option<&str>, model: Arc<TestModel>) -> Result<Agent, resumable_agent::Unavailable> {
    let mut server = McpServer::new(url);
    if let Some(t) = token {
        server = server.header("authorization", format!("Bearer {t}"));
    }
    let client = Arc::new(McpClient::new(server, ReqwestClient::default()));
    let mut builder = Agent::builder(model);
    for t in tools(client, "").await? {
        builder = builder.tool(t);
    }
    Ok(builder.build().unwrap())
}

fn script() -> Arc<TestModel> {
    TestModel::by_turn([
        turn(vec![
            call("c1", "add", json!({"a": 2, "b": 3})),
            call("c2", "book", json!({"city": "Oslo"})),
        ]),
        ModelResponse::text("done"),
    ])
}

fn paused(outcome: Outcome) -> Checkpoint {
    match outcome {
        Outcome::Interrupted(p) => Checkpoint::from_json(&p.checkpoint.to_json()).unwrap(),
        Outcome::Complete(c) => panic!("expected a pause, got {:?}", c.text),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn both_eras_pause_on_an_elicitation_and_another_agent_answers_it_from_the_json() {
    for (kind, token, id) in [("modern", Some(TOKEN), "c2/date"), ("legacy", None, "c2/elicitation")] {
        let server = Server::start(kind);
        let cp = paused(
            agent(&server.url, token, script())
                .await
                .unwrap()
                .prompt("go")
                .await
                .unwrap(),
        );
        assert_eq!(cp.tool_results[0].content, "5", "{kind}");
        assert_eq!(cp.interrupts[0].id, id, "{kind}");
        assert!(!cp.to_json().contains(TOKEN), "{kind}: no token in the checkpoint");

        let other = agent(&server.url, token, script()).await.unwrap();
        let answer = Resume::decisions([Decision::accept(json!({"date": "2026-11-30"}))]);
        let done = other.resume(cp, answer).await.unwrap().assert_complete().unwrap();
        let results: Vec<String> = done.messages()[2].tool_results().map(|r| r.content.clone()).collect();
        assert_eq!(results, ["5", "booked Oslo on 2026-11-30"], "{kind}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_wrong_token_is_refused_by_name_and_status_without_the_token() {
    let server = Server::start("modern");
    let Err(e) = agent(&server.url, Some("not-the-right-token-42"), script()).await else {
        panic!("listed with a wrong token")
    };
    assert_eq!(e.status, Some(401));
    assert!(e.server.starts_with("http://127.0.0.1:"));
    assert!(!e.to_string().contains("not-the-right"), "{e}");
    let wrapped = AgentError::Mcp {
        source: e,
        checkpoint: None,
    };
    assert_eq!(wrapped.kind_name(), "McpError");
}
