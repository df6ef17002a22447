"""Compressed model files (``model.txt.gz``, ``model.json.xz``...): read decompressed by the
command line and the Python API, written compressed by ``prune`` for such a suffix.

A gzip file was taken for a joblib pickle by its first bytes: "pass --trust-pickle", and with
it the text was unpickled ("cannot be unpickled: pop from empty list").
"""

from __future__ import annotations

import bz2
import gzip
import lzma

import numpy as np
import pandas as pd
import pytest

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

import unbiased_criteria as uc  # noqa: E402
from unbiased_criteria import model_files  # noqa: E402
from unbiased_criteria.cli import main  # noqa: E402
from unbiased_criteria.errors import InputError  # noqa: E402

COMPRESS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("compressed")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(1200, 3)), columns=["a", "b", "c"])
    y = X["a"] + rng.normal(size=1200)
    train, valid = X[:600], X[600:].reset_index(drop=True)
    train.assign(y=y[:600]).to_csv(d / "train.csv", index=False)
    valid.assign(y=y[600:].to_numpy()).to_csv(d / "valid.csv", index=False)
    lgb.train({"verbose": -1, "num_leaves": 7, "num_threads": 1},
              lgb.Dataset(train, y[:600]), 8).save_model(d / "m.txt")
    booster = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(train, y[:600]), 8)
    booster.save_model(d / "m.json")
    booster.save_model(d / "m.ubj")
    return d, valid, y[600:].to_numpy()


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def compressed(path, kind: str):
    target = path.with_name(f"{path.name}.{kind}")
    target.write_bytes(COMPRESS[kind](path.read_bytes()))
    return target


@pytest.mark.parametrize("kind", list(COMPRESS))
@pytest.mark.parametrize("name", ["m.txt", "m.json", "m.ubj"])
def test_importance_reads_a_compressed_model_as_the_file_itself(files, capsys, name, kind):
    d, *_ = files
    base = ["--train", d / "train.csv", "--valid", d / "valid.csv", "--label", "y",
            "--format", "csv", "--n-jobs", "1"]
    code, expected, err = run(capsys, "importance", d / name, *base)
    assert code == 0, err
    code, got, err = run(capsys, "importance", compressed(d / name, kind), *base)
    assert code == 0, err
    assert got == expected
    # --trust-pickle changes nothing: the content is no pickle, nothing is unpickled
    code, got, err = run(capsys, "importance", d / f"{name}.{kind}", *base, "--trust-pickle")
    assert code == 0 and got == expected, err


@pytest.mark.parametrize("name", ["m.txt", "m.json"])
def test_python_api_reads_a_gzip_model_path(files, name):
    d, Xv, yv = files
    path = compressed(d / name, "gz")
    host = lgb.Booster(model_file=d / name) if name == "m.txt" else \
        xgb.Booster(model_file=d / name)
    expected = uc.unbiased_importance(host, None, None, Xv, yv, random_state=0, n_jobs=1)
    got = uc.unbiased_importance(str(path), None, None, Xv, yv, random_state=0, n_jobs=1)
    pd.testing.assert_frame_equal(got.to_frame(), expected.to_frame())


@pytest.mark.parametrize("name, out, load", [
    ("m.txt", "p.txt.gz", lambda blob: lgb.Booster(model_str=blob.decode())),
    ("m.json", "p.ubj.xz", lambda blob: xgb.Booster(model_file=bytearray(blob))),
    ("m.ubj", "p.json.bz2", lambda blob: xgb.Booster(model_file=bytearray(blob))),
])
def test_prune_writes_the_model_compressed_for_a_compressed_suffix(files, capsys, tmp_path,
                                                                   name, out, load):
    """--output p.txt.gz held plain text; now the host's format of .txt, compressed."""
    d, Xv, _ = files
    plain = tmp_path / out.rsplit(".", 1)[0]
    base = ["--train", d / "train.csv", "--valid", d / "valid.csv", "--label", "y",
            "--threshold", "0.5"]
    code, _, err = run(capsys, "prune", compressed(d / name, "gz"), *base, "--output",
                       tmp_path / out)
    assert code == 0, err
    code, _, err = run(capsys, "prune", d / name, *base, "--output", plain)
    assert code == 0, err
    kind = out.rsplit(".", 1)[1]
    blob = {"gz": gzip.decompress, "bz2": bz2.decompress, "xz": lzma.decompress}[kind](
        (tmp_path / out).read_bytes())
    assert blob[:4] == plain.read_bytes()[:4]  # the format of the suffix before
    pruned, reference = load(blob), load(plain.read_bytes())
    data = xgb.DMatrix(Xv) if isinstance(pruned, xgb.Booster) else Xv
    np.testing.assert_array_equal(pruned.predict(data), reference.predict(data))


def test_compressed_pickles_still_need_trust(tmp_path, capsys):
    """joblib's compressed files stay pickles (--trust-pickle), whatever the compression."""
    joblib = pytest.importorskip("joblib")
    pytest.importorskip("sklearn")
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 2)), columns=["a", "b"])
    model = HistGradientBoostingRegressor(max_iter=3).fit(X, X["a"])
    for compress in (("zlib", 3), ("gzip", 3), ("bz2", 3), ("xz", 3)):
        path = tmp_path / f"hgb.{compress[0]}"
        joblib.dump(model, path, compress=compress)
        data = path.read_bytes()
        with pytest.raises(InputError, match="a pickle or joblib file; loading one runs code"):
            model_files.load_model_file(data, "m")
        assert model_files.load_model_file(data, "m", trusted=True).host == "sklearn"


def test_compressed_file_that_is_no_model_is_one_error(files, tmp_path, capsys):
    d, *_ = files
    valid = d / "valid.csv"
    base = ["--valid", valid, "--label", "y"]
    path = compressed(valid, "gz")  # a compressed data file given as MODEL
    code, out, err = run(capsys, "importance", path, *base)
    assert code == 2 and out == ""
    assert f"model {path}: a gzip-compressed file whose content is not a model file" in err
    assert "pickle" not in err.split("(none of")[0]
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(gzip.compress((d / "m.txt").read_bytes())[:200])
    code, out, err = run(capsys, "importance", cut, *base)
    assert code == 2 and err.count("\n") == 1
    assert f"model {cut}: a gzip-compressed file that cannot be decompressed: cut short" in err
    with pytest.raises(InputError, match="a bz2-compressed file whose content is not a model"):
        model_files.load_model_file(bz2.compress(b"a,b\n1,2\n"), "m")
    with pytest.raises(InputError, match="m: an xz-compressed file that cannot be decompressed"):
        model_files.load_model_file(b"\xfd7zXZ\x00garbage", "m")


def test_decompress_reads_the_start_only_when_asked():
    text = b"tree\n" + b"x" * 100_000
    for kind, compress in COMPRESS.items():
        name, head = model_files.decompress(compress(text), limit=16)
        assert head == text[:16] and name == {"gz": "gzip"}.get(kind, kind)
        assert model_files.decompress(compress(text)) == (name, text)
    assert model_files.decompress(b"tree\nversion=v4\n") is None
    assert model_files.decompress(b"x 1\n") is None  # text starting with "x" is no zlib stream
