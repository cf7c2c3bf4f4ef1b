//! Real model providers over HTTP: the wire formats (pure mapping, no I/O) and one retrying model
//! over a small [`HttpClient`] (`fetch` on wasm32; `reqwest` natively behind the `reqwest` feature).

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::model::ModelError;
use crate::model::{Model, ModelRequest, ModelResponse};
use crate::platform::{MaybeSend, MaybeSync};

pub mod anthropic;
pub mod gemini;
pub mod openai;
mod options;
pub mod responses;
pub use options::Configured;

use crate::model::ToolDefinition;
pub mod sse;

use crate::model::{Delta, DeltaSink};
use sse::{SseEvent, SseParser};

#[cfg(all(target_arch = "wasm32", feature = "fetch"))]
pub(crate) mod fetch;
#[cfg(all(not(target_arch = "wasm32"), feature = "reqwest"))]
mod native;
#[cfg(all(target_arch = "wasm32", feature = "fetch"))]
mod workers_ai;

#[cfg(all(target_arch = "wasm32", feature = "fetch"))]
pub use fetch::FetchClient;
#[cfg(all(not(target_arch = "wasm32"), feature = "reqwest"))]
pub use native::ReqwestClient;
#[cfg(all(target_arch = "wasm32", feature = "fetch"))]
pub use workers_ai::WorkersAi;

/// Whether the model must call a tool (`toolChoice` in the npm package), mapped to each wire format. Sent only
/// when the request has tools.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (every API's default).
    Auto,
    /// The model must call some tool. A run then ends only through structured output's answer tool, an
    /// interrupt or its iteration limit: a model that must call a tool never answers in text.
    Required,
    /// The model may not call tools this time.
    None,
    /// The model must call the tool of this name.
    Tool(String),
}

