"""What a reader sees in the built book (issue 27), measured in headless chromium, offline.

- Contrast: every text of the book's own widgets (static sliders, playground, answer boxes)
  against what is behind it, in the light and the dark theme: at least 4.5:1 (WCAG AA);
  chart grid lines stay visible; in the dark theme the widgets are not light boxes.
- Figure text: the displayed size of the axis text of the static sliders, the playground's
  charts and the labs' figures at 1280 and 390 px wide: at least 11 px, or a click opens the
  figure full size, where it is.
- No page shows raw TeX (``$`` or ``\\(`` outside typeset math), titles and search index
  included; every image has alt text that says what it shows, not a file path.
- The playground: controls with no effect say why; a scenario link opens with its
  explanation, a scenario link in the text brings the figures into view, Back returns to the
  previous scenario, and out-of-range URL values are clamped with a visible note.
- Page weight: the median page transfers less than 2.5 MB, with every outside request
  blocked.

Each measurement is also run on a planted bad page, to show it can fail. Skipped only when
chromium or playwright is missing and CI is not "true".
"""

from __future__ import annotations

import functools
import html
import html.parser
import http.server
import json
import re
import statistics
import threading
from pathlib import Path

import pytest

from grpolab.book.playground import SCENARIOS, encode_state, parse_state

pytestmark = [pytest.mark.slow, pytest.mark.browser]
book = pytest.mark.book

MIN_CONTRAST = 4.5
MIN_GRID_CONTRAST = 1.4
MIN_TEXT_PX = 11.0
MAX_MEDIAN_BYTES = 2.5e6
WIDTHS = (1280, 390)
THEMES = ("light", "dark")

# ----------------------------------------------------------------------------------------
# Measurements in the page (JavaScript), shared by the real pages and the planted ones
# ----------------------------------------------------------------------------------------
CONTRAST_JS = r"""
(selector) => {
  function rgba(s) {
    const m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) { return [0, 0, 0, 0]; }
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  }
  function over(top, bottom) {  // alpha compositing of two colours
    const a = top[3] + bottom[3] * (1 - top[3]);
    if (a === 0) { return [0, 0, 0, 0]; }
    const c = [0, 1, 2].map(i => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a);
    return [c[0], c[1], c[2], a];
  }
  function background(el) {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = rgba(getComputedStyle(n).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) { break; } }
    }
    let bg = [255, 255, 255, 1];  // the canvas, if nothing is opaque
    for (let i = layers.length - 1; i >= 0; i--) { bg = over(layers[i], bg); }
    return bg;
  }
  function lum(c) {
    const f = v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function ratio(a, b) {
    const x = lum(a), y = lum(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  }
  function visible(el) {
    const r = el.getClientRects();
    if (!r.length) { return false; }
    const cs = getComputedStyle(el);
    return cs.visibility !== "hidden" && cs.display !== "none" && Number(cs.opacity) > 0;
  }
  const out = [], grids = [], roots = [];
  document.querySelectorAll(selector).forEach(root => {
    roots.push({cls: root.className.baseVal !== undefined ? root.className.baseVal : root.className,
                bgLum: lum(background(root))});
    [root, ...root.querySelectorAll("*")].forEach(el => {
      if (!visible(el)) { return; }
      const svgText = el.namespaceURI === "http://www.w3.org/2000/svg" && el.tagName === "text";
      const own = svgText ? el.textContent.trim() : [...el.childNodes]
        .filter(n => n.nodeType === 3).map(n => n.textContent).join("").trim();
      const typed = el.tagName === "INPUT" && ["text", "search", "number"].includes(el.type);
      const control = (typed || ["SELECT", "BUTTON", "TEXTAREA"].includes(el.tagName)) &&
        (el.value || el.textContent || "").trim();  // the text a control shows
      if (!own && !control) { return; }
      const bgEl = svgText ? el.ownerSVGElement : el;
      const fg = rgba(svgText ? getComputedStyle(el).fill : getComputedStyle(el).color);
      const bg = background(bgEl);
      const shown = over(fg, bg);
      out.push({text: (own || String(control)).slice(0, 40), tag: el.tagName,
                ratio: ratio(shown, bg)});
    });
    root.querySelectorAll("line.grpolab-grid-line").forEach(line => {
      const bg = background(line.ownerSVGElement);
      grids.push(ratio(over(rgba(getComputedStyle(line).stroke), bg), bg));
    });
  });
  return {texts: out, grids: grids, roots: roots};
}
"""

FIGURE_TEXT_JS = r"""
() => {
  // The smallest displayed size (CSS px) of the text of each chart (SVG) and image (PNG).
  const charts = [...document.querySelectorAll("svg.grpolab-plot")]
    .filter(s => s.getClientRects().length).map(svg => {
      const ctm = svg.getScreenCTM(), scale = ctm ? Math.hypot(ctm.a, ctm.b) : 1;
      const sizes = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim())
        .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
      return {name: svg.getAttribute("aria-label"), px: sizes.length ? Math.min(...sizes) : null};
    });
  const images = [...document.querySelectorAll(".bd-article img")].filter(i => i.naturalWidth > 0)
    .map((img, k) => ({index: k, src: img.getAttribute("src"),
      textPx: parseFloat(img.getAttribute("data-grpolab-text-px")) || null,
      scale: img.getBoundingClientRect().width / img.naturalWidth}));
  return {charts, images};
}
"""


