//! `FetchClient`: HTTP through the host's `fetch` (Cloudflare Workers, browsers, Node ≥ 18).

use std::future::Future;
use std::time::Duration;

use js_sys::{Object, Promise, Reflect};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::{BodySink, HttpClient, HttpRequest, HttpResponse};
use crate::platform::MaybeSend;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch, catch)]
    fn global_fetch(url: &str, init: &JsValue) -> Result<Promise, JsValue>;
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(callback: &js_sys::Function, ms: f64) -> JsValue;

    // Every member of what a `fetch` answers is reached through `catch`: a `fetch` of the program's own may
    // answer anything, and a JS exception thrown through wasm would lose the instance.
    type FetchResponse;
    #[wasm_bindgen(method, catch)]
    fn text(this: &FetchResponse) -> Result<Promise, JsValue>;

    type ReadableStream;
    #[wasm_bindgen(method, js_name = getReader, catch)]
    fn get_reader(this: &ReadableStream) -> Result<StreamReader, JsValue>;

    type StreamReader;
    #[wasm_bindgen(method, catch)]
    fn read(this: &StreamReader) -> Result<Promise, JsValue>;
    #[wasm_bindgen(method, catch)]
    fn cancel(this: &StreamReader) -> Result<Promise, JsValue>;

    type FetchHeaders;
    #[wasm_bindgen(method, catch)]
    fn get(this: &FetchHeaders, name: &str) -> Result<JsValue, JsValue>;

    type AbortController;
    #[wasm_bindgen(constructor, catch)]
    fn new() -> Result<AbortController, JsValue>;
    #[wasm_bindgen(method, getter)]
    fn signal(this: &AbortController) -> JsValue;
    #[wasm_bindgen(js_name = clearTimeout)]
    fn clear_timeout(id: &JsValue);
}

/// The host's `fetch`, with an abort timer for the request timeout and `setTimeout` for backoff.
#[derive(Debug, Clone, Default)]
pub struct FetchClient {
    /// `AbortSignal`s that stop its requests (the provider's own, a call's).
    signals: Vec<JsValue>,
    /// A `fetch` of the program's own (`(url, init) => Promise<Response>`), instead of the global one.
    fetch: Option<js_sys::Function>,
}

impl FetchClient {
    /// A client whose requests also stop when `signal` (an `AbortSignal`) aborts.
    pub fn with_signal(signal: JsValue) -> Self {
        FetchClient {
            signals: vec![signal],
            fetch: None,
        }
    }

    /// The same client, sending through `fetch` (a function like the global `fetch`) instead.
    #[must_use]
    pub fn through(mut self, fetch: js_sys::Function) -> Self {
        self.fetch = Some(fetch);
        self
    }

    /// The same client, whose requests also stop when `signal` aborts.
    #[must_use]
    pub fn also_stopped_by(mut self, signal: JsValue) -> Self {
        self.signals.push(signal);
        self
    }

    /// True once one of its signals aborted.
    fn stopped(&self) -> bool {
        self.signals.iter().any(is_aborted)
    }
}

fn is_aborted(signal: &JsValue) -> bool {
    Reflect::get(signal, &"aborted".into()).ok().and_then(|a| a.as_bool()) == Some(true)
}

fn message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map_or_else(
        || format!("{e:?}"),
        |e| format!("{}: {}", String::from(e.name()), String::from(e.message())),
    )
}

/// Why a request of `client` failed, naming the host: its signal, its timeout (`timeoutMs`), or `cause` (what
/// `fetch` or the body's stream said).
fn failure(request: &HttpRequest, timer: Option<&AbortTimer>, client: &FetchClient, cause: &str) -> String {
    let host = super::host_of(&request.url);
    if client.stopped() {
        return format!("{host}: aborted by its signal");
    }
    if timer.is_some_and(|t| is_aborted(&t.signal)) {
        return format!("{host}: timed out after {} ms (timeoutMs)", request.timeout.as_millis());
    }
    format!("{host}: {cause}")
}

