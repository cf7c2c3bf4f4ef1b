//! `ReqwestClient`: the providers natively, over reqwest (rustls). Its futures need a tokio runtime,
//! which the application runs; the library itself starts none.

use std::future::Future;
use std::time::Duration;

use super::{BodySink, HttpClient, HttpRequest, HttpResponse};
use crate::platform::MaybeSend;

/// An [`HttpClient`] over a `reqwest::Client` (connection pooling included). The default one follows no
/// redirect (the library follows those within an origin itself: see [`HttpClient`]); a client given to
/// [`ReqwestClient::new`] should be built with `redirect(reqwest::redirect::Policy::none())`, or it carries the
/// request's headers (`x-api-key` among them) to wherever a server redirects it.
#[derive(Debug, Clone)]
pub struct ReqwestClient {
    client: reqwest::Client,
}

impl Default for ReqwestClient {
    fn default() -> Self {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        ReqwestClient { client }
    }
}

impl ReqwestClient {
    /// A client over `client` (to share its pool or settings).
    pub fn new(client: reqwest::Client) -> Self {
        ReqwestClient { client }
    }
}

/// Reads `response`'s body into `sink` until it ends or the sink has enough.
async fn read_bounded(response: &mut reqwest::Response, sink: &mut dyn BodySink) -> Result<(), reqwest::Error> {
    while let Some(chunk) = response.chunk().await? {
        if !sink.chunk(&chunk) {
            break;
        }
    }
    Ok(())
}

/// How much of `status`'s body `request` reads.
fn limit_for(request_limit: usize, status: u16) -> usize {
    if (200..300).contains(&status) {
        request_limit
    } else {
        super::MAX_ERROR_BODY_BYTES
    }
}

impl HttpClient for ReqwestClient {
    fn send(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend {
        let (url, timeout, limit) = (request.url.clone(), request.timeout, request.max_response_bytes);
        let mut builder = self.builder(&request);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        async move {
            // reqwest's error text names the URL, never the headers (where the key is).
            let mut response = builder.send().await.map_err(|e| failure(&url, timeout, &e))?;
            let status = response.status().as_u16();
            let (retry_after, headers) = read_headers(&response);
            let mut body = super::BoundedBody::new(limit_for(limit, status));
            read_bounded(&mut response, &mut body)
                .await
                .map_err(|e| failure(&url, timeout, &e))?;
            let cut = body.truncated();
            let body = super::text_of(body.joined());
            Ok(HttpResponse::new(status, retry_after, body)
                .with_headers(headers)
                .cut(cut))
        }
    }

    fn sleep(&self, duration: Duration) -> impl Future<Output = ()> + MaybeSend {
        tokio::time::sleep(duration)
    }

    fn send_streaming<'a>(
        &'a self,
        request: HttpRequest,
        body: &'a mut dyn BodySink,
    ) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend + 'a {
        let (url, timeout, limit) = (request.url.clone(), request.timeout, request.max_response_bytes);
        let mut builder = self.builder(&request);
        if !request.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
            builder = builder.header("accept", "text/event-stream");
        }
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        async move {
            let mut response = builder.send().await.map_err(|e| failure(&url, timeout, &e))?;
            let status = response.status().as_u16();
            let (retry_after, headers) = read_headers(&response);
            if !(200..300).contains(&status) {
                let mut kept = super::BoundedBody::new(limit_for(limit, status));
                read_bounded(&mut response, &mut kept)
                    .await
                    .map_err(|e| failure(&url, timeout, &e))?;
                let cut = kept.truncated();
                let text = super::text_of(kept.joined());
                return Ok(HttpResponse::new(status, retry_after, text)
                    .with_headers(headers)
                    .cut(cut));
            }
            // Dropping the response (when the sink has enough) closes the connection. The sink bounds what it
            // keeps itself (a stream may run longer than any one answer).
            while let Some(chunk) = response.chunk().await.map_err(|e| failure(&url, timeout, &e))? {
                if !body.chunk(&chunk) {
                    break;
                }
            }
            Ok(HttpResponse::new(status, retry_after, String::new()).with_headers(headers))
        }
    }
}

impl ReqwestClient {
    /// `request`'s method, URL, timeout and (for a POST) body.
    fn builder(&self, request: &HttpRequest) -> reqwest::RequestBuilder {
        let builder = match request.method {
            "GET" => self.client.get(&request.url),
            "DELETE" => self.client.delete(&request.url),
            _ => self.client.post(&request.url).body(request.body.clone()),
        };
        builder.timeout(request.timeout)
    }
}

/// The `retry-after` header and those of [`super::READ_HEADERS`].
fn read_headers(response: &reqwest::Response) -> (Option<String>, Vec<(String, String)>) {
    let get = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let headers = super::READ_HEADERS
        .iter()
        .filter_map(|name| get(name).map(|v| ((*name).to_owned(), v)))
        .collect();
    (get("retry-after"), headers)
}

/// Why a request failed: its timeout (`timeoutMs`) naming the host, or reqwest's own text (which names the
/// URL, never the headers where the key is).
fn failure(url: &str, timeout: Duration, e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return format!(
            "{}: timed out after {} ms (timeoutMs)",
            super::host_of(url),
            timeout.as_millis()
        );
    }
    e.to_string()
}
