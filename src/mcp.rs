//! MCP tools: the tools of a Model Context Protocol server, over Streamable HTTP through the same
//! [`HttpClient`] the providers use.
//!
//! One client for both protocol eras. It asks `server/discover` first: a server that offers
//! [`MODERN`] (2026-07-28) is spoken to statelessly, each request carrying its `_meta`, and a server's request
//! for input comes back as a `tools/call` result (`resultType: "input_required"`, with `inputRequests` and an
//! opaque `requestState`) that the run turns into `elicitation` interrupts: the checkpoint keeps the call's
//! arguments, the keys and `requestState` verbatim, and the resume retries the call with `inputResponses` —
//! no connection outlives the pause. Any other answer falls back to the [`LEGACY`] (2025-11-25) handshake
//! (`initialize`, a session id). There a server asks for input in the middle of the call
//! (`elicitation/create` on the call's event stream): the pause keeps the session, the request's id and
//! the stream's last event id, and the resume answers the request and reads the rest of the stream from there
//! (`Last-Event-ID`) — which holds only while the server keeps the session and its events; otherwise the
//! resume fails with [`AgentError::Mcp`](crate::AgentError::Mcp) and the tool is never called again behind
//! the caller's back.
//!
//! Headers (a bearer token) are sent with every request and never written anywhere: not in a checkpoint, an
//! event, an error or `Debug` output.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::model::ToolDefinition;
use crate::provider::sse::{SseEvent, SseParser};
use crate::provider::{BodySink, BoundedBody, HttpClient, HttpRequest, HttpResponse, send_within_origin};
use crate::tool::{InputRequest, InputRequired, PendingInput, ToolError, Unavailable};

