#!/usr/bin/env bash
# The H200 runs recorded in benchmarks/results/: the builtin policy over level1
# and level2 with eager and torch.compile baselines, and the executor's timing
# spread. Meant for a machine with torch and triton but none of our other
# dependencies: the wheels in .device-wheels/ (sqlite-utils and friends, made
# with `pip download`) are installed first. Two GPUs run two shards at once;
# with one GPU the shards run one after the other.
#   usage: bash benchmarks/h200_run.sh OUT_DIR
set -u
out=${1:?usage: h200_run.sh OUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --find-links .device-wheels sqlite-utils >"$out/pip.log" 2>&1
export PYTHONPATH=$PWD
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1

bench() {  # GPU SUITE NAME
    CUDA_VISIBLE_DEVICES=$1 python3 -m evokernel.cli bench "$2" --policy builtin --budget 2 --json \
        --out "$out/$3.json" >"$out/$3.stdout" 2>"$out/$3.log"
    echo "$3 exit $?" >>"$out/status.txt"
}

if [ "$gpus" -ge 2 ]; then
    bench 0 level1 level1 &
    (bench 1 level2 level2
     CUDA_VISIBLE_DEVICES=1 python3 benchmarks/executor_bench.py --parts spread --out "$out/executor-spread.json" \
        >"$out/spread.stdout" 2>"$out/spread.log"; echo "spread exit $?" >>"$out/status.txt") &
    wait
else
    bench 0 level2 level2
    CUDA_VISIBLE_DEVICES=0 python3 benchmarks/executor_bench.py --parts spread --out "$out/executor-spread.json" \
        >"$out/spread.stdout" 2>"$out/spread.log"; echo "spread exit $?" >>"$out/status.txt"
    bench 0 level1 level1
fi
cat "$out/status.txt"
tail -c 600 "$out/spread.stdout"
for s in level1 level2; do
    python3 -c "import json,sys; d=json.load(open('$out/$s.json')); m=d['metrics']; print('$s', {k: m.get(k) for k in ('tasks','correct_rate','fast_eager','fast_compile','geomean_speedup_eager','geomean_speedup_compile')})" 2>&1 | tail -1
done
