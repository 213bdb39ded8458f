#!/usr/bin/env bash
# Builds the real Kubernetes control-plane binaries that kubeno's tests, benchmarks and demo
# run on loopback: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
# kwok, from the Go module proxy, pinned by the wrapper modules beside this script.
#
# Output: $KUBENO_ASSETS_DIR (default ~/.cache/kubeno/k8s-<version>), one folder per version.
# A warm cache is a no-op. Needs Go; users with setup-envtest binaries can skip this and set
# KUBEBUILDER_ASSETS instead (kwok, kube-controller-manager and kube-scheduler are then only
# needed for `startControlPlane({ workloads: true })`).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$here/kubernetes/go.mod")
[ -n "$version" ] || { echo "kubeno testenv: cannot read the k8s.io/kubernetes version from $here/kubernetes/go.mod" >&2; exit 1; }
minor=$(echo "$version" | cut -d. -f2)
out=${KUBENO_ASSETS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeno/k8s-$version}
stamp="$out/.kubeno-build"
want=$(cat "$here/build.sh" "$here"/*/go.mod "$here"/*/go.sum | sha256sum | cut -c1-16)
bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

all_present() {
  for b in "${bins[@]}"; do [ -x "$out/$b" ] || return 1; done
  [ -f "$out/kwok-stages.yaml" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]
}

if all_present; then
  echo "kubeno testenv: Kubernetes $version binaries are cached in $out"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "kubeno testenv: cannot build the control plane: Go is not installed; install Go (https://go.dev/dl/) or set KUBEBUILDER_ASSETS to a folder of setup-envtest binaries" >&2
  exit 1
fi

mkdir -p "$out"
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
started=$(date +%s)
step() { echo "kubeno testenv: $* ($(($(date +%s) - started)) s elapsed)"; }

ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld="$ld -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

step "building kube-apiserver, kube-controller-manager, kube-scheduler and kubectl $version (cold: about 5-10 min on 2 cores)"
(cd "$here/kubernetes" && go build -trimpath -ldflags "$ld" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)

step "building etcd"
(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)

step "building kwok"
(cd "$here/kwok" && go build -trimpath -ldflags "-s -w" -o "$out/kwok" sigs.k8s.io/kwok/cmd/kwok)

# kwok needs Stage configuration; use the defaults its module ships (node initialize and
# heartbeat, pod lifecycle).
kwok_dir=$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
stages="$kwok_dir/kustomize/stage"
{
  for f in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml \
    pod/general/pod-create.yaml pod/general/pod-init-container-running.yaml \
    pod/general/pod-init-container-completed.yaml pod/general/pod-ready.yaml \
    pod/general/pod-complete.yaml pod/general/pod-delete.yaml; do
    echo "---"
    cat "$stages/$f"
  done
} >"$out/kwok-stages.yaml.tmp"
mv "$out/kwok-stages.yaml.tmp" "$out/kwok-stages.yaml"

echo "$want" >"$stamp"
step "done: $out"
"$out/kube-apiserver" --version
