"""Alt text and text size of the book's figures, from the figures themselves.

A screen reader reads an image's ``alt``; the HTML book showed each figure's file path there.
The book build (:mod:`grpolab.book.build`) gives every ``<img>`` a sentence that says what it
shows, made from the figure's title, axes and legend:

- a matplotlib figure drawn while the book's notebooks run: :func:`install` (a matplotlib
  ``figure.hooks`` entry the build sets for its kernels) makes every PNG carry, as PNG text
  chunks, the figure's description (:func:`describe_figure`, key ``Description``) and the
  size of its smallest axis text in pixels (key ``grpolab:axis-text-px``);
- a committed PNG a page displays from ``labs/results`` (written by a lab's report at run
  time): the same description read from the matplotlib SVG saved next to it
  (:func:`describe_svg`), found by the PNG's content hash (:func:`committed_figures`).

:func:`png_info` reads either back for the build. The axis-text size is what the full-size
view of a figure (``grpolab-zoom.js``) uses to open it at a readable scale.
"""

from __future__ import annotations

import functools
import hashlib
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FigureText", "committed_figures", "describe_figure", "describe_svg", "install",
           "png_info"]

#: PNG text-chunk keys the hook writes.
DESCRIPTION_KEY = "Description"
TEXT_PX_KEY = "grpolab:axis-text-px"
#: At most this many legend entries are named per panel (the rest are counted).
MAX_LEGEND = 8
MAX_CHARS = 600


@dataclass(frozen=True)
class FigureText:
    """What a figure says in words (``description``) and its smallest axis text (points)."""

    description: str
    axis_text_pt: float | None


@dataclass
class _Panel:
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    xrange: tuple[str, str] | None = None
    yrange: tuple[str, str] | None = None
    xlog: bool = False
    ylog: bool = False
    legend: tuple[str, ...] = ()
    kind: str = "chart"
    notes: tuple[str, ...] = ()


_SUPERSCRIPT = str.maketrans("0123456789-+", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺")


def _plain(text: str) -> str:
    """Matplotlib mathtext (``$\\mathdefault{2^{4}}$``, ``$\\sigma^2$``) as plain text."""
    import html

    text = html.unescape(text)

    def sup(m: re.Match) -> str:
        body = m.group(1)
        return body.translate(_SUPERSCRIPT) if re.fullmatch(r"[-+0-9]+", body) else f"^{body}"

    text = re.sub(r"\^\{([^{}]*)\}", sup, text)
    text = re.sub(r"_\{([^{}]*)\}", r"_\1", text)
    text = re.sub(r"\\(mathdefault|mathrm|text|mathit|mathbf)\{([^{}]*)\}", r"\2", text)
    text = text.replace("$", "").replace("\\", "").replace("{", "").replace("}", "")
    text = text.replace("\u2212", "−")
    return re.sub(r"\s+", " ", text).strip()


def _sentence(figure_title: str, panels: list[_Panel]) -> str:
    def axis(name: str, label: str, rng, log: bool) -> str:
        if not label and not rng:
            return ""
        out = f"{name} axis: {label or 'unlabelled'}"
        if rng and rng[0] != rng[1]:
            out += f", {rng[0]} to {rng[1]}"
        return out + (" (log scale)" if log else "")

    def panel(p: _Panel, single: bool = False) -> str:
        kind = p.kind.capitalize() if single else p.kind
        head = (f"{kind}: {p.title}" if single or p.kind != "chart" else p.title) if p.title \
            else kind
        bits = [b for b in (axis("x", p.xlabel, p.xrange, p.xlog),
                            axis("y", p.ylabel, p.yrange, p.ylog)) if b]
        if p.legend:
            names = list(dict.fromkeys(p.legend))
            more = len(names) - MAX_LEGEND
            shown = ", ".join(names[:MAX_LEGEND]) + (f" and {more} more" if more > 0 else "")
            bits.append(f"legend: {shown}")
        bits += p.notes
        return head + (f" ({'; '.join(bits)})" if bits else "")

    parts = []
    if figure_title:
        parts.append(f"Figure: {figure_title}.")
    if len(panels) == 1:
        parts.append(panel(panels[0], single=True) + ".")
    elif panels:
        parts.append(f"{len(panels)} panels. " + " ".join(
            f"Panel {i}: {panel(p)}." for i, p in enumerate(panels, 1)))
    text = " ".join(parts) or "Figure (no title or axis labels)."
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - 1].rstrip() + "…"


