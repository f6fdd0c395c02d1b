"""chainrule: tensor-level automatic differentiation on NumPy, with PyTorch's autograd API.

>>> import chainrule as cr
>>> X = cr.randn(3, 3, requires_grad=True)
>>> (X @ X).sum().backward()      # X.grad = G X^T + X^T G with G = ones
"""

import warnings as _warnings

import numpy as _np

from . import _out_param, ops
from ._compat import *  # noqa: F401,F403
from ._compat_names import *  # noqa: F401,F403
from ._creation import *  # noqa: F401,F403
from ._dispatch import name_errors as _name_errors
from ._methods import TOP_INPLACE as _TOP_INPLACE
from ._methods import install as _install
from ._methods import nonzero_static  # noqa: F401
from ._methods import top_level_inplace as _top_level_inplace
from ._state import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from ._table import TABLE
from ._tensor import Tensor
from .backend import BFLOAT16 as _BFLOAT16
from .backend import device  # noqa: F401
from .ops import *  # noqa: F401,F403
from .ops import index_put, take_along_dim  # noqa: F401
from .ops.indexing import getitem  # noqa: F401
from .ops.searching import reduce_all as all  # noqa: F401,A004  (torch.all)
from .ops.searching import reduce_any as any  # noqa: F401,A004  (torch.any)
from .ops.torch_names import range  # noqa: F401,A004  (torch.range, end inclusive)

# NumPy's floating-point warnings from the library's own kernels and rules (log(0), 0 / 0,
# overflow): the results are IEEE's (inf, nan), the same values PyTorch computes silently.
# Only warnings raised inside chainrule's modules; a user's own filter set after the import
# (warnings.simplefilter("error")) still comes first.
_warnings.filterwarnings(
    "ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered",
    category=RuntimeWarning, module=r"chainrule(\.|$)")

_install()
del nn  # noqa: F821,F405  (ops.nn, from the star import: chainrule.nn is the nn package)

from . import (  # noqa: E402
    _vmap_backend,  # noqa: E402,F401  (registers the backend of batched values)
    amp,
    autograd,
    distributions,
    func,
    linalg,
    masked,
    multiprocessing,
    nn,
    optim,
    profiler,
    special,
    testing,
    utils,
    viz,
)
from ._compat import inference_mode as _inference_mode  # noqa: E402
from ._compat import is_nonzero as _is_nonzero  # noqa: E402
from ._compat_names import REMOVED as _REMOVED  # noqa: E402
from ._methods import install_more as _install_more  # noqa: E402
from ._top_nn import *  # noqa: E402,F401,F403

# tensors of nn's classes travel between processes through shared memory too
for _cls in (nn.Parameter, nn.Buffer):
    multiprocessing.register(_cls)
del _cls

# wiring across layers, done here at the top: Tensor methods that need the layers above
# chainrule._methods, and autograd's spellings of chainrule._compat's names
_install_more(Tensor, _is_nonzero, _REMOVED, strided, nn.functional)  # noqa: F405
autograd.inference_mode = autograd.grad_mode.inference_mode = _inference_mode
from ._compile import compile  # noqa: E402,F401,A004  (torch.compile)
from .autograd import functional as _functional  # noqa: E402,F401
from .autograd.anomaly import (  # noqa: E402,F401  (torch's top-level names)
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_anomaly_enabled,
)
from .func import vmap  # noqa: E402,F401  (torch.vmap)
from .linalg.torch_functions import *  # noqa: E402,F401,F403
from .nn.conv import _top_adaptive_max_pool1d as adaptive_max_pool1d  # noqa: E402,F401
from .nn.functional import _top_alpha_dropout as alpha_dropout_  # noqa: E402,F401
from .nn.functional import _top_dropout as dropout_  # noqa: E402,F401
from .nn.functional import _top_feature_alpha_dropout as feature_alpha_dropout_  # noqa: E402,F401
from .nn.functional import _top_group_norm as group_norm  # noqa: E402,F401
from .nn.functional import _top_layer_norm as layer_norm  # noqa: E402,F401
from .nn.functional import (  # noqa: E402,F401  (PyTorch's top-level spellings)
    adaptive_avg_pool1d,
    avg_pool1d,
    bilinear,
    celu_,  # noqa: E402,F401
    channel_shuffle,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    cosine_similarity,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    pairwise_distance,
    pdist,
    prelu,
    relu_,
    rms_norm,
    rrelu_,
    selu_,
    threshold_,
)

# more of PyTorch's top-level spellings of nn.functional, whose errors name them
for _name in ("alpha_dropout", "celu", "dropout", "feature_alpha_dropout", "hardshrink",
              "pixel_shuffle", "pixel_unshuffle", "rrelu", "selu", "threshold"):
    globals()[_name] = _name_errors(getattr(nn.functional, _name), _name)
del _name

# PyTorch's top-level in-place functions, from the Tensor methods (torch.exp_(x) is x.exp_())
for _name in _TOP_INPLACE:
    if _name not in globals() and _top_level_inplace(_name) is not None:
        globals()[_name] = _top_level_inplace(_name)
del _name

# PyTorch's out= keyword on the top-level functions that have it (wrappers of the
# top-level bindings only: methods and internal calls keep their direct call)
_out_param.install(globals(), special)

# Dtypes are NumPy's dtype objects (one per type), so ``x.dtype is chainrule.float32``,
# ``x.dtype == chainrule.float32`` and dicts keyed by dtype behave as PyTorch's
float32 = _np.dtype("float32")
float64 = _np.dtype("float64")
float16 = _np.dtype("float16")
int32 = _np.dtype("int32")
int64 = _np.dtype("int64")
int16 = _np.dtype("int16")
int8 = _np.dtype("int8")
uint8 = _np.dtype("uint8")
uint16 = _np.dtype("uint16")
uint32 = _np.dtype("uint32")
uint64 = _np.dtype("uint64")
complex64 = _np.dtype("complex64")
complex128 = _np.dtype("complex128")
bool_ = _np.dtype("bool")
# a name for code that lists it (nanoGPT's dtype table); tensors of it raise TypeError
bfloat16 = _BFLOAT16
# PyTorch's spellings of the same dtypes (they shadow builtins only inside this module)
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128
bool = bool_  # noqa: A001

__version__ = "0.1.0"
version.__version__ = __version__  # noqa: F405  (chainrule.version, torch.version's)

__all__ = [
    "Tensor", "TABLE", "amp", "autograd", "distributions", "func", "linalg", "masked", "nn",
    "optim", "ops", "profiler", "special", "testing", "utils", "viz",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "float32", "float64", "device",
]
