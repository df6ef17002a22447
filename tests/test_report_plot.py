"""``ImportanceReport.plot()``: the bars drawn are the report's numbers.

Two horizontal bars per feature (unbiased, biased) whose widths are ``to_frame()``'s
``unbiased_gain`` and ``biased_gain``, sorted by unbiased gain, largest on top; error bars of
+-2 standard errors on the unbiased bars when the report has standard errors, none when it has
not; the features ``select()`` picks marked ``*``; at most ``top`` features.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # before pyplot: no display needed

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria.datasets import paper_example  # noqa: E402
from unbiased_criteria.report import ImportanceReport  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def hand_made_report(with_jackknife: bool = True) -> ImportanceReport:
    """Four features, the last without splits; gains of both signs."""
    splits = pd.DataFrame({
        "feature_index": [0, 0, 1, 2, 2, 2],
        "unbiased_gain": [3.0, 1.5, -2.0, 0.25, -0.5, 4.0],
        "biased_gain": [5.0, 2.0, 1.0, 8.0, 6.0, 9.5],
        "host_gain": [5.5, 2.5, 1.5, 7.0, 6.5, 9.0],
    })
    jack = None
    if with_jackknife:
        rng = np.random.default_rng(0)
        jack = splits["unbiased_gain"].to_numpy()[:, None] + rng.normal(0, 0.3, (6, 10))
    return ImportanceReport(splits, ["a", "b", "c", "d"], host="test", jackknife=jack)


def bar_containers(ax) -> list[BarContainer]:
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 2, ax.containers
    return bars


def bar_patches(ax) -> list[Rectangle]:
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def check_bars(ax, frame: pd.DataFrame) -> None:
    n = len(frame)
    # 2 bars per feature, nothing else drawn as a patch on the axes
    assert len(bar_patches(ax)) == 2 * n
    unbiased, biased = bar_containers(ax)
    assert len(unbiased.patches) == len(biased.patches) == n
    np.testing.assert_allclose([p.get_width() for p in unbiased.patches],
                               frame["unbiased_gain"].to_numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose([p.get_width() for p in biased.patches],
                               frame["biased_gain"].to_numpy(), rtol=1e-12, atol=1e-12)
    # bars start at 0 and each feature's pair sits at its tick, the unbiased bar first
    assert all(p.get_x() == 0 for p in bar_patches(ax))
    ticks = ax.get_yticks()
    centres_u = [p.get_y() + p.get_height() / 2 for p in unbiased.patches]
    centres_b = [p.get_y() + p.get_height() / 2 for p in biased.patches]
    np.testing.assert_allclose(centres_u, ticks - 0.2)
    np.testing.assert_allclose(centres_b, ticks + 0.2)
    assert [t.get_text().removesuffix(" *") for t in ax.get_yticklabels()] == list(frame.index)


def by_unbiased_gain(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame in the plot's order: unbiased gain descending, ties in feature order."""
    return frame.iloc[np.argsort(-frame["unbiased_gain"].to_numpy(), kind="stable")]


def error_segments(container: BarContainer) -> np.ndarray | None:
    """(n, 2) x-extents of the error bars attached to a bar container, or None."""
    eb = getattr(container, "errorbar", None)
    if eb is None:
        return None
    _, _, lines = eb.lines
    assert len(lines) == 1
    segs = lines[0].get_segments()
    return np.array([[s[0][0], s[1][0]] for s in segs])


def save_png(ax, path) -> bytes:
    ax.figure.savefig(path, format="png", dpi=60)
    plt.close(ax.figure)
    return path.read_bytes()


