"""The ``skfcrf`` command line, run as a subprocess (``python -m skfcrf``)."""
import json
import random
from pathlib import Path

import numpy as np
import pytest

from skfcrf.datasets import read_conll

from _helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]

# a toy corpus with two chains (POS, chunks) from words only
_NPS = [
    (("the", "DT"), ("cat", "NN")),
    (("a", "DT"), ("dog", "NN")),
    (("the", "DT"), ("old", "JJ"), ("man", "NN")),
    (("she", "PRP"),),
    (("mary", "NNP"),),
    (("the", "DT"), ("mat", "NN")),
]
_VERBS = [("sat", "VBD"), ("saw", "VBD"), ("likes", "VBZ"), ("ran", "VBD")]
_PREPS = [("on", "IN"), ("near", "IN"), ("with", "IN")]


def _chunk(words, tag):
    return [(w, p, ("B-" if i == 0 else "I-") + tag) for i, (w, p) in enumerate(words)]


def toy_corpus(n_sentences=30, seed=0):
    rng = random.Random(seed)
    sents = []
    for _ in range(n_sentences):
        s = _chunk(rng.choice(_NPS), "NP") + _chunk([rng.choice(_VERBS)], "VP")
        if rng.random() < 0.5:
            s += _chunk(rng.choice(_NPS), "NP")
        else:
            s += _chunk([rng.choice(_PREPS)], "PP") + _chunk(rng.choice(_NPS), "NP")
        s.append((".", ".", "O"))
        sents.append(s)
    return sents


def write_toy(path, sents, columns=(0, 1, 2)):
    with open(path, "w", encoding="utf-8") as fh:
        for s in sents:
            for tok in s:
                fh.write(" ".join(tok[c] for c in columns) + "\n")
            fh.write("\n")


run = run_cli


def assert_one_line_error(res, *fragments, status=None):
    assert res.returncode != 0, res.stdout + res.stderr
    if status is not None:
        assert res.returncode == status
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("skfcrf: error: "), lines[0]
    for frag in fragments:
        assert frag in lines[0], lines[0]
    return lines[0]


# --------------------------------------------------------------------------- demo
def test_demo_prints_tables_and_writes_report(tmp_path):
    res = run("demo", "--n-reports", 9, "--max-iter", 8, "--bp-max-iter", 30, "--seed", 1,
              "--output-dir", tmp_path)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "Table 1. Accuracy (%) on cor-style" in out and "Table 2. Accuracy (%) on rcg-style" in out
    assert "Table 3. WindowDiff (%) on cor-style" in out and "Table 4. WindowDiff" in out
    assert "Table 5. Macro-averaged F1" in out
    for row in ("sentence", "subsection", "section", "average", "joint"):
        lines = [line for line in out.splitlines() if line.split()[:1] == [row]]
        # without and with post-processing (and rcg with rule 8.1) side by side
        assert any(line.count("±") == 2 for line in lines), row
        assert any(line.count("±") == 3 for line in lines), row
    assert "with post-proc. (cor)" in out and "with post-proc. (rcg)" in out
    assert "rcg + rule 8.1" in out
    # decoding convergence, read from this decoding's records (not from the fit): either TRP
    # ran (at least one iteration per report) or inference="auto" decoded exactly
    for style in ("cor", "rcg"):
        trp = [line for line in out.splitlines()
               if line.startswith(f"{style}: TRP max-product decoding")]
        if trp:
            assert trp[0].startswith(f"{style}: TRP max-product decoding (at most 30 iterations): "
                                     "converged on")
            assert 1 <= float(trp[0].split("mean ")[1].split()[0]) <= 30, trp[0]
        else:
            assert f"{style}: decoding exact on all test reports" in out
        assert f"{style}: training " in out
    # progress on stderr, fold by fold
    for k in (1, 2, 3):
        assert f"cor fold {k}/3" in res.stderr and f"rcg fold {k}/3" in res.stderr
    html = (tmp_path / "skfcrf_demo_report.html").read_text(encoding="utf-8")
    md = (tmp_path / "skfcrf_demo_report.md").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "<section" in html and "Reference structure" in html
    assert md.startswith("# skfcrf demo") and "\n## " in md
    page = (tmp_path / "skfcrf_demo_comparison.html").read_text(encoding="utf-8")
    assert '<section class="column gold">' in page and '<section class="column predicted">' in page
    assert "sentence" in page and "Decoding" in page


