#!/usr/bin/env bash
# `npm run build`: Ripple compiled to JavaScript in dist/ (tsconfig.build.json), as the image runs it
# (`node dist/cli/ripple.js`). Extra arguments go to tsc (the Dockerfile passes --declaration false).
# `npm start`, `npm test` and bin/ripple.js keep running the sources through tsx; nothing needs dist/ but the image.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rm -rf dist
npx tsc -p tsconfig.build.json "$@"
# Data files a module reads beside itself (readFileSync of a path from import.meta.url) are not emitted by tsc:
# copy each one next to its compiled module.
while IFS= read -r f; do
  if [[ -d "dist/$(dirname "$f")" ]]; then cp "$f" "dist/$f"; fi
done < <(find api cli kube queue runtime status watcher functions ops sandbox sdk -name '*.json' 2>/dev/null)
echo "build: dist/ ($(find dist -name '*.js' | wc -l) modules)"