/// The protocol revision with stateless requests and multi-round-trip input (MRTR).
pub const MODERN: &str = "2026-07-28";
/// The revision of the handshake, sessions and input asked for during a call.
pub const LEGACY: &str = "2025-11-25";
/// How this client names itself to servers.
const CLIENT_INFO: (&str, &str) = ("resumable-agent", env!("CARGO_PKG_VERSION"));
/// The most pages of `tools/list` read (a server that never stops paging is refused).
const MAX_PAGES: usize = 100;
/// The most bytes of one answer read, unless the server's settings say otherwise
/// ([`McpServer::max_response_bytes`]).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// Where a server is and how to reach it.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct McpServer {
    /// The Streamable HTTP endpoint (`https://host/mcp`).
    pub url: String,
    /// Sent with every request (an `authorization` bearer token, most often). Never written anywhere.
    pub headers: Vec<(String, String)>,
    /// How long one request may take.
    pub timeout: Duration,
    /// The most bytes of one answer read (a JSON body, or one event of a stream); past it the request fails.
    pub max_response_bytes: usize,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("url", &origin(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl McpServer {
    /// The server at `url`, with a 60 s timeout and no headers.
    pub fn new(url: impl Into<String>) -> Self {
        McpServer {
            url: url.into(),
            headers: Vec::new(),
            timeout: Duration::from_secs(60),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// Reads at most `bytes` of one answer (a JSON body, or one event of a stream).
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Sends `name: value` with every request.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    /// Gives each request `timeout`.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// The protocol a server speaks, once known.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28 or later: stateless, input by retry.
    Modern(String),
    /// 2025-11-25 or earlier, with the session the handshake gave (if the server keeps sessions).
    Legacy {
        /// The negotiated revision.
        version: String,
        /// The `Mcp-Session-Id` the server gave.
        session: Option<String>,
    },
}

impl Era {
    /// The negotiated revision.
    pub fn version(&self) -> &str {
        match self {
            Era::Modern(v) | Era::Legacy { version: v, .. } => v,
        }
    }
}

/// One of a server's tools, as `tools/list` describes it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpToolInfo {
    /// Its name on the server.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A client of one MCP server.
pub struct McpClient<H> {
    server: McpServer,
    http: H,
    /// Sends the cancellation of a call its signal stopped (`http` is stopped by then).
    notifier: Option<H>,
    era: Mutex<Option<Era>>,
    ids: AtomicU64,
    /// Starts every request id: ids stay unique in a session shared by several clients (a listing's, each
    /// run's).
    id_prefix: String,
}

impl<H> std::fmt::Debug for McpClient<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// What one JSON-RPC request got back.
#[derive(Clone)]
enum Reply {
    /// The result.
    Result(Value),
    /// The server asks for input in the middle of the call (2025-era `elicitation/create`): the request, its
    /// id, and the stream's last event id.
    Asks {
        request: Value,
        id: Value,
        last_event: Option<String>,
    },
    /// A JSON-RPC error (an unknown tool, invalid arguments): what it said.
    Refused(String),
}

impl<H: HttpClient> McpClient<H> {
    /// A client of `server` sending through `http`; the protocol is negotiated by the first request.
    pub fn new(server: McpServer, http: H) -> Self {
        McpClient {
            server,
            http,
            notifier: None,
            era: Mutex::new(None),
            ids: AtomicU64::new(1),
            id_prefix: crate::platform::new_run_id().chars().take(12).collect(),
        }
    }

    /// The same client, told the era (a listing already negotiated it): no `server/discover` again.
    #[must_use]
    pub fn with_era(self, era: Era) -> Self {
        *self.era.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(era);
        self
    }

    /// The same client, telling the server through `notifier` (a client no signal stops) when a call is
    /// stopped by its signal (`notifications/cancelled`), as the 2025 protocol asks: to a 2025 server a closed
    /// connection is not a cancellation.
    #[must_use]
    pub fn cancels_through(mut self, notifier: H) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The server (its URL, its headers' names).
    pub fn server(&self) -> &McpServer {
        &self.server
    }

    /// The era, negotiated now if not known yet.
    ///
    /// # Errors
    /// [`Unavailable`] when the server cannot be reached or refuses both eras.
    pub async fn era(&self) -> Result<Era, Unavailable> {
        if let Some(era) = self.known_era() {
            return Ok(era);
        }
        let era = self.negotiate().await?;
        *self.era.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(era.clone());
        Ok(era)
    }

    fn known_era(&self) -> Option<Era> {
        self.era
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `text` without anything the program gave that may be a credential: the server's header values (a
    /// bearer token whole or in pieces), the user and password of its URL, its query values. A server may echo
    /// them in an error, which goes on to the checkpoint, the events, the error and the model.
    fn scrub(&self, text: &str) -> String {
        let secrets = crate::provider::secrets_in(&self.server.headers, &self.server.url);
        let secrets: Vec<&str> = secrets.iter().map(String::as_str).filter(|s| s.len() >= 6).collect();
        crate::provider::redact_userinfo(&crate::provider::redact_fragments(text, &secrets))
    }

    fn unavailable(&self, status: Option<u16>, message: impl Into<String>) -> Unavailable {
        let message = self.scrub(&message.into());
        // A transport's failure names the host, which the error names already.
        let bare = crate::provider::host_of(&self.server.url);
        let message = message
            .strip_prefix(bare)
            .and_then(|m| m.strip_prefix(": "))
            .map_or(message.clone(), str::to_owned);
        Unavailable::new(origin(&self.server.url), status, message)
    }

    /// `server/discover`, then the 2025 handshake when the server does not offer [`MODERN`].
    async fn negotiate(&self) -> Result<Era, Unavailable> {
        let modern = Era::Modern(MODERN.to_owned());
        let probe = self
            .post(&modern, &self.request("server/discover", Map::new(), &modern), None)
            .await?;
        if (200..300).contains(&probe.0.status) {
            if let Ok(Reply::Result(r)) = self.reply(&probe.0, probe.1, "server/discover") {
                let offered = r.get("supportedVersions").and_then(Value::as_array);
                if offered.is_some_and(|v| v.iter().any(|v| v.as_str() == Some(MODERN))) {
                    return Ok(modern);
                }
            }
        } else if matches!(probe.0.status, 401 | 403) {
            return Err(self.refused(&probe.0));
        }
        self.initialize().await
    }

    /// The 2025-11-25 handshake: `initialize` (the session id the server gives) and `notifications/initialized`.
    async fn initialize(&self) -> Result<Era, Unavailable> {
        let bare = Era::Legacy {
            version: LEGACY.to_owned(),
            session: None,
        };
        let mut params = Map::new();
        params.insert("protocolVersion".into(), LEGACY.into());
        params.insert("capabilities".into(), capabilities());
        params.insert("clientInfo".into(), client_info());
        let (response, body) = self
            .post(&bare, &self.request("initialize", params, &bare), None)
            .await?;
        if !(200..300).contains(&response.status) {
            return Err(self.refused(&response));
        }
        let Reply::Result(result) = self.reply(&response, body, "initialize")? else {
            return Err(self.unavailable(
                Some(response.status),
                "initialize: the server asked a question instead of answering",
            ));
        };
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(LEGACY)
            .to_owned();
        let era = Era::Legacy {
            version,
            session: response.header("mcp-session-id").map(str::to_owned),
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (sent, _) = self.post(&era, &note, None).await?;
        if !(200..300).contains(&sent.status) {
            return Err(self.refused(&sent));
        }
        Ok(era)
    }

    /// The server's tools (every page).
    ///
    /// # Errors
    /// [`Unavailable`] when the server cannot be reached, refuses, or answers what is not a tool list.
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, Unavailable> {
        let era = self.era().await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = Map::new();
            if let Some(c) = cursor.take() {
                params.insert("cursor".into(), c.into());
            }
            let page = match self.call(&era, "tools/list", params, None).await? {
                Reply::Result(page) => page,
                Reply::Refused(m) => return Err(self.unavailable(None, format!("tools/list: {m}"))),
                Reply::Asks { .. } => {
                    return Err(self.unavailable(None, "tools/list: the server asked a question instead of answering"));
                }
            };
            for (k, t) in page
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                tools.push(tool_info(t).map_err(|p| self.unavailable(None, format!("tools/list: tools[{k}]{p}")))?);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => cursor = Some(next.to_owned()),
                _ => return Ok(tools),
            }
        }
        Err(self.unavailable(None, format!("tools/list: more than {MAX_PAGES} pages")))
    }

    /// Calls tool `name` with `arguments`; `input`: the answers to the call's last request for input, when
    /// the run resumes with them. The result as text for the model; a request for input; an error result
    /// (`isError`) as [`ToolError::Failed`]; [`ToolError::Unavailable`] when the server cannot be reached,
    /// answers with an HTTP error, or no longer holds the session a paused 2025-era call needs.
    ///
    /// # Errors
    /// As above.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: &Value,
        input: Option<&PendingInput>,
    ) -> Result<String, ToolError> {
        let resumed = input.filter(|p| !p.responses.is_empty());
        // A paused call's state (its requestState, a 2025 session) goes back only to the server that asked: a
        // checkpoint moved to an agent whose tool of that name is another server's is refused, nothing sent.
        // The same URL, path included (two servers share an origin behind a gateway); a state written before
        // the path was recorded names the origin only.
        if let Some(state) = resumed.map(|p| &p.state) {
            let asked = state.get("server").and_then(Value::as_str);
            let same = match state.get("endpoint").and_then(Value::as_str) {
                Some(endpoint) => endpoint == endpoint_of(&self.server.url),
                None => asked.is_none_or(|asked| asked == origin(&self.server.url)),
            };
            if !same {
                return Err(ToolError::Unavailable(self.unavailable(
                    None,
                    format!(
                        "the paused call was asked by {}{}, not this server: its answers were not sent here",
                        asked.unwrap_or("another server"),
                        if asked == Some(origin(&self.server.url).as_str()) {
                            " at another path"
                        } else {
                            ""
                        }
                    ),
                )));
            }
        }
        if let Some(p) = resumed.filter(|p| p.state.get("era").and_then(Value::as_str) == Some(LEGACY_STATE)) {
            return self.answer_pushed(p).await;
        }
        let era = self.era().await.map_err(ToolError::Unavailable)?;
        let mut params = Map::new();
        params.insert("name".into(), name.into());
        params.insert("arguments".into(), arguments.clone());
        if let (Some(p), Era::Modern(_)) = (resumed, &era) {
            params.insert("inputResponses".into(), Value::Object(p.responses.clone()));
            if let Some(state) = p.state.get("requestState") {
                params.insert("requestState".into(), state.clone());
            }
        }
        let (era, (reply, id)) = match self.call_with_id(&era, "tools/call", params.clone(), Some(name)).await {
            // The server dropped the session an earlier request opened (it restarted, or expired it): the call
            // never ran there, so a new handshake and the call once more.
            Err(e) if e.status == Some(404) && matches!(era, Era::Legacy { session: Some(_), .. }) => {
                let fresh = self.initialize().await.map_err(ToolError::Unavailable)?;
                *self.era.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(fresh.clone());
                let again = self.call_with_id(&fresh, "tools/call", params, Some(name)).await;
                (fresh, again.map_err(ToolError::Unavailable)?)
            }
            other => (era, other.map_err(ToolError::Unavailable)?),
        };
        self.outcome(&era, reply, id)
    }

    /// What the reply to `tools/call` request `call` means for the run; a request for input is stamped with the
    /// server that asked (see [`McpClient::call_tool`]).
    fn outcome(&self, era: &Era, reply: Reply, call: Value) -> Result<String, ToolError> {
        let mut outcome = self.outcome_of(era, reply, call);
        if let Err(ToolError::Input(input)) = &mut outcome {
            if let Some(state) = input.state.as_object_mut() {
                state.insert("server".into(), origin(&self.server.url).into());
                state.insert("endpoint".into(), endpoint_of(&self.server.url).into());
            }
        }
        outcome
    }

    fn outcome_of(&self, era: &Era, reply: Reply, call: Value) -> Result<String, ToolError> {
        match reply {
            Reply::Result(result) => call_result(&result).map_err(|e| match e {
                ToolError::Failed(text) => ToolError::Failed(self.scrub(&text)),
                other => other,
            }),
            // The server refused the call itself (an unknown tool, arguments it does not take): the model reads why.
            Reply::Refused(message) => Err(ToolError::Failed(self.scrub(&message))),
            Reply::Asks {
                request,
                id,
                last_event,
            } => {
                let Era::Legacy { session, version } = era else {
                    return Err(ToolError::failed(
                        "the server asked for input in a way its protocol does not",
                    ));
                };
                pushed_request(&request, id, last_event, session.as_deref(), version, call)
            }
        }
    }

    /// A 2025-era call paused on `elicitation/create`: the answer sent as the response to that request, then
    /// the rest of the call's stream read from the last event seen.
    async fn answer_pushed(&self, p: &PendingInput) -> Result<String, ToolError> {
        let s = &p.state;
        let era = Era::Legacy {
            version: s.get("version").and_then(Value::as_str).unwrap_or(LEGACY).to_owned(),
            session: s.get("session").and_then(Value::as_str).map(str::to_owned),
        };
        let call_id = s.get("call").cloned().unwrap_or(Value::Null);
        let answer = p
            .responses
            .values()
            .next()
            .cloned()
            .unwrap_or_else(|| json!({"action": "cancel"}));
        let response =
            json!({"jsonrpc": "2.0", "id": s.get("request").cloned().unwrap_or(Value::Null), "result": answer});
        let gone = |status: Option<u16>| {
            ToolError::Unavailable(self.unavailable(
                status,
                "the server no longer holds the paused call (its session or the request is gone); the call's result is lost and it was not called again",
            ))
        };
        let (sent, _) = self.post(&era, &response, None).await.map_err(ToolError::Unavailable)?;
        if matches!(sent.status, 400 | 404) {
            return Err(gone(Some(sent.status)));
        }
        if !(200..300).contains(&sent.status) {
            return Err(ToolError::Unavailable(self.refused(&sent)));
        }
        let Some(last_event) = s.get("lastEventId").and_then(Value::as_str) else {
            return Err(gone(None));
        };
        let (stream, body) = self
            .get_stream(&era, last_event, &call_id)
            .await
            .map_err(ToolError::Unavailable)?;
        if matches!(stream.status, 400 | 404 | 405) {
            return Err(gone(Some(stream.status)));
        }
        if !(200..300).contains(&stream.status) {
            return Err(ToolError::Unavailable(self.refused(&stream)));
        }
        match body.found {
            Some(reply) => self.outcome(&era, reply, call_id),
            None => Err(gone(None)),
        }
    }

    /// Tells the server that `request`, stopped by the caller's signal, is cancelled (best effort: its answer
    /// is not awaited for long, and a failure changes nothing).
    async fn cancelled(&self, era: &Era, request: &Value) {
        let Some(notifier) = &self.notifier else { return };
        let mut params = Map::new();
        params.insert("requestId".into(), request.get("id").cloned().unwrap_or(Value::Null));
        params.insert("reason".into(), "the run was aborted".into());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params});
        let mut headers = self.headers(era);
        headers.push(("content-type".into(), "application/json".into()));
        if let Era::Modern(_) = era {
            headers.push(("mcp-method".into(), "notifications/cancelled".into()));
        }
        let request = HttpRequest::post(
            self.server.url.clone(),
            headers,
            note.to_string(),
            self.server.timeout.min(Duration::from_secs(5)),
        );
        let _ = send_within_origin(notifier, request, None).await;
    }

    /// A JSON-RPC request with a fresh id.
    fn request(&self, method: &str, mut params: Map<String, Value>, era: &Era) -> Value {
        if let Era::Modern(version) = era {
            let mut meta = Map::new();
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                version.as_str().into(),
            );
            meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
            meta.insert("io.modelcontextprotocol/clientCapabilities".into(), capabilities());
            params.insert("_meta".into(), Value::Object(meta));
        }
        let id = format!("{}-{}", self.id_prefix, self.ids.fetch_add(1, Ordering::Relaxed));
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
    }

    /// Sends request `method` and reads its reply.
    async fn call(
        &self,
        era: &Era,
        method: &str,
        params: Map<String, Value>,
        name: Option<&str>,
    ) -> Result<Reply, Unavailable> {
        Ok(self.call_with_id(era, method, params, name).await?.0)
    }

    /// [`McpClient::call`], with the request's id.
    async fn call_with_id(
        &self,
        era: &Era,
        method: &str,
        params: Map<String, Value>,
        name: Option<&str>,
    ) -> Result<(Reply, Value), Unavailable> {
        let request = self.request(method, params, era);
        let (response, body) = match self.post(era, &request, name).await {
            Err(e) if self.http.aborted() => {
                self.cancelled(era, &request).await;
                return Err(e);
            }
            // A 2025 call that never answers may be waiting for input asked where this client does not read.
            Err(mut e)
                if matches!(era, Era::Legacy { .. }) && method == "tools/call" && e.message.contains("(timeoutMs)") =>
            {
                e.message.push_str(STANDALONE_HINT);
                return Err(e);
            }
            other => other?,
        };
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        if !(200..300).contains(&response.status) {
            // A 400 or 422 carrying a JSON-RPC error refuses this request (a capability it lacks, arguments it
            // does not take): its answer, not an outage — asking again would be refused again.
            if let (400 | 422, Some(message)) = (response.status, rpc_error(&response.body)) {
                return Ok((Reply::Refused(message), id));
            }
            return Err(self.refused(&response));
        }
        Ok((self.reply(&response, body, method)?, id))
    }

    /// POSTs `message` (a request, notification or response), reading the answer's stream until the reply to
    /// it (or a request for input) arrives.
    async fn post(
        &self,
        era: &Era,
        message: &Value,
        name: Option<&str>,
    ) -> Result<(HttpResponse, Answer), Unavailable> {
        let mut headers = self.headers(era);
        headers.push(("content-type".into(), "application/json".into()));
        if let (Era::Modern(_), Some(method)) = (era, message.get("method").and_then(Value::as_str)) {
            headers.push(("mcp-method".into(), method.to_owned()));
            if let Some(name) = name {
                headers.push(("mcp-name".into(), name.to_owned()));
            }
        }
        let mut request = HttpRequest::post(
            self.server.url.clone(),
            headers,
            message.to_string(),
            self.server.timeout,
        );
        request.max_response_bytes = self.server.max_response_bytes;
        let mut answer = Answer::new(message.get("id").cloned(), self.server.max_response_bytes);
        let response = send_within_origin(&self.http, request, Some(&mut answer))
            .await
            .map_err(|e| self.unavailable(None, e))?;
        Ok((response, answer))
    }

    /// GETs the session's stream from `last_event` on (2025 resumability), reading until the reply to
    /// request `id`.
    async fn get_stream(&self, era: &Era, last_event: &str, id: &Value) -> Result<(HttpResponse, Answer), Unavailable> {
        let mut headers = self.headers(era);
        headers.retain(|(k, _)| k != "accept");
        headers.push(("accept".into(), "text/event-stream".into()));
        headers.push(("last-event-id".into(), last_event.to_owned()));
        let mut request =
            HttpRequest::post(self.server.url.clone(), headers, String::new(), self.server.timeout).into_get();
        request.max_response_bytes = self.server.max_response_bytes;
        let mut answer = Answer::new(Some(id.clone()), self.server.max_response_bytes);
        let response = send_within_origin(&self.http, request, Some(&mut answer))
            .await
            .map_err(|e| self.unavailable(None, e))?;
        Ok((response, answer))
    }

    /// The headers of every request in `era`: the caller's, `accept`, the protocol version and the session.
    fn headers(&self, era: &Era) -> Vec<(String, String)> {
        let mut headers: Vec<(String, String)> = self.server.headers.clone();
        headers.push(("accept".into(), "application/json, text/event-stream".into()));
        match era {
            Era::Modern(v) => headers.push(("mcp-protocol-version".into(), v.clone())),
            Era::Legacy { version, session } => {
                if let Some(s) = session {
                    headers.push(("mcp-protocol-version".into(), version.clone()));
                    headers.push(("mcp-session-id".into(), s.clone()));
                }
            }
        }
        headers
    }

    /// The error of an HTTP answer that is not a success: its status and the start of what it said (a
    /// JSON-RPC error's message when it is one).
    fn refused(&self, response: &HttpResponse) -> Unavailable {
        let said = crate::limits::parse_untrusted(&response.body)
            .ok()
            .and_then(|v| v.pointer("/error/message").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_else(|| response.body.chars().take(200).collect());
        let status = response.status;
        let what = match status {
            401 | 403 => "refused the credentials (check mcpTools({ headers }))",
            404 => "has no MCP endpoint at this URL, or dropped the session",
            _ => "answered with an HTTP error",
        };
        self.unavailable(
            Some(status),
            format!(
                "{what}: HTTP {status}{}",
                if said.is_empty() {
                    String::new()
                } else {
                    format!(" ({said})")
                }
            ),
        )
    }

    /// The reply to `method` in `answer`.
    fn reply(&self, response: &HttpResponse, mut answer: Answer, method: &str) -> Result<Reply, Unavailable> {
        if let Some(problem) = &answer.problem {
            return Err(self.unavailable(Some(response.status), format!("{method}: {problem}")));
        }
        match answer.reply() {
            Some(Ok(reply)) => Ok(reply),
            Some(Err(e)) => Err(self.unavailable(Some(response.status), format!("{method}: {e}"))),
            None => Err(self.unavailable(
                Some(response.status),
                format!("{method}: the server answered without a reply"),
            )),
        }
    }
}

/// What a 2025-era call that timed out adds to its error: the likeliest cause, and the fix on the server.
const STANDALONE_HINT: &str = "; if the tool asks for input with an elicitation/create not related to the call (sent on the session's standalone GET stream, as elicitInput(params) without relatedRequestId does in the MCP TypeScript SDK), this client does not see it: send it related to the call (extra.sendRequest, or elicitInput(params, { relatedRequestId: extra.requestId })), or serve the 2026-07-28 protocol";

/// The `era` member of a paused 2025-era call's state.
const LEGACY_STATE: &str = "2025-push";

/// `elicitation/create` asked during a 2025-era call: the run pauses on it, keeping what answers it later.
fn pushed_request(
    request: &Value,
    id: Value,
    last_event: Option<String>,
    session: Option<&str>,
    version: &str,
    call: Value,
) -> Result<String, ToolError> {
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    if request.get("method").and_then(Value::as_str) != Some("elicitation/create") {
        return Err(ToolError::failed(
            "the server sent a request this client does not serve",
        ));
    }
    let elicit = elicitation(&params).map_err(ToolError::Failed)?;
    let state = json!({
        "era": LEGACY_STATE,
        "version": version,
        "session": session,
        "call": call,
        "request": id,
        "lastEventId": last_event,
    });
    Err(ToolError::Input(InputRequired::new(
        vec![InputRequest::new("elicitation", elicit.0, elicit.1)],
        state,
    )))
}

/// A `tools/call` result: text for the model, a request for input, or an error result.
fn call_result(result: &Value) -> Result<String, ToolError> {
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Err(ToolError::Input(input_required(result).map_err(ToolError::Failed)?));
    }
    let text = result_text(result);
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err(ToolError::Failed(text));
    }
    Ok(text)
}

