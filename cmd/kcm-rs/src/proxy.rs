//! Which proxy, if any, the connection to the API server goes through, chosen as client-go chooses:
//! a kubeconfig cluster's `proxy-url` carries every request; without one, the environment's
//! `HTTPS_PROXY` (`HTTP_PROXY` for an `http://` server) does, unless `NO_PROXY` names the server or
//! the server is `localhost` or a loopback address. In-cluster, only the environment counts.
//!
//! The `NO_PROXY` rules are Go's (`golang.org/x/net/http/httpproxy`, which client-go's transport
//! uses), written out here because the maintained matcher, hyper-util's, follows curl's, and the two
//! disagree where users notice: there a loopback server is proxied (Go never proxies one, so a user
//! with `HTTPS_PROXY` set reaches a local kind cluster directly), `.example.com` also matches
//! `example.com` itself, and `*.example.com` or `host:port` entries match nothing. The tunnels
//! themselves are hyper-util's (`crate::transport`).

use std::net::IpAddr;

use base64::Engine as _;
use http::{HeaderValue, Uri, uri::Authority};
use ipnet::IpNet;

/// The variables read, in order of precedence for each (Go: `httpproxy.FromEnvironment`, which
/// takes the first non-empty one). `ALL_PROXY`, which curl reads, Go does not.
const HTTPS_PROXY: [&str; 2] = ["HTTPS_PROXY", "https_proxy"];
const HTTP_PROXY: [&str; 2] = ["HTTP_PROXY", "http_proxy"];
const NO_PROXY: [&str; 2] = ["NO_PROXY", "no_proxy"];

/// A proxy's port when its URL names none (Go: `httpproxy`'s `portMap`, and 1080 for SOCKS).
const DEFAULT_SOCKS_PORT: u16 = 1080;

/// How the connection to the API server is made. Its `Debug` shows no password.
#[derive(Clone, PartialEq, Eq)]
pub enum Route {
    Direct,
    /// An HTTP CONNECT tunnel through an `http://` or `https://` proxy; `auth` is the
    /// `Proxy-Authorization` its URL's user information gives.
    Tunnel {
        proxy: Uri,
        auth: Option<HeaderValue>,
    },
    /// A SOCKS5 proxy (`socks5://`, `socks5h://`), which resolves the server's name itself, as Go's
    /// dialer has it do for either scheme.
    Socks {
        proxy: Uri,
        auth: Option<(String, String)>,
    },
}

impl Route {
    /// The proxy's `scheme://host:port`, if there is one.
    pub fn proxy(&self) -> Option<&Uri> {
        match self {
            Route::Direct => None,
            Route::Tunnel { proxy, .. } | Route::Socks { proxy, .. } => Some(proxy),
        }
    }
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Route::Direct => f.write_str("Direct"),
            Route::Tunnel { proxy, auth } => f
                .debug_struct("Tunnel")
                .field("proxy", proxy)
                .field("auth", &auth.as_ref().map(|_| "***"))
                .finish(),
            Route::Socks { proxy, auth } => f
                .debug_struct("Socks")
                .field("proxy", proxy)
                .field("user", &auth.as_ref().map(|(user, _)| user))
                .finish(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("{source_name} {url:?} is not a proxy URL: {reason}")]
    Invalid {
        /// `proxy-url` or the environment variable it came from.
        source_name: String,
        url: String,
        reason: String,
    },
}

/// The route to `server`: through `kubeconfig_proxy` if the kubeconfig's cluster names one, else as
/// the environment (read through `env`) says.
pub fn route(
    kubeconfig_proxy: Option<&str>,
    server: &Uri,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Route, ProxyError> {
    if let Some(url) = kubeconfig_proxy.filter(|u| !u.is_empty()) {
        // client-go's kubeconfig validation takes these schemes, and no URL without one.
        return parse(url, "proxy-url", &["http", "https", "socks5"]);
    }
    let names = match server.scheme_str() {
        Some("http") => HTTP_PROXY,
        _ => HTTPS_PROXY,
    };
    let Some((name, url)) = first_set(&names, &env) else {
        return Ok(Route::Direct);
    };
    let no_proxy = first_set(&NO_PROXY, &env).map(|(_, v)| v).unwrap_or_default();
    if !uses_proxy(server, &no_proxy) {
        return Ok(Route::Direct);
    }
    // Go reads a value without a scheme as an http:// proxy. One that does not parse even so Go
    // drops, and it mostly parses into a host no request reaches; either way, here it fails the start.
    let url = if url.contains("://") {
        url
    } else {
        format!("http://{url}")
    };
    parse(&url, name, &["http", "https", "socks5", "socks5h"])
}

fn first_set<'a>(names: &[&'a str], env: &impl Fn(&str) -> Option<String>) -> Option<(&'a str, String)> {
    names
        .iter()
        .find_map(|n| env(n).filter(|v| !v.is_empty()).map(|v| (*n, v)))
}

