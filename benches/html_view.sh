#!/usr/bin/env bash
# The HTML view of large assemblies (issue 17): how long `tenon check FILE --html` takes
# beside `tenon check FILE` (the page's own cost is the difference, and TENON_TIMINGS=1's
# `report` phase), how big the page is, and how long headless Chromium takes to open and
# draw it. Generates the scale cases as benches/whole_process.sh does.
#
#   benches/html_view.sh                       # the 10,000-part ladder and chain
#   SIZES="1000" LAYOUTS="mixed" benches/html_view.sh
#
# Needs the Rust toolchain, GNU time, Chromium and tools/browser's playwright-core
# (tools/test-all installs both).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-3}"
SIZES="${SIZES:-10000}"
LAYOUTS="${LAYOUTS:-straight_ladder straight_chain}"
source benches/scale-inputs.sh
(cd tools/browser && [ -d node_modules ] || npm ci --no-audit --no-fund --silent)

printf '%-16s %6s %10s %12s %10s %10s %12s\n' layout parts "check s" "check+html s" "page ms" "page MB" "chromium ms"
for n in $SIZES; do
  for layout in $LAYOUTS; do
    file=$(scale_input "$layout" "$n")
    page="${file%.json}.html"
    plain=(); html=(); render=()
    for _ in $(seq "$RUNS"); do
      plain+=("$( { /usr/bin/time -f '%e' "$tenon" check "$file" > /dev/null; } 2>&1 | tail -1)")
      html+=("$( { /usr/bin/time -f '%e' "$tenon" check "$file" --html "$page" > /dev/null; } 2>&1 | tail -1)")
      render+=("$(TENON_TIMINGS=1 "$tenon" check "$file" --html "$page" 2>&1 > /dev/null | sed -n 's/.*report \([0-9.]*\) ms.*/\1/p')")
    done
    opened=$(node tools/browser/open-time.mjs "$page")
    printf '%-16s %6s %10s %12s %10s %10.1f %12s\n' "$layout" "$n" \
      "$(printf '%s\n' "${plain[@]}" | median)" "$(printf '%s\n' "${html[@]}" | median)" \
      "$(printf '%s\n' "${render[@]}" | median)" "$(echo "$(stat -c %s "$page") / 1048576" | bc -l)" "$opened"
  done
done
