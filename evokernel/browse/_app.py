"""The ASGI app: Starlette routes over `Bank`, pages rendered on the server.

Routes answer GET only. Every response carries a Content-Security-Policy that
allows scripts, styles and images from this server alone, and no inline
script: text from the bank is escaped, and even if it were not, the browser
would refuse to run it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from . import _plots, _render
from ._bank import Bank, task_name
from ._records import ItemOrder, RunSummary, Step, TaskSummary

_SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
# Steps a run page lists, and sends on each poll.
_RUN_STEPS_SHOWN = 100


class _SecurityHeaders:
    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (k.encode(), v.encode()) for k, v in _SECURITY_HEADERS.items() if k.encode() not in names
                ]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _page(template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_render.render(template, task_name=task_name, **context), status_code=status_code)


def _missing(what: str) -> HTMLResponse:
    return _page("missing.html", 404, what=what)


def _int(request: Request, name: str) -> int | None:
    value = request.path_params.get(name, request.query_params.get(name))
    try:
        return None if value in (None, "") else int(value)
    except ValueError:
        return None


def _step_row(step: Step, traces: dict[int, Any]) -> dict[str, Any]:
    """A run page's step row, the same for the first render and each poll."""
    item = traces.get(step.result_item_id) if step.result_item_id is not None else None
    return {
        "id": step.id, "time": _render.fmt_utc(step.created_utc), "task": task_name(step.task_key, item.extra if item else None),
        "task_href": f"/tasks/{_quote(step.task_key)}", "stage": step.stage,
        "status": item.status if item else None, "latency": _render.fmt_ms(item.latency_ms if item else None),
        "reward": _render.fmt_num(step.reward), "item_id": step.result_item_id,
        "item_href": f"/items/{step.result_item_id}" if step.result_item_id is not None else None,
    }


def _run_row(run: RunSummary) -> dict[str, Any]:
    """A runs-table row, the same for the first render and each poll."""
    return {
        "id": run.id, "href": f"/runs/{run.id}", "status": run.status, "policy": run.policy,
        "tasks": ", ".join(run.task_names), "started": _render.fmt_utc(run.started_utc),
        "finished": _render.fmt_utc(run.finished_utc),
        "steps": f"{run.steps_done} / {run.steps_planned}" if run.steps_planned else str(run.steps_done),
        "llm_calls": run.llm_calls, "tokens_in": run.tokens_in, "tokens_out": run.tokens_out,
        "cost": _render.fmt_cost(run.cost_usd),
    }


def _task_row(task: TaskSummary) -> dict[str, Any]:
    """A run page's task row, the same for the first render and each poll."""
    return {"name": task.name, "key": task.key, "href": f"/tasks/{_quote(task.key)}", "attempts": task.attempts,
            "feasible": task.feasible, "best": _render.fmt_ms(task.best_ms), "last_status": task.last_status}


def _quote(text: str) -> str:
    return quote(text, safe="")


def _run_state(bank: Bank, run_id: int) -> tuple[RunSummary, list[dict[str, Any]], list[dict[str, Any]]] | None:
    """A run, its task rows and its newest step rows."""
    with bank.read() as reader:
        run = reader.run(run_id)
        if run is None:
            return None
        steps = reader.run_steps(run_id, limit=_RUN_STEPS_SHOWN)
        ids = [s.result_item_id for s in steps if s.result_item_id is not None]
        traces = {i.id: i for i in reader.items_by_id(ids)}
        return run, [_task_row(t) for t in reader.run_tasks(run)], [_step_row(s, traces) for s in steps]


