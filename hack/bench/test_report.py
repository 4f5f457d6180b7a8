"""report.py: percentiles, the request rows, the tables and the files they go to
(`python3 -m unittest discover -s hack/bench`)."""
import collections
import os
import tempfile
import unittest

from report import appended, fmt, perf_data, percentile, ratio, request_figures, results_file, table, unused_path


def figures(**over):
    """run_one's dict for one process, with the request figures of a run that made no request."""
    base = dict(converge=10.0, p50=0.2, p90=0.4, p99=0.5, samples=20, watch_gaps=0, cpu=1.5, rss=80.0, rss_now=70.0,
                **request_figures(collections.Counter()))
    base.update(over)
    return base


class Percentile(unittest.TestCase):
    def test_no_samples_is_none(self):
        self.assertIsNone(percentile([], 50))

    def test_one_sample_is_every_percentile(self):
        for p in (0, 50, 99, 100):
            self.assertEqual(percentile([3.0], p), 3.0)

    def test_nearest_rank_on_the_sorted_samples(self):
        xs = [5, 1, 4, 2, 3]  # unsorted on purpose
        self.assertEqual(percentile(xs, 0), 1)
        self.assertEqual(percentile(xs, 50), 3)
        self.assertEqual(percentile(xs, 99), 5)
        self.assertEqual(percentile(xs, 100), 5)
        self.assertEqual(xs, [5, 1, 4, 2, 3], "the caller's list is left as it was")

    def test_p99_of_a_hundred_is_the_ninety_ninth_and_p50_rounds_half_to_even(self):
        xs = list(range(1, 101))
        self.assertEqual(percentile(xs, 99), 99)  # index round(0.99 * 99) = 98
        self.assertEqual(percentile(xs, 50), 51)  # index round(49.5) = 50 (Python rounds half to even)

    def test_two_samples(self):
        self.assertEqual(percentile([1, 2], 50), 1)  # index round(0.5) = 0
        self.assertEqual(percentile([1, 2], 99), 2)


class RequestFigures(unittest.TestCase):
    def test_without_an_audit_log_every_figure_is_unknown(self):
        self.assertEqual(request_figures(None),
                         dict(requests=None, event_writes=None, conflicts=None, by_kind=None))

    def test_totals_event_writes_conflicts_and_the_breakdown(self):
        counts = collections.Counter({
            ("create", "pods", 201): 520,
            ("create", "events", 201): 196,
            ("patch", "events", 200): 235,
            ("patch", "events", 504): 1,
            ("get", "events", 200): 3,  # a read of events is not an event write
            ("update", "replicasets/status", 200): 287,
            ("update", "replicasets/status", 409): 12,
            ("update", "deployments/status", 409): 43,
            ("watch", "pods", 200): 1,
        })
        got = request_figures(counts)
        self.assertEqual(got["requests"], 520 + 196 + 235 + 1 + 3 + 287 + 12 + 43 + 1)
        self.assertEqual(got["event_writes"], 196 + 235 + 1)
        self.assertEqual(got["conflicts"], 12 + 43)
        self.assertEqual(got["by_kind"]["create pods 201"], 520)
        self.assertEqual(got["by_kind"]["update replicasets/status 409"], 12)
        self.assertEqual(len(got["by_kind"]), len(counts))

    def test_no_requests(self):
        self.assertEqual(request_figures(collections.Counter()),
                         dict(requests=0, event_writes=0, conflicts=0, by_kind={}))


class Formatting(unittest.TestCase):
    def test_fmt(self):
        self.assertEqual(fmt(None), "–")
        self.assertEqual(fmt(0.1234), "0.123")
        self.assertEqual(fmt(12.34), "12.3")
        self.assertEqual(fmt(1339), "1339")

    def test_ratio_is_kcm_rs_over_upstream(self):
        self.assertEqual(ratio(2.0, 1.0), "0.50")
        self.assertEqual(ratio(None, 1.0), "–")
        self.assertEqual(ratio(0, 1.0), "–")
        self.assertEqual(ratio(1.0, None), "–")


