"""profiles.py: `go tool pprof -traces` output folded into flame graph stacks
(`python3 -m unittest discover -s hack/bench`)."""
import unittest

import profiles

# The shape `go tool pprof -traces` prints: a header, then blocks between dashed rules, each with its
# value and leaf frame on the first line and the callers below, innermost first.
TRACES = """File: kcm-rs
Type: cpu
Time: 2026-11-28 08:40:00 UTC
Duration: 5s, Total samples = 1.23s (24.60%)
-----------+-------------------------------------------------------
      10ms   serde_json::de::from_slice
             informer::watch::decode (inline)
             informer::watch::run
-----------+-------------------------------------------------------
     1.20s   syscall
             tokio::io::poll
-----------+-------------------------------------------------------
      20ms   serde_json::de::from_slice
             informer::watch::decode
             informer::watch::run
-----------+-------------------------------------------------------
"""


class Folded(unittest.TestCase):
    def test_blocks_become_root_first_stacks_in_milliseconds_with_equal_stacks_summed(self):
        self.assertEqual(profiles.folded(TRACES), [
            "informer::watch::run;informer::watch::decode;serde_json::de::from_slice 30",
            "tokio::io::poll;syscall 1200",
        ])

    def test_a_semicolon_in_a_frame_does_not_split_the_stack(self):
        traces = "-----------+--\n 5ms  <T as Trait<A;B>>::f\n      main\n-----------+--\n"
        self.assertEqual(profiles.folded(traces), ["main;<T as Trait<A:B>>::f 5"])

    def test_no_samples_no_stacks(self):
        self.assertEqual(profiles.folded("File: x\nType: cpu\n"), [])


if __name__ == "__main__":
    unittest.main()
