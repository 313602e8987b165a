"""benchmarks/probes/kernel_profile.py without a GPU: Nsight Compute's raw CSV parsed into per-kernel
records and totals, and the probe's run driven through a stand-in ncu (it writes the CSV a real one
would and prints what the child prints): both sides recorded per task, written at once, a rerun
skipping what the file holds, a failing side kept as data, a missing ncu a one-line error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "benchmarks" / "probes" / "kernel_profile.py"
sys.path.insert(0, str(PROBE.parent))

import kernel_profile  # noqa: E402

CSV = '''==PROF== Connected to process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","gpu__time_duration.sum","dram__bytes_read.sum","dram__bytes_write.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active","smsp__inst_executed.sum","launch__registers_per_thread","launch__grid_size","launch__block_size"
"","","","","","","","nsecond","byte","byte","%","%","%","inst","register/thread","","",""
"0","4242","python3","127.0.0.1","_rows_multipass_kernel_s1","1","7","2,300,000","2,123,366,400","1,061,683,200","45.2","61.7","88.1","1,234,567","40","1024","256"
"1","4242","python3","127.0.0.1","void cudnn::conv(float*)","1","7","1,700,000","500,000,000","1,061,683,200","71.0","80.5","50.0","7,654,321","128","4096","128"
'''


def test_raw_csv_becomes_kernel_records_and_totals():
    kernels = kernel_profile.parse_ncu_csv(CSV)
    assert [k["name"] for k in kernels] == ["_rows_multipass_kernel_s1", "void cudnn::conv(float*)"]
    rows = kernels[0]
    assert rows["duration_ns"] == 2_300_000 and rows["dram_read_bytes"] == 2_123_366_400
    assert rows["dram_pct_of_peak"] == 45.2 and rows["registers"] == 40 and rows["grid"] == 1024
    t = kernel_profile.totals(kernels)
    assert t["kernels"] == 2 and abs(t["duration_ms"] - 4.0) < 1e-9
    assert t["dram_bytes"] == 2_123_366_400 + 2 * 1_061_683_200 + 500_000_000
    assert abs(t["dram_tb_per_s"] - t["dram_bytes"] / 4.0e-3 / 1e12) < 1e-9
    assert kernel_profile.parse_ncu_csv("==PROF== no kernels profiled\n") == []


FAKE_NCU = '''#!{python}
import sys
from pathlib import Path
args = sys.argv[1:]
log = Path(args[args.index("--log-file") + 1])
side = args[args.index("--log-file") + 5]  # the log, python, child.py, ROOT, then the side
Path(sys.argv[0]).with_name("calls.txt").open("a").write(side + "\\n")
if side == "compile":
    print("Traceback: no GPU here", file=sys.stderr)
    sys.exit(1)
log.write_text({csv!r})
print("profiled")
'''


def _task_dir(tmp_path: Path) -> Path:
    level = tmp_path / "kb" / "level2"
    level.mkdir(parents=True)
    for name in ("21_Conv2d_GroupNorm", "85_Conv2d_Clamp"):
        (level / f"{name}.py").write_text("# a task file; the stand-in ncu never runs it\n")
    return tmp_path / "kb"


def test_run_records_both_sides_and_resumes(tmp_path):
    kb = _task_dir(tmp_path)
    ncu = tmp_path / "bin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text(FAKE_NCU.format(python=sys.executable, csv=CSV))
    ncu.chmod(0o755)
    out = tmp_path / "profile.json"
    cmd = [sys.executable, str(PROBE), str(kb), "--level", "2", "--tasks", "21", "--ncu", str(ncu), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    task = record["tasks"]["21_Conv2d_GroupNorm"]
    assert task["ours"]["status"] == "ok" and task["ours"]["totals"]["kernels"] == 2
    assert task["compile"]["status"] == "failed" and "no GPU here" in task["compile"]["message"]
    assert record["rules"] == "kernelbench" and "21" in record["command"]
    assert "_rows_multipass_kernel_s1" in proc.stderr  # the table on stderr

    # a rerun with one more task profiles only the new one
    cmd.insert(cmd.index("21") + 1, "85")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "21_Conv2d_GroupNorm: already in" in proc.stderr
    assert set(json.loads(out.read_text())["tasks"]) == {"21_Conv2d_GroupNorm", "85_Conv2d_Clamp"}
    assert (ncu.parent / "calls.txt").read_text().split() == ["ours", "compile", "ours", "compile"]


def test_missing_ncu_is_a_one_line_error(tmp_path):
    kb = _task_dir(tmp_path)
    proc = subprocess.run([sys.executable, str(PROBE), str(kb), "--tasks", "21", "--ncu", str(tmp_path / "nope"),
                           "--out", str(tmp_path / "p.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].startswith("kernel_profile.py:")
