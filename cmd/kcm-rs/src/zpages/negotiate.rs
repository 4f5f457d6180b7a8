//! Which answer an `Accept` header gets from `/flagz` and `/statusz`, as k8s.io/apiserver negotiates
//! it for them (`negotiation.NegotiateMediaTypeOptions` with the pages' endpoint restrictions):
//! goautoneg's reading of the header and order of its ranges, then the first range that the text or
//! the JSON answer matches with parameters the page allows. Types and parameters are compared as
//! written: `Application/JSON` is no JSON to it.

/// The answers a page has: text, or its typed object in a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wanted {
    Text,
    /// The typed object in this version; `pretty` when the range said `pretty=1`.
    Json {
        version: &'static str,
        pretty: bool,
    },
    NotAcceptable,
}

/// One media range (goautoneg's `Accept`).
#[derive(Debug, PartialEq)]
struct Range<'a> {
    type_: &'a str,
    subtype: &'a str,
    q: f64,
    params: Vec<(&'a str, &'a str)>,
}

/// What `accept` gets from the page of `kind` in `group`, whose typed object has `versions`.
pub(super) fn negotiate(accept: Option<&str>, group: &str, kind: &str, versions: &[&'static str]) -> Wanted {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Wanted::Text;
    };
    for range in sorted(parse(accept)) {
        let candidates = [("text", "plain"), ("application", "json")];
        for (type_, subtype) in candidates {
            let matches = (range.type_ == type_ && (range.subtype == subtype || range.subtype == "*"))
                || (range.type_ == "*" && range.subtype == "*");
            if !matches {
                continue;
            }
            if let Some(w) = allowed(&range, type_ == "text", group, kind, versions) {
                return w;
            }
        }
    }
    Wanted::NotAcceptable
}

/// The answer `range`'s parameters ask of the text (`text`) or the JSON answer, if the page allows
/// it (`acceptMediaTypeOptions` and the pages' `AllowsMediaTypeTransform`): text with no `as`, `g`
/// or `v`; JSON only with all three naming the page's kind, group and a known version. `stream` and
/// `sv` are refused; other parameters are ignored.
fn allowed(
    range: &Range<'_>,
    text: bool,
    group: &str,
    kind: &str,
    versions: &[&'static str],
) -> Option<Wanted> {
    let param = |name: &str| {
        range
            .params
            .iter()
            .rev()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    };
    if param("stream").is_some_and(|v| !v.is_empty()) || param("sv").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    let converts = ["as", "g", "v"].iter().any(|p| param(p).is_some());
    if text {
        return (!converts).then_some(Wanted::Text);
    }
    if param("as")? != kind || param("g")? != group {
        return None;
    }
    let version = param("v")?;
    let version = versions.iter().copied().find(|v| *v == version)?;
    Some(Wanted::Json {
        version,
        pretty: param("pretty") == Some("1"),
    })
}

/// goautoneg's `ParseAccept` before its sort: ranges split at `,`, parameters at `;`; a range
/// without a subtype (other than `*`) or with two is dropped, as is a parameter without exactly one
/// `=`; an unreadable `q` is 0.
fn parse(header: &str) -> Vec<Range<'_>> {
    header
        .split(',')
        .filter_map(|part| {
            let part = part.trim_matches(' ');
            let mut pieces = part.split(';');
            let media = pieces.next().unwrap_or_default();
            let mut halves = media.split('/');
            let type_ = halves.next().unwrap_or_default().trim_matches(' ');
            let subtype = match (halves.next(), halves.next()) {
                (None, _) if type_ == "*" => "*",
                (None, _) | (Some(_), Some(_)) => return None,
                (Some(sub), None) => sub.trim_matches(' '),
            };
            let mut range = Range {
                type_,
                subtype,
                q: 1.0,
                params: Vec::new(),
            };
            for param in pieces {
                let mut kv = param.split('=');
                let (Some(k), Some(v), None) = (kv.next(), kv.next(), kv.next()) else {
                    continue;
                };
                let (k, v) = (k.trim_matches(' '), v.trim_matches(' '));
                if k == "q" {
                    range.q = v.parse::<f32>().map_or(0.0, f64::from);
                } else {
                    range.params.push((k, v));
                }
            }
            Some(range)
        })
        .collect()
}

/// goautoneg's order: a range goes before another of lower `q`, or one whose type, else subtype,
/// is a wildcard where its own is not. Not a total order; applied as Go's `sort.Sort` applies it
/// to the dozen or fewer ranges a header carries, by insertion.
fn sorted(mut ranges: Vec<Range<'_>>) -> Vec<Range<'_>> {
    let before = |a: &Range<'_>, b: &Range<'_>| {
        a.q > b.q || (a.type_ != "*" && b.type_ == "*") || (a.subtype != "*" && b.subtype == "*")
    };
    for i in 1..ranges.len() {
        let mut j = i;
        while j > 0 && before(&ranges[j], &ranges[j - 1]) {
            ranges.swap(j, j - 1);
            j -= 1;
        }
    }
    ranges
}

#[cfg(test)]
#[path = "negotiate_tests.rs"]
mod tests;
