// Sorting and filtering of server-rendered tables; the tables read the same without it.
(function () {
  function cellValue(row, i) {
    var c = row.cells[i]; var v = c ? c.getAttribute("data-v") : null;
    if (v === null) { v = c ? c.textContent.trim() : ""; }
    var n = parseFloat(v);
    return v !== "" && !isNaN(n) && isFinite(v) ? n : v.toLowerCase();
  }
  document.querySelectorAll("table[data-sortable] th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () {
      var table = th.closest("table"), body = table.tBodies[0], i = th.cellIndex;
      var asc = th.getAttribute("data-dir") !== "asc";
      th.setAttribute("data-dir", asc ? "asc" : "desc");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = cellValue(a, i), y = cellValue(b, i);
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  // A long table grows with the page and shows PAGE rows at a time (of those the filter keeps),
  // with a pager under it; without scripts every row shows.
  var PAGE = 50;
  function paginate(table) {
    var rows = Array.prototype.slice.call(table.tBodies[0].rows), kept = rows.filter(function (r) { return !r.hidden; });
    var pages = Math.max(1, Math.ceil(kept.length / PAGE)), page = Math.min(table._page || 0, pages - 1);
    table._page = page;
    rows.forEach(function (r) { r.classList.remove("paged-out"); });
    kept.forEach(function (r, i) { if (Math.floor(i / PAGE) !== page) { r.classList.add("paged-out"); } });
    var pager = table._pager;
    if (!pager) { return; }
    pager.hidden = kept.length <= PAGE;
    pager.querySelector("span").textContent = kept.length ? "rows " + (page * PAGE + 1) + "-" +
      Math.min(kept.length, (page + 1) * PAGE) + " of " + kept.length : "no rows";
    pager.querySelector("[data-prev]").disabled = page === 0;
    pager.querySelector("[data-next]").disabled = page >= pages - 1;
  }
  document.querySelectorAll(".tablewrap > table").forEach(function (table) {
    if (table.tBodies[0].rows.length <= PAGE) { return; }
    var pager = document.createElement("div");
    pager.className = "pager";
    pager.innerHTML = '<button type="button" data-prev>previous</button><button type="button" data-next>next</button><span></span>';
    table.parentNode.parentNode.insertBefore(pager, table.parentNode.nextSibling);
    table._pager = pager; table._page = 0;
    pager.querySelector("[data-prev]").addEventListener("click", function () { table._page -= 1; paginate(table); });
    pager.querySelector("[data-next]").addEventListener("click", function () { table._page += 1; paginate(table); });
    table.addEventListener("click", function (e) { if (e.target.closest("th[data-sort]")) { paginate(table); } });
    paginate(table);
  });
  document.querySelectorAll("input[data-filter]").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-filter"));
    var count = document.getElementById(input.getAttribute("data-filter") + "-count");
    input.addEventListener("input", function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = (row.getAttribute("data-text") || row.textContent).toLowerCase();
        var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
        row.hidden = !keep; if (keep) { shown += 1; }
      });
      if (count) { count.textContent = shown + " shown"; }
      if (table._pager) { table._page = 0; paginate(table); }
    });
    // A link can carry a filter: page.html#filter=near-miss opens with those rows only.
    var given = /[#&]filter=([^&]*)/.exec(window.location.hash);
    if (given) { input.value = decodeURIComponent(given[1]); input.dispatchEvent(new Event("input")); }
  });
  document.querySelectorAll("script[type='application/vnd.vegalite+json']").forEach(function (s) {
    var target = document.getElementById(s.getAttribute("data-target"));
    vegaEmbed(target, JSON.parse(s.textContent), {actions: false, renderer: "svg"})
      .then(function () { target.setAttribute("data-drawn", "1"); })
      .catch(function (e) { console.error("chart " + target.id + ": " + e); });
  });
})();