/// The text the model reads: the text blocks, joined; other blocks as a short note; structured content as
/// JSON when there is no text.
fn result_text(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned()),
            Some("resource") => {
                let r = block.get("resource").unwrap_or(&Value::Null);
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => parts.push(t.to_owned()),
                    None => parts.push(format!(
                        "[resource {}]",
                        r.get("uri").and_then(Value::as_str).unwrap_or("?")
                    )),
                }
            }
            Some("resource_link") => parts.push(format!(
                "[resource {}]",
                block.get("uri").and_then(Value::as_str).unwrap_or("?")
            )),
            Some(kind @ ("image" | "audio")) => parts.push(format!(
                "[{kind} {}]",
                block.get("mimeType").and_then(Value::as_str).unwrap_or("")
            )),
            _ => {}
        }
    }
    match result.get("structuredContent") {
        Some(s) if parts.is_empty() && !s.is_null() => crate::keys::canonical_json(s),
        _ => parts.join("\n"),
    }
}

/// A 2026-era `input_required` result: one request per `elicitation/create` input request, and the state the
/// retry needs (`requestState` verbatim).
fn input_required(result: &Value) -> Result<InputRequired, String> {
    let mut requests = Vec::new();
    for (key, r) in result
        .get("inputRequests")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match r.get("method").and_then(Value::as_str) {
            Some("elicitation/create") => {
                let (message, schema) = elicitation(r.get("params").unwrap_or(&Value::Null))
                    .map_err(|p| format!("inputRequests[{key:?}]: {p}"))?;
                requests.push(InputRequest::new(key.clone(), message, schema));
            }
            other => {
                return Err(format!(
                    "the server asked for {} (inputRequests[{key:?}]), which this client does not provide",
                    other.unwrap_or("an unnamed request")
                ));
            }
        }
    }
    if requests.is_empty() && result.get("requestState").is_none() {
        return Err("the server asked for input without saying what".into());
    }
    let mut state = Map::new();
    state.insert("era".into(), MODERN.into());
    if let Some(s) = result.get("requestState") {
        state.insert("requestState".into(), s.clone());
    }
    Ok(InputRequired::new(requests, Value::Object(state)))
}

