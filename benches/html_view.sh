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
target="${CARGO_TARGET_DIR:-target}"
out="${OUT:-$target/whole-process}"
mkdir -p "$out"

cargo build --release -q -p tenon-cli -p tenon --example scale
(cd tools/browser && [ -d node_modules ] || npm ci --no-audit --no-fund --silent)
tenon="$target/release/tenon"
scale="$target/release/examples/scale"

count() {
  case "$1" in
    straight_ladder|far_rssr) echo $(( $2 / 3 )) ;;
    *) echo "$2" ;;
  esac
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-16s %6s %10s %12s %10s %10s %12s\n' layout parts "check s" "check+html s" "page ms" "page MB" "chromium ms"
for n in $SIZES; do
  for layout in $LAYOUTS; do
    file="$out/$layout-$n.json"
    page="$out/$layout-$n.html"
    [ -s "$file" ] || "$scale" "$layout" "$(count "$layout" "$n")" "$file" > /dev/null
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
