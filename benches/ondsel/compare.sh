#!/usr/bin/env bash
# Tenon against OndselSolver on the corpus, file by file, the two timed one right after
# the other (a shared VM's speed drifts by a fifth within an hour: figures taken at
# different times do not compare).
#
#   benches/ondsel/compare.sh ONDSEL_SOURCE_DIR [ROUNDS] [FILE.asmt...]
#
# Files default to ../shared/external/ondsel-asmt/*.asmt. Per round and file:
# OndselSolver's fastest of 20 runs from the file to runPreDrag (benches/ondsel/run.sh,
# which builds it once into target/ondsel), then Tenon's mean of 500 runs from the text
# to the answer (the corpus_loop example, system allocator, as OndselSolver's). Prints
# each file's ratio of the two sides' fastest over the rounds and the median over the files both solve
# (OndselSolver "ok", Tenon converged in every run). FEATURES=mimalloc times Tenon with
# the allocator of the command, the C library and the Python module; RAW=FILE keeps
# every round's figures; BASELINE=PATH also times another corpus_loop binary (an older
# Tenon's, built with the same allocator) right after, for before/after columns.
set -euo pipefail
cd "$(dirname "$0")/../.."
src="$1"; shift
rounds="${1:-3}"; shift || true
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(../shared/external/ondsel-asmt/*.asmt); fi
cargo build -q --release -p tenon --example corpus_loop ${FEATURES:+--features "$FEATURES"}
benches/ondsel/run.sh "$src" 1 "${files[0]}" > /dev/null
tmp=$(mktemp)
for r in $(seq "$rounds"); do
  for f in "${files[@]}"; do
    o=$(timeout 120 target/ondsel/bench_predrag 20 "$f" 2>&1 > /dev/null | grep -a "	" || true)
    t=$(target/release/examples/corpus_loop "$f" 500 2>&1 | tail -1)
    b=""
    if [ -n "${BASELINE:-}" ]; then b=$("$BASELINE" "$f" 500 2>&1 | tail -1); fi
    printf '%s\t%s\t%s\t%s\n' "$(basename "$f")" "$(echo "$o" | cut -f2,3)" "$t" "$b" >> "$tmp"
  done
done
python3 - "$tmp" <<'PY'
import re, statistics, sys
def us(text):
    m = re.search(r"(\d+) runs, (\d+) converged, ([\d.]+) us each", text)
    return float(m.group(3)) if m and m.group(1) == m.group(2) else None
best = {}
for line in open(sys.argv[1]):
    name, status, ond, tenon, base = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
    t, b = us(tenon), us(base)
    if status != "ok" or t is None:
        best.setdefault(name, None)
        continue
    # Each side's fastest over the rounds (a round's ratio alone would favour rounds
    # where OndselSolver happened to run slow).
    old = best.get(name) or (float("inf"), float("inf"), float("inf"))
    best[name] = (min(old[0], float(ond)), min(old[1], t), min(old[2], b if b else float("inf")))
both = {k: v for k, v in best.items() if v}
baseline = all(v[2] != float("inf") for v in both.values()) and both
for k in sorted(both, key=lambda k: both[k][0] / both[k][1]):
    o, t, b = both[k]
    if baseline:
        print(f"| `{k}` | {o:.0f} | {b:.1f} | {t:.1f} | {o / b:.1f}x | {o / t:.1f}x |")
    else:
        print(f"| `{k}` | {o:.0f} | {t:.1f} | {o / t:.1f}x |")
line = f"{len(both)} files both solve; median {statistics.median(v[0] / v[1] for v in both.values()):.1f}x"
if baseline:
    line += f" (baseline {statistics.median(v[0] / v[2] for v in both.values()):.1f}x; time against the baseline, median per file {statistics.median(v[1] / v[2] for v in both.values()):.3f})"
print(line)
PY
if [ -n "${RAW:-}" ]; then cp "$tmp" "$RAW"; fi
rm -f "$tmp"