def _contrast_failures(report: dict) -> list:
    bad = [t for t in report["texts"] if t["ratio"] < MIN_CONTRAST]
    bad += [{"grid line": r} for r in report["grids"] if r < MIN_GRID_CONTRAST]
    return bad


WIDGETS = ".grpolab-static-slider, .grpolab-toy, form.grpolab-answer"
#: A page for each widget: a theory chapter with static sliders, the playground, the answer
#: boxes (after a right and a wrong answer, so both verdict colours are measured).
WIDGET_PAGES = ("theory/03-zero-variance", "labs/04-playground", "interview/02-exercises")


def _themed(offline_page, name: str, theme: str, width: int = 1280):
    """The page in ``theme``: the book follows the system setting (its "auto" mode)."""
    tab = offline_page(name, color_scheme=theme, viewport={"width": width, "height": 900})
    got = tab.page.evaluate("() => document.documentElement.dataset.theme")
    assert got == theme, f"the book did not follow prefers-color-scheme: {theme!r} gave {got!r}"
    if name.endswith("playground"):
        tab.page.wait_for_selector(".grpolab-toy[data-runs]", timeout=60_000)
    return tab


@book
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("name", WIDGET_PAGES)
def test_widget_text_contrast_in_both_themes(offline_page, name, theme):
    tab = _themed(offline_page, name, theme)
    page = tab.page
    if name.endswith("exercises"):  # a right verdict on one box, a wrong one on the next
        from grpolab.drill import exercises

        right, wrong = exercises.list_exercises("numeric")[:2]
        for ex, typed in ((right, str(right.answer)), (wrong, "0,2482")):
            form = page.locator(f'form.grpolab-answer[data-exercise="{ex.id}"]')
            form.locator("input[name=answer]").fill(typed)
            form.locator("button[type=submit]").click()
        verdicts = page.locator(".grpolab-verdict[data-correct]").count()
        assert verdicts == 2, "the verdicts whose colours are measured are not shown"
    report = page.evaluate(CONTRAST_JS, WIDGETS)
    assert len(report["texts"]) > 10, "no widget text was measured"
    assert _contrast_failures(report) == [], (name, theme)
    if name != "interview/02-exercises":
        assert report["grids"], "no grid line was measured"
    if theme == "dark":  # not the theme's light-grey output box
        assert all(r["bgLum"] < 0.1 for r in report["roots"]), report["roots"]
    tab.assert_clean()


def test_contrast_measure_fails_on_a_planted_page(offline_page, tmp_path):
    """Grey on grey, the theme's light box behind light text, a faint grid: all caught."""
    (tmp_path / "bad.html").write_text(
        "<html><body style='background:#14181e'>"
        "<div class='grpolab-toy' style='color:#777;background:#888'>grey on grey text</div>"
        "<div class='grpolab-static-slider' style='background:#ced6dd;color:#ced6dd'>"
        "light on light<svg class='grpolab-plot' viewBox='0 0 100 50' width='100'>"
        "<text x='5' y='20' style='fill:#ced6dd'>tick</text>"
        "<line class='grpolab-grid-line' x1='0' x2='100' y1='30' y2='30' "
        "style='stroke:#cfd7de'/></svg></div></body></html>")
    tab = offline_page((tmp_path / "bad.html").as_uri())
    report = tab.page.evaluate(CONTRAST_JS, WIDGETS)
    failures = _contrast_failures(report)
    texts = {f.get("text") for f in failures}
    assert {"grey on grey text", "light on light", "tick"} <= texts, failures
    assert any("grid line" in f for f in failures)
    assert any(r["bgLum"] > 0.5 for r in report["roots"]), "the light box is not seen"


# ----------------------------------------------------------------------------------------
# Figure text at the size it is shown
# ----------------------------------------------------------------------------------------
FIGURE_PAGES = ("theory/03-zero-variance", "labs/04-playground", "labs/01-g-sweep",
                "labs/02-smollm2", "labs/03-remedies")


def _small_images_open_readable(page, images: list[dict]) -> list:
    """Click each image whose text reads under MIN_TEXT_PX; return those still too small
    (or of unknown text size) in the full-size view."""
    failures = []
    for img in images:
        if img["textPx"] is None:
            failures.append((img["src"], "no data-grpolab-text-px"))
            continue
        if img["textPx"] * img["scale"] >= MIN_TEXT_PX:
            continue
        target = page.locator(".bd-article img").nth(img["index"])
        target.scroll_into_view_if_needed()
        target.click()
        zoomed = page.locator(".grpolab-zoom img.grpolab-zoomed")
        zoomed.wait_for(state="visible", timeout=5_000)
        zoomed.evaluate("i => i.decode()")
        scale = zoomed.evaluate("i => i.getBoundingClientRect().width / i.naturalWidth")
        if img["textPx"] * scale < MIN_TEXT_PX:
            failures.append((img["src"], round(img["textPx"] * scale, 2)))
        page.keyboard.press("Escape")
        page.locator(".grpolab-zoom").wait_for(state="detached", timeout=5_000)
    return failures


