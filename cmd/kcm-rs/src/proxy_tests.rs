//! The proxy choice against Go's `httpproxy` rules, case by case as its own tests list them.

use std::collections::HashMap;

use super::*;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| vars.get(name).cloned()
}

fn route_to(server: &str, kubeconfig: Option<&str>, vars: &[(&str, &str)]) -> Route {
    route(kubeconfig, &server.parse().unwrap(), env(vars)).unwrap()
}

/// The proxy a route goes through, as `scheme://host:port`, or "direct".
fn via(route: &Route) -> String {
    match route.proxy() {
        None => "direct".into(),
        Some(proxy) => format!("{}://{}", proxy.scheme_str().unwrap(), proxy.authority().unwrap()),
    }
}

#[test]
fn the_environment_chooses_by_the_servers_scheme() {
    let vars = [
        ("HTTPS_PROXY", "http://secure:3128"),
        ("HTTP_PROXY", "http://plain:3128"),
    ];
    assert_eq!(
        via(&route_to("https://api.example.com", None, &vars)),
        "http://secure:3128"
    );
    assert_eq!(
        via(&route_to("http://api.example.com", None, &vars)),
        "http://plain:3128"
    );
    // Lower case when upper case is unset or empty; ALL_PROXY is curl's, not Go's.
    let lower = [("HTTPS_PROXY", ""), ("https_proxy", "http://lower:8080")];
    assert_eq!(
        via(&route_to("https://api.example.com", None, &lower)),
        "http://lower:8080"
    );
    let all = [("ALL_PROXY", "http://all:1")];
    assert_eq!(route_to("https://api.example.com", None, &all), Route::Direct);
    assert_eq!(route_to("https://api.example.com", None, &[]), Route::Direct);
}

#[test]
fn a_kubeconfig_proxy_url_carries_everything_and_wins() {
    let vars = [("HTTPS_PROXY", "http://env:3128"), ("NO_PROXY", "*")];
    for server in [
        "https://127.0.0.1:6443",
        "https://localhost",
        "https://api.example.com",
    ] {
        assert_eq!(
            via(&route_to(server, Some("http://kc:8080"), &vars)),
            "http://kc:8080",
            "{server}"
        );
    }
    // An empty proxy-url is none.
    assert_eq!(
        via(&route_to("https://api.example.com", Some(""), &vars)),
        "direct"
    );
}

#[test]
fn loopback_servers_are_never_proxied_from_the_environment() {
    let vars = [("HTTPS_PROXY", "http://proxy:3128")];
    for server in [
        "https://localhost:6443",
        "https://127.0.0.1:6443",
        "https://127.1.2.3",
        "https://[::1]:6443",
        "https://[::ffff:127.0.0.1]:6443",
    ] {
        assert_eq!(route_to(server, None, &vars), Route::Direct, "{server}");
    }
    assert_eq!(
        via(&route_to("https://10.0.0.1", None, &vars)),
        "http://proxy:3128"
    );
    // Go compares `localhost` as written.
    assert_eq!(
        via(&route_to("https://LOCALHOST", None, &vars)),
        "http://proxy:3128"
    );
}

#[test]
fn no_proxy_entries_as_go_reads_them() {
    // (NO_PROXY, server, proxied)
    let cases = [
        ("*", "https://api.example.com", false),
        ("example.com", "https://example.com", false),
        ("example.com", "https://api.example.com", false),
        ("example.com", "https://notexample.com", true),
        (".example.com", "https://example.com", true),
        (".example.com", "https://api.example.com", false),
        ("*.example.com", "https://example.com", true),
        ("*.example.com", "https://a.b.example.com", false),
        ("EXAMPLE.com", "https://API.example.COM", false),
        ("example.com:6443", "https://api.example.com:6443", false),
        ("example.com:6443", "https://api.example.com:443", true),
        ("example.com:443", "https://api.example.com", false),
        ("10.0.0.0/8", "https://10.96.0.1", false),
        ("10.0.0.0/8", "https://11.0.0.1", true),
        ("10.96.0.1", "https://10.96.0.1:443", false),
        ("10.96.0.1:443", "https://10.96.0.1", false),
        ("10.96.0.1:6443", "https://10.96.0.1", true),
        ("fd00::/8", "https://[fd00::5]:6443", false),
        ("[fd00::5]:6443", "https://[fd00::5]:6443", false),
        ("fd00::5", "https://[fd00::5]", false),
        // Brackets without a port are no address to Go.
        ("[fd00::5]", "https://[fd00::5]", true),
        ("example.com:https", "https://example.com", true),
        // A domain entry never matches an IP server, nor an IP entry a name.
        ("10.96.0.1", "https://kubernetes.default.svc", true),
        ("1.2.3.4.nip.io", "https://1.2.3.4", true),
        (" other.org , example.com ", "https://api.example.com", false),
        (",,", "https://api.example.com", true),
    ];
    for (no_proxy, server, proxied) in cases {
        let vars = [("HTTPS_PROXY", "http://proxy:3128"), ("no_proxy", no_proxy)];
        let got = route_to(server, None, &vars) != Route::Direct;
        assert_eq!(got, proxied, "NO_PROXY={no_proxy:?} server {server}");
    }
}

