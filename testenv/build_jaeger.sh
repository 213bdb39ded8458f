#!/usr/bin/env bash
# Builds Jaeger (v2, the all-in-one `cmd/jaeger`) for kubeno's tracing test from the Go module
# proxy, pinned by the wrapper module in tools/jaeger/, into the same cache folder as the
# control-plane binaries ($KUBENO_ASSETS_DIR, default ~/.cache/kubeno/k8s-<version>, the
# version read from kubernetes/go.mod as build.sh reads it). A warm cache is a no-op.
#
# Separate from build.sh for the reasons build_helm.sh gives: its own stamp, so bumping Jaeger
# never rebuilds the Kubernetes binaries and a failed Jaeger build never costs the control plane.
# The binary carries no UI assets (the query API is all the test reads).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2; exit }' "$here/kubernetes/go.mod")
[ -n "$version" ] || { echo "kubeno testenv: cannot read the k8s.io/kubernetes version from $here/kubernetes/go.mod" >&2; exit 1; }
mod="$here/tools/jaeger"
jaeger_version=$(grep -oE '^(require )?[[:space:]]*github\.com/jaegertracing/jaeger v[^ ]+' "$mod/go.mod" | awk '{ print $NF; exit }')
[ -n "$jaeger_version" ] || { echo "kubeno testenv: cannot read the github.com/jaegertracing/jaeger version from $mod/go.mod" >&2; exit 1; }
out=${KUBENO_ASSETS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeno/k8s-$version}
stamp="$out/.kubeno-jaeger-build"
want=$(cat "$here/build_jaeger.sh" "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)

if [ -x "$out/jaeger" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "kubeno testenv: jaeger $jaeger_version is cached in $out"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "kubeno testenv: cannot build jaeger: Go is not installed; install Go (https://go.dev/dl/) or put a jaeger binary at $out/jaeger (or set KUBENO_JAEGER)" >&2
  exit 1
fi

mkdir -p "$out"
echo "kubeno testenv: building jaeger $jaeger_version (cold: about 5-10 min on 2 cores)"
ld="-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$jaeger_version"
(cd "$mod" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "$ld" -o "$out/jaeger.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
mv "$out/jaeger.tmp" "$out/jaeger"
echo "$want" >"$stamp"
echo "kubeno testenv: done: $out/jaeger"
"$out/jaeger" version 2>/dev/null | head -3 || true
