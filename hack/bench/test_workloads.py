"""workloads.py's registry is consistent, and the modules import without a cluster
(`python3 -m unittest discover -s hack/bench`)."""
import os
import subprocess
import sys
import unittest

import run
from measure import Cluster
from workloads import SCALES, WORKLOADS, reaction, terminating

KNOWN_CONTROLLERS = {"replicaset-controller", "deployment-controller", "job-controller", "garbage-collector-controller"}
HERE = os.path.dirname(os.path.abspath(__file__))


def objects(size):
    """How many objects or pods a size stands for, to compare scales."""
    n = 1
    for x in size if isinstance(size, tuple) else (size,):
        n *= x
    return n


class Registry(unittest.TestCase):
    def test_each_workload_is_under_its_own_name(self):
        self.assertEqual(list(WORKLOADS), ["rs", "scale", "deploy", "jobs", "batch", "rollout", "gc", "idle"])
        for name, w in WORKLOADS.items():
            self.assertEqual(w.name, name)

    def test_every_workload_has_a_size_for_every_scale_and_grows_with_it(self):
        for w in WORKLOADS.values():
            self.assertEqual(set(w.sizes), set(SCALES), w.name)
            self.assertLess(objects(w.sizes["tiny"]), objects(w.sizes["small"]), w.name)
            self.assertLess(objects(w.sizes["small"]), objects(w.sizes["full"]), w.name)
            shapes = {len(s) if isinstance(s, tuple) else None for s in w.sizes.values()}
            self.assertEqual(len(shapes), 1, f"{w.name}: every scale's size has the same shape")

    def test_controllers_are_kcm_names(self):
        for w in WORKLOADS.values():
            names = w.controllers.split(",")
            self.assertTrue(names and set(names) <= KNOWN_CONTROLLERS, w.name)

    def test_titles_are_those_of_earlier_passes(self):
        # benches/results/ compares passes by these titles: they stay as they were.
        small = {name: w.describe(w.sizes["small"]) for name, w in WORKLOADS.items()}
        self.assertEqual(small, {
            "rs": "20 ReplicaSets x 25 pods, then one pod of each deleted",
            "scale": "1 ReplicaSet scaled 0 -> 500 -> 0",
            "deploy": "20 Deployments x 10 pods, then a rolling image update of all",
            "jobs": "40 Jobs x 10 completions, parallelism 5",
            "batch": "batch (clusterloader2's shape): 200 Jobs of one pod",
            "rollout": "rollout: 200 Deployments of one pod, then all templates changed",
            "gc": "gc: 100 owners x 20 dependents, then the owners deleted",
            "idle": "idle: 5000 cached pods (memory only)",
        })
        for w in WORKLOADS.values():
            self.assertEqual(len({w.describe(w.sizes[s]) for s in SCALES}), len(SCALES), w.name)

    def test_latency_labels(self):
        self.assertEqual({name: w.latency for name, w in WORKLOADS.items()}, {
            "rs": "pod deleted -> replacement created",
            "scale": "spec.replicas changed -> first pod created/deleted",
            "deploy": "template changed -> new ReplicaSet created",
            "jobs": "pod Succeeded -> Job's next write",
            "batch": "Job created -> Complete",
            "rollout": "template changed -> rollout complete",
            "gc": "owner deleted -> its last dependent deleted",
            "idle": "–",
        })

    def test_hooks(self):
        for w in WORKLOADS.values():
            self.assertTrue(callable(w.run), w.name)
            self.assertTrue(w.prepare is None or callable(w.prepare), w.name)
        # The idle cache's work is its first list, and the collector's first lists are much of its
        # own: their CPU counts from the start. Only the collector's needs a plane of its own.
        self.assertEqual([n for n, w in WORKLOADS.items() if w.cpu_from_start], ["gc", "idle"])
        self.assertEqual([n for n, w in WORKLOADS.items() if w.prepare], ["gc", "idle"])
        self.assertEqual([n for n, w in WORKLOADS.items() if not w.by_default], ["gc"])