impl ToolChoice {
    /// Checks the choice against the request's tools: a named tool must be one of them, and a forced call
    /// needs tools.
    ///
    /// # Errors
    /// `toolChoice: …`, saying what is wrong.
    pub fn check(&self, tools: &[ToolDefinition]) -> Result<(), String> {
        match self {
            ToolChoice::Tool(name) if !tools.iter().any(|t| &t.name == name) => {
                let known: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                Err(format!(
                    "toolChoice: no tool named {name:?} in the request (tools: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ))
            }
            ToolChoice::Required if tools.is_empty() => {
                Err("toolChoice: 'required' but the request has no tools".to_owned())
            }
            _ => Ok(()),
        }
    }
}

/// Adds `extra` body fields to `body`, where the format did not write the field itself.
pub(crate) fn add_extra(body: &mut serde_json::Map<String, Value>, extra: &serde_json::Map<String, Value>) {
    for (k, v) in extra {
        body.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// One HTTP request: a JSON POST (a provider's, an MCP message), or a GET or DELETE of an MCP session.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpRequest {
    /// `POST` (the body is sent), `GET` or `DELETE` (no body).
    pub method: &'static str,
    /// Absolute URL.
    pub url: String,
    /// Header names and values (the API key among them: never log this struct).
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: String,
    /// Give up after this long.
    pub timeout: Duration,
    /// The most bytes of a 2xx body read; past it the client stops reading and reports the answer
    /// [`HttpResponse::truncated`]. Other answers are read up to [`MAX_ERROR_BODY_BYTES`] (only their start is
    /// shown), so no answer grows memory past what the caller set.
    pub max_response_bytes: usize,
}

impl HttpRequest {
    /// A JSON `POST` of `body` to `url` with `headers`, given up after `timeout`, whose answer may be up to
    /// [`DEFAULT_MAX_RESPONSE_BYTES`] long.
    pub fn post(url: impl Into<String>, headers: Vec<(String, String)>, body: String, timeout: Duration) -> Self {
        HttpRequest {
            method: "POST",
            url: url.into(),
            headers,
            body,
            timeout,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// The same request as a `GET` (no body).
    #[must_use]
    pub fn into_get(mut self) -> Self {
        self.method = "GET";
        self.body = String::new();
        self
    }
}

/// How much of a 2xx answer is read when the caller does not say (16 MiB).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an answer that is not a success is read: its start says what went wrong (64 KiB).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// The most redirects within one origin followed for one request.
pub const MAX_REDIRECTS: usize = 5;

/// One HTTP response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// The `retry-after` header, if any.
    pub retry_after: Option<String>,
    /// Body text.
    pub body: String,
    /// The headers an MCP client reads (`mcp-session-id`, `content-type`) and `location`, names in lower case.
    pub headers: Vec<(String, String)>,
    /// True when the body went on past what the request allowed ([`HttpRequest::max_response_bytes`] for a
    /// 2xx answer, else [`MAX_ERROR_BODY_BYTES`]): `body` is its start only.
    pub truncated: bool,
}

/// The response headers an [`HttpClient`] reports in [`HttpResponse::headers`].
pub const READ_HEADERS: &[&str] = &["mcp-session-id", "content-type", "location"];

impl HttpResponse {
    /// A response.
    pub fn new(status: u16, retry_after: Option<String>, body: String) -> Self {
        HttpResponse {
            status,
            retry_after,
            body,
            headers: Vec::new(),
            truncated: false,
        }
    }

    /// The same response, marked as cut at the request's limit ([`HttpResponse::truncated`]).
    #[must_use]
    pub fn cut(mut self, truncated: bool) -> Self {
        self.truncated = truncated;
        self
    }

    /// The same response with these headers (see [`READ_HEADERS`]).
    #[must_use]
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.headers = headers;
        self
    }

    /// The value of header `name` (lower case), if the client reported it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Receives a response body piece by piece as it arrives (a streamed answer).
pub trait BodySink: MaybeSend {
    /// The next bytes of the body (split anywhere). Returns false to stop reading: the rest is not wanted.
    fn chunk(&mut self, bytes: &[u8]) -> bool;
}

/// Sends requests and waits; the only I/O a provider does.
///
/// A client does not follow redirects (it answers the 3xx, with its `location`): the library follows those
/// that stay on the request's origin and refuses the others ([`send_within_origin`]), since its requests carry
/// credentials that `fetch` would send on to another origin. It reads at most the request's
/// [`HttpRequest::max_response_bytes`] of a 2xx body and [`MAX_ERROR_BODY_BYTES`] of any other, setting
/// [`HttpResponse::truncated`] when there was more.
pub trait HttpClient: MaybeSend + MaybeSync {
    /// Sends `request`. `Err` is a network failure or a timeout, with a message.
    fn send(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend;
    /// Waits `duration` (between retries).
    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + MaybeSend;

    /// True once the client's requests are stopped for good (an aborted signal): a failure then is not
    /// retried, and is reported as [`ModelError::Aborted`]. The default is false.
    fn aborted(&self) -> bool {
        false
    }

    /// Sends `request`; a 2xx body goes to `body` piece by piece as it arrives, and the response returned
    /// has an empty body. Other answers come back whole, as from [`HttpClient::send`]. `Err` is a network
    /// failure or timeout, also one in the middle of the body. The default reads the whole body first.
    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        body: &'a mut dyn BodySink,
    ) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend + 'a
    where
        Self: Sized,
    {
        async move {
            let mut r = self.send(request).await?;
            if (200..300).contains(&r.status) {
                body.chunk(r.body.as_bytes());
                r.body.clear();
            }
            Ok(r)
        }
    }
}

/// A streamed answer rebuilt, event by event, into the body the API would have answered without
/// streaming, so one mapping ([`WireFormat::response`]) reads both.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct StreamedBody {
    /// The body so far.
    pub body: Value,
    /// Per content block or tool call (by index): input JSON text received so far.
    pub partial: std::collections::BTreeMap<usize, String>,
    /// True once the stream said the answer is complete (`message_stop`, `[DONE]`).
    pub done: bool,
}

impl StreamedBody {
    /// The partial input text of entry `index`, created when missing.
    pub fn partial_mut(&mut self, index: usize) -> &mut String {
        self.partial.entry(index).or_default()
    }
}

/// A provider's wire format: how a request is written and a response read. No I/O.
pub trait WireFormat: MaybeSend + MaybeSync {
    /// Name used in errors (`"anthropic"`, `"openai"`).
    fn name(&self) -> &'static str;
    /// The provider as OpenTelemetry's GenAI conventions name it (`gen_ai.provider.name`); the default is
    /// [`WireFormat::name`].
    fn provider(&self) -> &'static str {
        self.name()
    }
    /// The model asked for (`gen_ai.request.model`); the default is none.
    fn model(&self) -> &str {
        ""
    }
    /// The HTTP request for `request` (URL, headers with the key, JSON body).
    fn request(&self, request: &ModelRequest<'_>) -> HttpRequest;
    /// Our response from a 2xx body.
    ///
    /// # Errors
    /// [`ModelError::InvalidResponse`] when the body is not what the API documents.
    fn response(&self, body: &Value) -> Result<ModelResponse, ModelError>;
    /// Checks the settings before a request is sent (a setting the API would refuse with an HTTP 400).
    ///
    /// # Errors
    /// What is wrong, as `<setting>: <problem>`.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether the model must call a tool, when the settings say (checked against each request's tools before
    /// it is sent: [`ToolChoice::check`]). The default is none.
    fn tool_choice(&self) -> Option<&ToolChoice> {
        None
    }

    /// The provider's own error message in an error body, if it has one.
    fn error_message(&self, body: &Value) -> Option<String> {
        body.pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// The request for `request` answered as server-sent events, or `None` when this format does not
    /// stream (the model then answers whole).
    fn stream_request(&self, request: &ModelRequest<'_>) -> Option<HttpRequest> {
        let _ = request;
        None
    }

    /// Folds one server-sent event of a streamed answer into `stream`, reporting its pieces to `sink`.
    ///
    /// # Errors
    /// An error the stream reported, or an event that is not what the API documents.
    fn stream_event(
        &self,
        stream: &mut StreamedBody,
        event: &SseEvent,
        sink: &mut dyn DeltaSink,
    ) -> Result<(), ModelError> {
        let _ = (stream, event, sink);
        Ok(())
    }
}

/// The JSON of an event's data, or an error naming the provider.
pub(crate) fn event_json(provider: &str, event: &SseEvent) -> Result<Value, ModelError> {
    crate::limits::parse_untrusted(&event.data).map_err(|e| ModelError::InvalidResponse {
        path: String::new(),
        problem: format!("{provider} streamed an event that could not be read: {e}"),
    })
}

/// Feeds a streamed body through the SSE parser and the wire format, keeping the first error.
struct StreamReader<'s, W> {
    wire: &'s W,
    parser: SseParser,
    events: Vec<SseEvent>,
    stream: StreamedBody,
    sink: &'s mut dyn DeltaSink,
    error: Option<ModelError>,
    /// Deltas may have been shown: a retry must say so.
    started: bool,
    /// How many more bytes of the stream may be read (the request's `max_response_bytes`).
    left: usize,
}

impl<W: WireFormat> StreamReader<'_, W> {
    fn take_events(&mut self) -> bool {
        for event in std::mem::take(&mut self.events) {
            self.started = true;
            if let Err(e) = self.wire.stream_event(&mut self.stream, &event, &mut *self.sink) {
                self.error = Some(e);
                return false;
            }
        }
        true
    }
}

impl<W: WireFormat> BodySink for StreamReader<'_, W> {
    fn chunk(&mut self, bytes: &[u8]) -> bool {
        if self.error.is_some() {
            return false;
        }
        let Some(left) = self.left.checked_sub(bytes.len()) else {
            self.error = Some(ModelError::InvalidResponse {
                path: String::new(),
                problem: format!(
                    "{} streamed {}",
                    self.wire.name(),
                    too_long_problem(self.parser.limit())
                ),
            });
            return false;
        };
        self.left = left;
        if let Err(problem) = self.parser.push(bytes, &mut self.events) {
            self.error = Some(ModelError::InvalidResponse {
                path: String::new(),
                problem,
            });
            return false;
        }
        self.take_events()
    }
}

/// Retry policy for rate limits (429), overload (529) and server errors (5xx).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retry {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// First backoff; doubled each retry (default 500 ms).
    pub initial_backoff: Duration,
    /// Longest wait, also for a `retry-after` header (default 30 s).
    pub max_backoff: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl Retry {
    /// Retries after the first attempt.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The first backoff (doubled each retry) and the longest wait.
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }
}

