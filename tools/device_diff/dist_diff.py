"""The distributions part: each method of each distribution (mean, variance, log_prob, cdf,
sample, KL, ...) on the CPU and on the device; compares values, the gradients with respect
to the parameters, and where each lies. A method a distribution does not define (the CPU
raises) is not counted."""
import numpy as np
from harness import DEV, error_result, on_device

import chainrule as cr
import chainrule.distributions as D

rng = np.random.default_rng(1)


def P(*s):
    return np.abs(rng.standard_normal(s)) + 0.5


def Rn(*s):
    return rng.standard_normal(s)


def probs(*s):
    p = P(*s)
    return p / p.sum(-1, keepdims=True)


CASES = [
    ("Normal", lambda a, b: D.Normal(a, b), [Rn(3), P(3)], "real"),
    ("Normal-num", lambda a: D.Normal(a, 2.0), [Rn(3)], "real"),
    ("Normal-num-first", lambda b: D.Normal(0.5, b), [P(3)], "real"),
    ("Uniform", lambda a, b: D.Uniform(a, a + b), [Rn(3), P(3)], "unit"),
    ("Uniform-num", lambda a: D.Uniform(a, 5.0), [Rn(3)], "unit"),
    ("Bernoulli-p", lambda p: D.Bernoulli(probs=p[:, 0]), [probs(3, 2)], "bin"),
    ("Bernoulli-l", lambda lg: D.Bernoulli(logits=lg), [Rn(3)], "bin"),
    ("Categorical-p", lambda p: D.Categorical(probs=p), [probs(2, 4)], "cat4"),
    ("Categorical-l", lambda lg: D.Categorical(logits=lg), [Rn(2, 4)], "cat4"),
    ("OneHotCategorical", lambda p: D.OneHotCategorical(probs=p), [probs(2, 4)], "onehot4"),
    ("Beta", lambda a, b: D.Beta(a, b), [P(3), P(3)], "unit"),
    ("Gamma", lambda a, b: D.Gamma(a, b), [P(3), P(3)], "pos"),
    ("Gamma-num", lambda a: D.Gamma(a, 2.0), [P(3)], "pos"),
    ("Exponential", lambda r: D.Exponential(r), [P(3)], "pos"),
    ("Laplace", lambda a, b: D.Laplace(a, b), [Rn(3), P(3)], "real"),
    ("LogNormal", lambda a, b: D.LogNormal(a, b), [Rn(3), P(3)], "pos"),
    ("Poisson", lambda r: D.Poisson(r), [P(3)], "count"),
    ("Binomial", lambda p: D.Binomial(5, probs=p[:, 0]), [probs(3, 2)], "count5"),
    ("Binomial-l", lambda lg: D.Binomial(5, logits=lg), [Rn(3)], "count5"),
    ("MVN-cov", lambda m, a: D.MultivariateNormal(m, a @ a.mT + cr.eye(3, dtype=a.dtype,
                                                                       device=a.device)),
     [Rn(3), Rn(3, 3)], "vec3"),
    ("MVN-tril", lambda m, a: D.MultivariateNormal(m, scale_tril=a.tril(-1) + cr.diag(
        a.diagonal().abs() + 0.5)), [Rn(3), Rn(3, 3)], "vec3"),
    ("MVN-prec", lambda m, a: D.MultivariateNormal(m, precision_matrix=a @ a.mT + cr.eye(
        3, dtype=a.dtype, device=a.device)), [Rn(3), Rn(3, 3)], "vec3"),
    ("Independent", lambda a, b: D.Independent(D.Normal(a, b), 1), [Rn(2, 3), P(2, 3)],
     "real"),
    ("Dirichlet", lambda c: D.Dirichlet(c), [P(2, 3)], "simplex3"),
    ("StudentT", lambda df, a, b: D.StudentT(df + 2, a, b), [P(3), Rn(3), P(3)], "real"),
    ("Cauchy", lambda a, b: D.Cauchy(a, b), [Rn(3), P(3)], "real"),
    ("HalfNormal", lambda b: D.HalfNormal(b), [P(3)], "pos"),
    ("HalfCauchy", lambda b: D.HalfCauchy(b), [P(3)], "pos"),
    ("Gumbel", lambda a, b: D.Gumbel(a, b), [Rn(3), P(3)], "real"),
    ("Geometric", lambda p: D.Geometric(probs=p[:, 0]), [probs(3, 2)], "count"),
    ("Geometric-l", lambda lg: D.Geometric(logits=lg), [Rn(3)], "count"),
    ("Transformed-exp-affine", lambda a, b: D.TransformedDistribution(
        D.Normal(a, b), [D.AffineTransform(1.0, 2.0), D.ExpTransform()]), [Rn(3), P(3)], "pos"),
    ("Transformed-sigmoid", lambda a, b: D.TransformedDistribution(
        D.Normal(a, b), [D.SigmoidTransform()]), [Rn(3), P(3)], "unit"),
    ("Transformed-tanh", lambda a, b: D.TransformedDistribution(
        D.Normal(a, b), [D.TanhTransform()]), [Rn(3), P(3)], "sym"),
    ("Transformed-softplus-power", lambda a, b: D.TransformedDistribution(
        D.Normal(a, b), [D.SoftplusTransform(), D.PowerTransform(2.0)]), [Rn(3), P(3)], "pos"),
    ("Mixture", lambda p, a, b: D.MixtureSameFamily(D.Categorical(probs=p),
                                                    D.Normal(a, b)),
     [probs(2, 3), Rn(2, 3), P(2, 3)], "real1"),
]