impl HttpClient for FetchClient {
    fn send(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend {
        async move {
            let (response, timer) = self.fetch(&request).await?;
            let failed = |e: String| failure(&request, timer.as_ref(), self, &e);
            let limit = response.body_limit(&request);
            let deadline = timer.as_ref().map(|t| &t.deadline);
            let (body, truncated) = response.read_text(limit, deadline).await.map_err(failed)?;
            Ok(response.into_http(body).cut(truncated))
        }
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        body: &'a mut dyn BodySink,
    ) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend + 'a {
        async move {
            let (response, timer) = self.fetch(&request).await?;
            let failed = |e: String| failure(&request, timer.as_ref(), self, &e);
            let deadline = timer.as_ref().map(|t| &t.deadline);
            let ok = (200..300).contains(&response.status);
            let stream = match &response.stream {
                Some(stream) if ok => stream,
                _ => {
                    let limit = response.body_limit(&request);
                    let (text, truncated) = response.read_text(limit, deadline).await.map_err(failed)?;
                    if ok {
                        // A Response of the program's own without a body stream: its text, as one piece.
                        body.chunk(text.as_bytes());
                        return Ok(response.into_http(String::new()).cut(truncated));
                    }
                    return Ok(response.into_http(text).cut(truncated));
                }
            };
            read_stream(stream, body, deadline).await.map_err(failed)?;
            Ok(response.into_http(String::new()))
        }
    }

    fn aborted(&self) -> bool {
        self.stopped()
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + MaybeSend {
        let ms = duration.as_millis() as f64;
        let promise = Promise::new(&mut |resolve, _| {
            set_timeout(&resolve, ms);
        });
        async move {
            let _ = JsFuture::from(promise).await;
        }
    }
}

/// What a `fetch` answered, checked to be a Response (by its members: a polyfill's Response counts) before
/// anything of it is used.
struct Answered {
    status: u16,
    retry_after: Option<String>,
    headers: Vec<(String, String)>,
    /// Its body as a stream, when it has one.
    stream: Option<JsValue>,
    response: FetchResponse,
}

impl Answered {
    /// `value` as a response, or what it is instead.
    fn read(value: JsValue) -> Result<Self, String> {
        let not_a_response = |what: &str| format!("fetch answered {what}, not a Response");
        if !value.is_object() {
            return Err(not_a_response(&describe(&value)));
        }
        let member = |name: &str| Reflect::get(&value, &name.into()).unwrap_or(JsValue::UNDEFINED);
        let status = member("status")
            .as_f64()
            .filter(|s| s.fract() == 0.0 && (0.0..1000.0).contains(s))
            .ok_or_else(|| not_a_response("an object without a numeric status"))?;
        let headers = member("headers");
        if !Reflect::get(&headers, &"get".into()).is_ok_and(|g| g.is_function()) {
            return Err(not_a_response("an object without headers.get()"));
        }
        let headers: FetchHeaders = headers.unchecked_into();
        let header = |name: &str| headers.get(name).ok().and_then(|v| v.as_string());
        let stream =
            Some(member("body")).filter(|b| Reflect::get(b, &"getReader".into()).is_ok_and(|g| g.is_function()));
        if stream.is_none() && !member("text").is_function() {
            return Err(not_a_response("an object without a body or text()"));
        }
        Ok(Answered {
            status: status as u16,
            retry_after: header("retry-after"),
            headers: super::READ_HEADERS
                .iter()
                .filter_map(|name| header(name).map(|v| ((*name).to_owned(), v)))
                .collect(),
            stream,
            response: value.unchecked_into(),
        })
    }

    /// How much of this answer's body `request` reads.
    fn body_limit(&self, request: &HttpRequest) -> usize {
        if (200..300).contains(&self.status) {
            request.max_response_bytes
        } else {
            super::MAX_ERROR_BODY_BYTES
        }
    }

