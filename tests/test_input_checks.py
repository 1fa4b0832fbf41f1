"""A UTF-8 byte-order mark (BOM) at the start of a file is no part of its text (issue 75):
every reader of the package drops it, where it used to stay in the first token, the model's
observation names or make a JSON file unreadable."""
import gzip
import io
import json
from pathlib import Path

import numpy as np
import pytest

from skfcrf.datasets import read_conll
from skfcrf.transformers import make_dictation_features

from _helpers import run_cli, short_fit

ROOT = Path(__file__).resolve().parents[1]
BOM = "\ufeff"
BOM_BYTES = b"\xef\xbb\xbf"
TEXT = "The DT B-NP\ncat NN I-NP\nsat VBD B-VP\n\nA DT B-NP\ndog NN I-NP\nran VBD B-VP\n\n"
SENTENCES = [TEXT.split("\n\n")[0] + "\n", TEXT.split("\n\n")[1] + "\n"]


run = run_cli


# ----------------------------------------------------------------------------- read_conll
def _sources(tmp_path, text):
    data = BOM_BYTES + text.encode("utf-8")
    (tmp_path / "plain.txt").write_bytes(data)
    with gzip.open(tmp_path / "packed.txt.gz", "wb") as fh:
        fh.write(data)
    return {"path": tmp_path / "plain.txt", "str path": str(tmp_path / "plain.txt"),
            "gzip": tmp_path / "packed.txt.gz", "binary file": io.BytesIO(data),
            "text file": io.StringIO(BOM + text)}


@pytest.mark.parametrize("kind", ["path", "str path", "gzip", "binary file", "text file"])
def test_read_conll_drops_the_bom(tmp_path, kind):
    X, y = read_conll(_sources(tmp_path, TEXT)[kind], n_label_columns=2)
    assert X[0][0] == "The"
    assert [list(s[:, 0]) for s in y][0] == ["DT", "NN", "VBD"]


def test_read_conll_bom_with_tabs_attributes_and_a_blank_first_line(tmp_path):
    path = tmp_path / "tabs.tsv"
    path.write_bytes(BOM_BYTES + b"\nNew York\tNNP\tB-LOC\nis\tVBZ\tO\n")
    X, y = read_conll(path, n_label_columns=1, attributes=("word", "pos"), sep="\t")
    assert len(X) == 1  # the BOM-only first line is blank, not a sequence of its own
    assert X[0][0] == {"word": "New York", "pos": "NNP"}
    assert list(y[0]) == ["B-LOC", "O"]


def test_bom_inside_the_text_is_kept():
    """Only the start of the file: U+FEFF elsewhere is the text's (a zero-width no-break
    space) and stays."""
    X, _ = read_conll(io.StringIO("a\ufeffb X\n"), n_label_columns=1)
    assert X[0][0] == "a\ufeffb"


@short_fit
def test_model_observation_names_have_no_bom(tmp_path):
    from skfcrf import FactorialCRF

    path = _sources(tmp_path, TEXT)["path"]
    X, y = read_conll(path, n_label_columns=2)
    Xf = make_dictation_features(kinds=("ngram",), lowercase=False).fit_transform(X)
    crf = FactorialCRF(max_iter=2, finetune_iter=0).fit(Xf, y)
    names = [str(n) for n in crf.observation_names_]
    assert "ngram_word__word@0=The" in names
    assert not any(BOM in n for n in names)


# ----------------------------------------------------------------------------- structure
def test_parse_report_and_tokenizer_drop_the_bom():
    from skfcrf.structure import parse_report, tokenize_report_text

    tokens, labels = parse_report(BOM + "HISTORY:\nFever and cough.\n")
    assert tokens[0] == "HISTORY"
    plain = parse_report("HISTORY:\nFever and cough.\n")[1]
    np.testing.assert_array_equal(labels, plain)  # the heading is recognised as before
    assert tokenize_report_text(BOM + "Fever.") == ["Fever", "."]


# ----------------------------------------------------------------------------- command line
def test_prepare_section_types_file_with_bom(tmp_path):
    from skfcrf.cli._prepare import load_section_types

    path = tmp_path / "types.json"
    path.write_bytes(BOM_BYTES + json.dumps([["^HISTORY", "History"]]).encode())
    assert load_section_types(path) == [("^HISTORY", "History")]


@pytest.fixture(scope="module")
def bom_model(tmp_path_factory):
    """A model trained by ``skfcrf train`` on a file that starts with a BOM and a blank line,
    its label columns inferred (``infer_label_columns`` reads the first lines)."""
    d = tmp_path_factory.mktemp("bom")
    body = "".join(SENTENCES * 6)
    (d / "train.txt").write_bytes(BOM_BYTES + b"\n" + body.encode())
    model = d / "bom.model"
    res = run("train", d / "train.txt", "--model", model, "--features", "ngram",
              "--chain-names", "tags", "chunks", "--max-iter", 5, "--min-instance-freq", 1, "-q")
    assert res.returncode == 0, res.stderr
    return d, model


def test_train_on_a_bom_file(bom_model):
    from skfcrf import FactorialCRF

    d, model = bom_model
    config = json.loads(Path(str(model) + ".features.json").read_text())
    assert config["label_columns"] == 2
    names = [str(n) for n in FactorialCRF.load(model).observation_names_]
    assert "ngram_word__word@0=The" in names
    assert not any(BOM in n for n in names)


def test_tag_and_evaluate_bom_files(bom_model, tmp_path):
    d, model = bom_model
    # tag counts the columns of the first non-blank line (count_columns)
    res = run("tag", d / "train.txt", "--model", model, "-q")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("The ")
    # a features file re-saved with a BOM (as some editors do) still loads
    fpath = Path(str(model) + ".features.json")
    original = fpath.read_bytes()
    try:
        fpath.write_bytes(BOM_BYTES + original)
        res = run("evaluate", d / "train.txt", "--model", model, "-q")
        assert res.returncode == 0, res.stderr
        res = run("inspect", model, "--top", 50)  # reads the chain names there
        assert res.returncode == 0, res.stderr
        assert "chunks" in res.stdout and "tags" in res.stdout
    finally:
        fpath.write_bytes(original)


def test_train_lexicon_and_label_rows_files_with_bom(tmp_path):
    """``skfcrf train --lexicon`` and the ``--forbidden-transitions`` / ``--forbidden-couplings``
    files: a BOM neither sticks to the first phrase (which would then never match) nor
    breaks the first line's chain index."""
    from skfcrf.cli._train import _read_label_rows, read_lexicon

    lexicon = tmp_path / "lex.txt"
    lexicon.write_bytes(BOM_BYTES + b"the old man PERSON\na DET\n")
    assert read_lexicon(lexicon) == [["the old man", "PERSON"], ["a", "DET"]]
    rows = tmp_path / "forbid.txt"
    rows.write_bytes(BOM_BYTES + b"1 B-VP I-NP\n0 DT VBD\n")
    groups = _read_label_rows(rows, 1, "--forbidden-transitions", "CHAIN FROM TO")
    assert sorted(groups) == [((0,), [("DT", "VBD")]), ((1,), [("B-VP", "I-NP")])]
