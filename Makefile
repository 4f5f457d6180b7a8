# kcm-rs developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
CARGO ?= cargo
CLUSTER := hack/cluster.sh

.PHONY: all build fmt fmt-check clippy unit e2e conformance conformance-ci test run cluster-up cluster-down bench

all: build

build:
	$(CARGO) build --workspace --all-targets

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# Unit and in-process tests: everything but the e2e crate, which needs the local control plane.
unit:
	$(CARGO) test --workspace --exclude kcm-rs-e2e

# The e2e suites in 3 lanes (KCM_RS_E2E_LANES), each on a control plane of its own that the lane starts
# (reference mode) and always stops; the suites print the components' log tails when something fails.
# See hack/e2e.sh (`hack/e2e.sh SUITE...`: only those, one at a time).
e2e:
	CARGO=$(CARGO) hack/e2e.sh

# The randomized soaks alone (ReplicaSet, Deployment, Job), 10 minutes each (`make e2e` runs them for
# a minute each), then the random differential suite and the garbage collector's random programs for
# 30 minutes of rounds each (`make e2e` runs one round), and the shard fault, layout change and sharding suites with the API server not filtering
# by shard (`make test` runs them filtering), on a control plane of their own:
# KCM_RS_SHARD_GATES, KCM_RS_SOAK_SECONDS, KCM_RS_SOAK_SEED, KCM_RS_RANDOM_SECONDS and
# KCM_RS_RANDOM_SEED (replays) pass through.
.PHONY: soak
soak:
	KCM_RS_SOAK_SECONDS=$${KCM_RS_SOAK_SECONDS:-600} KCM_RS_RANDOM_SECONDS=$${KCM_RS_RANDOM_SECONDS:-1800} \
	  KCM_RS_SHARD_GATES=$${KCM_RS_SHARD_GATES:-off} \
	  CARGO=$(CARGO) hack/e2e.sh replicaset_soak deployment_soak job_soak random_differential garbage_collector \
	    shard_faults layout_change sharding

# Upstream's sig-apps e2e specs (Deployment, ReplicaSet, Job) under upstream's controllers, then under
# kcm-rs's, on a control plane of their own; prints the comparison table and fails on a regression.
# Options: CONFORMANCE_ARGS='--mode replace --kcm-rs path --focus regex ...' (hack/conformance.sh --help).
conformance:
	CARGO=$(CARGO) hack/conformance.sh $(CONFORMANCE_ARGS)

# The part of it CI runs: the [Conformance] specs of the controllers kcm-rs implements, under kcm-rs only;
# any failure fails.
conformance-ci:
	CARGO=$(CARGO) hack/conformance.sh --mode replace --implemented-only --conformance-only

# Upstream KCM vs kcm-rs side by side on one control plane (hack/bench.sh): the tables go to a new file,
# benches/results/<date>-bench-e2e.md (benches/README.md indexes the passes there); then the sharded
# pass below into <date>-sharded.md. For the full-size pass:
# BENCH_ARGS="--scale full --qps 20/30,100/200 --out benches/results/$(date +%F)-bench-e2e-full.md".
.PHONY: bench-e2e bench-e2e-smoke
bench-e2e:
	CARGO=$(CARGO) hack/bench.sh $(or $(BENCH_ARGS),--scale small --out benches/results/$$(date +%F)-bench-e2e.md)
	$(MAKE) bench-sharded

# kcm-rs sharing the work (--shards=12) at 1, 2 and 4 replicas over 20,000 idle pods in 40
# namespaces and a wave of Deployments, per replica, beside upstream KCM; then the failover after
# kill -9 against upstream's leader failover (hack/bench-sharded.sh). The largest pass:
# BENCH_SHARDED_ARGS="--pods 100000 --replicas 1,2,4 --upstream-failover --out benches/results/$(date +%F)-sharded-100k.md".
.PHONY: bench-sharded
bench-sharded:
	CARGO=$(CARGO) hack/bench-sharded.sh $(or $(BENCH_SHARDED_ARGS),--wave-pods 10 --upstream-failover --out benches/results/$$(date +%F)-sharded.md)

# What CI runs of it: every workload at a tiny size, once, to see that the runner works.
bench-e2e-smoke:
	CARGO=$(CARGO) hack/bench.sh --scale tiny --qps 100/200

# Release binaries (hack/dist.sh): static kcm-rs for linux amd64 and arm64 in dist/, with SHA256SUMS,
# in the shipped `image` profile; checks that the amd64 one runs and the arm64 one is a static aarch64
# executable. Installs the musl targets, zig and cargo-zigbuild if missing.
.PHONY: dist dist-check
dist:
	CARGO=$(CARGO) hack/dist.sh

# The amd64 cross build in the dev profile, and its checks, into target/dist-check: make test's dist
# stage, whose binary the image and the bench smoke run then take.
dist-check:
	CARGO=$(CARGO) hack/test.sh dist

# The kubeadm, kind, k3d and k3s recipes (deploy/kubeadm, deploy/kind, deploy/k3s) checked with the pinned
# kubeadm, kind's and k3d's own configuration code and the pinned KCM, up to the static pods (hack/recipes.sh).
.PHONY: recipes
recipes:
	hack/build.sh >/dev/null && hack/recipes.sh

# The container image built with buildah (hack/image.sh) and run hardened with podman against the
# local control plane (e2e/tests/image.rs), and the kubeadm recipe's static pod under `podman kube play`
# (e2e/tests/static_pod.rs).
.PHONY: image image-e2e
image:
	CARGO=$(CARGO) hack/image.sh

image-e2e: image
	CARGO=$(CARGO) hack/e2e.sh image static_pod

# Every check above as stages of hack/test.sh: the builds first, then the e2e suites, the image suite,
# conformance-ci and bench-e2e-smoke in 3 lanes; ends with each stage's and each suite's wall time.
test:
	CARGO=$(CARGO) hack/test.sh

# Brings up the control plane in replace mode (upstream KCM without the controllers kcm-rs takes over;
# a running cluster is switched to it) and runs kcm-rs against it in the foreground, serving its
# endpoints on 127.0.0.1:10257. The cluster keeps running afterwards: make cluster-down.
run:
	$(CARGO) build -p kcm-rs
	@if $(CLUSTER) status >/dev/null 2>&1; then $(CLUSTER) mode replace; else $(CLUSTER) up --mode replace; fi
	eval "$$($(CLUSTER) env)"; ./target/debug/kcm-rs --kubeconfig "$$KUBECONFIG" --bind-address=127.0.0.1 --kube-api-qps=100 --kube-api-burst=200

cluster-up:
	$(CLUSTER) up --mode $${MODE:-replace}

cluster-down:
	$(CLUSTER) down