class Cli(unittest.TestCase):
    def test_defaults_run_every_workload_at_small_size(self):
        args = run.parse_args([])
        self.assertEqual(args.workloads, "rs,scale,deploy,jobs,batch,rollout,idle")
        self.assertEqual(args.scale, "small")
        self.assertEqual(args.qps, "20/30,100/200")
        self.assertIsNone(args.append)
        self.assertIsNone(args.out)

    def test_an_unknown_workload_is_refused_before_anything_runs(self):
        with open(os.devnull, "w") as devnull:
            stderr, sys.stderr = sys.stderr, devnull
            try:
                with self.assertRaises(SystemExit):
                    run.parse_args(["--workloads", "rs,nope"])
            finally:
                sys.stderr = stderr

    def test_modules_import_and_help_runs_without_the_clusters_variables(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("KCM_RS_")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for argv in (["-c", "import api, measure, report, run, sharded, sharded_work, workloads"], [os.path.join(HERE, "run.py"), "--help"]):
            done = subprocess.run([sys.executable, *argv], cwd=HERE, env=env, capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)

    def test_the_cluster_is_read_from_the_environment_when_asked(self):
        saved = dict(os.environ)
        try:
            os.environ.update(KCM_RS_RUN_DIR="/tmp/run", KCM_RS_KUBE_BIN="/tmp/bin", API_PORT="6443")
            os.environ.pop("KCM_RS_BINARY", None)
            os.environ.pop("KCM_RS_PROFILE", None)
            self.assertEqual(Cluster.from_env(),
                             Cluster("/tmp/run", "/tmp/bin", "target/release/kcm-rs", "", 6443))
        finally:
            os.environ.clear()
            os.environ.update(saved)


class Reactions(unittest.TestCase):
    def test_first_trigger_per_key_to_the_next_answer(self):
        def pod(owner, deleting=False):
            meta = {"ownerReferences": [{"controller": True, "uid": owner}]}
            if deleting:
                meta["deletionTimestamp"] = "now"
            return {"metadata": meta}
        events = [
            (1.0, "MODIFIED", pod("a", deleting=True)),
            (1.5, "DELETED", pod("a", deleting=True)),  # a second trigger for "a" keeps the first time
            (2.0, "ADDED", pod("b")),  # an answer without a trigger counts nothing
            (3.0, "ADDED", pod("a")),
            (4.0, "ADDED", pod("a")),  # answered already
        ]
        owner = lambda o: o["metadata"]["ownerReferences"][0]["uid"]
        lat = reaction(events, trigger=terminating, answer=lambda t, o: t == "ADDED", key=owner)
        self.assertEqual(lat, [2.0])

    def test_terminating(self):
        self.assertTrue(terminating("DELETED", {"metadata": {}}))
        self.assertTrue(terminating("MODIFIED", {"metadata": {"deletionTimestamp": "t"}}))
        self.assertFalse(terminating("MODIFIED", {"metadata": {}}))


if __name__ == "__main__":
    unittest.main()


class Shapes(unittest.TestCase):
    def test_lifecycle_from_start_to_first_finish_per_object(self):
        from shapes import lifecycle
        job = lambda uid, done=False: {"metadata": {"uid": uid},  # noqa: E731
                                       "status": {"conditions": [{"type": "Complete", "status": "True"}]} if done else {}}
        events = [(1.0, "ADDED", job("a")), (1.5, "ADDED", job("b")), (2.0, "MODIFIED", job("a")),
                  (4.0, "MODIFIED", job("a", True)), (5.0, "MODIFIED", job("a", True)), (9.0, "MODIFIED", job("c", True))]
        from shapes import has_condition
        lat = lifecycle(events, lambda ty, o: ty == "ADDED", lambda ty, o: has_condition(o, "Complete"))
        self.assertEqual(lat, [3.0], "b never finished, c never started, a counted once")

    def test_a_rollout_is_complete_when_every_replica_is_updated_and_available(self):
        from shapes import rolled_out
        d = lambda **s: {"spec": {"replicas": 1}, "status": s}  # noqa: E731
        self.assertTrue(rolled_out(d(observedGeneration=2, updatedReplicas=1, availableReplicas=1, replicas=1), 2))
        self.assertFalse(rolled_out(d(observedGeneration=2, updatedReplicas=1, availableReplicas=1, replicas=2), 2),
                         "the old pod is still there")
        self.assertFalse(rolled_out(d(observedGeneration=1, updatedReplicas=1, availableReplicas=1, replicas=1), 2))
