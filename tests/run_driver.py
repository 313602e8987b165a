"""A library run in its own process, for tests that kill it: `python run_driver.py SPEC.json`.

The spec names the tasks, the memory, the run's options, the candidates the
policy offers, the latency the scripted executor reports for each, and how long
each evaluation takes (so a test can kill the run between two steps).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evokernel  # noqa: E402
from evokernel import RunOptions  # noqa: E402

from loop_doubles import RecordingPolicy, ScriptedExecutor, ok  # noqa: E402


def run(spec: dict) -> dict:
    latencies: dict[str, float] = spec["latencies"]
    delays: list[float] = spec.get("delays", [])
    executor = ScriptedExecutor(
        script=lambda source, n: ok(latencies[source]),
        delay=lambda n: delays[n - 1] if n - 1 < len(delays) else 0.0,
    )
    policy = RecordingPolicy(*spec["sources"], name=spec.get("policy", "scripted"), delay_s=spec.get("propose_delay_s", 0.0))
    result = evokernel.run(spec["tasks"], RunOptions.of(**spec["options"]), policy=policy, executor=executor,
                           memory=spec["memory"])
    return result.to_dict()


if __name__ == "__main__":
    data = run(json.loads(Path(sys.argv[1]).read_text()))
    sys.stdout.write(json.dumps(data, default=str) + "\n")