/// A [`Model`] speaking `W` over `C`, with retries and a timeout; the API key is redacted from errors.
pub struct HttpModel<W, C> {
    wire: W,
    client: C,
    retry: Retry,
    secret: String,
}

impl<W: WireFormat, C: HttpClient> HttpModel<W, C> {
    /// A model over `client`. `secret` (the API key) is scrubbed from every error message.
    pub fn new(wire: W, client: C, secret: impl Into<String>) -> Self {
        HttpModel {
            wire,
            client,
            retry: Retry::default(),
            secret: secret.into(),
        }
    }

    /// Sets the retry policy.
    pub fn retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }

    /// `text` without the API key and whatever else of `request` may be a credential — whole, or any piece
    /// of one at least [`MIN_FRAGMENT`] bytes long (a server that echoes `sk-proj-abcdefgh…wxyz`) — then cut to
    /// a readable length (in that order, so no prefix of a secret survives the cut).
    fn redact(&self, request: &HttpRequest, text: &str) -> String {
        let mut secrets = secrets_in(&request.headers, &request.url);
        secrets.push(self.secret.clone());
        let secrets: Vec<&str> = secrets
            .iter()
            .map(String::as_str)
            .filter(|s| s.len() >= MIN_REDACTED_LEN)
            .collect();
        // A long body (an HTML error page) is cut to a few times what is kept first: a piece of a secret the
        // cut leaves is still a piece, and is taken out.
        let text = truncate(text, 4 * MAX_ERROR_MESSAGE);
        truncate(&redact_userinfo(&redact_fragments(&text, &secrets)), MAX_ERROR_MESSAGE)
    }

    fn http_error(&self, request: &HttpRequest, status: Option<u16>, message: &str) -> ModelError {
        let retryable = status.is_none_or(is_retryable);
        ModelError::Http {
            provider: self.wire.name().to_owned(),
            status,
            message: self.redact(request, message),
            retryable,
        }
    }

    fn backoff(&self, attempt: u32, retry_after: Option<&str>) -> Duration {
        let exponential = self.retry.initial_backoff.saturating_mul(2u32.saturating_pow(attempt));
        let wait = retry_after
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0);
        wait.map_or(exponential, Duration::from_secs_f64)
            .min(self.retry.max_backoff)
    }
}

