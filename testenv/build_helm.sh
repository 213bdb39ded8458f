#!/usr/bin/env bash
# Builds helm for kubeno's chart tests from the Go module proxy, pinned by the wrapper module in
# tools/helm/, into the same cache folder as the control-plane binaries
# ($KUBENO_ASSETS_DIR, default ~/.cache/kubeno/k8s-<version>, the version read from
# kubernetes/go.mod as build.sh reads it). A warm cache is a no-op.
#
# Separate from build.sh on purpose: build.sh's stamp hashes build.sh and testenv/*/go.mod, so
# helm (its own script, its module one level deeper) can be added or bumped without
# rebuilding the Kubernetes binaries, and a failed helm build never costs the control plane.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$here/kubernetes/go.mod")
[ -n "$version" ] || { echo "kubeno testenv: cannot read the k8s.io/kubernetes version from $here/kubernetes/go.mod" >&2; exit 1; }
mod="$here/tools/helm"
helm_version=$(grep -oE '^(require )?[[:space:]]*helm\.sh/helm/v4 v[^ ]+' "$mod/go.mod" | awk '{ print $NF; exit }')
[ -n "$helm_version" ] || { echo "kubeno testenv: cannot read the helm.sh/helm/v4 version from $mod/go.mod" >&2; exit 1; }
out=${KUBENO_ASSETS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeno/k8s-$version}
stamp="$out/.kubeno-helm-build"
want=$(cat "$here/build_helm.sh" "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)

if [ -x "$out/helm" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "kubeno testenv: helm $helm_version is cached in $out"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "kubeno testenv: cannot build helm: Go is not installed; install Go (https://go.dev/dl/) or put a helm binary at $out/helm (or set KUBENO_HELM)" >&2
  exit 1
fi

mkdir -p "$out"
echo "kubeno testenv: building helm $helm_version (cold: about 2-4 min on 2 cores)"
ld="-s -w -X helm.sh/helm/v4/internal/version.version=$helm_version -X helm.sh/helm/v4/internal/version.metadata= -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
(cd "$mod" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "$ld" -o "$out/helm.tmp" helm.sh/helm/v4/cmd/helm)
mv "$out/helm.tmp" "$out/helm"
echo "$want" >"$stamp"
echo "kubeno testenv: done: $out/helm"
"$out/helm" version --short
