#!/usr/bin/env bash
# Sets one version everywhere a release names it (docs/releasing.md): package.json (and its lock), the
# chart's version and appVersion (the image tag the chart runs by default), and turns CHANGELOG.md's
# "Unreleased" section into the release's. It commits and tags nothing: review the diff, run the tests,
# then commit and tag (the procedure in docs/releasing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-}"
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh X.Y.Z[-pre]   (a SemVer without a leading v)" >&2
  exit 2
fi
if grep -q "^## \[$version\]" CHANGELOG.md; then
  echo "CHANGELOG.md already has a section for $version" >&2
  exit 1
fi
npm version "$version" --no-git-tag-version --allow-same-version >/dev/null
sed -i -E "s/^version: .*/version: $version/; s/^appVersion: .*/appVersion: \"$version\"/" charts/ripple/Chart.yaml
# The Unreleased entries become the release's; a new empty Unreleased section stays on top.
today="$(date -u +%Y-%m-%d)"
sed -i "0,/^## \[Unreleased\]$/s//## [Unreleased]\n\n## [$version] - $today/" CHANGELOG.md
echo "set $version in package.json, package-lock.json, charts/ripple/Chart.yaml and CHANGELOG.md; next: docs/releasing.md, step 3"
