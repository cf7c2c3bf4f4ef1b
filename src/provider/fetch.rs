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

    type FetchResponse;
    #[wasm_bindgen(method, getter)]
    fn status(this: &FetchResponse) -> u16;
    #[wasm_bindgen(method, getter)]
    fn headers(this: &FetchResponse) -> FetchHeaders;
    #[wasm_bindgen(method, catch)]
    fn text(this: &FetchResponse) -> Result<Promise, JsValue>;
    #[wasm_bindgen(method, getter)]
    fn body(this: &FetchResponse) -> Option<ReadableStream>;

    type ReadableStream;
    #[wasm_bindgen(method, js_name = getReader, catch)]
    fn get_reader(this: &ReadableStream) -> Result<StreamReader, JsValue>;

    type StreamReader;
    #[wasm_bindgen(method, catch)]
    fn read(this: &StreamReader) -> Result<Promise, JsValue>;
    #[wasm_bindgen(method)]
    fn cancel(this: &StreamReader) -> Promise;

    type FetchHeaders;
    #[wasm_bindgen(method)]
    fn get(this: &FetchHeaders, name: &str) -> Option<String>;

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
            let failed = |e: JsValue| failure(&request, timer.as_ref(), self, &message(&e));
            let body = JsFuture::from(response.text().map_err(failed)?).await.map_err(failed)?;
            Ok(HttpResponse::new(
                response.status(),
                response.headers().get("retry-after"),
                body.as_string().unwrap_or_default(),
            )
            .with_headers(read_headers(&response)))
        }
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        body: &'a mut dyn BodySink,
    ) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend + 'a {
        async move {
            let (response, timer) = self.fetch(&request).await?;
            let failed = |e: JsValue| failure(&request, timer.as_ref(), self, &message(&e));
            let status = response.status();
            let retry_after = response.headers().get("retry-after");
            let headers = read_headers(&response);
            let stream = match response.body() {
                Some(stream) if (200..300).contains(&status) => stream,
                _ => {
                    let text = JsFuture::from(response.text().map_err(failed)?).await.map_err(failed)?;
                    return Ok(
                        HttpResponse::new(status, retry_after, text.as_string().unwrap_or_default())
                            .with_headers(headers),
                    );
                }
            };
            read_stream(&stream, body)
                .await
                .map_err(|broken| failure(&request, timer.as_ref(), self, &broken))?;
            Ok(HttpResponse::new(status, retry_after, String::new()).with_headers(headers))
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

/// The headers of [`super::READ_HEADERS`] the response has.
fn read_headers(response: &FetchResponse) -> Vec<(String, String)> {
    let headers = response.headers();
    super::READ_HEADERS
        .iter()
        .filter_map(|name| headers.get(name).map(|v| ((*name).to_owned(), v)))
        .collect()
}

/// Reads a `ReadableStream` of bytes into `body` until it ends or `body` has enough (then cancels it).
///
/// # Errors
/// The stream's error (a broken connection), as a message.
pub(crate) async fn read_stream(stream: &JsValue, body: &mut dyn BodySink) -> Result<(), String> {
    let stream: &ReadableStream = stream.unchecked_ref();
    let reader = stream.get_reader().map_err(|e| message(&e))?;
    // Cancels the body when this future ends early (dropped, or the sink has enough).
    let mut reader = CancelOnDrop(reader, true);
    loop {
        let read = JsFuture::from(reader.0.read().map_err(|e| message(&e))?).await;
        let next = read.map_err(|e| {
            // A broken body is already closed: cancelling it would only reject.
            reader.1 = false;
            message(&e)
        })?;
        if Reflect::get(&next, &"done".into()).ok().and_then(|d| d.as_bool()) == Some(true) {
            reader.1 = false;
            return Ok(());
        }
        let value = Reflect::get(&next, &"value".into()).unwrap_or(JsValue::UNDEFINED);
        let bytes = js_sys::Uint8Array::new(&value).to_vec();
        if !body.chunk(&bytes) {
            return Ok(());
        }
    }
}

/// A body reader cancelled when dropped while its body is still open (the flag).
struct CancelOnDrop(StreamReader, bool);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.1 {
            let _ = self.0.cancel();
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
        Some(AbortTimer {
            signal: controller.signal(),
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
    async fn fetch(&self, request: &HttpRequest) -> Result<(FetchResponse, Option<AbortTimer>), String> {
        {
            let headers = Object::new();
            for (k, v) in &request.headers {
                let _ = Reflect::set(&headers, &k.into(), &v.into());
            }
            let init = Object::new();
            let _ = Reflect::set(&init, &"method".into(), &request.method.into());
            let _ = Reflect::set(&init, &"headers".into(), &headers);
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
            let response: FetchResponse = JsFuture::from(started).await.map_err(failed)?.unchecked_into();
            Ok((response, timer))
        }
    }
}
