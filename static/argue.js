// Argue's debate page, the little htmx does not do by itself.
// 1. Upsert: stream fragments append headings, groups and turns; one already on the page
//    (after a reload, a reconnect, or a resumed turn) is kept (data-upsert="keep") or
//    replaced (data-upsert="replace") instead of doubled.
// 2. "reload" event: the stream's last id is from an earlier server process; reload the page.
// 3. Remember the last event id in sse-connect, so a reconnect the extension makes itself
//    (a new EventSource, without the browser's Last-Event-ID) still resumes where it was.
(function () {
  "use strict";

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var fragment = event.detail.fragment;
    // Appends hand over the wrapper element whose children go in; an outerHTML swap (a
    // fragment) replaces by id already and needs nothing.
    if (!fragment || fragment.nodeType !== 1) return;
    Array.prototype.slice.call(fragment.children).forEach(function (node) {
      var mode = node.getAttribute("data-upsert");
      var existing = mode && node.id ? document.getElementById(node.id) : null;
      if (!existing) return;
      if (mode === "replace") {
        existing.replaceWith(node);
        if (window.htmx) window.htmx.process(node);
      } else {
        node.remove();
      }
    });
  });

  document.addEventListener("htmx:sseBeforeMessage", function (event) {
    var message = event.detail;
    if (message.type === "reload") {
      event.preventDefault();
      window.location.reload();
      return;
    }
    var source = event.target.closest("[sse-connect]");
    if (source && message.lastEventId) {
      var url = source.getAttribute("sse-connect").split("?")[0];
      source.setAttribute("sse-connect", url + "?last_event_id=" + encodeURIComponent(message.lastEventId));
    }
  });
})();
