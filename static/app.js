// Small behaviours of the console: confirmations, migration countdowns, elapsed timers,
// busy forms, edited forms kept through live refreshes, and what htmx does with error
// answers.
(function () {
  "use strict";

  if (window.htmx) {
    // The Content-Security-Policy forbids eval: no hx-on, no trigger filters.
    htmx.config.allowEval = false;
    // A form sent with htmx comes back as 422 with its fields and their errors: show
    // it. A server error page (5xx) is shown too; other errors (403 and the like answer
    // JSON) are announced by requestError below.
    htmx.config.responseHandling = [
      { code: "204", swap: false },
      { code: "[23]..", swap: true },
      { code: "422", swap: true },
      { code: "5..", swap: true, error: true },
      { code: "...", swap: false, error: true }
    ];
  }

  // busy marks a form whose request runs: its submit buttons are disabled and show a
  // spinner (app.css), and its .htmx-indicator elements show.
  function busy(f, on) {
    f.classList.toggle("htmx-request", on);
    if (on) f.setAttribute("aria-busy", "true"); else f.removeAttribute("aria-busy");
    f.querySelectorAll("button[type=submit], button:not([type])").forEach(function (b) {
      b.disabled = on;
    });
  }

  // Destructive forms and buttons carry data-confirm with what will happen.
  document.addEventListener("submit", function (e) {
    var f = e.target;
    var msg = f.getAttribute && f.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
      return;
    }
    // Plain forms: mark them busy once the submission is under way (after the other
    // listeners), so a double click submits once and the wait shows.
    if (!f.hasAttribute("hx-post") && !f.hasAttribute("hx-put") && !f.hasAttribute("hx-delete")) {
      setTimeout(function () {
        if (!e.defaultPrevented) busy(f, true);
      }, 0);
    }
  }, true);

  // A page restored from the back-forward cache must not keep its forms busy.
  window.addEventListener("pageshow", function (e) {
    if (e.persisted) {
      document.querySelectorAll("form[aria-busy=true]").forEach(function (f) { busy(f, false); });
    }
  });

  document.addEventListener("htmx:confirm", function (e) {
    var el = e.detail.elt;
    // data-unless="SELECTOR": the request is not sent while SELECTOR matches (what a
    // trigger filter would do, without eval).
    var unless = el.getAttribute && el.getAttribute("data-unless");
    if (unless && document.querySelector(unless)) {
      e.preventDefault();
      return;
    }
    var msg = el.getAttribute && el.getAttribute("data-confirm");
    if (msg) {
      e.preventDefault();
      if (window.confirm(msg)) e.detail.issueRequest(true);
    }
  });

  // A form the user has changed is marked data-edited (until the page is left).
  function edited(e) {
    var f = e.target && e.target.form;
    if (f) f.setAttribute("data-edited", "");
  }
  document.addEventListener("input", edited, true);
  document.addEventListener("change", edited, true);

  // A live refresh (data-keep-edited: a region tab or wizard step fetched again when its
  // job ends) keeps the forms the user is filling in: the new copy of an edited form (the
  // form with the same action) is marked hx-preserve, so that htmx keeps the edited one,
  // with what was chosen or typed, in its place. The rest, other forms included, is new.
  var keptSeq = 0;
  document.addEventListener("htmx:beforeSwap", function (e) {
    var d = e.detail;
    var elt = d.requestConfig && d.requestConfig.elt;
    // A tab fetched again when its job ended, answered after the user opened another tab:
    // the tab shown now stays.
    var forTab = elt && elt.getAttribute && elt.getAttribute("data-for-tab");
    var shown = document.querySelector('#region-tabs [aria-selected="true"]');
    if (forTab && shown && shown.id !== "tab-" + forTab) {
      d.shouldSwap = false;
      return;
    }
    if (!d.shouldSwap || !elt || !elt.hasAttribute || !elt.hasAttribute("data-keep-edited") ||
        typeof d.serverResponse !== "string" || !d.target) return;
    var forms = d.target.querySelectorAll("form[data-edited][action]");
    if (forms.length === 0) return;
    // Parsed as htmx parses it: a whole page (the wizard's) or a part of one (a tab).
    var page = /^\s*(<!doctype[^>]*>\s*)?<html[\s>]/i.test(d.serverResponse);
    var doc = new DOMParser().parseFromString(page ? d.serverResponse : "<body><template>" + d.serverResponse + "</template></body>", "text/html");
    var root = page ? doc : doc.querySelector("template").content;
    var kept = false;
    forms.forEach(function (f) {
      var fresh = root.querySelector('form[action="' + CSS.escape(f.getAttribute("action")) + '"]');
      if (!fresh) return;
      if (!f.id) f.id = "kept-form-" + (++keptSeq);
      fresh.id = f.id;
      fresh.setAttribute("hx-preserve", "true");
      kept = true;
    });
    if (kept) {
      d.serverResponse = page ? "<!DOCTYPE html>" + doc.documentElement.outerHTML : doc.querySelector("template").innerHTML;
    }
  });

  // requestError tells about a failed htmx request that left the page as it was.
  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail.xhr;
    if (!xhr || e.detail.shouldSwap) return;
    var msg = "The request failed (HTTP " + xhr.status + "). Reload the page and try again.";
    try {
      var body = JSON.parse(xhr.responseText);
      if (body && body.error) msg = body.error;
    } catch (_) { /* not JSON */ }
    announce(msg);
  });
  document.addEventListener("htmx:sendError", function () {
    announce("The console did not answer. Check your connection and try again.");
  });

  function announce(msg) {
    var main = document.getElementById("main");
    if (!main) return;
    var el = document.getElementById("request-error");
    if (!el) {
      el = document.createElement("div");
      el.id = "request-error";
      el.setAttribute("role", "alert");
      el.setAttribute("data-testid", "request-error");
      el.className = "mb-4 rounded-md border border-rose-300 bg-rose-50 p-3 text-sm text-rose-900 dark:border-rose-800 dark:bg-rose-950 dark:text-rose-200";
      main.insertBefore(el, main.firstChild);
    }
    el.textContent = msg;
  }

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

  // A flash belongs to the page it answered: choosing another tab takes it away.
  document.addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("[data-tab-link]")) {
      var f = document.getElementById("flash");
      if (f) f.remove();
    }
  });

  // A form with data-clear-on-request takes away what its last answer showed (a
  // checklist) as soon as it asks again, so that old verdicts never stand beside a new
  // check.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var el = e.detail && e.detail.elt;
    var sel = el && el.getAttribute && el.getAttribute("data-clear-on-request");
    if (sel) el.querySelectorAll(sel).forEach(function (x) { x.remove(); });
  });

  // Every table cell carries its column's name (data-label): on a phone, where a table
  // reads as cards (app.css), each line starts with it.
  function labelCells(root) {
    (root && root.querySelectorAll ? root : document).querySelectorAll("table").forEach(function (table) {
      var heads = Array.from(table.querySelectorAll("thead th")).map(function (th) { return th.textContent.trim(); });
      if (heads.length === 0) return;
      table.querySelectorAll("tbody tr").forEach(function (tr) {
        var col = 0;
        Array.from(tr.children).forEach(function (td) {
          if (td.colSpan === 1 && heads[col] && !td.hasAttribute("data-label")) td.setAttribute("data-label", heads[col]);
          col += td.colSpan || 1;
        });
      });
    });
  }
  document.addEventListener("DOMContentLoaded", labelCells);
  document.addEventListener("htmx:afterSettle", labelCells);
  document.addEventListener("htmx:wsAfterMessage", labelCells);

  // A page that follows the lists (the regions page: its [data-live-list] part, the fleet
  // overview and the list) is told by its banner socket when they change: the part is
  // fetched again and swapped in when it differs, one fetch at a time.
  var listFetching = false, listAgain = false;
  function refreshLiveList() {
    var live = document.querySelector("[data-live-list]");
    if (!live) return;
    if (listFetching) { listAgain = true; return; }
    listFetching = true;
    fetch(location.pathname + location.search, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(live.id);
        if (fresh) labelCells(fresh); // as the live part has them, so that equal compares equal
        if (fresh && fresh.innerHTML !== live.innerHTML) {
          live.innerHTML = fresh.innerHTML;
          htmx.process(live);
          tick();
        }
      })
      .catch(function () {})
      .finally(function () {
        listFetching = false;
        if (listAgain) { listAgain = false; refreshLiveList(); }
      });
  }
  document.addEventListener("htmx:wsAfterMessage", function (e) {
    var m = e.detail && e.detail.message;
    if (typeof m === "string" && m.indexOf('id="lists-changed"') >= 0) refreshLiveList();
  });

  // Fields that belong to one choice of a form (data-show-if="name=value", or
  // "name=one|other" for several) show only while that choice is made: the S3 fields with
  // S3 storage, the external registry's fields with an external registry, and so on.
  function applyShowIf(root) {
    (root || document).querySelectorAll("[data-show-if]").forEach(function (el) {
      var rule = el.getAttribute("data-show-if").split("=");
      var form = el.closest("form");
      if (!form) return;
      var fields = form.querySelectorAll("[name='" + rule[0] + "']");
      var value = "";
      fields.forEach(function (f) {
        if ((f.type === "radio" || f.type === "checkbox") ? f.checked : true) value = f.value;
      });
      el.hidden = rule[1].split("|").indexOf(value) < 0;
    });
  }
  document.addEventListener("change", function (e) {
    if (e.target.closest && e.target.closest("form")) applyShowIf(e.target.closest("form"));
  });
  document.addEventListener("DOMContentLoaded", function () { applyShowIf(); });

  // A form that comes back with errors puts the focus on its first invalid field, so
  // that a keyboard or screen reader user lands on what to fix.
  function focusFirstError(root) {
    var el = (root || document).querySelector("[aria-invalid='true']");
    var active = document.activeElement;
    // Someone typing in a field (a live update swapped another part) keeps the focus.
    if (active && /^(INPUT|TEXTAREA|SELECT)$/.test(active.tagName)) return;
    if (el && el.offsetParent !== null && typeof el.focus === "function") el.focus();
  }
  document.addEventListener("DOMContentLoaded", function () { focusFirstError(); });
  document.addEventListener("htmx:afterSettle", function (e) { focusFirstError(e.target); });
  document.addEventListener("htmx:afterSettle", function (e) { applyShowIf(e.target); });

  // A button with data-copy copies the text of the element of that id (a new API token)
  // and says so; where the clipboard is not available it selects the text instead.
  document.addEventListener("click", function (e) {
    var btn = e.target.closest && e.target.closest("[data-copy]");
    if (!btn) return;
    var el = document.getElementById(btn.getAttribute("data-copy"));
    if (!el) return;
    var done = function () { btn.textContent = "Copied"; };
    var select = function () {
      var r = document.createRange();
      r.selectNodeContents(el);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      btn.textContent = "Selected: press Ctrl+C";
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(el.textContent.trim()).then(done, select);
    } else {
      select();
    }
  });
})();
