# Shared by hack/build.sh and hack/conformance.sh: how to build code from k8s.io/kubernetes outside its
# own repository. Source it after hack/versions.env; it defines functions only.

# kube_module_init DIR MODULE: makes DIR a fresh throw-away Go module named MODULE that can require
# k8s.io/kubernetes@$KUBE_VERSION. k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
# them with local paths, which only works inside its own repo; the staging list is read from its published
# go.mod (not hard-coded) and each one is pointed at the matching published tag $KUBE_STAGING_VERSION.
# The go.mod's `godebug default=` line is copied too, so GODEBUG defaults match upstream's binaries.
kube_module_init() {
  local dir=$1 module=$2
  rm -rf "$dir" && mkdir -p "$dir" || return 1
  # Every step checks its status: set -e does not apply inside a function called from `cmd || handler`.
  (
    cd "$dir" || exit 1
    go mod init "$module" >/dev/null 2>&1 || { echo "go mod init $module failed in $dir" >&2; exit 1; }
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
    [[ -f $gomod ]] || { echo "could not download k8s.io/kubernetes@$KUBE_VERSION go.mod" >&2; exit 1; }
    local staging
    staging=$(awk '/^[[:space:]]*k8s\.io\/[a-z0-9-]+ v0\.0\.0$/ {print $1}' "$gomod" | sort -u)
    [[ -n $staging ]] || { echo "found no staging modules in $gomod" >&2; exit 1; }
    printf '[build]   %s staging modules -> %s\n' "$(wc -l <<<"$staging")" "$KUBE_STAGING_VERSION" >&2
    local m
    for m in $staging; do go mod edit -replace="$m=$m@$KUBE_STAGING_VERSION" || exit 1; done
    local godebug
    godebug=$(sed -n 's/^godebug default=\(.*\)$/\1/p' "$gomod")
    if [[ -n $godebug ]]; then go mod edit -godebug="default=$godebug" || exit 1; fi
  )
}

# kube_ldflags: the -ldflags value that makes a binary report $KUBE_VERSION (the variables upstream's
# hack/lib/version.sh sets), stripped (-s -w). Without them /version and version-based e2e skips see v0.0.0.
kube_ldflags() {
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local date; date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  local ld="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    ld+=" -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.buildDate=$date"
  done
  printf '%s\n' "$ld"
}
