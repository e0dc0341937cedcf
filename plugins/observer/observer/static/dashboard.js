"use strict";
// Renders the four views from /api/data. Every value goes in through textContent or
// setAttribute, never through HTML parsing, so log contents cannot inject markup.
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const VIEWS = ["map", "breakdown", "feed", "aggregate"];

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function show(view) {
    for (const name of VIEWS) {
      document.getElementById("view-" + name).hidden = name !== view;
      document.getElementById("tab-" + name).setAttribute("aria-selected", String(name === view));
    }
    document.body.dataset.view = view;
  }

  // A view is named by the address (#feed, or ?view=feed), so every view can be linked to.
  function linkedView() {
    const fromHash = window.location.hash.slice(1);
    const fromQuery = new URLSearchParams(window.location.search).get("view");
    for (const name of [fromHash, fromQuery]) if (VIEWS.includes(name)) return name;
    return VIEWS[0];
  }

  function renderSource(data) {
    document.getElementById("source").textContent = "Reading " + data.data_dir;
    const empty = data.aggregate.totals.episodes === 0;
    document.getElementById("empty-state").hidden = !empty;
    document.getElementById("empty-folder").textContent = data.has_log
      ? "The log in " + data.data_dir + " holds no episodes yet."
      : "There is no observer log in " + data.data_dir + " yet.";
  }

  function renderMap(map) {
    const graph = document.getElementById("map-graph");
    graph.replaceChildren();
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
      markerWidth: 8, markerHeight: 8, orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9aa4b5" }));
    defs.appendChild(marker);
    graph.appendChild(defs);
    const count = map.nodes.length;
    const most = Math.max(1, ...map.nodes.map((node) => node.episodes));
    const places = new Map();
    map.nodes.forEach((node, index) => {
      const angle = (2 * Math.PI * index) / Math.max(count, 1) - Math.PI / 2;
      const radius = count === 1 ? 0 : 190;
      places.set(node.id, { x: 400 + radius * Math.cos(angle), y: 260 + radius * Math.sin(angle),
        r: 14 + 26 * Math.sqrt(node.episodes / most) });
    });
    for (const edge of map.edges) {
      const from = places.get(edge.source), to = places.get(edge.target);
      if (!from || !to) continue;
      const dx = to.x - from.x, dy = to.y - from.y, length = Math.hypot(dx, dy) || 1;
      graph.appendChild(svg("line", {
        x1: from.x + (dx / length) * from.r, y1: from.y + (dy / length) * from.r,
        x2: to.x - (dx / length) * to.r, y2: to.y - (dy / length) * to.r,
        "data-source": edge.source, "data-target": edge.target, "data-count": edge.count }));
    }
    for (const node of map.nodes) {
      const place = places.get(node.id);
      const group = svg("g", { class: "node", "data-node": node.id, "data-episodes": node.episodes });
      group.appendChild(svg("circle", { cx: place.x, cy: place.y, r: place.r }));
      group.appendChild(svg("text", { x: place.x, y: place.y + place.r + 14 },
        node.id + " (" + node.episodes + ")"));
      graph.appendChild(group);
    }
  }

  function renderBreakdown(rows) {
    const body = document.querySelector("#breakdown-table tbody");
    body.replaceChildren();
    for (const row of rows) {
      const line = el("tr", { "data-node": row.node });
      const cells = [row.node, row.episodes, row.provenance.user_directed_method,
        row.provenance.autonomous, row.outcomes.success, row.outcomes.failure,
        row.outcomes.abandoned, row.outcomes.unknown];
      for (const cell of cells) line.appendChild(el("td", {}, cell));
      body.appendChild(line);
    }
  }

  function renderFeed(items) {
    const list = document.getElementById("feed-list");
    list.replaceChildren();
    for (const item of items) {
      const entry = el("li", { "data-episode": item.id });
      entry.appendChild(el("time", {}, item.ts.replace("T", " ").slice(0, 19)));
      entry.appendChild(el("strong", { class: "node" }, item.node));
      entry.appendChild(el("span", { class: "provenance" }, item.provenance));
      entry.appendChild(el("span", { class: "outcome outcome-" + item.outcome }, item.outcome));
      entry.appendChild(el("span", { class: "size" }, item.tool_calls + " tool calls"));
      if (item.harness) entry.appendChild(el("span", { class: "harness" }, item.harness));
      entry.appendChild(el("code", { class: "episode-id" }, item.id));
      list.appendChild(entry);
    }
  }

  function renderAggregate(aggregate) {
    const bars = document.getElementById("aggregate-bars");
    bars.replaceChildren();
    const most = Math.max(1, ...aggregate.days.map((day) => day.episodes));
    for (const day of aggregate.days) {
      const bar = el("div", { class: "bar", title: day.period, "data-day": day.period,
        "data-episodes": day.episodes });
      bar.style.height = Math.round((130 * day.episodes) / most) + "px";
      bar.appendChild(el("span", {}, day.episodes));
      // The day under its bar (MM-DD): the period is an ISO date.
      bar.appendChild(el("small", { class: "day" }, String(day.period).slice(5)));
      bars.appendChild(bar);
    }
    const body = document.querySelector("#aggregate-table tbody");
    body.replaceChildren();
    for (const month of aggregate.months) {
      const line = el("tr", { "data-month": month.period });
      const cells = [month.period, month.episodes, month.outcomes.success, month.outcomes.failure,
        month.outcomes.abandoned, month.outcomes.unknown,
        Math.round(month.user_directed_share * 100) + "%", month.mean_tool_calls, month.errors];
      for (const cell of cells) line.appendChild(el("td", {}, cell));
      body.appendChild(line);
    }
  }

  async function load() {
    const response = await fetch("/api/data", { cache: "no-store" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    const data = await response.json();
    renderMap(data.map);
    renderBreakdown(data.breakdown);
    renderFeed(data.feed);
    renderAggregate(data.aggregate);
    renderSource(data);
    const totals = data.aggregate.totals;
    document.getElementById("summary").textContent =
      plural(totals.episodes, "episode") + ", " + plural(map_nodes(data), "node") + ", " +
      plural(totals.errors, "observer error");
    document.body.dataset.loaded = "true";
  }

  function plural(count, noun) {
    return count + " " + noun + (count === 1 ? "" : "s");
  }

  function map_nodes(data) {
    return data.map.nodes.length;
  }

  document.addEventListener("DOMContentLoaded", () => {
    for (const name of VIEWS) {
      document.getElementById("tab-" + name).addEventListener("click", () => {
        // A new history entry: the address becomes a link to the view and Back returns.
        if (window.location.hash !== "#" + name) window.location.hash = name;
        show(name);
      });
    }
    window.addEventListener("hashchange", () => show(linkedView()));
    show(linkedView());
    load().catch((error) => {
      document.getElementById("summary").textContent = "Could not load the log: " + error.message;
      document.body.dataset.loaded = "error";
    });
  });
})();
