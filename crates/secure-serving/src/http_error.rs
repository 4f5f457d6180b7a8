//! Plain-text error answers as Go's `net/http` writes them.
//!
//! KCM's handlers answer their failures with `http.Error` (and unknown paths with `http.NotFound`,
//! which calls it): the message and a newline, `Content-Type: text/plain; charset=utf-8` and
//! `X-Content-Type-Options: nosniff`. A client that compares kcm-rs's answers with KCM's sees the
//! same headers only if every such answer is built in one place.

use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};

/// What `http.Error` sets beside the status; the charset is part of the value, as Go writes it.
pub const TEXT_PLAIN_UTF8: &str = "text/plain; charset=utf-8";

/// Go's `http.NotFound` body, less its newline.
const NOT_FOUND_TEXT: &str = "404 page not found";

/// Go's `http.Error(w, message, code)`.
pub fn http_error(code: StatusCode, message: &str) -> Response {
    let headers = [
        (header::CONTENT_TYPE, TEXT_PLAIN_UTF8),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    ];
    (code, headers, format!("{message}\n")).into_response()
}

/// Go's `http.NotFound`, which the controller managers' path mux answers unknown paths with.
pub fn not_found() -> Response {
    http_error(StatusCode::NOT_FOUND, NOT_FOUND_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn as_go_writes_it() {
        let r = not_found();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(r.headers()[header::CONTENT_TYPE], TEXT_PLAIN_UTF8);
        assert_eq!(r.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"404 page not found\n");
    }
}