/// Sends `request` through `client` (its 2xx body into `sink` when one is given), following redirects that
/// stay on the request's origin, at most [`MAX_REDIRECTS`], with the same method, headers and body. A redirect to
/// another origin is not followed: the request carries credentials (`x-api-key`, `x-goog-api-key`, an MCP
/// server's headers, the body itself) that `fetch` would send on, as it strips only `authorization` and
/// `cookie`. It comes back as the 3xx answer, whose body says where it led; so does a redirect whose target
/// the host hides (a browser's opaque redirect, status 0) and one redirect too many.
///
/// # Errors
/// The client's: a network failure or a timeout.
pub(crate) async fn send_within_origin<C: HttpClient>(
    client: &C,
    mut request: HttpRequest,
    mut sink: Option<&mut dyn BodySink>,
) -> Result<HttpResponse, String> {
    let mut hops = 0;
    loop {
        let response = match sink.as_deref_mut() {
            Some(sink) => client.send_streaming(request.clone(), sink).await?,
            None => client.send(request.clone()).await?,
        };
        let from = origin(&request.url);
        let not_followed = |response: HttpResponse, why: String| {
            let mut refused = HttpResponse::new(
                response.status,
                None,
                format!("{why}: not followed, as the request carries credentials"),
            );
            refused.headers = response.headers;
            refused
        };
        match response.status {
            0 => {
                return Ok(not_followed(
                    response,
                    format!("{from} redirected the request (the host does not say where)"),
                ));
            }
            301 | 302 | 303 | 307 | 308 => {}
            _ => return Ok(response),
        }
        let Some(location) = response.header("location") else {
            return Ok(response);
        };
        let target = resolve(&request.url, location);
        let to = origin(&target);
        // A target URL parsers may read differently (a backslash, a control character) is never "the same".
        let ambiguous = target.chars().any(|c| c.is_ascii_control() || c == '\\' || c == ' ');
        if to != from || ambiguous {
            let why = format!(
                "{from} redirected the request to another origin, {to} (HTTP {}; use that URL yourself if you trust it)",
                response.status
            );
            return Ok(not_followed(response, why));
        }
        if hops == MAX_REDIRECTS {
            return Ok(not_followed(
                response,
                format!("{from} redirected the request more than {MAX_REDIRECTS} times"),
            ));
        }
        hops += 1;
        request.url = target;
    }
}

/// `scheme://host:port` of `url`, in lower case: what errors and `Debug` name (never a path, query or
/// credential), and what decides whether a redirect stays where the request was sent.
pub(crate) fn origin(url: &str) -> String {
    let host = host_of(url).to_ascii_lowercase();
    match url.split_once("://") {
        Some((scheme, _)) => format!("{}://{host}", scheme.to_ascii_lowercase()),
        None => host,
    }
}

/// A redirect's `location` (absolute, scheme-relative, an absolute path, a query or a relative path) read
/// against the URL the request went to.
fn resolve(base: &str, location: &str) -> String {
    let location = location.trim();
    let has_scheme = location.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if has_scheme {
        return location.to_owned();
    }
    let scheme = base.split_once("://").map_or("https", |(s, _)| s);
    if let Some(rest) = location.strip_prefix("//") {
        return format!("{scheme}://{rest}");
    }
    let origin = format!(
        "{scheme}://{}",
        base.split_once("://")
            .map_or(base, |(_, r)| r)
            .split(['/', '?', '#'])
            .next()
            .unwrap_or_default()
    );
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let path = base
        .get(origin.len()..)
        .unwrap_or_default()
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    if location.starts_with('?') {
        return format!("{origin}{path}{location}");
    }
    let dir = path.rfind('/').map_or("/", |at| path.get(..=at).unwrap_or("/"));
    format!("{origin}{dir}{location}")
}