def test_demo_one_style_with_per_label_tables(tmp_path):
    res = run("demo", "--n-reports", 6, "--max-iter", 5, "--finetune-iter", 0, "--styles", "cor",
              "--per-label", "--seed", 2, "--output-dir", tmp_path, "-q")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "rcg" not in out.split("observations;")[0] and "Table 2. WindowDiff" in out
    assert "Per-label scores on cor-style dictations after post-processing" in out
    assert out.count("(pooled over 3 folds)") == 3 and "BeginSentence" in out
    assert res.stderr == ""


@pytest.mark.parametrize("styles", ["rcg,xyz", ""])
def test_demo_bad_styles(styles):
    assert_one_line_error(run("demo", "--styles", styles), "--styles", status=2)


# --------------------------------------------------------------------------- train / tag / evaluate
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    sents = toy_corpus(30)
    write_toy(d / "train.txt", sents)
    model = d / "toy.model"
    res = run("train", d / "train.txt", "--model", model, "--label-columns", 2,
              "--features", "ngram,shape,position", "--max-iter", 40, "--min-instance-freq", 1)
    assert res.returncode == 0, res.stderr
    return d, model, sents


def test_train_writes_model_and_feature_config(trained):
    d, model, _ = trained
    assert model.is_file()
    config = json.loads(Path(str(model) + ".features.json").read_text())
    assert config["attributes"] == ["word"]
    assert config["label_columns"] == 2
    assert config["features"] == ["ngram", "shape", "position"]
    # the model file is pickle-free
    import numpy as np

    with np.load(model, allow_pickle=False) as data:
        assert "coef" in data.files


def test_tag_columns_round_trip(trained):
    d, model, sents = trained
    # unlabelled input: words only
    write_toy(d / "words.txt", sents, columns=(0,))
    out = d / "tagged.txt"
    res = run("tag", d / "words.txt", "--model", model, "--output", out)
    assert res.returncode == 0, res.stderr
    X, y = read_conll(out, n_label_columns=2)
    assert X == [[t[0] for t in s] for s in sents]
    assert all(yy.shape == (len(s), 2) for yy, s in zip(y, sents))
    gold = [[(t[1], t[2]) for t in s] for s in sents]
    right = sum(tuple(a) == b for yy, g in zip(y, gold) for a, b in zip(yy.tolist(), g))
    assert right / sum(map(len, gold)) > 0.9
    # labelled input: the gold columns are ignored, the output goes to stdout
    res2 = run("tag", d / "train.txt", "--model", model)
    assert res2.returncode == 0, res2.stderr
    assert res2.stdout == out.read_text(encoding="utf-8")
    # some of the label columns (the first chain's gold): ignored too
    write_toy(d / "pos.txt", sents, columns=(0, 1))
    res3 = run("tag", d / "pos.txt", "--model", model)
    assert res3.returncode == 0, res3.stderr
    assert res3.stdout == out.read_text(encoding="utf-8")
    # more columns than attributes and chains: a plain message
    write_toy(d / "wide.txt", sents, columns=(0, 1, 2, 2))
    res4 = run("tag", d / "wide.txt", "--model", model)
    assert res4.returncode != 0
    assert "has 4 columns; the model reads 1 attribute column (word) and ignores up to " \
        "2 label columns" in res4.stderr


def test_train_with_affix_casing_and_lexicon_features(tmp_path):
    """Every transformer has a feature kind; the lexicon travels in the feature config."""
    sents = toy_corpus(20)
    write_toy(tmp_path / "train.txt", sents)
    (tmp_path / "lex.txt").write_text("# determiners\nthe DET\na DET\nthe old man PERSON\n",
                                      encoding="utf-8")
    model = tmp_path / "m.npz"
    res = run("train", tmp_path / "train.txt", "--model", model, "--features",
              "ngram,affix,casing,lexicon", "--affix-length", 3, "--lexicon", tmp_path / "lex.txt",
              "--max-iter", 20)
    assert res.returncode == 0, res.stderr
    config = json.loads((tmp_path / "m.npz.features.json").read_text(encoding="utf-8"))
    assert config["affix_length"] == 3
    assert config["lexicon"] == [["the", "DET"], ["a", "DET"], ["the old man", "PERSON"]]
    from skfcrf import FactorialCRF

    names = set(FactorialCRF.load(model).observation_names_)
    for prefix in ("affix__word.suffix3@0=", "casing__", "lexicon__lex@0=DET"):
        assert any(n.startswith(prefix) for n in names), prefix
    (tmp_path / "lex.txt").unlink()           # not needed to tag
    res = run("tag", tmp_path / "train.txt", "--model", model)
    assert res.returncode == 0, res.stderr
    res = run("train", tmp_path / "train.txt", "--model", tmp_path / "x.npz", "--features",
              "ngram,lexicon")
    assert res.returncode == 2 and "--lexicon FILE go together" in res.stderr


