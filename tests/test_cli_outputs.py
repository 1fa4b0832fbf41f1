"""The command line's outputs and messages (issue 75, cases A-F): unwritable output paths
fail before the long work, Ctrl-C in ``train`` keeps the model trained so far, ``tag``
writes back what ``train`` read, the announced iteration budget and the bar's total are the
real ones, ``--features auto`` and a demo that writes only where asked.  The commands run
in-process (``skfcrf.cli.main``) on tiny data."""
import json
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import tomllib
from sklearn.exceptions import ConvergenceWarning

from skfcrf.cli import _demo, _prepare, _progress, _tag, main
from skfcrf.datasets import make_dictations, read_conll, write_conll

ROOT = Path(__file__).resolve().parents[1]
GENERAL_FEATURES = ["ngram", "affix", "shape", "casing"]


def toy_lines(n=12):
    """Two label columns: the part of speech, and the word's parity (two labels)."""
    words = [("the", "DT"), ("cat", "NN"), ("sat", "VBD"), ("on", "IN"), ("a", "DT"),
             ("mat", "NN"), ("dogs", "NNS"), ("ran", "VBD"), ("quickly", "RB"), (".", ".")]
    rng = np.random.default_rng(0)
    seqs = []
    for _ in range(n):
        idx = rng.integers(0, len(words), size=int(rng.integers(3, 7)))
        seqs.append([(words[i][0], words[i][1], "even" if i % 2 == 0 else "odd") for i in idx])
    return seqs


def many_labels(n=30):
    """Two label columns: one label per word (30 labels), and the word's parity (two)."""
    rng = np.random.default_rng(0)
    return [[(f"w{i}", f"L{i}", "even" if i % 2 == 0 else "odd")
             for i in rng.integers(0, 30, size=int(rng.integers(3, 7)))] for _ in range(n)]


def write_columns(path, seqs, sep=" "):
    path.write_text("".join("".join(sep.join(tok) + "\n" for tok in s) + "\n" for s in seqs),
                    encoding="utf-8")
    return path


def one_line_error(capsys, status, expected_status, *fragments):
    err = capsys.readouterr().err
    assert status == expected_status, err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("skfcrf: error: "), err
    for fragment in fragments:
        assert fragment in lines[-1], lines[-1]
    return lines[-1]


@pytest.fixture
def no_training(monkeypatch):
    """Training fails the test: an output check must come first."""
    from skfcrf import FactorialCRF

    def fit(self, X, y):
        raise AssertionError("trained before checking the output path")

    monkeypatch.setattr(FactorialCRF, "fit", fit)


@pytest.fixture
def read_only(monkeypatch):
    """``read_only(path)``: ``os.access`` denies writing there, as on a read-only directory
    or file system (the tests run as root too, whom chmod does not stop)."""
    denied = set()
    real = os.access

    def access(path, mode, *args, **kwargs):
        if os.path.abspath(os.fspath(path)) in denied and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    return lambda path: denied.add(os.path.abspath(os.fspath(path)))


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("outputs")
    data = write_columns(d / "train.txt", toy_lines())
    model = d / "toy.model"
    assert main(["train", str(data), "--model", str(model), "--features", "ngram,shape",
                 "--max-iter", "3", "--finetune-iter", "0", "--state-transition-iter", "0",
                 "-q"]) == 0
    return d, data, model


# ----------------------------------------------------------------------------- A: output paths
def test_train_model_path_through_a_file_fails_before_training(tmp_path, capsys, no_training):
    data = write_columns(tmp_path / "train.txt", toy_lines())
    (tmp_path / "afile").write_text("x")
    status = main(["train", str(data), "--model", str(tmp_path / "afile" / "m.npz"), "-q"])
    one_line_error(capsys, status, 2, "cannot write the model", "afile is a file, not a directory")


