"""Write the page template that makes `dvc plots show` work offline.

DVC fills an HTML template with one ``<div>`` per plot (the ``{plot_divs}`` placeholder)
and, where the template asks for them (``{scripts}``), ``<script src=...>`` tags that load
vega, vega-lite and vega-embed from a CDN: offline, every curve on the page is blank. This
template leaves the CDN tags out and carries the three libraries inline instead, from the
bundle that vl-convert-python (pinned in requirements.txt) ships. `.dvc/config` points
``plots.html_template`` at it; DVC resolves that path against `.dvc/`.

The bundle is generated, not written: after upgrading vl-convert-python, run

    python tools/offline_template.py          # rewrite .dvc/plots/offline.html
    python tools/offline_template.py --check  # exit 1 if the committed file is stale

The bytes depend only on the vl-convert version (no dates, no paths), so a rerun changes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import vl_convert as vlc

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / ".dvc" / "plots" / "offline.html"

# DVC's plots are vega-lite v5 specs ("$schema": ".../vega-lite/v5.json"); the newest v5
# compiles them as DVC expects, where vega-lite 6 would warn about the version on every plot.
VEGA_LITE = "5.21"

# DVC substitutes these with str.replace over the whole page, bundle included.
PLACEHOLDERS = ("{plot_divs}", "{refresh_tag}", "{scripts}")

PAGE = """<!DOCTYPE html>
<!-- {provenance}
     Written by tools/offline_template.py; regenerate it rather than editing it. -->
<html>
<head>
    <meta charset="utf-8">
    {refresh_tag}
    <title>DVC Plot</title>
    <style>
        table {{
            border-spacing: 15px;
        }}
    </style>
    <script type="text/javascript">
(function () {{
{bundle}
}})();
    </script>
</head>
<body>
    {plot_divs}
</body>
</html>
"""


def render() -> str:
    """The template's text: the vega bundle inline, DVC's two placeholders, and no ``{scripts}``."""
    bundle = vlc.javascript_bundle(vl_version=VEGA_LITE)
    # Inside <script>, "</script" would end the tag early and "<!--" changes how the HTML
    # parser reads the rest; a placeholder would be replaced by DVC in the middle of the code.
    for bad in ("</script", "<!--", *PLACEHOLDERS):
        if bad in bundle.lower():
            raise SystemExit(f"the vl-convert bundle contains {bad!r}: it cannot go inline as is")
    provenance = (
        f"vega {vlc.get_vega_version()}, vega-lite {VEGA_LITE}, vega-embed {vlc.get_vega_embed_version()}"
        f" (vl-convert-python {vlc.__version__}), inline so that the page needs no network."
    )
    return PAGE.format(provenance=provenance, bundle=bundle, refresh_tag="{refresh_tag}", plot_divs="{plot_divs}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=TEMPLATE, help="where to write the template")
    parser.add_argument("--check", action="store_true", help="only compare: exit 1 if --out differs")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.out.read_text(encoding="utf8") if args.out.is_file() else None
        if current != text:
            print(f"{args.out} is stale: run python tools/offline_template.py", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text, encoding="utf8")
    tmp.replace(args.out)
    print(f"wrote {args.out} ({len(text.encode()) / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