/// The host (and port) of `url`, to name in a network failure (and MCP errors): never its path or query.
pub(crate) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    // WHATWG URLs end the authority of http(s) at a backslash too.
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or(rest);
    // Without the user and password a URL may carry.
    authority.rsplit_once('@').map_or(authority, |(_, host)| host)
}

/// 429, 529 (overloaded), 408 and 5xx are worth retrying; other 4xx are not.
fn is_retryable(status: u16) -> bool {
    matches!(status, 408 | 429 | 529) || (500..600).contains(&status)
}

/// The answer's id and model from its body, when the format did not read them (`id`, Gemini's
/// `responseId`; `model`, Gemini's `modelVersion`).
fn stamped(response: Result<ModelResponse, ModelError>, body: &Value) -> Result<ModelResponse, ModelError> {
    let text = |keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| body.get(k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    response.map(|mut r| {
        if r.id.is_none() {
            r.id = text(["id", "responseId"]);
        }
        if r.model.is_none() {
            r.model = text(["model", "modelVersion"]);
        }
        r
    })
}

/// Counts a retry where the request asks for it.
fn count_retry(request: &ModelRequest<'_>) {
    if let Some(n) = request.retries {
        n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl<W: WireFormat, C: HttpClient> Model for HttpModel<W, C> {
    fn info(&self) -> crate::model::ModelInfo<'_> {
        crate::model::ModelInfo::new(self.wire.provider(), self.wire.model())
    }

    fn complete<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let mut http = self.wire.request(&request);
        http.max_response_bytes = request.max_response_bytes;
        let checked = self.wire.tool_choice().map_or(Ok(()), |c| c.check(request.tools));
        async move {
            self.settings(checked)?;
            let mut attempt = 0;
            loop {
                let (error, retry_after) = match send_within_origin(&self.client, http.clone(), None).await {
                    Err(network) => (self.http_error(&http, None, &network), None),
                    Ok(r) if (200..300).contains(&r.status) && r.truncated => {
                        return Err(self.too_long(http.max_response_bytes));
                    }
                    Ok(r) if (200..300).contains(&r.status) => {
                        let body =
                            crate::limits::parse_untrusted(&r.body).map_err(|e| ModelError::InvalidResponse {
                                path: String::new(),
                                problem: match e {
                                    crate::limits::UntrustedJson::Invalid(e) => {
                                        format!("{} answered with invalid JSON: {e}", self.wire.name())
                                    }
                                    costly => format!("{} answered {costly}", self.wire.name()),
                                },
                            })?;
                        return stamped(self.wire.response(&body), &body);
                    }
                    Ok(r) => self.status_error(&http, r),
                };
                let error = self.unless_aborted(error);
                let wait = self.retry_wait(&error, attempt, retry_after.as_deref()).ok_or(error)?;
                self.client.sleep(wait).await;
                count_retry(&request);
                attempt += 1;
            }
        }
    }

    /// Streams the answer as server-sent events when the format can, reporting text and tool input to
    /// `sink` as they arrive. Only a complete answer is returned: a stream that breaks or ends early is
    /// retried like a failed request (after [`Delta::Restart`]), then fails with a retryable error.
    fn stream<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn DeltaSink,
    ) -> impl Future<Output = Result<ModelResponse, ModelError>> + MaybeSend + 'a {
        let http = self.wire.stream_request(&request);
        let checked = self.wire.tool_choice().map_or(Ok(()), |c| c.check(request.tools));
        async move {
            let Some(mut http) = http else {
                return self.complete(request).await;
            };
            http.max_response_bytes = request.max_response_bytes;
            self.settings(checked)?;
            let mut attempt = 0;
            let mut shown = false;
            loop {
                if shown {
                    sink.delta(Delta::Restart);
                }
                let mut reader = StreamReader {
                    wire: &self.wire,
                    parser: SseParser::with_limit(http.max_response_bytes),
                    events: Vec::new(),
                    stream: StreamedBody::default(),
                    sink: &mut *sink,
                    error: None,
                    started: false,
                    left: http.max_response_bytes,
                };
                let sent = send_within_origin(&self.client, http.clone(), Some(&mut reader)).await;
                if reader.error.is_none() {
                    reader.parser.finish(&mut reader.events);
                    reader.take_events();
                }
                shown = reader.started;
                let (error, retry_after) = match (sent, reader.error.take()) {
                    (_, Some(e)) => (self.redact_error(&http, e), None),
                    (Err(network), None) => (
                        self.http_error(&http, None, &format!("the stream broke: {network}")),
                        None,
                    ),
                    (Ok(r), None) if (200..300).contains(&r.status) => {
                        if reader.stream.done {
                            let body = &reader.stream.body;
                            return stamped(self.wire.response(body), body);
                        }
                        let problem = "the stream ended before the answer was complete";
                        (self.http_error(&http, None, problem), None)
                    }
                    (Ok(r), None) => self.status_error(&http, r),
                };
                let error = self.unless_aborted(error);
                let wait = self.retry_wait(&error, attempt, retry_after.as_deref()).ok_or(error)?;
                self.client.sleep(wait).await;
                count_retry(&request);
                attempt += 1;
            }
        }
    }
}