@book
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", FIGURE_PAGES)
def test_figure_text_is_readable_as_shown(offline_page, name, width):
    tab = offline_page(name, viewport={"width": width, "height": 900})
    page = tab.page
    if name.endswith("playground"):
        page.wait_for_selector(".grpolab-toy[data-runs]", timeout=60_000)
    found = page.evaluate(FIGURE_TEXT_JS)
    if not (found["charts"] or found["images"]):
        assert name.startswith("labs/0") and not name.endswith("playground"), "no figure"
        pytest.skip(f"{name} shows no figure in this build (no committed results to plot)")
    small = [c for c in found["charts"] if c["px"] is None or c["px"] < MIN_TEXT_PX]
    assert small == [], f"chart text under {MIN_TEXT_PX} px at {width} px wide: {small}"
    assert _small_images_open_readable(page, found["images"]) == []
    overflow = page.evaluate("() => document.documentElement.scrollWidth - innerWidth")
    assert overflow <= 1, f"the page scrolls sideways by {overflow} px at {width} px wide"
    tab.assert_clean()


def test_figure_text_measure_fails_on_a_planted_page(offline_page, tmp_path):
    """A chart squeezed by its viewBox and an image shown at a quarter of its size, whose
    full-size view does not open: both reported."""
    from PIL import Image

    Image.new("RGB", (1600, 400), "white").save(tmp_path / "wide.png")
    (tmp_path / "bad.html").write_text(
        "<html><body><div class='bd-article' style='width:400px'>"
        "<svg class='grpolab-plot' viewBox='0 0 800 400' style='width:400px'>"
        "<text x='10' y='20' style='font-size:12px'>tick</text></svg>"
        "<img src='wide.png' data-grpolab-text-px='14' style='width:400px'></div></body></html>")
    tab = offline_page((tmp_path / "bad.html").as_uri())
    found = tab.page.evaluate(FIGURE_TEXT_JS)
    assert found["charts"][0]["px"] == pytest.approx(6.0, abs=0.1)
    assert found["images"][0]["textPx"] * found["images"][0]["scale"] == pytest.approx(3.5)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with pytest.raises(PlaywrightTimeout):  # no full-size view on this page: the check fails
        _small_images_open_readable(tab.page, found["images"])


@book
def test_every_figure_opens_full_size_on_click(offline_page):
    tab = offline_page("labs/01-g-sweep", viewport={"width": 390, "height": 844})
    page = tab.page
    img = page.locator(".bd-article img").first
    img.scroll_into_view_if_needed()
    img.click()
    zoomed = page.locator(".grpolab-zoom[role=dialog] img.grpolab-zoomed")
    zoomed.wait_for(state="visible")
    natural, shown = zoomed.evaluate("i => [i.naturalWidth, i.getBoundingClientRect().width]")
    assert shown >= natural - 1, "the full-size view shrank the image"
    assert page.evaluate("() => document.activeElement.className") == "grpolab-zoom-close"
    page.keyboard.press("Escape")
    assert page.locator(".grpolab-zoom").count() == 0
    # a chart (SVG) opens too, by keyboard
    tab2 = offline_page("theory/03-zero-variance", viewport={"width": 390, "height": 844})
    chart = tab2.page.locator(".grpolab-static-slider svg.grpolab-plot").first
    chart.focus()
    tab2.page.keyboard.press("Enter")
    big = tab2.page.locator(".grpolab-zoom svg.grpolab-zoomed")
    big.wait_for(state="visible")
    assert big.bounding_box()["width"] >= chart.bounding_box()["width"]
    tab2.page.locator(".grpolab-zoom-close").click()
    assert tab2.page.locator(".grpolab-zoom").count() == 0
    tab.assert_clean()
    tab2.assert_clean()


