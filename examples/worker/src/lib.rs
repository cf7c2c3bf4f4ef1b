//! The reference's two-request flow as a Rust Worker, with no JS of our own — deployable as it is:
//!
//! - `POST /start {message}` → `{sessionId, question}` (paused, checkpoint in KV) or `{sessionId, answer}`
//! - `POST /reply {answer, sessionId}` → `{question}` or `{answer}`; `404` for a session that is not the caller's
//! - `GET /sessions` → the caller's paused sessions and their questions, read from summaries only
//!
//! A caller owns the sessions it started: it is known by a token the server makes (128 random bits), sent
//! back as `Authorization: Bearer <token>` or the HttpOnly `ra_owner` cookie; sessions are stored under a hash
//! of it, and session ids are made by the server. CORS answers only the origins in the `ALLOWED_ORIGINS` var.
//! Every request builds its agent afresh: nothing survives in memory between requests. The var `SAVER` picks
//! the store: `kv` (default; Workers KV), `durable-object` (the `CheckpointStore` Durable Object below, one
//! per owner: strongly consistent, and exactly one of concurrent replies runs) or `d1` (the D1 database `DB`,
//! the same table as the JS Worker's `d1Saver`: strongly consistent, exactly one of concurrent replies runs).

mod test_routes;

use resumable_agent::provider::anthropic::Anthropic;
use resumable_agent::provider::openai::OpenAi;
use resumable_agent::provider::{FetchClient, HttpModel};

use resumable_agent::{
    Agent, AgentError, CheckpointKeys, D1Saver, DurableObjectSaver, DynSaver, InterruptError, KvOptions, KvSaver,
    ModelRequest, ModelResponse, Outcome, SaverError, ScriptedModel, list_sessions, tool,
};
use serde_json::{Value, json};
use sha2::Digest;
use std::future::Future;
use worker::{DurableObject, Env, Headers, Method, Request, Response, Result, State, durable_object, event};

/// Where sessions live in the `SESSIONS` namespace.
const PREFIX: &str = "session:";

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, ctx: worker::Context) -> Result<Response> {
    let path = req.path();
    let cors = cors_headers(&req, &env)?;
    if req.method() == Method::Options {
        return Ok(Response::empty()?.with_status(204).with_headers(cors));
    }
    if flag(&env, "TEST_ROUTES") {
        match (req.method(), path.as_str()) {
            (Method::Post, "/__test/saver") => return test_routes::saver(&mut req, &env).await,
            (Method::Post, "/__test/conformance") => return test_routes::conformance(&env).await,
            _ => {}
        }
    }
    let owner = owner_of(&req)?;
    let response = match (req.method(), path.as_str()) {
        (Method::Post, "/start") => turn(&mut req, &env, &ctx, &owner, "message").await,
        (Method::Post, "/reply") => turn(&mut req, &env, &ctx, &owner, "answer").await,
        (Method::Post, "/message") => turn(&mut req, &env, &ctx, &owner, "continue").await,
        (Method::Get, "/sessions") => sessions(&env, &owner).await,
        _ => error(404, &format!("No route for {} {path}", req.method())),
    }?;
    let mut response = response;
    for (k, v) in cors.entries() {
        response.headers_mut().set(&k, &v)?;
    }
    if owner.fresh {
        let secure = if req.url()?.scheme() == "https" { "; Secure" } else { "" };
        response.headers_mut().append(
            "set-cookie",
            &format!(
                "ra_owner={}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000{secure}",
                owner.token
            ),
        )?;
    }
    Ok(response)
}

fn flag(env: &Env, name: &str) -> bool {
    env.var(name).is_ok_and(|v| v.to_string() == "true")
}

/// CORS headers for the request's origin when the `ALLOWED_ORIGINS` var (comma-separated) names it.
fn cors_headers(req: &Request, env: &Env) -> Result<Headers> {
    let headers = Headers::new();
    let origin = req.headers().get("origin")?.unwrap_or_default();
    let allowed = env.var("ALLOWED_ORIGINS").map(|v| v.to_string()).unwrap_or_default();
    if !origin.is_empty() && allowed.split(',').map(str::trim).any(|o| o == origin) {
        headers.set("access-control-allow-origin", &origin)?;
        headers.set("access-control-allow-methods", "GET, POST, OPTIONS")?;
        headers.set("access-control-allow-headers", "authorization, content-type")?;
        headers.set("vary", "Origin")?;
    }
    Ok(headers)
}

/// Who calls: the hash its sessions are stored under, its token, and whether the token was made now.
pub(crate) struct Owner {
    pub(crate) id: String,
    token: String,
    fresh: bool,
}

/// 16 random bytes from the host's `crypto.getRandomValues`, base64url.
fn random_id() -> Result<String> {
    let bytes = js_sys::Uint8Array::new_with_length(16);
    let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())?;
    let get = js_sys::Reflect::get(&crypto, &"getRandomValues".into())?;
    js_sys::Function::from(get).call1(&crypto, &bytes)?;
    Ok(base64url(&bytes.to_vec()))
}

