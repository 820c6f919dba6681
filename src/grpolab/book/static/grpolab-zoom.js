/* grpolab: open any figure of the book full size, over the page.
 *
 * A click (or Enter/Space on a focused figure) on a chart (svg.grpolab-plot: the static
 * sliders and the playground) or on an image of the page (a matplotlib figure) opens it in
 * a dialog: a chart is scaled to the dialog's width, an image is shown at its natural size,
 * or larger when its smallest axis text would read under 12 px (the build writes that size
 * into data-grpolab-text-px, from the figure itself: grpolab.book.alt). The dialog scrolls
 * when the figure is larger than the screen (a phone), and the backdrop, the Close button
 * and Escape close it. An image shown smaller than its natural size (a phone) gets a
 * visible "Tap to enlarge" link to its full size under it. No libraries, no network.
 */
(function (root) {
  "use strict";
  if (root.grpolabZoom || typeof document === "undefined") { return; }
  var READABLE_PX = 12, MAX_UPSCALE = 1.6;
  var overlay = null, opener = null;

  function close() {
    if (!overlay) { return; }
    overlay.parentNode.removeChild(overlay);
    overlay = null;
    document.documentElement.style.overflow = "";
    if (opener && opener.focus) { opener.focus(); }
    opener = null;
  }

  function imageScale(img) {
    var px = parseFloat(img.getAttribute("data-grpolab-text-px"));
    if (!(px > 0)) { return 1; }
    return Math.min(MAX_UPSCALE, Math.max(1, READABLE_PX / px));
  }

  function open(target) {
    close();
    opener = target;
    overlay = document.createElement("div");
    overlay.className = "grpolab-zoom";
    overlay.setAttribute("role", "dialog");
    overlay.setAttribute("aria-modal", "true");
    var isImage = target.tagName.toLowerCase() === "img";
    var label = isImage ? (target.getAttribute("alt") || "figure") : (target.getAttribute("aria-label") || "chart");
    overlay.setAttribute("aria-label", "Full size: " + label);
    var bar = document.createElement("div");
    bar.className = "grpolab-zoom-bar";
    if (isImage) {
      var file = document.createElement("a");
      file.href = target.currentSrc || target.src;
      file.textContent = "Open the image file";
      bar.appendChild(file);
    }
    var btn = document.createElement("button");
    btn.type = "button";
    btn.className = "grpolab-zoom-close";
    btn.textContent = "Close \u2715";
    btn.addEventListener("click", close);
    bar.appendChild(btn);
    var body = document.createElement("div");
    body.className = "grpolab-zoom-body";
    var shown;
    if (isImage) {
      shown = document.createElement("img");
      shown.src = target.currentSrc || target.src;
      shown.alt = target.getAttribute("alt") || "";
      var px = target.getAttribute("data-grpolab-text-px");
      if (px) { shown.setAttribute("data-grpolab-text-px", px); }
      var scale = imageScale(target);
      shown.style.width = Math.round(target.naturalWidth * scale) + "px";
    } else {
      shown = target.cloneNode(true);
      shown.removeAttribute("width"); shown.removeAttribute("height"); shown.removeAttribute("tabindex");
    }
    shown.classList.add("grpolab-zoomed");
    body.appendChild(shown);
    overlay.appendChild(bar);
    overlay.appendChild(body);
    overlay.addEventListener("click", function (event) { if (event.target === overlay) { close(); } });
    document.body.appendChild(overlay);
    document.documentElement.style.overflow = "hidden";
    btn.focus();
  }

  function zoomTarget(node) {
    if (!node || !node.closest || (overlay && overlay.contains(node))) { return null; }
    return node.closest("svg.grpolab-plot, img.grpolab-zoomable");
  }

  // A figure shown below this share of its natural width gets a visible link to its full
  // size under it ("Tap to enlarge"): on a phone the reader sees that the figure opens.
  var SHRUNK = 0.95;

  function updateShrunk(img) {
    if (!img.naturalWidth) { return; }
    var shown = img.getBoundingClientRect().width;
    img.classList.toggle("grpolab-shrunk", shown > 0 && shown < SHRUNK * img.naturalWidth);
  }

  function addHint(img) {
    var next = img.nextElementSibling;
    if (next && next.classList.contains("grpolab-zoom-hint")) { return; }
    var hint = document.createElement("p");
    hint.className = "grpolab-zoom-hint";
    var link = document.createElement("a");
    link.href = img.currentSrc || img.src;
    link.className = "grpolab-zoom-link";
    link.textContent = "\u2922 Tap to enlarge: open this figure full size";
    link.addEventListener("click", function (event) {
      if (event.button === 0 && !event.ctrlKey && !event.metaKey) { event.preventDefault(); open(img); }
    });
    hint.appendChild(link);
    img.parentNode.insertBefore(hint, img.nextSibling);
  }

  // Every image of the article opens full size (logos and images inside links excepted).
  function mark() {
    var imgs = document.querySelectorAll(".bd-article img, article img, .jp-OutputArea-output img");
    for (var i = 0; i < imgs.length; i++) {
      var img = imgs[i];
      if (img.closest("a") || img.closest(".grpolab-zoom") || img.classList.contains("grpolab-zoomable")) { continue; }
      img.classList.add("grpolab-zoomable");
      img.tabIndex = 0;
      img.title = "Click to open full size";
      addHint(img);
      if (img.complete) { updateShrunk(img); }
      else { img.addEventListener("load", function (event) { updateShrunk(event.target); }); }
    }
  }

  var resizeTimer = null;
  root.addEventListener("resize", function () {
    if (resizeTimer) { clearTimeout(resizeTimer); }
    resizeTimer = setTimeout(function () {
      var imgs = document.querySelectorAll("img.grpolab-zoomable");
      for (var i = 0; i < imgs.length; i++) { updateShrunk(imgs[i]); }
    }, 150);
  });

  document.addEventListener("click", function (event) {
    var t = zoomTarget(event.target);
    if (t && event.button === 0) { event.preventDefault(); open(t); }
  });
  document.addEventListener("keydown", function (event) {
    if (overlay && event.key === "Escape") { event.preventDefault(); close(); return; }
    if (event.key !== "Enter" && event.key !== " ") { return; }
    var t = zoomTarget(event.target);
    if (t && t === document.activeElement) { event.preventDefault(); open(t); }
  });

  root.grpolabZoom = {open: open, close: close, mark: mark};
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", mark); }
  else { mark(); }
})(window);