/// The route a proxy URL gives; its user information becomes the credentials, percent-decoded.
fn parse(url: &str, source_name: &str, schemes: &[&str]) -> Result<Route, ProxyError> {
    let invalid = |reason: String| ProxyError::Invalid {
        source_name: source_name.to_owned(),
        url: redacted(url),
        reason,
    };
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(e.to_string()))?;
    let scheme = uri.scheme_str().unwrap_or_default().to_ascii_lowercase();
    if !schemes.contains(&scheme.as_str()) {
        return Err(invalid(format!(
            "the scheme must be one of {}",
            schemes.join(", ")
        )));
    }
    let authority = uri.authority().ok_or_else(|| invalid("no host".into()))?;
    let (info, host_port) = match authority.as_str().rsplit_once('@') {
        Some((info, host_port)) => (Some(info), host_port),
        None => (None, authority.as_str()),
    };
    let (user, pass) = match info.map(|i| i.split_once(':').ok_or(i)) {
        Some(Ok((u, p))) => (Some(decode(u)), Some(decode(p))),
        Some(Err(u)) => (Some(decode(u)), None),
        None => (None, None),
    };
    // `host:` is the scheme's port, as in Go; `host:x` no port at all.
    let port_text = host_port.rsplit_once(':').filter(|_| !host_port.ends_with(']'));
    if port_text.is_some_and(|(_, p)| !p.is_empty()) && authority.port_u16().is_none() {
        return Err(invalid("the port is not a number".into()));
    }
    let port = match (authority.port_u16(), scheme.as_str()) {
        (Some(p), _) => p,
        (None, "https") => 443,
        (None, "http") => 80,
        (None, _) => DEFAULT_SOCKS_PORT,
    };
    let host_port: Authority = format!("{}:{port}", authority.host())
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(e.to_string()))?;
    let proxy = Uri::builder()
        .scheme(scheme.as_str())
        .authority(host_port)
        .path_and_query("/")
        .build()
        .map_err(|e| invalid(e.to_string()))?;
    Ok(match scheme.as_str() {
        "http" | "https" => Route::Tunnel {
            proxy,
            auth: user.map(|u| basic_auth(&u, pass.as_deref().unwrap_or_default())),
        },
        _ => Route::Socks {
            proxy,
            auth: user.map(|u| (u, pass.unwrap_or_default())),
        },
    })
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// `Basic` credentials for a CONNECT request, marked sensitive so that no log prints them.
fn basic_auth(user: &str, pass: &str) -> HeaderValue {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
    let mut value =
        HeaderValue::try_from(format!("Basic {encoded}")).expect("base64 is a valid header value");
    value.set_sensitive(true);
    value
}

/// A proxy URL as a log or an error may show it: a user name before a password, never the password
/// (the user information ends at the authority's last `@`).
pub fn redacted(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").map_or(("", url), |(s, r)| (s, r));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let Some((info, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    // A user name alone may be the secret (a token).
    let shown = info
        .split_once(':')
        .map_or("***".to_owned(), |(user, _)| format!("{user}:***"));
    let scheme = if scheme.is_empty() {
        String::new()
    } else {
        format!("{scheme}://")
    };
    format!("{scheme}{shown}@{host}{tail}")
}

/// Whether a request to `server` goes through the environment's proxy under the `NO_PROXY` list
/// `no_proxy` (Go: `httpproxy`'s `useProxy`).
fn uses_proxy(server: &Uri, no_proxy: &str) -> bool {
    let Some(host) = server.host() else {
        return true;
    };
    // Go compares `localhost` before it lowers the case: `LOCALHOST` is proxied.
    if host == "localhost" {
        return false;
    }
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let port = server
        .port_u16()
        .unwrap_or(if server.scheme_str() == Some("http") {
            80
        } else {
            443
        });
    let ip = host.parse::<IpAddr>().ok();
    // `::ffff:127.0.0.1` too, as Go's `IsLoopback`.
    if ip.is_some_and(|ip| ip.to_canonical().is_loopback()) {
        return false;
    }
    !no_proxy
        .split(',')
        .map(|entry| entry.trim().to_ascii_lowercase())
        .filter(|entry| !entry.is_empty())
        .any(|entry| exempts(&entry, &host, ip, port))
}

/// Whether one `NO_PROXY` entry exempts `host:port`: `*`; a CIDR; an IP, with an optional port; or a
/// domain (`example.com` is the domain and its subdomains, `.example.com` and `*.example.com` the
/// subdomains only), with an optional port. A domain never matches an IP host.
fn exempts(entry: &str, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
    if entry == "*" {
        return true;
    }
    if let Ok(net) = entry.parse::<IpNet>() {
        return ip.is_some_and(|ip| net.contains(&ip));
    }
    let (name, entry_port) = split_port(entry);
    let port_matches = entry_port.is_none_or(|p| p == port);
    if let Ok(entry_ip) = name.parse::<IpAddr>() {
        return ip == Some(entry_ip) && port_matches;
    }
    if ip.is_some() || name.is_empty() {
        return false;
    }
    let (domain, or_itself) = match name.strip_prefix("*.").or_else(|| name.strip_prefix('.')) {
        Some(domain) => (domain, false),
        None => (name, true),
    };
    let matches = host.ends_with(&format!(".{domain}")) || (or_itself && host == domain);
    matches && port_matches
}

/// `host:port`, `[v6]:port` or a bare host. A port that is not a number keeps the whole entry as
/// the host, which then matches nothing, as Go's entry with that port matches no server's. A
/// bracketed address without a port stays whole too (Go's `SplitHostPort` refuses it, and
/// `[fd00::5]` is then no IP).
fn split_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((v6, after)) = rest.split_once(']')
    {
        return match after.strip_prefix(':').map(str::parse) {
            Some(Ok(port)) => (v6, Some(port)),
            _ => (entry, None),
        };
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(p) => (host, Some(p)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
