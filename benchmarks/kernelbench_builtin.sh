#!/usr/bin/env bash
# The builtin policy on a KernelBench checkout (never committed): level1 under
# the strict rules, level2 and level3 under the kernelbench rules (level3 also
# under strict, reported beside it), each task with a budget of 2 (a draft and
# one refinement), eager and torch.compile timed in the same process. Writes
# kernelbench-level{1,2,3}-CARD-builtin.json and
# kernelbench-level3-CARD-builtin-strict.json into OUT_DIR, CARD the GPU that ran them (h200, h100;
# gpu for another, cpu without one; copy them to
# benchmarks/results/), logs beside them, and prints the figures. With
# PRECISION=bf16 or fp16 the tasks run in that precision (bench --precision:
# models and floating inputs cast, baselines in it too) and every file name
# (results, memories, logs) ends in -bf16 / -fp16; fp32 keeps the names above.
#
#   usage: bash benchmarks/kernelbench_builtin.sh KERNELBENCH_DIR OUT_DIR [REPS]
#   environment: DETACH (a folder: run detached from a copy there, see below), PRECISION (fp32, the default; fp16; bf16), LEVELS (default "1 2"; "3" is level3 under kernelbench rules, "3s" under
#   strict), BUDGET (default 2), TIME_LIMIT (seconds per level and call: bench
#   --time-limit, so a call cut short still writes its results), BENCH_OPTS (more bench
#   options for every level, e.g. "--jobs 8 --timeout 120"), STOP_AFTER (seconds: the bench
#   of each level is sent SIGTERM after that long and writes its results so far, "complete":
#   false; --time-limit alone lets the steps in flight finish, up to one --timeout more, so a
#   leased call that ends first would lose the results file), WARM_PROCS (default 6: processes
#   filling torch.compile's caches)
#
# Restartable: each level's memory is OUT_DIR/levelN.db, so the same command
# after a kill or a time limit resumes the level where it stopped, and a level
# whose results file is complete is not run again. Every level is timed against eager and
# torch.compile. torch.compile's caches for level 1 are filled before it; on one GPU, those of
# levels 2 and 3 on the CPU cores while level 1 runs, or before them when level 1 is
# not run (benchmarks/warm_compile_cache.py, TORCHINDUCTOR_CACHE_DIR=OUT_DIR/inductor):
# the bench still compiles and times the baseline in its worker, from those
# caches. The warm-up runs each reference once on the GPU, a small
# load beside level 1's timing (see its log, warm.log).
#
# KERNELBENCH_DIR holds level1/, level2/ and level3/ (KernelBench's KernelBench/ folder).
# With two or more GPUs, level 1 then level3 strict run on one share of them while
# level 2 then level 3 run on the other; every GPU of a share evaluates its own part
# of the candidates, and all levels' compile caches are filled first. Most of the wall time
# is torch.compile's baseline compile per task (levels 2 and 3; level 1's goals are
# against eager); REPS (default 30) timed runs per candidate and baseline keep
# the timing part short.
set -u
kb=${1:?usage: kernelbench_builtin.sh KERNELBENCH_DIR OUT_DIR [REPS]}
out=${2:?usage: kernelbench_builtin.sh KERNELBENCH_DIR OUT_DIR [REPS]}
reps=${3:-30}
levels=${LEVELS:-1 2}
budget=${BUDGET:-2}
precision=${PRECISION:-fp32}
case "$precision" in
    # fp32: the task as written, no flag (runs read as before); fp16/bf16: both models and the inputs cast.
    # Every level is timed against eager and torch.compile, in the run's precision.
    fp32) suffix=""; precision_opt=() ;;
    fp16|bf16) suffix="-$precision"; precision_opt=(--precision "$precision") ;;
    *) echo "PRECISION must be fp32, fp16 or bf16, not $precision" >&2; exit 2 ;;