/// An `elicitation/create` request's message and schema; URL mode is refused with a clear error.
fn elicitation(params: &Value) -> Result<(String, Value), String> {
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return Err(format!(
            "the server asked the user to open a URL ({}); URL-mode elicitation is not supported, only forms",
            params
                .get("url")
                .and_then(Value::as_str)
                .map_or_else(|| "?".to_owned(), origin)
        ));
    }
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let schema = params
        .get("requestedSchema")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    Ok((message, schema))
}

/// A `tools/list` entry.
fn tool_info(t: &Value) -> Result<McpToolInfo, String> {
    let name = t
        .get("name")
        .and_then(Value::as_str)
        .ok_or(".name: missing")?
        .to_owned();
    let mut input_schema = t
        .get("inputSchema")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    // Which draft the server wrote in says nothing to a model, and some providers refuse the keyword.
    if let Some(o) = input_schema.as_object_mut() {
        o.remove("$schema");
    }
    Ok(McpToolInfo {
        name,
        description: t
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema,
    })
}

fn client_info() -> Value {
    json!({"name": CLIENT_INFO.0, "version": CLIENT_INFO.1})
}

/// Form-mode elicitation only.
fn capabilities() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// The message of a JSON-RPC error body, with its code.
fn rpc_error(body: &str) -> Option<String> {
    let v: Value = crate::limits::parse_untrusted(body).ok()?;
    let e = v.get("error")?;
    let message = e.get("message")?.as_str()?;
    let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
    Some(format!("{message} (JSON-RPC error {code})"))
}

