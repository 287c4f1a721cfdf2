// The console's live parts: the events page's feed (with filters and a
// pause) and the pages that redraw themselves when the fabric changes. Every
// page works without this script; it only spares the reload.
"use strict";
(function () {
  const page = document.body.dataset.page;
  // Which event kinds make which page redraw itself.
  const redraw = {
    fabric: ["session", "record", "trust"],
    zones: ["zoning", "record", "restore"],
    matrix: ["zoning", "record", "restore"],
    devices: ["record", "zoning", "trust"],
    device: ["record", "zoning"],
    history: ["zoning", "lossless", "restore", "conflict"],
    lossless: ["lossless"],
  };
  if (!window.EventSource) return;

  function show(el) { if (el) el.hidden = false; }

  if (page === "events") {
    const table = document.getElementById("events");
    const body = table.tBodies[0];
    const form = document.getElementById("event-filters");
    const pause = document.getElementById("pause");
    const status = document.getElementById("live-status");
    const kind = form.elements.kind.value;
    const text = form.elements.q.value.toLowerCase();
    let paused = false;
    let held = [];
    const attrs = (e) => Object.entries(e.attributes || {})
      .filter(([k, v]) => k !== "identity" && v !== "").map(([k, v]) => k + "=" + v).sort().join(" ");
    const matches = (e) => (!kind || e.kind === kind) &&
      (!text || (e.subject + " " + e.message + " " + (e.identity || "") + " " + attrs(e)).toLowerCase().includes(text));
    function add(e) {
      const tr = document.createElement("tr");
      tr.dataset.kind = e.kind;
      tr.className = "fresh";
      const t = new Date(e.time).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
      for (const v of [e.seq || "", t, e.kind, e.subject, e.message, e.identity || "", attrs(e)]) {
        const td = document.createElement("td");
        td.textContent = v;
        tr.appendChild(td);
      }
      tr.lastChild.className = "attrs";
      body.insertBefore(tr, body.firstChild);
      while (body.rows.length > 300) body.deleteRow(body.rows.length - 1);
    }
    show(pause);
    pause.addEventListener("click", () => {
      paused = !paused;
      pause.setAttribute("aria-pressed", String(paused));
      pause.textContent = paused ? "Resume (" + held.length + " waiting)" : "Pause";
      status.textContent = paused ? "paused" : "live";
      if (!paused) { held.forEach(add); held = []; }
    });
    const src = new EventSource("/ui/events/stream?epoch=" + table.dataset.epoch + "&after=" + table.dataset.after);
    src.onopen = () => { show(status); status.textContent = paused ? "paused" : "live"; };
    src.onerror = () => { status.textContent = "reconnecting…"; };
    src.onmessage = (m) => {
      const e = JSON.parse(m.data);
      if (!matches(e) && e.kind !== "gap") return;
      if (paused) { held.push(e); pause.textContent = "Resume (" + held.length + " waiting)"; return; }
      add(e);
    };
    return;
  }

  const kinds = redraw[page];
  if (!kinds) return;
  let timer = null;
  async function refresh() {
    timer = null;
    const resp = await fetch(location.href, { headers: { "Accept": "text/html" }, cache: "no-store" });
    if (!resp.ok) return;
    const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
    const fresh = doc.querySelector("main");
    if (fresh) document.querySelector("main").replaceWith(fresh);
    document.querySelectorAll(".live").forEach((el) => { el.hidden = false; });
  }
  const src = new EventSource("/ui/events/stream?from=now");
  src.onopen = () => document.querySelectorAll(".live").forEach((el) => { el.hidden = false; });
  src.onmessage = (m) => {
    const e = JSON.parse(m.data);
    if (kinds.includes(e.kind) && timer === null) timer = setTimeout(refresh, 150);
  };
})();