impl<W: WireFormat, C: HttpClient> HttpModel<W, C> {
    /// Refuses settings the API would refuse (`request`: what the request's own check found), before anything
    /// is sent.
    fn settings(&self, request: Result<(), String>) -> Result<(), ModelError> {
        self.wire.check().and(request).map_err(|problem| ModelError::Settings {
            provider: self.wire.name().to_owned(),
            problem,
        })
    }

    /// An answer longer than the request allowed (not retried: it would be as long again).
    fn too_long(&self, limit: usize) -> ModelError {
        ModelError::InvalidResponse {
            path: String::new(),
            problem: format!("{} answered {}", self.wire.name(), too_long_problem(limit)),
        }
    }

    /// The error of a non-2xx answer, and its `retry-after`.
    fn status_error(&self, http: &HttpRequest, r: HttpResponse) -> (ModelError, Option<String>) {
        let body: Value = crate::limits::parse_untrusted(&r.body).unwrap_or(Value::Null);
        let message = self.wire.error_message(&body).unwrap_or_else(|| r.body.clone());
        (self.http_error(http, Some(r.status), &message), r.retry_after)
    }

    /// An error a stream reported, with the request's secrets taken out of its message.
    fn redact_error(&self, http: &HttpRequest, e: ModelError) -> ModelError {
        match e {
            ModelError::Http {
                provider,
                status,
                message,
                retryable,
            } => ModelError::Http {
                provider,
                status,
                message: self.redact(http, &message),
                retryable,
            },
            other => other,
        }
    }

    /// How long to wait before trying `error`'s request again, or `None` when it is not worth it.
    fn retry_wait(&self, error: &ModelError, attempt: u32, retry_after: Option<&str>) -> Option<Duration> {
        let retryable = matches!(error, ModelError::Http { retryable: true, .. });
        (retryable && attempt < self.retry.max_retries).then(|| self.backoff(attempt, retry_after))
    }

    /// `error`, or [`ModelError::Aborted`] when the client was stopped (whatever the failure looked like).
    fn unless_aborted(&self, error: ModelError) -> ModelError {
        if self.client.aborted() {
            ModelError::Aborted {
                provider: self.wire.name().to_owned(),
            }
        } else {
            error
        }
    }
}

/// What is wrong with an answer longer than `limit` bytes.
fn too_long_problem(limit: usize) -> String {
    format!("more than {limit} bytes (the agent's maxCheckpointBytes): the rest was not read")
}

/// The longest error message kept from a provider, in bytes.
const MAX_ERROR_MESSAGE: usize = 300;

/// Shorter values are not redacted (they would blank out ordinary words and numbers).
const MIN_REDACTED_LEN: usize = 6;

/// Header names whose values are never credentials.
const PUBLIC_HEADERS: [&str; 5] = [
    "content-type",
    "accept",
    "anthropic-version",
    "anthropic-beta",
    "anthropic-dangerous-direct-browser-access",
];

/// Everything in a request's `headers` and `url` that may be a credential: header values (but for a few known
/// public ones, and the token of `Bearer …` as well as the whole value), the user info of the URL, and its
/// query values.
pub(crate) fn secrets_in(headers: &[(String, String)], url: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in headers {
        if PUBLIC_HEADERS.iter().any(|p| name.eq_ignore_ascii_case(p)) {
            continue;
        }
        out.push(value.clone());
        if let Some((_, token)) = value.split_once(' ') {
            out.push(token.to_owned());
        }
    }
    if let Some((_, rest)) = url.split_once("://") {
        let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
        if let Some((userinfo, _)) = authority.rsplit_once('@') {
            out.push(userinfo.to_owned());
            out.extend(userinfo.split(':').map(str::to_owned));
        }
    }
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or_default();
        out.extend(
            query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .map(|(_, v)| v.to_owned()),
        );
    }
    out
}

/// The shortest piece of a secret taken out of an error message (secrets shorter than it go whole).
const MIN_FRAGMENT: usize = 8;