esac
mkdir -p "$out"
kb=$(cd "$kb" && pwd)
out=$(cd "$out" && pwd)
# DETACH=DIR, for a leased machine whose next call replaces the working tree (and ends what the call
# started): copy this checkout (with KERNELBENCH_DIR, when it lies outside it) to DIR/project, start the
# same command there in a session of its own (setsid: it outlives the call) and return at once; follow
# it in OUT_DIR/status.txt and the logs; stop it early with `pkill -TERM -f "evokernel[.]cli bench"` (the bench
# writes its results so far; SIGINT does nothing there: bash starts background jobs with SIGINT ignored).
# The copy is the run's project root: the workers' sandbox reads
# the task files there (it refuses a home folder's files outside the project). OUT_DIR must lie outside
# the working tree.
if [ -n "${DETACH:-}" ]; then
    # The same command again while the run it started is alive (a follow-up call on a leased machine) starts
    # nothing: two benches on one memory would race. After a restart (no such process) it resumes the run.
    if [ -s "$out/detached.pid" ] && kill -0 "$(cat "$out/detached.pid")" 2>/dev/null; then
        echo "kernelbench_builtin.sh: already running detached (pid $(cat "$out/detached.pid")); follow $out/status.txt"
        exit 0
    fi
    src=$(cd "$(dirname "$0")/.." && pwd)
    dir=$(mkdir -p "$DETACH" && cd "$DETACH" && pwd)
    rm -rf "$dir/project" && mkdir -p "$dir/project"
    if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # What a commit of this tree would hold (tracked files and untracked ones git does not ignore), and
        # the device's wheels: not .git, a virtual environment or build outputs, which can be gigabytes.
        (cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) \
            | (cd "$dir/project" && tar -xf -)
        if [ -d "$src/.device-wheels" ]; then cp -a "$src/.device-wheels" "$dir/project/"; fi
        # the copy has no .git: the commit it was made from goes where `git archive` would write it, so the
        # results still record their git_commit (evokernel/bench/_runner.py's _git_commit reads it first)
        if [ -f "$dir/project/evokernel/_archive_commit.txt" ]; then
            git -C "$src" rev-parse HEAD >"$dir/project/evokernel/_archive_commit.txt"
        fi
    else
        cp -a "$src/." "$dir/project/"  # no git here (a leased machine's copy of the tree): all of it
    fi
    case "$kb/" in
        "$src/"*) kb_copy="$dir/project/${kb#"$src"/}" ;;
        *) kb_copy="$dir/project/.kb-run" ;;
    esac
    if [ ! -d "$kb_copy" ]; then mkdir -p "$(dirname "$kb_copy")" && cp -a "$kb" "$kb_copy"; fi
    DETACH="" setsid nohup bash "$dir/project/benchmarks/kernelbench_builtin.sh" "$kb_copy" "$out" "$reps" \
        >"$out/detached.log" 2>&1 </dev/null &
    echo $! >"$out/detached.pid"
    echo "kernelbench_builtin.sh: running detached (pid $!) from $dir/project; follow $out/status.txt and $out/*.log"
    exit 0
fi
cd "$(dirname "$0")/.."
if [ -d .device-wheels ]; then
    python3 -m pip install -q --no-index --find-links .device-wheels sqlite-utils >"$out/pip.log" 2>&1
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export TORCHINDUCTOR_CACHE_DIR=$out/inductor
# the GPUs, and the card in the results' names (a run the lease put on an H100 is not called an H200 run)
read -r gpus card < <(python3 -c "import torch; n = torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'; \
print(torch.cuda.device_count(), next((c.lower() for c in ('H200', 'H100') if c in n), 'cpu' if n == 'cpu' else 'gpu'))")
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >>"$out/gpu.txt" 2>&1

bench() {  # KEY LEVEL RULES GPU_LIST [EXTRA OPTIONS]; KEY is how LEVELS names the run ("1", "3s")
    local start=$SECONDS key=$1 level=$2 rules=$3 gpu_list=$4 tag=""
    shift 4
    case " $levels " in *" $key "*) ;; *) return ;; esac
    if [ "$key" != "$level" ]; then tag="-$rules"; fi
    tag="$tag$suffix"
    local results="$out/kernelbench-level$level-$card-builtin$tag.json"
    if [ -s "$results" ] && python3 -c "import json, sys; sys.exit(not json.load(open(sys.argv[1])).get('complete', True))" "$results"; then
        echo "level$level$tag: $results is complete, not run again" >>"$out/status.txt"; return
    fi
    local gpu_opt=()
    if [ -n "$gpu_list" ]; then gpu_opt=(--gpus "$gpu_list"); fi
    if [ -n "${TIME_LIMIT:-}" ]; then gpu_opt+=(--time-limit "$TIME_LIMIT"); fi
    # shellcheck disable=SC2206  # BENCH_OPTS is a list of options: split on spaces
    gpu_opt+=(${BENCH_OPTS:-})
    local stop=()
    # timeout's SIGTERM: a detached run ignores SIGINT
    if [ -n "${STOP_AFTER:-}" ]; then stop=(timeout "$STOP_AFTER"); fi
    "${stop[@]}" python3 -m evokernel.cli bench "$kb/level$level" --policy builtin --budget "$budget" --rules "$rules" \
        --reps "$reps" --warmup 3 --memory "$out/level$level$tag.db" "${precision_opt[@]}" "${gpu_opt[@]}" "$@" \
        --json --out "$results" \
        >"$out/level$level$tag.stdout" 2>>"$out/level$level$tag.log"
    echo "level$level$tag ($rules) exit $? in $((SECONDS - start)) s" >>"$out/status.txt"
}

all=""
if [ "$gpus" -ge 1 ]; then all=$(seq -s, 0 $((gpus - 1))); fi  # none: the CPU (a dry run of this script)

