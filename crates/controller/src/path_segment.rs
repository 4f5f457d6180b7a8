//! An object's name as one segment of a request path, checked and escaped as client-go does.
//!
//! Why: kube's `Api` writes the name it is given into the request's path as it is, where client-go's
//! request escapes it (it sets `url.URL.Path`). For the kinds whose names are DNS subdomains that
//! changes nothing. But RBAC objects need only be valid path segments, and an ownerReference's name is
//! not validated at all, so `ops#1`, `ops?1`, `ops 1` and `ops-é` are names the API server accepts.
//! Written raw, `#` and `?` end the path early (another object, or a 404 read as "already gone") and
//! a space or a letter outside ASCII makes no URL at all. The controllers that act on objects of any
//! kind (the garbage collector, the namespace controller) pass every name through [`path_segment`].

use std::borrow::Cow;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// The bytes Go's `net/url` leaves as they are in a path (its `shouldEscape` in `encodePath` mode):
/// letters, digits, `-._~` and the sub-delimiters `$&+,/:;=@`. Everything else, every byte outside
/// ASCII included, is percent-encoded.
const GO_PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b',')
    .remove(b'/')
    .remove(b':')
    .remove(b';')
    .remove(b'=')
    .remove(b'@');

/// A name that cannot be one segment of a path: read as one, it would address another object or a
/// subresource. No object has such a name. client-go's dynamic client refuses it with the same words
/// (apimachinery `IsValidPathSegmentName`); its metadata client sends it all the same, and finds
/// nothing. The caller says which it does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid object name {name:?}: {why}")]
pub struct InvalidPathSegment {
    pub name: String,
    /// apimachinery's list of what is wrong, e.g. `[may not contain '/']`.
    pub why: String,
}

/// `name` as the path segment client-go would send: refused if it holds `/` or `%` or is `.` or `..`,
/// else percent-encoded where Go's URL encoding would (borrowed when nothing needs it).
pub fn path_segment(name: &str) -> Result<Cow<'_, str>, InvalidPathSegment> {
    let problems: Vec<String> = if name == "." || name == ".." {
        vec![format!("may not be '{name}'")]
    } else {
        ["/", "%"]
            .iter()
            .filter(|s| name.contains(**s))
            .map(|s| format!("may not contain '{s}'"))
            .collect()
    };
    if !problems.is_empty() {
        return Err(InvalidPathSegment {
            name: name.to_owned(),
            why: format!("[{}]", problems.join(" ")),
        });
    }
    Ok(utf8_percent_encode(name, GO_PATH).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_as_go_escapes_a_path() {
        for (name, sent) in [
            ("web-1", "web-1"),
            (
                "system:controller:job-controller",
                "system:controller:job-controller",
            ),
            ("a.b_c~d$e&f+g,h;i=j@k", "a.b_c~d$e&f+g,h;i=j@k"),
            ("ops#1", "ops%231"),
            ("ops?1", "ops%3F1"),
            ("ops 1", "ops%201"),
            ("ops-é", "ops-%C3%A9"),
            ("a!b*c'd(e)f", "a%21b%2Ac%27d%28e%29f"),
            ("[x]<y>\"z\"`{|}\\^", "%5Bx%5D%3Cy%3E%22z%22%60%7B%7C%7D%5C%5E"),
            ("...", "..."),
        ] {
            assert_eq!(path_segment(name).as_deref(), Ok(sent), "{name}");
        }
        assert!(matches!(path_segment("web-1"), Ok(Cow::Borrowed(_))));
    }

    #[test]
    fn what_is_no_path_segment_is_refused_in_apimachinerys_words() {
        let why = |name: &str| path_segment(name).unwrap_err().why;
        assert_eq!(why("."), "[may not be '.']");
        assert_eq!(why(".."), "[may not be '..']");
        assert_eq!(why("a/b"), "[may not contain '/']");
        assert_eq!(why("a/%"), "[may not contain '/' may not contain '%']");
        assert_eq!(why("100%"), "[may not contain '%']");
    }

    #[test]
    fn every_escaped_name_is_a_valid_uri_path_that_decodes_back() {
        for name in [
            "ops#1",
            "ops?1",
            "ops 1",
            "ops-é",
            "a\u{7f}b",
            "\u{1F600}",
            "x\ty",
        ] {
            let sent = path_segment(name).unwrap();
            let uri: http::Uri = format!("/api/v1/namespaces/ns/roles/{sent}")
                .parse()
                .unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert_eq!(uri.query(), None, "{name:?}");
            let last = uri.path().rsplit('/').next().unwrap();
            let decoded = percent_encoding::percent_decode_str(last).decode_utf8().unwrap();
            assert_eq!(decoded, name);
        }
    }
}