    /// The body as text, at most `limit` bytes of it (and whether there was more), before `deadline` rejects.
    async fn read_text(&self, limit: usize, deadline: Option<&Promise>) -> Result<(String, bool), String> {
        let mut bytes = super::BoundedBody::new(limit);
        match &self.stream {
            Some(stream) => read_stream(stream, &mut bytes, deadline).await?,
            None => {
                let text = self.response.text().map_err(|e| message(&e))?;
                let text = JsFuture::from(race(text, deadline)).await.map_err(|e| message(&e))?;
                let text: js_sys::JsString = text.dyn_into().map_err(|_| "text() did not give a string".to_owned())?;
                // Cut in JS before copying into wasm: a UTF-16 unit is at most 3 bytes of UTF-8.
                let text = if text.length() as usize > limit {
                    text.slice(0, limit as u32)
                } else {
                    text
                };
                bytes.chunk(String::from(text).as_bytes());
            }
        }
        let truncated = bytes.truncated();
        Ok((super::text_of(bytes.joined()), truncated))
    }

    fn into_http(self, body: String) -> HttpResponse {
        HttpResponse::new(self.status, self.retry_after, body).with_headers(self.headers)
    }
}

/// `value` in a few words, for an error (never its contents).
fn describe(value: &JsValue) -> String {
    if value.is_undefined() {
        "undefined".to_owned()
    } else if value.is_null() {
        "null".to_owned()
    } else {
        value
            .js_typeof()
            .as_string()
            .map_or_else(|| "a value".to_owned(), |t| format!("a {t}"))
    }
}

/// `promise`, unless `deadline` rejects first.
fn race(promise: Promise, deadline: Option<&Promise>) -> Promise {
    match deadline {
        Some(deadline) => Promise::race(&js_sys::Array::of2(&promise, deadline)),
        None => promise,
    }
}

/// Reads a `ReadableStream` of bytes into `body` until it ends or `body` has enough (then cancels it), each
/// read raced against `deadline` (so a stream that never ends holds nothing past the request's timeout).
///
/// # Errors
/// The stream's error (a broken connection), or the deadline's, as a message.
pub(crate) async fn read_stream(
    stream: &JsValue,
    body: &mut dyn BodySink,
    deadline: Option<&Promise>,
) -> Result<(), String> {
    let stream: &ReadableStream = stream.unchecked_ref();
    let reader = stream.get_reader().map_err(|e| message(&e))?;
    // Cancels the body when this future ends early (dropped, the sink has enough, the deadline passed).
    let mut reader = CancelOnDrop(reader, true);
    loop {
        let read = JsFuture::from(race(reader.0.read().map_err(|e| message(&e))?, deadline)).await;
        let next = read.map_err(|e| {
            // A broken body is already closed (cancelling it would only reject); one past the deadline may not be.
            reader.1 = deadline.is_some();
            message(&e)
        })?;
        if Reflect::get(&next, &"done".into()).ok().and_then(|d| d.as_bool()) == Some(true) {
            reader.1 = false;
            return Ok(());
        }
        let value = Reflect::get(&next, &"value".into()).unwrap_or(JsValue::UNDEFINED);
        if !value.is_object() {
            return Err(format!("the body's stream gave {} instead of bytes", describe(&value)));
        }
        let bytes = js_sys::Uint8Array::new(&value).to_vec();
        if !body.chunk(&bytes) {
            return Ok(());
        }
    }
}

thread_local! {
    /// One do-nothing rejection handler for every promise whose failure is nobody's concern (made once: a
    /// closure per promise would be kept until called, and these are never called when all goes well).
    static IGNORE: Closure<dyn FnMut(JsValue)> = Closure::new(|_: JsValue| {});
}

/// Handles `promise`'s rejection by ignoring it (a cancelled stream that had already failed rejects; an
/// unhandled rejection ends a Node process).
fn ignore_rejection(promise: &Promise) {
    IGNORE.with(|f| {
        let _ = promise.catch(f);
    });
}

/// A body reader cancelled when dropped while its body is still open (the flag).
struct CancelOnDrop(StreamReader, bool);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.1 {
            if let Ok(cancelled) = self.0.cancel() {
                ignore_rejection(&cancelled);
            }
        }
    }
}