def test_train_infers_the_label_columns(tmp_path):
    """Without --label-columns: the columns after the attributes, when every line has as
    many; otherwise a message asking for it."""
    sents = toy_corpus(12)
    write_toy(tmp_path / "train.txt", sents)
    res = run("train", tmp_path / "train.txt", "--model", tmp_path / "m.npz", "--max-iter", 5)
    assert res.returncode == 0, res.stderr
    assert "2 label columns" in res.stderr
    config = json.loads((tmp_path / "m.npz.features.json").read_text(encoding="utf-8"))
    assert config["label_columns"] == 2
    with open(tmp_path / "ragged.txt", "w", encoding="utf-8") as fh:
        fh.write("the DT B-NP\ncat NN\n\n")
    res = run("train", tmp_path / "ragged.txt", "--model", tmp_path / "r.npz")
    assert res.returncode == 2
    assert "line 1 has 3 columns and line 2 2; give --label-columns" in res.stderr
    write_toy(tmp_path / "words.txt", sents, columns=(0,))
    res = run("train", tmp_path / "words.txt", "--model", tmp_path / "w.npz")
    assert res.returncode == 2 and "no label column after the 1 attribute column" in res.stderr


def test_decoding_message_counts_in_the_right_number(trained):
    d, model, sents = trained
    write_toy(d / "one.txt", sents[:1], columns=(0,))
    res = run("tag", d / "one.txt", "--model", model)
    assert res.returncode == 0, res.stderr
    assert "tagging 1 sequence..." in res.stderr


def test_tag_renders_html_and_markdown(trained):
    d, model, _ = trained
    res = run("tag", d / "train.txt", "--model", model, "--format", "html")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("<!DOCTYPE html>") and res.stdout.count("<article") == 30
    res = run("tag", d / "train.txt", "--model", model, "--format", "markdown",
              "--output", d / "out.md")
    assert res.returncode == 0, res.stderr
    assert "cat" in (d / "out.md").read_text(encoding="utf-8").lower()  # sentence case


def test_evaluate_prints_scores(trained):
    d, model, _ = trained
    res = run("evaluate", d / "train.txt", "--model", model)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "accuracy" in out and "segment F1" in out and "WindowDiff" in out
    rows = {line.split()[0] + " " + line.split()[1]: line.split()
            for line in out.splitlines() if line.startswith("chain ")}
    assert float(rows["chain 0"][2]) > 0.9 and float(rows["chain 1"][2]) > 0.9
    joint = next(line for line in out.splitlines() if line.startswith("joint"))
    assert float(joint.split()[1]) > 0.8
    assert "Chain 0" in out and "Chain 1" in out  # per-label reports
    assert "B-NP" in out and "VBD" in out


def test_view_writes_pages_and_index(trained):
    d, model, sents = trained
    out = d / "pages"
    res = run("view", d / "train.txt", "--model", model, "--output", out,
              "--chain-names", "pos,chunk")
    assert res.returncode == 0, res.stderr
    pages = sorted(p.name for p in out.iterdir())
    # POS and chunk columns are no dictation: sequences, not reports
    assert pages == ["index.html"] + [f"sequence-{k:04d}.html" for k in range(1, 31)]
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "sequence 30" in index and "all 30 sequences (pooled)" in index
    assert "report" not in index.lower()
    page = (out / "sequence-0001.html").read_text(encoding="utf-8")
    assert "chunk (chain 1) segment" in page and "report" not in page.lower()
    assert 'data-type="NP"' in page and "chunk" in page and "exact" in page
    assert 'data-i="0">' + sents[0][0][0] + "<" in page
    one = d / "one.html"
    res = run("view", d / "train.txt", "--model", model, "--output", one, "--sequence", 2)
    assert res.returncode == 0, res.stderr
    assert f'data-i="0">{sents[1][0][0]}<' in one.read_text(encoding="utf-8")
    assert_one_line_error(run("view", d / "train.txt", "--model", model, "--output", one,
                              "--chain-names", "a"), "--chain-names", status=2)
    assert_one_line_error(run("view", d / "train.txt", "--model", model, "--output", one,
                              "--sequence", 99), "has 30 sequences", status=2)


# --------------------------------------------------------------------------- errors
def test_error_missing_data_file(tmp_path):
    res = run("train", tmp_path / "nope.txt", "--model", tmp_path / "m")
    assert_one_line_error(res, "not found", "nope.txt")


