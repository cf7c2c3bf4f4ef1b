//! The reference's two-request flow as a Rust Worker, with no JS of our own:
//!
//! - `POST /start {message, sessionId}` → `{question}` (paused, checkpoint in KV) or `{answer}`
//! - `POST /reply {answer, sessionId}` → the same; `404` for an unknown session
//! - `GET /sessions` → the paused sessions and their questions, read from summaries only
//!
//! Every request builds its agent afresh: nothing survives in memory between requests. The var `SAVER` picks
//! the store: `kv` (default; Workers KV) or `durable-object` (the `CheckpointStore` Durable Object below:
//! strongly consistent, and exactly one of concurrent replies runs).

mod test_routes;

use resumable_agent::provider::anthropic::Anthropic;
use resumable_agent::provider::openai::OpenAi;
use resumable_agent::provider::{FetchClient, HttpModel};

use resumable_agent::{
    Agent, AgentError, CheckpointKeys, CheckpointSummary, Condition, DurableObjectSaver, InterruptError, KvOptions,
    KvSaver, ModelRequest, ModelResponse, Outcome, SavedCheckpoint, Saver, SaverError, ScriptedModel, list_sessions,
    tool,
};
use serde_json::{Value, json};
use std::future::Future;
use worker::{DurableObject, Env, Method, Request, Response, Result, State, durable_object, event};

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
        (Method::Post, "/__test/conformance") if flag(&env, "TEST_ROUTES") => test_routes::conformance(&env).await,
        _ => error(404, &format!("No route for {} {path}", req.method())),
    }
}

fn flag(env: &Env, name: &str) -> bool {
    env.var(name).is_ok_and(|v| v.to_string() == "true")
}

/// The store the `SAVER` var picks.
pub(crate) enum Store {
    Kv(KvSaver),
    DurableObject(DurableObjectSaver),
}

pub(crate) fn saver(env: &Env) -> Result<Store> {
    let rust_error = |e: SaverError| worker::Error::RustError(e.to_string());
    if env.var("SAVER").is_ok_and(|v| v.to_string() == "durable-object") {
        let namespace = env.durable_object("CHECKPOINTS")?;
        return DurableObjectSaver::new(&namespace, "sessions")
            .map(Store::DurableObject)
            .map_err(rust_error);
    }
    KvSaver::new(env.kv("SESSIONS")?, KvOptions::with_prefix(PREFIX))
        .map(Store::Kv)
        .map_err(rust_error)
}

impl Saver for Store {
    fn get_text(&self, key: &str) -> impl Future<Output = std::result::Result<Option<String>, SaverError>> {
        async move {
            match self {
                Store::Kv(s) => s.get_text(key).await,
                Store::DurableObject(s) => s.get_text(key).await,
            }
        }
    }
    fn put_text(
        &self,
        key: &str,
        value: String,
        summary: &CheckpointSummary,
        condition: Condition,
    ) -> impl Future<Output = std::result::Result<(), SaverError>> {
        async move {
            match self {
                Store::Kv(s) => s.put_text(key, value, summary, condition).await,
                Store::DurableObject(s) => s.put_text(key, value, summary, condition).await,
            }
        }
    }
    fn delete(&self, key: &str) -> impl Future<Output = std::result::Result<(), SaverError>> {
        async move {
            match self {
                Store::Kv(s) => s.delete(key).await,
                Store::DurableObject(s) => s.delete(key).await,
            }
        }
    }
    fn list(&self, prefix: &str) -> impl Future<Output = std::result::Result<Vec<SavedCheckpoint>, SaverError>> {
        async move {
            match self {
                Store::Kv(s) => s.list(prefix).await,
                Store::DurableObject(s) => s.list(prefix).await,
            }
        }
    }
    fn compare_and_set(&self) -> bool {
        matches!(self, Store::DurableObject(_))
    }
    fn max_value_bytes(&self) -> Option<usize> {
        match self {
            Store::Kv(s) => s.max_value_bytes(),
            Store::DurableObject(s) => s.max_value_bytes(),
        }
    }
}

/// The Durable Object behind `SAVER=durable-object`: it stores the checkpoints.
#[durable_object]
pub struct CheckpointStore {
    state: State,
}

impl DurableObject for CheckpointStore {
    fn new(state: State, _env: Env) -> Self {
        Self { state }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        resumable_agent::serve_checkpoint_store(&self.state.storage(), req).await
    }
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
        None => match var("TEST_MODEL_DELAY_MS").and_then(|v| v.parse::<u64>().ok()) {
            // Tests only: a slow model, so that concurrent requests overlap.
            Some(ms) => Agent::builder(Slow(scripted_model(), ms)),
            None => Agent::builder(scripted_model()),
        },
    };
    // CHECKPOINT_KEY (a secret): sign every saved checkpoint and refuse any that was changed in KV;
    // SEAL_CHECKPOINTS=true also encrypts them.
    let builder = match env
        .secret("CHECKPOINT_KEY")
        .map(|v| v.to_string())
        .ok()
        .filter(|k| !k.is_empty())
    {
        Some(key) => builder.checkpoint_keys(
            CheckpointKeys::new("k1")
                .key("k1", key)
                .sealed(var("SEAL_CHECKPOINTS").as_deref() == Some("true")),
        ),
        None => builder,
    };
    builder
        .instructions("You are a helpful assistant. Ask the user for any missing information.")
        .tool(ask_user)
        .build()
}

/// A model that answers after a delay (tests only).
struct Slow(ScriptedModel, u64);

impl resumable_agent::Model for Slow {
    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = std::result::Result<ModelResponse, resumable_agent::ModelError>> + 'a {
        async move {
            worker::Delay::from(std::time::Duration::from_millis(self.1)).await;
            self.0.complete(request).await
        }
    }
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
        }
        | AgentError::Config(_) => 400,
        // A stored checkpoint that was changed (or is not ours): refused before anything ran.
        AgentError::Checkpoint(_) => 422,
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

/// `GET /sessions`: paused sessions with their questions, from summaries (no value is read).
async fn sessions(env: &Env) -> Result<Response> {
    let listed = match list_sessions(&saver(env)?, "").await {
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