/// `text` with every piece of a secret in `secrets` — the whole secret, or any [`MIN_FRAGMENT`] bytes or more
/// of it — as `[redacted]`.
pub(crate) fn redact_fragments(text: &str, secrets: &[&str]) -> String {
    let bytes = text.as_bytes();
    let mut hidden = vec![false; bytes.len()];
    for secret in secrets {
        let window = MIN_FRAGMENT.min(secret.len());
        for piece in secret.as_bytes().windows(window) {
            // A piece with a space is a header's scheme beside its token ("Bearer sk-…"), not a secret's.
            let Ok(piece) = std::str::from_utf8(piece) else {
                continue;
            };
            if piece.contains(char::is_whitespace) {
                continue;
            }
            for (at, _) in text.match_indices(piece) {
                if let Some(h) = hidden.get_mut(at..at + piece.len()) {
                    h.fill(true);
                }
            }
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut in_secret = false;
    for (i, c) in text.char_indices() {
        if hidden.get(i).copied().unwrap_or(false) {
            if !in_secret {
                out.push_str("[redacted]");
            }
            in_secret = true;
        } else {
            in_secret = false;
            out.push(c);
        }
    }
    out
}

/// Every `scheme://user:password@` in `text` as `scheme://[redacted]@` (a URL echoed in an error).
pub(crate) fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let authority_end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = tail.get(..authority_end).unwrap_or_default();
        match authority.rfind('@') {
            Some(userinfo_end) => {
                out.push_str("[redacted]");
                rest = tail.get(userinfo_end..).unwrap_or_default();
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let cut = (0..=max).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    format!("{}…", s.get(..cut).unwrap_or_default())
}

/// A body kept up to `limit` bytes; past it, reading stops ([`BodySink::chunk`] answers false). Kept as its
/// chunks and joined once at the end: a buffer that grows while it reads holds up to three times what it keeps
/// while it moves, and the allocator keeps what it freed.
#[derive(Debug)]
pub(crate) struct BoundedBody {
    chunks: Vec<Vec<u8>>,
    len: usize,
    limit: usize,
    truncated: bool,
}

impl BoundedBody {
    pub(crate) fn new(limit: usize) -> Self {
        BoundedBody {
            chunks: Vec::new(),
            len: 0,
            limit,
            truncated: false,
        }
    }

    /// True when the body went on past the limit.
    #[cfg_attr(not(any(feature = "fetch", feature = "reqwest")), allow(dead_code))]
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }

    /// The first byte kept that is not ASCII white space.
    pub(crate) fn first_non_space(&self) -> Option<u8> {
        self.chunks.iter().flatten().copied().find(|b| !b.is_ascii_whitespace())
    }

    /// What it keeps, in one piece.
    pub(crate) fn joined(self) -> Vec<u8> {
        if self.chunks.len() == 1 {
            return self.chunks.into_iter().next().unwrap_or_default();
        }
        let mut all = Vec::with_capacity(self.len);
        for c in self.chunks {
            all.extend_from_slice(&c);
        }
        all
    }
}

impl BodySink for BoundedBody {
    fn chunk(&mut self, bytes: &[u8]) -> bool {
        let room = self.limit.saturating_sub(self.len);
        let kept = bytes.get(..room.min(bytes.len())).unwrap_or_default();
        if !kept.is_empty() {
            self.len += kept.len();
            self.chunks.push(kept.to_vec());
        }
        if bytes.len() > room {
            self.truncated = true;
            return false;
        }
        true
    }
}

/// A body's bytes as text, in place when they are UTF-8 (no second copy of a large answer), else with each
/// broken sequence as U+FFFD.
pub(crate) fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Joins a base URL and a path with exactly one slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Scripted {
        answers: Mutex<Vec<Result<HttpResponse, String>>>,
        slept: Mutex<Vec<Duration>>,
        seen: Mutex<Vec<HttpRequest>>,
    }

    impl HttpClient for Scripted {
        fn send(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend {
            self.seen.lock().unwrap().push(request);
            let next = self.answers.lock().unwrap().remove(0);
            std::future::ready(next)
        }
        fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + MaybeSend {
            self.slept.lock().unwrap().push(duration);
            std::future::ready(())
        }
    }

    fn model(answers: Vec<Result<HttpResponse, String>>) -> HttpModel<anthropic::Anthropic, Scripted> {
        let client = Scripted {
            answers: Mutex::new(answers),
            slept: Mutex::default(),
            seen: Mutex::default(),
        };
        HttpModel::new(
            anthropic::Anthropic::new("sk-secret-key", "claude-test"),
            client,
            "sk-secret-key",
        )
    }

    fn ok() -> Result<HttpResponse, String> {
        Ok(HttpResponse::new(200, None, r#"{"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}"#.into()))
    }

    fn run(m: &HttpModel<anthropic::Anthropic, Scripted>) -> Result<ModelResponse, ModelError> {
        let messages = [crate::Message::user("hello")];
        pollster::block_on(m.complete(ModelRequest::new(&messages, &[])))
    }

    #[test]
    fn retries_429_honouring_retry_after_then_succeeds() {
        let m = model(vec![
            Ok(HttpResponse::new(
                429,
                Some("2".into()),
                r#"{"error":{"message":"slow down"}}"#.into(),
            )),
            ok(),
        ]);
        assert_eq!(run(&m).unwrap().usage.unwrap().input_tokens, 3);
        assert_eq!(*m.client.slept.lock().unwrap(), [Duration::from_secs(2)]);
    }

    #[test]
    fn exhausted_retries_give_a_typed_retryable_error_without_the_key() {
        let body = r#"{"type":"error","error":{"type":"api_error","message":"boom for sk-secret-key"}}"#;
        let m = model(vec![Ok(HttpResponse::new(500, None, body.into())); 3]);
        let err = run(&m).unwrap_err();
        assert_eq!(
            err,
            ModelError::Http {
                provider: "anthropic".into(),
                status: Some(500),
                message: "boom for [redacted]".into(),
                retryable: true
            }
        );
        assert_eq!(
            *m.client.slept.lock().unwrap(),
            [Duration::from_millis(500), Duration::from_millis(1000)]
        );
        assert!(!err.to_string().contains("sk-secret"));
    }

    #[test]
    fn credentials_are_redacted_before_the_message_is_cut() {
        let mut wire = anthropic::Anthropic::new("sk-ant-0123456789abcdef", "claude-test");
        wire.base_url = "https://proxyuser:proxy-pass-123@gateway.example/anthropic?token=tok-98765".into();
        wire.headers = vec![("x-gateway-key".into(), "gw-key-abcdef".into())];
        let echoed = format!(
            "{} key sk-ant-0123456789abcdef header gw-key-abcdef user proxyuser:proxy-pass-123 token tok-98765",
            "x".repeat(280)
        );
        let body = serde_json::json!({"error": {"message": echoed}}).to_string();
        let client = Scripted {
            answers: Mutex::new(vec![Ok(HttpResponse::new(400, None, body))]),
            slept: Mutex::default(),
            seen: Mutex::default(),
        };
        let m = HttpModel::new(wire, client, "sk-ant-0123456789abcdef");
        let message = run(&m).unwrap_err().to_string();
        for secret in ["sk-ant", "0123456789", "gw-key", "proxy-pass", "tok-98765", "proxyuser"] {
            assert!(!message.contains(secret), "{secret} in {message}");
        }
        // The key straddled the 300-byte cut: redacting first leaves none of it.
        assert!(message.contains("[redacted]") || message.ends_with('…'), "{message}");
        let m = model(vec![Err("could not reach https://user:hunter2-pass@host/".into()); 3]);
        let message = run(&m).unwrap_err().to_string();
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn a_key_echoed_in_pieces_is_taken_out_piece_by_piece() {
        let key = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let echoed = format!(
            "Incorrect API key provided: {}…{}. You can find your key at …",
            &key[..20],
            &key[key.len() - 4..]
        );
        let body = serde_json::json!({"error": {"message": echoed}}).to_string();
        let client = Scripted {
            answers: Mutex::new(vec![Ok(HttpResponse::new(401, None, body))]),
            slept: Mutex::default(),
            seen: Mutex::default(),
        };
        let m = HttpModel::new(anthropic::Anthropic::new(key, "claude-test"), client, key);
        let message = run(&m).unwrap_err().to_string();
        assert!(
            !message.contains(&key[..8]) && !message.contains(&key[10..18]),
            "{message}"
        );
        assert!(message.contains("Incorrect API key provided: [redacted]…"), "{message}");
        assert_eq!(
            redact_fragments("a 1234567 b", &["01234567"]),
            "a 1234567 b",
            "7 bytes of it stay"
        );
        assert_eq!(redact_fragments("a x12345678y b", &["12345678"]), "a x[redacted]y b");
    }

    #[test]
    fn a_4xx_is_not_retried_and_network_errors_are() {
        let m = model(vec![Ok(HttpResponse::new(
            400,
            None,
            r#"{"error":{"message":"bad"}}"#.into(),
        ))]);
        assert!(matches!(
            run(&m),
            Err(ModelError::Http {
                status: Some(400),
                retryable: false,
                ..
            })
        ));
        let m = model(vec![Err("connection refused".into()), ok()]);
        assert!(run(&m).is_ok());
    }
}
