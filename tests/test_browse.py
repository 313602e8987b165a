"""The memory browser through an ASGI test client: pages, escaping, read-only access,
the live run endpoint, value replay, search, and the CLI's safety switches.

The bank is written through the store's own API (the same calls the loop makes),
with hostile text in every field a page shows.
"""

from __future__ import annotations

import hashlib
import re
import socket
import sqlite3
import urllib.request
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from evokernel.browse import Bank, BrowseError, ServeOptions, create_app, start
from evokernel.cli import app as cli_app
from memory_store import MemoryStore

HOSTILE = '</script><img src=x onerror=alert(1)><script>alert("pwned")</script>'
KEY = "relu_add-0123456789@small"
KERNEL_V1 = '''import triton
import triton.language as tl


@triton.jit
def _relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask), 0.0), mask=mask)
'''
KERNEL_V2 = KERNEL_V1.replace("BLOCK: tl.constexpr", "BLOCK: tl.constexpr, WARPS: tl.constexpr") + f"# {HOSTILE}\n"


def build_bank(path: Path) -> dict[str, int]:
    """A small bank as the loop writes one: a run, a draft, a refinement, a failure,
    their experiences and steps, a skill with its evidence and an LLM call; hostile
    text in the kernels, feedback, prompt, answer and options. Returns the ids."""
    with MemoryStore(path) as store:
        run = store.start_run({"policy": "builtin", "signature": {"config": {"budget": 3, "note": HOSTILE}},
                               "tasks": [{"key": KEY, "name": "relu_add"}]})
        common = dict(task_key=KEY, backend="triton", category="elementwise", run_id=run)
        extra = {"task_name": "relu_add"}
        draft = store.add_item(kind="trace", key_text="relu_add elementwise triton block 1024", content=KERNEL_V1,
                               stage="draft", reward=1.0, latency_ms=3.0, latency_source="measured-gpu", status="ok",
                               extra=extra,
                               feedback={"status": "ok", "message": "correct on 5 input set(s)",
                                         "feedback": "Correct. Latency 3 ms.",
                                         "baselines": {"eager_ms": 2.5, "compile_ms": 1.8}}, **common)
        draft_step = store.record_step(run_id=run, task_key=KEY, backend="triton", stage="draft", reward=1.0,
                                       context_item_ids=[], result_item_id=draft)
        lesson = store.add_item(kind="experience", key_text=f"relu_add draft ok {HOSTILE}", content=f"lesson {HOSTILE}",
                                stage="draft", parent_id=draft, status="ok", **common)
        refined = store.add_item(kind="trace", key_text="relu_add elementwise triton block 512 warps", content=KERNEL_V2,
                                 stage="refine", reward=0.5, latency_ms=1.5, latency_source="measured-gpu", status="ok",
                                 parent_id=draft, extra=extra,
                                 feedback={"status": "ok", "message": f"correct {HOSTILE}",
                                           "feedback": f"Correct; the comment says {HOSTILE}",
                                           "baselines": {"eager_ms": 2.5, "compile_ms": 1.8}}, **common)
        refine_step = store.record_step(run_id=run, task_key=KEY, backend="triton", stage="refine", reward=0.5,
                                        context_item_ids=[lesson, draft], start_point_id=draft, result_item_id=refined)
        failed = store.add_item(kind="trace", key_text="relu_add elementwise triton block 64", content=KERNEL_V2 + "oops(\n",
                                stage="refine", reward=-1.0, latency_ms=None, status="compile_error", parent_id=refined,
                                extra=extra, feedback={"status": "compile_error", "message": f"SyntaxError near {HOSTILE}",
                                                       "feedback": "unexpected EOF while parsing zebrafish"}, **common)
        store.record_step(run_id=run, task_key=KEY, backend="triton", stage="refine", reward=-1.0,
                          context_item_ids=[lesson], start_point_id=refined, result_item_id=failed)
        skill = store.add_item(
            kind="best_practice", task_key=KEY, backend="triton", stage="refine", status="admitted", run_id=run,
            key_text="Halve the block for small rows\nrelu triton", content="When it applies: relu.", latency_ms=1.5,
            parent_id=refined, name="triton:block:elementwise:{}",
            extra={"skill": {"title": f"Halve the block {HOSTILE}", "scope": {"operators": ["relu"], "backend": "triton"},
                             "technique": "block 1024 -> 512", "sketch": "", "source": "builtin"},
                   "evidence": [{"task_key": KEY, "task_name": "relu_add", "before_item_id": draft,
                                 "after_item_id": refined, "before_ms": 3.0, "after_ms": 1.5,
                                 "latency_source": "measured-gpu"}],
                   "verification": {"baseline_ms": 3.0, "skill_ms": 1.5, "speedup": 2.0, "reruns": 3,
                                    "latency_source": "measured-gpu", "admitted": True, "reason": "reproduced 3 of 3",
                                    "min_speedup": 1.2, "rounds": [[3.0, 1.5], [3.1, 1.6], [2.9, 1.4]]}})
        call = store.log_llm_call(
            provider="openai", model="gpt-test", run_id=run, step_id=refine_step,
            prompt={"purpose": "refine", "system": f"system {HOSTILE}",
                    "messages": [{"role": "user", "content": f"improve this {HOSTILE}"}]},
            response_text=f"```python\n{HOSTILE}\n```", tokens_in=1200, tokens_out=340, cost_usd=0.0123,
            latency_ms=4567.0)
    return {"run": run, "draft": draft, "lesson": lesson, "refined": refined, "failed": failed, "skill": skill,
            "call": call, "draft_step": draft_step, "refine_step": refine_step}


