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

    type AbortSignal;

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
    signal: Option<JsValue>,
}

impl FetchClient {
    /// A client whose requests also stop when `signal` (an `AbortSignal`) aborts.
    pub fn with_signal(signal: JsValue) -> Self {
        FetchClient { signal: Some(signal) }
    }
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(static_method_of = AbortSignal, js_name = any, catch)]
    fn any_of(signals: &js_sys::Array) -> Result<AbortSignal, JsValue>;
}

fn message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map_or_else(
        || format!("{e:?}"),
        |e| format!("{}: {}", String::from(e.name()), String::from(e.message())),
    )
}

/// Why a request failed, naming the host: its timeout (`timeoutMs`), its signal, or `cause` (what `fetch` or
/// the body's stream said).
fn failure(request: &HttpRequest, timer: Option<&AbortTimer>, signal: Option<&JsValue>, cause: &str) -> String {
    let host = super::host_of(&request.url);
    let aborted = |s: &JsValue| Reflect::get(s, &"aborted".into()).ok().and_then(|a| a.as_bool()) == Some(true);
    if timer.is_some_and(|t| aborted(&t.signal)) {
        return format!("{host}: timed out after {} ms (timeoutMs)", request.timeout.as_millis());
    }
    if signal.is_some_and(aborted) {
        return format!("{host}: aborted by its signal");
    }
    format!("{host}: {cause}")
}

impl HttpClient for FetchClient {
    fn send(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend {
        async move {
            let (response, timer) = self.fetch(&request).await?;
            let failed = |e: JsValue| failure(&request, timer.as_ref(), self.signal.as_ref(), &message(&e));
            let body = JsFuture::from(response.text().map_err(failed)?).await.map_err(failed)?;
            Ok(HttpResponse::new(
                response.status(),
                response.headers().get("retry-after"),
                body.as_string().unwrap_or_default(),
            ))
        }
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        body: &'a mut dyn BodySink,
    ) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend + 'a {
        async move {
            let (response, timer) = self.fetch(&request).await?;
            let failed = |e: JsValue| failure(&request, timer.as_ref(), self.signal.as_ref(), &message(&e));
            let status = response.status();
            let retry_after = response.headers().get("retry-after");
            let stream = match response.body() {
                Some(stream) if (200..300).contains(&status) => stream,
                _ => {
                    let text = JsFuture::from(response.text().map_err(failed)?).await.map_err(failed)?;
                    return Ok(HttpResponse::new(
                        status,
                        retry_after,
                        text.as_string().unwrap_or_default(),
                    ));
                }
            };
            read_stream(&stream, body)
                .await
                .map_err(|broken| failure(&request, timer.as_ref(), self.signal.as_ref(), &broken))?;
            Ok(HttpResponse::new(status, retry_after, String::new()))
        }
    }

    fn aborted(&self) -> bool {
        self.signal
            .as_ref()
            .is_some_and(|s| Reflect::get(s, &"aborted".into()).ok().and_then(|a| a.as_bool()) == Some(true))
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

/// The timer that aborts a request after its timeout, cleared when the request is over (dropped). Not
/// `AbortSignal.timeout`: its timer (and the signal) would stay alive for the whole timeout after every
/// request, ~0.9 KB each, which a busy isolate notices.
struct AbortTimer {
    signal: JsValue,
    id: JsValue,
}

impl AbortTimer {
    fn start(ms: f64) -> Option<Self> {
        let controller = AbortController::new().ok()?;
        let abort: js_sys::Function = Reflect::get(&controller, &"abort".into()).ok()?.dyn_into().ok()?;
        let id = set_timeout(&abort.bind0(&controller), ms);
        Some(AbortTimer {
            signal: controller.signal(),
            id,
        })
    }
}

impl Drop for AbortTimer {
    fn drop(&mut self) {
        clear_timeout(&self.id);
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
            let _ = Reflect::set(&init, &"method".into(), &"POST".into());
            let _ = Reflect::set(&init, &"headers".into(), &headers);
            let _ = Reflect::set(&init, &"body".into(), &request.body.as_str().into());
            let timer = AbortTimer::start(request.timeout.as_millis() as f64);
            let timeout = timer.as_ref().map(|t| t.signal.clone());
            let signal = match (timeout, &self.signal) {
                (Some(t), Some(s)) => AbortSignal::any_of(&js_sys::Array::of2(&t, s))
                    .ok()
                    .map(JsValue::from)
                    .or(Some(s.clone())),
                (t, s) => t.or_else(|| s.clone()),
            };
            if let Some(signal) = signal {
                let _ = Reflect::set(&init, &"signal".into(), &signal);
            }
            let failed = |e: JsValue| failure(request, timer.as_ref(), self.signal.as_ref(), &message(&e));
            let response: FetchResponse = JsFuture::from(global_fetch(&request.url, &init).map_err(failed)?)
                .await
                .map_err(failed)?
                .unchecked_into();
            Ok((response, timer))
        }
    }
}
