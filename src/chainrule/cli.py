"""Command-line interface: ``python -m chainrule <command>`` (also the ``chainrule`` script).

Commands
--------
demo
    Train an MLP on scikit-learn's digits, gradcheck it and run the custom-Function
    examples (see :mod:`chainrule.demo`).

Each command is a ``_cmd_<name>(args) -> int`` function registered in :func:`build_parser`;
adding one (``check``, ``explain``) means adding a subparser and such a function.
"""

from __future__ import annotations

import argparse
import sys

from . import demo


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _cmd_demo(args):
    try:
        result = demo.run(epochs=args.epochs, quiet=args.quiet, examples=not args.no_examples)
    except ImportError as err:
        print(f"chainrule demo: {err}", file=sys.stderr)
        return 1
    if args.quiet:
        print(f"accuracy {result['accuracy']:.4f}, gradcheck "
              f"{'passed' if result['gradcheck'] else 'FAILED'}: "
              f"{'OK' if result['ok'] else 'FAILED'}")
    return 0 if result["ok"] else 1


def build_parser():
    """Build the argument parser with one subparser per command.

    Returns
    -------
    argparse.ArgumentParser
        Parsing sets ``args.func`` to the handler of the chosen command.
    """
    parser = argparse.ArgumentParser(
        prog="python -m chainrule",
        description="chainrule: tensor-level automatic differentiation on NumPy.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p_demo = sub.add_parser(
        "demo",
        help="train an MLP on the digits data set, gradcheck it, run the examples",
        description="Train a 64-128-10 MLP on scikit-learn's digits (needs scikit-learn: "
                    "pip install 'chainrule[demo]'), gradcheck its loss against its "
                    "parameters and run the custom autograd Function examples. Exits 1 "
                    "when the test accuracy is below 0.95 or a check fails.",
    )
    p_demo.add_argument("--epochs", type=_positive_int, default=demo.DEFAULT_EPOCHS,
                        help=f"training epochs (default: {demo.DEFAULT_EPOCHS})")
    p_demo.add_argument("--quiet", action="store_true",
                        help="print only a one-line result, no progress bar")
    p_demo.add_argument("--no-examples", action="store_true",
                        help="skip running the examples/ scripts")
    p_demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None):
    """Run the command line ``argv`` (default: ``sys.argv[1:]``).

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        The exit status: 0 on success.
    """
    args = build_parser().parse_args(argv)
    return args.func(args)
