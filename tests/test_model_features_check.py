"""A model and its features file (``MODEL.features.json``) checked against each other when
``skfcrf evaluate``/``tag``/``view`` load them (issue 75): an edited or foreign features file
is a one-line error naming what differs, where it used to give near-zero scores with exit 0;
data whose words are merely new still passes."""
import json
import shutil
from pathlib import Path

import pytest
from test_cli import assert_one_line_error as _one_line_error
from test_cli import toy_corpus as _toy_corpus
from test_cli import write_toy

from _helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]

def toy_corpus(n_sentences=30, seed=0):
    """:func:`test_cli.toy_corpus` with every sentence's first word capitalised (a model
    whose n-grams have capitals, for the lowercasing check)."""
    return [[(s[0][0].capitalize(), *s[0][1:]), *s[1:]] for s in _toy_corpus(n_sentences, seed)]


run = run_cli


def assert_one_line_error(res, *fragments):
    """:func:`test_cli.assert_one_line_error` with the exit status of a failed check (1)."""
    return _one_line_error(res, *fragments, status=1)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("features_check")
    write_toy(d / "train.txt", toy_corpus(30))
    out = {}
    for name, options in [("main", ["--features", "ngram,shape,position"]),
                          ("other", ["--features", "ngram,concepts", "--ngram-window", "1",
                                     "--lowercase"])]:
        model = d / f"{name}.model"
        res = run("train", d / "train.txt", "--model", model, "--label-columns", 2,
                  *options, "--max-iter", 15, "--min-instance-freq", 1, "-q")
        assert res.returncode == 0, res.stderr
        out[name] = model
    return d, out


def _copy_with_features(models, tmp_path, edit=None, features_of=None):
    """The main model copied to ``tmp_path`` with its features file edited by ``edit(config)``
    or replaced by the features file of the model ``features_of``."""
    d, m = models
    model = tmp_path / "copy.model"
    shutil.copy(m["main"], model)
    source = m[features_of] if features_of else m["main"]
    config = json.loads(Path(str(source) + ".features.json").read_text())
    if edit is not None:
        edit(config)
    Path(str(model) + ".features.json").write_text(json.dumps(config))
    return model


def test_matching_features_file_evaluates(models, tmp_path):
    d, m = models
    res = run("evaluate", d / "train.txt", "--model", m["main"], "-q")
    assert res.returncode == 0, res.stderr
    res = run("evaluate", d / "train.txt", "--model", m["other"], "-q")
    assert res.returncode == 0, res.stderr


def test_features_file_of_another_model(models, tmp_path):
    d, _ = models
    model = _copy_with_features(models, tmp_path, features_of="other")
    for cmd in ("evaluate", "tag"):
        res = run(cmd, d / "train.txt", "--model", model, "-q")
        line = assert_one_line_error(res, "copy.model.features.json does not match the model",
                                     "'position'", "'shape'", "use the features file")
        assert "features ngram,concepts" in line  # what the features file makes instead


@pytest.mark.parametrize("edit, fragments", [
    # a feature kind of the model removed
    (lambda c: c.update(features=["ngram", "position"]), ["'shape'"]),
    # another attribute column named
    (lambda c: c.update(attributes=["token"]), ["'ngram_word'", "'ngram_token'"]),
    # a narrower n-gram window: the model's @-2/@2 templates are never made
    (lambda c: c.update(ngram_window=1), ["'ngram_word__word@-2'", "'ngram_word__word@2'"]),
    # other position bins: none of the model's position templates
    (lambda c: c.update(position_bins=4), ["'position__relpos4'", "'position__relpos8'"]),
    # lowercased n-grams against a model trained on capitals
    (lambda c: c.update(lowercase=True), ['"lowercase": true', "capitals"]),
], ids=["kind-removed", "attribute", "ngram-window", "position-bins", "lowercase"])
def test_edited_features_file(models, tmp_path, edit, fragments):
    d, _ = models
    model = _copy_with_features(models, tmp_path, edit=edit)
    res = run("evaluate", d / "train.txt", "--model", model, "-q")
    assert_one_line_error(res, "does not match the model", *fragments)


def test_view_checks_too(models, tmp_path):
    d, _ = models
    model = _copy_with_features(models, tmp_path, edit=lambda c: c.update(position_bins=4))
    res = run("view", d / "train.txt", "--model", model, "--output", tmp_path / "pages", "-q")
    assert_one_line_error(res, "does not match the model", "'position__relpos4'")


def test_new_words_and_harmless_extra_kinds_pass(models, tmp_path):
    """Data whose every word is new is not a mismatch; nor is a features file that makes
    more than the model knows (the extra observations are unknown, so ignored)."""
    d, m = models
    new = [[(w + "x" * 3, p, c) for w, p, c in s] for s in toy_corpus(5, seed=9)]
    write_toy(tmp_path / "new.txt", new)
    res = run("evaluate", tmp_path / "new.txt", "--model", m["main"], "-q")
    assert res.returncode == 0, res.stderr
    res = run("tag", tmp_path / "new.txt", "--model", m["main"], "-q")
    assert res.returncode == 0, res.stderr
    wider = _copy_with_features(models, tmp_path, edit=lambda c: c.update(
        features=["ngram", "shape", "position", "casing"], ngram_window=3))
    res_wide = run("tag", d / "train.txt", "--model", wider, "-q")
    res_main = run("tag", d / "train.txt", "--model", m["main"], "-q")
    assert res_wide.returncode == 0, res_wide.stderr
    assert res_wide.stdout == res_main.stdout
