#!/bin/sh
# The test driver's LOG_COMPILER: runs one test program and ends its log
# with the seconds it took, which tests/summary.sh ranks so that a slow CI
# run shows where its time went.
start=$(date +%s)
"$@"
rc=$?
echo "elapsed: $(($(date +%s) - start)) s"
exit $rc