@pytest.fixture(scope="module")
def bank(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    path = tmp_path_factory.mktemp("browse") / "memory.db"
    return path, build_bank(path)


@pytest.fixture(scope="module")
def client(bank) -> TestClient:
    return TestClient(create_app(bank[0]))


def _pages(ids: dict[str, int]) -> list[str]:
    task = "/tasks/" + KEY.replace("@", "%40")
    return ["/", f"/runs/{ids['run']}", "/tasks", task, "/items", "/items?kind=trace", f"/items/{ids['draft']}",
            f"/items/{ids['refined']}", f"/items/{ids['failed']}", f"/items/{ids['lesson']}", f"/items/{ids['skill']}",
            "/skills", "/calls", f"/calls?run={ids['run']}", f"/calls/{ids['call']}", "/search?q=relu",
            "/search?q=onerror", "/search?q=zebrafish"]


def test_every_page_renders_and_escapes_hostile_text(client, bank):
    _, ids = bank
    for url in _pages(ids):
        page = client.get(url)
        assert page.status_code == 200, url
        assert page.headers["content-type"].startswith("text/html"), url
        # Whatever the bank holds, no tag from it reaches the page as markup.
        assert "<img src=x" not in page.text and 'alert("pwned")</script>' not in page.text, url
        assert "onerror=alert(1)>" not in page.text, url
        # The page's only scripts are this server's files, and every asset and link is on this server (no CDN).
        assert re.findall(r"<script(?![^>]*\bsrc=\"/static/)", page.text) == [], url
        assert re.findall(r'(?:src|href|action)="(?!/)[^"]*"', page.text) == [], url
    # The hostile text is shown, as text, where it was written.
    for url in (f"/items/{ids['refined']}", f"/calls/{ids['call']}", f"/runs/{ids['run']}"):
        assert "&lt;img src=x onerror=alert(1)&gt;" in client.get(url).text, url


def test_pages_forbid_inline_script_and_framing(client):
    headers = client.get("/").headers
    policy = headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    assert headers["x-content-type-options"] == "nosniff"


def test_task_page_shows_plot_lineage_diff_best_and_feedback(client, bank):
    _, ids = bank
    task = "/tasks/" + KEY.replace("@", "%40")
    page = client.get(task).text
    assert f'src="/plots/tasks/{KEY.replace("@", "%40")}.svg"' in page
    # The lineage: the draft is the root, the refinement under it, the failure under that.
    lineage = page[page.index('id="lineage"'):page.index("<h2>Best kernel")]
    order = [int(i) for i in re.findall(r'data-item="(\d+)"', lineage)]
    assert order == [ids["draft"], ids["refined"], ids["failed"]]
    assert lineage.count("<ul") == 3  # nested: each kernel under its start point
    assert f"diff against #{ids['draft']} (+2 -1 lines)" in lineage
    # The diff is highlighted text: added lines are there, escaped.
    assert "WARPS" in lineage and "&lt;/script&gt;" in lineage
    # The best kernel is the refinement (1.5 ms), highlighted, and its row marked.
    best = page[page.index('id="best"'):]
    assert best.startswith(f'id="best"><a href="/items/{ids["refined"]}">')
    assert '<tr class="best">' in page
    assert "unexpected EOF while parsing zebrafish" in page  # a failed step's feedback
    refined_row = page[page.index(f'<td><a href="/items/{ids["refined"]}">'):]
    refined_row = refined_row[:refined_row.index("</tr>")]
    # The memories its step retrieved, linked.
    assert f'<a href="/items/{ids["lesson"]}">#{ids["lesson"]}</a> <a href="/items/{ids["draft"]}">' in refined_row
    plot = client.get(f"/plots/tasks/{KEY.replace('@', '%40')}.svg")
    assert plot.status_code == 200 and plot.headers["content-type"] == "image/svg+xml"
    svg = plot.text
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # Eager and torch.compile are drawn (their legend entries), and so is the failure.
    assert "eager PyTorch" in svg and "torch.compile" in svg and "failed" in svg


def test_a_long_chain_of_refinements_and_branches_renders_as_a_bounded_tree(tmp_path):
    """300 refinements, each from the one before (a run that keeps improving), beside a sibling branch:
    the page renders (no recursion limit), its lists balance, and indentation stops at 12 levels."""
    from html.parser import HTMLParser

    path = tmp_path / "chain.db"
    with MemoryStore(path) as store:
        run = store.start_run({"policy": "builtin"})
        common = dict(kind="trace", task_key=KEY, backend="triton", key_text="relu", stage="refine", status="ok",
                      run_id=run)
        root = store.add_item(content=KERNEL_V1, latency_ms=10.0, **{**common, "stage": "draft"})
        side = store.add_item(content=KERNEL_V1 + "# side\n", latency_ms=9.0, parent_id=root, **common)
        chain = [root]
        for n in range(300):
            chain.append(store.add_item(content=KERNEL_V1 + f"# step {n}\n", latency_ms=8.0 - n / 100,
                                        parent_id=chain[-1], **common))
    page = TestClient(create_app(path)).get("/tasks/" + KEY.replace("@", "%40"))
    assert page.status_code == 200
    lineage = page.text[page.text.index('id="lineage"'):page.text.index("<h2>Best kernel")]
    order = [int(i) for i in re.findall(r'data-item="(\d+)"', lineage)]
    assert order == [root, side, *chain[1:]]  # depth first, siblings in the order they were made

    class Depth(HTMLParser):
        depth = deepest = 0

        def handle_starttag(self, tag, attrs):
            if tag == "ul":
                self.depth += 1
                self.deepest = max(self.deepest, self.depth)

        def handle_endtag(self, tag):
            self.depth -= tag == "ul"

    parser = Depth()
    parser.feed(lineage)
    assert parser.depth == 0 and parser.deepest == 13  # the root's list and 12 levels of indentation
    assert f"diff against #{chain[-2]} (+1 -1 lines)" in lineage


def test_values_replayed_from_the_steps_end_at_the_stored_values(bank):
    path, ids = bank
    with Bank(path).read() as reader:
        for item_id in (ids["draft"], ids["lesson"], ids["refined"]):
            view = reader.item(item_id)
            assert view.history, item_id
            last = view.history[-1]
            assert (last.q_draft, last.q_refine) == (view.item.q_draft, view.item.q_refine)
            assert len(view.history) == view.item.visits_draft + view.item.visits_refine
        lesson = reader.item(ids["lesson"])
        assert lesson.usage.retrieved == 2 and lesson.usage.feasible_after == 1
        assert lesson.usage.mean_reward == pytest.approx((0.5 - 1.0) / 2)


def test_item_page_shows_values_usage_and_a_skills_admission(client, bank):
    _, ids = bank
    page = client.get(f"/items/{ids['lesson']}").text
    assert f'src="/plots/items/{ids["lesson"]}.svg"' in page
    assert "by 2 steps" in page and "1 of them produced a feasible kernel" in page
    assert client.get(f"/plots/items/{ids['lesson']}.svg").headers["content-type"] == "image/svg+xml"
    skill = client.get(f"/items/{ids['skill']}").text
    assert "reproduced 3 of 3" in skill and "2.00x" in skill and "Halve the block &lt;/script&gt;" in skill
    evidence = skill[skill.index('id="evidence"'):]
    assert f'/items/{ids["draft"]}' in evidence and f'/items/{ids["refined"]}' in evidence
    assert "Halve the block" in client.get("/skills").text


def test_the_memory_page_orders_items_by_their_values(client, bank):
    page = client.get("/items?sort=q_refine").text
    listed = [int(i) for i in re.findall(r'<tr><td><a href="/items/(\d+)">', page)]
    with Bank(bank[0]).read() as reader:
        q_refine = {i.id: i.q_refine for i in reader.items(limit=1000)}
    assert sorted(listed) == sorted(q_refine)
    assert [q_refine[i] for i in listed] == sorted(q_refine.values(), reverse=True)
    assert client.get("/items?sort=nonsense").status_code == 200  # an unknown order is the newest first


def test_llm_call_page_links_its_step_and_shows_tokens_and_cost(client, bank):
    _, ids = bank
    page = client.get(f"/calls/{ids['call']}").text
    assert "in 1200, out 340" in page and "$0.0123" in page and "4567 ms" in page
    assert f"step {ids['refine_step']}:" in page and f'href="/items/{ids["refined"]}"' in page
    listing = client.get(f"/calls?run={ids['run']}").text
    assert f'href="/calls/{ids["call"]}"' in listing


def test_search_uses_the_index_and_the_sources_and_takes_any_text(client, bank):
    _, ids = bank
    page = client.get("/search?q=warps").text  # a word of the refinement's key text (FTS5)
    assert f'href="/items/{ids["refined"]}"' in page and "<mark>warps</mark>" in page
    page = client.get("/search?q=zebrafish").text  # only in a failure's feedback
    assert f'href="/items/{ids["failed"]}"' in page
    assert "<td>feedback</td>" in page and "while parsing <mark>zebrafish</mark>" in page  # the words, not JSON
    for query in ('"', "AND (", "relu OR", "*", "NEAR(", "x' --"):
        assert client.get("/search", params={"q": query}).status_code == 200, query


def test_unknown_ids_are_404_pages(client):
    for url in ("/runs/999", "/runs/abc", "/items/999", "/calls/999", "/tasks/no-such-task"):
        page = client.get(url)
        assert page.status_code == 404 and "Not found" in page.text, url
    assert client.get("/api/runs/999").status_code == 404


def test_run_endpoint_follows_a_writer(tmp_path):
    path = tmp_path / "live.db"
    ids = build_bank(path)
    client = TestClient(create_app(path))
    assert 'data-live="/api/runs"' in client.get("/").text  # the front page follows running runs too
    listed = client.get("/api/runs").json()
    assert listed["status"] == "running" and [r["steps"] for r in listed["runs"]] == ["3 / 3"]
    before = client.get(f"/api/runs/{ids['run']}").json()
    assert before["status"] == "running" and before["steps_done"] == 3 and before["steps_planned"] == 3
    assert [s["id"] for s in before["steps"]] == [3, 2, 1]
    with MemoryStore(path) as store:  # another writer, as a run in another process would be
        item = store.add_item(kind="trace", task_key=KEY, backend="triton", key_text="relu", content=KERNEL_V1,
                              stage="refine", latency_ms=0.9, status="ok", run_id=ids["run"])
        store.record_step(run_id=ids["run"], task_key=KEY, backend="triton", stage="refine", reward=0.7,
                          context_item_ids=[], result_item_id=item)
        store.finish_run(ids["run"])
        fresh = store.start_run({"policy": "builtin", "tasks": [{"key": "softmax-abc@small", "name": "softmax"}],
                                 "signature": {"config": {"budget": 2}}})
    # A run listed with its tasks before its first step lands.
    started = client.get(f"/api/runs/{fresh}").json()
    assert (started["steps_done"], started["steps_planned"]) == (0, 2)
    assert [(t["name"], t["attempts"], t["best"]) for t in started["tasks"]] == [("softmax", 0, "-")]
    after = client.get(f"/api/runs/{ids['run']}").json()
    assert after["status"] == "done" and after["steps_done"] == 4
    assert after["steps"][0]["item_id"] == item and after["steps"][0]["latency"] == "0.9 ms"
    assert after["tasks"][0]["best"] == "0.9 ms" and after["fields"]["tokens_in"] == 1200
    listed = client.get("/api/runs").json()
    assert listed["status"] == "running"  # the run started without a step is still running
    assert [(r["id"], r["status"], r["steps"]) for r in listed["runs"]] == [(fresh, "running", "0 / 2"),
                                                                          (ids["run"], "done", "4 / 3")]


def test_the_bank_is_opened_read_only(bank, client):
    path, ids = bank
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for url in _pages(ids):
        client.get(url)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    with Bank(path).read() as reader, pytest.raises(sqlite3.OperationalError, match="readonly|read-only|query_only"):
        reader.conn.execute("DELETE FROM items")
    # POST and friends are not routes.
    assert client.post("/", data={"x": "1"}).status_code == 405


def test_a_missing_or_foreign_file_is_one_clear_error(tmp_path):
    with pytest.raises(BrowseError, match="no memory at"):
        create_app(tmp_path / "absent.db")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(BrowseError, match="not an EvoKernel memory"):
        create_app(other)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(BrowseError, match="junk.db"):
        create_app(junk)


def test_start_serves_on_loopback_and_refuses_a_taken_port(bank):
    path, _ = bank
    server = start(path, ServeOptions(port=0))
    try:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "/static/live.js", timeout=10) as response:
            assert b"textContent" in response.read()
        port = int(server.url.rsplit(":", 1)[1])
        with pytest.raises(BrowseError, match="could not listen"):
            start(path, ServeOptions(port=port))
    finally:
        server.stop()