/// The one signal of a request: aborted after its timeout or when one of the client's signals aborts; its
/// timer cleared and its listeners removed when the request is over (dropped). Not `AbortSignal.timeout`: its
/// timer (and the signal) would stay alive for the whole timeout after every request, ~0.9 KB each; not
/// `AbortSignal.any`: its sources keep weak references to what depends on them, which a host that never
/// returns to its event loop between requests (a tight `await` loop) does not let go.
struct AbortTimer {
    signal: JsValue,
    /// Rejects when `signal` aborts: raced against every step of the request, so that a `fetch` of the
    /// program's own that ignores the signal still ends at the deadline.
    deadline: Promise,
    id: JsValue,
    /// `(signal, listener)` added to the client's signals, removed on drop.
    listening: Vec<(JsValue, js_sys::Function)>,
}

impl AbortTimer {
    fn start(ms: f64, signals: &[JsValue]) -> Option<Self> {
        let controller = AbortController::new().ok()?;
        let abort: js_sys::Function = Reflect::get(&controller, &"abort".into()).ok()?.dyn_into().ok()?;
        let abort = abort.bind0(&controller);
        let id = set_timeout(&abort, ms);
        let mut listening = Vec::new();
        for signal in signals {
            if is_aborted(signal) {
                let _ = abort.call0(&JsValue::UNDEFINED);
            } else if let Some(add) = Reflect::get(signal, &"addEventListener".into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            {
                let _ = add.call2(signal, &"abort".into(), &abort);
                listening.push((signal.clone(), abort.clone()));
            }
        }
        let signal = controller.signal();
        let deadline = Promise::new(&mut |_, reject| {
            if let Some(add) = Reflect::get(&signal, &"addEventListener".into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            {
                let _ = add.call2(&signal, &"abort".into(), &reject);
            }
        });
        Some(AbortTimer {
            signal,
            deadline,
            id,
            listening,
        })
    }
}

impl Drop for AbortTimer {
    fn drop(&mut self) {
        clear_timeout(&self.id);
        for (signal, listener) in &self.listening {
            if let Some(remove) = Reflect::get(signal, &"removeEventListener".into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            {
                let _ = remove.call2(signal, &"abort".into(), listener);
            }
        }
    }
}

impl FetchClient {
    /// Starts `request`: the response once its headers arrived, and the timer that aborts it (keep it
    /// until the body is read).
    async fn fetch(&self, request: &HttpRequest) -> Result<(Answered, Option<AbortTimer>), String> {
        {
            let headers = Object::new();
            for (k, v) in &request.headers {
                let _ = Reflect::set(&headers, &k.into(), &v.into());
            }
            let init = Object::new();
            let _ = Reflect::set(&init, &"method".into(), &request.method.into());
            let _ = Reflect::set(&init, &"headers".into(), &headers);
            // Redirects come back to the library, which follows only those within the origin
            // (`send_within_origin`): fetch would carry the credentials in the headers to any other.
            let _ = Reflect::set(&init, &"redirect".into(), &"manual".into());
            if request.method == "POST" {
                let _ = Reflect::set(&init, &"body".into(), &request.body.as_str().into());
            }
            let timer = AbortTimer::start(request.timeout.as_millis() as f64, &self.signals);
            let signal = timer.as_ref().map(|t| t.signal.clone());
            if let Some(signal) = signal {
                let _ = Reflect::set(&init, &"signal".into(), &signal);
            }
            let failed = |e: JsValue| failure(request, timer.as_ref(), self, &message(&e));
            // Through Promise.resolve: a `fetch` replaced by the program (a test double, a polyfill) may answer
            // a Response itself rather than a promise of one.
            let started = match &self.fetch {
                Some(f) => f.call2(&JsValue::UNDEFINED, &request.url.as_str().into(), &init),
                None => global_fetch(&request.url, &init).map(JsValue::from),
            };
            let started = Promise::resolve(&started.map_err(failed)?);
            let deadline = timer.as_ref().map(|t| &t.deadline);
            let answered = JsFuture::from(race(started, deadline)).await.map_err(failed)?;
            let response = Answered::read(answered).map_err(|e| failure(request, timer.as_ref(), self, &e))?;
            Ok((response, timer))
        }
    }
}