# ----------------------------------------------------------------------------------------
# Raw TeX and alt text, over every built page
# ----------------------------------------------------------------------------------------
class _VisibleText(html.parser.HTMLParser):
    """The text a reader sees outside typeset math and code, plus the page title and the
    alt text of every image."""

    SKIP = {"script", "style", "code", "pre", "kbd", "samp", "textarea", "noscript"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []
        self.text: list[str] = []
        self.title: list[str] = []
        self.alts: list[tuple[str, str | None]] = []

    def _skipping(self) -> bool:
        return any(skip for _, skip in self.stack)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.alts.append((a.get("src", ""), a.get("alt")))
            return
        if tag in ("br", "hr", "meta", "link", "input", "wbr", "source", "col", "area", "base"):
            return
        classes = (a.get("class") or "").split()
        skip = (tag in self.SKIP or "math" in classes or "highlight" in classes
                or a.get("hidden") is not None)
        self.stack.append((tag, skip))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        if self.stack and self.stack[-1][0] == "title":
            self.title.append(data)
        elif not self._skipping():
            self.text.append(data)


RAW_TEX = re.compile(r"\$|\\\(|\\\[")


def raw_tex(page_html: str) -> list[str]:
    """Snippets of raw TeX a reader would see on a page (text and title)."""
    p = _VisibleText()
    p.feed(page_html)
    found = []
    for where, text in (("title", "".join(p.title)), ("text", " ".join(p.text))):
        for m in RAW_TEX.finditer(text):
            found.append(f"{where}: …{text[max(0, m.start() - 40):m.end() + 20]}…")
    return found


def bad_alts(page_html: str) -> list[tuple[str, str | None]]:
    """Images whose alt text is missing, empty or a file path."""
    p = _VisibleText()
    p.feed(page_html)
    return [(src, alt) for src, alt in p.alts
            if not alt or not alt.strip() or re.search(r"\.(png|jpe?g|svg|gif)\b|_images/", alt)]


def _pages(html_dir: Path) -> list[Path]:
    return sorted(p for p in html_dir.rglob("*.html") if "_static" not in p.parts)


@book
def test_no_page_shows_raw_tex_titles_and_search_index_included(book_site):
    _, html_dir = book_site
    found = {}
    for page in _pages(html_dir):
        hits = raw_tex(page.read_text(encoding="utf-8"))
        if hits:
            found[str(page.relative_to(html_dir))] = hits[:3]
    assert found == {}, found
    index = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    data = json.loads(index[index.index("(") + 1:index.rindex(")")])
    titles = list(data["titles"]) + list(data.get("alltitles", {}))
    assert [t for t in titles if RAW_TEX.search(t)] == []


def test_raw_tex_check_fails_on_planted_pages():
    assert raw_tex("<p>the rule <strong>never changes $G$</strong></p>")
    assert raw_tex("<title>the p in \\(p^G + (1-p)^G\\)</title><p>ok</p>")
    assert raw_tex("<p>see \\[x\\]</p>")
    clean = ("<title>the p in p^G + (1−p)^G</title><p>typeset <span class='math notranslate'>"
             "\\(p^G\\)</span></p><div class='math'>\\[x\\]</div><pre>$HOME</pre>"
             "<div class='highlight'><pre>cost = $5</pre></div><code>$G$</code>")
    assert raw_tex(clean) == []


@book
def test_every_image_has_alt_text_that_says_what_it_shows(book_site):
    _, html_dir = book_site
    found, count = {}, 0
    for page in _pages(html_dir):
        text = page.read_text(encoding="utf-8")
        count += text.count("<img")
        bad = bad_alts(text)
        if bad:
            found[str(page.relative_to(html_dir))] = bad[:3]
    assert count >= 20, f"only {count} images in the book"
    assert found == {}, found
    sweep = (html_dir / "labs" / "01-g-sweep.html").read_text(encoding="utf-8")
    alts = [a for _, a in _alts(sweep)]
    assert alts and all(len(a) > 40 and ("axis" in a or "Figure" in a) for a in alts), alts


def _alts(page_html: str):
    p = _VisibleText()
    p.feed(page_html)
    return p.alts


def test_alt_check_fails_on_planted_pages():
    assert bad_alts('<img src="../_images/ab.png" alt="../_images/ab.png">')
    assert bad_alts('<img src="x.png" alt="">') and bad_alts('<img src="x.png">')
    assert bad_alts('<img src="x.png" alt="probe.png">')
    assert bad_alts('<img src="x.png" alt="Chart: P(zero-variance group) against G.">') == []


# ----------------------------------------------------------------------------------------
# The playground explains itself
# ----------------------------------------------------------------------------------------
PLAYGROUND = "labs/04-playground"
INERT_BY_DEFAULT = ("baseline", "loss_type", "prompts_per_step", "max_batches", "x_axis")


def _playground(offline_page, fragment: str = "", **options):
    tab = offline_page(PLAYGROUND + fragment, math=False, **options)
    tab.page.wait_for_selector(".grpolab-toy[data-runs]", timeout=60_000)
    return tab


def _runs(page) -> int:
    return int(page.locator(".grpolab-toy").get_attribute("data-runs"))


def _inert_note(page, key: str) -> str | None:
    """The visible note that says why control ``key`` has no effect (None if there is none)."""
    return page.evaluate(
        """key => { const c = document.querySelector(`.grpolab-toy [data-param=${key}]`);
        const id = c.getAttribute('aria-describedby'); const n = id && document.getElementById(id);
        return n && !n.hidden && n.getClientRects().length ? n.textContent : null; }""", key)


@book
def test_inert_controls_say_why(offline_page):
    tab = _playground(offline_page)
    page = tab.page
    for key in INERT_BY_DEFAULT:
        note = _inert_note(page, key)
        assert note is not None and ("No effect" in note or "keep their shape" in note), key
        assert page.locator(f".grpolab-toy [data-param={key}]").get_attribute(
            "data-inert") == "true"
    for key in ("learning_rate", "budget", "optimizer"):
        assert _inert_note(page, key) is None, key
    runs = _runs(page)
    page.locator(".grpolab-toy select[data-param=mode]").select_option("prompts")
    page.wait_for_function(f"() => Number(document.querySelector('.grpolab-toy')"
                           f".getAttribute('data-runs')) > {runs}")
    assert _inert_note(page, "prompts_per_step") is None
    assert "prompts per step" in (_inert_note(page, "budget") or "")
    runs = _runs(page)
    page.locator(".grpolab-toy select[data-param=optimizer]").select_option("sgd")
    page.wait_for_function(f"() => Number(document.querySelector('.grpolab-toy')"
                           f".getAttribute('data-runs')) > {runs}")
    assert _inert_note(page, "baseline") is None
    tab.assert_clean()


@book
def test_a_scenario_link_opens_with_its_explanation_and_back_returns(offline_page):
    first, second = SCENARIOS[0], SCENARIOS[1]
    tab = _playground(offline_page, "#" + first.hash)
    page = tab.page
    assert page.locator(".grpolab-toy-scenario-note").inner_text() == first.notice
    assert page.locator(".grpolab-toy-url-note").is_hidden()
    curves_first = page.locator(".grpolab-toy svg polyline").evaluate_all(
        "els => els.map(e => e.getAttribute('points')).join('|')")
    runs = _runs(page)
    page.locator(f"button[data-scenario='{second.key}']").click()
    page.wait_for_function(f"() => Number(document.querySelector('.grpolab-toy')"
                           f".getAttribute('data-runs')) > {runs}")
    assert page.locator(".grpolab-toy-scenario-note").inner_text() == second.notice
    runs = _runs(page)
    page.go_back()
    page.wait_for_function(f"() => Number(document.querySelector('.grpolab-toy')"
                           f".getAttribute('data-runs')) > {runs}")
    assert page.evaluate("() => location.hash") == "#" + encode_state(parse_state(first.hash))
    assert page.locator(".grpolab-toy-scenario-note").inner_text() == first.notice
    assert page.locator(".grpolab-toy svg polyline").evaluate_all(
        "els => els.map(e => e.getAttribute('points')).join('|')") == curves_first
    tab.assert_clean()


@book
def test_a_scenario_link_in_the_text_brings_the_figures_into_view(offline_page):
    tab = _playground(offline_page, viewport={"width": 390, "height": 844})
    page = tab.page
    sc = SCENARIOS[2]
    link = page.locator(f"a.grpolab-toy-scenario-link[data-scenario='{sc.key}']")
    link.scroll_into_view_if_needed()
    runs = _runs(page)
    link.click()
    page.wait_for_function(f"() => Number(document.querySelector('.grpolab-toy')"
                           f".getAttribute('data-runs')) > {runs}")
    page.wait_for_timeout(200)
    top, bottom = page.evaluate(
        "() => { const r = document.querySelector('.grpolab-toy-figures-top')"
        ".getBoundingClientRect(); return [r.top, r.bottom]; }")
    assert 0 <= top < 844 * 0.5, f"the figures are not in view after the link (top at {top})"
    assert page.locator(".grpolab-toy-scenario-note").inner_text() == sc.notice
    runs = _runs(page)
    page.go_back()  # Back returns to the default setting, with no bare '#'
    page.wait_for_function(f"() => Number(document.querySelector('.grpolab-toy')"
                           f".getAttribute('data-runs')) > {runs}")
    assert page.evaluate("() => location.hash") == ""
    assert not page.url.endswith("#")
    tab.assert_clean()


@book
@pytest.mark.parametrize("fragment,note", [
    ("#n_prompts=5000", "n_prompts = 5000 is out of range (4 to 512); using 512."),
    ("#n_prompts=0", "n_prompts = 0 is out of range (4 to 512); using 4."),
    ("#learning_rate=0.07&optimizer=rmsprop",
     "learning_rate = 0.07 is not one of the slider's values; using 0.05."),
])
def test_out_of_range_url_values_are_clamped_with_a_note(offline_page, fragment, note):
    tab = _playground(offline_page, fragment)
    page = tab.page
    shown = page.locator(".grpolab-toy-url-note")
    assert shown.is_visible() and note in shown.inner_text(), shown.inner_text()
    assert page.locator(".grpolab-toy").get_attribute("data-error") is None
    assert page.locator(".grpolab-toy svg[data-figure=curves] polyline").count() > 0
    ms = float(page.locator("[data-role=status]").get_attribute("data-ms"))
    assert ms < 20_000, f"the clamped setting took {ms:.0f} ms to train"
    tab.assert_clean()


@book
def test_a_budget_smaller_than_every_g_says_so(offline_page):
    tab = _playground(offline_page, "#G=64&budget=16")
    page = tab.page
    status = page.locator("[data-role=status]").inner_text()
    assert status.startswith("No G fits the budget") and "at least 64" in status, status
    empty = page.locator(".grpolab-toy svg .grpolab-toy-empty").all_text_contents()
    assert len(empty) == 4 and all("budget" in t for t in empty), empty
    tab.assert_clean()


# ----------------------------------------------------------------------------------------
# Page weight
# ----------------------------------------------------------------------------------------
def page_weight(tab) -> int:
    """Bytes the page transferred (every response body), once the network is idle."""
    return tab.page.evaluate(
        "() => performance.getEntriesByType('resource').concat(performance.getEntriesByType"
        "('navigation')).reduce((s, e) => s + (e.decodedBodySize || 0), 0)")


@book
def test_the_median_page_transfers_under_2_5_mb_offline(offline_page, book_site, record_property):
    _, html_dir = book_site
    names = [str(p.relative_to(html_dir).with_suffix("")) for p in _pages(html_dir)
             if p.name != "index.html"]  # index.html is a redirect to intro
    weights = {}
    for name in names:
        tab = offline_page(name, wait="networkidle")
        weights[name] = page_weight(tab)
        tab.assert_clean()
        tab.context.close()
    median = statistics.median(weights.values())
    record_property("median_page_bytes", median)
    print("\npage weights (MB):", json.dumps({k: round(v / 1e6, 2) for k, v in
                                              sorted(weights.items(), key=lambda kv: kv[1])}))
    assert len(weights) >= 20
    assert median < MAX_MEDIAN_BYTES, f"median page {median / 1e6:.2f} MB"
    intro = _resources(offline_page, "intro")
    assert not any("fontawesome.js" in e for e in intro)
    assert not any("mathjax/ui/menu" in e for e in intro), "MathJax's 426 KB menu came back"
    assert any("mathjax/output/chtml" in e for e in intro), "the intro's math needs MathJax"
    search = _resources(offline_page, "search")
    assert any(e.endswith("searchindex.js") for e in search), "search needs its index"
    assert not any(e.endswith("searchindex.js") for e in intro)


def _resources(offline_page, name: str) -> list[str]:
    tab = offline_page(name, wait="networkidle")
    return tab.page.evaluate("() => performance.getEntriesByType('resource').map(e => e.name)")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_page_weight_measure_fails_on_a_planted_page(offline_page, tmp_path):
    (tmp_path / "big.js").write_text("// " + "x" * 3_000_000)
    (tmp_path / "page.html").write_text("<html><script src='big.js'></script><p>hi</p></html>")
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        tab = offline_page(f"http://127.0.0.1:{server.server_address[1]}/page.html",
                           wait="networkidle", math=False)
        assert page_weight(tab) > MAX_MEDIAN_BYTES
    finally:
        server.shutdown()
        server.server_close()


# ----------------------------------------------------------------------------------------
# Issue 35: on a phone a small figure is visibly linked to its full size; at 1280 px a wide
# table scrolls with a scrollbar the reader sees; no code cell in view only imports, loads
# or glues
# ----------------------------------------------------------------------------------------
MIN_PHONE_TEXT_PX = 9.0

PHONE_FIGURE_JS = r"""
() => [...document.querySelectorAll(".bd-article img")].filter(i => i.naturalWidth > 0)
  .map(img => {
    const src = img.currentSrc || img.src, hint = img.nextElementSibling;
    const link = hint && hint.classList.contains("grpolab-zoom-hint")
      ? hint.querySelector("a[href]") : null;
    const box = link ? link.getBoundingClientRect() : null;
    const shown = !!(box && box.width > 0 && box.height > 0
                     && getComputedStyle(link).visibility !== "hidden");
    return {src: img.getAttribute("src"),
            textPx: parseFloat(img.getAttribute("data-grpolab-text-px")) || null,
            scale: img.getBoundingClientRect().width / img.naturalWidth,
            linked: shown && link.href === src};
  })
"""


def _small_and_not_linked(images: list[dict]) -> list[tuple]:
    """Images whose text reads under MIN_PHONE_TEXT_PX as shown (or of unknown size) and
    that have no visible link to their full size."""
    return [(i["src"], i["textPx"] and round(i["textPx"] * i["scale"], 1)) for i in images
            if (i["textPx"] is None or i["textPx"] * i["scale"] < MIN_PHONE_TEXT_PX)
            and not i["linked"]]


def _pages_with_images(html_dir: Path) -> list[str]:
    return [str(p.relative_to(html_dir).with_suffix("")) for p in _pages(html_dir)
            if p.name != "index.html" and "<img" in p.read_text(encoding="utf-8")]


@book
def test_small_figures_on_a_phone_are_visibly_linked_to_full_size(offline_page, book_site):
    _, html_dir = book_site
    names = _pages_with_images(html_dir)
    assert len(names) >= 5
    failures, shrunk = {}, 0
    for name in names:
        tab = offline_page(name, viewport={"width": 390, "height": 844})
        tab.page.wait_for_function(
            "() => [...document.querySelectorAll('.bd-article img')].every(i => i.complete)")
        images = tab.page.evaluate(PHONE_FIGURE_JS)
        shrunk += sum(i["scale"] < 0.95 for i in images)
        bad = _small_and_not_linked(images)
        if bad:
            failures[name] = bad
        tab.assert_clean()
        tab.context.close()
    assert shrunk > 0, "no figure is shown below its natural size at 390 px: nothing measured"
    assert failures == {}


def test_phone_figure_check_fails_on_a_planted_page(offline_page, tmp_path):
    """A wide figure shown at a quarter of its size with no link is caught; the same figure
    with the book's visible 'Tap to enlarge' link (grpolab-zoom.js) passes."""
    from PIL import Image

    Image.new("RGB", (1600, 400), "white").save(tmp_path / "wide.png")
    zoom = (Path(__file__).resolve().parents[1] / "src/grpolab/book/static/grpolab-zoom.js")
    css = (Path(__file__).resolve().parents[1] / "src/grpolab/book/static/grpolab-sliders.css")
    body = "<img src='wide.png' data-grpolab-text-px='14' style='width:400px'>"
    (tmp_path / "bare.html").write_text(
        f"<html><body><div class='bd-article' style='width:400px'>{body}</div></body></html>")
    (tmp_path / "hinted.html").write_text(
        f"<html><head><style>{css.read_text()}</style></head><body>"
        f"<div class='bd-article' style='width:400px'>{body}</div>"
        f"<script>{zoom.read_text()}</script></body></html>")
    bare = offline_page((tmp_path / "bare.html").as_uri(), viewport={"width": 390, "height": 800})
    assert _small_and_not_linked(bare.page.evaluate(PHONE_FIGURE_JS)) == [("wide.png", 3.5)]
    hinted = offline_page((tmp_path / "hinted.html").as_uri(),
                          viewport={"width": 390, "height": 800})
    hinted.page.wait_for_selector(".grpolab-zoom-hint a", state="visible")
    assert _small_and_not_linked(hinted.page.evaluate(PHONE_FIGURE_JS)) == []
    hinted.page.click(".grpolab-zoom-hint a")  # the link opens the full-size view
    hinted.page.locator(".grpolab-zoom img.grpolab-zoomed").wait_for(state="visible")


TABLE_OVERFLOW_JS = r"""
() => {
  const article = document.querySelector(".bd-article") || document.body;
  const col = article.getBoundingClientRect();
  const out = [];
  for (const t of article.querySelectorAll("table")) {
    if (!t.getClientRects().length) { continue; }
    const name = (t.querySelector("th, td") || t).textContent.trim().slice(0, 40);
    let scroller = null;
    for (let n = t.parentElement; n && n !== article.parentElement; n = n.parentElement) {
      const ox = getComputedStyle(n).overflowX;
      if ((ox === "auto" || ox === "scroll") && n.scrollWidth > n.clientWidth + 1) {
        scroller = n;
        break;
      }
    }
    const right = t.getBoundingClientRect().right;
    if (!scroller) {
      if (right > col.right + 1) { out.push({table: name, problem: "cut", width: t.scrollWidth}); }
      continue;
    }
    const cs = getComputedStyle(scroller), box = scroller.getBoundingClientRect();
    const bar = scroller.offsetHeight - scroller.clientHeight
      - parseFloat(cs.borderTopWidth) - parseFloat(cs.borderBottomWidth);
    out.push({table: name, width: t.scrollWidth, shown: scroller.clientWidth, bar: bar,
              problem: bar < 4 ? "scrolls without a visible scrollbar"
                     : box.right > col.right + 1 ? "its scroller is wider than the column" : null});
  }
  return out;
}
"""

SCROLLBAR_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                   "--disable-background-networking", "--disable-component-update",
                   "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def scrollbar_browser(browser):
    """A second Chromium that draws scrollbars: Playwright starts headless Chromium with
    --hide-scrollbars, which would hide the very thing measured here."""
    import shutil

    b = browser.browser_type.launch(
        executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
        args=SCROLLBAR_FLAGS, ignore_default_args=["--hide-scrollbars"])
    yield b
    b.close()


def _tables(browser, url: str, width: int = 1280) -> list[dict]:
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        origin = url.split("/", 3)[:3]
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            ("/".join(origin), "data:", "blob:", "file:")) else r.abort())
        page = context.new_page()
        page.goto(url, wait_until="load")
        return page.evaluate(TABLE_OVERFLOW_JS)
    finally:
        context.close()