def create_app(memory: str | Path) -> Starlette:
    """The browser over one bank, as an ASGI app (for uvicorn, a notebook or a test client).

    Raises `BrowseError` when the file is missing or not an EvoKernel memory."""
    bank = Bank(memory)

    def index(request: Request) -> Response:
        with bank.read() as reader:
            runs = reader.runs()
            return _page("index.html", stats=reader.stats(), runs=[_run_row(r) for r in runs], tasks=reader.tasks(),
                         live=any(r.running for r in runs))

    def runs_json(request: Request) -> Response:
        with bank.read() as reader:
            runs = reader.runs()
        return JSONResponse({
            "status": "running" if any(r.running for r in runs) else "done",
            "runs": [_run_row(r) for r in runs],
        })

    def run_page(request: Request) -> Response:
        run_id = _int(request, "run_id")
        state = _run_state(bank, run_id) if run_id is not None else None
        if state is None:
            return _missing(f"No run {request.path_params['run_id']} in this bank.")
        run, tasks, steps = state
        return _page("run.html", run=run, tasks=tasks, steps=steps)

    def run_json(request: Request) -> Response:
        run_id = _int(request, "run_id")
        state = _run_state(bank, run_id) if run_id is not None else None
        if state is None:
            return JSONResponse({"error": f"no run {request.path_params['run_id']}"}, status_code=404)
        run, tasks, steps = state
        return JSONResponse({
            "id": run.id, "status": run.status, "steps_done": run.steps_done, "steps_planned": run.steps_planned,
            "fields": {
                "steps_done": run.steps_done, "llm_calls": run.llm_calls, "tokens_in": run.tokens_in,
                "tokens_out": run.tokens_out, "cost": _render.fmt_cost(run.cost_usd),
                "finished": _render.fmt_utc(run.finished_utc),
            },
            "tasks": tasks,
            "steps": steps,
        })

    def tasks_page(request: Request) -> Response:
        with bank.read() as reader:
            return _page("tasks.html", tasks=reader.tasks())

    def task_page(request: Request) -> Response:
        key = request.path_params["key"]
        with bank.read() as reader:
            task = reader.task(key)
        if task is None:
            return _missing(f"No attempt of task {key!r} in this bank.")
        return _page("task.html", task=task, best=task.best)

    def task_plot(request: Request) -> Response:
        key = request.path_params["key"]
        with bank.read() as reader:
            task = reader.task(key)
        if task is None:
            return Response(status_code=404)
        svg = _plots.attempts_svg(task.attempts, best_id=task.best.item.id if task.best else None,
                                  latency_source=task.summary.latency_source)
        return Response(svg, media_type="image/svg+xml")

    def items_page(request: Request) -> Response:
        kind = request.query_params.get("kind") or None
        try:
            order = ItemOrder(request.query_params.get("sort") or ItemOrder.NEWEST.value)
        except ValueError:
            order = ItemOrder.NEWEST
        with bank.read() as reader:
            items = reader.items(kind=kind, order=order)
            return _page("items.html", items=items, kinds=reader.kinds(), kind=kind, order=order, orders=list(ItemOrder),
                         usage=reader.usage([i.id for i in items]))

    def item_page(request: Request) -> Response:
        item_id = _int(request, "item_id")
        with bank.read() as reader:
            view = reader.item(item_id) if item_id is not None else None
        if view is None:
            return _missing(f"No item {request.path_params['item_id']} in this bank.")
        return _page("item.html", view=view, skill=_skill(view.item) if view.item.kind == "best_practice" else None)

    def item_plot(request: Request) -> Response:
        item_id = _int(request, "item_id")
        with bank.read() as reader:
            view = reader.item(item_id) if item_id is not None else None
        if view is None:
            return Response(status_code=404)
        svg = _plots.values_svg(view.history, q_draft_init=view.item.q_draft_init, q_refine_init=view.item.q_refine_init)
        return Response(svg, media_type="image/svg+xml")

    def skills_page(request: Request) -> Response:
        with bank.read() as reader:
            items = reader.skills()
            usage = reader.usage([i.id for i in items])
        return _page("skills.html", skills=[_skill(i) for i in items], usage=usage)

    def calls_page(request: Request) -> Response:
        run_id = _int(request, "run")
        with bank.read() as reader:
            calls = reader.llm_calls(run_id=run_id)
        return _page("calls.html", calls=[_masked(c) for c in calls], run_id=run_id)

    def call_page(request: Request) -> Response:
        call_id = _int(request, "call_id")
        with bank.read() as reader:
            call = reader.llm_call(call_id) if call_id is not None else None
            step = reader.step(call.step_id) if call is not None and call.step_id is not None else None
        if call is None:
            return _missing(f"No LLM call {request.path_params['call_id']} in this bank.")
        from evokernel.llm import parse_summary

        call = _masked(call)
        return _page("call.html", call=call, step=step, parse=parse_summary({"prompt": call.prompt}))

    def search_page(request: Request) -> Response:
        query = request.query_params.get("q", "")[:500]
        with bank.read() as reader:
            hits = reader.search(query) if query.strip() else []
        return _page("search.html", query=query, hits=hits)

    def code_css(request: Request) -> Response:
        return Response(_render.code_css(), media_type="text/css")

    routes = [
        Route("/", index),
        Route("/runs/{run_id}", run_page),
        Route("/api/runs", runs_json),
        Route("/api/runs/{run_id}", run_json),
        Route("/tasks", tasks_page),
        Route("/tasks/{key:path}", task_page),
        Route("/plots/tasks/{key:path}.svg", task_plot),
        Route("/items", items_page),
        Route("/items/{item_id}", item_page),
        Route("/plots/items/{item_id}.svg", item_plot),
        Route("/skills", skills_page),
        Route("/calls", calls_page),
        Route("/calls/{call_id}", call_page),
        Route("/search", search_page),
        Route("/static/code.css", code_css),
        Mount("/static", StaticFiles(directory=str(_render.STATIC_DIR)), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(_SecurityHeaders)])
    app.state.bank = bank
    return app


def _skill(item: Any) -> Any:
    from evokernel.skills import Skill

    return Skill.from_item(item)


def _masked(call: Any) -> Any:
    """The call with anything that looks like a key masked again on the way out:
    the bank may predate the masking at write time."""
    from evokernel.llm import mask_obj

    return dataclasses.replace(call, prompt=mask_obj(call.prompt), response_text=mask_obj(call.response_text),
                               error=mask_obj(call.error))
