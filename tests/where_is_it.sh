#!/bin/sh
# where_is_it.sh — docs/architecture.md's "Where is it" table is true: every
# file it names exists, and the line count beside it is within 15% (at least
# 15 lines) of the file's `wc -l`. The slack lets small edits pass; a move, a
# split or a file that doubles fails here until the table says so.
#
#   sh tests/where_is_it.sh [repository root]
set -eu
root=${1:-.}
doc="$root/docs/architecture.md"
[ -f "$doc" ] || { echo "where_is_it: $doc not found"; exit 1; }
rows=$(sed -n '/<!-- where-is-it: begin -->/,/<!-- where-is-it: end -->/p' "$doc")
[ -n "$rows" ] || { echo "where_is_it: no table between the where-is-it markers in $doc"; exit 1; }
pairs=$(printf '%s\n' "$rows" | grep -o '`[^`]*` ([0-9]*)' | sed 's/^`\([^`]*\)` (\([0-9]*\))$/\1 \2/')
[ -n "$pairs" ] || { echo "where_is_it: the table names no files"; exit 1; }
bad=0 n=0
while read -r file said; do
    n=$((n + 1))
    if [ ! -f "$root/$file" ]; then
        echo "where_is_it: $file is in the table but not in the tree; fix docs/architecture.md"
        bad=1
        continue
    fi
    is=$(wc -l < "$root/$file")
    slack=$((said * 15 / 100))
    [ "$slack" -lt 15 ] && slack=15
    diff=$((is - said))
    [ "$diff" -lt 0 ] && diff=$((-diff))
    if [ "$diff" -gt "$slack" ]; then
        echo "where_is_it: $file has $is lines, the table says $said; update docs/architecture.md"
        bad=1
    fi
done <<END
$pairs
END
[ "$bad" -eq 0 ] && echo "where_is_it: $n files, every one where the table says, counts within 15%"
exit "$bad"
