//! `ReqwestClient`: the providers natively, over reqwest (rustls). Its futures need a tokio runtime,
//! which the application runs; the library itself starts none.

use std::future::Future;
use std::time::Duration;

use super::{BodySink, HttpClient, HttpRequest, HttpResponse};
use crate::platform::MaybeSend;

/// An [`HttpClient`] over a `reqwest::Client` (connection pooling included).
#[derive(Debug, Clone, Default)]
pub struct ReqwestClient {
    client: reqwest::Client,
}

impl ReqwestClient {
    /// A client over `client` (to share its pool or settings).
    pub fn new(client: reqwest::Client) -> Self {
        ReqwestClient { client }
    }
}

impl HttpClient for ReqwestClient {
    fn send(&self, request: HttpRequest) -> impl Future<Output = Result<HttpResponse, String>> + MaybeSend {
        let (url, timeout) = (request.url.clone(), request.timeout);
        let mut builder = self
            .client
            .post(&request.url)
            .timeout(request.timeout)
            .body(request.body);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        async move {
            // reqwest's error text names the URL, never the headers (where the key is).
            let response = builder.send().await.map_err(|e| failure(&url, timeout, &e))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = response.text().await.map_err(|e| failure(&url, timeout, &e))?;
            Ok(HttpResponse::new(status, retry_after, body))
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
        let (url, timeout) = (request.url.clone(), request.timeout);
        let mut builder = self
            .client
            .post(&request.url)
            .timeout(request.timeout)
            .header("accept", "text/event-stream")
            .body(request.body);
        for (k, v) in &request.headers {
            builder = builder.header(k, v);
        }
        async move {
            let mut response = builder.send().await.map_err(|e| failure(&url, timeout, &e))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if !(200..300).contains(&status) {
                let text = response.text().await.map_err(|e| failure(&url, timeout, &e))?;
                return Ok(HttpResponse::new(status, retry_after, text));
            }
            // Dropping the response (when the sink has enough) closes the connection.
            while let Some(chunk) = response.chunk().await.map_err(|e| failure(&url, timeout, &e))? {
                if !body.chunk(&chunk) {
                    break;
                }
            }
            Ok(HttpResponse::new(status, retry_after, String::new()))
        }
    }
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
