#!/usr/bin/env bash
# A/B timing of one environment switch on the same binary, alternating the settings so that
# a noisy machine's drift hits both alike. Every run of the command must print a time as
# "<number> ms" (examples/profile_step and examples/conv_time do); prints each setting's
# times, sorted, and their median.
#
# Usage: bash scripts/bench/ab_env.sh VAR "VALUE_A VALUE_B" ROUNDS COMMAND [ARGS...]
# e.g.   bash scripts/bench/ab_env.sh TINYTORCH_DIRECT_CONV "0 1" 3 \
#            target/release/examples/profile_step resnet20 20
set -euo pipefail
var=$1 values=$2 rounds=$3
shift 3
declare -A times
for _ in $(seq "$rounds"); do
    for v in $values; do
        t=$(env "$var=$v" "$@" | grep -oE '[0-9.]+ ms' | head -1 | cut -d' ' -f1)
        times[$v]+="$t "
    done
done
for v in $values; do
    sorted=$(tr ' ' '\n' <<<"${times[$v]}" | grep . | sort -n)
    median=$(awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}' <<<"$sorted")
    echo "$var=$v: $(tr '\n' ' ' <<<"$sorted")median $median"
done
