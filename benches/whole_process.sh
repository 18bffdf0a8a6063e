#!/usr/bin/env bash
# Whole-process timings of `tenon solve FILE` (issue 16): what a user feels, from
# starting the command to its printed report. Generates the scale cases the way users
# lay assemblies out (crates/tenon/tests/common/generate.rs, `scale`), then runs each
# RUNS times and prints the median wall time, the peak memory and where the time went
# (TENON_TIMINGS=1: read, equations, compile, solve, report).
#
#   benches/whole_process.sh            # 1,000 and 10,000 parts, every layout
#   SIZES="100000" LAYOUTS="straight_chain" benches/whole_process.sh
#
# Needs the Rust toolchain and GNU time (/usr/bin/time); uses hyperfine for the wall
# times when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-5}"
SIZES="${SIZES:-1000 10000}"
LAYOUTS="${LAYOUTS:-straight_chain far_chain straight_ladder far_rssr mixed}"
source benches/scale-inputs.sh

printf '%-16s %8s %10s %10s  %s\n' layout parts "median s" "peak MB" "phases (last run)"
for n in $SIZES; do
  for layout in $LAYOUTS; do
    file=$(scale_input "$layout" "$n")
    times=()
    for _ in $(seq "$RUNS"); do
      s=$( { /usr/bin/time -f '%e %M' "$tenon" solve "$file" > /dev/null; } 2>&1 | tail -1)
      times+=("$s")
    done
    median=$(printf '%s\n' "${times[@]}" | awk '{print $1}' | median)
    peak=$(printf '%s\n' "${times[@]}" | awk '{if ($2 > m) m = $2} END {printf "%.0f", m / 1024}')
    phases=$(TENON_TIMINGS=1 "$tenon" solve "$file" 2>&1 > /dev/null | sed -n 's/^timings: //p')
    printf '%-16s %8s %10s %10s  %s\n' "$layout" "$n" "$median" "$peak" "$phases"
  done
done
if command -v hyperfine > /dev/null; then
  for n in $SIZES; do
    for layout in $LAYOUTS; do
      hyperfine -N --runs "$RUNS" --style basic "$tenon solve $out/$layout-$n.json"
    done
  done
fi
