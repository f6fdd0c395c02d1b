"""nn cases: register(case, R, I) adds each module / functional call (see nn_diff.case);
R(*shape) draws float inputs, I(high, *shape) integer ones."""
import numpy as np

import chainrule as cr
from chainrule import nn
from chainrule.backend import numpy_dtype
from chainrule.nn import functional as F


def register(case, R, I):
    D = lambda m: (lambda: m().double())  # noqa: E731

    def M(ctor, *shape, train=True, name=None, **kw):
        case(name or f"mod:{ctor.__name__ if hasattr(ctor, '__name__') else ctor}",
             lambda m, x: m(x), [R(*shape)], module=D(ctor), train=train, **kw)

    # ---------- activations -------------------------------------------------------------
    acts = [nn.ReLU, nn.ReLU6, nn.ELU, nn.CELU, nn.SELU, nn.GELU, nn.SiLU, nn.Mish,
            nn.Sigmoid, nn.Tanh, nn.Softplus, nn.Softsign, nn.Softshrink, nn.Hardshrink,
            nn.Hardsigmoid, nn.Hardswish, nn.Hardtanh, nn.LeakyReLU, nn.LogSigmoid,
            nn.Tanhshrink, nn.PReLU, nn.Identity, nn.Flatten]
    for a in acts:
        M(a, 3, 4)
    M(lambda: nn.GELU(approximate="tanh"), 3, 4, name="mod:GELU-tanh")
    M(lambda: nn.Threshold(0.1, 20.0), 3, 4, name="mod:Threshold")
    M(lambda: nn.PReLU(3), 2, 3, 4, name="mod:PReLU3")
    M(lambda: nn.GLU(), 3, 4, name="mod:GLU")
    M(lambda: nn.Softmax(1), 3, 4, name="mod:Softmax")
    M(lambda: nn.Softmin(1), 3, 4, name="mod:Softmin")
    M(lambda: nn.LogSoftmax(1), 3, 4, name="mod:LogSoftmax")
    M(lambda: nn.Softmax2d(), 2, 3, 4, 4, name="mod:Softmax2d")
    M(lambda: nn.RReLU(), 3, 4, name="mod:RReLU-train")
    M(lambda: nn.RReLU(), 3, 4, train=False, name="mod:RReLU-eval")
    M(lambda: nn.Unflatten(1, (2, 2)), 3, 4, name="mod:Unflatten")
    M(lambda: nn.ChannelShuffle(2), 2, 4, 3, 3, name="mod:ChannelShuffle")
    # ---------- dropout -----------------------------------------------------------------
    for a in [nn.Dropout, nn.AlphaDropout, nn.FeatureAlphaDropout]:
        M(a, 4, 5, 3)
    M(nn.Dropout1d, 2, 4, 5)
    M(nn.Dropout2d, 2, 4, 3, 3)
    M(nn.Dropout3d, 2, 4, 3, 3, 2)
    M(nn.Dropout, 4, 5, train=False, name="mod:Dropout-eval")
    # ---------- linear & co -------------------------------------------------------------
    M(lambda: nn.Linear(4, 3), 5, 4, name="mod:Linear")
    M(lambda: nn.Linear(4, 3, bias=False), 5, 4, name="mod:Linear-nobias")
    case("mod:Bilinear", lambda m, a, b: m(a, b), [R(5, 3), R(5, 4)],
         module=D(lambda: nn.Bilinear(3, 4, 2)))
    case("mod:CosineSimilarity", lambda m, a, b: m(a, b), [R(5, 3), R(5, 3)],
         module=D(nn.CosineSimilarity))
    case("mod:PairwiseDistance", lambda m, a, b: m(a, b), [R(5, 3), R(5, 3)],
         module=D(nn.PairwiseDistance))
    # ---------- normalization -----------------------------------------------------------
    for tr in (True, False):
        s = "train" if tr else "eval"
        M(lambda: nn.BatchNorm1d(3), 5, 3, train=tr, name=f"mod:BatchNorm1d-{s}")
        M(lambda: nn.BatchNorm1d(3), 5, 3, 4, train=tr, name=f"mod:BatchNorm1d3d-{s}")
        M(lambda: nn.BatchNorm2d(3), 4, 3, 2, 2, train=tr, name=f"mod:BatchNorm2d-{s}")
        M(lambda: nn.BatchNorm2d(3, momentum=None), 4, 3, 2, 2, train=tr,
          name=f"mod:BatchNorm2d-cma-{s}")
        M(lambda: nn.BatchNorm2d(3, affine=False, track_running_stats=False), 4, 3, 2, 2,
          train=tr, name=f"mod:BatchNorm2d-nostats-{s}")
        M(lambda: nn.SyncBatchNorm(3), 4, 3, 2, 2, train=tr, name=f"mod:SyncBatchNorm-{s}")
        M(lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True), 2, 3, 5,
          train=tr, name=f"mod:InstanceNorm1d-stats-{s}")
        M(lambda: nn.InstanceNorm2d(3), 2, 3, 4, 4, train=tr, name=f"mod:InstanceNorm2d-{s}")
    M(lambda: nn.LayerNorm(4), 3, 4, name="mod:LayerNorm")
    M(lambda: nn.LayerNorm([3, 4], bias=False), 2, 3, 4, name="mod:LayerNorm2")
    M(lambda: nn.GroupNorm(2, 4), 3, 4, 5, name="mod:GroupNorm")
    M(lambda: nn.RMSNorm(4), 3, 4, name="mod:RMSNorm")
    M(lambda: nn.RMSNorm(4, eps=None), 3, 4, name="mod:RMSNorm-noeps")
    M(lambda: nn.LocalResponseNorm(2), 2, 4, 5, 5, name="mod:LocalResponseNorm")
    M(lambda: nn.LocalResponseNorm(2), 2, 4, 5, name="mod:LocalResponseNorm1d")
    # ---------- conv --------------------------------------------------------------------
    M(lambda: nn.Conv1d(2, 3, 3), 2, 2, 7, name="mod:Conv1d")
    M(lambda: nn.Conv1d(2, 4, 3, padding="same", dilation=2, groups=2), 2, 2, 7,
      name="mod:Conv1d-same")
    M(lambda: nn.Conv2d(2, 3, 3, stride=2, padding=1), 2, 2, 6, 6, name="mod:Conv2d")
    for pm in ("reflect", "replicate", "circular"):
        M(lambda pm=pm: nn.Conv2d(2, 3, 3, padding=1, padding_mode=pm), 2, 2, 5, 5,
          name=f"mod:Conv2d-{pm}")
    M(lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), 2, 2, 5, name="mod:ConvTranspose1d")
    M(lambda: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1), 2, 2, 4, 4,
      name="mod:ConvTranspose2d")
    M(lambda: nn.ConvTranspose2d(2, 4, 3, groups=2, dilation=2), 2, 2, 4, 4,
      name="mod:ConvTranspose2d-g")
    case("mod:ConvTranspose2d-outsize", lambda m, x: m(x, output_size=[9, 9]),
         [R(1, 2, 4, 4)], module=D(lambda: nn.ConvTranspose2d(2, 3, 3, stride=2)))
    for cls in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
                "ConvTranspose3d", "LazyLinear", "LazyConv2d"):
        if hasattr(nn, cls) and cls not in nn.__all__:
            pass
    # ---------- pooling -----------------------------------------------------------------
    M(lambda: nn.MaxPool1d(2), 2, 3, 8, name="mod:MaxPool1d")
    M(lambda: nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True), 2, 3, 7, 7,
      name="mod:MaxPool2d-ceil")
    M(lambda: nn.MaxPool2d(2, dilation=2), 2, 3, 7, 7, name="mod:MaxPool2d-dil")
    M(lambda: nn.AvgPool1d(3, stride=2, padding=1), 2, 3, 8, name="mod:AvgPool1d")
    M(lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
      2, 3, 7, 7, name="mod:AvgPool2d")
    M(lambda: nn.AvgPool2d(2, divisor_override=3), 2, 3, 6, 6, name="mod:AvgPool2d-div")
    M(lambda: nn.LPPool1d(2, 3), 2, 3, 8, name="mod:LPPool1d")
    M(lambda: nn.LPPool2d(2, 2), 2, 3, 6, 6, name="mod:LPPool2d")
    M(lambda: nn.AdaptiveAvgPool1d(3), 2, 3, 8, name="mod:AdaptiveAvgPool1d")
    M(lambda: nn.AdaptiveAvgPool2d((3, 2)), 2, 3, 7, 5, name="mod:AdaptiveAvgPool2d")
    M(lambda: nn.AdaptiveMaxPool1d(3), 2, 3, 8, name="mod:AdaptiveMaxPool1d")
    M(lambda: nn.AdaptiveMaxPool2d((3, 2)), 2, 3, 7, 5, name="mod:AdaptiveMaxPool2d")
    case("mod:AdaptiveMaxPool2d-idx", lambda m, x: m(x), [R(2, 3, 7, 5)],
         module=D(lambda: nn.AdaptiveMaxPool2d(3, return_indices=True)))
    case("mod:MaxUnpool1d", lambda m, x: m(*F.max_pool1d(x, 2, return_indices=True)),
         [R(2, 3, 8)], module=D(lambda: nn.MaxUnpool1d(2)))
    case("mod:MaxUnpool2d", lambda m, x: m(*F.max_pool2d(x, 2, return_indices=True)),
         [R(2, 3, 6, 6)], module=D(lambda: nn.MaxUnpool2d(2)))
    case("mod:MaxUnpool2d-size", lambda m, x: m(*F.max_pool2d(x, 2, return_indices=True),
                                                output_size=[7, 7]),
         [R(2, 3, 7, 7)], module=D(lambda: nn.MaxUnpool2d(2)))
    case("fn:max_pool2d_with_indices", lambda m, x: F.max_pool2d(x, 2, return_indices=True),
         [R(2, 3, 6, 6)])
    case("fn:max_pool1d_with_indices", lambda m, x: F.max_pool1d_with_indices(x, 3, 2),
         [R(2, 3, 9)])
    case("fn:adaptive_max_pool1d_with_indices",
         lambda m, x: F.adaptive_max_pool1d_with_indices(x, 4), [R(2, 3, 9)])
    # ---------- padding -----------------------------------------------------------------
    for cls, shp in [("ConstantPad1d", (2, 3, 5)), ("ConstantPad2d", (2, 3, 4, 4)),
                     ("ConstantPad3d", (1, 2, 3, 3, 3)), ("ZeroPad1d", (2, 3, 5)),
                     ("ZeroPad2d", (2, 3, 4, 4)), ("ZeroPad3d", (1, 2, 3, 3, 3)),
                     ("ReflectionPad1d", (2, 3, 5)), ("ReflectionPad2d", (2, 3, 4, 4)),
                     ("ReflectionPad3d", (1, 2, 3, 3, 3)), ("ReplicationPad1d", (2, 3, 5)),
                     ("ReplicationPad2d", (2, 3, 4, 4)), ("ReplicationPad3d", (1, 2, 3, 3, 3)),
                     ("CircularPad1d", (2, 3, 5)), ("CircularPad2d", (2, 3, 4, 4)),
                     ("CircularPad3d", (1, 2, 3, 3, 3))]:
        ctor = getattr(nn, cls)
        if cls.startswith("Constant"):
            M(lambda ctor=ctor: ctor(2, 1.5), *shp, name=f"mod:{cls}")
        else:
            M(lambda ctor=ctor: ctor(2), *shp, name=f"mod:{cls}")
    for mode in ("constant", "reflect", "replicate", "circular"):
        case(f"fn:pad-{mode}", lambda m, x, mode=mode: F.pad(x, (1, 2, 2, 1), mode=mode),
             [R(2, 3, 4, 4)])
    case("fn:pad-neg", lambda m, x: F.pad(x, (-1, 2)), [R(2, 3, 4)])
    # ---------- upsampling & shuffles ---------------------------------------------------
    for mode in ("nearest", "nearest-exact", "linear"):
        case(f"fn:interpolate1d-{mode}", lambda m, x, mode=mode: F.interpolate(
            x, scale_factor=2.5, mode=mode), [R(2, 3, 5)])
    for mode in ("nearest", "bilinear", "bicubic", "area", "nearest-exact"):
        case(f"fn:interpolate2d-{mode}", lambda m, x, mode=mode: F.interpolate(
            x, size=(7, 5), mode=mode), [R(2, 3, 4, 4)])
    case("fn:interpolate2d-bilinear-ac", lambda m, x: F.interpolate(
        x, scale_factor=(1.5, 2), mode="bilinear", align_corners=True), [R(2, 3, 4, 4)])
    case("fn:interpolate2d-bicubic-ac", lambda m, x: F.interpolate(
        x, scale_factor=2, mode="bicubic", align_corners=True), [R(1, 2, 4, 4)])
    case("fn:interpolate2d-antialias", lambda m, x: F.interpolate(
        x, size=(3, 3), mode="bilinear", antialias=True), [R(1, 2, 7, 7)])
    case("fn:interpolate3d-trilinear", lambda m, x: F.interpolate(
        x, scale_factor=2, mode="trilinear"), [R(1, 2, 3, 3, 3)])
    case("fn:interpolate-area-down", lambda m, x: F.interpolate(
        x, size=(3, 2), mode="area"), [R(1, 2, 7, 5)])
    M(lambda: nn.Upsample(scale_factor=2, mode="nearest"), 2, 3, 4, 4, name="mod:Upsample")
    M(lambda: nn.UpsamplingBilinear2d(scale_factor=2), 2, 3, 4, 4,
      name="mod:UpsamplingBilinear2d")
    M(lambda: nn.UpsamplingNearest2d(size=(5, 7)), 2, 3, 4, 4, name="mod:UpsamplingNearest2d")
    M(lambda: nn.PixelShuffle(2), 2, 8, 3, 3, name="mod:PixelShuffle")
    M(lambda: nn.PixelUnshuffle(2), 2, 2, 4, 4, name="mod:PixelUnshuffle")
    M(lambda: nn.Unfold(2, dilation=1, padding=1, stride=2), 2, 3, 5, 5, name="mod:Unfold")
    M(lambda: nn.Fold((4, 5), 2), 2, 12, 12, name="mod:Fold")
    M(lambda: nn.Fold((5, 5), 3, padding=1, stride=2, dilation=1), 1, 18, 9,
      name="mod:Fold-stride")
    case("fn:affine_grid", lambda m, t: F.affine_grid(t, [2, 3, 4, 5], align_corners=False),
         [R(2, 2, 3)])
    for mode in ("bilinear", "nearest", "bicubic"):
        for pm in ("zeros", "border", "reflection"):
            case(f"fn:grid_sample-{mode}-{pm}", lambda m, x, g, mode=mode, pm=pm:
                 F.grid_sample(x, g, mode=mode, padding_mode=pm, align_corners=False),
                 [R(2, 3, 4, 5), R(2, 3, 3, 2, scale=0.8)])
    # ---------- embedding ---------------------------------------------------------------
    case("mod:Embedding", lambda m, i: m(i), [I(10, 3, 4)],
         module=D(lambda: nn.Embedding(10, 4, padding_idx=1)))
    case("mod:Embedding-maxnorm", lambda m, i: m(i), [I(10, 3, 4)],
         module=D(lambda: nn.Embedding(10, 4, max_norm=1.0)))
    for mode in ("sum", "mean", "max"):
        case(f"mod:EmbeddingBag-{mode}", lambda m, i, o: m(i, o),
             [I(10, 7), np.array([0, 2, 2, 5])],
             module=D(lambda mode=mode: nn.EmbeddingBag(10, 3, mode=mode)))
        case(f"mod:EmbeddingBag2d-{mode}", lambda m, i: m(i), [I(10, 3, 4)],
             module=D(lambda mode=mode: nn.EmbeddingBag(10, 3, mode=mode)))
    case("mod:EmbeddingBag-psw", lambda m, i, o, w: m(i, o, per_sample_weights=w),
         [I(10, 7), np.array([0, 2, 2, 5]), R(7)],
         module=D(lambda: nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)))
    case("fn:one_hot", lambda m, i: F.one_hot(i, 5), [I(5, 3, 4)], grad=False)
    case("fn:one_hot-auto", lambda m, i: F.one_hot(i), [I(5, 3, 4)], grad=False)
    # ---------- losses ------------------------------------------------------------------
    for red in ("mean", "sum", "none"):
        case(f"fn:mse-{red}", lambda m, a, b, red=red: F.mse_loss(a, b, reduction=red),
             [R(3, 4), R(3, 4)])
        case(f"fn:l1-{red}", lambda m, a, b, red=red: F.l1_loss(a, b, reduction=red),
             [R(3, 4), R(3, 4)])
        case(f"fn:huber-{red}", lambda m, a, b, red=red: F.huber_loss(a, b, reduction=red,
                                                                     delta=0.5),
             [R(3, 4), R(3, 4)])
        case(f"fn:smoothl1-{red}", lambda m, a, b, red=red: F.smooth_l1_loss(
            a, b, reduction=red, beta=0.5), [R(3, 4), R(3, 4)])
        case(f"fn:ce-idx-{red}", lambda m, x, t, red=red: F.cross_entropy(x, t, reduction=red),
             [R(5, 4), I(4, 5)])
        case(f"fn:ce-idx-w-ign-ls-{red}", lambda m, x, t, w, red=red: F.cross_entropy(
            x, t, weight=w, ignore_index=1, label_smoothing=0.1, reduction=red),
             [R(5, 4), I(4, 5), R(4, pos=True)])
        case(f"fn:ce-prob-{red}", lambda m, x, t, red=red: F.cross_entropy(
            x, t.softmax(1), reduction=red, label_smoothing=0.2), [R(5, 4), R(5, 4)])
        case(f"fn:ce-prob-w-{red}", lambda m, x, t, w, red=red: F.cross_entropy(
            x, t.softmax(1), weight=w, reduction=red), [R(5, 4), R(5, 4), R(4, pos=True)])
        case(f"fn:ce-2d-{red}", lambda m, x, t, red=red: F.cross_entropy(
            x, t, reduction=red, ignore_index=0), [R(2, 4, 3, 3), I(4, 2, 3, 3)])
        case(f"fn:nll-{red}", lambda m, x, t, w, red=red: F.nll_loss(
            x.log_softmax(1), t, weight=w, reduction=red, ignore_index=2),
             [R(5, 4), I(4, 5), R(4, pos=True)])
        case(f"fn:bce-{red}", lambda m, x, t, w, red=red: F.binary_cross_entropy(
            x.sigmoid(), t.sigmoid(), weight=w, reduction=red), [R(3, 4), R(3, 4), R(3, 4)])
        case(f"fn:bcewl-{red}", lambda m, x, t, w, pw, red=red:
             F.binary_cross_entropy_with_logits(x, t.sigmoid(), weight=w, pos_weight=pw,
                                                reduction=red),
             [R(3, 4), R(3, 4), R(3, 4), R(4, pos=True)])
        case(f"fn:kl-{red}", lambda m, x, t, red=red: F.kl_div(
            x.log_softmax(1), t.softmax(1), reduction=red), [R(3, 4), R(3, 4)])
        case(f"fn:kl-logt-{red}", lambda m, x, t, red=red: F.kl_div(
            x.log_softmax(1), t.log_softmax(1), reduction=red, log_target=True),
             [R(3, 4), R(3, 4)])
        case(f"fn:poisson-{red}", lambda m, x, t, red=red: F.poisson_nll_loss(
            x, t.abs(), reduction=red, full=True, log_input=False), [R(3, 4, pos=True),
                                                                     R(3, 4)])
        case(f"fn:poisson-log-{red}", lambda m, x, t, red=red: F.poisson_nll_loss(
            x, t.abs(), reduction=red), [R(3, 4), R(3, 4)])
        case(f"fn:gaussnll-{red}", lambda m, x, t, v, red=red: F.gaussian_nll_loss(
            x, t, v, reduction=red, full=True), [R(3, 4), R(3, 4), R(3, 4, pos=True)])
        case(f"fn:gaussnll-float-{red}", lambda m, x, t, red=red: F.gaussian_nll_loss(
            x, t, 0.5, reduction=red), [R(3, 4), R(3, 4)])
        case(f"fn:gaussnll-bvar-{red}", lambda m, x, t, v, red=red: F.gaussian_nll_loss(
            x, t, v, reduction=red), [R(3, 4), R(3, 4), R(3, 1, pos=True)])
        case(f"fn:hinge-{red}", lambda m, x, y, red=red: F.hinge_embedding_loss(
            x, y * 2 - 1, reduction=red), [R(3, 4), ("ng", I(2, 3, 4).astype(float))])
        case(f"fn:softmargin-{red}", lambda m, x, y, red=red: F.soft_margin_loss(
            x, y * 2 - 1, reduction=red), [R(3, 4), ("ng", I(2, 3, 4).astype(float))])
        case(f"fn:mlsoftmargin-{red}", lambda m, x, y, w, red=red:
             F.multilabel_soft_margin_loss(x, y, weight=w, reduction=red),
             [R(3, 4), ("ng", I(2, 3, 4).astype(float)), R(4, pos=True)])
        case(f"fn:multimargin-{red}", lambda m, x, t, w, red=red: F.multi_margin_loss(
            x, t, p=2, margin=0.7, weight=w, reduction=red), [R(5, 4), I(4, 5), R(4, pos=True)])
        case(f"fn:multimargin-p1-{red}", lambda m, x, t, red=red: F.multi_margin_loss(
            x, t, reduction=red), [R(5, 4), I(4, 5)])
        case(f"fn:mlmargin-{red}", lambda m, x, t, red=red: F.multilabel_margin_loss(
            x, t, reduction=red), [R(3, 4), np.array([[3, 0, -1, 1], [0, 1, 2, 3],
                                                      [1, -1, 0, 0]])])
        case(f"fn:marginrank-{red}", lambda m, a, b, y, red=red: F.margin_ranking_loss(
            a, b, y * 2 - 1, margin=0.2, reduction=red),
             [R(5), R(5), ("ng", I(2, 5).astype(float))])
        case(f"fn:cosemb-{red}", lambda m, a, b, y, red=red: F.cosine_embedding_loss(
            a, b, y * 2 - 1, margin=0.1, reduction=red),
             [R(5, 3), R(5, 3), ("ng", I(2, 5).astype(float))])
        case(f"fn:triplet-{red}", lambda m, a, p, n, red=red: F.triplet_margin_loss(
            a, p, n, swap=True, reduction=red), [R(5, 3), R(5, 3), R(5, 3)])
        case(f"fn:tripletdist-{red}", lambda m, a, p, n, red=red:
             F.triplet_margin_with_distance_loss(a, p, n, reduction=red, swap=True),
             [R(5, 3), R(5, 3), R(5, 3)])
        case(f"fn:ctc-{red}", lambda m, lp, t, red=red: F.ctc_loss(
            lp.log_softmax(2), t, [6, 5], [3, 2], reduction=red),
             [R(6, 2, 4), np.array([[1, 2, 2], [3, 1, 0]])])
        case(f"fn:ctc-tens-{red}", lambda m, lp, t, il, tl, red=red: F.ctc_loss(
            lp.log_softmax(2), t, il, tl, reduction=red, zero_infinity=True),
             [R(6, 2, 4), np.array([1, 2, 2, 3, 1]), np.array([6, 5]), np.array([3, 2])])
    case("mod:CrossEntropyLoss-w", lambda m, x, t: m(x, t), [R(5, 4), I(4, 5)],
         module=D(lambda: nn.CrossEntropyLoss(weight=cr.tensor([1.0, 2.0, 0.5, 1.0]))))
    case("mod:NLLLoss-w", lambda m, x, t: m(x.log_softmax(1), t), [R(5, 4), I(4, 5)],
         module=D(lambda: nn.NLLLoss(weight=cr.tensor([1.0, 2.0, 0.5, 1.0]))))
    case("mod:BCELoss-w", lambda m, x, t: m(x.sigmoid(), t.sigmoid()), [R(5, 4), R(5, 4)],
         module=D(lambda: nn.BCELoss(weight=cr.tensor([1.0, 2.0, 0.5, 1.0]))))
    case("mod:BCEWithLogitsLoss-pw", lambda m, x, t: m(x, t.sigmoid()), [R(5, 4), R(5, 4)],
         module=D(lambda: nn.BCEWithLogitsLoss(pos_weight=cr.tensor([1.0, 2.0, 0.5, 1.0]))))
    case("mod:MultiMarginLoss-w", lambda m, x, t: m(x, t), [R(5, 4), I(4, 5)],
         module=D(lambda: nn.MultiMarginLoss(weight=cr.tensor([1.0, 2.0, 0.5, 1.0]))))
    case("mod:MultiLabelSoftMarginLoss-w", lambda m, x, t: m(x, t),
         [R(5, 4), ("ng", I(2, 5, 4).astype(float))],
         module=D(lambda: nn.MultiLabelSoftMarginLoss(weight=cr.tensor([1.0, 2.0, .5, 1.0]))))
    case("mod:CTCLoss", lambda m, lp, t: m(lp.log_softmax(2), t, (6, 5), (3, 2)),
         [R(6, 2, 4), np.array([[1, 2, 2], [3, 1, 0]])], module=D(lambda: nn.CTCLoss()))
    for cls in ["L1Loss", "MSELoss", "HuberLoss", "SmoothL1Loss", "SoftMarginLoss",
                "HingeEmbeddingLoss", "KLDivLoss", "PoissonNLLLoss"]:
        case(f"mod:{cls}", lambda m, x, t: m(x, t), [R(3, 4), R(3, 4)],
             module=D(getattr(nn, cls)))
    case("mod:GaussianNLLLoss", lambda m, x, t, v: m(x, t, v), [R(3, 4), R(3, 4),
                                                                 R(3, 4, pos=True)],
         module=D(nn.GaussianNLLLoss))
    case("mod:TripletMarginWithDistanceLoss-fn", lambda m, a, p, n: m(a, p, n),
         [R(5, 3), R(5, 3), R(5, 3)], module=D(lambda: nn.TripletMarginWithDistanceLoss(
             distance_function=lambda a, b: 1 - F.cosine_similarity(a, b))))
    # ---------- functional misc ---------------------------------------------------------
    case("fn:normalize", lambda m, x: F.normalize(x, p=3, dim=1), [R(3, 4)])
    case("fn:pdist", lambda m, x: F.pdist(x), [R(5, 3)])
    case("fn:pdist-p1", lambda m, x: F.pdist(x, p=1), [R(5, 3)])
    case("fn:cosine_similarity-bc", lambda m, a, b: F.cosine_similarity(a, b, dim=-1),
         [R(5, 1, 3), R(1, 4, 3)])
    case("fn:pairwise_distance", lambda m, a, b: F.pairwise_distance(a, b, p=1.5,
                                                                      keepdim=True),
         [R(5, 3), R(5, 3)])
    case("fn:gumbel_softmax", lambda m, x: F.gumbel_softmax(x, tau=0.5), [R(3, 4)])
    case("fn:gumbel_softmax-hard", lambda m, x: F.gumbel_softmax(x, hard=True), [R(3, 4)])
    case("fn:rrelu", lambda m, x: F.rrelu(x, training=True), [R(3, 4)])
    case("fn:threshold", lambda m, x: F.threshold(x, 0.2, -1.0), [R(3, 4)])
    case("fn:glu", lambda m, x: F.glu(x, 0), [R(4, 3)])
    case("fn:softplus-beta", lambda m, x: F.softplus(x, beta=2, threshold=1), [R(3, 4)])
    case("fn:elu-alpha", lambda m, x: F.elu(x, alpha=0.5), [R(3, 4)])
    case("fn:leaky_relu", lambda m, x: F.leaky_relu(x, 0.2), [R(3, 4)])
    case("fn:hardtanh", lambda m, x: F.hardtanh(x, -0.5, 0.5), [R(3, 4)])
    case("fn:prelu", lambda m, x, w: F.prelu(x, w), [R(2, 3, 4), R(3)])
    case("fn:linear", lambda m, x, w, b: F.linear(x, w, b), [R(2, 3, 4), R(5, 4), R(5)])
    case("fn:bilinear", lambda m, a, b, w, bias: F.bilinear(a, b, w, bias),
         [R(2, 3), R(2, 4), R(5, 3, 4), R(5)])
    case("fn:batch_norm-train", lambda m, x, rm, rv, w, b: F.batch_norm(
        x, rm.detach(), rv.detach().abs(), w, b, training=True), [R(4, 3), R(3), R(3), R(3),
                                                                  R(3)])
    case("fn:batch_norm-eval", lambda m, x, rm, rv, w, b: F.batch_norm(
        x, rm, rv.abs(), w, b, training=False), [R(4, 3), R(3), R(3), R(3), R(3)])
    case("fn:instance_norm", lambda m, x: F.instance_norm(x, use_input_stats=True),
         [R(2, 3, 5)])
    case("fn:layer_norm", lambda m, x, w, b: F.layer_norm(x, (4,), w, b), [R(3, 4), R(4),
                                                                          R(4)])
    case("fn:group_norm", lambda m, x, w, b: F.group_norm(x, 2, w, b), [R(3, 4, 5), R(4),
                                                                       R(4)])
    case("fn:rms_norm", lambda m, x, w: F.rms_norm(x, (4,), w), [R(3, 4), R(4)])
    case("fn:local_response_norm", lambda m, x: F.local_response_norm(x, 3), [R(2, 4, 5, 5)])
    case("fn:lp_pool1d-inf", lambda m, x: F.lp_pool1d(x, float("inf"), 2), [R(2, 3, 8)])
    case("fn:unfold", lambda m, x: F.unfold(x, (2, 3), stride=(1, 2)), [R(2, 3, 5, 6)])
    case("fn:fold", lambda m, x: F.fold(x, (4, 5), (2, 2)), [R(2, 12, 12)])
    case("fn:pixel_shuffle", lambda m, x: F.pixel_shuffle(x, 2), [R(2, 8, 3, 3)])
    case("fn:channel_shuffle", lambda m, x: F.channel_shuffle(x, 2), [R(2, 4, 3, 3)])
    case("fn:dropout-inplace", lambda m, x: F.dropout(x * 1, 0.3, inplace=True), [R(4, 5)])
    case("fn:dropout1d-unbatched", lambda m, x: F.dropout1d(x, 0.5), [R(4, 5)])
    case("fn:dropout2d-unbatched", lambda m, x: F.dropout2d(x, 0.5), [R(4, 5, 3)])
    case("fn:alpha_dropout", lambda m, x: F.alpha_dropout(x, 0.3, training=True), [R(4, 5)])
    case("fn:feature_alpha_dropout", lambda m, x: F.feature_alpha_dropout(
        x, 0.3, training=True), [R(4, 5, 3)])
    case("fn:upsample_bilinear", lambda m, x: F.upsample_bilinear(x, scale_factor=2),
         [R(1, 2, 3, 3)])
    case("fn:upsample_nearest", lambda m, x: F.upsample_nearest(x, scale_factor=2),
         [R(1, 2, 3, 3)])
    case("fn:upsample", lambda m, x: F.upsample(x, scale_factor=2, mode="bilinear"),
         [R(1, 2, 3, 3)])
    case("fn:conv2d", lambda m, x, w, b: F.conv2d(x, w, b, padding="same"),
         [R(2, 3, 5, 5), R(4, 3, 3, 3), R(4)])
    case("fn:conv1d-str", lambda m, x, w: F.conv1d(x, w, stride=2, padding=2, dilation=2),
         [R(2, 3, 9), R(4, 3, 3)])
    case("fn:conv_transpose1d", lambda m, x, w, b: F.conv_transpose1d(
        x, w, b, stride=2, padding=1, output_padding=1), [R(2, 3, 5), R(3, 4, 3), R(4)])
    case("fn:conv_transpose2d", lambda m, x, w: F.conv_transpose2d(x, w, stride=2),
         [R(2, 3, 3, 3), R(3, 2, 3, 3)])
    if hasattr(F, "conv3d"):
        case("fn:conv3d", lambda m, x, w: F.conv3d(x, w, padding=1),
             [R(1, 2, 3, 3, 3), R(3, 2, 2, 2, 2)])
    case("fn:embedding", lambda m, i, w: F.embedding(i, w, padding_idx=0), [I(6, 3, 2),
                                                                           R(6, 3)])
    case("fn:embedding_bag-maxnorm", lambda m, i, w: F.embedding_bag(
        i, w, cr.tensor([0, 3]).to(i.device), max_norm=0.5), [I(6, 5), R(6, 3)])
    case("fn:embedding_bag-last", lambda m, i, o, w: F.embedding_bag(
        i, w, o, mode="mean", include_last_offset=True), [I(6, 7), np.array([0, 2, 7]),
                                                          R(6, 3)])
    # ---------- attention ---------------------------------------------------------------
    case("fn:sdpa", lambda m, q, k, v: F.scaled_dot_product_attention(q, k, v),
         [R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)])
    case("fn:sdpa-causal", lambda m, q, k, v: F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.3), [R(2, 4, 4), R(2, 4, 4), R(2, 4, 4)])
    case("fn:sdpa-boolmask", lambda m, q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=cr.tensor(np.tri(3, 5, 1).astype(bool)).to(q.device)),
         [R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)])
    case("fn:sdpa-floatmask", lambda m, q, k, v, msk: F.scaled_dot_product_attention(
        q, k, v, attn_mask=msk), [R(2, 3, 4), R(2, 5, 4), R(2, 5, 4), R(3, 5)])
    case("fn:sdpa-dropout", lambda m, q, k, v: F.scaled_dot_product_attention(
        q, k, v, dropout_p=0.3), [R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)])
    case("fn:sdpa-gqa", lambda m, q, k, v: F.scaled_dot_product_attention(
        q, k, v, enable_gqa=True), [R(1, 4, 3, 2), R(1, 2, 5, 2), R(1, 2, 5, 2)])
    for kw in [{}, {"bias": False}, {"add_bias_kv": True, "add_zero_attn": True},
               {"kdim": 3, "vdim": 5}, {"batch_first": True}, {"dropout": 0.3}]:
        tag = ",".join(kw) or "plain"
        kdim, vdim = kw.get("kdim", 4), kw.get("vdim", 4)
        # queries of length 3, keys and values of length 5, a batch of 2 (first when
        # batch_first)
        qs, ks = ((2, 3), (2, 5)) if kw.get("batch_first") else ((3, 2), (5, 2))
        case(f"mod:MHA-{tag}", lambda m, q, k, v: m(q, k, v), [R(*qs, 4), R(*ks, kdim),
                                                               R(*ks, vdim)],
             module=D(lambda kw=kw: nn.MultiheadAttention(4, 2, **kw)))
    case("mod:MHA-masks", lambda m, q, k, v: m(
        q, k, v, key_padding_mask=cr.tensor(np.array([[0, 0, 0, 1, 1], [0, 0, 0, 0, 1]],
                                                     dtype=bool)).to(q.device),
        attn_mask=cr.tensor(np.tri(3, 5, 1) == 0).to(q.device), average_attn_weights=False),
         [R(3, 2, 4), R(5, 2, 4), R(5, 2, 4)], module=D(lambda: nn.MultiheadAttention(4, 2)))
    case("mod:MHA-floatmasks", lambda m, q, k, v, am, kpm: m(
        q, k, v, key_padding_mask=kpm, attn_mask=am), [R(3, 2, 4), R(5, 2, 4), R(5, 2, 4),
                                                       R(3, 5), R(2, 5)],
         module=D(lambda: nn.MultiheadAttention(4, 2)))
    case("mod:MHA-causal", lambda m, q: m(q, q, q, is_causal=True, attn_mask=nn.Transformer
                                          .generate_square_subsequent_mask(3).to(q.device),
                                          need_weights=False),
         [R(3, 2, 4)], module=D(lambda: nn.MultiheadAttention(4, 2)))
    case("mod:MHA-eval", lambda m, q: m(q, q, q), [R(3, 2, 4)], train=False,
         module=D(lambda: nn.MultiheadAttention(4, 2)))
    for bf in (False, True):
        for nf in (False, True):
            case(f"mod:TEL-bf{bf}-nf{nf}", lambda m, x: m(x), [R(3, 2, 4)],
                 module=D(lambda bf=bf, nf=nf: nn.TransformerEncoderLayer(
                     4, 2, 8, dropout=0.1, batch_first=bf, norm_first=nf)))
            case(f"mod:TDL-bf{bf}-nf{nf}", lambda m, x, mem: m(x, mem), [R(3, 2, 4), R(3, 2, 4)],
                 module=D(lambda bf=bf, nf=nf: nn.TransformerDecoderLayer(
                     4, 2, 8, dropout=0.1, batch_first=bf, norm_first=nf)))
    case("mod:TEL-gelu-eval", lambda m, x: m(x, src_key_padding_mask=cr.tensor(
        np.array([[0, 0, 1], [0, 0, 0]], dtype=bool)).to(x.device)), [R(2, 3, 4)],
        train=False, module=D(lambda: nn.TransformerEncoderLayer(
            4, 2, 8, activation="gelu", batch_first=True)))
    case("mod:TransformerEncoder", lambda m, x: m(x, mask=nn.Transformer
                                                  .generate_square_subsequent_mask(3).to(
                                                      x.device), is_causal=True),
         [R(3, 2, 4)], module=D(lambda: nn.TransformerEncoder(
             nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), 2, norm=nn.LayerNorm(4))))
    case("mod:TransformerEncoder-eval-kpm", lambda m, x: m(x, src_key_padding_mask=cr.tensor(
        np.array([[0, 0, 1], [0, 0, 0]], dtype=bool)).to(x.device)), [R(3, 2, 4)],
        train=False, module=D(lambda: nn.TransformerEncoder(
            nn.TransformerEncoderLayer(4, 2, 8), 2)))
    case("mod:TransformerDecoder", lambda m, x, mem: m(x, mem, tgt_is_causal=True, tgt_mask=
                                                       nn.Transformer
                                                       .generate_square_subsequent_mask(3).to(
                                                           x.device)),
         [R(3, 2, 4), R(4, 2, 4)], module=D(lambda: nn.TransformerDecoder(
             nn.TransformerDecoderLayer(4, 2, 8, dropout=0.0), 2)))
    case("mod:Transformer", lambda m, s, t: m(s, t, tgt_mask=nn.Transformer
                                               .generate_square_subsequent_mask(
                                                   3, device=s.device)),
         [R(4, 2, 4), R(3, 2, 4)], module=D(lambda: nn.Transformer(
             4, 2, 1, 1, 8, dropout=0.1)))
    case("mod:Transformer-kpm", lambda m, s, t: m(
        s, t, src_key_padding_mask=cr.tensor(np.array([[0, 0, 0, 1], [0, 0, 0, 0]],
                                                      dtype=bool)).to(s.device),
        memory_key_padding_mask=cr.tensor(np.array([[0, 0, 0, 1], [0, 0, 0, 0]],
                                                   dtype=bool)).to(s.device),
        tgt_key_padding_mask=cr.tensor(np.array([[0, 0, 1], [0, 0, 0]], dtype=bool)).to(
            s.device)), [R(2, 4, 4), R(2, 3, 4)],
        module=D(lambda: nn.Transformer(4, 2, 1, 1, 8, dropout=0.0, batch_first=True)))
    # ---------- recurrent ---------------------------------------------------------------
    for kind in ("RNN", "LSTM", "GRU"):
        ctor = getattr(nn, kind)
        for kw in [{}, {"num_layers": 2, "bidirectional": True},
                   {"batch_first": True, "bias": False}, {"num_layers": 2, "dropout": 0.3}]:
            tag = ",".join(kw) or "plain"
            shape = (2, 3, 3) if kw.get("batch_first") else (3, 2, 3)
            case(f"mod:{kind}-{tag}", lambda m, x: m(x), [R(*shape)],
                 module=D(lambda ctor=ctor, kw=kw: ctor(3, 4, **kw)))
        nd = 4
        if kind == "LSTM":
            case(f"mod:{kind}-h0", lambda m, x, h, c: m(x, (h, c)),
                 [R(3, 2, 3), R(nd, 2, 4), R(nd, 2, 4)],
                 module=D(lambda ctor=ctor: ctor(3, 4, num_layers=2, bidirectional=True)))
            case(f"mod:{kind}-proj", lambda m, x: m(x), [R(3, 2, 3)],
                 module=D(lambda ctor=ctor: ctor(3, 4, proj_size=2, num_layers=2)))
            case(f"mod:{kind}-unbatched-h0", lambda m, x, h, c: m(x, (h, c)),
                 [R(3, 3), R(1, 4), R(1, 4)], module=D(lambda ctor=ctor: ctor(3, 4)))
        else:
            case(f"mod:{kind}-h0", lambda m, x, h: m(x, h), [R(3, 2, 3), R(nd, 2, 4)],
                 module=D(lambda ctor=ctor: ctor(3, 4, num_layers=2, bidirectional=True)))
            case(f"mod:{kind}-unbatched", lambda m, x: m(x), [R(3, 3)],
                 module=D(lambda ctor=ctor: ctor(3, 4)))
        if kind == "RNN":
            case("mod:RNN-relu", lambda m, x: m(x), [R(3, 2, 3)],
                 module=D(lambda: nn.RNN(3, 4, nonlinearity="relu")))

        def packed_fn(m, x, kind=kind):
            from chainrule.nn.utils import rnn as ru
            p = ru.pack_padded_sequence(x, [3, 1, 2], enforce_sorted=False)
            out, h = m(p)
            o, lens = ru.pad_packed_sequence(out, total_length=4)
            return o, h, p.data
        case(f"mod:{kind}-packed", packed_fn, [R(3, 3, 3)],
             module=D(lambda ctor=ctor: ctor(3, 4, num_layers=2, bidirectional=True)))

        def packed_fn2(m, x, kind=kind):
            from chainrule.nn.utils import rnn as ru
            p = ru.pack_padded_sequence(x, cr.tensor([3, 2, 1]), batch_first=True)
            out, h = m(p)
            o, lens = ru.pad_packed_sequence(out, batch_first=True, padding_value=-1.0)
            return o, h
        case(f"mod:{kind}-packed-bf", packed_fn2, [R(3, 3, 3)],
             module=D(lambda ctor=ctor: ctor(3, 4, batch_first=True)))
        cell = getattr(nn, kind + "Cell")
        case(f"mod:{kind}Cell", lambda m, x: m(x), [R(2, 3)],
             module=D(lambda cell=cell: cell(3, 4)))
        case(f"mod:{kind}Cell-unb", lambda m, x: m(x), [R(3)],
             module=D(lambda cell=cell: cell(3, 4)))
        if kind == "LSTM":
            case(f"mod:{kind}Cell-h", lambda m, x, h, c: m(x, (h, c)), [R(2, 3), R(2, 4),
                                                                        R(2, 4)],
                 module=D(lambda cell=cell: cell(3, 4)))
        else:
            case(f"mod:{kind}Cell-h", lambda m, x, h: m(x, h), [R(2, 3), R(2, 4)],
                 module=D(lambda cell=cell: cell(3, 4)))

    def seqs(m, a, b, c):
        from chainrule.nn.utils import rnn as ru
        p = ru.pad_sequence([a, b, c], batch_first=True, padding_value=0.5)
        q = ru.pad_sequence([a, b, c], padding_side="left")
        pk = ru.pack_sequence([a, b, c], enforce_sorted=False)
        un = ru.unpack_sequence(pk)
        up = ru.unpad_sequence(p, cr.tensor([4, 2, 3]), batch_first=True)
        return p, q, pk.data, un, up
    case("utils:rnn-seqs", seqs, [R(4, 2), R(2, 2), R(3, 2)])
    # ---------- utils -------------------------------------------------------------------

    def clip(m, x):
        (m(x) ** 2).sum().backward()
        from chainrule.nn.utils import clip_grad_norm_, clip_grad_value_, get_total_norm
        n = clip_grad_norm_(m.parameters(), 0.1)
        n1 = get_total_norm([p.grad for p in m.parameters()], 1.0)
        ni = clip_grad_norm_(m.parameters(), 0.05, norm_type="inf")
        clip_grad_value_(m.parameters(), 0.01)
        return (n.detach(), n1.detach(), ni.detach()) + tuple(p.grad.detach() for p in
                                                               m.parameters())
    case("utils:clip", clip, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)), grad=False)

    def p2v(m, x):
        from chainrule.nn.utils import parameters_to_vector, vector_to_parameters
        v = parameters_to_vector(m.parameters())
        vector_to_parameters(v.detach() * 2, m.parameters())
        return v, m(x)
    case("utils:p2v", p2v, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)))

    def wn_old(m, x):
        from chainrule.nn.utils import weight_norm
        weight_norm(m)
        return m(x)
    case("utils:weight_norm-old", wn_old, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)))

    def wn_new(m, x):
        from chainrule.nn.utils import parametrizations as P
        P.weight_norm(m)
        return m(x)
    case("utils:weight_norm-param", wn_new, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)))

    def sn(m, x):
        from chainrule.nn.utils import parametrizations as P
        P.spectral_norm(m)
        return m(x)
    case("utils:spectral_norm-after-to", sn, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)))

    def sn_before():
        from chainrule.nn.utils import parametrizations as P
        return P.spectral_norm(nn.Linear(4, 3).double())
    case("utils:spectral_norm", lambda m, x: m(x), [R(3, 4)], module=sn_before)
    case("utils:spectral_norm-eval", lambda m, x: m(x), [R(3, 4)], module=sn_before,
         train=False)

    def wn_conv():
        from chainrule.nn.utils import parametrizations as P
        return P.spectral_norm(nn.ConvTranspose2d(2, 3, 3).double())
    case("utils:spectral_norm-convT", lambda m, x: m(x), [R(1, 2, 4, 4)], module=wn_conv)

    def orth():
        from chainrule.nn.utils import parametrizations as P
        if not hasattr(P, "orthogonal"):
            raise RuntimeError("no orthogonal")
        return P.orthogonal(nn.Linear(4, 4).double())
    case("utils:orthogonal", lambda m, x: m(x), [R(3, 4)], module=orth)

    def reg_param():
        from chainrule.nn.utils import parametrize

        class Sym(nn.Module):
            def forward(self, w):
                return w.triu() + w.triu(1).transpose(-1, -2)
        m = nn.Linear(4, 4).double()
        parametrize.register_parametrization(m, "weight", Sym())
        return m
    case("utils:register_parametrization", lambda m, x: m(x), [R(3, 4)], module=reg_param)

    def fcall(m, x):
        params = {k: v * 2 for k, v in m.named_parameters()}
        return nn.functional_call(m, params, (x,))
    case("utils:functional_call", fcall, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)))

    def state_dict_roundtrip(m, x):
        sd = m.state_dict()
        m2 = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).double()
        m2.load_state_dict({k: v for k, v in sd.items()})  # device values into a CPU model
        return m2.to(x.device)(x)
    case("utils:state_dict", state_dict_roundtrip, [R(5, 4)], module=D(
        lambda: nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))), grad=False)

    def load_into_dev(m, x):
        # a CPU state dict loaded into a module on x's device
        src = nn.Linear(4, 3).double()
        m.load_state_dict(src.state_dict())
        return m(x)
    case("utils:load_cpu_state_dict", load_into_dev, [R(5, 4)],
         module=D(lambda: nn.Linear(4, 3)))

    def init_fns(m, x):
        from chainrule.nn import init
        cr.manual_seed(3)
        init.xavier_uniform_(m.weight)
        init.kaiming_normal_(m.weight)
        init.orthogonal_(m.weight)
        init.trunc_normal_(m.bias)
        init.constant_(m.bias, 0.3)
        init.sparse_(m.weight, 0.5) if hasattr(init, "sparse_") else None
        init.eye_(m.weight) if False else None
        return m(x)
    case("utils:init", init_fns, [R(5, 4)], module=D(lambda: nn.Linear(4, 3)))

    def init_more(m, x):
        from chainrule.nn import init
        cr.manual_seed(3)
        for name in ("uniform_", "normal_", "xavier_normal_", "kaiming_uniform_", "ones_",
                     "zeros_", "eye_", "dirac_"):
            f = getattr(init, name, None)
            if f is None:
                continue
            try:
                f(m.weight)
            except ValueError:
                pass
        return m(x)
    case("utils:init-more", init_more, [R(5, 4)], module=D(lambda: nn.Linear(4, 3)))

    def dirac(m, x):
        from chainrule.nn import init
        init.dirac_(m.weight)
        return m(x)
    case("utils:init-dirac", dirac, [R(1, 2, 5, 5)], module=D(lambda: nn.Conv2d(2, 2, 3)))

    def zero_grad(m, x):
        (m(x) ** 2).sum().backward()
        m.zero_grad(set_to_none=False)
        return tuple(p.grad for p in m.parameters())
    case("utils:zero_grad", zero_grad, [R(5, 4)], module=D(lambda: nn.Linear(4, 3)),
         grad=False)

    def half_roundtrip(m, x):
        m.float()
        y = m(x.float())
        m.double()
        return y.double()
    case("utils:float-roundtrip", half_roundtrip, [R(5, 4)], module=D(lambda: nn.Linear(4, 3)),
         rtol=1e-5)

    def bn_reset(m, x):
        m(x)
        m.reset_running_stats()
        m(x)
        return m.running_mean * 1
    case("utils:bn-reset", bn_reset, [R(5, 3)], module=D(lambda: nn.BatchNorm1d(3)),
         grad=False)


