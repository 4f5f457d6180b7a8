//! Metrics in the text format kube-controller-manager serves (Prometheus's, version 0.0.4, which
//! KCM's handler writes whatever the scraper accepts). prometheus-client writes OpenMetrics: a
//! counter's family is named without its `_total` (`# TYPE workqueue_adds counter` over samples
//! named `workqueue_adds_total`), and the exposition ends with `# EOF`. A classic-format parser then
//! finds no type for the samples, and a diff against KCM's page shows every counter. OpenMetrics'
//! `info` and `unknown` types, which a classic parser refuses (failing the whole scrape), become
//! `gauge` and `untyped`. So the few lines that differ are rewritten; the samples are the same in
//! both formats. Help texts are registered as KCM's page shows them, stability level first
//! (`[ALPHA] `, `[BETA] `, `[STABLE] `, as component-base writes it) and newlines escaped; only the
//! `.` prometheus-client puts after each is taken off here.

use std::collections::HashSet;

/// The `Content-Type` of the pages: the text format's, with the name escaping that client_golang's
/// negotiation (prometheus/common `expfmt.Negotiate`) adds for a scraper that asks for none.
/// Underscores is also true of kcm-rs's names, which are all valid classic names, escaped or not.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores";

/// `openmetrics` (prometheus-client's encoding) as Prometheus text 0.0.4.
pub fn prometheus_text(openmetrics: &str) -> String {
    let counters: HashSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len() + 8 * counters.len());
    for line in openmetrics.lines() {
        // prometheus-client ends every help text with a `.` of its own; the texts are registered
        // as KCM writes them, so it comes off.
        let line = match line.strip_prefix("# HELP ") {
            Some(_) => line.strip_suffix('.').unwrap_or(line),
            None => line,
        };
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let classic = [(" info", " gauge"), (" unknown", " untyped")]
            .iter()
            .find_map(|(om, prom)| Some((line.strip_prefix("# TYPE ")?.strip_suffix(om)?, prom)));
        if let Some((name, prom)) = classic {
            out.push_str("# TYPE ");
            out.push_str(name);
            out.push_str(prom);
            out.push('\n');
            continue;
        }
        let family = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let name = rest.split(' ').next()?;
            counters.contains(name).then_some((p, name, &rest[name.len()..]))
        });
        match family {
            Some((prefix, name, rest)) => {
                out.push_str(prefix);
                out.push_str(name);
                out.push_str("_total");
                out.push_str(rest);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_take_their_sample_name_and_the_end_marker_goes() {
        let om = "# HELP workqueue_adds Total number of adds handled by workqueue.\n\
                  # TYPE workqueue_adds counter\n\
                  workqueue_adds_total{name=\"replicaset\"} 3\n\
                  # HELP workqueue_depth Current depth of workqueue.\n\
                  # TYPE workqueue_depth gauge\n\
                  workqueue_depth{name=\"replicaset\"} 0\n\
                  # HELP work_seconds How long..\n\
                  # TYPE work_seconds histogram\n\
                  # UNIT work_seconds seconds\n\
                  work_seconds_sum 0.5\n\
                  work_seconds_count 1\n\
                  work_seconds_bucket{le=\"+Inf\"} 1\n\
                  # EOF\n";
        assert_eq!(
            prometheus_text(om),
            "# HELP workqueue_adds_total Total number of adds handled by workqueue\n\
             # TYPE workqueue_adds_total counter\n\
             workqueue_adds_total{name=\"replicaset\"} 3\n\
             # HELP workqueue_depth Current depth of workqueue\n\
             # TYPE workqueue_depth gauge\n\
             workqueue_depth{name=\"replicaset\"} 0\n\
             # HELP work_seconds How long.\n\
             # TYPE work_seconds histogram\n\
             work_seconds_sum 0.5\n\
             work_seconds_count 1\n\
             work_seconds_bucket{le=\"+Inf\"} 1\n"
        );
    }

    #[test]
    fn types_a_classic_parser_refuses_are_renamed() {
        let om = "# TYPE build info\nbuild_info{version=\"1\"} 1\n# TYPE odd unknown\nodd 3\n# EOF\n";
        assert_eq!(
            prometheus_text(om),
            "# TYPE build gauge\nbuild_info{version=\"1\"} 1\n# TYPE odd untyped\nodd 3\n"
        );
    }

    /// A gauge whose name starts like a counter's is left alone.
    #[test]
    fn only_whole_counter_names_are_renamed() {
        let om = "# TYPE adds counter\nadds_total 1\n# HELP adds_now Now.\n# TYPE adds_now gauge\nadds_now 2\n# EOF\n";
        assert_eq!(
            prometheus_text(om),
            "# TYPE adds_total counter\nadds_total 1\n# HELP adds_now Now\n# TYPE adds_now gauge\nadds_now 2\n"
        );
    }
}