fn base64url(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn valid_token(t: &str) -> bool {
    (22..=64).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn valid_session_id(t: &str) -> bool {
    t.len() == 22 && valid_token(t)
}

fn owner_of(req: &Request) -> Result<Owner> {
    let bearer = req
        .headers()
        .get("authorization")?
        .and_then(|h| h.strip_prefix("Bearer ").map(str::to_owned));
    let cookie = req.headers().get("cookie")?.and_then(|c| {
        c.split(';')
            .find_map(|p| p.trim().strip_prefix("ra_owner=").map(str::to_owned))
    });
    let (token, fresh) = match bearer.or(cookie).filter(|t| valid_token(t)) {
        Some(t) => (t, false),
        None => (random_id()?, true),
    };
    // Stored under a hash of the token: a listing of the store shows no token.
    let digest = sha2::Sha256::digest(token.as_bytes());
    let id = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    Ok(Owner { id, token, fresh })
}

/// The store the `SAVER` var picks, for `owner` (each owner's sessions are a Durable Object of their own; in D1
/// every owner's sessions share the table, keyed by owner).
pub(crate) fn saver(env: &Env, owner: &str) -> Result<Box<dyn DynSaver>> {
    let rust_error = |e: SaverError| worker::Error::RustError(e.to_string());
    if env.var("SAVER").is_ok_and(|v| v.to_string() == "d1") {
        return Ok(Box::new(D1Saver::new(env.d1("DB")?)));
    }
    if env.var("SAVER").is_ok_and(|v| v.to_string() == "durable-object") {
        let namespace = env.durable_object("CHECKPOINTS")?;
        return DurableObjectSaver::new(&namespace, owner)
            .map(|s| Box::new(s) as Box<dyn DynSaver>)
            .map_err(rust_error);
    }
    KvSaver::new(env.kv("SESSIONS")?, KvOptions::with_prefix(PREFIX))
        .map(|s| Box::new(s) as Box<dyn DynSaver>)
        .map_err(rust_error)
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

/// `/start` and `/reply`: read the body, run the caller's session, answer `{sessionId?, question}` or
/// `{sessionId?, answer}` (and a new caller's `token`).
async fn turn(req: &mut Request, env: &Env, ctx: &worker::Context, owner: &Owner, field: &str) -> Result<Response> {
    let body: Value = match serde_json::from_str(&req.text().await?) {
        Ok(v) => v,
        Err(e) => return error(400, &format!("Malformed JSON body: {e}")),
    };
    // `/message` continues a kept session with a new message: its field is "message" too.
    let continuing = field == "continue";
    let field = if continuing { "message" } else { field };
    let Some(text) = body[field].as_str() else {
        return error(400, &format!("Missing field \"{field}\": expected a string"));
    };
    let starting = field == "message" && !continuing;
    let session_id = if starting {
        if !body["sessionId"].is_null() {
            return error(400, "Field \"sessionId\": the server chooses session ids; omit it");
        }
        random_id()?
    } else {
        match body["sessionId"].as_str() {
            // Someone else's id (or a made-up one) is not among the caller's sessions.
            Some(id) if valid_session_id(id) => id.to_owned(),
            Some(_) => return error(404, "Session not found"),
            None => return error(400, "Missing field \"sessionId\": expected a string"),
        }
    };
    let agent = match demo_agent(env) {
        Ok(a) => a,
        Err(e) => return error(500, &e.to_string()),
    };
    let saver = saver(env, &owner.id)?;
    let session = agent
        .session(&saver, format!("{}:{session_id}", owner.id))
        .keep_completed(flag(env, "KEEP_COMPLETED"));
    let outcome = if starting {
        session.prompt(text).await
    } else if continuing {
        // Only an existing session of the caller's: a client does not make sessions under ids it chooses.
        match session.checkpoint(None).await {
            Ok(Some(_)) => session.prompt(text).await,
            Ok(None) => Err(AgentError::SessionNotFound { id: session_id.clone() }),
            Err(e) => Err(e),
        }
    } else {
        session.reply(text).await
    };
    if session.unsettled() {
        // KV's one write per key per second held back the head (what `/sessions` reads) or the last keys of
        // a finished session: finish them once it allows, after the response is sent.
        ctx.wait_until(settle(env.clone(), owner.id.clone(), session.id().to_owned()));
    }
    let mut out = match outcome {
        Ok(Outcome::Interrupted(paused)) => json!({ "question": paused.question }),
        Ok(Outcome::Complete(done)) => json!({ "answer": done.text }),
        Err(e) => return error(status_of(&e), &message_of(&e)),
    };
    if starting {
        out["sessionId"] = session_id.into();
    }
    if owner.fresh {
        out["token"] = owner.token.clone().into();
    }
    Response::from_json(&out)
}

/// Finishes what the store's write interval held back for a session (see `Session::settle`).
async fn settle(env: Env, owner: String, key: String) {
    let (Ok(agent), Ok(saver)) = (demo_agent(&env), saver(&env, &owner)) else {
        return;
    };
    if let Err(e) = agent.session(&saver, key).settle().await {
        worker::console_error!("settling a session: {e}");
    }
}

fn status_of(e: &AgentError) -> u16 {
    match e {
        AgentError::SessionNotFound { .. } => 404,
        AgentError::SessionBusy { .. } | AgentError::Decision { .. } => 409,
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

/// `GET /sessions`: the caller's paused sessions with their questions, from summaries (no value is read).
async fn sessions(env: &Env, owner: &Owner) -> Result<Response> {
    let prefix = format!("{}:", owner.id);
    let listed = match list_sessions(&saver(env, &owner.id)?, &prefix).await {
        Ok(l) => l,
        Err(e) => return error(500, &e.to_string()),
    };
    let paused: Vec<Value> = listed
        .into_iter()
        .filter(|s| s.summary.interrupted)
        .map(|s| {
            json!({
                "sessionId": s.key.strip_prefix(&prefix).unwrap_or_default(),
                "question": s.summary.question,
                "updatedAt": s.summary.updated_at,
                "iterations": s.summary.iterations,
            })
        })
        .collect();
    let mut out = json!({ "sessions": paused });
    if owner.fresh {
        out["token"] = owner.token.clone().into();
    }
    Response::from_json(&out)
}

pub(crate) fn error(status: u16, message: &str) -> Result<Response> {
    Ok(Response::from_json(&json!({ "error": message }))?.with_status(status))
}