def register_more(case, R, I):
    D = lambda m: (lambda: m().double())  # noqa: E731
    # all targets ignored: 'mean' is NaN with zero gradients (PyTorch's)
    case("fn:ce-all-ignored", lambda m, x, t: F.cross_entropy(x, t * 0 - 100),
         [R(3, 4), I(4, 3)])
    case("fn:nll-all-ignored", lambda m, x, t: F.nll_loss(x.log_softmax(1), t * 0 + 2,
                                                          ignore_index=2), [R(3, 4), I(4, 3)])
    # attention rows blocked entirely: zero weights (PyTorch's _safe_softmax), not NaN
    blocked = np.array([[True, True, False, False, True], [False] * 5, [False] * 5])
    case("fn:sdpa-deadrow-bool", lambda m, q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=cr.tensor(~blocked[[1, 0, 2]] & False).to(q.device)),
         [R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)])
    case("fn:sdpa-deadrow-float", lambda m, q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=cr.tensor(np.where(np.arange(3)[:, None] == 1, -np.inf,
                                              np.zeros((3, 5)))).to(q.device)),
         [R(2, 3, 4), R(2, 5, 4), R(2, 5, 4)])
    case("mod:MHA-deadrow-noweights", lambda m, q: m(
        q, q, q, need_weights=False, key_padding_mask=cr.tensor(np.array(
            [[True, True, True], [False, False, True]])).to(q.device)),
         [R(3, 2, 4)], module=D(lambda: nn.MultiheadAttention(4, 2)))
    case("mod:TEL-deadrow-eval", lambda m, x: m(x, src_key_padding_mask=cr.tensor(np.array(
        [[True, True, True], [False, False, True]])).to(x.device)), [R(2, 3, 4)], train=False,
         module=D(lambda: nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)))
    # masks made by the library on a device
    case("utils:square_subsequent_mask", lambda m, x: x + nn.Transformer
         .generate_square_subsequent_mask(3, device=x.device), [R(3, 3)])

    def packed_to(m, x):
        from chainrule.nn.utils import rnn as ru
        p = ru.pack_padded_sequence(x.cpu(), [3, 1, 2], enforce_sorted=False).to(x.device)
        assert p.sorted_indices.device == x.device, p.sorted_indices.device
        assert p.unsorted_indices.device == x.device
        return p.data, ru.invert_permutation(p.sorted_indices).float()
    case("utils:packed.to", packed_to, [R(3, 3, 2)])

    def deep(m, x):
        import copy
        m2 = copy.deepcopy(m)
        return m2(x) * 1
    case("utils:deepcopy-linear", deep, [R(3, 4)], module=D(lambda: nn.Linear(4, 3)))
    case("utils:deepcopy-bn", deep, [R(3, 4)], module=D(lambda: nn.BatchNorm1d(4)))

    def repr_plist(m, x):
        # the repr names the parameters' dtype: float64 (Double) or, made float32 by the
        # float32 run, float32 (Float)
        dtype = str(numpy_dtype(next(iter(m.parameters())).dtype))
        names = {"float64": ("Double", "float64"), "float32": ("Float", "float32")}[dtype]
        assert any(n in repr(m) for n in names), (dtype, repr(m))
        return x * 1
    case("utils:repr-ParameterList", repr_plist, [R(2)],
         module=lambda: nn.ParameterList([nn.Parameter(cr.tensor(np.ones(2)))]))
    case("utils:repr-ParameterDict", repr_plist, [R(2)],
         module=lambda: nn.ParameterDict({"a": nn.Parameter(cr.tensor(np.ones(2)))}))

    def sn_eval(m, x):
        from chainrule.nn.utils import parametrizations as P
        P.spectral_norm(m)
        m.eval()
        return m(x)
    case("utils:spectral_norm-after-to-eval", sn_eval, [R(3, 4)],
         module=D(lambda: nn.Linear(4, 3)))

    def init_each(name, *args, **kw):
        def f(m, x):
            from chainrule.nn import init
            cr.manual_seed(3)
            getattr(init, name)(m.weight, *args, **kw)
            return m(x)
        return f
    for name, args in [("uniform_", ()), ("normal_", ()), ("xavier_normal_", ()),
                       ("kaiming_uniform_", ()), ("ones_", ()), ("zeros_", ()),
                       ("eye_", ()), ("sparse_", (0.5,)), ("trunc_normal_", ()),
                       ("orthogonal_", ()), ("constant_", (0.3,))]:
        case(f"init:{name}", init_each(name, *args), [R(5, 4)],
             module=D(lambda: nn.Linear(4, 3)))
    case("init:dirac_", init_each("dirac_"), [R(1, 2, 5, 5)],
         module=D(lambda: nn.Conv2d(2, 2, 3)))

    def reset(m, x):
        cr.manual_seed(4)
        for mod in m.modules():
            if hasattr(mod, "reset_parameters") and mod is not m:
                mod.reset_parameters()
        return m(x)
    case("init:reset_parameters", reset, [R(2, 3, 4)], module=D(lambda: nn.Sequential(
        nn.Conv1d(3, 4, 2), nn.BatchNorm1d(4), nn.Flatten(), nn.Linear(12, 2))))
    case("init:reset-rnn", lambda m, x: (cr.manual_seed(4), m.reset_parameters(), m(x))[2],
         [R(3, 2, 3)], module=D(lambda: nn.GRU(3, 4)))
    case("init:reset-mha", lambda m, x: (cr.manual_seed(4), m._reset_parameters()
                                         if hasattr(m, "_reset_parameters") else None,
                                         m(x, x, x))[2],
         [R(3, 2, 4)], module=D(lambda: nn.MultiheadAttention(4, 2, add_bias_kv=True)))

    def emb_pad_reset(m, i):
        cr.manual_seed(4)
        m.reset_parameters()
        return m(i)
    case("init:embedding-reset", emb_pad_reset, [I(10, 3, 4)],
         module=D(lambda: nn.Embedding(10, 4, padding_idx=2)))
    case("mod:Embedding-freq", lambda m, i: m(i), [I(5, 3, 4)],
         module=D(lambda: nn.Embedding(5, 4, scale_grad_by_freq=True, padding_idx=0)))
    case("fn:gaussnll-negvar-check", lambda m, x, t, v: F.gaussian_nll_loss(x, t, v.abs()),
         [R(3, 4), R(3, 4), R(3, 4)])
    case("fn:get_total_norm-inf", lambda m, a, b: nn.utils.get_total_norm(
        [a.detach(), b.detach()], "inf"), [R(3), R(2, 2)], grad=False)

    def opt_step(m, x):
        opt = cr.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) if hasattr(cr, "optim") \
            else None
        for _ in range(2):
            opt.zero_grad()
            (m(x) ** 2).sum().backward()
            nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
        return m(x)
    case("utils:sgd-clip", opt_step, [R(4, 3)], module=D(lambda: nn.Sequential(
        nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 2))), grad=False)

    def buffers_after_eval(m, x):
        m.train()
        m(x)
        m(x * 2)
        m.eval()
        return m(x)
    for cls in ("BatchNorm1d", "InstanceNorm1d"):
        case(f"mod:{cls}-2steps", buffers_after_eval, [R(4, 3, 5)],
             module=D(lambda cls=cls: getattr(nn, cls)(3, momentum=None,
                                                      track_running_stats=True)))
