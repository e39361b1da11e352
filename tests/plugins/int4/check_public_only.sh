#!/bin/sh
# The int4 plug-in builds from the public headers only: every quoted #include in plugins/int4
# names include/coccl.h, include/coccl_codec.h or a file of plugins/int4 itself (issue 16).
# Usage: check_public_only.sh <plugins/int4 folder>
dir=${1:?folder}
bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir"/*.h "$dir"/*.cc "$dir"/*.cu |
      grep -vE '"(coccl\.h|coccl_codec\.h|int4_[a-z_]+\.h)"')
if [ -n "$bad" ]; then
  echo "plugins/int4 includes non-public headers:"
  echo "$bad"
  exit 1
fi
for f in "$dir"/*.h "$dir"/*.cc "$dir"/*.cu; do
  grep -oE '"int4_[a-z_]+\.h"' "$f" | tr -d '"' | while read -r h; do
    [ -f "$dir/$h" ] || { echo "$f: $h is not in $dir"; exit 1; }
  done || exit 1
done
echo "plugins/int4: public headers only"
