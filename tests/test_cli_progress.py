"""Progress bars of the command line: the helper (forced on) and the commands on a terminal."""
import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from skfcrf.cli import _progress as progress_module
from skfcrf.cli._progress import FitProgress, bar, decode_with_progress

ROOT = Path(__file__).resolve().parents[1]
ETA = re.compile(r"\[\d\d:\d\d<\d\d:\d\d")  # [elapsed<remaining


@pytest.fixture(autouse=True)
def redraw_every_update(monkeypatch):
    """Draw every update (not every 0.5 s), so the text shows the last state."""
    monkeypatch.setattr(progress_module, "MIN_INTERVAL", 0)


def test_bar_forced_on_shows_an_eta():
    buf = io.StringIO()
    b = bar(4, "work", file=buf, force=True)
    time.sleep(0.6)  # past the redraw interval
    b.update(1)
    b.close()
    text = buf.getvalue()
    assert "work:" in text and "1/4" in text and ETA.search(text), text


def test_bar_leaves_no_thread_behind():
    import threading

    from tqdm._monitor import TMonitor

    b = bar(3, "work", file=io.StringIO(), force=True)
    b.update(3)
    b.close()
    assert not any(isinstance(t, TMonitor) for t in threading.enumerate())


def test_bar_is_quiet_off_a_terminal_or_when_asked():
    buf = io.StringIO()  # not a terminal
    for b in (bar(4, "work", file=buf), bar(4, "work", file=buf, quiet=True, force=True)):
        assert b.disable
        b.update(4)
        b.close()
    assert buf.getvalue() == ""


def test_fit_progress_one_bar_per_fit():
    buf = io.StringIO()
    fp = FitProgress(10, lambda k: f"fold {k}/2", file=buf, force=True)
    for _ in range(3):
        fp.callback(1, 12.5, None)
    fp.finish()
    fp.callback(1, 3.0, None)
    fp.finish()
    text = buf.getvalue()
    assert fp.n_fits == 2
    assert "fold 1/2" in text and "fold 2/2" in text and "loss 12.5" in text and "/10" in text


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fit_progress_with_an_estimator():
    from skfcrf import FactorialCRF

    X = [[{"w=a": 1.0}, {"w=b": 1.0}], [{"w=b": 1.0}, {"w=a": 1.0}]] * 3
    y = [["A", "B"], ["B", "A"]] * 3
    buf = io.StringIO()
    fp = FitProgress(5, "training", file=buf, force=True)
    crf = FactorialCRF(max_iter=5, finetune_iter=0, callback=fp.callback).fit(X, y)
    fp.finish()
    assert fp.n_fits == 1
    assert f"{crf.n_iter_}/5" in buf.getvalue()


class _Recorder:
    def __init__(self):
        self.calls = []

    def decode(self, X):
        self.calls.append(len(X))
        return [("decoded", x) for x in X]


def test_decode_with_progress_batches_only_with_a_bar():
    X = list(range(100))
    rec = _Recorder()
    assert decode_with_progress(rec, X, quiet=True) == [("decoded", x) for x in X]
    assert rec.calls == [100]
    rec = _Recorder()
    buf = io.StringIO()
    out = decode_with_progress(rec, X, file=buf, force=True, n_updates=4)
    assert out == [("decoded", x) for x in X]
    assert rec.calls == [25, 25, 25, 25]
    assert "100/100" in buf.getvalue()


# --------------------------------------------------------------------------- commands
def _toy_file(path):
    sents = [[("the", "B-NP"), ("cat", "I-NP"), ("sat", "B-VP")],
             [("a", "B-NP"), ("dog", "I-NP"), ("ran", "B-VP"), (".", "O")]] * 10
    with open(path, "w", encoding="utf-8") as fh:
        for s in sents:
            fh.write("".join(f"{w} {t}\n" for w, t in s) + "\n")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _run_on_terminal(*args):
    """Run ``skfcrf`` with stderr on a pseudo-terminal (80 columns); return (status, stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "skfcrf", *map(str, args)], env=_env(),
                            stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A model trained with stderr on a pipe: progress messages, no bar."""
    d = tmp_path_factory.mktemp("progress")
    _toy_file(d / "train.txt")
    res = subprocess.run([sys.executable, "-m", "skfcrf", "train", str(d / "train.txt"),
                          "--model", str(d / "m.npz"), "--max-iter", "5"], env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "training (" in res.stderr and "training:" not in res.stderr and "\r" not in res.stderr
    return d, d / "m.npz"


def test_train_shows_a_bar_on_a_terminal_unless_quiet(toy):
    d, _ = toy
    args = ("train", d / "train.txt", "--model", d / "t.npz", "--max-iter", 5)
    status, err = _run_on_terminal(*args)
    assert status == 0, err
    assert "training:" in err and "iter" in err and "/15" in err, err  # 5 + 10 fine-tuning
    status, err = _run_on_terminal(*args, "--quiet")
    assert status == 0 and err == "", err


def test_evaluate_shows_a_decoding_bar_on_a_terminal_unless_quiet(toy):
    d, model = toy
    status, err = _run_on_terminal("evaluate", d / "train.txt", "--model", model)
    assert status == 0, err
    assert "decoding:" in err and "seq" in err, err
    status, err = _run_on_terminal("evaluate", d / "train.txt", "--model", model, "-q")
    assert status == 0 and err == "", err
