/* The side-by-side page (leaderboard/viewer/pages.py compare_page): every method's answer per
   question, filters for disagreements, flips against Raw and gaming flags. */
(function () {
  "use strict";
  var V = window.factrlViewer;
  var load = V.load, el = V.el, fmt = V.fmt, plain = V.plain, chip = V.chip, sign = V.sign, params = V.params,
    fail = V.fail, template = V.template, jsonDetails = V.jsonDetails, colour = V.colour, verdict = V.verdict,
    flagList = V.flagList, paged = V.paged, itemsAt = V.itemsAt;

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

  V.pages.compare = comparePage;
}());
