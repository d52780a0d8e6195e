#!/usr/bin/env bash
# `make fleet`: write a simulated fleet to a file (skewlens simulate
# --subtasks, metrics for every subtask, key samples for ~5 % of the
# tasks, a few incidents with their ground truth) and run `skewlens
# analyze` on it, printing the figures: lines/s, findings, maximum RSS,
# and `wc -l` on the same file in the same run as the baseline. Everything
# is written under .state/fleet (a 100k-subtask minute is about 3.5 GB).
#
#   scripts/fleet.sh BIN SUBTASKS DURATION SEED
set -euo pipefail
bin=${1:-bin/skewlens}
subtasks=${2:-100000}
duration=${3:-1m}
seed=${4:-1}
dir=.state/fleet
mkdir -p "$dir"
data=$dir/fleet.log

# Seconds since the epoch, with nanoseconds, and a difference of two.
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

echo "== simulate --subtasks $subtasks --duration $duration --seed $seed"
t=$(now)
"$bin" simulate --subtasks "$subtasks" --duration "$duration" --seed "$seed" -o "$data" --truth "$dir/truth.jsonl"
echo "   written in $(since "$t") s: $(du -h "$data" | cut -f1), ground truth in $dir/truth.jsonl"

echo "== wc -l (the baseline: reading the file and counting its lines)"
t=$(now)
lines=$(wc -l < "$data")
wc_s=$(since "$t")
echo "   $lines lines in $wc_s s"

echo "== analyze"
rss=""
t=$(now)
if [ -x /usr/bin/time ]; then
  /usr/bin/time -v -o "$dir/time.txt" "$bin" analyze -i "$data" > "$dir/findings.jsonl" 2> "$dir/analyze.err"
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f MB", $2 / 1024 }' "$dir/time.txt")
else
  "$bin" analyze -i "$data" > "$dir/findings.jsonl" 2> "$dir/analyze.err"
fi
an_s=$(since "$t")
sed 's/^skewlens analyze: /   /' "$dir/analyze.err"
awk -v n="$lines" -v a="$an_s" -v w="$wc_s" -v rss="$rss" 'BEGIN {
  printf "   %.2f M lines/s (%.1f s); wc -l %.1f M lines/s: analyze at 1/%.1f of wc -l", n / a / 1e6, a, n / w / 1e6, a / w
  if (rss != "") printf "; maximum RSS %s", rss
  printf "\n"
}'
echo "   findings: $(wc -l < "$dir/findings.jsonl") in $dir/findings.jsonl"
