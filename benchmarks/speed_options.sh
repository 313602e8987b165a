#!/usr/bin/env bash
# The device measurements that decide the builtin's searched speed options (issue 30): each option's
# draft re-timed in alternation against the default draft (benchmarks/probes/rows_speed.py --set), and
# the in-place cat against the code before it (BASE_TREE: a checkout's packages, made on the CPU with
# `python benchmarks/probes/rows_speed.py --prepare-baseline 2447a17 --baseline-tree BASE_TREE`).
# Every probe writes its file as each task ends and skips the tasks its file holds, so the same command
# on a fresh machine goes on where the last one stopped; STOP_AFTER (seconds, default 480) bounds each.
#   usage: bash benchmarks/speed_options.sh KERNELBENCH_DIR OUT_DIR [BASE_TREE]
set -u
kb=${1:?usage: speed_options.sh KERNELBENCH_DIR OUT_DIR [BASE_TREE]}
out=${2:?usage: speed_options.sh KERNELBENCH_DIR OUT_DIR [BASE_TREE]}
base=${3:-}
stop=${STOP_AFTER:-480}
mkdir -p "$out"
kb=$(cd "$kb" && pwd)
out=$(cd "$out" && pwd)
[ -z "$base" ] || base=$(cd "$base" && pwd)
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --find-links .device-wheels sqlite-utils typer rich einops >"$out/pip.log" 2>&1
export PYTHONPATH=$PWD

probe() {  # NAME ARGS...: one probe, its log beside its file
    name=$1
    shift
    python3 benchmarks/probes/rows_speed.py "$kb" --no-compile --stop-after "$stop" --out "$out/$name.json" "$@" \
        2>>"$out/$name.log"
    echo "$name exit $?" >>"$out/status.txt"
}

# level1's convolutions: each K loop against the default draft's (nhwc or flat by the geometry, see
# _config._channels_last_gather): flat, nhwc, then the tap-major loop over the input as laid out
conv="50 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 86 87"
# shellcheck disable=SC2086
probe conv-flat --tasks $conv --set gather=flat
# shellcheck disable=SC2086
probe conv-nhwc --tasks $conv --set gather=nhwc
# shellcheck disable=SC2086
probe conv-taps --tasks $conv --set gather=taps
# depthwise: the element-per-lane kernel against the tiled default (tile2d, the default since 248ab9d:
# benchmarks/results/conv-depthwise-tile2d-level1-h100-9d52f4a.json)
probe depthwise-element --tasks 82 83 84 85 --set tile2d=false
# level1's 3-channel convolutions (IEEE fp32 products, as cuDNN's): 3xTF32 in smaller register footprints
# (at the default tile it took 1.07-1.48x the IEEE draft's time, 255 registers and 50 spills on 50's:
# benchmarks/results/conv-few-channels-level1-h100-7a46a3e.json), and the one tile change that was faster on 50
few="50 54 59 60 66"
# shellcheck disable=SC2086
probe conv-3xtf32-warps8 --tasks $few --set precision=3xtf32 --set num_warps=8
# shellcheck disable=SC2086
probe conv-3xtf32-bm64 --tasks $few --set precision=3xtf32 --set block_m=64
# shellcheck disable=SC2086
probe conv-stages2 --tasks $few --set num_stages=2
probe inner-grid-level1 --tasks 33 --set inner_grid=true
# bf16: 33_BatchNorm's pointwise kernel moved 2.0 TB/s in the bf16 level1 run at 9d52f4a (0.67x of torch.compile)
# where its fp32 draft moves 3.0 TB/s: the per-element channel division weighs more at half the bytes
probe inner-grid-level1-bf16 --precision bf16 --tasks 33 --set inner_grid=true
probe inner-grid-level2 --level 2 --rules kernelbench --tasks 1 2 4 5 16 21 31 32 54 67 82 87 93 --set inner_grid=true
if [ -n "$base" ]; then
    probe cat-in-place-level3 --level 3 --rules kernelbench --tasks 6 7 17 18 28 45 --baseline-tree "$base"
    probe cat-in-place-level1 --tasks 92 --baseline-tree "$base"
fi
cat "$out/status.txt"
