#!/usr/bin/env bash
# expect_fail.sh STATUS PATTERN COMMAND...: passes when COMMAND exits with STATUS and its output
# (stdout and stderr) holds PATTERN (grep -E), e.g. 1 'FAIL bytes_written' for a codec that
# writes past its payload. Prints the output and what was wrong otherwise.
set -u
want=$1 pattern=$2
shift 2
out=$("$@" 2>&1)
rc=$?
echo "$out"
if [ "$rc" -ne "$want" ]; then
  echo "expect_fail.sh: exit status $rc, wanted $want: $*" >&2
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
  echo "expect_fail.sh: output lacks '$pattern': $*" >&2
  exit 1
fi
echo "expect_fail.sh: exit $rc and '$pattern' as expected"
