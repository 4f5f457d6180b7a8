//! What a request asked for, as the server logs it and its rules match it.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// The API verbs, as an API server's audit log and RBAC name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Create,
    Get,
    List,
    Watch,
    /// A PUT, of the object or of a subresource.
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    fn of(method: &http::Method, named: bool, watch: bool) -> Option<Verb> {
        Some(match (method.as_str(), named) {
            ("POST", false) => Verb::Create,
            ("GET", _) if watch => Verb::Watch,
            ("GET", true) => Verb::Get,
            ("GET", false) => Verb::List,
            ("PUT", true) => Verb::Update,
            ("PATCH", true) => Verb::Patch,
            ("DELETE", true) => Verb::Delete,
            ("DELETE", false) => Verb::DeleteCollection,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    pub(super) fn writes(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }
}

/// One request as it reached the server, and how it was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub uri: String,
    pub content_type: Option<String>,
    /// The body as JSON (`Null` when there was none).
    pub body: Value,
    /// `None` for a method and path no API server serves.
    pub verb: Option<Verb>,
    /// The API group (`""` for the core group).
    pub group: String,
    /// The plural resource name (`pods`).
    pub resource: String,
    pub subresource: Option<String>,
    /// `None` for cluster-scoped objects and lists across namespaces.
    pub namespace: Option<String>,
    /// The object's name: from the path, or for a creation the body's name or generateName until the
    /// server has given it its name.
    pub name: Option<String>,
    /// The status code answered; `None` while the request hangs.
    pub code: Option<u16>,
    /// The resourceVersion of the object a successful write answered with.
    pub answered_version: Option<String>,
}

impl Request {
    pub(super) fn parse(parts: &http::request::Parts, body: &[u8]) -> Request {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let path: Vec<&str> = parts.uri.path().trim_matches('/').split('/').collect();
        let rest = match path.as_slice() {
            ["api", _version, rest @ ..] => rest,
            ["apis", _group, _version, rest @ ..] => rest,
            _ => &[][..],
        };
        let group = match path.as_slice() {
            ["apis", group, ..] => (*group).to_owned(),
            _ => String::new(),
        };
        let own = |s: &&str| (*s).to_owned();
        // Namespaces are cluster-scoped; their only subresources are status and finalize.
        let (namespace, resource, name, subresource) = match rest {
            ["namespaces", n, sub @ ("status" | "finalize")] => {
                (None, "namespaces", Some(own(n)), Some(own(sub)))
            }
            ["namespaces", ns, resource, tail @ ..] => (
                Some(own(ns)),
                *resource,
                tail.first().map(own),
                tail.get(1).map(own),
            ),
            [resource, tail @ ..] => (None, *resource, tail.first().map(own), tail.get(1).map(own)),
            [] => (None, "", None, None),
        };
        let watch = parts
            .uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        let verb = if resource.is_empty() {
            None
        } else {
            Verb::of(&parts.method, name.is_some(), watch)
        };
        let name = match verb {
            Some(Verb::Create) => ["name", "generateName"]
                .iter()
                .find_map(|k| body["metadata"][k].as_str().map(str::to_owned)),
            _ => name,
        };
        Request {
            method: parts.method.to_string(),
            uri: parts.uri.to_string(),
            content_type: parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body,
            verb,
            group,
            resource: resource.to_owned(),
            subresource,
            namespace,
            name,
            code: None,
            answered_version: None,
        }
    }

    /// The resource as the API server's messages name it: `pods`, `replicasets.apps`.
    pub(super) fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// A query parameter's value, percent-decoded.
    pub(super) fn query(&self, key: &str) -> Option<String> {
        let (_, query) = self.uri.split_once('?')?;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| decode(v))
        })
    }

    /// The path, without the query.
    pub fn path(&self) -> &str {
        self.uri
            .split_once('?')
            .map_or(self.uri.as_str(), |(path, _)| path)
    }

    /// `<verb> <name>` (`<verb> <name>/<subresource>`) for a write, as tests list the writes they expect.
    pub fn summary(&self) -> String {
        let verb = self.verb.map_or("?", Verb::word);
        let name = self.name.as_deref().unwrap_or_default();
        match &self.subresource {
            Some(sub) => format!("{verb} {name}/{sub}"),
            None => format!("{verb} {name}"),
        }
    }

    /// The body decoded as `K`; panics if it is not one, as a test wants to know.
    pub fn body_as<K: DeserializeOwned>(&self) -> K {
        serde_json::from_value(self.body.clone()).expect("the request's body decodes as the type asked for")
    }
}

/// `application/x-www-form-urlencoded` decoding, as kube encodes its query parameters.
fn decode(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'+' => out.push(b' '),
            b'%' => {
                let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                let byte = std::str::from_utf8(&hex)
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match byte {
                    Some(byte) => out.push(byte),
                    None => {
                        out.push(b'%');
                        out.extend(hex);
                    }
                }
            }
            _ => out.push(b),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
