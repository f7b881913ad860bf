/* The run viewer and the side-by-side pages of the published leaderboard (leaderboard/viewer): the
   shared part. Pages load viewer.js first, then their own script (viewer-run.js, viewer-compare.js),
   which registers its page in window.factrlViewer.pages; this file starts it once the page is parsed.

   Data comes in shards next to the page (viewer/shards.py): each is a script that calls
   factrlShard(key, data); a shard is loaded when it is first shown, never before. Every text from
   data reaches the page through textContent or createTextNode, never as HTML, so a completion
   that contains markup or a script is shown as those characters. No network: the page's
   Content-Security-Policy allows scripts from the site's own files only. */
(function () {
  "use strict";
  var body = document.body;
  var ROOT = body.getAttribute("data-root") || "";
  var pending = {}, cache = {}, order = [];
  var CACHE_MAX = 40;

  window.factrlLoaded = [];  // every shard key loaded, in order (what a test or benchmark reads)
  window.factrlShard = function (key, data) {
    window.factrlLoaded.push(key);
    var waiting = pending[key];
    if (waiting) { delete pending[key]; waiting.resolve(data); }
  };

  function load(key) {
    if (cache[key]) { return cache[key]; }
    cache[key] = new Promise(function (resolve, reject) {
      pending[key] = {resolve: resolve, reject: reject};
      var script = document.createElement("script");
      script.src = ROOT + key;
      script.onerror = function () {
        delete pending[key]; delete cache[key];
        reject(new Error("cannot load " + key));
      };
      script.onload = function () { script.remove(); };
      document.head.appendChild(script);
    });
    order.push(key);
    while (order.length > CACHE_MAX) { delete cache[order.shift()]; }
    return cache[key];
  }

  // -- small DOM helpers: text only ----------------------------------------------------------
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function fmt(value, digits) {
    if (value === null || value === undefined || value === "") { return "—"; }
    if (typeof value === "number") { return (value > 0 ? "+" : "") + value.toFixed(digits === undefined ? 3 : digits); }
    return String(value);
  }
  function plain(value) {
    if (value === null || value === undefined) { return "—"; }
    if (typeof value === "number") { return String(Math.round(value * 1000) / 1000); }
    return String(value);
  }
  function chip(text, cls) { return el("span", "chip" + (cls ? " " + cls : ""), text); }
  function sign(value) { return typeof value !== "number" || value === 0 ? "" : (value > 0 ? "pos" : "neg"); }
  function params() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var kv = part.split("=");
      if (kv.length === 2) { out[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]); }
    });
    return out;
  }
  function fail(node, error) { node.textContent = ""; node.appendChild(el("p", "bad", String(error && error.message || error))); }
  function template(path, values) {
    return path.replace(/\{(\w+)\}/g, function (_, name) { return encodeURIComponent(String(values[name])); });
  }
  function jsonDetails(label, value) {
    var details = el("details");
    details.appendChild(el("summary", null, label));
    details.addEventListener("toggle", function () {
      if (details.open && details.children.length === 1) {
        details.appendChild(el("pre", "json", JSON.stringify(value, null, 2)));
      }
    });
    return details;
  }

  // Sentence colours: green pays, red costs, grey zero; the scale is the run's largest |value|.
  function colour(value, scale) {
    if (typeof value !== "number") { return ""; }
    var t = Math.max(-1, Math.min(1, value / (scale || 1)));
    if (Math.abs(t) < 1e-9) { return "rgba(148, 163, 184, 0.35)"; }
    var alpha = (0.18 + 0.55 * Math.abs(t)).toFixed(3);
    return t > 0 ? "rgba(22, 163, 74, " + alpha + ")" : "rgba(220, 38, 38, " + alpha + ")";
  }

  function verdict(entry) {
    if (!entry) { return el("span", "missing-field", "not evaluated"); }
    if (entry.na) { return el("span", "na", "— abstained"); }
    if (entry.correct === undefined) { return el("span", "missing-field", "—"); }
    return entry.correct ? el("span", "ok", "✓ right") : el("span", "bad", "✗ wrong");
  }
  function flagList(node, entry) {
    (entry && entry.flags || []).forEach(function (f) { node.appendChild(el("span", "flag", "⚑ " + f)); });
  }

  function paged(container, total, pageSize, render) {
    // A pager over `total` filtered positions; render(from, to) draws them.
    var controls = container.querySelector(".pager");
    controls.textContent = "";
    var prev = el("button", null, "◀"), next = el("button", null, "▶"), status = el("span", "status");
    [prev, status, next].forEach(function (n) { controls.appendChild(n); });
    var pages = Math.max(1, Math.ceil(total / pageSize));
    var state = {page: 0};
    function go(page) {
      state.page = Math.max(0, Math.min(pages - 1, page));
      prev.disabled = state.page === 0; next.disabled = state.page === pages - 1;
      status.textContent = total ? "page " + (state.page + 1) + " of " + pages + " · " + total + " item(s)" : "no item matches";
      return render(state.page * pageSize, Math.min(total, (state.page + 1) * pageSize));
    }
    prev.addEventListener("click", function () { go(state.page - 1); });
    next.addEventListener("click", function () { go(state.page + 1); });
    return go;
  }

  function itemsAt(positions, pageSize, path, name) {
    // The entries at the given sample positions, loading only the shards they live in.
    var shards = {};
    positions.forEach(function (i) { shards[Math.floor(i / pageSize)] = true; });
    var keys = Object.keys(shards).map(Number);
    return Promise.all(keys.map(function (k) { return load(template(path, {set: name, page: k})); })).then(function (loaded) {
      var byShard = {};
      keys.forEach(function (k, j) { byShard[k] = loaded[j]; });
      return positions.map(function (i) { return byShard[Math.floor(i / pageSize)].items[i % pageSize]; });
    });
  }

  window.factrlViewer = {
    pages: {}, load: load, el: el, fmt: fmt, plain: plain, chip: chip, sign: sign, params: params, fail: fail,
    template: template, jsonDetails: jsonDetails, colour: colour, verdict: verdict, flagList: flagList,
    paged: paged, itemsAt: itemsAt
  };

  // -- start, once the page's own script (deferred after this one) has registered -------------
  document.addEventListener("DOMContentLoaded", function () {
    var kind = body.getAttribute("data-page");
    load(body.getAttribute("data-index")).then(function (index) {
      return window.factrlViewer.pages[kind](index);
    }).then(function () {
      // Milliseconds since navigation started, when the first view is drawn (benchmarks/bench_viewer.py).
      body.setAttribute("data-ready", String(Math.round(performance.now())));
    }, function (error) {
      var main = document.querySelector("main") || body;
      main.insertBefore(el("p", "bad", "The viewer could not load its data: " + (error && error.message || error)),
                        main.firstChild);
      body.setAttribute("data-ready", "error");
    });
  });
  window.addEventListener("hashchange", function () { location.reload(); });
}());