"""`dvc plots show` writes a page that draws its curves without a network.

DVC's default page loads vega, vega-lite and vega-embed from a CDN; offline, every curve
is blank. `.dvc/config` points `plots.html_template` at `.dvc/plots/offline.html`, which
carries the three libraries inline (written by tools/offline_template.py).
"""

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


class Scripts(HTMLParser):
    """Every <script> tag's attributes and text, and every attribute that names a URL."""

    def __init__(self):
        super().__init__()
        self.scripts: list[tuple[dict, str]] = []
        self.urls: list[str] = []
        self._open: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.urls += [v for k, v in attrs.items() if k in ("src", "href") and v and "://" in v]
        if tag == "script":
            self._open = attrs
            self.scripts.append((attrs, ""))

    def handle_data(self, data):
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._open = None


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("dvc_plots")
    subprocess.run([sys.executable, "-m", "dvc", "plots", "show", "-o", str(out)], cwd=ROOT, check=True)
    return (out / "index.html").read_text(encoding="utf8")


@pytest.mark.slow
def test_page_loads_nothing_from_the_network(page):
    parsed = Scripts()
    parsed.feed(page)
    assert not [attrs["src"] for attrs, _ in parsed.scripts if "src" in attrs], "a <script src=...> on the page"
    assert not parsed.urls, f"the page fetches {parsed.urls}"
    assert "cdn." not in page.lower()
    # The libraries are defined inline, before the plots that call vegaEmbed.
    library = next(i for i, (_, text) in enumerate(parsed.scripts) if "window.vegaEmbed=" in text)
    assert all(f"window.{name}=" in parsed.scripts[library][1] for name in ("vega", "vegaLite"))
    callers = [i for i, (_, text) in enumerate(parsed.scripts) if "vegaEmbed(" in text and i != library]
    assert len(callers) == 4 and min(callers) > library


@pytest.mark.slow
def test_curves_name_their_axes(page):
    specs = [json.loads(s) for s in re.findall(r"var spec = (\{.*\});\n", page)]
    titles = {}
    for spec in specs:
        axes = {"x": set(), "y": set()}
        layers = spec.get("layer", [])
        for node in [spec, *layers, *(inner for layer in layers for inner in layer.get("layer", []))]:
            for axis in axes:
                if "title" in node.get("encoding", {}).get(axis, {}):
                    axes[axis].add(node["encoding"][axis]["title"])
        titles[spec["title"]["text"]] = axes
    assert titles == {
        "Training loss per step": {"x": {"optimizer step"}, "y": {"cross-entropy loss"}},
        "Gradient norm before clipping": {"x": {"optimizer step"}, "y": {"gradient L2 norm"}},
        "Accuracy per epoch": {"x": {"epoch"}, "y": {"accuracy"}},
        "Loss per epoch": {"x": {"epoch"}, "y": {"cross-entropy loss"}},
    }


@pytest.mark.slow
def test_epoch_curves_tick_whole_epochs_and_name_train_and_validation_in_colour(page):
    vl_convert = pytest.importorskip("vl_convert")
    specs = {spec["title"]["text"]: spec for spec in map(json.loads, re.findall(r"var spec = (\{.*\});\n", page))}
    for title in ("Accuracy per epoch", "Loss per epoch"):
        svg = vl_convert.vegalite_to_svg(json.dumps(specs[title]))
        labels = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
        assert {"train", "validation"} <= set(labels), f"{title}: legend {labels}"
        assert not [label for label in labels if ".tsv" in label or "::" in label], f"{title}: file names in {labels}"
        ticks = [label for label in labels if re.fullmatch(r"\d+(\.\d+)?", label) and float(label) >= 1]
        assert ticks and all(float(t).is_integer() for t in ticks), f"{title}: epoch ticks {ticks}"
        colours = set(re.findall(r'<path[^>]*aria-roledescription="line mark"[^>]*stroke="(#[0-9a-f]{6})"', svg))
        assert len(colours) == 2, f"{title}: train and validation lines share a colour ({colours})"


def test_offline_template_is_current():
    """The committed template is what tools/offline_template.py writes from the pinned vl-convert."""
    pytest.importorskip("vl_convert")
    done = subprocess.run([sys.executable, "tools/offline_template.py", "--check"], cwd=ROOT, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
