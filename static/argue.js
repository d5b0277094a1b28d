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

// Markdown, as app/web/render.py renders it (CommonMark with tables and strikethrough, no raw
// HTML, links only to http, https, mailto or this site), for a turn's text while it streams:
// a live turn then has the same paragraphs, lists and emphasis the finished one will have.
// Every piece of text is escaped before any tag is added, so what a model writes stays text.
(function (root) {
  "use strict";

  var FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
  var HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  var RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  var QUOTE = /^ {0,3}> ?(.*)$/;
  var ITEM = /^( {0,3})(?:([-*+])|(\d{1,9})([.)]))(?:([ \t]+)(.*))?$/;
  var SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;
  var DELIMITER_ROW = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
  var PUNCTUATION = /\\([!-\/:-@\[-`{-~])/g;

  function escapeHtml(text) {
    return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;");
  }

  function blank(line) { return /^[ \t]*$/.test(line); }
  function indentOf(line) { return line.match(/^ */)[0].length; }

  function item(line) {
    if (RULE.test(line)) return null;
    var m = ITEM.exec(line);
    if (!m) return null;
    var marker = m[2] || m[4];
    var width = m[1].length + (m[2] ? 1 : m[3].length + 1);
    var spaces = (m[5] || "").replace(/\t/g, "    ").length;
    var rest = m[6] || "";
    // Five spaces or more after the marker: the content starts after one (the rest is code).
    if (spaces > 4) { rest = new Array(spaces).join(" ") + rest; spaces = 1; }
    return {
      ordered: Boolean(m[3]), marker: marker, start: m[3] ? parseInt(m[3], 10) : 1,
      indent: m[1].length, offset: width + Math.max(spaces, 1), rest: rest, empty: !m[6]
    };
  }

  function cells(line) {
    var text = line.trim().replace(/^\|/, "").replace(/\|$/, "");
    var out = [], current = "", code = false;
    for (var i = 0; i < text.length; i++) {
      var c = text[i];
      if (c === "\\" && text[i + 1] === "|") { current += "|"; i++; continue; }
      if (c === "`") code = !code;
      if (c === "|" && !code) { out.push(current.trim()); current = ""; continue; }
      current += c;
    }
    out.push(current.trim());
    return out;
  }

  function tableAt(lines, i) {
    if (i + 1 >= lines.length || lines[i].indexOf("|") < 0) return null;
    if (!DELIMITER_ROW.test(lines[i + 1]) || lines[i + 1].indexOf("-") < 0) return null;
    var head = cells(lines[i]), aligns = cells(lines[i + 1]);
    if (head.length !== aligns.length) return null;
    return { head: head, aligns: aligns.map(function (a) {
      var left = a.charAt(0) === ":", right = a.charAt(a.length - 1) === ":";
      return left && right ? "center" : right ? "right" : left ? "left" : "";
    }) };
  }

  // A line that ends a paragraph by starting a block of its own.
  function interrupts(lines, i) {
    var line = lines[i];
    if (blank(line) || FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)) return true;
    var it = item(line);
    if (it && !it.empty && (!it.ordered || it.start === 1)) return true;
    return Boolean(tableAt(lines, i));
  }

  function renderTable(lines, i, table, out) {
    var width = table.head.length;
    function row(values, tag) {
      var html = "<tr>\n";
      for (var c = 0; c < width; c++) {
        var align = table.aligns[c] ? ' class="align-' + table.aligns[c] + '"' : "";
        html += "<" + tag + align + ">" + inline(values[c] || "") + "</" + tag + ">\n";
      }
      return html + "</tr>\n";
    }
    var html = "<table>\n<thead>\n" + row(table.head, "th") + "</thead>\n";
    var body = "";
    i += 2;
    while (i < lines.length && !blank(lines[i]) && !(interrupts(lines, i) && lines[i].indexOf("|") < 0)) {
      body += row(cells(lines[i]), "td");
      i++;
    }
    out.push(html + (body ? "<tbody>\n" + body + "</tbody>\n" : "") + "</table>\n");
    return i;
  }

  function renderList(lines, i, out) {
    var first = item(lines[i]);
    var items = [], loose = false;
    while (i < lines.length) {
      var it = item(lines[i]);
      if (!it || it.ordered !== first.ordered || it.marker !== first.marker) break;
      var body = [it.rest], sawBlank = false, inner = false;
      i++;
      while (i < lines.length) {
        var line = lines[i];
        if (blank(line)) { body.push(""); sawBlank = true; i++; continue; }
        if (indentOf(line) >= it.offset) {
          if (sawBlank) inner = true;
          body.push(line.slice(it.offset)); sawBlank = false; i++; continue;
        }
        if (sawBlank || item(line) || interrupts(lines, i)) break;
        body.push(line); i++; // a lazy continuation of the item's paragraph
      }
      var trailing = false;
      while (body.length > 1 && body[body.length - 1] === "") { body.pop(); trailing = true; }
      if (inner && body.indexOf("") >= 0) loose = true;
      items.push(body);
      if (trailing) {
        var next = i < lines.length ? item(lines[i]) : null;
        if (next && next.ordered === first.ordered && next.marker === first.marker) loose = true;
        else break;
      }
    }
    var tag = first.ordered ? "ol" : "ul";
    var open = first.ordered && first.start !== 1 ? '<ol start="' + first.start + '">' : "<" + tag + ">";
    var html = open + "\n";
    items.forEach(function (body) {
      var inside = blocks(body, !loose);
      html += "<li>" + (inside.indexOf("<") === 0 && !/^<(p|ul|ol)\b/.test(inside) ? "\n" : "") + inside.replace(/\n$/, "") + "</li>\n";
    });
    out.push(html + "</" + tag + ">\n");
    return i;
  }

  function blocks(lines, tight) {
    var out = [], i = 0;
    while (i < lines.length) {
      var line = lines[i], m;
      if (blank(line)) { i++; continue; }
      if ((m = FENCE.exec(line))) {
        var fence = m[1], indent = indentOf(line), code = [];
        i++;
        while (i < lines.length) {
          var close = lines[i].match(/^ {0,3}(`{3,}|~{3,})[ \t]*$/);
          if (close && close[1].charAt(0) === fence.charAt(0) && close[1].length >= fence.length) { i++; break; }
          code.push(lines[i].replace(new RegExp("^ {0," + indent + "}"), ""));
          i++;
        }
        out.push("<pre><code>" + escapeHtml(code.length ? code.join("\n") + "\n" : "") + "</code></pre>\n");
        continue;
      }
      if (indentOf(line) >= 4) {
        var block = [];
        while (i < lines.length && (blank(lines[i]) || indentOf(lines[i]) >= 4)) { block.push(lines[i].slice(4)); i++; }
        while (block.length && blank(block[block.length - 1])) block.pop();
        out.push("<pre><code>" + escapeHtml(block.join("\n") + "\n") + "</code></pre>\n");
        continue;
      }
      if ((m = HEADING.exec(line))) {
        var level = m[1].length;
        out.push("<h" + level + ">" + inline((m[2] || "").trim()) + "</h" + level + ">\n");
        i++;
        continue;
      }
      if (RULE.test(line)) { out.push("<hr>\n"); i++; continue; }
      if (QUOTE.test(line)) {
        var quoted = [];
        while (i < lines.length && !blank(lines[i])) {
          var q = QUOTE.exec(lines[i]);
          if (q) quoted.push(q[1]);
          else if (quoted.length && !interrupts(lines, i)) quoted.push(lines[i]);
          else break;
          i++;
        }
        out.push("<blockquote>\n" + blocks(quoted, false) + "</blockquote>\n");
        continue;
      }
      if (item(line)) { i = renderList(lines, i, out); continue; }
      var table = tableAt(lines, i);
      if (table) { i = renderTable(lines, i, table, out); continue; }
      var para = [line];
      i++;
      var heading = 0;
      while (i < lines.length) {
        var setext = SETEXT.exec(lines[i]);
        if (setext) { heading = setext[1].charAt(0) === "=" ? 1 : 2; i++; break; }
        if (interrupts(lines, i)) break;
        para.push(lines[i]);
        i++;
      }
      var text = inline(para.map(function (l) { return l.replace(/^[ \t]+/, ""); }).join("\n").replace(/[ \t]+$/, ""));
      if (heading) out.push("<h" + heading + ">" + text + "</h" + heading + ">\n");
      else out.push(tight ? text + "\n" : "<p>" + text + "</p>\n");
    }
    return out.join("");
  }

  function safeUrl(url) {
    var scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(url);
    return !scheme || /^(https?|mailto)$/i.test(scheme[1]);
  }

  function inline(text) {
    var kept = [];
    function keep(html) { kept.push(html); return "\u0000" + (kept.length - 1) + "\u0000"; }
    text = text.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, function (all, ticks, code) {
      code = code.replace(/\n/g, " ");
      if (/^ [\s\S]* $/.test(code) && /[^ ]/.test(code)) code = code.slice(1, -1);
      return keep("<code>" + escapeHtml(code) + "</code>");
    });
    text = text.replace(/(?: {2,}|\\)\n/g, function () { return keep("<br>\n"); });
    text = text.replace(/ +\n/g, "\n");
    text = text.replace(PUNCTUATION, function (all, c) { return keep(escapeHtml(c)); });
    text = escapeHtml(text);
    text = text.replace(/&lt;((?:https?|mailto):[^\s&<>]*)&gt;/g, function (all, url) {
      return keep('<a href="' + url + '" rel="noopener noreferrer nofollow">' + url + "</a>");
    });
    text = text.replace(/!?\[([^\]]*)\]\(\s*([^\s()]*)(?:\s+&quot;([^"]*?)&quot;)?\s*\)/g, function (all, label, url, title) {
      if (all.charAt(0) === "!") return label; // images are not allowed: their text stays
      var attrs = safeUrl(url.replace(/&amp;/g, "&")) ? ' href="' + url + '"' : "";
      if (title) attrs += ' title="' + title + '"';
      return "<a" + attrs + ' rel="noopener noreferrer nofollow">' + label + "</a>";
    });
    text = text.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
    text = text.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>");
    text = text.replace(/\*(?=[^\s*])([^*]*?[^\s*]|[^\s*])\*/g, "<em>$1</em>");
    text = text.replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_]|[^\s_])_(?!\w)/g, "$1<em>$2</em>");
    text = text.replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<s>$1</s>");
    return text.replace(/\u0000(\d+)\u0000/g, function (all, n) { return kept[+n]; });
  }

  function render(source) {
    var text = String(source || "").replace(/\r\n?/g, "\n").replace(/\u0000/g, "\uFFFD");
    return blocks(text.split("\n"), false);
  }

  root.ArgueMarkdown = { render: render };
})(typeof window !== "undefined" ? window : globalThis);

// The live debate page, for the reader:
// - each live turn's Markdown source (#x-<id>, which the stream appends to) is shown rendered
//   (#m-<id>), with its badge ("waiting" until a first token, then "writing…") and a rough
//   token count (#k-<id>, a quarter of the characters, as the server estimates);
// - the turn being written is kept in view until the reader scrolls up; "Follow live" resumes;
// - the header's clock ticks, and its estimate counts down;
// - a notice says when the live connection drops and when it is back;
// - copy buttons copy a turn's (or the synthesis's) Markdown source.
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  var rendered = new WeakMap(); // source element -> the text last rendered from it
  var following = true;
  var ownScrollUntil = 0;
  var lastY = window.scrollY;
  var timer = null;
  var skew = null; // this clock minus the server's, measured when the page was made

  function estimateTokens(text) {
    return text ? Math.max(1, Math.floor((text.length + 3) / 4)) : 0;
  }

  function updateTurn(article) {
    var id = article.id.slice(2);
    var source = document.getElementById("x-" + id);
    if (!source) return;
    var text = source.textContent;
    if (rendered.get(source) === text) return;
    rendered.set(source, text);
    var shown = document.getElementById("m-" + id);
    if (shown) shown.innerHTML = window.ArgueMarkdown.render(text);
    var badge = document.getElementById("b-" + id);
    if (badge) {
      badge.className = text ? "badge badge-running" : "badge badge-waiting";
      badge.textContent = text ? "writing\u2026" : "waiting";
    }
    var count = document.getElementById("k-" + id);
    if (count) count.textContent = "\u2248 " + estimateTokens(text).toLocaleString("en-US") + " tokens so far";
  }

  function liveTurns() {
    return Array.prototype.slice.call(document.querySelectorAll("article.turn-live"));
  }

  // The turn being written: of those with text, the one reaching lowest down the page.
  function writing() {
    var best = null, bottom = -Infinity;
    liveTurns().forEach(function (article) {
      var source = article.querySelector(".text.live");
      if (!source || !source.textContent) return;
      var rect = article.getBoundingClientRect();
      if (rect.bottom > bottom) { bottom = rect.bottom; best = article; }
    });
    return best || liveTurns().pop() || null;
  }

  function streaming() {
    return Boolean(document.getElementById("live")) && liveTurns().length > 0;
  }

  function scrollByOwn(delta) {
    ownScrollUntil = Date.now() + 400;
    window.scrollBy(0, delta);
    lastY = window.scrollY;
  }

  function keepInView() {
    if (!following || !streaming()) return;
    var turn = writing();
    if (!turn) return;
    var rect = turn.getBoundingClientRect();
    var below = rect.bottom + 16 - window.innerHeight;
    if (below > 1) scrollByOwn(below);
    else if (rect.bottom < 0) scrollByOwn(rect.top - 16);
  }

  function showFollow() {
    var button = document.getElementById("follow");
    if (button) button.hidden = following || !streaming();
  }

  function stopFollowing() {
    if (!following) return;
    following = false;
    showFollow();
  }

  function tick() {
    timer = null;
    liveTurns().forEach(updateTurn);
    keepInView();
    showFollow();
  }

  function schedule() {
    if (timer === null) timer = window.setTimeout(tick, 60);
  }

  function ours(node) {
    var element = node.nodeType === 1 ? node : node.parentElement;
    return Boolean(element && element.closest("[data-rendered], #progress, #connection, #follow, .btn-copy"));
  }

  new MutationObserver(function (records) {
    for (var i = 0; i < records.length; i++) {
      if (!ours(records[i].target)) { schedule(); return; }
    }
  }).observe(document.body || document.documentElement, { childList: true, subtree: true, characterData: true });

  // The reader scrolling up (wheel, keys, touch, the scroll bar) stops the following.
  // A page that got shorter (a finished turn replacing its live text) moves up by itself.
  var lastHeight = document.documentElement.scrollHeight;
  window.addEventListener("scroll", function () {
    var y = window.scrollY;
    var height = document.documentElement.scrollHeight;
    if (y < lastY - 2 && height >= lastHeight && Date.now() > ownScrollUntil) stopFollowing();
    lastY = y;
    lastHeight = height;
  }, { passive: true });
  window.addEventListener("wheel", function (event) {
    if (event.deltaY < 0) stopFollowing();
  }, { passive: true });
  document.addEventListener("keydown", function (event) {
    if (["ArrowUp", "PageUp", "Home"].indexOf(event.key) >= 0) stopFollowing();
  });
  // Opening a question (cancel's confirmation) must not be scrolled away from its answer.
  document.addEventListener("toggle", function (event) {
    if (event.target.open) stopFollowing();
  }, true);

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target : event.target.parentElement;
    if (!target) return;
    if (target.closest("#follow")) {
      following = true;
      showFollow();
      keepInView();
      return;
    }
    var closer = target.closest("[data-close]");
    if (closer) {
      var details = document.getElementById(closer.getAttribute("data-close"));
      if (details) details.open = false;
      return;
    }
    var copy = target.closest(".btn-copy");
    if (copy) copySource(copy);
  });

  function sourceText(id) {
    var source = document.getElementById(id);
    if (!source) return "";
    return source.tagName === "TEMPLATE" ? source.content.textContent : source.textContent;
  }

  function copySource(button) {
    var text = sourceText(button.getAttribute("data-copy"));
    var done = function (ok) {
      button.textContent = ok ? "Copied" : "Copy failed";
      button.classList.toggle("copied", ok);
      window.setTimeout(function () {
        button.textContent = "Copy";
        button.classList.remove("copied");
      }, 1600);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(legacyCopy(text)); });
    } else {
      done(legacyCopy(text));
    }
  }

  // Where the asynchronous clipboard is not offered (a page not served over https, say).
  function legacyCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "copy-buffer";
    document.body.appendChild(area);
    area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (error) { ok = false; }
    area.remove();
    return ok;
  }

  // -- the header's clock ---------------------------------------------------------------------

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function duration(seconds) {
    if (seconds < 60) return seconds + " s";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + pad(seconds % 60) + " s";
    return Math.floor(minutes / 60) + " h " + pad(minutes % 60) + " min";
  }

  function clock() {
    var progress = document.getElementById("progress");
    if (!progress) return;
    var asOf = parseInt(progress.getAttribute("data-as-of"), 10);
    if (skew === null && asOf) skew = Date.now() - asOf;
    var started = parseInt(progress.getAttribute("data-started") || "0", 10);
    if (!started || !document.getElementById("live")) return;
    var now = Date.now() - (skew || 0);
    var elapsed = document.getElementById("elapsed");
    if (elapsed) elapsed.textContent = duration(Math.max(0, Math.floor((now - started) / 1000)));
    var remaining = document.getElementById("remaining");
    if (remaining) {
      var left = parseInt(remaining.getAttribute("data-remaining"), 10) - Math.floor((now - asOf) / 1000);
      var figure = remaining.querySelector("strong");
      if (figure) figure.textContent = left > 5 ? duration(left) : "a few seconds";
    }
  }

  // -- the live connection --------------------------------------------------------------------

  var lost = false;
  var backTimer = null;

  function notice(text, back) {
    var element = document.getElementById("connection");
    if (!element) return;
    element.textContent = text;
    element.classList.toggle("back", back);
    element.hidden = !text;
  }

  function connectionLost() {
    if (!document.getElementById("live")) return;
    lost = true;
    if (backTimer !== null) { window.clearTimeout(backTimer); backTimer = null; }
    notice("Live connection lost \u2014 reconnecting\u2026 The page catches up once it is back.", false);
  }

  function connectionBack() {
    if (!lost) return;
    lost = false;
    notice("Live connection is back: the page is up to date.", true);
    backTimer = window.setTimeout(function () { backTimer = null; notice("", false); }, 2500);
  }

  document.addEventListener("htmx:sseError", connectionLost);
  document.addEventListener("htmx:sseOpen", connectionBack);
  // static/fallback.js follows the stream itself when htmx did not load: it says the same.
  document.addEventListener("argue:stream-lost", connectionLost);
  document.addEventListener("argue:stream-open", connectionBack);

  function start() {
    tick();
    clock();
    window.setInterval(clock, 1000);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