pub(crate) use crate::provider::origin;

/// What names a server's endpoint in a paused call's state: a fingerprint of its origin and path (not the path
/// itself, which may hold a token; not the query, whose key may be rotated while a call waits).
fn endpoint_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest
        .find(['/', '\\'])
        .map_or("", |at| rest.get(at..).unwrap_or_default());
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = if path.is_empty() { "/" } else { path };
    crate::keys::fingerprint(&Value::String(format!("{}{path}", origin(url))))
}

/// An answer's body as it arrives: one JSON message, or an event stream read until the reply to request `id`
/// (or a request for input) — then the rest is not wanted.
struct Answer {
    id: Option<Value>,
    /// The most bytes of a JSON body, or of one event, kept.
    limit: usize,
    bytes: BoundedBody,
    sse: Option<SseParser>,
    events: Vec<SseEvent>,
    found: Option<Reply>,
    problem: Option<String>,
}

impl Answer {
    fn new(id: Option<Value>, limit: usize) -> Self {
        Answer {
            id,
            limit,
            bytes: BoundedBody::new(limit),
            sse: None,
            events: Vec::new(),
            found: None,
            problem: None,
        }
    }

    /// The reply: found in the stream, or the whole JSON body (taken out of it).
    fn reply(&mut self) -> Option<Result<Reply, String>> {
        if let Some(r) = &self.found {
            return Some(Ok(r.clone()));
        }
        if self.sse.is_some() || self.bytes.first_non_space().is_none() {
            return None;
        }
        // Through `from_str`, the reader the rest of the library uses (`from_slice` would add a second copy of
        // serde_json's parser to the .wasm).
        let text = crate::provider::text_of(std::mem::replace(&mut self.bytes, BoundedBody::new(0)).joined());
        let message: Value = match crate::limits::parse_untrusted(&text) {
            Ok(v) => v,
            Err(e) => return Some(Err(format!("the answer could not be read: {e}"))),
        };
        let mut probe = Answer::new(self.id.clone(), self.limit);
        probe.message(message, None);
        probe.found.map(Ok)
    }

