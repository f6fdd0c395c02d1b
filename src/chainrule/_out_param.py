"""PyTorch's ``out=`` keyword on the top-level functions that have it in PyTorch.

``chainrule.add(a, b, out=c)`` computes ``add(a, b)`` and writes it into ``c`` (resized
first where its shape differs, cast to ``c``'s dtype where PyTorch's casting allows), then
returns ``c``; functions with several results take a tuple of tensors
(``std_mean(x, out=(s, m))``). As in PyTorch, ``out=`` functions do not differentiate:
RuntimeError when grad mode is on and the result or ``out`` requires grad, and the result's
dtype must cast to ``out``'s (RuntimeError otherwise); see
:func:`chainrule._inplace.write_out`.

The keyword is added by a wrapper around the top-level binding (``chainrule.sum``),
generated with the function's own parameters so that a call without ``out`` costs one
Python call more and no argument packing. The hot functions take ``out`` themselves and
are not wrapped: every unary op's call function (``exp``, ``tanh``: the dispatcher's),
``add``, ``sub``, ``mul``, ``div`` and ``matmul``, as do ``max``, ``min`` and
``tensordot``; the Tensor methods and the ops the library calls internally keep their
direct call, so no op gets slower.
"""

from __future__ import annotations

import functools
import inspect
import os

from . import _dispatch

# The top-level functions of PyTorch 2.13 whose documentation lists ``out (Tensor,
# optional)`` and that chainrule has (found by comparing torch's docstrings with chainrule's
# signatures).
NAMES = (
    "abs", "acos", "acosh", "add", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addr",
    "amax", "amin", "angle", "arange", "asin", "asinh", "atan", "atan2", "atanh", "baddbmm",
    "bernoulli", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "bmm", "bucketize", "cat", "ceil", "chain_matmul",
    "cholesky", "cholesky_inverse", "cholesky_solve", "clamp", "column_stack",
    "conj_physical", "copysign", "cos", "cosh", "cross", "cumprod", "cumsum", "deg2rad",
    "diag", "diff", "div", "dot", "dstack", "eq", "exp", "eye", "float_power", "floor",
    "floor_divide", "fmax", "fmin", "fmod", "full", "gather", "gcd", "ge", "gt", "heaviside",
    "histc", "histogram", "hstack", "hypot", "index_select", "inner", "isneginf", "isposinf",
    "kron", "lcm", "ldexp", "le", "lerp", "lgamma", "linspace", "log", "log10", "log1p",
    "log2", "logaddexp", "logaddexp2", "logcumsumexp", "logical_and", "logical_not",
    "logical_or", "logical_xor", "logspace", "logsumexp", "lt", "lu_solve", "masked_select",
    "matmul", "maximum", "mean", "minimum", "mm", "msort", "mul", "multinomial", "mv",
    "nan_to_num", "nanmean", "nanquantile", "ne", "neg", "nextafter", "norm", "ormqr",
    "outer", "pow", "quantile", "rad2deg", "randint", "randperm", "reciprocal", "remainder",
    "renorm", "round", "rsqrt", "searchsorted", "sgn", "sign", "signbit", "sin", "sinh",
    "sqrt", "square", "stack", "std", "std_mean", "sub", "take_along_dim", "tan", "tanh",
    "tril", "triu", "trunc", "var", "var_mean", "vdot", "vstack", "where",
    # their aliases, documented with out= too
    "absolute", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh",
    "clip", "divide", "multiply", "subtract", "negative", "fix", "greater", "greater_equal",
    "less", "less_equal", "not_equal", "true_divide", "sigmoid", "erf", "erfc", "erfinv",
    "exp2", "expm1", "frac", "i0", "digamma", "polygamma", "mvlgamma", "sinc", "xlogy",
    "logit", "sum", "prod", "nansum", "cummax", "cummin", "sort", "topk", "kthvalue", "median",
    "nanmedian", "mode", "argmax", "argmin", "all", "any", "ger",
    "matrix_power", "inverse",
    "zeros", "ones", "empty",
    "rand", "randn", "normal",
)

# constructors: with out= and no dtype=, the values are made in out's dtype
CREATION = frozenset(("arange", "eye", "full", "linspace", "logspace", "zeros", "ones",
                      "empty", "rand", "randn", "randint", "randperm"))


