// skewlens web view: reads the JSON API of the server that serves it and
// draws, per job, its incidents, the changes ready to apply for the open
// ones (GET /v1/actions/{job_id}), a heat map of subtasks × windows per
// task (busy time, and back-pressure apart), the hot keys over time and
// the current salting plan.
//
// Safety: every string that comes from the API (job, task and key names
// among them) reaches the page as a text node or an attribute value set
// through the DOM (textContent, setAttribute), never as markup, so a name
// like "<script>" shows as itself. The server's Content-Security-Policy
// allows no inline script as a second line of defence.
"use strict";

(function () {
  const REFRESH_MS = 10000;
  // LIMIT is the API's maximum page (serve.MaxLimit).
  const LIMIT = 1000;
  // MAX_WINDOWS bounds the columns of a heat map: the newest ones.
  const MAX_WINDOWS = 60;
  // SHOW_CHARS bounds how much of a name is drawn; the full name (up to
  // TITLE_CHARS) is in the element's tooltip.
  const SHOW_CHARS = 120;
  const TITLE_CHARS = 2000;
  const SVG = "http://www.w3.org/2000/svg";

  // shown makes a name safe to draw as text: control characters become
  // visible escapes (a newline in a job name must not break a line) and
  // long names are cut.
  function shown(s, max) {
    s = String(s === undefined || s === null ? "" : s);
    s = s.replace(/[\u0000-\u001f\u007f]/g, (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
    max = max || SHOW_CHARS;
    return s.length > max ? s.slice(0, max) + "…" : s;
  }

  // el builds an element; attrs are set with setAttribute (class via
  // className), children that are strings become text nodes.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // name draws a name cut to SHOW_CHARS with its full text as tooltip.
  function name(s, cls) {
    return el("span", { class: "name " + (cls || ""), title: shown(s, TITLE_CHARS) }, shown(s));
  }

  // jobLabel names a run of a job as skew.JobLabel does: its name and
  // the first 8 characters of its id, "orders (3f2a1c9e)", so two runs of
  // one job (Flink gives each submission a new id) read apart.
  function jobLabel(nm, id) {
    const short = [...String(id || "")].slice(0, 8).join("");
    if (!nm) return short;
    return short ? nm + " (" + short + ")" : nm;
  }

  const pad = (n) => String(n).padStart(2, "0");
  function clock(ms) {
    const d = new Date(ms);
    return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
  }
  function stamp(ms) {
    const d = new Date(ms);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " + clock(ms) + " UTC";
  }
  function duration(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + pad(s % 60) + "s";
    return Math.floor(s / 3600) + "h" + pad(Math.floor((s % 3600) / 60)) + "m";
  }
  const pct = (x) => (100 * x).toFixed(1) + "%";
  // shareText writes a share with its 95 % margin as the alerts and the
  // engine's summaries do (alert.ShareText): "18% ± 3" (give or take 3
  // points), one decimal under 1 % ("0.4% ± 0.2"), "<0.1" for a margin
  // that would show as 0.0; without a margin (findings written before
  // the engine gave one) the share as before, "31.0%".
  function shareText(share, margin) {
    if (!(margin > 0)) return pct(share);
    const f = (x) => (Math.abs(x) < 0.01 ? (100 * x).toFixed(1) : (100 * x).toFixed(0));
    let m = f(margin);
    if (m === "0.0") m = "<0.1";
    return f(share) + "% \u00b1 " + m;
  }
  const causeBadge = (cause) => el("span", { class: "badge cause " + shown(cause, 40).replace(/[^a-z_]/g, "") }, shown(cause, 40));

  async function getJSON(path) {
    const resp = await fetch(path, { headers: { Accept: "application/json" } });
    if (!resp.ok) {
      let msg = resp.status + " " + resp.statusText;
      try { msg += ": " + (await resp.json()).error; } catch (e) { /* not JSON */ }
      throw new Error("GET " + path + ": " + msg);
    }
    return resp.json();
  }
  const q = (params) => new URLSearchParams(params).toString();

  // load reads everything the page shows. Requests run one after another:
  // the server refuses queries beyond its concurrency bound rather than
  // queueing them, and a page must not take all of it.
  async function load() {
    const [incidents, plans, recent] = [
      (await getJSON("v1/incidents?" + q({ limit: LIMIT }))).incidents || [],
      (await getJSON("v1/salting")).plans || [],
      (await getJSON("v1/stats?" + q({ limit: LIMIT }))).stats || [],
    ];
    const jobs = new Map();
    const job = (id, nm) => {
      if (!jobs.has(id)) jobs.set(id, { id, name: nm || "", incidents: [], plans: [], stats: [], saturation: [], hotKeys: [], actions: [] });
      const j = jobs.get(id);
      if (!j.name && nm) j.name = nm;
      return j;
    };
    for (const i of incidents) job(i.job_id, i.job_name).incidents.push(i);
    for (const p of plans) job(p.job_id, p.job_name).plans.push(p);
    for (const s of recent) job(s.job_id, s.job_name);
    for (const j of jobs.values()) {
      const id = { job_id: j.id, limit: LIMIT };
      j.stats = (await getJSON("v1/stats?" + q(id))).stats || [];
      j.saturation = (await getJSON("v1/findings?" + q({ ...id, kind: "saturation" }))).findings || [];
      j.hotKeys = (await getJSON("v1/findings?" + q({ ...id, kind: "hot_key" }))).findings || [];
      if (openCount(j)) j.actions = (await getJSON("v1/actions/" + encodeURIComponent(j.id))).actions || [];
    }
    return [...jobs.values()];
  }

  const openCount = (j) => j.incidents.filter((i) => i.state === "open").length;

  // order puts the jobs with open incidents first (most first), then by
  // name and id, so the page reads the same on every refresh.
  function order(jobs) {
    return jobs.sort((a, b) => openCount(b) - openCount(a) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  function render(jobs) {
    const nav = document.getElementById("jobs-nav");
    const main = document.getElementById("jobs");
    const open = jobs.reduce((n, j) => n + openCount(j), 0);
    document.getElementById("status").textContent =
      jobs.length + " jobs, " + open + " open incidents · updated " + clock(Date.now()) + " UTC";
    nav.replaceChildren(...jobs.map((j, n) => el("a", { href: "#job-" + n, class: openCount(j) ? "has-open" : "", title: shown(jobLabel(j.name, j.id), TITLE_CHARS) },
      jobLabel(shown(j.name, 40), shown(j.id)) + (openCount(j) ? " · " + openCount(j) + " open" : ""))));
    main.replaceChildren(...jobs.map((j, n) => renderJob(j, n)));
  }

  function renderJob(j, n) {
    const sec = el("section", { class: "job", id: "job-" + n, "data-job-id": j.id, "data-job-name": j.name, "data-open": openCount(j) });
    sec.append(el("h2", {}, name(j.name || j.id), el("span", { class: "id" }, shown(j.id)),
      openCount(j) ? el("span", { class: "badge open" }, openCount(j) + " open incident" + (openCount(j) > 1 ? "s" : "")) : el("span", { class: "muted" }, "no open incident")));
    sec.append(renderIncidents(j));
    if (j.actions.length) sec.append(renderActions(j));
    const tasks = new Map();
    const task = (t) => { if (!tasks.has(t)) tasks.set(t, { name: t, stats: [], saturation: [], hotKeys: [], plans: [] }); return tasks.get(t); };
    for (const s of j.stats) task(s.task_name).stats.push(s);
    for (const f of j.saturation) task(f.task_name).saturation.push(f);
    for (const f of j.hotKeys) task(f.task_name).hotKeys.push(f);
    for (const p of j.plans) task(p.task_name).plans.push(p);
    const names = [...tasks.keys()].sort((a, b) => (tasks.get(b).saturation.length - tasks.get(a).saturation.length) || a.localeCompare(b));
    for (const t of names) sec.append(renderTask(j, tasks.get(t)));
    return sec;
  }

  function renderIncidents(j) {
    const box = el("div", { class: "incidents" }, el("h3", {}, "Incidents"));
    if (!j.incidents.length) {
      box.append(el("p", { class: "muted" }, "None in the last 24 hours."));
      return box;
    }
    const ins = [...j.incidents].sort((a, b) => (a.state === "open" ? 0 : 1) - (b.state === "open" ? 0 : 1) || b.start - a.start || a.id.localeCompare(b.id));
    box.append(timeline(ins));
    const rows = ins.map((i) => el("tr", { class: "incident " + (i.state === "open" ? "open" : "closed"), "data-incident-id": i.id, "data-cause": i.cause, "data-subtask": i.subtask },
      el("td", {}, i.state),
      el("td", {}, causeBadge(i.cause)),
      el("td", {}, name(i.task_name)),
      el("td", { class: "num" }, i.subtask >= 0 ? String(i.subtask) : "all"),
      el("td", {}, i.key ? name(i.key) : ""),
      el("td", { class: "num", title: stamp(i.start) }, clock(i.start)),
      el("td", { class: "num" }, duration((i.end || i.last_seen) - i.start) + (i.state === "open" ? " so far" : "")),
      el("td", { class: "num" }, String(i.windows)),
      el("td", { class: "num" }, i.busy_ms_per_s && i.busy_ms_per_s.n ? Math.round(i.busy_ms_per_s.peak) + " ms/s" : ""),
      el("td", { class: "num" }, i.share && i.share.n ? pct(i.share.peak) : ""),
      el("td", { class: "summary" }, ...(receipt(i) ? [el("div", { class: "receipt" }, receipt(i))] : []), shown(i.summary || "", 600))));
    box.append(el("table", { class: "list incidents" },
      el("thead", {}, el("tr", {}, ["state", "cause", "task", "subtask", "key", "start", "duration", "windows", "peak busy", "peak share", "latest summary"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)));
    return box;
  }

  // renderActions draws the changes ready to apply for the job's open
  // incidents, as GET /v1/actions/{job_id} gives them: each form in a
  // block of its own, to copy as it is.
  function renderActions(j) {
    const box = el("div", { class: "actions" }, el("h3", {}, "Ready to apply"));
    const form = (label, kind, text) => el("div", { class: "form" }, el("span", { class: "muted" }, label),
      el("pre", { "data-form": kind, title: label }, String(text || "").split("\n").map((l) => shown(l, 4000)).join("\n")));
    for (const a of j.actions) {
      const where = a.task_name ? [name(a.task_name), a.subtask >= 0 ? " #" + a.subtask : ""] : [];
      const div = el("div", { class: "action", "data-kind": a.kind, "data-incident-id": a.incident_id || "" });
      if (a.rescale) {
        const r = a.rescale;
        div.append(el("h4", {}, causeBadge(a.cause), ...where, " rescale " + r.parallelism + " → " + r.recommended_parallelism));
        div.append(el("p", { class: "muted" }, r.divides_max_parallelism
          ? r.recommended_parallelism + " divides the max parallelism " + r.max_parallelism + ": every subtask owns as many key groups."
          : "No divisor of the max parallelism " + r.max_parallelism + " is near: key groups stay uneven; raise the max parallelism too.",
        (r.chainable_with || []).length ? " At " + r.recommended_parallelism + " it matches " + r.chainable_with.map((t) => JSON.stringify(shown(t, 60))).join(", ") +
          ": over a forward edge Flink can chain them." : ""));
        if (r.forms) {
          const f = r.forms;
          div.append(form("flink run (Flink 1.x, resubmitting from a savepoint)", "flink_run", f.flink_run),
            form("pipeline.jobvertex-parallelism-overrides", "overrides", f.overrides),
            form("FlinkDeployment patch (kubectl patch flinkdeployment NAME --type merge --patch-file FILE)", "flink_deployment_patch", f.flink_deployment_patch),
            form("Flink 2.x, adaptive scheduler: PUT " + shown(f.resource_requirements_path, 200), "resource_requirements", JSON.stringify(f.resource_requirements)),
            el("p", { class: "legend" }, shown(f.note, 600)));
        } else {
          div.append(el("p", { class: "muted" }, "The metrics carry no task_id: find the vertex id in Flink's GET /jobs/" + shown(j.id) + " (vertices[].id)."));
        }
      } else if (a.salting_plan) {
        const p = a.salting_plan;
        div.append(el("h4", {}, causeBadge(a.cause), ...where, p.in_force ? " salting plan v" + p.version + " in force" : " no salting plan in force yet"));
        if (p.in_force) div.append(el("p", {}, el("a", { href: p.url.replace(/^\//, "") }, "GET " + shown(p.url, 300)), " · salts " + (p.hot_keys || []).map((k) => JSON.stringify(shown(k, 40))).join(", ") + " for parallelism " + p.parallelism));
      } else if (a.autoscaler) {
        const x = a.autoscaler;
        div.append(el("h4", {}, el("span", { class: "badge" }, "autoscaler"), " keep the Flink autoscaler off " + x.vertices.length + " vertex" + (x.vertices.length === 1 ? "" : "es")));
        if (x.value) div.append(form(x.key, "autoscaler_exclude", x.key + ": " + x.value), form("FlinkDeployment patch", "autoscaler_patch", x.flink_deployment_patch));
        div.append(el("ul", { class: "plain" }, x.vertices.map((v) => el("li", {}, el("code", {}, shown(v.vertex_id)), " ", name(v.task_name), " (" + shown(v.cause, 40) + ", plan v" + v.plan_version + ")")),
          (x.unidentified || []).map((u) => el("li", {}, name(u.task_name), " (its metrics carry no task_id: add its vertex id yourself)"))));
      } else if (a.inspect) {
        const i = a.inspect;
        const ids = [i.host ? "host " + shown(i.host, 80) : "", i.tm_id ? "TaskManager " + shown(i.tm_id, 120) : "", i.task_attempt_id ? "attempt " + shown(i.task_attempt_id, 80) : ""].filter((x) => x);
        div.append(el("h4", {}, causeBadge(a.cause), ...where, " look inside" + (ids.length ? ": " + ids.join(", ") : "")));
        const rq = i.requests || {};
        if (rq.thread_dump) div.append(form("thread dump of the whole TaskManager", "thread_dump", rq.thread_dump));
        if (rq.flame_graph) div.append(form("the subtask's flame graph (rest.flamegraph.enabled: true)", "flame_graph", rq.flame_graph));
        if (rq.subtask) div.append(form("the TaskManager it runs in now (taskmanager-id)", "subtask", rq.subtask));
        if (rq.jstack) div.append(form("without the REST API", "jstack", rq.jstack));
      }
      div.append(el("p", { class: "summary" }, shown(a.reason, 800)));
      box.append(div);
    }
    return box;
  }

  // receipt says why an incident closed when its condition did not just
  // end (its run ended, or a salting plan relieved its subtask, with the
  // evidence before and after), or that its plan is not working: the
  // words of skewlens' -o text (writeIncidentText).
  function receipt(i) {
    const p = i.plan;
    if (p && p.overdue && i.state === "open") return "plan v" + p.version + " not working: served " + duration(i.last_seen - p.at) + " ago";
    if (!i.resolution) return "";
    let s = i.resolution;
    if (p && p.relieved_at) {
      s += ": busy " + Math.round(p.busy_before_ms_per_s) + " → " + Math.round(p.busy_after_ms_per_s || 0) + " ms/s";
      if (p.key_subtasks > 1) s += ", key on " + p.key_subtasks + " subtasks";
      s += ", " + duration(p.relieved_at - p.at) + " after the plan";
    }
    return s;
  }

  // timeline draws one bar per incident on a common time axis; open
  // incidents reach the right edge.
  function timeline(ins) {
    const lo = Math.min(...ins.map((i) => i.start));
    const hi = Math.max(...ins.map((i) => i.end || i.last_seen));
    const span = Math.max(hi - lo, 1000);
    const W = 1000, L = 230, R = 10, row = 18, top = 16;
    const H = top + row * ins.length + 4;
    const s = svg("svg", { class: "timeline", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "incidents timeline" });
    const x = (t) => L + ((t - lo) / span) * (W - L - R);
    s.append(svg("text", { x: L, y: 11, class: "axis" }, stamp(lo)));
    s.append(svg("text", { x: W - R, y: 11, class: "axis", "text-anchor": "end" }, stamp(hi)));
    ins.forEach((i, n) => {
      const y = top + n * row;
      const label = shown(i.cause + " " + (i.subtask >= 0 ? "#" + i.subtask + " " : "") + (i.key ? shown(i.key, 24) + " " : "") + i.task_name, 34);
      s.append(svg("text", { x: 0, y: y + 12 }, label));
      const x0 = x(i.start), x1 = Math.max(x(i.end || i.last_seen), x0 + 2);
      const bar = svg("rect", { x: x0, y: y + 3, width: x1 - x0, height: row - 6, rx: 2, opacity: i.state === "open" ? 1 : 0.45, class: "bar" });
      bar.style.fill = "var(--" + (i.cause || "").replace(/[^a-z_]/g, "") + ", #868e96)";
      bar.append(svg("title", {}, shown(i.cause) + " · " + i.state + " · " + stamp(i.start) + " for " + duration((i.end || i.last_seen) - i.start)));
      s.append(bar);
    });
    return s;
  }

  function renderTask(j, t) {
    const box = el("div", { class: "task", "data-task-name": t.name });
    // The hot subtask: the newest saturation finding that names one.
    const sat = [...t.saturation].sort((a, b) => b.window_end - a.window_end);
    const latest = sat[0];
    const hot = sat.find((f) => f.subtask_index !== null && f.subtask_index !== undefined);
    const head = el("h4", {}, name(t.name));
    if (latest) {
      head.append(causeBadge(latest.cause), el("span", { class: "hot-subtask" },
        hot ? "hot subtask " + hot.subtask_index + " (" + shown(hot.cause, 40) + ")" : "all subtasks"));
    }
    box.append(head);
    if (latest && latest.summary) box.append(el("p", { class: "summary" }, shown(latest.summary, 800)));
    if (t.stats.length) box.append(heatmaps(t, hot));
    if (t.hotKeys.length) box.append(hotKeys(t));
    for (const p of t.plans) box.append(plan(p));
    return box;
  }

  // windows returns the newest MAX_WINDOWS window starts of rows, oldest first.
  function windows(rows) {
    const ws = [...new Set(rows.map((r) => r.window_start))].sort((a, b) => a - b);
    return ws.slice(-MAX_WINDOWS);
  }

  function heatmaps(t, hot) {
    const ws = windows(t.stats);
    const subtasks = [...new Set(t.stats.map((s) => s.subtask_index))].sort((a, b) => a - b);
    const cell = new Map(t.stats.map((s) => [s.subtask_index + "@" + s.window_start, s.stats || {}]));
    const flagged = new Set(t.saturation.filter((f) => f.subtask_index !== null).map((f) => f.subtask_index + "@" + f.window_start));
    const hotIndex = hot ? hot.subtask_index : -1;
    const map = (metric, label, hue) => {
      const rows = subtasks.map((st) => el("tr", { class: st === hotIndex ? "hot" : "", "data-subtask": st, "data-cause": st === hotIndex ? hot.cause : null },
        el("th", { scope: "row" }, "subtask " + st),
        ws.map((w) => {
          const s = cell.get(st + "@" + w);
          const v = s ? s[metric] || 0 : null;
          const td = el("td", {
            class: flagged.has(st + "@" + w) ? "flag" : "",
            "data-window": w, "data-value": v === null ? "" : v,
            title: "subtask " + st + " · " + stamp(w) + " · " + (v === null ? "no report" : Math.round(v) + " ms/s " + label),
          });
          td.style.background = v === null ? "#f1f3f5" : "hsl(" + hue + ", 80%, " + (97 - 52 * Math.min(v, 1000) / 1000) + "%)";
          return td;
        })));
      return el("figure", {}, el("figcaption", {}, label + " (ms/s), subtasks × windows"),
        el("table", { class: "heatmap " + metric.replace(/_ms_per_s$/, "") }, el("tbody", {}, rows),
          el("tfoot", {}, el("tr", {}, el("th", {}), el("th", { colspan: Math.max(ws.length, 1) }, ws.length ? clock(ws[0]) + " → " + clock(ws[ws.length - 1]) + " UTC" : "")))));
    };
    return el("div", { class: "maps" },
      map("busy_ms_per_s", "busy", 5),
      map("backpressured_ms_per_s", "back-pressured", 215),
      el("p", { class: "legend" }, "Darker is more. An outlined cell is a window with a saturation finding on that subtask; ▶ marks the hot subtask."));
  }

  const hasSubtask = (f) => f.subtask_index !== null && f.subtask_index !== undefined;
  // subtaskText says where a hot key is: its subtask, or, for a salted
  // key (a plan is applied; its finding names no subtask, subtask_index
  // is null), the subtasks its samples arrived at; else nothing.
  function subtaskText(f) {
    if (hasSubtask(f)) return String(f.subtask_index);
    const spread = f.subtasks || [];
    return spread.length ? "salted: " + shown(spread.join(", "), 40) : "";
  }

  function hotKeys(t) {
    const ws = windows(t.hotKeys);
    const keys = new Map();
    for (const f of t.hotKeys) {
      if (!keys.has(f.key)) keys.set(f.key, new Map());
      keys.get(f.key).set(f.window_start, f);
    }
    const rows = [...keys.entries()].map(([k, byWindow]) => {
      const newest = [...byWindow.values()].sort((a, b) => b.window_end - a.window_end)[0];
      return { k, byWindow, newest };
    }).sort((a, b) => b.newest.window_end - a.newest.window_end || b.newest.share - a.newest.share || a.k.localeCompare(b.k));
    const body = rows.slice(0, 20).map(({ k, byWindow, newest }) => el("tr", { class: "hot-key", "data-key": k, "data-rule": newest.rule },
      el("td", {}, name(k)),
      el("td", { class: "num share", title: newest.share_margin > 0 ? "share of the task's sampled records, ± half its 95 % interval (percentage points)" : null },
        shareText(newest.share, newest.share_margin)),
      el("td", { class: "num subtask-share", title: newest.subtask_share > 0 && hasSubtask(newest) ? "share of subtask " + newest.subtask_index + "'s sampled records" +
        (newest.excess_explained > 0 ? "; " + (100 * newest.excess_explained).toFixed(0) + "% of its input above its peers' median" : "") : null },
        newest.subtask_share > 0 ? shareText(newest.subtask_share, newest.subtask_share_margin) : ""),
      el("td", { class: "num subtask", title: (newest.subtasks || []).length && !hasSubtask(newest) ? "a salted key: its samples arrived at these subtasks" : null }, subtaskText(newest)),
      el("td", {}, newest.saturated === false && !newest.skews_subtask ? el("span", { class: "muted" }, "task not saturated: history only") : "actionable"),
      el("td", {}, el("table", { class: "heatmap shares" }, el("tbody", {}, el("tr", {}, ws.map((w) => {
        const f = byWindow.get(w);
        const td = el("td", { title: f ? stamp(w) + " · " + shareText(f.share, f.share_margin) + " of samples" + (subtaskText(f) ? " · subtask " + subtaskText(f) : "") : stamp(w) + " · not hot" });
        td.style.background = f ? "hsl(140, 60%, " + (92 - 50 * Math.min(f.share, 1)) + "%)" : "#f1f3f5";
        return td;
      })))))));
    return el("div", { class: "hot-keys" }, el("h3", {}, "Hot keys over time"),
      el("table", { class: "list compact" }, el("thead", {}, el("tr", {}, ["key", "latest share", "of its subtask", "subtask", "", "share per window"].map((h) => el("th", {}, h)))), el("tbody", {}, body)),
      el("p", { class: "legend" }, "A share is of the sampled records, of the task and of the key's saturated subtask; 18% \u00b1 3 is 18 % give or take 3 percentage points (95 % interval). A share without \u00b1 is from before the engine gave margins."));
  }

  function plan(p) {
    const rows = (p.hot_keys || []).map((k) => el("tr", { class: "plan-key", "data-key": k.key },
      el("td", {}, name(k.key)),
      el("td", { class: "num" }, pct(k.share)),
      el("td", { class: "num" }, String(k.subtask)),
      el("td", {}, el("ul", { class: "salted" }, (k.salted || []).map((s) => el("li", { "data-subtask": s.subtask, title: shown(s.key, TITLE_CHARS) + " → subtask " + s.subtask },
        // The salt is what tells salted keys apart: keep it visible when
        // a long key is cut.
        (s.key.startsWith(k.key) ? shown(k.key, 24) + shown(s.key.slice(k.key.length), 16) : shown(s.key, 40)) + " → " + s.subtask))))));
    return el("div", { class: "plan" },
      el("h3", {}, "Salting plan v" + p.version + " (" + shown(p.source, 20) + (p.pinned ? ", pinned" : "") + ")"),
      el("p", { class: "muted" }, "Parallelism " + p.parallelism + " (max " + p.max_parallelism + "); predicted max/mean load " + p.max_over_mean_before + " → " + p.max_over_mean_after +
        "; salted key = key + " + JSON.stringify(shown(p.separator, 10)) + " + salt; expires " + stamp(Date.parse(p.expires_at)) + "."),
      el("table", { class: "list" }, el("thead", {}, el("tr", {}, ["hot key", "share", "subtask now", "salted keys → subtask"].map((h) => el("th", {}, h)))), el("tbody", {}, rows)));
  }

  let timer = null;
  async function refresh() {
    const errBox = document.getElementById("error");
    try {
      render(order(await load()));
      errBox.hidden = true;
      document.body.dataset.loaded = String(Date.now());
    } catch (e) {
      // Keep what is drawn; say what failed.
      errBox.textContent = String(e && e.message ? e.message : e);
      errBox.hidden = false;
    }
    clearTimeout(timer);
    if (document.getElementById("live").checked) timer = setTimeout(refresh, REFRESH_MS);
  }

  document.addEventListener("DOMContentLoaded", () => {
    const live = document.getElementById("live");
    if (new URLSearchParams(location.search).get("refresh") === "0") live.checked = false;
    live.addEventListener("change", () => { clearTimeout(timer); if (live.checked) refresh(); });
    refresh();
  });
})();
