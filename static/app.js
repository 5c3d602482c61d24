// Small behaviours of the console: confirmations, migration countdowns, elapsed timers,
// and disabling buttons while their form is submitted.
(function () {
  "use strict";

  // Destructive forms and buttons carry data-confirm with what will happen.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    var msg = f.getAttribute && f.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
      return;
    }
    // Plain forms: disable their submit buttons so a double click submits once.
    if (!f.hasAttribute("hx-post") && !f.hasAttribute("hx-put") && !f.hasAttribute("hx-delete")) {
      f.querySelectorAll("button[type=submit]").forEach(function (b) {
        setTimeout(function () { b.disabled = true; }, 0);
      });
    }
  }, true);

  document.addEventListener("htmx:confirm", function (e) {
    var el = e.detail.elt;
    var msg = el.getAttribute("data-confirm");
    if (msg) {
      e.preventDefault();
      if (window.confirm(msg)) e.detail.issueRequest(true);
    }
  });

  function pad(n) { return n < 10 ? "0" + n : "" + n; }

  function fmt(sec) {
    if (sec < 0) sec = 0;
    var h = Math.floor(sec / 3600), m = Math.floor((sec % 3600) / 60), s = Math.floor(sec % 60);
    return (h > 0 ? h + " h " : "") + pad(m) + " min " + pad(s) + " s";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("[data-countdown]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("data-countdown"));
      if (!isNaN(t)) el.textContent = fmt((t - now) / 1000);
    });
    document.querySelectorAll("[data-elapsed-since]").forEach(function (el) {
      var t = Date.parse(el.getAttribute("data-elapsed-since"));
      var end = el.getAttribute("data-elapsed-until");
      var e = end ? Date.parse(end) : now;
      if (!isNaN(t)) el.textContent = fmt((e - t) / 1000);
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);
  document.addEventListener("htmx:afterSettle", tick);
  document.addEventListener("htmx:wsAfterMessage", tick);

  // Keep the newest log line in view when the log is scrolled to its end.
  document.addEventListener("htmx:wsBeforeMessage", function () {
    document.querySelectorAll("[data-autoscroll]").forEach(function (el) {
      el.dataset.atEnd = (el.scrollHeight - el.scrollTop - el.clientHeight < 30) ? "1" : "";
    });
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    document.querySelectorAll("[data-autoscroll]").forEach(function (el) {
      if (el.dataset.atEnd) el.scrollTop = el.scrollHeight;
    });
  });
})();
