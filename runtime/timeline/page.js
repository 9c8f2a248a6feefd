(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tl-data").textContent);
  var svg = document.getElementById("tl-plot"), box = document.getElementById("tl-scroll");
  var detail = document.getElementById("tl-detail");
  var end = +svg.dataset.end, pad = +svg.dataset.pad, padR = +svg.dataset.padr;
  var els = svg.querySelectorAll("[data-t]");
  var k = 0, pinned = null;

  function X(t) { return pad + t * k; }

  // Every mark carries its time (data-t) and, for a bar, its length
  // (data-d): zooming only recomputes x and width from them.
  function layout() {
    svg.setAttribute("width", Math.ceil(pad + padR + end * k));
    for (var i = 0; i < els.length; i++) {
      var e = els[i], t = +e.dataset.t, tag = e.tagName;
      if (tag === "rect") {
        if (e.dataset.d !== undefined) {
          e.setAttribute("x", X(t));
          e.setAttribute("width", Math.max(+e.dataset.d * k, 1.5));
        }
      } else if (tag === "line") {
        e.setAttribute("x1", X(t));
        e.setAttribute("x2", e.dataset.t2 !== undefined ? X(+e.dataset.t2) : X(t));
      } else if (tag === "circle") {
        e.setAttribute("cx", X(t));
      } else if (tag === "text") {
        e.setAttribute("x", X(t) + +(e.dataset.dx || 0));
      }
    }
    var perMin = k * 60000;
    svg.classList.toggle("zin", perMin >= 300);
    svg.classList.toggle("zlbl", perMin >= 500);
  }

  function fitK() { return Math.max(box.clientWidth - pad - padR, 100) / end; }

  // zoom sets the scale, keeping the time under clientX where it was.
  function zoom(nk, clientX) {
    nk = Math.min(Math.max(nk, fitK() / 2), 0.25);
    var r = box.getBoundingClientRect();
    var at = clientX === undefined ? r.width / 2 : clientX - r.left;
    var t = (box.scrollLeft + at - pad) / k;
    k = nk;
    layout();
    box.scrollLeft = Math.max(0, pad + t * k - at);
  }

  function show(i, pin) {
    var d = data[i];
    if (!d) return;
    detail.className = "";
    detail.textContent = "";
    detail.appendChild(document.createTextNode(d.h + "\n"));
    if (d.w) {
      var w = document.createElement("div");
      w.className = "where";
      w.textContent = "declared at " + d.w;
      detail.appendChild(w);
    }
    detail.appendChild(document.createTextNode(JSON.stringify(d.e, null, 2)));
    if (pin) {
      if (pinned) pinned.classList.remove("sel");
      pinned = pin;
      pin.classList.add("sel");
    }
  }

  function markOf(e) {
    var m = e.target.closest && e.target.closest("[data-i]");
    return m && svg.contains(m) ? m : null;
  }
  svg.addEventListener("mouseover", function (e) {
    var m = markOf(e);
    if (m && !pinned) show(+m.dataset.i);
  });
  svg.addEventListener("click", function (e) {
    var m = markOf(e);
    if (!m) {
      if (pinned) pinned.classList.remove("sel");
      pinned = null;
      return;
    }
    if (pinned === m) {
      m.classList.remove("sel");
      pinned = null;
      return;
    }
    show(+m.dataset.i, m);
  });
  box.addEventListener("wheel", function (e) {
    if (!e.ctrlKey && !e.metaKey) return;
    e.preventDefault();
    zoom(k * Math.pow(1.0015, -e.deltaY), e.clientX);
  }, { passive: false });
  document.getElementById("tl-zoom").addEventListener("click", function (e) {
    var z = e.target.dataset && e.target.dataset.zoom;
    if (!z) return;
    if (z === "in") zoom(k * 1.5);
    else if (z === "out") zoom(k / 1.5);
    else if (z === "fit") zoom(fitK());
    else zoom(Math.max(box.clientWidth - pad - padR, 100) / +z);
  });
  document.addEventListener("keydown", function (e) {
    if (e.target.tagName === "INPUT") return;
    if (e.key === "+" || e.key === "=") zoom(k * 1.5);
    else if (e.key === "-") zoom(k / 1.5);
    else if (e.key === "0") zoom(fitK());
  });
  var list = document.getElementById("tl-diffs");
  if (list) list.addEventListener("click", function (e) {
    var li = e.target.closest("[data-go]");
    if (!li) return;
    var m = svg.querySelector('.m[data-i="' + li.dataset.go + '"]') || svg.querySelector('[data-i="' + li.dataset.go + '"]');
    if (!m) return;
    if (k < 500 / 60000) zoom(Math.max(box.clientWidth - pad - padR, 100) / 120000);
    box.scrollLeft = Math.max(0, X(+m.dataset.t) - box.clientWidth / 2);
    show(+li.dataset.go, m);
    m.scrollIntoView({ block: "center", inline: "nearest" });
  });
  window.addEventListener("resize", function () { if (k < fitK()) zoom(fitK()); });
  k = fitK();
  layout();
  if (window.performance && performance.mark) performance.mark("tl-ready");
  document.body.dataset.ready = "1";
})();