@book
def test_no_table_is_cut_without_a_visible_scrollbar_at_1280(scrollbar_browser, book_site):
    base, html_dir = book_site
    names = [str(p.relative_to(html_dir).with_suffix("")) for p in _pages(html_dir)
             if p.name != "index.html" and "<table" in p.read_text(encoding="utf-8")]
    failures, scrolling = {}, 0
    for name in names:
        found = _tables(scrollbar_browser, f"{base}/{name}.html")
        scrolling += sum("bar" in t for t in found)
        bad = [t for t in found if t["problem"]]
        if bad:
            failures[name] = bad
    assert len(names) >= 10
    assert scrolling > 0, "no table is wider than the column at 1280 px: nothing measured"
    assert failures == {}


def test_table_check_fails_on_a_planted_page(scrollbar_browser, tmp_path):
    """A wide table cut by a hidden overflow, and one in a scroller whose scrollbar is
    switched off: both caught; the same table in the book's scroll box passes."""
    css = (Path(__file__).resolve().parents[1] / "src/grpolab/book/static/grpolab-sliders.css")
    row = "<tr>" + "".join(f"<td>column&nbsp;{i}&nbsp;of&nbsp;a&nbsp;wide&nbsp;table</td>"
                           for i in range(12)) + "</tr>"
    (tmp_path / "t.html").write_text(
        f"<html><head><style>{css.read_text()}</style></head><body>"
        f"<div class='bd-article' style='width:600px'>"
        f"<div style='overflow:hidden'><table>{row}</table></div>"
        f"<div style='overflow-x:auto;scrollbar-width:none'><table>{row}</table></div>"
        f"<div class='grpolab-scroll'><table>{row}</table></div></div></body></html>")
    found = _tables(scrollbar_browser, (tmp_path / "t.html").as_uri())
    assert [t["problem"] for t in found] == ["cut", "scrolls without a visible scrollbar", None]


