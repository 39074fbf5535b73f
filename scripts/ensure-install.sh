#!/bin/sh
# Installs the workspace on a fresh clone (pnpm comes from the npm registry, Node 24 from the
# pinned `node` devDependency) and regenerates protobuf code when proto/ changed.
set -e
cd "$(dirname "$0")/.."
if [ ! -x node_modules/.bin/node ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  npx --yes pnpm@10.34.9 install --frozen-lockfile=false --reporter=append-only
fi
