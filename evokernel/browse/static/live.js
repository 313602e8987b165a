// Follows runs in progress: polls the page's JSON endpoint (data-live) and
// redraws the fields and tables it names. Text goes in through textContent
// only, so nothing from the bank is ever parsed as HTML.
(function () {
  "use strict";
  const root = document.querySelector("[data-live]");
  if (!root) return;
  const url = root.getAttribute("data-live");
  const every = Number(root.getAttribute("data-every") || "1500");

  function setText(name, value) {
    for (const el of root.querySelectorAll('[data-field="' + name + '"]')) {
      el.textContent = value === null || value === undefined ? "-" : String(value);
    }
  }

  function cell(row, value, cls) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = value === null || value === undefined ? "-" : String(value);
    row.appendChild(td);
    return td;
  }

  function link(td, href) {
    const text = td.textContent;
    td.textContent = "";
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    td.appendChild(a);
  }

  function statusCell(row, status) {
    const td = document.createElement("td");
    const span = document.createElement("span");
    span.className = "status " + (status || "");
    span.textContent = status || "-";
    td.appendChild(span);
    row.appendChild(td);
  }

  function fillTable(name, rows, draw) {
    const body = root.querySelector('tbody[data-rows="' + name + '"]');
    if (!body || !rows) return;
    const fresh = document.createDocumentFragment();
    for (const r of rows) {
      const tr = document.createElement("tr");
      draw(tr, r);
      fresh.appendChild(tr);
    }
    body.replaceChildren(fresh);
  }

  function render(data) {
    for (const [name, value] of Object.entries(data.fields || {})) setText(name, value);
    const bar = root.querySelector("progress[data-progress]");
    if (bar && data.steps_planned) {
      bar.max = data.steps_planned;
      bar.value = data.steps_done;
    }
    const status = root.querySelector("[data-status]");
    if (status) {
      status.className = "status " + data.status;
      status.textContent = data.status;
    }
    fillTable("runs", data.runs, function (tr, r) {
      link(cell(tr, "run " + r.id), r.href);
      statusCell(tr, r.status);
      cell(tr, r.policy);
      cell(tr, r.tasks);
      cell(tr, r.started, "when");
      cell(tr, r.finished, "when");
      cell(tr, r.steps, "num");
      cell(tr, r.llm_calls, "num");
      cell(tr, r.tokens_in, "num");
      cell(tr, r.tokens_out, "num");
      cell(tr, r.cost, "num");
    });
    fillTable("tasks", data.tasks, function (tr, t) {
      link(cell(tr, t.name), t.href);
      cell(tr, t.attempts, "num");
      cell(tr, t.feasible, "num");
      cell(tr, t.best, "num");
      statusCell(tr, t.last_status);
    });
    fillTable("steps", data.steps, function (tr, s) {
      cell(tr, s.id, "num");
      cell(tr, s.time, "when");
      link(cell(tr, s.task), s.task_href);
      cell(tr, s.stage);
      statusCell(tr, s.status);
      cell(tr, s.latency, "num");
      cell(tr, s.reward, "num");
      const kernel = cell(tr, s.item_id === null ? "-" : "#" + s.item_id);
      if (s.item_id !== null) link(kernel, s.item_href);
    });
  }

  function tick() {
    fetch(url, { cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(new Error("HTTP " + r.status)); })
      .then(function (data) {
        render(data);
        if (data.status === "running") {
          setText("live-state", "live: updated " + new Date().toLocaleTimeString());
          setTimeout(tick, every);
        } else {
          setText("live-state", "");
        }
      })
      .catch(function () {
        setText("live-state", "could not reach the server; retrying");
        setTimeout(tick, every * 4);
      });
  }
  setTimeout(tick, every);
})();
