#!/bin/sh
# tests/bench_pairs.sh SRC EXE — scripts/bench-pairs runs two builds in alternated pairs and
# prints each profile row, the step and the goal's fraction; bad arguments fail with exit 2.
# EXE is given as both builds: the ratios are noise here, only their form is checked.
set -u
src="$1"
exe="$2"
command -v python3 >/dev/null || { echo "python3 not found: nothing checked"; exit 77; }
out=$(python3 "$src/scripts/bench-pairs" "$exe" "$exe" --pairs 2 -- --model tiny --steps 2 --warmup 1 2>&1)
rc=$?
echo "$out"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
num='[0-9][0-9.]*'
for row in "matmul fwd" "matmul dinp" "matmul dW" "attention fwd" "gelu bwd" "adamw" "other" "step"; do
  printf '%s\n' "$out" | grep -Eq "^$row +$num +$num +$num \[$num-$num\]$" ||
    { echo "FAIL: no row '$row' with two medians and a ratio [range]"; fail=1; }
done
printf '%s\n' "$out" | grep -Eq "^  pair 2: step $num / $num ms \(OLD / NEW\)$" || { echo "FAIL: no pair 2 line"; fail=1; }
printf '%s\n' "$out" | grep -Eq "^the goal's fraction: OLD $num, NEW $num \(medians\); NEW/OLD per pair $num \[$num-$num\]$" ||
  { echo "FAIL: no fraction line"; fail=1; }
# Bad arguments: a clear message, exit 2, no bench run.
check_bad() {
  msg="$1"; shift
  o=$(python3 "$src/scripts/bench-pairs" "$@" 2>&1); r=$?
  [ $r -eq 2 ] && printf '%s\n' "$o" | grep -q "$msg" || { echo "FAIL: '$*' gave exit $r: $o"; fail=1; }
}
check_bad "give the two binaries" "$exe"
check_bad "is not an executable file" "$exe" /nonexistent/shardscope
check_bad "takes a whole number" "$exe" "$exe" --pairs 0
check_bad "is bench-pairs' own" "$exe" "$exe" -- --rounds 3
exit $fail
