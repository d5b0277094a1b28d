// The debate page when htmx did not load (no internet, a blocked CDN, one that never answers):
// say so in plain words, and follow the debate's stream with the browser's own EventSource,
// applying the same out-of-band fragments htmx would (app/web/stream.py): each turn still
// shows as it is written, and the finished debate replaces the live one at the end.
// Loaded async, so that it never waits behind the htmx files it stands in for.
(function () {
  "use strict";

  // How long the pinned files may take once the page is parsed before it goes on without them.
  var GRACE_MS = 4000;
  var following = false;

  function htmxReady() {
    return Boolean(window.htmx && window.htmx.createEventSource);
  }

  function check() {
    if (following || htmxReady()) return;
    var live = document.getElementById("live");
    var url = live && live.getAttribute("sse-connect");
    if (!url) return; // nothing on this page needs htmx
    following = true;
    // htmx arriving after all must not open a second stream.
    live.removeAttribute("sse-connect");
    say();
    follow(url);
  }

  function scriptHost() {
    var script = document.querySelector("script[integrity]");
    if (!script) return "its server";
    var url = new URL(script.src, window.location.href);
    return url.origin === window.location.origin ? "this server" : url.host;
  }

  function say() {
    var notice = document.createElement("p");
    notice.id = "htmx-missing";
    notice.className = "offline-notice";
    notice.setAttribute("role", "status");
    notice.textContent =
      "Live updates use htmx, which could not be loaded from " + scriptHost() +
      " (no internet here, or the site is blocked). This page follows the debate without it: " +
      "each turn appears as it is written, and the result when the debate ends.";
    var debate = document.getElementById("debate");
    debate.parentNode.insertBefore(notice, debate);
  }

  function follow(url) {
    // The browser reconnects by itself, sending Last-Event-ID: no gap and no duplicate.
    var source = new EventSource(url);
    // argue.js tells the reader when the link drops and when it is back.
    source.addEventListener("error", function () {
      document.dispatchEvent(new CustomEvent("argue:stream-lost"));
    });
    source.addEventListener("open", function () {
      document.dispatchEvent(new CustomEvent("argue:stream-open"));
    });
    source.addEventListener("html", function (event) {
      swapAll(event.data);
    });
    source.addEventListener("end", function (event) {
      source.close();
      swapAll(event.data);
    });
    source.addEventListener("reload", function () {
      source.close();
      window.location.reload();
    });
  }

  function swapAll(html) {
    var template = document.createElement("template");
    template.innerHTML = html;
    Array.prototype.slice.call(template.content.children).forEach(swapOne);
  }

  // hx-swap-oob="true" replaces the element of the same id; "beforeend:<selector>" appends
  // the wrapper's children to the target. Those are the two the stream sends.
  function swapOne(node) {
    var how = node.getAttribute("hx-swap-oob");
    if (!how) return;
    node.removeAttribute("hx-swap-oob");
    if (how === "true" || how === "outerHTML") {
      var existing = node.id ? document.getElementById(node.id) : null;
      if (existing) existing.replaceWith(node);
      return;
    }
    var colon = how.indexOf(":");
    if (colon < 0 || how.slice(0, colon) !== "beforeend") return;
    var target = document.querySelector(how.slice(colon + 1));
    if (!target) return;
    Array.prototype.slice.call(node.childNodes).forEach(function (child) {
      append(target, child);
    });
  }

  // The same upsert rule as argue.js: a piece already on the page is kept or replaced.
  function append(target, child) {
    var mode = child.nodeType === 1 ? child.getAttribute("data-upsert") : null;
    var existing = mode && child.id ? document.getElementById(child.id) : null;
    if (!existing) {
      target.appendChild(child);
    } else if (mode === "replace") {
      existing.replaceWith(child);
    }
  }

  function whenParsed(callback) {
    if (document.readyState !== "loading") {
      callback();
      return;
    }
    document.addEventListener("readystatechange", function waiting() {
      document.removeEventListener("readystatechange", waiting);
      callback();
    });
  }

  // A CDN that refuses: htmx's deferred scripts fail, then DOMContentLoaded. One that never
  // answers holds DOMContentLoaded back: the grace timer goes on without it.
  document.addEventListener("DOMContentLoaded", check);
  window.addEventListener("load", check);
  whenParsed(function () {
    window.setTimeout(check, GRACE_MS);
  });
  if (document.readyState === "complete") check();
})();