    /// One JSON-RPC message of the answer; true once it settles the request.
    fn message(&mut self, m: Value, last_event: Option<String>) -> bool {
        let is_reply = m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some());
        if is_reply && (self.id.is_none() || m.get("id") == self.id.as_ref()) {
            if let Some(e) = m.get("error") {
                let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
                let text = e.get("message").and_then(Value::as_str).unwrap_or("error");
                self.found = Some(Reply::Refused(format!("{text} (JSON-RPC error {code})")));
            } else {
                self.found = Some(Reply::Result(m.get("result").cloned().unwrap_or(Value::Null)));
            }
            return true;
        }
        let asks = m.get("method").and_then(Value::as_str) == Some("elicitation/create") && m.get("id").is_some();
        if asks {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            self.found = Some(Reply::Asks {
                request: m,
                id,
                last_event,
            });
            return true;
        }
        false
    }
}

impl BodySink for Answer {
    fn chunk(&mut self, bytes: &[u8]) -> bool {
        if self.sse.is_none() {
            if !self.bytes.chunk(bytes) {
                self.problem = Some(format!(
                    "the answer is longer than {} bytes (maxResponseBytes): the rest was not read",
                    self.limit
                ));
                return false;
            }
            // A JSON body starts with `{` or `[`; anything else is an event stream.
            match self.bytes.first_non_space() {
                Some(b'{' | b'[') | None => return true,
                Some(_) => {}
            }
            let start = std::mem::replace(&mut self.bytes, BoundedBody::new(0)).joined();
            self.sse = Some(SseParser::with_limit(self.limit));
            return self.events_from(&start);
        }
        self.events_from(bytes)
    }
}

