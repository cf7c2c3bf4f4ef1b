//! The reference's two-request flow as a Rust Worker, with no JS of our own:
//!
//! - `POST /start {message, sessionId}` → `{question}` (paused, checkpoint in KV) or `{answer}`
//! - `POST /reply {answer, sessionId}` → the same; `404` for an unknown session
//! - `GET /sessions` → the paused sessions and their questions, read from KV metadata only
//!
//! Every request builds its agent afresh: nothing survives in memory between requests.

mod test_routes;

use resumable_agent::provider::anthropic::Anthropic;
use resumable_agent::provider::openai::OpenAi;
use resumable_agent::provider::{FetchClient, HttpModel};

use resumable_agent::{
    Agent, AgentError, InterruptError, KvOptions, KvSaver, ModelRequest, ModelResponse, Outcome, Saver, SaverError,
    ScriptedModel, tool,
};
use serde_json::{Value, json};
use worker::{Env, Method, Request, Response, Result, event};

/// Where sessions live in the `SESSIONS` namespace.
const PREFIX: &str = "session:";

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: worker::Context) -> Result<Response> {
    let path = req.path();
    match (req.method(), path.as_str()) {
        (Method::Post, "/start") => turn(&mut req, &env, "message").await,
        (Method::Post, "/reply") => turn(&mut req, &env, "answer").await,
        (Method::Get, "/sessions") => sessions(&env).await,
        (Method::Post, "/__test/saver") if flag(&env, "TEST_ROUTES") => test_routes::saver(&mut req, &env).await,
        _ => error(404, &format!("No route for {} {path}", req.method())),
    }
}

fn flag(env: &Env, name: &str) -> bool {
    env.var(name).is_ok_and(|v| v.to_string() == "true")
}

pub(crate) fn saver(env: &Env) -> Result<KvSaver> {
    KvSaver::new(env.kv("SESSIONS")?, KvOptions::with_prefix(PREFIX))
        .map_err(|e| worker::Error::RustError(e.to_string()))
}

