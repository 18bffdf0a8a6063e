#!/usr/bin/env bash
# OndselSolver (FreeCAD's assembly solver) timed from an .asmt file to runPreDrag, its
# static solve, in-process, for comparison with Tenon's read + build + solve
# (crates/tenon/examples/corpus_loop.rs, criterion's corpus_to_answer).
#
#   benches/ondsel/run.sh ONDSEL_SOURCE_DIR [N] FILE.asmt...
#
# ONDSEL_SOURCE_DIR holds OndselSolver's sources (a checkout of FreeCAD/OndselSolver:
# its OndselSolver/ folder is compiled here with g++ -O2, two files at a time, into
# target/ondsel). Prints per file: name, ok/threw, min and median microseconds over N
# runs. OndselSolver logs to standard output with a flush per line; that goes to
# /dev/null here (its cost stays in the timing).
set -euo pipefail
cd "$(dirname "$0")/../.."
src="$1"; shift
n="${1:-10}"; shift
out=target/ondsel
mkdir -p "$out/obj"
ls "$src"/OndselSolver/*.cpp | xargs -P2 -I{} sh -c \
  'o='"$out"'/obj/$(basename {} .cpp).o; [ -e "$o" ] || g++ -O2 -std=c++20 -w -c {} -o "$o"'
g++ -O2 -std=c++20 -w -I"$src" -c benches/ondsel/bench_predrag.cpp -o "$out/bench_predrag.o"
g++ -O2 "$out"/obj/*.o "$out/bench_predrag.o" -o "$out/bench_predrag"
for f in "$@"; do
  # One process per file: some files stop OndselSolver on an assertion.
  timeout 120 "$out/bench_predrag" "$n" "$f" 2>&1 > /dev/null | grep -a "	" \
    || printf '%s\tcrashed-or-timeout\n' "$f"
done
