//! Accept headers and what KCM 1.36.3's pages answer them with (its negotiation, read in
//! k8s.io/apiserver and goautoneg; the plain cases also asked of a running KCM).

use super::*;

const VERSIONS: [&str; 2] = ["v1beta1", "v1alpha1"];
const TYPED: &str = "application/json;v=v1beta1;g=config.k8s.io;as=Flagz";

fn flagz(accept: &str) -> Wanted {
    negotiate(Some(accept), "config.k8s.io", "Flagz", &VERSIONS)
}

fn json(version: &'static str) -> Wanted {
    Wanted::Json {
        version,
        pretty: false,
    }
}

#[test]
fn no_header_a_wildcard_or_text_is_text() {
    assert_eq!(negotiate(None, "config.k8s.io", "Flagz", &VERSIONS), Wanted::Text);
    for accept in ["", "  ", "*/*", "text/plain", "text/*", "*", "text/plain;q=0"] {
        assert_eq!(flagz(accept), Wanted::Text, "{accept:?}");
    }
}

#[test]
fn json_is_the_pages_typed_object_only() {
    assert_eq!(flagz(TYPED), json("v1beta1"));
    assert_eq!(
        flagz("application/json; as=Flagz; g=config.k8s.io; v=v1alpha1"),
        json("v1alpha1")
    );
    // Wildcards carry the parameters too.
    assert_eq!(flagz("*/*;g=config.k8s.io;v=v1beta1;as=Flagz"), json("v1beta1"));
    assert_eq!(
        flagz("application/*;g=config.k8s.io;v=v1beta1;as=Flagz"),
        json("v1beta1")
    );
    assert_eq!(
        flagz(&format!("{TYPED};pretty=1")),
        Wanted::Json {
            version: "v1beta1",
            pretty: true
        }
    );
    for refused in [
        "application/json",
        "application/json;v=v1beta1;g=config.k8s.io;as=Statusz",
        "application/json;v=v1beta1;g=other.io;as=Flagz",
        "application/json;v=v1;g=config.k8s.io;as=Flagz",
        "application/json;g=config.k8s.io;as=Flagz",
        "Application/JSON;v=v1beta1;g=config.k8s.io;as=Flagz",
        "application/json;V=v1beta1;G=config.k8s.io;AS=Flagz",
        "application/yaml;v=v1beta1;g=config.k8s.io;as=Flagz",
        "text/plain;as=Flagz",
        "text/html",
        "application/json/x;v=v1beta1;g=config.k8s.io;as=Flagz",
    ] {
        assert_eq!(flagz(refused), Wanted::NotAcceptable, "{refused}");
    }
    assert_eq!(flagz(&format!("{TYPED};stream=watch")), Wanted::NotAcceptable);
    assert_eq!(flagz(&format!("{TYPED};sv=v1")), Wanted::NotAcceptable);
    assert_eq!(flagz(&format!("{TYPED};other=1")), json("v1beta1"));
}

/// goautoneg's order: higher q first, else a specific type before a wildcard, whatever the q.
#[test]
fn ranges_are_tried_in_goautonegs_order() {
    assert_eq!(flagz(&format!("text/plain;q=0.5, {TYPED}")), json("v1beta1"));
    assert_eq!(flagz(&format!("{TYPED};q=0.5, text/plain")), Wanted::Text);
    assert_eq!(flagz(&format!("*/*, {TYPED}")), json("v1beta1"));
    assert_eq!(flagz(&format!("*/*;q=1, {TYPED};q=0.1")), json("v1beta1"));
    assert_eq!(flagz(&format!("text/html, {TYPED};q=0.1")), json("v1beta1"));
    assert_eq!(flagz(&format!("{TYPED};q=nonsense, text/plain")), Wanted::Text);
}
