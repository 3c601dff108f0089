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
})();
