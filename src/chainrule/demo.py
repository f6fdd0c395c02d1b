"""The ``python -m chainrule demo`` walk-through.

Three steps, each printed as it runs:

1. train a 64-128-10 MLP (an ``nn.Module``: ``nn.Linear``, tanh, ``nn.Linear``) with
   ``nn.CrossEntropyLoss`` and ``optim.Adam`` on scikit-learn's digits data set, as a
   PyTorch user writes it (``zero_grad``, ``backward``, ``step``), and report the test
   accuracy;
2. ``gradcheck`` the trained model's loss against all four of its parameters on a small
   float64 batch;
3. run the bundled custom-``Function`` examples from the repository's ``examples/`` folder
   (skipped, with a note, when the package is installed without the repository).

:func:`run` returns the results as a dict, so tests can call it without the CLI.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import chainrule as cr
from chainrule import nn

#: Training epochs of the demo (about a second on 2 cores).
DEFAULT_EPOCHS = 30

#: Accuracy the demo must reach on the held-out 20 % of the digits.
ACCURACY_TARGET = 0.95

#: Bundled examples, in the order the demo runs them, with what each one is expected to do.
EXAMPLES = (
    ("custom_matvec.py", "pass"),
    ("custom_matmul_square.py", "pass"),
    ("wrong_backward.py", "fail"),
    ("implicit_matrix_equation.py", "pass"),
)

_SEED = 0


def examples_dir():
    """Return the repository's ``examples/`` folder, or None when it is not there.

    Returns
    -------
    pathlib.Path or None
        ``<repo>/examples`` (found relative to this file, ``<repo>/src/chainrule/demo.py``),
        or None when the package runs from an installation without the repository.
    """
    path = Path(__file__).resolve().parents[2] / "examples"
    return path if path.is_dir() else None


def load_digits_split(seed=_SEED, dtype=np.float32):
    """Load scikit-learn's digits, scale the pixels to [0, 1] and split them 80/20.

    Parameters
    ----------
    seed : int
        ``random_state`` of the (stratified) train/test split.
    dtype : numpy dtype
        Dtype of the feature arrays.

    Returns
    -------
    X_train, X_test : ndarray, shape (n, 64)
        Features, pixel intensities divided by 16.
    y_train, y_test : ndarray of int64, shape (n,)
        Class labels 0-9.

    Raises
    ------
    ImportError
        scikit-learn is not installed.
    """
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as err:
        raise ImportError("the demo needs scikit-learn for its digits data set: "
                          "pip install 'chainrule[demo]'") from err

    digits = load_digits()
    X = (digits.data / 16.0).astype(dtype)
    y = digits.target.astype(np.int64)
    return train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)


class MLP(nn.Module):
    """A two-layer perceptron ``Linear -> tanh -> Linear`` returning logits.

    Parameters
    ----------
    sizes : tuple of int
        ``(inputs, hidden units, classes)``.
    dtype : numpy dtype
        Dtype of the parameters.

    Attributes
    ----------
    hidden, output : chainrule.nn.Linear
        The layers, initialised as PyTorch's ``nn.Linear`` (from chainrule's generator, so
        ``chainrule.manual_seed`` fixes them). ``parameters()`` yields ``hidden.weight``
        (128, 64), ``hidden.bias``, ``output.weight`` (10, 128) and ``output.bias``.
    """

    def __init__(self, sizes=(64, 128, 10), dtype=np.float32):
        super().__init__()
        n_in, n_hidden, n_out = sizes
        self.hidden = nn.Linear(n_in, n_hidden, dtype=dtype)
        self.output = nn.Linear(n_hidden, n_out, dtype=dtype)

    def forward(self, x):
        """Logits (n, 10) of a batch ``x`` of shape (n, 64)."""
        return self.output(cr.tanh(self.hidden(x)))


def train(model, X, y, *, epochs=DEFAULT_EPOCHS, batch_size=32, lr=3e-3, seed=_SEED, quiet=False):
    """Train ``model`` with Adam on minibatches of softmax cross-entropy.

    Parameters
    ----------
    model : chainrule.nn.Module
        Maps a batch (n, 64) to logits (n, 10).
    X : ndarray, shape (n, 64)
    y : ndarray of int, shape (n,)
    epochs, batch_size : int
    lr : float
        Adam's learning rate.
    seed : int
        Seed of the per-epoch shuffles.
    quiet : bool
        Hide the tqdm progress bar.

    Returns
    -------
    list of float
        The mean training loss of each epoch.
    """
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    optimizer = cr.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    n = len(X)
    history = []
    bar = tqdm(range(epochs), desc="training", unit="epoch", disable=quiet, leave=True)
    for _ in bar:
        order = rng.permutation(n)
        total = 0.0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            inputs, targets = cr.from_numpy(X[idx]), cr.from_numpy(y[idx])
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(idx)
        history.append(total / n)
        bar.set_postfix(loss=f"{history[-1]:.4f}")
    bar.close()
    return history


def accuracy(model, X, y):
    """Fraction of rows of ``X`` whose arg-max logit is the label in ``y``."""
    model.eval()
    with cr.no_grad():
        pred = model(cr.from_numpy(X)).argmax(dim=1).numpy()
    return float(np.mean(pred == y))


def gradcheck_model(model, X, y, n=8):
    """Gradcheck the cross-entropy loss of ``model`` against all of its parameters.

    The check runs ``model`` through :func:`chainrule.func.functional_call` on float64
    copies of its parameters and of the first ``n`` samples (finite differences need
    float64), so it does not touch the model.

    Parameters
    ----------
    model : chainrule.nn.Module
    X : ndarray, shape (m, 64)
    y : ndarray of int, shape (m,)
    n : int
        Batch size of the check (the cost grows with the number of parameters, not with n).

    Returns
    -------
    ok : bool
        True when every analytic gradient matches central differences.
    message : str
        ``"ok"``, or the text of the :class:`chainrule.autograd.GradcheckError`.
    """
    xb = cr.tensor(X[:n], dtype=cr.float64)
    yb = cr.from_numpy(np.ascontiguousarray(y[:n]))
    names = [name for name, _ in model.named_parameters()]
    params = tuple(cr.tensor(p.detach(), dtype=cr.float64, requires_grad=True)
                   for _, p in model.named_parameters())

    def loss_fn(*flat):
        logits = cr.func.functional_call(model, dict(zip(names, flat)), (xb,))
        return nn.functional.cross_entropy(logits, yb)

    try:
        ok = cr.autograd.gradcheck(loss_fn, params, eps=1e-6, atol=1e-5, rtol=1e-3)
    except cr.autograd.GradcheckError as err:
        return False, str(err)
    return ok, "ok"


def _load_example(path):
    """Import an example script as a module (without running its ``__main__`` block)."""
    name = f"chainrule_example_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def run_examples(folder=None, quiet=False):
    """Run the ``main()`` of each bundled example and check what it reports.

    ``custom_matvec`` and ``custom_matmul_square`` must return True (their gradcheck
    passed); ``wrong_backward`` must return the ``GradcheckError`` it caught.

    Parameters
    ----------
    folder : pathlib.Path, optional
        The examples folder (default: :func:`examples_dir`).
    quiet : bool
        Swallow the examples' printed output.

    Returns
    -------
    dict or None
        ``{file name: bool}``, True when the example behaved as expected; None when there
        is no examples folder.
    """
    folder = examples_dir() if folder is None else Path(folder)
    if folder is None:
        return None
    results = {}
    for filename, expected in EXAMPLES:
        _say(quiet, f"\n--- examples/{filename} ---")
        sink = io.StringIO() if quiet else None
        with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
            try:
                result = _load_example(folder / filename).main()
            except Exception:  # report it and go on: the summary names the example
                traceback.print_exc(file=sys.stdout)
                result = None
        if expected == "pass":
            results[filename] = result is True
        else:
            results[filename] = isinstance(result, cr.autograd.GradcheckError)
    return results


def _say(quiet, *args):
    if not quiet:
        print(*args, flush=True)


def run(epochs=DEFAULT_EPOCHS, quiet=False, examples=True):
    """Run the whole demo: train, gradcheck the model, run the examples, summarise.

    Parameters
    ----------
    epochs : int
        Training epochs (30 reach about 0.97-0.98 test accuracy in about a second).
    quiet : bool
        Print nothing and hide the progress bar.
    examples : bool
        Run the bundled examples (step 3).

    Returns
    -------
    dict
        ``accuracy`` (float, test set), ``gradcheck`` (bool, step 2), ``gradcheck_message``
        (str), ``examples`` (``{file: behaved as expected}``, or None when skipped),
        ``losses`` (mean training loss per epoch), ``seconds`` (wall time) and ``ok``
        (accuracy >= :data:`ACCURACY_TARGET`, the model's gradcheck passed and every
        example behaved as expected).

    Raises
    ------
    ValueError
        ``epochs`` below 1.
    """
    if epochs < 1:
        raise ValueError(f"run: epochs must be at least 1, got {epochs}")
    t0 = time.perf_counter()
    cr.manual_seed(_SEED)

    _say(quiet, "== 1. Training a 64-128-10 MLP (tanh, softmax cross-entropy, Adam) on digits ==")
    X_train, X_test, y_train, y_test = load_digits_split()
    _say(quiet, f"{len(X_train)} training / {len(X_test)} test images of 8x8 pixels, "
                f"{epochs} epochs of minibatches of 32")
    model = MLP()
    losses = train(model, X_train, y_train, epochs=epochs, quiet=quiet)
    acc = accuracy(model, X_test, y_test)
    _say(quiet, f"final training loss {losses[-1]:.4f}; test accuracy {acc:.4f} "
                f"({round(acc * len(y_test))}/{len(y_test)})")

    _say(quiet, "\n== 2. gradcheck of the loss against W1, b1, W2, b2 (8 samples, float64) ==")
    t1 = time.perf_counter()
    grad_ok, message = gradcheck_model(model, X_test, y_test, n=8)
    n_params = sum(p.numel() for p in model.parameters())
    _say(quiet, f"gradcheck over {n_params} parameters: {'passed' if grad_ok else 'FAILED'} "
                f"({time.perf_counter() - t1:.1f} s)")
    if not grad_ok:
        _say(quiet, message)

    _say(quiet, "\n== 3. Custom autograd Functions (examples/) ==")
    ex = None
    if examples:
        ex = run_examples(quiet=quiet)
        if ex is None:
            _say(quiet, "examples/ folder not found (chainrule is installed without its "
                        "repository); skipping this step")
    else:
        _say(quiet, "skipped")

    seconds = time.perf_counter() - t0
    ok = acc >= ACCURACY_TARGET and grad_ok and (ex is None or all(ex.values()))
    _say(quiet, "\n== Summary ==")
    _say(quiet, f"test accuracy   {acc:.4f} (target >= {ACCURACY_TARGET})")
    _say(quiet, f"model gradcheck {'passed' if grad_ok else 'FAILED'}")
    if ex is None:
        _say(quiet, "examples        skipped")
    else:
        width = max(len(name) for name in ex) + 1
        for name, good in ex.items():
            _say(quiet, f"examples/{name:<{width}}{'as expected' if good else 'UNEXPECTED'}")
    _say(quiet, f"{'OK' if ok else 'FAILED'} in {seconds:.1f} s")
    return {"accuracy": acc, "gradcheck": grad_ok, "gradcheck_message": message,
            "examples": ex, "losses": losses, "seconds": seconds, "ok": ok}
