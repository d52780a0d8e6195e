#!/usr/bin/env bash
# `make demo`: simulate each incident a Flink platform team gets paged for,
# replay it through `skewlens analyze`, and show what it finds: every
# incident, one line each (so the rotating hot key shows on one subtask,
# then on another). Needs only the binary; everything is written under
# .state/demo. (`make run` is the streaming system instead.)
set -euo pipefail
bin=${1:-bin/skewlens}
dir=.state/demo
mkdir -p "$dir"

bold=$(tput bold 2>/dev/null || true); off=$(tput sgr0 2>/dev/null || true)

for s in healthy hot_key rotating_hot_key slow_sink under_provisioned checkpoint_timeout; do
  printf '\n%s== %s%s\n' "$bold" "$s" "$off"
  # Six simulated minutes, starting two minutes before a 5-minute bucket
  # boundary so the rotating hot key moves on screen.
  "$bin" simulate "$s" --start 1593004380000 --duration 6m --samples-per-interval 2000 -o "$dir/$s.log"
  "$bin" analyze -i "$dir/$s.log" -o text > "$dir/$s.txt" 2> "$dir/$s.err"
  if [ ! -s "$dir/$s.txt" ]; then
    echo "   no findings: the job is healthy"
  else
    # One line per incident: its start, state, cause, where, duration and
    # peaks; all of them, as a hot spot that moves opens a new incident.
    cat "$dir/$s.txt"
  fi
  tail -n 1 "$dir/$s.err" | sed 's/^skewlens analyze: /   /'
done

cat <<MSG

${bold}Try it yourself${off}
  $bin analyze -i $dir/slow_sink.log -o text            # incidents for people
  $bin analyze -i $dir/slow_sink.log -o text --per-window  # every finding, per window
  $bin analyze -i $dir/hot_key.log --kind salting_plan  # JSON salting plans
  $bin keygroup -p 8 'u42' 'u42#0' 'u42#3'                 # Flink's routing, bit-exact
  $bin help
MSG