impl Answer {
    /// Feeds the stream; false once the request is settled (or the stream broken).
    fn events_from(&mut self, bytes: &[u8]) -> bool {
        let Some(parser) = self.sse.as_mut() else { return false };
        if let Err(e) = parser.push(bytes, &mut self.events) {
            self.problem = Some(e);
            return false;
        }
        for event in std::mem::take(&mut self.events) {
            if event.data.trim().is_empty() {
                continue;
            }
            let message = match crate::limits::parse_untrusted(&event.data) {
                Ok(message) => message,
                // An event too large to read may be the reply itself: the call fails rather than waiting on.
                Err(e @ crate::limits::UntrustedJson::TooCostly { .. }) => {
                    self.problem = Some(format!("an event of the answer: {e}"));
                    return false;
                }
                Err(_) => continue,
            };
            if self.message(message, event.id.clone()) {
                return false;
            }
        }
        true
    }
}

/// An MCP tool as the agent sees it: a server's tool, maybe under a prefixed name.
pub struct McpTool<H> {
    client: std::sync::Arc<McpClient<H>>,
    /// The tool's name on the server.
    remote: String,
    definition: ToolDefinition,
}

impl<H> McpTool<H> {
    /// Tool `remote` of `client`'s server, shown to the model as `definition`.
    pub fn new(client: std::sync::Arc<McpClient<H>>, remote: impl Into<String>, definition: ToolDefinition) -> Self {
        McpTool {
            client,
            remote: remote.into(),
            definition,
        }
    }
}

