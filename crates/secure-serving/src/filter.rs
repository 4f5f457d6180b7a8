//! The authentication and authorization filter in front of every route, and its refusals.
//!
//! Refusals are the API server's: 401 and 403 answer a `Status` object as JSON with the same
//! reason and message (`forbidden: User "system:anonymous" cannot get path "/metrics"`), a failed
//! access review answers 500 in plain text. Refusals are logged at verbosity 2 with the user and
//! path, never the credentials. Every answer that passes through the filter, refusals included,
//! says `Cache-Control: no-cache, private` unless its handler said otherwise, as the controller
//! managers' handler chain does (k8s.io/apiserver `WithCacheControl`, in controller-manager's
//! `BuildHandlerChain`): what they serve is behind authentication, so no cache may keep it.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use rustls::pki_types::UnixTime;

use crate::{
    accept::CloseConnection,
    authn::{Authenticator, PeerCertificates},
    authz::{Authorizer, Decision},
    http_error::http_error,
};

/// What the filter consults.
#[derive(Debug)]
pub struct Guard {
    pub authenticator: Authenticator,
    pub authorizer: Authorizer,
    /// Close an HTTP/2 connection after a request that could not be authenticated
    /// ([`Config::close_unauthenticated_http2`](crate::Config)).
    pub close_unauthenticated_http2: bool,
}

/// What the answers say of caching (k8s.io/apiserver `WithCacheControl`).
const CACHE_CONTROL: &str = "no-cache, private";

/// The middleware: `axum::middleware::from_fn_with_state(guard, filter)`.
pub async fn filter(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let mut answer = guarded(&guard, req, next).await;
    answer
        .headers_mut()
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static(CACHE_CONTROL));
    answer
}

/// Authenticates, authorizes, then runs the route, or refuses.
async fn guarded(guard: &Guard, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    let peer = req.extensions().get::<PeerCertificates>();
    let user = match guard
        .authenticator
        .authenticate(req.headers(), peer, UnixTime::now())
        .await
    {
        Ok(user) => user,
        Err(e) => {
            tracing::info!(%path, error = %e, "unable to authenticate the request");
            // HTTP/2 lets one connection carry many cheap requests: an unauthenticated client gets
            // one per connection, as k8s.io/apiserver's `Unauthorized` handler allows it.
            if guard.close_unauthenticated_http2
                && req.version() == http::Version::HTTP_2
                && let Some(CloseConnection(close)) = req.extensions().get::<CloseConnection>()
            {
                close.cancel();
            }
            return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized", false);
        }
    };
    let verb = req.method().as_str().to_ascii_lowercase();
    match guard.authorizer.authorize(&user, &verb, &path).await {
        Ok(Decision::Allow) => next.run(req).await,
        Ok(Decision::Deny { reason }) => {
            tracing::info!(user = %user.name, %verb, %path, %reason, "forbidden");
            let mut message = format!("forbidden: User {:?} cannot {verb} path {path:?}", user.name);
            if !reason.is_empty() {
                message = format!("{message}: {reason}");
            }
            forbidden(&sanitize(&message))
        }
        Err(e) => {
            tracing::warn!(user = %user.name, %verb, %path, error = %e, "authorization failed");
            let uri = req.uri().path_and_query().map_or(path.clone(), |p| p.to_string());
            http_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &sanitize(&format!("Internal Server Error: {uri:?}: {e}")),
            )
        }
    }
}

/// A `Status` failure answer without `details`, as the API server writes one: for a handler's own
/// refusals (a 406, say), in the same form as the filters' 401 and 403.
pub fn failure_status(code: StatusCode, reason: &str, message: &str) -> Response {
    status(code, reason, message, false)
}

/// A `Status` failure body as the API server writes one, fields in its order.
fn status(code: StatusCode, reason: &str, message: &str, details: bool) -> Response {
    let body = format!(
        r#"{{"kind":"Status","apiVersion":"v1","metadata":{{}},"status":"Failure","message":{},"reason":{},{}"code":{}}}"#,
        serde_json::Value::from(message),
        serde_json::Value::from(reason),
        if details { r#""details":{},"# } else { "" },
        code.as_u16(),
    );
    let mut r = (code, format!("{body}\n")).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The 403 as the API server's `responsewriters.Forbidden` writes it: a `Status` with details, and
/// `nosniff`, which its other refusals (the 401, a handler's 406) leave out.
fn forbidden(message: &str) -> Response {
    let mut r = status(StatusCode::FORBIDDEN, "Forbidden", message, true);
    r.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// The API server escapes these in refusal messages (`responsewriters` sanitizer).
fn sanitize(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
