#!/bin/sh
# mpi_failure.sh — runs a job that must fail, and checks that it did: a non-zero
# exit, within MAX_SECONDS (nothing hangs), and every EXPECTED text in its output.
#
#   mpi_failure.sh MPIEXEC NP PROGRAM MODE MAX_SECONDS EXPECTED...
#
# MODE is the program's arguments, split at spaces ("skip", or "train --backend mpi ...").
set -u
mpiexec=$1 np=$2 program=$3 mode=$4 max_seconds=$5
shift 5

start=$(date +%s.%N)
out=$(timeout $((max_seconds + 30)) "$mpiexec" --allow-run-as-root --oversubscribe -np "$np" "$program" $mode 2>&1)
rc=$?
elapsed=$(echo "$start $(date +%s.%N)" | awk '{printf "%.1f", $2 - $1}')

echo "$out"
echo "---- $mode: exit code $rc after $elapsed s"
failed=0
if [ "$rc" -eq 0 ]; then echo "FAIL: the job exited 0, but it should have failed"; failed=1; fi
if [ "$rc" -eq 124 ]; then echo "FAIL: the job hung (killed after $((max_seconds + 30)) s)"; failed=1; fi
if awk -v e="$elapsed" -v m="$max_seconds" 'BEGIN { exit !(e > m) }'; then
    echo "FAIL: it took $elapsed s, more than $max_seconds s"
    failed=1
fi
for expected in "$@"; do
    if ! printf '%s\n' "$out" | grep -qF -- "$expected"; then
        echo "FAIL: the output does not say: $expected"
        failed=1
    fi
done
exit $failed