impl<H> McpTool<H> {
    /// The tool's name on the server.
    pub fn remote(&self) -> &str {
        &self.remote
    }
}

impl<H: HttpClient> crate::tool::Tool for McpTool<H> {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        input: Value,
        ctx: crate::tool::ToolContext<'a>,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + crate::MaybeSend + 'a {
        async move {
            self.client
                .call_tool(&self.remote, &input, ctx.input())
                .await
                .map(Value::String)
        }
    }
}

/// The tools of `client`'s server, each shown to the model as `prefix` + its name.
///
/// # Errors
/// [`Unavailable`] when the server cannot be reached or refuses; a tool name that is not a provider-valid name
/// once prefixed.
pub async fn tools<H: HttpClient>(
    client: std::sync::Arc<McpClient<H>>,
    prefix: &str,
) -> Result<Vec<McpTool<H>>, Unavailable> {
    let listed = client.list_tools().await?;
    listed
        .into_iter()
        .map(|t| {
            let name = format!("{prefix}{}", t.name);
            crate::spec::check_tool_name(&name)
                .map_err(|p| client.unavailable(None, format!("tools/list: the tool name {name:?}: {p}")))?;
            Ok(McpTool::new(
                client.clone(),
                t.name,
                ToolDefinition::new(name, t.description, t.input_schema),
            ))
        })
        .collect()
}