VALUES = {
    "real": lambda s: Rn(*s), "unit": lambda s: rng.uniform(0.1, 0.9, s),
    "pos": lambda s: P(*s), "sym": lambda s: rng.uniform(-0.8, 0.8, s),
    "bin": lambda s: rng.integers(0, 2, s).astype(float),
    "count": lambda s: rng.integers(0, 4, s).astype(float),
    "count5": lambda s: rng.integers(0, 6, s).astype(float),
    "cat4": lambda s: rng.integers(0, 4, s[:-1]),
    "onehot4": lambda s: np.eye(4)[rng.integers(0, 4, s[:-1])],
    "vec3": lambda s: Rn(*s), "simplex3": lambda s: probs(*s), "real1": lambda s: Rn(*s),
}

METHODS = ["mean", "variance", "stddev", "mode", "entropy", "log_prob", "cdf", "icdf",
           "sample", "rsample", "sample_n", "enumerate_support", "perplexity", "kl_self"]


def run(name, make, arrays, kind, d, method):
    global rng
    rng = np.random.default_rng(99)  # the same values on both devices
    ts = [cr.tensor(a, device=d, requires_grad=True) for a in arrays]
    dist = make(*ts)
    cr.manual_seed(7)
    shape = tuple(dist.batch_shape) + tuple(dist.event_shape)
    if method in ("mean", "variance", "stddev", "mode", "perplexity"):
        out = getattr(dist, method)
        out = out() if callable(out) else out
    elif method == "entropy":
        out = dist.entropy()
    elif method in ("log_prob", "cdf", "icdf"):
        vs = shape if kind != "cat4" else tuple(dist.batch_shape) + (1,)
        v = VALUES[kind](vs)
        if method == "icdf":
            v = rng.uniform(0.1, 0.9, shape)
        out = getattr(dist, method)(cr.tensor(v, device=d))
    elif method == "sample":
        out = dist.sample((2,))
    elif method == "rsample":
        out = dist.rsample((2,))
    elif method == "sample_n":
        out = dist.sample()
    elif method == "enumerate_support":
        out = dist.enumerate_support()
    elif method == "kl_self":
        out = D.kl_divergence(dist, make(*[t.detach() * 1.1 if np.all(a > 0) else
                                           t.detach() + 0.1 for t, a in zip(ts, arrays)]))
    res = {"out": out.detach().cpu().numpy()}
    tensors = [("out", out)]
    if out.requires_grad and cr.is_floating_point(out):
        (out * 1.0).sum().backward()
        for i, t in enumerate(ts):
            res[f"g{i}"] = None if t.grad is None else t.grad.cpu().numpy()
            if t.grad is not None:
                tensors.append((f"g{i}", t.grad))
    return res, tensors


def run_case(name, make, arrays, kind, method):
    """(name.method, status, detail), or None when the CPU does not define the method."""
    label = f"{name}.{method}"
    try:
        ref, _ = run(name, make, arrays, kind, "cpu", method)
    except (NotImplementedError, AttributeError, ValueError, TypeError, RuntimeError):
        return None  # not defined for this distribution
    try:
        got, tensors = run(name, make, arrays, kind, DEV, method)
    except Exception as e:
        return error_result(label, e, device=True)
    bad = []
    for k, v in ref.items():
        g = got.get(k)
        if (v is None) != (g is None):
            bad.append(k)
        elif v is not None and (v.shape != g.shape or v.dtype != g.dtype or
                                not np.allclose(v, g, rtol=1e-8, atol=1e-10,
                                                equal_nan=True)):
            bad.append(k)
    wrong = [f"{k}:{t.device}" for k, t in tensors if not on_device(t)]
    if bad or wrong:
        return label, "fail", f"mismatch {bad} wrong device {wrong[:2]}"
    return label, "ok", ""


def run_all(only=None):
    """Every (distribution, method) the CPU defines: a list of (name, status, detail)."""
    results = []
    for name, make, arrays, kind in CASES:
        if only and not any(o in name for o in only):
            continue
        for method in METHODS:
            r = run_case(name, make, arrays, kind, method)
            if r is not None:
                results.append(r)
    return results