def test_error_malformed_file_names_line(trained, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("the DT B-NP\ncat NN\n\n", encoding="utf-8")
    res = run("train", bad, "--model", tmp_path / "m", "--label-columns", 2)
    line = assert_one_line_error(res, "bad.txt", "line 2")
    assert "expected 3 columns" in line
    # the same with a fitted model: evaluate needs 1 word + 2 label columns
    d, model, _ = trained
    res = run("evaluate", bad, "--model", model)
    assert_one_line_error(res, "line 2")


@pytest.mark.parametrize("args, fragment", [
    (["train", "x.txt", "--model", "m", "--max-iter", "0"], "--max-iter"),
    (["train", "x.txt", "--model", "m", "--features", "ngram,magic"], "magic"),
    (["train", "x.txt"], "--model"),
    (["tag", "x.txt", "--model", "m", "--format", "pdf"], "--format"),
    (["demo", "--n-reports", "two"], "--n-reports"),
])
def test_error_bad_options(args, fragment):
    res = run(*args)
    assert_one_line_error(res, fragment, status=2)


def test_error_model_not_found_or_invalid(trained, tmp_path):
    d, _, _ = trained
    res = run("tag", d / "train.txt", "--model", tmp_path / "none.model")
    assert_one_line_error(res, "model file not found")
    fake = tmp_path / "fake.model"
    fake.write_text("not a model\n")
    Path(str(fake) + ".features.json").write_text("{}")
    res = run("evaluate", d / "train.txt", "--model", fake)
    assert_one_line_error(res, "invalid model file", "fake.model")


# --------------------------------------------------------------------------- helpers (in process)
def test_convergence_summary_of_decode_records():
    from types import SimpleNamespace as Rec

    from skfcrf.cli._common import convergence_summary

    recs = [Rec(status="converged", n_iter=4), Rec(status="approximate", n_iter=30),
            Rec(status="exact", n_iter=0), Rec(status="exact", n_iter=6)]
    assert convergence_summary(recs) == (True, 0.75, 10.0)
    assert convergence_summary([Rec(status="exact", n_iter=1)] * 3) == (False, 1.0, 1.0)
    assert convergence_summary([]) == (False, 1.0, 0.0)


def test_inspect_prints_top_weights(trained):
    d, model, _ = trained
    res = run("inspect", model, "-n", "5", "--kind", "unary")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert lines[0].split() == ["kind", "chains", "observation", "labels", "weight"]
    assert len(lines) == 6 and all(line.startswith("unary") for line in lines[1:])
    bad = run("inspect", d / "missing.npz")
    assert bad.returncode != 0 and "model file not found" in bad.stderr
    assert run("inspect", model, "--chain", "7").returncode == 2


# --------------------------------------------------------------------------- post-processing (--repair)
@pytest.fixture(scope="module")
def dictation_model(tmp_path_factory):
    """A quickly trained 3-chain model on a few synthetic dictations (rcg style)."""
    from skfcrf.datasets import make_dictations, write_conll

    d = tmp_path_factory.mktemp("dict")
    X, y = make_dictations(n_reports=8, style="rcg", random_state=5)
    write_conll(d / "train.txt", X[:5], y[:5])
    write_conll(d / "test.txt", X[5:], y[5:])
    model = d / "dict.model"
    res = run("train", d / "train.txt", "--model", model, "--label-columns", 3,
              "--objective", "chainwise", "--max-iter", 8, "--finetune-iter", 0, "-q")
    assert res.returncode == 0, res.stderr
    return d, model, X[5:], y[5:]


def _tagged_labels(path):
    return [np.asarray(s, dtype=object) for s in read_conll(path, n_label_columns=3)[1]]


def test_tag_repair_writes_repaired_columns(dictation_model):
    from skfcrf.structure import repair_sequences

    d, model, X, _ = dictation_model
    raw, fixed = d / "raw.txt", d / "fixed.txt"
    for out, extra in ((raw, []), (fixed, ["--repair", "rcg"])):
        res = run("tag", d / "test.txt", "--model", model, "--output", out, "-q", *extra)
        assert res.returncode == 0, res.stderr
    raw_y, fixed_y = _tagged_labels(raw), _tagged_labels(fixed)
    expected = repair_sequences(raw_y, "rcg", X)  # the CLI reads words as str tokens
    assert all(np.array_equal(a, b) for a, b in zip(fixed_y, expected))
    assert any(not np.array_equal(a, b) for a, b in zip(raw_y, fixed_y))
    res = run("tag", d / "test.txt", "--model", model, "--format", "markdown", "--repair", "cor")
    assert res.returncode == 0 and "## " in res.stdout, res.stderr


def test_tag_text_writes_formatted_reports(dictation_model):
    """--format text: one formatted report per sequence (render_text of the formally
    repaired predictions), dictated punctuation turned into marks, commands dropped."""
    from skfcrf.structure import render_text, repair_sequences

    d, model, X, _ = dictation_model
    res = run("tag", d / "test.txt", "--model", model, "--format", "text")
    assert res.returncode == 0, res.stderr
    reports = res.stdout.split("\n\n")
    assert len(reports) == len(X)
    words = res.stdout.split()
    assert not {"period", "comma", "uh", "um"} & set(words)
    assert any(w.endswith(":") and w[:-1].isupper() for w in words)  # headings
    res = run("tag", d / "test.txt", "--model", model, "--output", d / "cols.txt", "-q")
    y = repair_sequences(_tagged_labels(d / "cols.txt"), "formal", X)
    for tokens, labels, text in zip(X, y, reports):
        expected = render_text(tokens, labels, dictated_punctuation=True, capitalize=True,
                               drop_words=("uh", "um", "ah", "er"))
        assert text.rstrip("\n") + "\n" == expected
    res = run("tag", d / "test.txt", "--model", model, "--format", "text", "--verbatim")
    assert res.returncode == 0, res.stderr
    assert {"period", "comma"} & set(res.stdout.split())


def test_evaluate_repair_prints_both_tables(dictation_model):
    from skfcrf.metrics import joint_accuracy
    from skfcrf.structure import repair_sequences

    d, model, X, y = dictation_model
    res = run("evaluate", d / "test.txt", "--model", model, "--repair", "rcg")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "without post-processing" in out and "with post-processing (--repair rcg;" in out
    joints = [float(line.split()[1]) for line in out.splitlines() if line.startswith("joint")]
    assert len(joints) == 2
    tagged = d / "eval_raw.txt"
    assert run("tag", d / "test.txt", "--model", model, "--output", tagged, "-q").returncode == 0
    raw_y = _tagged_labels(tagged)
    assert joints[0] == pytest.approx(joint_accuracy(y, raw_y), abs=1e-4)
    assert joints[1] == pytest.approx(joint_accuracy(y, repair_sequences(raw_y, "rcg", X)),
                                      abs=1e-4)
    plain = run("evaluate", d / "test.txt", "--model", model)
    assert "post-processing" not in plain.stdout


@pytest.mark.parametrize("cmd", ["tag", "evaluate"])
def test_repair_bad_preset_is_one_line_error(dictation_model, cmd):
    d, model, _, _ = dictation_model
    res = run(cmd, d / "test.txt", "--model", model, "--repair", "rgc")
    assert_one_line_error(res, "--repair", "rgc", status=2)


# --------------------------------------------------------------------------- train: model options
def test_train_model_options_reach_the_estimator(trained, tmp_path):
    from skfcrf import FactorialCRF

    d, _, _ = trained
    forbid = tmp_path / "forbid.txt"
    forbid.write_text("# chunks: no I-NP right after a verb chunk or O\n1 B-VP I-NP\n1 O I-NP\n"
                      "0 DT VBD  # no verb after a determiner\n", encoding="utf-8")
    couple = tmp_path / "couple.txt"
    couple.write_text("0 1 DT B-VP\n", encoding="utf-8")
    model = tmp_path / "opts.model"
    res = run("train", d / "train.txt", "--model", model, "--label-columns", 2,
              "--objective", "independent", "--finetune-iter", 3, "--unary-features", "all",
              "--transition-features", "supported", "--coupling-features", "supported",
              "--coupling", "0-1", "--forbidden-transitions", forbid,
              "--forbidden-couplings", couple, "--inference", "exact", "--bp-tol", "1e-4",
              "--solver", "lbfgs", "--max-iter", 20, "--tol", "1e-4", "--lbfgs-memory", 5,
              "--early-stopping", "--validation-fraction", "0.2", "--n-iter-no-change", 3,
              "--validation-interval", 2, "--validation-scoring", "accuracy",
              "--state-transitions", "off", "-q")
    assert res.returncode == 0, res.stderr
    crf = FactorialCRF.load(model)
    p = crf.get_params()
    assert p["state_transitions"] is False and crf.layout_.n_state_pairs == 0
    assert (p["objective"], p["finetune_iter"], p["unary_features"], p["transition_features"],
            p["coupling_features"], p["inference"], p["bp_tol"], p["tol"], p["lbfgs_memory"]) \
        == ("independent", 3, "all", "supported", "supported", "exact", 1e-4, 1e-4, 5)
    assert [tuple(c) for c in p["coupling"]] == [(0, 1)]
    assert p["early_stopping"] and p["validation_fraction"] == 0.2
    assert p["n_iter_no_change"] == 3 and p["validation_scoring"] == "accuracy"
    ft = {int(k): sorted(map(tuple, v)) for k, v in dict(p["forbidden_transitions"]).items()}
    assert ft == {0: [("DT", "VBD")], 1: [("B-VP", "I-NP"), ("O", "I-NP")]}
    fc = {tuple(k): [tuple(x) for x in v] for k, v in dict(p["forbidden_couplings"]).items()}
    assert fc == {(0, 1): [("DT", "B-VP")]}
    # coupling weights on one observation group (a prefix of the toy model's names)
    prefix = str(FactorialCRF.load(trained[1]).observation_names_[0]).split("=")[0] + "="
    res = run("train", d / "train.txt", "--model", tmp_path / "g.model", "--label-columns", 2,
              "--coupling-features", "supported", "--coupling-observations", prefix,
              "--max-iter", 5, "-q")
    assert res.returncode == 0, res.stderr
    assert FactorialCRF.load(tmp_path / "g.model").get_params()["coupling_observations"] \
        == [prefix]
    # oLBFGS settings
    res = run("train", d / "train.txt", "--model", tmp_path / "o.model", "--label-columns", 2,
              "--solver", "olbfgs", "--batch-size", 4, "--eta0", "0.05", "--tau", "50",
              "--max-iter", 2, "--forbidden-transitions", "none", "--coupling", "none", "-q")
    assert res.returncode == 0, res.stderr
    p = FactorialCRF.load(tmp_path / "o.model").get_params()
    assert (p["solver"], p["batch_size"], p["eta0"], p["tau"], p["coupling"],
            p["forbidden_transitions"]) == ("olbfgs", 4, 0.05, 50.0, "none", None)
    # an online trainer of CRFsuite's
    res = run("train", d / "train.txt", "--model", tmp_path / "p.model", "--label-columns", 2,
              "--solver", "perceptron", "--objective", "likelihood", "--max-iter", 3, "-q")
    assert res.returncode == 0, res.stderr
    assert FactorialCRF.load(tmp_path / "p.model").get_params()["solver"] == "perceptron"
    res = run("train", d / "train.txt", "--model", tmp_path / "q.model", "--label-columns", 2,
              "--solver", "perceptron", "-q")
    assert res.returncode != 0 and "objective='likelihood'" in res.stderr


@pytest.mark.parametrize("extra, fragments", [
    (["--objective", "magic"], ["--objective", "magic"]),
    (["--unary-features", "some"], ["--unary-features"]),
    (["--coupling", "0-0"], ["--coupling", "two distinct chains"]),
    (["--coupling", "a-b"], ["--coupling", "chain pairs"]),
    (["--validation-fraction", "1"], ["--validation-fraction", "(0, 1)"]),
    (["--validation-scoring", "speed"], ["--validation-scoring"]),
    (["--tol", "-1"], ["--tol"]),
    (["--forbidden-transitions", "no_such_file.txt"], ["--forbidden-transitions",
                                                       "file not found"]),
])
def test_train_model_option_errors(trained, extra, fragments):
    d, _, _ = trained
    res = run("train", d / "train.txt", "--model", d / "bad.model", "--label-columns", 2, *extra)
    assert_one_line_error(res, *fragments, status=2)


@pytest.mark.parametrize("content, fragments", [
    ("1 B-VP\n", ["line 1", "expected 'CHAIN LABEL_FROM LABEL_TO'"]),
    ("x B-VP I-NP\n", ["line 1", "integers"]),
    ("# nothing\n", ["lists no label pairs"]),
])
def test_train_forbidden_file_errors(trained, tmp_path, content, fragments):
    d, _, _ = trained
    bad = tmp_path / "forbid.txt"
    bad.write_text(content, encoding="utf-8")
    res = run("train", d / "train.txt", "--model", tmp_path / "m", "--label-columns", 2,
              "--forbidden-transitions", bad)
    assert_one_line_error(res, "forbid.txt", *fragments, status=2)


def test_train_forbidden_unknown_label_is_one_line(trained, tmp_path):
    d, _, _ = trained
    bad = tmp_path / "forbid.txt"
    bad.write_text("1 B-XX I-NP\n", encoding="utf-8")
    couple = tmp_path / "couple.txt"
    couple.write_text("1 0 DT B-NP\n", encoding="utf-8")
    res = run("train", d / "train.txt", "--model", tmp_path / "m", "--label-columns", 2,
              "--forbidden-transitions", bad, "--max-iter", 2, "-q")
    assert_one_line_error(res, "cannot train", "B-XX")
    res = run("train", d / "train.txt", "--model", tmp_path / "m", "--label-columns", 2,
              "--forbidden-couplings", couple)
    assert_one_line_error(res, "couple.txt", "CHAIN_I < CHAIN_J", status=2)


def test_train_defaults_are_the_estimators():
    # `skfcrf train` without model or solver options fits FactorialCRF's defaults (its
    # --max-iter stayed at 800 when the estimator's went to 100)
    from skfcrf import FactorialCRF
    from skfcrf.cli import build_parser
    from skfcrf.cli._train import model_params

    args = build_parser().parse_args(["train", "data.txt", "--model", "m.npz"])
    defaults = FactorialCRF().get_params()
    for key, value in model_params(args).items():
        if key in ("forbidden_transitions", "forbidden_couplings"):
            continue    # given as names on the command line
        assert value == defaults[key], key


# --------------------------------------------------------------------------- chain names
@pytest.fixture(scope="module")
def named_model(trained):
    """The toy corpus with its chains named pos and chunk (--chain-names)."""
    d = trained[0]
    model = d / "named.model"
    res = run("train", d / "train.txt", "--model", model, "--chain-names", "pos", "chunk",
              "--features", "ngram", "--max-iter", 15, "--min-instance-freq", 1)
    assert res.returncode == 0, res.stderr
    assert "2 label columns: pos, chunk" in res.stderr
    return model


def test_train_stores_chain_names(trained, dictation_model, named_model, tmp_path):
    """Unnamed chains are chain 0, chain 1, ...; three dictation-scheme label columns are
    sentence, subsection, section; --chain-names names them; all stored beside the model."""
    _, model, _ = trained
    assert json.loads(Path(str(model) + ".features.json").read_text())["chain_names"] == [
        "chain 0", "chain 1"]
    _, dmodel, _, _ = dictation_model
    assert json.loads(Path(str(dmodel) + ".features.json").read_text())["chain_names"] == [
        "sentence", "subsection", "section"]
    assert json.loads(Path(str(named_model) + ".features.json").read_text())["chain_names"] == [
        "pos", "chunk"]
    for names, fragment in ((["pos"], "1 names for 2 label columns"),
                            (["pos", "pos"], "not distinct"), (["pos", "a,b"], "comma")):
        res = run("train", trained[0] / "train.txt", "--model", tmp_path / "bad.model",
                  "--chain-names", *names)
        assert_one_line_error(res, "--chain-names", fragment, status=2)




def test_evaluate_names_the_chains(trained, dictation_model, named_model):
    d = trained[0]
    out = run("evaluate", d / "train.txt", "--model", named_model).stdout
    rows = [line.split("  ")[0] for line in out.splitlines()]
    assert "chain 0 (pos)" in rows and "chain 1 (chunk)" in rows
    assert "Chain 0 (pos)" in rows and "Chain 1 (chunk)" in rows   # the per-label reports
    dd, dmodel, _, _ = dictation_model
    res = run("evaluate", dd / "test.txt", "--model", dmodel, "-q")
    assert res.returncode == 0, res.stderr
    for c, name in enumerate(("sentence", "subsection", "section")):
        assert f"\nchain {c} ({name})  " in res.stdout
        assert f"\nChain {c} ({name})\n" in res.stdout


def test_view_legend_and_wording_use_the_stored_names(trained, dictation_model, named_model):
    d = trained[0]
    out = d / "named_pages"
    res = run("view", d / "train.txt", "--model", named_model, "--output", out, "-q")
    assert res.returncode == 0, res.stderr
    assert "wrote 30 sequence pages" in res.stdout
    page = (out / "sequence-0001.html").read_text(encoding="utf-8")
    assert "pos (chain 0) segment" in page and "chunk (chain 1) segment" in page
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "<th>pos</th><th>chunk</th>" in index and "report" not in index.lower()
    # unnamed chains: "chain 1 segment", never "chain 1 (chain 1)"
    one = d / "unnamed.html"
    res = run("view", d / "train.txt", "--model", trained[1], "--output", one, "--sequence", 3)
    assert res.returncode == 0, res.stderr
    page = one.read_text(encoding="utf-8")
    assert "chain 1 segment" in page and "(chain 1)" not in page
    assert "train.txt: sequence 3" in page
    # dictations are reports, their chains sentence, subsection, section
    dd, dmodel, X, _ = dictation_model
    res = run("view", dd / "test.txt", "--model", dmodel, "--output", dd / "pages", "-q")
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in (dd / "pages").iterdir()) == ["index.html"] + [
        f"report-{k:04d}.html" for k in range(1, len(X) + 1)]
    page = (dd / "pages" / "report-0001.html").read_text(encoding="utf-8")
    assert "section (chain 2) segment" in page and "sentence (chain 0) segment" in page
    assert f"all {len(X)} reports (pooled)" in (dd / "pages" / "index.html").read_text()


