"""The sandbox around candidates (README: "The sandbox"): hostile candidates that get
past the static rules the way an attacker would, and what must hold after
each: no key in any result, no connection, no file touched outside the
worker, no process started, limits named, the parent and its files intact.

Candidates are Triton-backend sources in the format of executor_candidates:
a real kernel, so that only the sandbox stands between them and the machine.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import sys
from pathlib import Path

import pytest

from backends import EvalOptions, EvalResult, Executor, Verdict
from backends._sandbox import SandboxLimits, mask_secrets, worker_env
from backends._static import static_findings

from executor_candidates import ADD_RELU_KERNEL, HEADER, HONEST

CASES = Path(__file__).parent / "executor_cases"
PROJECT = Path(__file__).resolve().parent.parent
FAST = EvalOptions(trials=1, cpu_reps=1)
TASK = CASES / "task_add_relu.py"

OPENAI_KEY = "sk-proj-SANDBOXtestKEY0123456789abcdef"
PLAIN_TOKEN = "plain-service-token-value-42"  # no known key shape: only the allow-list keeps it out
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SECRETS = (OPENAI_KEY, PLAIN_TOKEN, AWS_SECRET)


def candidate(body: str, imports: str = "") -> str:
    """An honest add-relu kernel whose forward first runs `body` (8-space indented)."""
    source = HEADER + imports + ADD_RELU_KERNEL + "\n\nclass ModelNew(nn.Module):\n    def forward(self, x, y):\n"
    source += "".join(f"        {line}\n" for line in body.strip().splitlines())
    source += "        return add_relu(x, y)\n"
    assert not static_findings(source), static_findings(source)  # it must reach the sandbox
    return source


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Keys in the parent's environment, a fake home, a memory database, a listening server."""
    root = tmp_path_factory.mktemp("sandbox")
    home = root / "home"
    home.mkdir()
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    db = root / "memory.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table memories (text)")
        conn.execute("insert into memories values ('keep me')")
    keep = root / "keep.txt"
    keep.write_text("test data")
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    triton_cache = os.environ.get("TRITON_CACHE_DIR") or str(Path.home() / ".triton" / "cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", OPENAI_KEY)
        mp.setenv("MY_SERVICE_TOKEN", PLAIN_TOKEN)
        mp.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET)
        mp.setenv("TRITON_CACHE_DIR", triton_cache)  # keep the compile cache warm despite the fake home
        mp.setenv("HOME", str(home))
        yield {"root": root, "home": home, "db": db, "keep": keep, "server": server, "port": server.getsockname()[1]}
    server.close()


@pytest.fixture(scope="module")
def executor(world):
    with Executor(device="cpu", timeout_s=120) as ex:
        yield ex


