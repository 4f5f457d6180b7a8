"""The sharded runner's hash and shard arithmetic agree with the API server's (Go's FNV-1a) and with
kcm-rs's ranges."""
import unittest

from sharded import fnv1a64, shard_of
from sharded_work import bytes_by_pid


class ShardOf(unittest.TestCase):
    def test_the_hash_is_gos_fnv1a64(self):
        self.assertEqual(fnv1a64(""), 0xCBF29CE484222325)
        self.assertEqual(fnv1a64("a"), 0xAF63DC4C8601EC8C)
        self.assertEqual(fnv1a64("foobar"), 0x85944171F73967E8)

    def test_a_namespace_falls_in_the_range_of_its_shard(self):
        for count in (1, 2, 3, 7, 12, 1024):
            for i in range(100):
                ns = f"ns-{i}"
                k = shard_of(ns, count)
                self.assertLessEqual((k << 64) // count, fnv1a64(ns))
                self.assertLess(fnv1a64(ns), ((k + 1) << 64) // count)

    def test_names_differing_at_the_end_crowd_into_few_shards(self):
        # Why the runner puts the number first: FNV-1a's top bits barely move with the last bytes.
        self.assertLessEqual(len({shard_of(f"idle-{i}", 12) for i in range(40)}), 2)
        self.assertGreaterEqual(len({shard_of(f"{i}-idle", 12) for i in range(40)}), 10)


class BytesByPid(unittest.TestCase):
    def test_sums_each_processes_sockets(self):
        out = (
            'ESTAB 0 0 127.0.0.1:40001 127.0.0.1:6443 users:(("kcm-rs",pid=10,fd=9))\n'
            '\t cubic wscale:7,7 rto:201 bytes_sent:100 bytes_acked:101 bytes_received:5000 segs_out:3\n'
            'ESTAB 0 0 127.0.0.1:40002 127.0.0.1:6443 users:(("kcm-rs",pid=10,fd=10))\n'
            '\t cubic bytes_received:700\n'
            'ESTAB 0 0 127.0.0.1:40003 127.0.0.1:6443 users:(("kube-controller",pid=11,fd=7))\n'
            '\t cubic bytes_sent:9 bytes_received:42\n'
        )
        self.assertEqual(bytes_by_pid(out), {10: 5700, 11: 42})


if __name__ == "__main__":
    unittest.main()
