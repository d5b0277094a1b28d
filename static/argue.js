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

// The topic's count, live: "1,234 / 2,000", an error state past the limit. The field has no
// maxlength, which would cut a paste silently; the server refuses a topic over the limit and
// says so beside the field. A line break counts once, as the server counts it.
(function () {
  "use strict";

  function start() {
    var count = document.getElementById("topic-count");
    var field = count && document.getElementById(count.getAttribute("data-for"));
    if (!field) return;
    var limit = parseInt(count.getAttribute("data-limit"), 10);
    var format = function (n) { return n.toLocaleString("en-US"); };
    function update() {
      var chars = Array.from(field.value.replace(/\r\n/g, "\n")).length;
      var over = chars - limit;
      count.textContent = format(chars) + " / " + format(limit) +
        (over > 0 ? " — " + format(over) + " too many" : "");
      count.classList.toggle("over", over > 0);
      if (over > 0) field.setAttribute("aria-invalid", "true");
      else if (!document.getElementById("topic-error")) field.removeAttribute("aria-invalid");
    }
    field.addEventListener("input", update);
    count.hidden = false;
    update();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
