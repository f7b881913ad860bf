/* The run viewer and the side-by-side pages of the published leaderboard (leaderboard/viewer).

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

  // -- a run: training rollouts --------------------------------------------------------------
  function coloured(c, scale, info) {
    var box = el("div", "text");
    var text = c.text || "";
    var located = (c.sentences || []).filter(function (s) { return s.start !== null && s.start !== undefined; });
    located.sort(function (a, b) { return a.start - b.start; });
    var cursor = 0;
    located.forEach(function (s) {
      if (s.start < cursor) { return; }  // overlapping echo: shown once
      if (s.start > cursor) { box.appendChild(document.createTextNode(text.slice(cursor, s.start))); }
      var span = el("span", "s" + (typeof s.value === "number" ? "" : " none"), text.slice(s.start, s.end));
      span.style.background = colour(s.value, scale);
      var verdicts = (s.verdicts || []).join(", ");
      span.title = "sentence " + s.i + ": " + (typeof s.value === "number" ? fmt(s.value) : "no value") +
        (verdicts ? " · " + verdicts : "");
      span.setAttribute("data-value", typeof s.value === "number" ? String(s.value) : "");
      span.addEventListener("click", function () {
        Array.prototype.forEach.call(box.querySelectorAll(".s.picked"), function (n) { n.classList.remove("picked"); });
        span.classList.add("picked");
        info.textContent = span.title;
      });
      box.appendChild(span);
      cursor = s.end;
    });
    if (cursor < text.length) { box.appendChild(document.createTextNode(text.slice(cursor))); }
    if (!text) { box.appendChild(el("span", "muted", c.rebuilt ? "(no scored sentence to rebuild the text from)" : "(empty)")); }
    return box;
  }

  function completionNode(c, scale) {
    var node = el("div", "comp");
    node.setAttribute("data-completion", String(c.completion));
    var chips = el("div", "chips");
    chips.appendChild(chip("#" + c.completion));
    if ("reward" in c) { chips.appendChild(chip("reward " + fmt(c.reward), sign(c.reward))); }
    if ("advantage" in c) { chips.appendChild(chip("advantage " + fmt(c.advantage), sign(c.advantage))); }
    if (c.tokens !== undefined && c.tokens !== null) { chips.appendChild(chip(c.tokens + " tokens")); }
    if (c.clipped) { chips.appendChild(chip("clipped at the length limit", "clip")); }
    if (c.no_signal) { chips.appendChild(chip("no signal: " + c.no_signal, "nosig")); }
    if (c.rebuilt) { chips.appendChild(chip("rebuilt from its scored sentences")); }
    Object.keys(c.detail || {}).forEach(function (key) { chips.appendChild(chip(key + ": " + plain(c.detail[key]))); });
    node.appendChild(chips);
    var info = el("div", "small muted");
    node.appendChild(coloured(c, scale, info));
    node.appendChild(info);
    var unplaced = (c.sentences || []).filter(function (s) { return s.start === null || s.start === undefined; });
    if (unplaced.length) {
      var list = el("details");
      list.appendChild(el("summary", null, unplaced.length + " scored sentence(s) not found verbatim in the text"));
      unplaced.forEach(function (s) {
        var line = el("div", "text");
        var span = el("span", "s", s.text || "");
        span.style.background = colour(s.value, scale);
        line.appendChild(span);
        line.appendChild(document.createTextNode("  (" + fmt(s.value) + (s.verdicts && s.verdicts.length ? ", " +
          s.verdicts.join(", ") : "") + ")"));
        list.appendChild(line);
      });
      node.appendChild(list);
    }
    if (c.records && c.records.length) {
      node.appendChild(jsonDetails("verdicts and raw reward records (" + c.records.length + ")", c.records));
    }
    return node;
  }

  function groupNode(g, scale) {
    var node = el("div", "group");
    var head = el("div", "ghead", "Group " + plain(g.group) + (g.process ? " (process " + g.process + ")" : "") + " · ");
    head.appendChild(el("span", "question", g.question || g.row_id || ""));
    node.appendChild(head);
    var rewards = g.completions.map(function (c) { return c.reward; }).filter(function (r) { return typeof r === "number"; });
    var meta = el("div", "small muted", g.completions.length + " completions" +
      (rewards.length ? " · rewards " + fmt(Math.min.apply(null, rewards)) + " … " + fmt(Math.max.apply(null, rewards)) : "") +
      (g.row_id ? " · row " + g.row_id : ""));
    node.appendChild(meta);
    if (g.prompt) {
      var prompt = el("details");
      prompt.appendChild(el("summary", null, "prompt"));
      prompt.appendChild(el("div", "text", g.prompt));
      node.appendChild(prompt);
    }
    g.completions.forEach(function (c) { node.appendChild(completionNode(c, scale)); });
    return node;
  }

  function rollouts(index) {
    var section = document.getElementById("rollouts");
    if (!section) { return null; }
    var view = section.querySelector(".view");
    var steps = index.steps || [];
    if (!steps.length) { view.textContent = "No rollouts recorded for this run."; return null; }
    var controls = section.querySelector(".controls");
    var prev = el("button", null, "◀ previous step"), next = el("button", null, "next step ▶");
    var pick = el("select");
    pick.setAttribute("aria-label", "step");
    steps.forEach(function (s, i) {
      var option = el("option", null, "step " + s.step + " · " + s.completions + " completions · reward " + fmt(s.reward) +
        (s.no_signal ? " · no signal " + Math.round(100 * s.no_signal) + "%" : ""));
      option.value = String(i);
      pick.appendChild(option);
    });
    var partPrev = el("button", null, "◀ part"), partNext = el("button", null, "part ▶");
    var status = el("span", "status");
    [prev, pick, next, partPrev, partNext, status].forEach(function (n) { controls.appendChild(n); });
    var state = {i: 0, part: 0};
    function show(i, part) {
      state.i = Math.max(0, Math.min(steps.length - 1, i));
      var step = steps[state.i];
      state.part = Math.max(0, Math.min(step.parts - 1, part || 0));
      pick.value = String(state.i);
      prev.disabled = state.i === 0; next.disabled = state.i === steps.length - 1;
      partPrev.hidden = partNext.hidden = step.parts < 2;
      partPrev.disabled = state.part === 0; partNext.disabled = state.part === step.parts - 1;
      status.textContent = "loading step " + step.step + "…";
      return load(template(index.step_path, {step: step.step, part: state.part})).then(function (shard) {
        view.textContent = "";
        shard.groups.forEach(function (g) { view.appendChild(groupNode(g, index.scale)); });
        status.textContent = "step " + step.step + " · " + (state.i + 1) + " of " + steps.length +
          " step(s) with rollouts" + (step.parts > 1 ? " · part " + (state.part + 1) + " of " + step.parts : "") +
          " · " + step.groups + " group(s)";
        section.setAttribute("data-step", String(step.step));
      }, function (error) { fail(view, error); status.textContent = ""; });
    }
    prev.addEventListener("click", function () { show(state.i - 1); });
    next.addEventListener("click", function () { show(state.i + 1); });
    pick.addEventListener("change", function () { show(parseInt(pick.value, 10)); });
    partPrev.addEventListener("click", function () { show(state.i, state.part - 1); });
    partNext.addEventListener("click", function () { show(state.i, state.part + 1); });
    return {show: show, steps: steps};
  }

  // -- a run: evaluation samples -------------------------------------------------------------
  var FILTERS = [["all", "all"], ["correct", "correct"], ["wrong", "wrong (attempted)"], ["abstained", "abstained"],
                 ["flagged", "gaming flags"], ["withdrawn", "strict withdrew the credit"]];
  function matches(code, filter) {
    var bits = parseInt(code, 16);
    switch (filter) {
      case "correct": return (bits & 1) !== 0;
      case "wrong": return (bits & 3) === 0;
      case "abstained": return (bits & 2) !== 0;
      case "flagged": return (bits & 4) !== 0;
      case "withdrawn": return (bits & 8) !== 0;
      default: return true;
    }
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

  function sampleRow(entry, highlight) {
    var tr = el("tr");
    if (highlight) { tr.className = "hit"; }
    tr.setAttribute("data-i", String(entry.i));
    tr.appendChild(el("td", null, String(entry.i + 1)));
    var q = el("td");
    q.appendChild(el("div", null, entry.question || entry.id));
    q.appendChild(el("div", "small muted", "id " + entry.id));
    tr.appendChild(q);
    var answer = el("td");
    answer.appendChild(el("div", null, entry.answer === undefined ? "—" : (entry.answer === "" ? "(empty)" : entry.answer)));
    if (entry.completion !== undefined) {
      var details = el("details");
      details.appendChild(el("summary", null, "completion"));
      details.appendChild(el("div", "text", entry.completion));
      answer.appendChild(details);
    }
    if (entry.other) { answer.appendChild(jsonDetails("other fields", entry.other)); }
    tr.appendChild(answer);
    tr.appendChild(el("td", null, (entry.references || []).join(" | ")));
    var v = el("td");
    v.appendChild(verdict(entry));
    if (entry.strict === false && entry.correct) { v.appendChild(el("div", "bad small", "strict: " + entry.strict_reason)); }
    tr.appendChild(v);
    tr.appendChild(el("td", "small", (entry.format_ok === undefined ? "—" : (entry.format_ok ? "ok" : "bad")) + " · " +
      plain(entry.answer_words) + " w"));
    var f = el("td");
    flagList(f, entry);
    tr.appendChild(f);
    return tr;
  }

  function samples(index) {
    var section = document.getElementById("samples");
    if (!section) { return null; }
    var sets = index.sets || [];
    var view = section.querySelector(".view");
    if (!sets.length) { view.textContent = "No evaluation samples in this run directory."; return null; }
    var controls = section.querySelector(".controls");
    var buttons = {};
    sets.forEach(function (s) {
      var b = el("button", null, s.label + " (" + s.n + ")");
      b.setAttribute("data-set", s.name);
      b.addEventListener("click", function () { show(s.name, filter.value); });
      buttons[s.name] = b;
      controls.appendChild(b);
    });
    var filter = el("select");
    filter.setAttribute("aria-label", "filter");
    FILTERS.forEach(function (f) { var o = el("option", null, f[1]); o.value = f[0]; filter.appendChild(o); });
    controls.appendChild(filter);
    var pager = el("span", "pager");
    controls.appendChild(pager);
    var current = null;
    filter.addEventListener("change", function () { show(current, filter.value); });
    function show(name, how, focus) {
      var s = sets.filter(function (x) { return x.name === name; })[0] || sets[0];
      current = s.name;
      Object.keys(buttons).forEach(function (k) { buttons[k].classList.toggle("on", k === s.name); });
      filter.value = how || "all";
      var positions = [];
      for (var i = 0; i < s.codes.length; i++) { if (matches(s.codes[i], filter.value)) { positions.push(i); } }
      var go = paged(section, positions.length, s.page_size, function (from, to) {
        return itemsAt(positions.slice(from, to), s.page_size, index.sample_path, s.name).then(function (entries) {
          var table = el("table", "samples");
          var head = el("tr");
          [["#", "3em"], ["question", "24%"], ["answer", "24%"], ["golds", "14%"], ["verdict", "10%"],
           ["format · words", "8%"], ["flags", "16%"]].forEach(function (h) {
            var th = el("th", null, h[0]); th.style.width = h[1]; head.appendChild(th);
          });
          var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
          var tbody = el("tbody");
          entries.forEach(function (e) { tbody.appendChild(sampleRow(e, focus !== undefined && e.i === focus)); });
          table.appendChild(tbody);
          view.textContent = "";
          view.appendChild(table);
          section.setAttribute("data-set", s.name);  // set once drawn (see the side-by-side page)
          section.setAttribute("data-view", s.name + ":" + filter.value);
          section.setAttribute("data-shown", String(entries.length));
        }, function (error) { fail(view, error); });
      });
      var start = focus !== undefined ? Math.max(0, positions.indexOf(focus)) : 0;
      return go(Math.floor(start / s.page_size));
    }
    return {show: show};
  }

  function runPage(index) {
    var r = rollouts(index), s = samples(index);
    var hash = params();
    var jobs = [];
    if (r) {
      var at = hash.step ? r.steps.map(function (x) { return String(x.step); }).indexOf(hash.step) : 0;
      jobs.push(r.show(Math.max(0, at)));
    }
    if (s) { jobs.push(s.show(hash.set, hash.filter, hash.i !== undefined ? parseInt(hash.i, 10) : undefined)); }
    return Promise.all(jobs).then(function () {
      // A link to a set (a table cell) or to one sample (the side-by-side page) lands on it.
      var target = hash.i !== undefined ? document.querySelector("#samples tr.hit") :
        (hash.set ? document.getElementById("samples") : (hash.step ? document.getElementById("rollouts") : null));
      if (target) { target.scrollIntoView({block: hash.i !== undefined ? "center" : "start"}); }
    });
  }

  // -- side by side --------------------------------------------------------------------------
  var COMPARE_FILTERS = [["all", "all questions"], ["disagree", "methods disagree"], ["flipped", "flipped Raw's verdict"],
                         ["up", "wrong → right vs Raw"], ["down", "right → wrong vs Raw"], ["flagged", "gaming flags"]];
  function codeBits(code) { return code === "-" ? null : parseInt(code, 16); }
  function compareMatch(codes, how, column) {
    var bits = codes.split("").map(codeBits);
    var raw = bits[0];
    var cols = column >= 1 ? [column] : bits.map(function (_, i) { return i; }).slice(1);
    function right(b) { return b !== null && (b & 1) !== 0; }
    switch (how) {
      case "disagree":
        var seen = bits.filter(function (b) { return b !== null; }).map(right);
        return seen.some(function (x) { return x !== seen[0]; });
      case "flipped": case "up": case "down":
        if (raw === null) { return false; }
        return cols.some(function (i) {
          if (bits[i] === null || right(bits[i]) === right(raw)) { return false; }
          return how === "flipped" || (how === "up") === right(bits[i]);
        });
      case "flagged": return (column >= 1 ? [bits[column]] : bits).some(function (b) { return b !== null && (b & 4) !== 0; });
      default: return true;
    }
  }

  function comparePage(index) {
    var section = document.getElementById("compare");
    var view = section.querySelector(".view"), controls = section.querySelector(".controls");
    var filter = el("select"), column = el("select");
    filter.setAttribute("aria-label", "filter");
    column.setAttribute("aria-label", "method");
    COMPARE_FILTERS.forEach(function (f) { var o = el("option", null, f[1]); o.value = f[0]; filter.appendChild(o); });
    var any = el("option", null, "any method"); any.value = "0"; column.appendChild(any);
    index.methods.forEach(function (m, i) { if (i) { var o = el("option", null, m.label); o.value = String(i); column.appendChild(o); } });
    controls.appendChild(filter); controls.appendChild(column);
    var pager = el("span", "pager"); controls.appendChild(pager);
    var codes = index.codes ? index.codes.split(",") : [];
    function show(how, col) {
      filter.value = how || "all"; column.value = String(col || 0);
      var positions = [];
      codes.forEach(function (c, i) { if (compareMatch(c, filter.value, parseInt(column.value, 10))) { positions.push(i); } });
      var go = paged(section, positions.length, index.page_size, function (from, to) {
        return itemsAt(positions.slice(from, to), index.page_size, index.page_path, "").then(function (entries) {
          var table = el("table", "samples");
          var head = el("tr");
          var first = el("th", null, "question · golds"); first.style.width = "22%"; head.appendChild(first);
          index.methods.forEach(function (m) {
            var th = el("th");
            var a = el("a", null, m.label); a.href = m.href; th.appendChild(a);
            head.appendChild(th);
          });
          var thead = el("thead"); thead.appendChild(head); table.appendChild(thead);
          var tbody = el("tbody");
          entries.forEach(function (q) {
            var tr = el("tr");
            tr.setAttribute("data-id", q.id);
            var cell = el("td");
            cell.appendChild(el("div", null, q.question || q.id));
            cell.appendChild(el("div", "small muted", "golds: " + (q.references || []).join(" | ")));
            tr.appendChild(cell);
            var raw = q.answers[0];
            q.answers.forEach(function (a, i) {
              var td = el("td");
              if (a && raw && i > 0 && !!a.correct !== !!raw.correct) {
                td.className = a.correct ? "flip-up" : "flip-down";
              }
              if (!a) { td.appendChild(el("span", "missing-field", "not evaluated")); tr.appendChild(td); return; }
              td.appendChild(el("div", null, a.answer === undefined ? "—" : (a.answer === "" ? "(empty)" : a.answer)));
              td.appendChild(verdict(a));
              if (a.strict === false && a.correct) { td.appendChild(el("div", "bad small", "strict: " + a.strict_reason)); }
              flagList(td, a);
              var link = el("a", "small", "sample");
              link.href = index.methods[i].href + "#set=" + encodeURIComponent(index.set) + "&i=" + a.i;
              td.appendChild(el("div")).appendChild(link);
              tr.appendChild(td);
            });
            tbody.appendChild(tr);
          });
          table.appendChild(tbody);
          view.textContent = "";
          view.appendChild(table);
          // Set once drawn, so a reader (a test) never sees the previous view's rows under the new filter.
          section.setAttribute("data-view", filter.value + ":" + column.value);
          section.setAttribute("data-matches", String(positions.length));
          section.setAttribute("data-shown", String(entries.length));
        }, function (error) { fail(view, error); });
      });
      return go(0);
    }
    filter.addEventListener("change", function () { show(filter.value, parseInt(column.value, 10)); });
    column.addEventListener("change", function () { show(filter.value, parseInt(column.value, 10)); });
    var hash = params();
    return show(hash.filter, hash.method ? parseInt(hash.method, 10) : 0);
  }

  // -- start ---------------------------------------------------------------------------------
  var kind = body.getAttribute("data-page");
  load(body.getAttribute("data-index")).then(function (index) {
    return kind === "compare" ? comparePage(index) : runPage(index);
  }).then(function () {
    // Milliseconds since navigation started, when the first view is drawn (benchmarks/bench_viewer.py).
    body.setAttribute("data-ready", String(Math.round(performance.now())));
  }, function (error) {
    var main = document.querySelector("main") || body;
    main.insertBefore(el("p", "bad", "The viewer could not load its data: " + (error && error.message || error)), main.firstChild);
    body.setAttribute("data-ready", "error");
  });
  window.addEventListener("hashchange", function () { location.reload(); });
}());
