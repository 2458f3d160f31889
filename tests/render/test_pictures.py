"""Pictures draw what the data holds as the characters it holds: a "$" in a class name or a token is a "$"."""

import pytest

from scratchformer.render import attention_pictures, pictures

NAMES = ["$$", "$\\frac{1}$"]  # matplotlib's mathtext fails on both
TOKENS = ["[CLS]", "$$", "$\\frac{1}$", "^_", "$199 … $99", "[SEP]"]


@pytest.fixture(autouse=True, scope="module")
def cjk_font():
    pictures.use_cjk_font()  # as visualize and predict --plot draw


def probe() -> dict:
    T = len(TOKENS)
    uniform = [[[1 / T] * T for _ in range(T)]]  # one head, (T, T)
    return {
        "text": "$199 … $99 $\\frac{1}$",
        "tokens": TOKENS,
        "query_token": "$\\frac{1}$",
        "query_index": 2,
        "layer": 0,
        "class_names": NAMES,
        "snapshots": [{"epoch": e, "attention": uniform, "probabilities": [0.6, 0.4]} for e in (0, 1)],
    }


@pytest.mark.parametrize(
    "draw",
    [
        lambda: pictures.confusion_figure({"classes": NAMES, "counts": [[3, 1], [0, 4]]}, "confusion $x"),
        lambda: pictures.relevance_figure(
            [("$199 … $99 $\\frac{1}$ → $$", TOKENS[1:-1], [0.1, -0.2, 0.3, -0.4], NAMES[0])], NAMES
        ),
        lambda: attention_pictures.heatmap_figure(probe()),
        lambda: attention_pictures.evolution_figure(probe(), 0),
        lambda: attention_pictures.all_heads_evolution_figure(probe()),
    ],
    ids=["confusion", "relevance", "heatmap", "evolution", "all heads"],
)
def test_a_figure_with_dollars_and_backslashes_in_its_data_draws(tmp_path, draw):
    pictures.save_figure(draw(), tmp_path / "picture.png")
    assert (tmp_path / "picture.png").read_bytes().startswith(b"\x89PNG")


def test_the_animation_frames_draw_a_class_named_dollars():
    assert len(attention_pictures.evolution_frames(probe(), 0)) == 2


def test_the_dollar_is_drawn_as_a_dollar_and_the_setting_is_put_back(tmp_path):
    import matplotlib

    before = matplotlib.rcParams["text.parse_math"]
    figure = pictures.confusion_figure({"classes": NAMES, "counts": [[3, 1], [0, 4]]}, "t")
    labels = [t for t in figure.axes[0].get_xticklabels() if t.get_text()]
    assert [t.get_text() for t in labels] == NAMES and not any(t.get_parse_math() for t in labels)
    pictures.save_figure(figure, tmp_path / "picture.png")
    assert matplotlib.rcParams["text.parse_math"] == before  # a notebook's own figures are left as they were


@pytest.mark.parametrize(
    ("names", "label", "away"),
    [
        (["neg", "pos"], "pos", "toward neg"),
        (["neg", "pos"], "neg", "toward pos"),
        (["a", "b", "c"], "b", "away from b"),
    ],
)
def test_relevance_bars_take_the_colour_of_the_class_they_push_toward(names, label, away):
    import matplotlib.pyplot
    from matplotlib.colors import to_hex

    fig = pictures.relevance_figure([("title", ["好", "差", "的"], [0.5, -0.3, 0.0], label)], names)
    ax = fig.axes[0]
    legend = {
        t.get_text(): to_hex(h.get_facecolor())
        for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=True)
    }
    assert list(legend) == [f"toward {label}", away]
    bars = [to_hex(bar.get_facecolor()) for bar in ax.patches]
    # Above 0 toward the label, below 0 the other way; 0 pushes nowhere and keeps the label's colour.
    assert bars == [legend[f"toward {label}"], legend[away], legend[f"toward {label}"]]
    assert legend[f"toward {label}"] != legend[away]
    if len(names) == 2:  # a class has one colour in every chart, whichever class was predicted
        other = pictures.relevance_figure([("t", ["差"], [0.4], away.removeprefix("toward "))], names).axes[0]
        assert to_hex(other.patches[0].get_facecolor()) == legend[away]
    matplotlib.pyplot.close(fig)
