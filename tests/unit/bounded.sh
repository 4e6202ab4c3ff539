#!/bin/sh
# The unit and simulation tests' LOG_COMPILER: tests/unit/bounded.sh PROGRAM [ARGS...] runs PROGRAM with a bound of
# NGXAT_UNIT_TIMEOUT seconds (300: the slowest, a simulation under ASan, takes about 20), so that a test that hangs
# fails with a line that says so instead of holding make check until CI's own limit ends the run with no summary.
bound=${NGXAT_UNIT_TIMEOUT:-300}
# --foreground: the program stays in make's process group, so that a signal to the group (the run's deadline in
# tests/run-all.sh, a Ctrl-C) reaches it too.
timeout --foreground -k 10 "$bound" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "FAIL: $1 ran past its bound of $bound s (tests/unit/bounded.sh)"
fi
exit "$rc"
