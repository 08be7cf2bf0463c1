#!/usr/bin/env bash
# The release: the collector's archive for every platform, stamped with the
# version in the file VERSION (the one place it is written), and their
# checksums.
#
#   scripts/release.sh [OUTDIR]      # default: dist
#
# Writes OUTDIR/collector_VERSION_GOOS_GOARCH.tar.gz per platform (binary,
# LICENSE, README.md, configs/collector.yaml; reproducible) and
# OUTDIR/SHA256SUMS over them, with scripts/release-build.sh --archive, the
# command the Dockerfile's build runs too. Before building it checks that
# the release is one: CHANGELOG.md's newest released section, the Helm
# chart's appVersion and the kustomize image tag name the same version
# (internal/deploytest checks the same in CI). Then, by hand:
#
#   git tag -a v0.1.0 -m "collector 0.1.0" && git push origin v0.1.0
#   docker buildx build --platform linux/amd64,linux/arm64 --push \
#     -t ghcr.io/svcexport/collector:0.1.0 --build-arg VERSION=0.1.0 \
#     --build-arg COMMIT="$(git rev-parse HEAD)" --build-arg DATE=<the DATE printed> .
#
# Environment (all optional):
#   PLATFORMS  default: "linux/amd64 linux/arm64 darwin/amd64 darwin/arm64"
#   COMMIT, DATE   as release-build.sh (default: HEAD and its commit time)
#   VERSION    only for a pre-release build of the same version line
#              (0.1.0-rc.1); a different MAJOR.MINOR.PATCH is refused
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-dist}"
file_version="$(tr -d '[:space:]' < "$repo/VERSION")"
version="${VERSION:-$file_version}"
platforms="${PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"

die() { echo "release.sh: $*" >&2; exit 2; }
[[ "$file_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION holds '$file_version', want MAJOR.MINOR.PATCH"
[[ "$version" == "$file_version" || "$version" == "$file_version"-* ]] ||
	die "VERSION=$version is not the file VERSION's $file_version (or a pre-release of it)"

# The release is one: the changelog, the chart and the kustomize base name it.
newest="$(sed -n 's/^## \[\([0-9][^]]*\)\] - [0-9]\{4\}-[0-9]\{2\}-[0-9]\{2\}$/\1/p' "$repo/CHANGELOG.md" | head -n 1)"
[[ "$newest" == "$file_version" ]] || die "CHANGELOG.md's newest release is '$newest', VERSION says $file_version: cut its section first"
app="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$repo/deploy/helm/collector/Chart.yaml")"
[[ "$app" == "$file_version" ]] || die "deploy/helm/collector/Chart.yaml appVersion is '$app', VERSION says $file_version"
tag="$(sed -n 's/^ *newTag: *\([^ #]*\).*$/\1/p' "$repo/deploy/kubernetes/kustomization.yaml")"
[[ "$tag" == "$file_version" ]] || die "deploy/kubernetes/kustomization.yaml newTag is '$tag', VERSION says $file_version"

# SHA256SUMS covers every collector_*.tar.gz in OUTDIR: start from none of
# another version.
mkdir -p "$out"
shopt -s nullglob
for f in "$out"/collector_*.tar.gz; do
	[[ "$(basename "$f")" == collector_"$version"_* ]] || die "$out holds $(basename "$f"), of another version: use an empty OUTDIR"
done

for p in $platforms; do
	GOOS="${p%/*}" GOARCH="${p#*/}" VERSION="$version" "$repo/scripts/release-build.sh" --archive "$out"
done
# The man pages, from the same command definitions as --help and docs/cli.
rm -rf "$out/man" && mkdir -p "$out/man"
(cd "$repo" && go run ./cmd/collector docs --man --dir "$out/man")
tar -C "$out" -czf "$out/collector_${version}_man.tar.gz" man && rm -rf "$out/man"
(cd "$out" && sha256sum "collector_${version}_man.tar.gz" >> SHA256SUMS)
(cd "$out" && sha256sum -c --quiet SHA256SUMS)
echo "release.sh: collector $version for $platforms in $out, checksums in $out/SHA256SUMS" >&2