def test_remote_hosts_need_an_explicit_flag(bank, monkeypatch):
    path, _ = bank
    with pytest.raises(BrowseError, match="allow_remote"):
        ServeOptions(host="0.0.0.0")
    runner = CliRunner()
    refused = runner.invoke(cli_app, ["browse", "--memory", str(path), "--host", "0.0.0.0"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "--allow-remote" in refused.stderr

    served: list[tuple] = []

    def fake_serve(memory, options, *, on_ready=None):
        served.append((memory, options))
        on_ready(f"http://{options.host}:{options.port}")

    monkeypatch.setattr("evokernel.browse.serve", fake_serve)
    allowed = runner.invoke(cli_app, ["browse", "--memory", str(path), "--host", "0.0.0.0", "--allow-remote",
                                      "--port", "8123"])
    assert allowed.exit_code == 0, allowed.stderr
    assert served[0][1] == ServeOptions(host="0.0.0.0", port=8123, allow_remote=True)
    assert allowed.stderr.startswith("warning: serving") and "no login" in allowed.stderr
    assert allowed.stdout == ""
    monkeypatch.setenv("EVOKERNEL_HOME", str(path.parent))  # the default bank, resolved by the CLI
    local = runner.invoke(cli_app, ["browse", "--port", "0"])
    assert local.exit_code == 0 and "warning" not in local.stderr and "read-only" in local.stderr
    assert served[-1] == (path, ServeOptions(port=0))
    missing = runner.invoke(cli_app, ["browse", "--memory", str(path.parent / "none.db")])
    assert missing.exit_code == 2 and "no memory at" in missing.stderr


def test_a_free_port_is_really_free_after_stop(bank):
    """stop() releases the socket: a notebook can start and stop servers on a fixed port."""
    path, _ = bank
    server = start(path, ServeOptions(port=0))
    port = int(server.url.rsplit(":", 1)[1])
    server.stop()
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", port))
    finally:
        probe.close()