def with_out(fn, name):
    """``fn`` taking PyTorch's ``out=`` keyword (see the module's docstring); ``fn`` itself
    when its signature already has one (or has none Python can read). A constructor
    (:data:`CREATION`) given no dtype makes its values in ``out``'s dtype, as PyTorch's.

    The wrapper is generated with ``fn``'s own parameters (``def add(input, other, *,
    alpha=1, out=None)``) and passes them on by position, so a call without ``out`` costs
    one Python call more and no argument packing (a ``*args, **kwargs`` wrapper costs
    three times as much)."""
    try:
        shown = inspect.signature(fn)  # what help() shows (through functools.wraps)
        params = list(inspect.signature(fn, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return fn
    if any(p.name == "out" for p in params) or "out" in shown.parameters:
        return fn
    if name in CREATION:
        return _creation_with_out(fn, name)
    env = {"__fn": fn, "__done": _done, "__name": name}
    head, call, star = [], [], False
    for i, p in enumerate(params):
        default = ""
        if p.default is not p.empty:
            env[f"__d{i}"] = p.default
            default = f"=__d{i}"
        if p.kind is p.VAR_POSITIONAL:
            head.append(f"*{p.name}")
            call.append(f"*{p.name}")
            star = True
        elif p.kind is p.KEYWORD_ONLY:
            if not star:
                head.append("*")
                star = True
            head.append(p.name + default)
            call.append(f"{p.name}={p.name}")
        elif p.kind is p.VAR_KEYWORD:
            continue  # added after out
        else:
            head.append(p.name + default)
            call.append(p.name)
        if p.kind is p.POSITIONAL_ONLY and (i + 1 == len(params) or
                                            params[i + 1].kind is not p.POSITIONAL_ONLY):
            head.append("/")
    if not star:
        head.append("*")
    head.append("out=None")
    kwargs = next((p.name for p in params if p.kind is p.VAR_KEYWORD), None)
    if kwargs is not None:
        head.append(f"**{kwargs}")
        call.append(f"**{kwargs}")
    args = ", ".join(call)
    source = (f"def {name}({', '.join(head)}):\n"
              f"    if out is None:\n"
              f"        return __fn({args})\n"
              f"    return __done(out, __name, __fn({args}))\n")
    # a file name inside the package, so that the frame is the library's (call-site
    # diagnostics skip it and show the user's line) and a traceback names it as generated
    filename = os.path.join(os.path.dirname(__file__), f"<out= wrapper of {name}>")
    exec(compile(source, filename, "exec"), env)  # noqa: S102 - built from fn's own names
    wrapper = env[name]
    wrapper.__doc__, wrapper.__module__ = fn.__doc__, fn.__module__
    wrapper.__qualname__ = name  # a call with wrong arguments fails here: "add() takes ..."
    wrapper.__dict__.update((k, v) for k, v in getattr(fn, "__dict__", {}).items()
                            if k != "__wrapped__")  # .ops (the table entries it records)
    wrapper.__signature__ = _with_out_parameter(shown)  # help() shows this (with out)
    wrapper.__wrapped__ = getattr(fn, "__wrapped__", fn)  # the function underneath
    return wrapper


def _with_out_parameter(sig):
    params = list(sig.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    try:
        return sig.replace(parameters=params)
    except ValueError:  # a positional parameter with a default after *args cannot be shown
        return sig


def _done(out, name, result):
    return _dispatch.IN_PLACE.write_out(out, result, name)


def _creation_with_out(fn, name):
    """A constructor taking ``out=``: given no dtype, its values are made in ``out``'s dtype
    (PyTorch's)."""

    @functools.wraps(fn)
    def wrapper(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if kwargs.get("dtype") is None and hasattr(out, "dtype"):
            kwargs["dtype"] = out.dtype
        return _dispatch.IN_PLACE.write_out(out, fn(*args, **kwargs), name)

    wrapper.__signature__ = _with_out_parameter(inspect.signature(fn))
    return wrapper


def install(namespace, *modules):
    """Give the functions named in :data:`NAMES` found in ``namespace`` (a module's
    globals) the ``out=`` keyword. One function bound to several names (``arccos`` is
    ``acos``) gets one wrapper; the same function bound in ``modules``
    (``chainrule.special.erf`` is ``chainrule.erf``) is replaced by that wrapper too."""
    made = {}  # id of a function -> its wrapper
    for name in NAMES:
        fn = namespace.get(name)
        if fn is None or not callable(fn) or isinstance(fn, type):
            continue
        if id(fn) not in made:
            made[id(fn)] = (fn, with_out(fn, name))
        namespace[name] = made[id(fn)][1]
    for module in modules:
        for attr, value in list(vars(module).items()):
            if callable(value) and id(value) in made and made[id(value)][0] is value:
                setattr(module, attr, made[id(value)][1])
