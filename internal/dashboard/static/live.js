// Live updates for the dashboard: server-sent events replace the "now"
// panel and the graph with HTML the server rendered (and escaped). The
// pages work without this file; they just do not update by themselves.
(function () {
  "use strict";
  if (!window.EventSource || !document.getElementById("now")) return;
  var es = new EventSource("/events");
  function swap(id) {
    return function (ev) {
      var el = document.getElementById(id);
      if (!el) return;
      var tpl = document.createElement("template");
      tpl.innerHTML = ev.data;
      var next = tpl.content.firstElementChild;
      if (next) el.replaceWith(next);
    };
  }
  es.addEventListener("now", swap("now"));
  es.addEventListener("graph", swap("graph"));
  es.addEventListener("cost", swap("cost"));
  // Elapsed times count on between events, from the server's clock.
  setInterval(function () {
    var now = Date.now() / 1000;
    var cells = document.querySelectorAll("#now .elapsed[data-started]");
    for (var i = 0; i < cells.length; i++) {
      var c = cells[i];
      if (!c.dataset.seen) c.dataset.seen = String(now);
      var s = Math.max(0, Math.round(Number(c.dataset.at) - Number(c.dataset.started) + now - Number(c.dataset.seen)));
      c.textContent = (s >= 3600 ? Math.floor(s / 3600) + "h" : "") + (s >= 60 ? Math.floor(s % 3600 / 60) + "m" : "") + (s % 60) + "s";
    }
  }, 1000);
})();