# ----------------------------------------------------------------------------------------
# From a matplotlib Figure
# ----------------------------------------------------------------------------------------
def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _range(axis, limits) -> tuple[str, str]:
    """First and last tick label the reader sees (inside the limits), else the limits."""
    lo, hi = sorted(limits)
    pad = 1e-9 * max(abs(lo), abs(hi), 1e-300)
    shown = [_plain(t.get_text()) for loc, t in zip(axis.get_majorticklocs(),
                                                    axis.get_majorticklabels(), strict=False)
             if lo - pad <= loc <= hi + pad and t.get_visible() and t.get_text().strip()]
    if len(shown) >= 2:
        return shown[0], shown[-1]
    return _fmt(lo), _fmt(hi)


def describe_figure(fig) -> FigureText:
    """A sentence for ``fig`` (its suptitle, each panel's title, axes, ranges and legend) and
    the size in points of its smallest tick label or axis label."""
    sup = getattr(fig, "_suptitle", None)
    title = _plain(sup.get_text()) if sup is not None and sup.get_visible() else ""
    panels, sizes = [], []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        is_colorbar = hasattr(ax, "_colorbar")
        for t in [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label]:
            if t.get_visible() and t.get_text().strip():
                sizes.append(float(t.get_fontsize()))
        if is_colorbar:  # described with the panel it belongs to
            if panels and ax.get_ylabel():
                panels[-1].notes += (f"colour scale: {_plain(ax.get_ylabel())}",)
            continue
        legend = ax.get_legend()
        p = _Panel(title=_plain(ax.get_title() or ax.get_title("left") or ax.get_title("right")),
                   xlabel=_plain(ax.get_xlabel()), ylabel=_plain(ax.get_ylabel()),
                   xrange=_range(ax.xaxis, ax.get_xlim()),
                   yrange=_range(ax.yaxis, ax.get_ylim()),
                   xlog=ax.get_xscale() == "log", ylog=ax.get_yscale() == "log",
                   legend=tuple(_plain(t.get_text()) for t in legend.get_texts())
                   if legend is not None else (),
                   kind="heat map" if ax.images else "chart")
        panels.append(p)
    return FigureText(_sentence(title, panels), min(sizes) if sizes else None)


_INSTALLED = False


def install(fig=None) -> None:
    """Make every PNG that matplotlib's Agg canvas writes carry :func:`describe_figure`'s
    description and axis-text size as text chunks (unless the caller passed its own
    ``Description``). The book build lists it in matplotlib's ``figure.hooks`` for the
    notebooks it runs, so it takes effect with the first figure; installing twice is a no-op.
    """
    global _INSTALLED
    if _INSTALLED:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    original = FigureCanvasAgg.print_png

    # wraps: matplotlib reads the signature (through __wrapped__) and the module of a
    # print method to know which of its optional arguments to pass (orientation, dpi...).
    @functools.wraps(original)
    def print_png(self, filename_or_obj, *args, metadata=None, **kwargs):
        metadata = dict(metadata or {})
        if DESCRIPTION_KEY not in metadata:
            try:
                info = describe_figure(self.figure)
            except Exception:  # a description must never break a figure
                info = None
            if info is not None:
                metadata[DESCRIPTION_KEY] = info.description
                if info.axis_text_pt:
                    px = info.axis_text_pt * self.figure.dpi / 72
                    metadata[TEXT_PX_KEY] = f"{px:.2f}"
        return original(self, filename_or_obj, *args, metadata=metadata, **kwargs)

    FigureCanvasAgg.print_png = print_png
    _INSTALLED = True