def test_train_and_inspect_say_what_the_fit_made_of_the_transitions(tmp_path):
    """``skfcrf train`` (on standard error, with its progress) and ``skfcrf inspect`` (on
    standard error, beside the table) print the fitted ``transitions_``: the world,
    how MAP decoding runs, the unseen transitions per named chain and the reason."""
    write_toy(tmp_path / "train.txt", toy_corpus(30))
    model = tmp_path / "m.model"
    res = run("train", tmp_path / "train.txt", "--model", model, "--label-columns", 2,
              "--chain-names", "pos", "chunk", "--features", "ngram", "--max-iter", 5)
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stderr.splitlines() if x.startswith("transitions:"))
    assert line.startswith("transitions: seen+backoff (MAP decoding over the transitions "
                           "seen in training; never seen per chain: pos ")
    assert ", chunk " in line and "held-out folds" in line
    shown = run("inspect", model, "-n", "2")
    assert shown.returncode == 0 and line in shown.stderr.splitlines()
    assert not any(x.startswith("transitions:") for x in shown.stdout.splitlines())
    anchors = next(x for x in res.stderr.splitlines() if x.startswith("anchors:"))
    assert "held-out joint accuracy" in anchors and anchors in shown.stderr.splitlines()
    quiet = run("train", tmp_path / "train.txt", "--model", model, "--label-columns", 2,
                "--features", "ngram", "--max-iter", 5, "-q")
    assert "transitions:" not in quiet.stderr and "anchors:" not in quiet.stderr