def test_train_read_only_model_directory_fails_before_training(tmp_path, capsys, no_training,
                                                               read_only):
    data = write_columns(tmp_path / "train.txt", toy_lines())
    out = tmp_path / "ro"
    out.mkdir()
    read_only(out)
    status = main(["train", str(data), "--model", str(out / "m.npz"), "-q"])
    one_line_error(capsys, status, 2, "cannot write the model", "not writable")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into read-only directories")
def test_train_chmod_read_only_directory(tmp_path, capsys, no_training):
    data = write_columns(tmp_path / "train.txt", toy_lines())
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o555)
    try:
        status = main(["train", str(data), "--model", str(out / "m.npz"), "-q"])
    finally:
        out.chmod(0o755)
    one_line_error(capsys, status, 2, "not writable")


def test_tag_unwritable_output_fails_before_decoding(toy_model, tmp_path, capsys, monkeypatch,
                                                    read_only):
    d, data, model = toy_model

    def decode(*args, **kwargs):
        raise AssertionError("decoded before checking --output")

    monkeypatch.setattr(_tag, "decode_data", decode)
    (tmp_path / "afile").write_text("x")
    status = main(["tag", str(data), "--model", str(model), "--output",
                   str(tmp_path / "afile" / "out.txt")])
    one_line_error(capsys, status, 2, "cannot write --output", "is a file, not a directory")
    existing = tmp_path / "tagged.txt"
    existing.write_text("old")
    read_only(existing)
    status = main(["tag", str(data), "--model", str(model), "--output", str(existing)])
    one_line_error(capsys, status, 2, "cannot write --output", "read-only")
    assert existing.read_text() == "old"


def test_demo_unwritable_output_dir_fails_before_training(tmp_path, capsys, monkeypatch,
                                                         read_only):
    def cross_validate_style(*args, **kwargs):
        raise AssertionError("cross-validated before checking --output-dir")

    monkeypatch.setattr(_demo, "cross_validate_style", cross_validate_style)
    read_only(tmp_path)
    status = main(["demo", "--output-dir", str(tmp_path), "-q"])
    one_line_error(capsys, status, 2, "cannot write --output-dir", "not writable")


def test_prepare_unwritable_output_fails_before_aligning(tmp_path, capsys, monkeypatch,
                                                         read_only):
    def prepare_all(*args, **kwargs):
        raise AssertionError("aligned before checking -o")

    monkeypatch.setattr(_prepare, "_prepare_all", prepare_all)
    for sub in ("reports", "transcripts"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "a.txt").write_text("PLAN:\nRest.\n" if sub == "reports" else "plan rest")
    out = tmp_path / "out"
    out.mkdir()
    read_only(out)
    status = main(["prepare", str(tmp_path / "reports"), str(tmp_path / "transcripts"), "-o",
                   str(out / "data.conll"), "-q"])
    one_line_error(capsys, status, 2, "cannot write -o", "not writable")


# ----------------------------------------------------------------------------- B: Ctrl-C
def _interrupt_at(monkeypatch, iteration):
    """Ctrl-C inside training: the solver's callback raises KeyboardInterrupt at its
    ``iteration``-th call (the FactorialCRF then keeps the last completed iteration)."""
    from skfcrf.solvers import ConvergenceMonitor

    real = ConvergenceMonitor.report

    def report(self, theta, loss):
        if self.n_iter + 1 == iteration:
            raise KeyboardInterrupt
        return real(self, theta, loss)

    monkeypatch.setattr(ConvergenceMonitor, "report", report)


def test_train_interrupted_writes_the_model_trained_so_far(tmp_path, capsys, monkeypatch):
    data = write_columns(tmp_path / "train.txt", toy_lines())
    model = tmp_path / "m.npz"
    _interrupt_at(monkeypatch, 4)
    status = main(["train", str(data), "--model", str(model), "--features", "ngram",
                   "--max-iter", "50"])
    err = capsys.readouterr().err
    assert status == 130, err
    assert (f"interrupted: wrote the model trained so far (3 iterations, not converged) to "
            f"{model}") in err
    assert model.is_file() and Path(str(model) + ".features.json").is_file()
    monkeypatch.undo()
    from skfcrf import FactorialCRF

    crf = FactorialCRF.load(model)
    assert crf.n_iter_ == 3 and not crf.converged_
    assert main(["tag", str(data), "--model", str(model), "--output",
                 str(tmp_path / "t.txt"), "-q"]) == 0