def test_bars_and_error_bars_equal_the_frame(tmp_path):
    report = hand_made_report()
    frame = by_unbiased_gain(report.to_frame())
    assert list(frame.index) == ["a", "c", "d", "b"]
    assert frame["std_error"].notna().all() and frame.loc["d", "std_error"] == 0
    ax = report.plot()
    check_bars(ax, frame)
    unbiased, biased = bar_containers(ax)
    assert error_segments(biased) is None
    segs = error_segments(unbiased)
    assert segs is not None and len(segs) == len(frame)
    u, se = frame["unbiased_gain"].to_numpy(), frame["std_error"].to_numpy()
    np.testing.assert_allclose(np.sort(segs, axis=1), np.column_stack([u - 2 * se, u + 2 * se]),
                               rtol=1e-12, atol=1e-12)
    assert len([c for c in ax.collections if isinstance(c, LineCollection)]) == 1
    assert "SE" in ax.get_legend().get_texts()[0].get_text()
    png = save_png(ax, tmp_path / "plot.png")
    assert png.startswith(PNG_MAGIC) and len(png) > 2000


def test_no_error_bars_without_standard_errors(tmp_path):
    report = hand_made_report(with_jackknife=False)
    frame = by_unbiased_gain(report.to_frame())
    assert frame["std_error"].isna().all()
    ax = report.plot()
    check_bars(ax, frame)
    assert all(error_segments(c) is None for c in bar_containers(ax))
    assert not [c for c in ax.collections if isinstance(c, LineCollection)]
    assert ax.get_legend().get_texts()[0].get_text() == "unbiased gain"
    assert save_png(ax, tmp_path / "plot.png").startswith(PNG_MAGIC)


def test_normalized_bars_are_shares():
    report = hand_made_report()
    frame = by_unbiased_gain(report.to_frame())
    ax = report.plot(normalize=True)
    shares = frame[["unbiased_gain", "biased_gain"]]
    shares = shares / report.to_frame()[["unbiased_gain", "biased_gain"]].abs().sum()
    check_bars(ax, shares.assign(std_error=frame["std_error"]))
    segs = error_segments(bar_containers(ax)[0])
    half = (segs[:, 1] - segs[:, 0]) / 2
    scale = frame["unbiased_gain"].abs().sum()
    np.testing.assert_allclose(half, 2 * frame["std_error"].to_numpy() / scale, rtol=1e-12)
    plt.close(ax.figure)