def _no_connection(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


def _dump(result: EvalResult) -> str:
    return json.dumps(result.to_dict())


def _assert_refused(result: EvalResult, fragment: str = "sandbox") -> None:
    assert result.status in (Verdict.RUNTIME_ERROR, Verdict.CRASH), f"{result.status}: {result.message}"
    assert fragment.lower() in (result.message + result.feedback).lower(), result.message


def _assert_unharmed(world) -> None:
    with sqlite3.connect(world["db"]) as conn:
        assert conn.execute("select text from memories").fetchall() == [("keep me",)]
    assert world["keep"].read_text() == "test data"
    assert (world["home"] / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY"
    # the parent itself creates the shared build cache (~/.cache/evokernel); nothing else appears
    assert {p.name for p in world["home"].iterdir()} <= {".ssh", ".cache"}
    assert not list(world["home"].glob("**/pwned*"))


# --- secrets --------------------------------------------------------------------

def test_environment_holds_no_keys(executor, world):
    source = candidate("""
found = os.environ.get("OPENAI_API_KEY", "no-openai") + os.environ.get("MY_SERVICE_TOKEN", "no-token")
found = found + os.environ.get("AWS_SECRET_ACCESS_KEY", "no-aws") + " home=" + os.environ.get("HOME", "")
raise ValueError(found)
""", imports="import os\n")
    result = executor.evaluate(TASK, source, options=FAST)
    assert result.status == Verdict.RUNTIME_ERROR
    assert "no-openaino-tokenno-aws" in result.message  # the candidate really looked
    assert str(world["home"]) not in result.message  # HOME is the worker's own directory
    assert not any(s in _dump(result) for s in SECRETS)


@pytest.mark.parametrize("route", ["parent_proc_environ", "home_ssh_key", "memory_db"])
def test_reads_out_of_reach(executor, world, route):
    target = {
        "parent_proc_environ": '"/proc/" + str(os.getppid()) + "/environ"',
        "home_ssh_key": repr(str(world["home"] / ".ssh" / "id_rsa")),
        "memory_db": repr(str(world["db"])),
    }[route]
    source = candidate(f"raise ValueError(open({target}, 'rb').read())", imports="import os\n")
    result = executor.evaluate(TASK, source, options=FAST)
    _assert_refused(result, "refused")
    assert "PRIVATE KEY" not in _dump(result) and "keep me" not in _dump(result)
    assert not any(s in _dump(result) for s in SECRETS)


def test_key_shaped_text_is_masked_in_results(executor):
    # A key the candidate found elsewhere (a file, its own source) in an error message.
    source = candidate('raise ValueError("leak: " + "sk-ant-api03-" + "abcdefghijklmnop" + " and ' + OPENAI_KEY + '")')
    result = executor.evaluate(TASK, source, options=FAST)
    assert result.status == Verdict.RUNTIME_ERROR
    assert "sk-ant-api03-abcdefghijklmnop" not in _dump(result) and OPENAI_KEY not in _dump(result)
    assert "sk-ant-***" in result.message and "sk-***" in result.message


def test_worker_env_is_an_allow_list(tmp_path):
    base = {
        "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "HOME": "/home/u", "CUDA_VISIBLE_DEVICES": "1",
        "TRITON_CACHE_DIR": "/c", "OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": "sk-ant-x" * 3,
        "AWS_ACCESS_KEY_ID": "AKIAABCDEFGHIJKLMNOP", "GITHUB_TOKEN": "ghp_x", "TRITON_API_KEY": "k",
        "EVOKERNEL_DB_PASSWORD": "p", "SSH_AUTH_SOCK": "/tmp/agent", "DATABASE_URL": "postgres://u:p@h/db",
    }
    env = worker_env(base, tmp_path, str(PROJECT), "cpu", SandboxLimits())
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"] == str(tmp_path / "tmp")
    assert env["PATH"] == "/usr/bin" and env["LC_ALL"] == "C" and env["CUDA_VISIBLE_DEVICES"] == "1"
    for gone in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID", "GITHUB_TOKEN", "TRITON_API_KEY",
                 "EVOKERNEL_DB_PASSWORD", "SSH_AUTH_SOCK", "DATABASE_URL"):
        assert gone not in env
    assert OPENAI_KEY not in json.dumps(env)


def test_mask_secrets_patterns():
    text = ("sk-abc123def456 sk-ant-api03-XYZxyz_123-456 AKIAIOSFODNN7EXAMPLE ghp_0123456789abcdefghijABCDEFGHIJ "
            "Authorization: Bearer abcdefghijklmnop api_key=qwertyuiopasdf task-abcdefgh1234 " + PLAIN_TOKEN)
    masked = mask_secrets(text, {"MY_SERVICE_TOKEN": PLAIN_TOKEN})
    for leaked in ("abc123def456", "XYZxyz_123", "IOSFODNN7EXAMPLE", "0123456789abcdefghij", "abcdefghijklmnop",
                   "qwertyuiopasdf", PLAIN_TOKEN):
        assert leaked not in masked
    assert "task-abcdefgh1234" in masked  # words merely containing "sk-" survive


def test_llm_layer_uses_the_same_masking():
    from evokernel.llm import mask_obj as llm_mask_obj, mask_secrets as llm_mask

    text = "key sk-ant-api03-abcdefghijkl and AKIAIOSFODNN7EXAMPLE"
    assert llm_mask(text) == mask_secrets(text) and "abcdefghijkl" not in llm_mask(text)
    assert llm_mask_obj({"a": [text]}) == {"a": [mask_secrets(text)]}


# --- network --------------------------------------------------------------------

def _connect_source(port: int) -> str:
    return candidate(f'urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=3)', imports="import urllib.request\n")


def test_no_network(executor, world):
    result = executor.evaluate(TASK, _connect_source(world["port"]), options=FAST)
    _assert_refused(result, "network")
    assert _no_connection(world["server"]), "the candidate reached the test's server"
    assert result.sandbox["network"] in ("netns", "userns+netns", "audit-hook")


def test_network_namespace_alone_holds(world):
    """Without the audit hook the namespace still cuts the candidate off (where the kernel allows one)."""
    with Executor(device="cpu", timeout_s=120, sandbox=SandboxLimits(audit_hook=False)) as ex:
        result = ex.evaluate(TASK, _connect_source(world["port"]), options=FAST)
    if result.sandbox.get("network") not in ("netns", "userns+netns"):
        pytest.skip(f"no network namespace here: {result.sandbox}")
    assert result.status == Verdict.RUNTIME_ERROR, result.message
    assert _no_connection(world["server"]), "the candidate reached the test's server"


# --- files ----------------------------------------------------------------------

@pytest.mark.parametrize("route", ["home", "project", "project_pathlib", "relative_escape", "rmtree", "remove_db", "rename_db"])
def test_writes_out_of_reach(executor, world, route):
    home_file = world["home"] / "pwned.txt"
    project_file = PROJECT / "tests" / "pwned_by_candidate.txt"
    body, imports = {
        "home": (f"open({str(home_file)!r}, 'w').write('pwned')", ""),
        "project": (f"open({str(project_file)!r}, 'w').write('pwned')", ""),
        "project_pathlib": (f"pathlib.Path({str(PROJECT / 'backends' / '_static.py')!r}).write_text('')", "import pathlib\n"),
        "relative_escape": ("open('../../pwned_by_candidate.txt', 'w').write('pwned')", ""),
        "rmtree": (f"shutil.rmtree({str(world['home'])!r})", "import shutil\n"),
        "remove_db": (f"os.remove({str(world['db'])!r})", "import os\n"),
        "rename_db": (f"os.rename({str(world['db'])!r}, {str(world['root'] / 'moved.db')!r})", "import os\n"),
    }[route]
    try:
        result = executor.evaluate(TASK, candidate(body, imports), options=FAST)
        _assert_refused(result, "refused")
        assert not home_file.exists() and not project_file.exists()
        assert (PROJECT / "backends" / "_static.py").stat().st_size > 0
        _assert_unharmed(world)
    finally:
        project_file.unlink(missing_ok=True)


def test_candidate_may_write_its_own_directory(executor):
    source = candidate("""
d = tempfile.mkdtemp()
open(os.path.join(d, "scratch.bin"), "wb").write(b"ok")
""", imports="import os\nimport tempfile\n")
    result = executor.evaluate(TASK, source, options=FAST)
    assert result.status == Verdict.OK, result.message


def test_module_written_by_candidate_is_not_importable(executor):
    # A second file would escape the static rules: the worker dir is not on sys.path.
    source = candidate("""
open(os.path.join(os.getcwd(), "helper_mod.py"), "w").write("import subprocess")
import helper_mod
""", imports="import os\n")
    result = executor.evaluate(TASK, source, options=FAST)
    assert result.status == Verdict.RUNTIME_ERROR and "helper_mod" in result.message, result.message


# --- processes -------------------------------------------------------------------

@pytest.mark.parametrize("route", ["fork_loop", "posix_spawn_shell", "execv", "python_child", "pty_fork", "kill_parent"])
def test_processes_refused(executor, world, route):
    marker = world["root"] / f"spawned_{route}"
    body, imports = {
        "fork_loop": ("for _ in range(1000):\n    fork()", "from os import fork\n"),
        "posix_spawn_shell": (f"os.posix_spawn('/bin/sh', ['sh', '-c', 'touch {marker}'], {{}})", "import os\n"),
        "execv": (f"execv('/bin/sh', ['sh', '-c', 'touch {marker}'])", "from os import execv\n"),
        "python_child": (f"os.posix_spawn(sys.executable, [sys.executable, '-c', {f'open({str(marker)!r}, chr(119))'!r}], {{}})",
                         "import os\nimport sys\n"),
        "pty_fork": ("pty.fork()", "import pty\n"),
        "kill_parent": ("os.kill(os.getppid(), 9)", "import os\n"),
    }[route]
    result = executor.evaluate(TASK, candidate(body, imports), options=FAST)
    _assert_refused(result, "refused")
    assert not marker.exists()
    # contained: the worker is still the only process of its group and answers the next candidate
    after = executor.evaluate(TASK, HONEST["add_relu"][1], options=FAST)
    assert after.status == Verdict.OK and after.worker_reused


# --- limits ----------------------------------------------------------------------

def test_address_space_limit_is_named(world):
    with Executor(device="cpu", timeout_s=120, sandbox=SandboxLimits(address_space_mb=4096)) as ex:
        source = candidate("big = torch.empty(8 << 30, dtype=torch.uint8)")
        result = ex.evaluate(TASK, source, options=FAST)
        assert result.status == Verdict.RUNTIME_ERROR, result.message  # the candidate's own out-of-memory error
        assert "out of memory" in result.message and "address-space limit of 4096 MiB" in result.message
        after = ex.evaluate(TASK, HONEST["add_relu"][1], options=FAST)
        assert after.status == Verdict.OK and not after.worker_reused


def test_cpu_time_limit_is_named(world):
    with Executor(device="cpu", timeout_s=120, sandbox=SandboxLimits(cpu_time_s=4)) as ex:
        result = ex.evaluate(TASK, candidate("while True:\n    pass"), options=FAST)
    assert result.status == Verdict.TIMEOUT, result.message
    assert "CPU-time limit of 4 s exceeded" in result.message
    assert result.seconds < 60, "RLIMIT_CPU must fire long before the wall-clock timeout"


def test_file_size_limit_is_named(world):
    with Executor(device="cpu", timeout_s=120, sandbox=SandboxLimits(file_size_mb=1)) as ex:
        source = candidate('open(os.path.join(os.getcwd(), "big.bin"), "wb").write(bytes(4 << 20))', imports="import os\n")
        result = ex.evaluate(TASK, source, options=FAST)
    assert result.status == Verdict.CRASH, result.message
    assert "file-size limit of 1 MiB" in result.message


def test_sleep_past_timeout(world):
    with Executor(device="cpu", timeout_s=8) as ex:
        result = ex.evaluate(TASK, candidate("select.select([], [], [], 600)", imports="import select\n"), options=FAST)
    assert result.status == Verdict.TIMEOUT and "timed out" in result.message
    assert result.sandbox.get("enabled")


# --- the honest path ---------------------------------------------------------------

def test_honest_kernels_pass_and_report_the_sandbox(executor, world):
    for name, (task, source) in sorted(HONEST.items()):
        result = executor.evaluate(CASES / task, source, options=FAST)
        assert result.status == Verdict.OK, f"{name}: {result.feedback}"
        assert result.kernels[0].registers, "the sm_90 compile server must still run its compilers"
        info = result.sandbox
        assert info["enabled"] and info["env"] == "allow-list" and info["audit_hook"]
        assert info["limits"]["address_space_mb"] and info["limits"]["cpu_time_s"]
    _assert_unharmed(world)
    assert EvalResult.from_dict(json.loads(_dump(result))).sandbox == result.sandbox


def test_sandbox_can_be_switched_off():
    with Executor(device="cpu", timeout_s=120, sandbox=SandboxLimits(enabled=False)) as ex:
        result = ex.evaluate(TASK, HONEST["add_relu"][1], options=FAST)
    assert result.status == Verdict.OK and result.sandbox == {"enabled": False}


def test_parent_process_unharmed(world):
    assert os.getpid() > 0 and sys.executable
    _assert_unharmed(world)
    assert (PROJECT / "backends" / "_static.py").stat().st_size > 0