def test_inspect_names_the_chains(trained, named_model):
    named = named_model
    res = run("inspect", named, "-n", "8", "--kind", "transition", "--chain", "chunk")
    assert res.returncode == 0, res.stderr
    rows = [line.split()[:2] for line in res.stdout.strip().splitlines()[1:]]
    assert rows and all(row == ["transition", "chunk"] for row in rows)
    by_index = run("inspect", named, "-n", "8", "--kind", "transition", "--chain", "1")
    assert by_index.stdout == res.stdout
    coupling = run("inspect", named, "-n", "3", "--kind", "coupling").stdout.splitlines()[1:]
    assert coupling and all(line.split()[1] == "pos,chunk" for line in coupling)
    assert_one_line_error(run("inspect", named, "--chain", "noun"), "--chain noun",
                          "pos, chunk", status=2)
    # unnamed chains keep their indices
    res = run("inspect", trained[1], "-n", "3", "--kind", "coupling")
    assert all(line.split()[1] == "0,1" for line in res.stdout.splitlines()[1:])


def test_model_without_stored_names_still_works(trained, named_model, tmp_path):
    """A feature configuration written before chain names were stored (no "chain_names")
    reads as chain 0, chain 1, ...; a malformed one is a one-line error."""
    import shutil

    d = trained[0]
    named = named_model
    old = tmp_path / "old.model"
    shutil.copy(named, old)
    config = json.loads(Path(str(named) + ".features.json").read_text())
    del config["chain_names"]
    Path(str(old) + ".features.json").write_text(json.dumps(config))
    res = run("evaluate", d / "train.txt", "--model", old, "-q")
    assert res.returncode == 0, res.stderr
    assert "\nchain 1  " in res.stdout and "(chunk)" not in res.stdout
    res = run("view", d / "train.txt", "--model", old, "--output", tmp_path / "p.html",
              "--sequence", 1)
    assert res.returncode == 0, res.stderr
    assert "chain 1 segment" in (tmp_path / "p.html").read_text(encoding="utf-8")
    res = run("tag", d / "train.txt", "--model", old, "--output", tmp_path / "t.txt", "-q")
    assert res.returncode == 0, res.stderr
    res = run("inspect", old, "-n", "2", "--kind", "coupling", "--chain", "1")
    assert res.returncode == 0 and res.stdout.splitlines()[1].split()[1] == "0,1", res.stderr
    config["chain_names"] = ["pos"]
    Path(str(old) + ".features.json").write_text(json.dumps(config))
    assert_one_line_error(run("evaluate", d / "train.txt", "--model", old),
                          "invalid feature configuration", "chain_names")