_PLUMBING = re.compile(
    r"^(import |from \S+ import |glue\(|[\w\[\]\"', .]+\s*=\s*(json\.loads?\(|[\w.]*read_\w+\(|"
    r"[\w.]*load\w*\(|committed_results_dir\(|open\(|Path\())")


def _statements(code: str) -> list[str]:
    """The code's statements, one string each (continuation lines joined, comments out)."""
    out, buf, depth = [], "", 0
    for line in code.splitlines():
        s = "" if line.lstrip().startswith("#") else line.rstrip()
        if not s.strip() and not buf:
            continue
        buf += " " + s.strip()
        depth += sum(s.count(c) for c in "([{") - sum(s.count(c) for c in ")]}")
        if depth <= 0 and not s.endswith("\\"):
            out.append(buf.strip())
            buf, depth = "", 0
    if buf.strip():
        out.append(buf.strip())
    return out


def is_plumbing(code: str) -> bool:
    """A cell that only imports, loads a file or glues a value for the text."""
    statements = _statements(code)
    return bool(statements) and all(_PLUMBING.match(s) for s in statements)


_CELL = re.compile(r'<div class="cell( [^"]*)?">(.*?)(?=<div class="cell[ "]|</section>|$)', re.S)
_INPUT = re.compile(r'<div class="cell_input[^"]*">.*?<pre>(.*?)</pre>', re.S)