def test_train_interrupted_before_an_iteration_writes_nothing(tmp_path, capsys, monkeypatch):
    data = write_columns(tmp_path / "train.txt", toy_lines())
    model = tmp_path / "m.npz"
    _interrupt_at(monkeypatch, 1)
    status = main(["train", str(data), "--model", str(model), "--features", "ngram"])
    err = capsys.readouterr().err
    assert status == 130
    assert "interrupted before the first training iteration completed: no model written" in err
    assert not model.exists() and not Path(str(model) + ".features.json").exists()


# ----------------------------------------------------------------------------- C: tab files
def test_tag_writes_back_a_tab_separated_file(tmp_path, capsys):
    seqs = [[("New York", "NNP NNP", "B-LOC"), ("is", "VBZ", "O"), ("big", "JJ", "O")],
            [("Los Angeles", "NNP NNP", "B-LOC"), ("is", "VBZ", "O")]] * 4
    data = write_columns(tmp_path / "train.tsv", seqs, sep="\t")
    model = tmp_path / "m.npz"
    assert main(["train", str(data), "--model", str(model), "--sep", "tab", "--attributes",
                 "word", "pos", "--features", "ngram", "--max-iter", "3", "-q"]) == 0
    out = tmp_path / "tagged.tsv"
    status = main(["tag", str(data), "--model", str(model), "--output", str(out), "-q"])
    assert status == 0, capsys.readouterr().err
    X, y = read_conll(out, attributes=("word", "pos"), sep="\t")
    assert [t["word"] for t in X[0]] == ["New York", "is", "big"]
    assert len(y) == len(seqs)


# ----------------------------------------------------------------------------- D: budgets
def _expected_budget(args):
    """The most iterations the fit of ``skfcrf train ARGS`` can run, from the public API:
    the first stage's per-chain budgets (BlockLBFGS.block_iterations), then fine-tuning
    and joint-state transitions where the fitted structure has them."""
    from skfcrf import FactorialCRF
    from skfcrf.cli import build_parser
    from skfcrf.cli._files import features_from_config, read_data
    from skfcrf.estimators import training_problem
    from skfcrf.inference import resolve_method
    from skfcrf.solvers import BlockLBFGS

    a = build_parser().parse_args(args)
    X, y = read_data(a.data, a.attributes, 2, a.sep)
    Xf = features_from_config({"attributes": a.attributes, "features": a.features})\
        .fit_transform(X)
    crf = FactorialCRF(max_iter=a.max_iter, min_instance_freq=a.min_instance_freq)
    objective = training_problem(crf, Xf, y).objective
    first = int(BlockLBFGS(max_iter=a.max_iter).block_iterations(objective).max())
    exact = resolve_method(crf.inference, crf.graph_, crf.joint_states_).exact
    return first, first + 10 * exact + 10 * (exact and crf.layout_.n_state_pairs > 0)


def test_train_announces_the_real_budget_and_the_bar_counts_to_it(tmp_path, capsys,
                                                                  monkeypatch):
    # chain 0 has thirty labels, chain 1 two: the cheap chain may run a multiple of --max-iter
    data = write_columns(tmp_path / "train.txt", many_labels())
    args = ["train", str(data), "--model", str(tmp_path / "m.npz"), "--features", "ngram",
            "--max-iter", "2"]
    first, total = _expected_budget(args)
    assert first > 2, "the data should give the cheap chain a longer budget"
    bars = []
    real_init = _progress.FitProgress.__init__

    def init(self, total, *a, **k):
        real_init(self, total, *a, **k)
        bars.append(self)

    monkeypatch.setattr(_progress.FitProgress, "__init__", init)
    assert main(args) == 0
    err = capsys.readouterr().err
    assert f"at most {total} iterations in all stages" in err, err
    assert f"{first} in the first stage" in err, err
    assert [b.total for b in bars] == [total]
    done = re.search(r"trained in [\d.]+ s: (\d+) of at most (\d+) iterations", err)
    assert done and int(done.group(2)) == total and int(done.group(1)) <= total, err


