"""plots.py: the CDF and rolling-percentile arithmetic, and the two SVG charts of a pass
(`python3 -m unittest discover -s hack/bench`)."""
import os
import tempfile
import unittest

import plots
from test_report import figures


class Arithmetic(unittest.TestCase):
    def test_cdf_reaches_one_at_the_largest_sample(self):
        xs, ys = plots.cdf([3, 1, 2, 2])
        self.assertEqual(xs, [1, 2, 2, 3])
        self.assertEqual(ys, [0.25, 0.5, 0.75, 1.0])

    def test_rolling_percentiles_one_value_per_window_end(self):
        xs = list(range(1, 26))
        self.assertEqual(plots.rolling(xs, 50, window=20), [11, 12, 13, 14, 15, 16])
        self.assertEqual(plots.rolling(xs, 99, window=20), [20, 21, 22, 23, 24, 25])

    def test_fewer_samples_than_a_window_give_one_value(self):
        self.assertEqual(plots.rolling([5, 1, 9], 50), [5])
        self.assertEqual(plots.rolling([], 50), [])


class Charts(unittest.TestCase):
    def test_a_pass_gives_two_svgs_naming_both_controllers(self):
        up = figures(latencies=[0.01, 0.02, 0.5], series=[(0, 0, 40), (0.5, 0.1, 41)])
        rs = figures(latencies=[0.005, 0.01, 0.2], series=[(0, 0, 10), (0.5, 0.05, 11)])
        runs = [("1 ReplicaSet of 10", "pod create", "100", "200", up, rs),
                ("idle", "none", "100", "200", figures(), figures())]
        with tempfile.TemporaryDirectory() as d:
            stem = plots.stem_of(os.path.join(d, "2026-11-28-bench-e2e.md"))
            written = plots.write(stem, runs)
            self.assertEqual(written, [f"{stem}-latency.svg", f"{stem}-process.svg"])
            for path in written:
                with open(path) as f:
                    text = f.read()
                self.assertTrue(text.lstrip().startswith("<?xml"), path)
                self.assertIn("kcm-rs", text)
                self.assertIn("upstream KCM", text)



class Sharded(unittest.TestCase):
    UPSTREAM = (300.0, 12.0, 80.0)
    # (replicas, all shards synced after s, per replica (rss, cpu, pods, shards, MiB received))
    POINTS = [(1, 4.0, [(120.0, 6.0, 20000, 12, 70.0)]),
              (2, 3.0, [(70.0, 3.5, 10000, 6, 36.0), (66.0, 3.1, 10000, 6, 35.0)])]
    # (replicas, wave took s, per replica (cpu, MiB received, rss))
    WAVES = [(1, 24.0, [(2.4, 22.0, 86.0)]), (2, 23.0, [(2.1, 18.3, 60.0), (1.9, 17.1, 57.0)])]

    def test_perf_data_has_upstream_and_each_replica_count(self):
        import json
        from report import sharded_perf_data
        items = json.loads(sharded_perf_data(self.UPSTREAM, self.POINTS))["dataItems"]
        rss = {(i["labels"]["Controller"], i["labels"]["Replicas"]): i["data"] for i in items
               if i["labels"]["Metric"] in ("PeakRSS", "PeakRSSPerReplica")}
        self.assertEqual(rss, {("upstream", "1"): {"Perc50": 300.0}, ("kcm-rs", "1"): {"Perc50": 120.0, "Perc99": 120.0},
                               ("kcm-rs", "2"): {"Perc50": 68.0, "Perc99": 70.0}})
        synced = [i for i in items if i["labels"]["Metric"] == "AllShardsSynced"]
        self.assertEqual([i["data"]["Perc50"] for i in synced], [4000.0, 3000.0])

    def test_perf_data_has_the_wave_per_replica(self):
        import json
        from report import sharded_perf_data
        items = json.loads(sharded_perf_data(self.UPSTREAM, self.POINTS, self.WAVES))["dataItems"]
        cpu = {i["labels"]["Replicas"]: i["data"] for i in items if i["labels"]["Metric"] == "WaveCPUPerReplica"}
        self.assertEqual(cpu, {"1": {"Perc50": 2.4, "Perc99": 2.4}, "2": {"Perc50": 2.0, "Perc99": 2.1}})
        took = [i["data"]["Perc50"] for i in items if i["labels"]["Metric"] == "WaveDuration"]
        self.assertEqual(took, [24000.0, 23000.0])

    def test_the_chart_is_written(self):
        with tempfile.TemporaryDirectory() as d:
            path = plots.write_sharded(os.path.join(d, "pass"), self.UPSTREAM, self.POINTS)
            with open(path) as f:
                text = f.read()
            self.assertIn("busiest replica", text)

    def test_the_chart_has_a_row_for_the_wave(self):
        with tempfile.TemporaryDirectory() as d:
            path = plots.write_sharded(os.path.join(d, "pass"), self.UPSTREAM, self.POINTS, self.WAVES)
            with open(path) as f:
                self.assertIn("Deployments wave", f.read())


if __name__ == "__main__":
    unittest.main()