# ----------------------------------------------------------------------------------------
# From a matplotlib SVG (text drawn as paths: the strings survive as comments)
# ----------------------------------------------------------------------------------------
_SVG = "{http://www.w3.org/2000/svg}"


def _texts(group) -> list[tuple[str, float | None]]:
    """The strings drawn inside ``group`` (matplotlib's ``<!-- text -->`` comments) with their
    font size in points (the glyphs' ``scale(s -s)``: size = 100·s)."""
    out = []
    for node in group.iter():
        if node.tag is ET.Comment:
            out.append([_plain(node.text or ""), None])
        elif out and out[-1][1] is None and node.tag == f"{_SVG}g":
            m = re.search(r"scale\(([\d.]+) -[\d.]+\)", node.get("transform", ""))
            if m:
                out[-1][1] = round(100 * float(m.group(1)), 2)
    return [(t, s) for t, s in out if t]


def _children(node, prefix: str) -> list:
    return [c for c in node if c.tag == f"{_SVG}g" and c.get("id", "").startswith(prefix)]


def describe_svg(svg_text: str) -> FigureText:
    """:func:`describe_figure` for the SVG matplotlib saved of a figure."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    root = ET.fromstring(svg_text.encode(), parser=parser)
    figure = root.find(f".//{_SVG}g[@id='figure_1']")
    if figure is None:
        return FigureText("Figure (no title or axis labels).", None)
    title = " ".join(t for g in _children(figure, "text_") for t, _ in _texts(g))
    panels, sizes = [], []
    for ax in _children(figure, "axes_"):
        p = _Panel()
        axes = _children(ax, "matplotlib.axis_")
        for k, axis in enumerate(axes[:2]):
            ticks = [t for g in _children(axis, "xtick_") + _children(axis, "ytick_")
                     for t in _texts(g)]
            label = [t for g in _children(axis, "text_") for t in _texts(g)]
            sizes += [s for _, s in ticks + label if s]
            rng = (ticks[0][0], ticks[-1][0]) if ticks else None
            if k == 0:
                p.xlabel, p.xrange = (label[0][0] if label else ""), rng
            else:
                p.ylabel, p.yrange = (label[0][0] if label else ""), rng
        p.title = " ".join(t for g in _children(ax, "text_") for t, _ in _texts(g))
        p.legend = tuple(t for g in _children(ax, "legend_") for t, _ in _texts(g))
        if not (p.xlabel or p.ylabel or p.title) and not axes:
            continue
        panels.append(p)
    return FigureText(_sentence(title, panels), min(sizes) if sizes else None)


# ----------------------------------------------------------------------------------------
# For the build
# ----------------------------------------------------------------------------------------
def committed_figures(root: str | Path) -> dict[str, Path]:
    """``{sha256 of the PNG's bytes: path of the SVG beside it}`` for every PNG under ``root``
    that has one (the pages name their output images by that hash: myst-nb)."""
    out = {}
    for png in sorted(Path(root).rglob("*.png")):
        svg = png.with_suffix(".svg")
        if svg.is_file():
            out[hashlib.sha256(png.read_bytes()).hexdigest()] = svg
    return out


def png_info(path: str | Path, committed: dict[str, Path] | None = None) -> dict:
    """``{"description": str | None, "axis_text_px": float | None}`` for the PNG at ``path``:
    from its text chunks (:func:`install`), else from a committed figure's SVG."""
    from PIL import Image

    path = Path(path)
    with Image.open(path) as im:
        info = dict(im.info)
    description = info.get(DESCRIPTION_KEY)
    px = info.get(TEXT_PX_KEY)
    if description:
        return {"description": description, "axis_text_px": float(px) if px else None}
    svg = (committed or {}).get(hashlib.sha256(path.read_bytes()).hexdigest())
    if svg is None:
        return {"description": None, "axis_text_px": None}
    text = describe_svg(svg.read_text(encoding="utf-8"))
    dpi = info.get("dpi", (72.0, 72.0))[0] or 72.0
    return {"description": text.description,
            "axis_text_px": text.axis_text_pt * dpi / 72 if text.axis_text_pt else None}