def test_fit_budget_bounds_the_fits(tmp_path):
    from skfcrf import FactorialCRF
    from skfcrf.cli._progress import fit_budget
    from skfcrf.transformers import make_dictation_features

    X, y = make_dictations(n_reports=6, style="cor", random_state=0)
    Xf = make_dictation_features().fit_transform(X)
    for params in ({"max_iter": 2}, {"max_iter": 2, "objective": "chainwise"},
                   {"max_iter": 2, "finetune_iter": 0, "state_transition_iter": 3},
                   {"max_iter": 2, "objective": "likelihood", "inference": "trp"}):
        crf = FactorialCRF(**params)
        budget = fit_budget(crf, Xf, y)
        assert budget.total == sum(n for _, n in budget.stages)
        crf.set_params(tol=1e-12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            crf.fit(Xf, y)
        assert crf.n_iter_ <= budget.total, (params, budget)
        # the first stage of 2 iterations per chain cannot converge: it runs in full
        assert crf.n_iter_ >= budget.stages[0][1], (params, budget)


def test_demo_fold_lines_count_against_the_real_budget(tmp_path, capsys, monkeypatch):
    # F: without --output-dir the demo writes no file (here: into the current directory)
    monkeypatch.chdir(tmp_path)
    status = main(["demo", "--n-reports", "6", "--max-iter", "2", "--finetune-iter", "0",
                   "--styles", "cor", "--bp-max-iter", "10"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert os.listdir(tmp_path) == []
    assert "--output-dir DIR writes them" in captured.out
    lines = [ln for ln in captured.err.splitlines() if re.match(r"cor fold \d/3: trained", ln)]
    assert len(lines) == 3, captured.err
    for line in lines:
        done, most = map(int, re.search(r"trained \((\d+) of at most (\d+) L-BFGS", line).groups())
        assert done <= most, line


def test_test_extras_run_the_peer_comparisons():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]
    assert any(re.match(r"sklearn-crfsuite\b", e) for e in extras)


# ----------------------------------------------------------------------------- E: --features auto
def test_features_auto_picks_a_general_set_for_other_labels(toy_model, tmp_path, capsys):
    d, data, _ = toy_model
    model = tmp_path / "m.npz"
    assert main(["train", str(data), "--model", str(model), "--max-iter", "2"]) == 0
    err = capsys.readouterr().err
    assert "features: ngram,affix,shape,casing (auto: the labels do not follow the dictation " \
           "scheme)" in err, err
    config = json.loads(Path(str(model) + ".features.json").read_text())
    assert config["features"] == GENERAL_FEATURES
    # tag reads the stored kinds
    assert main(["tag", str(data), "--model", str(model), "--output", str(tmp_path / "t.txt"),
                 "-q"]) == 0


def test_features_auto_picks_the_dictation_set_for_dictation_labels(tmp_path, capsys):
    X, y = make_dictations(n_reports=4, style="cor", random_state=0)
    data = tmp_path / "dictations.txt"
    write_conll(data, X, y)
    model = tmp_path / "m.npz"
    assert main(["train", str(data), "--model", str(model), "--features", "auto",
                 "--max-iter", "2", "--finetune-iter", "0"]) == 0
    err = capsys.readouterr().err
    assert "features: ngram,concepts,position (auto: the labels follow the dictation scheme)" \
        in err, err
    config = json.loads(Path(str(model) + ".features.json").read_text())
    assert config["features"] == ["ngram", "concepts", "position"]


def test_features_auto_is_not_a_kind_to_combine(toy_model, capsys):
    d, data, _ = toy_model
    status = main(["train", str(data), "--model", str(d / "x.npz"), "--features", "auto,ngram"])
    one_line_error(capsys, status, 2, "auto")