#[test]
fn proxy_urls_parse_as_go_and_client_go_take_them() {
    let https = |url: &str| {
        route(
            None,
            &"https://api.example.com".parse().unwrap(),
            env(&[("HTTPS_PROXY", url)]),
        )
    };
    // No scheme: http. No port: the scheme's.
    assert_eq!(via(&https("proxy:3128").unwrap()), "http://proxy:3128");
    assert_eq!(via(&https("http://proxy").unwrap()), "http://proxy:80");
    assert_eq!(via(&https("https://proxy").unwrap()), "https://proxy:443");
    assert_eq!(via(&https("socks5://proxy").unwrap()), "socks5://proxy:1080");
    assert_eq!(
        via(&https("socks5h://proxy:9050").unwrap()),
        "socks5h://proxy:9050"
    );
    assert_eq!(via(&https("http://proxy:").unwrap()), "http://proxy:80");
    // A scheme no transport speaks, or a value that does not parse, fails the start.
    let err = https("ftp://proxy:21").unwrap_err().to_string();
    assert!(err.contains("HTTPS_PROXY") && err.contains("scheme"), "{err}");
    let err = https("http://pro xy:3128").unwrap_err().to_string();
    assert!(err.contains("HTTPS_PROXY"), "{err}");
    assert!(https("http://proxy:port").is_err(), "a port that is not a number");
    // ... unless the server goes direct anyway: Go never reads it then.
    let loopback = route(
        None,
        &"https://127.0.0.1:6443".parse().unwrap(),
        env(&[("HTTPS_PROXY", "http://pro xy:3128")]),
    );
    assert_eq!(loopback.unwrap(), Route::Direct);
    // The kubeconfig's proxy-url: client-go's three schemes.
    let kc = |url: &str| route(Some(url), &"https://api.example.com".parse().unwrap(), env(&[]));
    assert!(matches!(kc("socks5://proxy:1080").unwrap(), Route::Socks { .. }));
    let err = kc("socks5h://proxy:1080").unwrap_err().to_string();
    assert!(err.contains("proxy-url"), "{err}");
    assert!(kc("proxy:3128").is_err(), "a proxy-url needs a scheme");
}

#[test]
fn credentials_come_from_the_url_and_stay_out_of_errors() {
    let Route::Tunnel { proxy, auth } = route_to(
        "https://api.example.com",
        Some("http://al%40ice:p%3Ass@proxy:3128"),
        &[],
    ) else {
        panic!("a tunnel")
    };
    assert_eq!(proxy.to_string(), "http://proxy:3128/");
    let auth = auth.unwrap();
    assert!(auth.is_sensitive());
    // base64("al@ice:p:ss")
    assert_eq!(auth, "Basic YWxAaWNlOnA6c3M=");
    let Route::Socks { auth, .. } =
        route_to("https://api.example.com", Some("socks5://bob:secret@proxy"), &[])
    else {
        panic!("socks")
    };
    assert_eq!(auth, Some(("bob".into(), "secret".into())));
    let err = route(
        Some("ftp://bob:secret@proxy"),
        &"https://api.example.com".parse().unwrap(),
        env(&[]),
    )
    .unwrap_err()
    .to_string();
    assert!(!err.contains("secret"), "{err}");
    for (url, shown) in [
        ("http://bob:secret@proxy:1", "http://bob:***@proxy:1"),
        ("http://bob:p@ss@proxy:1/", "http://bob:***@proxy:1/"),
        ("bob:secret@proxy:3128", "bob:***@proxy:3128"),
        ("http://token@proxy", "http://***@proxy"),
        ("http://proxy:3128", "http://proxy:3128"),
    ] {
        assert_eq!(redacted(url), shown, "{url}");
    }
    let socks = route_to("https://api.example.com", Some("socks5://bob:secret@proxy"), &[]);
    assert!(!format!("{socks:?}").contains("secret"), "{socks:?}");
}