class Table(unittest.TestCase):
    def test_rows_and_ratios(self):
        up = figures(cpu=2.0, rss=80.0)
        rs = figures(cpu=1.0, rss=20.0)
        text = table("20 ReplicaSets x 25 pods", "pod deleted -> replacement created", "100", "200", up, rs)
        lines = text.splitlines()
        self.assertEqual(lines[0], "#### 20 ReplicaSets x 25 pods (qps 100, burst 200)")
        self.assertEqual(lines[2], "| | upstream KCM | kcm-rs | kcm-rs / upstream |")
        self.assertIn("| event -> action p50 (s) [pod deleted -> replacement created] | 0.200 | 0.200 | 1.00 |", lines)
        self.assertIn("| CPU user+sys (s) | 2.0 | 1.0 | 0.50 |", lines)
        self.assertIn("| peak RSS (MiB) | 80.0 | 20.0 | 0.25 |", lines)
        self.assertIn("| latency samples | 20 | 20 | |", lines)
        self.assertIn("| the runner's watch gaps (events lost, samples with them) | 0 | 0 | |", lines)
        self.assertTrue(text.endswith("</details>\n"))

    def test_no_audit_log_no_breakdown_and_unknown_requests(self):
        up = figures(**request_figures(None))
        rs = figures(**request_figures(None))
        text = table("idle: 50 cached pods (memory only)", "–", "100", "200", up, rs)
        self.assertIn("| API requests | – | – | – |", text.splitlines())
        self.assertNotIn("<details>", text)
        self.assertTrue(text.endswith("|\n"))

    def test_the_breakdown_lists_each_kind_of_either_side_sorted(self):
        up = figures(**request_figures(collections.Counter({("get", "/healthz", 200): 1, ("watch", "pods", 200): 1})))
        rs = figures(**request_figures(collections.Counter({("get", "/version", 200): 1, ("watch", "pods", 200): 1})))
        lines = table("t", "–", "20", "30", up, rs).splitlines()
        rows = [line for line in lines if line.startswith("| get ") or line.startswith("| watch ")]
        self.assertEqual(rows, ["| get /healthz 200 | 1 | 0 |", "| get /version 200 | 0 | 1 |",
                                "| watch pods 200 | 1 | 1 |"])

    def test_heading_level(self):
        text = table("t", "–", "20", "30", figures(), figures(), level=2)
        self.assertTrue(text.startswith("## t (qps 20, burst 30)\n"))


class Files(unittest.TestCase):
    def run_(self, title):
        return (title, "–", "100", "200", figures(), figures())

    def test_appended_is_a_level_3_pass_with_level_4_tables(self):
        text = appended("2026-11-25, scale `tiny`", [self.run_("a"), self.run_("b")])
        self.assertTrue(text.startswith("\n### 2026-11-25, scale `tiny`\n\n#### a (qps 100, burst 200)\n"))
        self.assertIn("\n\n#### b (qps 100, burst 200)\n", text)
        self.assertTrue(text.endswith("</details>\n\n"))

    def test_results_file_has_a_title_the_command_and_level_2_tables(self):
        text = results_file("2026-11-25, scale `tiny`", "hack/bench.sh --scale tiny", [self.run_("a"), self.run_("b")])
        self.assertTrue(text.startswith("# 2026-11-25, scale `tiny`\n\n`hack/bench.sh --scale tiny`\n\n## a "))
        self.assertIn("</details>\n\n## b ", text)

    def test_unused_path_never_names_an_existing_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "2026-11-25-bench-e2e.md")
            self.assertEqual(unused_path(path), path)
            open(path, "w").close()
            self.assertEqual(unused_path(path), os.path.join(d, "2026-11-25-bench-e2e-2.md"))
            open(os.path.join(d, "2026-11-25-bench-e2e-2.md"), "w").close()
            self.assertEqual(unused_path(path), os.path.join(d, "2026-11-25-bench-e2e-3.md"))



class PerfDataFile(unittest.TestCase):
    def test_clusterloader2_v1_items_per_controller_in_milliseconds(self):
        import json
        runs = [("scale 0 -> 10", "pod created", 20, 30, figures(), figures(p50=0.1, p90=0.25, p99=0.3))]
        doc = json.loads(perf_data(runs))
        self.assertEqual(doc["version"], "v1")
        items = doc["dataItems"]
        self.assertEqual([i["labels"]["Controller"] for i in items], ["upstream", "kcm-rs"])
        self.assertEqual(items[0]["data"], {"Perc50": 200.0, "Perc90": 400.0, "Perc99": 500.0})
        self.assertEqual(items[1]["data"], {"Perc50": 100.0, "Perc90": 250.0, "Perc99": 300.0})
        self.assertEqual(items[0]["unit"], "ms")
        self.assertEqual(items[0]["labels"]["QPS"], "20/30")
        self.assertEqual(items[0]["labels"]["Workload"], "scale 0 -> 10")

    def test_a_run_without_samples_has_no_item(self):
        import json
        runs = [("w", "l", 20, 30, figures(p50=None, p90=None, p99=None, samples=0), figures())]
        self.assertEqual(len(json.loads(perf_data(runs))["dataItems"]), 1)


if __name__ == "__main__":
    unittest.main()
