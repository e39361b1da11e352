#!/bin/sh
# The int4 plug-in builds from the public headers only: every quoted #include in plugins/int4
# names include/coccl.h, include/coccl_codec.h or a file of plugins/int4 itself (no path, so
# nothing from src/ or elsewhere can come in through a relative name) (issue 16).
# Usage: check_public_only.sh <plugins/int4 folder>
dir=${1:?folder}
status=0
for f in "$dir"/*.h "$dir"/*.cuh "$dir"/*.cc "$dir"/*.cu; do
  [ -f "$f" ] || continue
  grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
    sed -E 's/^([0-9]+):.*"([^"]*)".*/\1 \2/' > /tmp/coccl_int4_includes.$$
  while read -r line h; do
    case "$h" in
      coccl.h | coccl_codec.h) ;;
      */* | *..*) echo "$f:$line: \"$h\" is not a public header or a file of $dir"; status=1 ;;
      *) [ -f "$dir/$h" ] || { echo "$f:$line: \"$h\" is not a public header or a file of $dir"; status=1; } ;;
    esac
  done < /tmp/coccl_int4_includes.$$
  rm -f /tmp/coccl_int4_includes.$$
done
if [ "$status" -ne 0 ]; then
  echo "plugins/int4 includes non-public headers"
  exit 1
fi
echo "plugins/int4: public headers only"