# torch.compile's caches, filled before the benches (level 1's) or beside level 1 (levels 2 and 3).
warm() {
    local lv
    for lv in "$@"; do
        case " $levels " in *" $lv "*|*" ${lv}s "*) ;; *) continue ;; esac
        if [ "$gpus" -ge 1 ] && [ ! -s "$out/kernelbench-level$lv-$card-builtin$suffix.json" ]; then
            python3 benchmarks/warm_compile_cache.py "$kb/level$lv" --procs "${WARM_PROCS:-6}" --precision "$precision" \
                >>"$out/warm$suffix.log" 2>&1
        fi
    done
}
if [ "$gpus" -ge 2 ]; then
    n1=$((gpus * 3 / 8)); [ "$n1" -lt 1 ] && n1=1
    first=$(seq -s, 0 $((n1 - 1)))
    second=$(seq -s, "$n1" $((gpus - 1)))
    warm 1 2 3
    # level 1 then level3 strict on the first share, levels 2 and 3 on the second
    (bench 1 1 strict "$first"; bench 3s 3 strict "$first") &
    (bench 2 2 kernelbench "$second"; bench 3 3 kernelbench "$second") &
    wait
else
    warm 1  # level 1's own, before its timing
    case " $levels " in
        # level 1 hides the warm-up of levels 2 and 3; without it, warm first, so that the timing does not
        # share the GPU with it (on the H200 a task timed 30 s into such a run took 2.7x its time)
        *" 1 "*) warm 2 3 & ;;
        *) warm 2 3 ;;
    esac
    bench 1 1 strict "$all"
    wait
    bench 2 2 kernelbench "$all"
    bench 3 3 kernelbench "$all"
    bench 3s 3 strict "$all"
fi
cat "$out/status.txt"

python3 - "$out" "$suffix" "$card" <<'EOF'
import json, sys
from pathlib import Path

from evokernel.bench import below_half_line

out, suffix, card = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
for level, tag, goal in (("1", "", "strict: >= 97 correct, geomean over eager >= 1.0, over compile >= 1.1"),
                         ("2", "", "kernelbench: >= 99 correct, geomean >= 1.2 over eager, >= 1.0 over compile"),
                         ("3", "", "kernelbench: >= 45 correct, geomean >= 1.0 over compile"),
                         ("3", "-strict", "strict: reported beside kernelbench")):
    tag += suffix
    path = out / f"kernelbench-level{level}-{card}-builtin{tag}.json"
    if not path.exists():
        print(f"level{level}{tag}: no results file ({path.name})")
        continue
    data = json.loads(path.read_text())
    tasks = data.get("tasks") or []
    m = data.get("metrics") or {}

    def shown(value):
        return None if value is None else round(value, 3)

    # The bench's own figures: degenerate tasks (listed) stay out of the geometric means.
    print(f"level{level}{tag}: {m.get('correct')}/{m.get('tasks')} correct; geomean over eager "
          f"{shown(m.get('geomean_speedup_eager'))} ({m.get('n_speedup_eager')} tasks), over torch.compile "
          f"{shown(m.get('geomean_speedup_compile'))} ({m.get('n_speedup_compile')} tasks); degenerate, left out: "
          f"{', '.join(m.get('degenerate_tasks') or []) or 'none'}   [goal {goal}]")
    correct = [t for t in tasks if t.get("correct")]
    failed = {}
    for t in tasks:
        if not t.get("correct"):
            failed.setdefault(t.get("last_status") or (t.get("statuses") or ["none"])[-1], []).append(t.get("name"))
    for status, names in sorted(failed.items()):
        print(f"  {status}: {len(names)}: {', '.join(str(n) for n in names[:30])}")
    if m.get("compile_checked_tasks"):
        wrong = m.get("compile_wrong_tasks") or []
        print(f"  torch.compile's own output fails the same check on {len(wrong)} of {m['compile_checked_tasks']} "
              f"checked: {', '.join(wrong[:30]) or 'none'}")
        if m.get("geomean_speedup_compile_checked"):
            print(f"  geomean over torch.compile where its output passes the check: "
                  f"{m['geomean_speedup_compile_checked']:.2f}x over {m['n_speedup_compile_checked']} tasks")
    for b in m.get("below_half_of_compile") or []:  # issue 30's floor: each named, with its reason where known
        print("  " + below_half_line(b))
    spent = m.get("evaluation_seconds") or {}
    if spent.get("by_step"):
        print(f"  executor time {spent['total']:.0f} s, most in: "
              + ", ".join(f"{k} {v:.0f} s" for k, v in list(spent["by_step"].items())[:6]))
    slow = sorted((t for t in correct if t.get("speedup_eager")), key=lambda t: t["speedup_eager"])[:12]
    print("  slowest vs eager:", ", ".join(f"{t['name']} {t['speedup_eager']:.2f}x" for t in slow))
EOF
