#!/bin/sh
# same_bits_builds.sh A B — one training step's gradients from two builds of
# shardscope, byte for byte, over layouts and shapes.
#
# ./scripts/test --portable runs it with A = the native build and B = the other
# kind of machine's code: on an AVX2-only machine, the AVX-512 machine's
# 16-float register tiles (SHARDSCOPE_TILE_FLOATS=16); on an AVX-512 machine,
# the x86-64-v3 build (AVX2 + FMA, 8-float tiles). Every element of a tile
# product is the same chain of FMAs at either width (kernels/cpu/tile.h,
# gemm.cpp), and the kernels' sums keep their lanes and FMAs whatever the
# instructions (kernels/cpu/simd.h), so the two must agree to the bit. The
# shapes include widths that are whole tiles at 16 columns and not at 32 (C =
# 80 or 96: head size 16, panels of 80 columns; TP 2's 144 columns of qkv),
# a width that leaves the kernels' 16-lane sums a tail (C = 72: four groups
# of 16, then 8), and rows that are not whole 6-row tiles (T = 100), so both
# the straight and the staged paths run.
# Prints one line per run; exits 1 if any differ or fail.
A=$1
B=$2
if [ ! -x "$A" ] || [ ! -x "$B" ]; then
  echo "usage: same_bits_builds.sh SHARDSCOPE_A SHARDSCOPE_B (both executables)"
  exit 2
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
odd="--dim 80 --heads 5 --vocab 250 --layers 2"
rc=0
i=0
while read -r args; do
  i=$((i + 1))
  run="train --model small --steps 1 --mbs 3 --quiet $args"
  if ! $A $run --dump-grads "$dir/a$i.safetensors" >"$dir/a$i.log" 2>&1; then
    echo "A failed: $run"; tail -3 "$dir/a$i.log"; rc=1; continue
  fi
  if ! $B $run --dump-grads "$dir/b$i.safetensors" >"$dir/b$i.log" 2>&1; then
    echo "B failed: $run"; tail -3 "$dir/b$i.log"; rc=1; continue
  fi
  if cmp -s "$dir/a$i.safetensors" "$dir/b$i.safetensors"; then
    echo "same bits: $args"
  else
    echo "DIFFER:    $args"; rc=1
  fi
done <<EOF
--ranks 1
--ranks 4 --zero 3
--ranks 2 --tp 2 --sequence-parallel
--ranks 2 --sp 2 --sp-mode ulysses
--ranks 4 --sp 2 --sp-mode ring --pp 2
--ranks 4 --sp 4 --sp-mode ring --ring-split contiguous
$odd
$odd --seq 100
$odd --seq 100 --ranks 2 --sp 2 --sp-mode ring
--dim 96 --heads 6 --vocab 250 --layers 2 --seq 100 --ranks 2 --sp 2 --sp-mode ulysses
--dim 96 --heads 6 --vocab 250 --layers 2 --ranks 2 --tp 2
--dim 96 --heads 6 --vocab 250 --layers 2 --ranks 2 --tp 2 --vocab-divisible-by 1
--dim 72 --heads 6 --vocab 250 --layers 2 --seq 100
EOF
exit $rc