def test_plot_of_a_real_model_into_given_axes(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    X, y = paper_example(1000, random_state=0)
    Xv, yv = paper_example(1000, random_state=1)
    model = lgb.train({"objective": "regression", "learning_rate": 0.1, "num_leaves": 7,
                       "verbose": -1, "seed": 0}, lgb.Dataset(X, y), num_boost_round=10)
    report = uc.unbiased_importance(model, X, y, Xv, yv, random_state=0)
    frame = by_unbiased_gain(report.to_frame())
    fig, (left, right) = plt.subplots(1, 2)
    ax = report.plot(ax=right)
    assert ax is right and not left.patches
    check_bars(ax, frame)
    segs = error_segments(bar_containers(ax)[0])
    np.testing.assert_allclose((segs[:, 1] - segs[:, 0]) / 2, 2 * frame["std_error"], rtol=1e-9)
    assert save_png(ax, tmp_path / "model.png").startswith(PNG_MAGIC)


def test_split_scatter_has_one_point_per_split_at_b_and_u():
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(3)
    n = 40
    splits = pd.DataFrame({
        "feature_index": rng.integers(0, 3, n), "unbiased_gain": rng.normal(size=n),
        "biased_gain": rng.random(n), "host_gain": rng.random(n),
    })
    splits["feature"] = np.array(["a", "b", "c"])[splits["feature_index"]]
    report = ImportanceReport(splits, ["a", "b", "c"])
    ax = report.plot_splits()
    points = np.concatenate([c.get_offsets() for c in ax.collections])
    assert points.shape == (n, 2)
    want = splits[["biased_gain", "unbiased_gain"]].to_numpy()
    # same set of (B, U) pairs, whatever the drawing order
    np.testing.assert_allclose(np.sort(points, axis=0), np.sort(want, axis=0))
    assert len(ax.collections) == 3  # one colour per feature


def many_features_report(n_features: int = 90, seed: int = 0) -> ImportanceReport:
    """``n_features`` features with 3 splits each and distinct totals; 20 jackknife blocks."""
    rng = np.random.default_rng(seed)
    fi = np.repeat(np.arange(n_features), 3)
    u = rng.normal(0, 1, fi.size) + np.repeat(rng.normal(0, 5, n_features), 3)
    splits = pd.DataFrame({"feature_index": fi, "unbiased_gain": u,
                           "biased_gain": rng.random(fi.size) * 10,
                           "host_gain": rng.random(fi.size) * 10})
    names = [f"f{i:02d}" for i in range(n_features)]
    splits["feature"] = np.array(names)[fi]
    jack = u[:, None] + rng.normal(0, 0.5, (fi.size, 20))
    return ImportanceReport(splits, names, host="test", jackknife=jack)


def test_top_shows_the_largest_unbiased_gains_and_says_so():
    report = hand_made_report()
    ax = report.plot(top=2)
    check_bars(ax, by_unbiased_gain(report.to_frame()).iloc[:2])
    assert "top 2 of 4 features" in ax.get_title()
    plt.close(ax.figure)
    ax = report.plot(top=None)
    check_bars(ax, by_unbiased_gain(report.to_frame()))
    assert "top" not in ax.get_title()
    plt.close(ax.figure)
    for bad in (0, -1, 2.5, True, "20"):
        with pytest.raises(ValueError, match="top"):
            report.plot(top=bad)


def test_selected_features_are_marked():
    report = many_features_report(30)
    selected = report.select(0.05)
    assert 0 < len(selected) < 30  # the check below can fail both ways
    ax = report.plot(top=None)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    marked = sorted(lb.removesuffix(" *") for lb in labels if lb.endswith(" *"))
    assert marked == sorted(selected)
    bold = sorted(t.get_text().removesuffix(" *") for t in ax.get_yticklabels()
                  if t.get_fontweight() == "bold")
    assert bold == sorted(selected)
    assert "significantly above 0" in ax.get_title()
    plt.close(ax.figure)
    # a stricter level marks fewer
    ax = report.plot(top=None, alpha=1e-6)
    assert sum(t.get_text().endswith(" *") for t in ax.get_yticklabels()) == len(
        report.select(1e-6)) < len(selected)
    plt.close(ax.figure)


def test_no_marks_without_standard_errors():
    ax = hand_made_report(with_jackknife=False).plot()
    assert not any(t.get_text().endswith("*") for t in ax.get_yticklabels())
    assert "significantly" not in ax.get_title()
    plt.close(ax.figure)


def test_ninety_features_stay_readable(tmp_path):
    report = many_features_report(90)
    frame = by_unbiased_gain(report.to_frame())
    ax = report.plot()
    check_bars(ax, frame.iloc[:20])
    assert "top 20 of 90 features" in ax.get_title() and "test" in ax.get_title()
    width, height = ax.figure.get_size_inches()
    assert height <= 10  # 20 features: a screen's height
    assert height / 20 >= 0.25  # at least a quarter inch per feature
    assert save_png(ax, tmp_path / "top.png").startswith(PNG_MAGIC)
    ax = report.plot(top=None)
    check_bars(ax, frame)
    assert ax.figure.get_size_inches()[1] / 90 >= 0.25  # all 90 shown: the figure grows
    plt.close(ax.figure)


def test_split_scatter_labels_the_top_features_and_greys_the_rest():
    report = many_features_report(30)
    ax = report.plot_splits()
    totals = report.splits.groupby("feature")["unbiased_gain"].sum()
    top20 = list(totals.abs().sort_values(ascending=False).index[:20])
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == top20 + ["other (10 features)"]
    assert len(ax.collections) == 21
    grey = ax.collections[-1]
    others = report.splits[~report.splits["feature"].isin(top20)]
    np.testing.assert_allclose(np.sort(grey.get_offsets(), axis=0),
                               np.sort(others[["biased_gain", "unbiased_gain"]].to_numpy(),
                                       axis=0))
    points = np.concatenate([c.get_offsets() for c in ax.collections])
    assert points.shape == (len(report.splits), 2)
    assert ax.get_title()
    plt.close(ax.figure)
    # few features: every one labelled, no "other"
    ax = many_features_report(5).plot_splits()
    assert len(ax.get_legend().get_texts()) == 5 and len(ax.collections) == 5
    plt.close(ax.figure)


def test_cli_says_where_it_wrote_the_plot(tmp_path, capsys):
    from unbiased_criteria.cli.output import save_plot

    path = tmp_path / "imp.png"
    open_before = set(plt.get_fignums())
    save_plot(many_features_report(30), str(path), "model.txt: unbiased vs biased gain")
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout may hold the table
    assert captured.err == f"unbiased-criteria: wrote plot to {path}\n"
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert set(plt.get_fignums()) == open_before  # its figure was closed


@pytest.mark.parametrize("usable", [None, False])
def test_plot_of_a_report_select_refuses_draws_without_marks(usable):
    """A model without splits, or whose splits all lack held-out evidence, has standard
    errors but nothing for select() to test: select() raises (saying why) and plot() raised
    that error instead of drawing."""
    names = ["a", "b"]
    if usable is None:  # no split at all
        splits = pd.DataFrame({"feature_index": np.array([], dtype=np.int64),
                               "unbiased_gain": [], "biased_gain": [], "host_gain": []})
    else:
        splits = pd.DataFrame({"feature_index": [0, 1], "unbiased_gain": [0.0, 0.0],
                               "biased_gain": [2.0, 1.0], "host_gain": [2.0, 1.0],
                               "usable": [usable, usable]})
    report = ImportanceReport(splits, names, jackknife=np.zeros((len(splits), 20)))
    with pytest.raises(ValueError, match="nothing to test"):
        report.select()
    for normalize in (False, True):
        ax = report.plot(normalize=normalize)
        assert [t.get_text() for t in ax.get_yticklabels()] == names
        assert "significantly" not in ax.get_title()
        plt.close(ax.figure)


def test_a_report_without_splits_plots_without_warnings():
    # matplotlib warned "No artists with labels found to put in legend" from plot_splits
    import warnings

    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    model = lgb.train({"objective": "regression", "verbose": -1}, lgb.Dataset(X, np.ones(200)), 3)
    report = uc.unbiased_importance(model, X, np.ones(200), X[::-1] + 1, np.ones(200))
    assert len(report.splits) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for draw in (report.plot, report.plot_splits, report.plot_cumulative):
            plt.close(draw().figure)


def test_notebooks_show_the_report_as_a_table():
    """_repr_html_: the title, then the per-feature frame as pandas renders it."""
    report = hand_made_report()
    shown = report._repr_html_()
    assert shown.startswith(f"<p><code>ImportanceReport({report.host}, {len(report.splits)} "
                            "splits)</code></p>")
    assert shown.endswith(report.to_frame()._repr_html_())
    assert repr(report).startswith(f"ImportanceReport({report.host}, ")


@pytest.mark.parametrize("n_blocks", [0, 20])
def test_cross_fitted_report_draws_its_standard_errors_and_marks(n_blocks):
    """A cross-fitted report has a standard error without jackknife blocks too (between the
    folds): plot() drew no error bars and marked nothing with n_blocks=0, though select()
    picked features and to_frame() held the standard errors."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(3000, 4)), columns=list("abcd"))
    y = X.a + 0.5 * X.b + rng.normal(size=3000)
    est = lgb.LGBMRegressor(n_estimators=20, verbose=-1, n_jobs=1)
    report = uc.cross_fitted_importance(est, X, y, cv=5, random_state=0, n_blocks=n_blocks)
    frame = by_unbiased_gain(report.to_frame())
    assert frame["std_error"].notna().all()
    selected = report.select(0.05)
    assert 0 < len(selected) < 4  # the marks below can be wrong both ways
    ax = report.plot()
    check_bars(ax, frame)
    segs = error_segments(bar_containers(ax)[0])
    assert segs is not None
    np.testing.assert_allclose((segs[:, 1] - segs[:, 0]) / 2, 2 * frame["std_error"],
                               rtol=1e-9)
    marked = sorted(t.get_text().removesuffix(" *") for t in ax.get_yticklabels()
                    if t.get_text().endswith(" *"))
    assert marked == sorted(selected)
    assert "significantly above 0" in ax.get_title()
    assert "SE" in ax.get_legend().get_texts()[0].get_text()
    plt.close(ax.figure)


def test_cross_fitted_report_of_one_fold_without_blocks_has_no_marks():
    """One fold and no jackknife blocks: no standard error, nothing drawn or marked, and
    select() says what it needs."""
    from unbiased_criteria.cross_fit import CrossFittedReport

    splits = hand_made_report().splits.assign(usable=True)
    report = CrossFittedReport.from_folds(
        [ImportanceReport(splits, ["a", "b", "c", "d"], host="test")], n_blocks=0)
    assert report.to_frame()["std_error"].isna().all()
    with pytest.raises(ValueError, match="needs standard errors"):
        report.select()
    ax = report.plot()
    assert all(error_segments(c) is None for c in bar_containers(ax))
    assert not any(t.get_text().endswith("*") for t in ax.get_yticklabels())
    plt.close(ax.figure)


def test_split_scatter_refuses_a_bad_max_points_and_samples_a_good_one():
    """max_points: 0 drew an empty plot without a word, -5 / 2.5 / None failed inside
    numpy; each is now one error naming the argument. A valid one draws that many splits."""
    report = many_features_report(10)
    for bad in (0, -5, 2.5, None, True, "100"):
        with pytest.raises(ValueError, match=r"max_points: expected a positive integer"):
            report.plot_splits(max_points=bad)
    plt.close("all")
    for good, drawn in ((7, 7), (np.int64(12), 12), (10_000, len(report.splits))):
        ax = report.plot_splits(max_points=good)
        assert sum(len(c.get_offsets()) for c in ax.collections) == drawn
        plt.close(ax.figure)


# feature names that are markup to matplotlib: '$' pairs (mathtext), a leading '_' (left
# out of a legend built from the artists' labels), LaTeX's specials (under text.usetex)
ODD_NAMES = ["_signal", "US$_min / US$_max", "gross_$_net_$", r"a\$b ^{2} 100% & #"]


def odd_names_report() -> ImportanceReport:
    """The features of ``ODD_NAMES`` in splits over 3 trees, the first the most important."""
    fi = np.array([0, 1, 0, 2, 3, 0, 1, 2])
    splits = pd.DataFrame({
        "tree": [0, 0, 1, 1, 1, 2, 2, 2], "feature_index": fi,
        "unbiased_gain": [9.0, 2.0, 8.0, -1.0, 0.5, 7.0, 1.0, -0.5],
        "biased_gain": [10.0, 3.0, 9.0, 2.0, 1.0, 8.0, 2.5, 1.5],
        "host_gain": [10.0, 3.0, 9.0, 2.0, 1.0, 8.0, 2.5, 1.5],
    })
    splits["feature"] = np.array(ODD_NAMES)[fi]
    rng = np.random.default_rng(0)
    jack = splits["unbiased_gain"].to_numpy()[:, None] + rng.normal(0, 0.1, (len(fi), 10))
    return ImportanceReport(splits, ODD_NAMES, host="test", jackknife=jack)


@pytest.fixture
def drawn_text(monkeypatch) -> list[tuple[str, object]]:
    """Every (string, ismath) the Agg renderer is asked to draw as text: what a figure shows,
    not what its Text objects hold."""
    from matplotlib.backends.backend_agg import RendererAgg

    calls: list[tuple[str, object]] = []
    original = RendererAgg.draw_text

    def spy(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        calls.append((s, ismath))
        return original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    monkeypatch.setattr(RendererAgg, "draw_text", spy)
    return calls


def name_texts(ax, method: str) -> list:
    """The Text objects of ``method``'s plot that show feature names."""
    if method == "plot":
        return list(ax.get_yticklabels())
    return list(ax.get_legend().get_texts())


@pytest.mark.parametrize("method", ["plot", "plot_splits", "plot_cumulative"])
def test_feature_names_are_drawn_as_written(method, drawn_text, tmp_path):
    """A '$' in a name went to matplotlib as mathtext: 'US$_min / US$_max' was drawn with
    subscripts and 'gross_$_net_$' made savefig raise a ParseSyntaxException. Each name is
    now drawn as its characters, as one plain (not math) string."""
    ax = getattr(odd_names_report(), method)()
    shown = [t.get_text().removesuffix(" *") for t in name_texts(ax, method)]
    assert sorted(shown) == sorted(ODD_NAMES)
    ax.figure.savefig(tmp_path / "names.png", dpi=40)
    plt.close(ax.figure)
    for text in name_texts(ax, method):
        assert (text.get_text(), False) in drawn_text
    math = [s for s, ismath in drawn_text if ismath]
    assert not [s for s in math if any(name in s for name in ODD_NAMES)]


@pytest.mark.parametrize("method", ["plot", "plot_splits", "plot_cumulative"])
def test_feature_names_stay_literal_under_usetex(method):
    """With rcParams text.usetex the names went to LaTeX, where '_', '$', '%', '&', '#' are
    markup: they stay plain text there too (the rest of the figure follows the setting)."""
    with matplotlib.rc_context({"text.usetex": True}):
        ax = getattr(odd_names_report(), method)()
    texts = name_texts(ax, method)
    assert len(texts) >= len(ODD_NAMES)
    assert not any(t.get_usetex() for t in texts if t.get_text().removesuffix(" *")
                   in ODD_NAMES)
    assert not any(t.get_parse_math() for t in texts)
    plt.close(ax.figure)


@pytest.mark.parametrize("method, top", [("plot_splits", None), ("plot_splits", 2),
                                         ("plot_cumulative", 10), ("plot_cumulative", 2)])
def test_legends_keep_names_starting_with_an_underscore(method, top):
    """matplotlib leaves labels starting with '_' out of a legend built from the artists:
    '_signal', the most important feature, was drawn in a colour the legend never named.
    Every entry is now the feature's name, next to the artist drawn for it."""
    report = odd_names_report()
    ax = getattr(report, method)(top=top)
    totals = report.to_frame()["unbiased_gain"].abs().sort_values(ascending=False,
                                                                  kind="stable")
    expected = list(totals.index[:top])
    legend = ax.get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    artists = ax.collections if method == "plot_splits" else ax.get_lines()[:len(expected)]
    if method == "plot_splits" and top is not None and top < len(ODD_NAMES):
        expected.append(f"other ({len(ODD_NAMES) - top} features)")
    assert texts[0] == "_signal" and texts == expected
    # each entry's handle is the artist drawn for that feature, same colour
    handles = legend.legend_handles
    assert len(handles) == len(texts) == len(artists)
    for handle, artist, name in zip(handles, artists, texts):
        assert artist.get_label() == name
        if method == "plot_splits":
            np.testing.assert_array_equal(handle.get_facecolor(), artist.get_facecolor())
        else:
            assert handle.get_color() == artist.get_color()
    plt.close(ax.figure)
