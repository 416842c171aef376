#!/bin/sh
# mpi_launcher_gone.sh — `kill -9 mpirun` in the middle of a run that saves
# checkpoints: its rank processes, reparented, must stop by themselves (at their
# next wait, src/comm/mpi/mpi_watch.cpp, check_launcher), not train on unseen, and
# the checkpoint `latest` names must be complete. --quiet: nothing is printed
# per step, so no write to the dead launcher's pipe (SIGPIPE) ends them instead.
#
#   mpi_launcher_gone.sh MPIEXEC SHARDSCOPE WORKDIR
set -u
mpiexec=$1 shardscope=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
marker="ckgone-$$"  # in every rank's command line, to find them
"$mpiexec" --allow-run-as-root --oversubscribe -np 2 "$shardscope" train --backend mpi --model tiny --mbs 2 \
    --seq 32 --zero 3 --steps 100000 --save-every 20 --checkpoint-dir "$marker" --quiet > out.log 2>&1 &
launcher=$!
i=0
while [ ! -f "$marker/latest" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done  # a first checkpoint
if [ ! -f "$marker/latest" ]; then echo "FAIL: no checkpoint after 60 s"; cat out.log; kill -9 $launcher; exit 1; fi
kill -9 $launcher
at_kill=$(cat "$marker/latest")
i=0
while pgrep -f "$marker" > /dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
if pgrep -f "$marker" > /dev/null; then
    echo "FAIL: rank processes still running 20 s after mpirun was killed:"
    pgrep -af "$marker"
    pkill -9 -f "$marker"
    exit 1
fi
echo "the ranks stopped $((i / 10)).$((i % 10)) s after mpirun was killed"
# Orphans that train on also save on: `latest` moved hundreds of steps in the second
# before Open MPI's own teardown reached them. One save in flight at the kill may finish.
after=$(cat "$marker/latest")
step_of() { echo "$1" | sed 's/^step-0*//; s/^$/0/'; }
echo "latest: $at_kill when mpirun was killed, $after after"
if [ "$(step_of "$after")" -gt $(( $(step_of "$at_kill") + 20 )) ]; then
    echo "FAIL: the ranks trained and saved on after mpirun was killed"
    exit 1
fi
if ! "$shardscope" checkpoint show "$marker" > show.log 2>&1; then
    echo "FAIL: the checkpoint 'latest' names is not complete:"; cat show.log; exit 1
fi
head -2 show.log
exit 0
