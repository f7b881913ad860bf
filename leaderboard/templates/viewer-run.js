/* The run viewer's page (leaderboard/viewer/pages.py run_page): training rollouts step by step,
   evaluation samples with filters. Uses viewer.js's helpers; text from data only as text. */
(function () {
  "use strict";
  var V = window.factrlViewer;
  var load = V.load, el = V.el, fmt = V.fmt, plain = V.plain, chip = V.chip, sign = V.sign, params = V.params,
    fail = V.fail, template = V.template, jsonDetails = V.jsonDetails, colour = V.colour, verdict = V.verdict,
    flagList = V.flagList, paged = V.paged, itemsAt = V.itemsAt;

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
    // The reward's own per-completion record (KnowRL's grade and terms, NOVER's score), apart from the rollout's.
    Object.keys(c.detail || {}).forEach(function (key) { chips.appendChild(chip(key + ": " + plain(c.detail[key]), "detail")); });
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

  V.pages.run = runPage;
}());