/// The agent: asks for a deadline through `ask_user`, then answers. `MODEL_PROVIDER` picks the model:
/// `anthropic` (secret `ANTHROPIC_API_KEY`) or `openai` (secret `OPENAI_API_KEY`, var `OPENAI_BASE_URL` for
/// compatible servers), with the model name in `MODEL`; unset, a scripted model stands in. The scripted one
/// picks its turn from the conversation, so any Worker instance continues any session.
fn demo_agent(env: &Env) -> std::result::Result<Agent, AgentError> {
    let ask_user = tool(
        "ask_user",
        "Ask the human a clarifying question before continuing.",
        json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}),
        |input, _| async move { Err(InterruptError::new(input["question"].as_str().unwrap_or("?")).into()) },
    );
    let var = |name: &str| env.var(name).map(|v| v.to_string()).ok().filter(|v| !v.is_empty());
    let secret = |name: &str| env.secret(name).map(|v| v.to_string()).unwrap_or_default();
    let builder = match var("MODEL_PROVIDER").as_deref() {
        Some("anthropic") => {
            let key = secret("ANTHROPIC_API_KEY");
            let wire = Anthropic::new(&key, var("MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into()));
            Agent::builder(HttpModel::new(wire, FetchClient::default(), key))
        }
        Some("openai") => {
            let key = secret("OPENAI_API_KEY");
            let mut wire = OpenAi::new(&key, var("MODEL").unwrap_or_else(|| "gpt-4.1-mini".into()));
            if let Some(url) = var("OPENAI_BASE_URL") {
                wire.base_url = url;
            }
            Agent::builder(HttpModel::new(wire, FetchClient::default(), key))
        }
        Some(other) => {
            return Err(AgentError::Config(format!(
                "MODEL_PROVIDER {other:?}: use anthropic or openai"
            )));
        }
        None => Agent::builder(scripted_model()),
    };
    builder
        .instructions("You are a helpful assistant. Ask the user for any missing information.")
        .tool(ask_user)
        .build()
}

fn scripted_model() -> ScriptedModel {
    ScriptedModel::new([ModelResponse::tool_call(
        "call_1",
        "ask_user",
        json!({"question": "What is your deadline?"}),
    )])
    .then(|req| {
        ModelResponse::text(format!(
            "Plan for \"{}\" due {}.",
            first_user_text(req),
            last_result(req)
        ))
    })
    .then(|req| ModelResponse::text(format!("Noted: {}.", last_user_text(req))))
}

fn first_user_text(req: &ModelRequest<'_>) -> String {
    req.messages.first().map(|m| m.text()).unwrap_or_default()
}

fn last_user_text(req: &ModelRequest<'_>) -> String {
    req.messages.last().map(|m| m.text()).unwrap_or_default()
}

fn last_result(req: &ModelRequest<'_>) -> String {
    req.messages
        .last()
        .and_then(|m| m.tool_results().next())
        .map(|r| r.content.clone())
        .unwrap_or_default()
}

/// `/start` and `/reply`: read `{<field>, sessionId}`, run the session, answer `{question}` or `{answer}`.
async fn turn(req: &mut Request, env: &Env, field: &str) -> Result<Response> {
    let body: Value = match serde_json::from_str(&req.text().await?) {
        Ok(v) => v,
        Err(e) => return error(400, &format!("Malformed JSON body: {e}")),
    };
    let (Some(text), Some(session_id)) = (body[field].as_str(), body["sessionId"].as_str()) else {
        let missing = if body[field].is_string() { "sessionId" } else { field };
        return error(400, &format!("Missing field \"{missing}\": expected a string"));
    };
    let agent = match demo_agent(env) {
        Ok(a) => a,
        Err(e) => return error(500, &e.to_string()),
    };
    let saver = saver(env)?;
    let session = agent
        .session(&saver, session_id)
        .keep_completed(flag(env, "KEEP_COMPLETED"));
    let outcome = if field == "message" {
        session.prompt(text).await
    } else {
        session.reply(text).await
    };
    match outcome {
        Ok(Outcome::Interrupted(paused)) => Response::from_json(&json!({ "question": paused.question })),
        Ok(Outcome::Complete(done)) => Response::from_json(&json!({ "answer": done.text })),
        Err(e) => error(status_of(&e), &message_of(&e)),
    }
}

fn status_of(e: &AgentError) -> u16 {
    match e {
        AgentError::SessionNotFound { .. } => 404,
        AgentError::SessionBusy { .. } => 409,
        AgentError::Saver {
            source: SaverError::TooLarge { .. },
            ..
        } => 413,
        AgentError::Saver {
            source: SaverError::KeyLength { .. },
            ..
        } => 400,
        AgentError::Model { .. } => 502,
        _ => 500,
    }
}

fn message_of(e: &AgentError) -> String {
    match e {
        AgentError::SessionNotFound { .. } => "Session not found".to_owned(),
        other => other.to_string(),
    }
}

/// `GET /sessions`: paused sessions with their questions, from KV metadata (no value is read).
async fn sessions(env: &Env) -> Result<Response> {
    let listed = match saver(env)?.list("").await {
        Ok(l) => l,
        Err(e) => return error(500, &e.to_string()),
    };
    let paused: Vec<Value> = listed
        .into_iter()
        .filter(|s| s.summary.interrupted)
        .map(|s| {
            json!({
                "sessionId": s.key,
                "question": s.summary.question,
                "updatedAt": s.summary.updated_at,
                "iterations": s.summary.iterations,
            })
        })
        .collect();
    Response::from_json(&json!({ "sessions": paused }))
}

pub(crate) fn error(status: u16, message: &str) -> Result<Response> {
    Ok(Response::from_json(&json!({ "error": message }))?.with_status(status))
}