def visible_plumbing_cells(page_html: str) -> list[str]:
    """The code of every cell whose input is in view (not hidden or removed by a tag) and
    that only imports, loads or glues."""
    out = []
    for m in _CELL.finditer(page_html):
        classes = m.group(1) or ""
        if re.search(r"tag_(hide|remove)-(input|cell)", classes):
            continue
        inp = _INPUT.search(m.group(2))
        if not inp:
            continue
        code = html.unescape(re.sub(r"<[^>]+>", "", inp.group(1)))
        if is_plumbing(code):
            out.append(code.strip().splitlines()[0])
    return out


@book
def test_no_code_cell_in_view_only_imports_loads_or_glues(book_site):
    _, html_dir = book_site
    pages = _pages(html_dir)
    seen = sum(p.read_text(encoding="utf-8").count('<div class="cell_input') for p in pages)
    assert seen > 50, "no code cell found: the check measured nothing"
    found = {str(p.relative_to(html_dir)): visible_plumbing_cells(p.read_text(encoding="utf-8"))
             for p in pages}
    assert {k: v for k, v in found.items() if v} == {}


def test_plumbing_check_fails_on_planted_cells():
    def cell(code: str, tags: str = "") -> str:
        return (f'<div class="cell{tags} docutils container"><div class="cell_input docutils '
                f'container"><div class="highlight"><pre>{html.escape(code)}</pre></div></div>'
                f'</div>')

    page = (cell("import numpy as np\nfrom myst_nb import glue\n")
            + cell('summary = json.load(open("s.json"))\nglue("x", 1, display=False)')
            + cell("import json", " tag_remove-input")
            + cell("import json", " tag_hide-input")
            + cell("x = np.arange(3)\nplt.plot(x, x ** 2)")
            + cell('glue("x", theory.zero_variance_probability(\n    0.1, 4), display=False)'))
    assert visible_plumbing_cells(page) == ["import numpy as np", 'summary = json.load(open('
                                            '"s.json"))', 'glue("x", theory.zero_variance_'
                                            'probability(']
