"""Lowering of the neural-network ops beyond pointwise and plain reductions:
convolutions, pooling, batch/instance/group norm, scans, argmax, losses,
einsum, triangular masks, attention, factories and concatenation.

Everything becomes the primitives of _ir: anchors (conv, pool, scan) the
scheduler gives their own kernel, reductions, pointwise ops, and views of
inputs or of computed values.
"""

from __future__ import annotations

import math

import torch.nn as nn

from ._build import Flipped, Reject, py_source
from ._canon_einsum import einsum
from ._canon_util import RSIZE, Diag, _bind, _dims, _norm_of, _static, any_leaf, materialized, unsqueezed
from ._ir import Ref, TensorSpec

__all__ = ["NN_HANDLERS", "call_nn_module", "Diag"]


def _tuple(value, n: int, what: str) -> tuple:
    value = _static(value, what)
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return tuple(value) * n
        if len(value) != n:
            raise Reject(f"{what} {value!r} does not have {n} entries")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _const(value: float) -> Ref:
    return Ref("const", float(value))


def _channel_view(ctx, param, rank: int) -> Ref:
    """A per-channel vector (C,) viewed to broadcast along dim 1 of a rank-``rank`` tensor."""
    ref = ctx.ref(param)
    trailing = rank - 2
    if trailing <= 0:
        return ref
    shape = tuple(ctx.b.shape(ref)) + (1,) * trailing
    suffix = ".view(-1" + ", 1" * trailing + ")"
    if ref.kind == "leaf":
        leaf = ctx.b.leaf_by_name(ref.value)
        return ctx.b.leaf(leaf.source + suffix, TensorSpec(shape, leaf.spec.dtype), leaf.name + "_c")
    return ctx.b.view(ref, (suffix,), shape)


def _leaf_view(ctx, ref: Ref, suffix: str, shape: tuple[int, ...], extra: tuple[Ref, ...] = ()) -> Ref:
    """``ref`` + suffix: a view of an input, or of a computed value's buffer. ``@1``... in the
    suffix stand for the sources of ``extra`` (inputs or computed values)."""
    if ref.kind == "leaf" and all(e.kind == "leaf" for e in extra):
        leaf = ctx.b.leaf_by_name(ref.value)
        for k, e in enumerate(extra, 1):
            suffix = suffix.replace(f"@{k}", ctx.b.leaf_by_name(e.value).source)
        return ctx.b.leaf(leaf.source + suffix, TensorSpec(tuple(shape), leaf.spec.dtype), leaf.name + "_v")
    if ref.kind == "leaf":  # a computed value referenced by the suffix: view a copy-free identity
        ref = ctx.b.pw("identity", ref)
    return ctx.b.view(ref, (suffix,), tuple(shape), extra)


# ---------------------------------------------------------------- convolution
def conv_impl(ctx, x, weight, bias, nd: int, stride, padding, dilation, groups, transposed_: bool,
              output_padding=0):
    if ctx.spec is None:
        raise Reject("convolution without a traced output shape")
    x, w = ctx.ref(x), ctx.ref(weight)
    if len(ctx.b.shape(x)) != nd + 2:
        raise Reject(f"conv{nd}d on an input of rank {len(ctx.b.shape(x))} (unbatched inputs are not supported)")
    kernel = tuple(ctx.b.shape(w)[2:])
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    padding = _static(padding, "padding")
    if padding == "valid":
        padding = (0,) * nd
    elif padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        if any(t % 2 for t in totals):
            raise Reject("padding='same' with an even effective kernel pads asymmetrically")
        padding = tuple(t // 2 for t in totals)
    else:
        padding = _tuple(padding, nd, "padding")
    attrs = {"nd": nd, "stride": stride, "padding": padding, "dilation": dilation,
             "groups": int(_static(groups, "groups")), "transposed": bool(transposed_),
             "output_padding": _tuple(output_padding, nd, "output_padding")}
    if (not transposed_ and attrs["groups"] > 1 and ctx.b.shape(w)[1] > 1 and set(kernel) == {1}
            and set(stride) == {1} and not any(padding)):
        out = _grouped_pointwise_conv(ctx, x, w, attrs["groups"], tuple(ctx.spec.shape))
    else:
        out = ctx.b.anchor("conv", (x, w), attrs, ctx.spec.shape)
    if bias is not None:
        out = ctx.b.pw("add", out, _channel_view(ctx, bias, nd + 2))
    return out


def _grouped_pointwise_conv(ctx, x: Ref, w: Ref, groups: int, out_shape: tuple[int, ...]) -> Ref:
    """A grouped 1x1 convolution (stride 1, no padding: ShuffleNet's) as the batched matmul it is:
    per image and group, the (Cout/g, Cin/g) weights times the (Cin/g, pixels) input. A matmul reads
    the pixels as rows it walks contiguously, where the convolution's implicit GEMM gathers them (on
    the H200 ShuffleNet's two grouped 1x1 convolutions ran at 0.28 TB/s that way); under the
    kernelbench rules it is cuBLAS's batched GEMM, one call on the current stream (cuDNN runs such
    a convolution's groups on streams of its own, which the rules reject)."""
    n, cin = ctx.b.shape(x)[:2]
    pixels = math.prod(ctx.b.shape(x)[2:])
    cout = ctx.b.shape(w)[0]
    cin_g, cout_g = cin // groups, cout // groups
    rows = _leaf_view(ctx, x, f".reshape({n}, {groups}, {cin_g}, {pixels})", (n, groups, cin_g, pixels))
    weights = _leaf_view(ctx, w, f".reshape({groups}, {cout_g}, {cin_g})", (groups, cout_g, cin_g))
    product = ctx.b.matmul(weights, rows)  # (n, groups, cout_g, pixels)
    return ctx.b.view(product, (f".view{out_shape}",), out_shape)


def _conv(nd: int, transposed_: bool):
    def handler(ctx, args, kwargs):
        if transposed_:
            a = _bind(args, kwargs, ["input", "weight", "bias", "stride", "padding", "output_padding", "groups",
                                     "dilation"],
                      {"bias": None, "stride": 1, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 1})
            return conv_impl(ctx, a["input"], a["weight"], a["bias"], nd, a["stride"], a["padding"], a["dilation"],
                             a["groups"], True, a["output_padding"])
        a = _bind(args, kwargs, ["input", "weight", "bias", "stride", "padding", "dilation", "groups"],
                  {"bias": None, "stride": 1, "padding": 0, "dilation": 1, "groups": 1})
        return conv_impl(ctx, a["input"], a["weight"], a["bias"], nd, a["stride"], a["padding"], a["dilation"],
                         a["groups"], False)
    return handler


# ---------------------------------------------------------------- pooling
def pool_impl(ctx, x, kind: str, nd: int, kernel, stride, padding, dilation=1, ceil_mode=False,
              count_include_pad=True, divisor_override=None):
    if ctx.spec is None:
        raise Reject("pooling without a traced output shape")
    x = ctx.ref(x)
    kernel = _tuple(kernel, nd, "kernel_size")
    stride = kernel if _static(stride, "stride") in (None, [], ()) else _tuple(stride, nd, "stride")
    attrs = {"kind": kind, "nd": nd, "kernel": kernel, "stride": stride, "padding": _tuple(padding, nd, "padding"),
             "dilation": _tuple(dilation, nd, "dilation"), "ceil_mode": bool(_static(ceil_mode, "ceil_mode")),
             "count_include_pad": bool(_static(count_include_pad, "count_include_pad")),
             "divisor": _static(divisor_override, "divisor_override"), "adaptive": False}
    if attrs["divisor"] is not None:
        attrs["divisor"] = int(attrs["divisor"])
    return ctx.b.anchor("pool", (x,), attrs, ctx.spec.shape)


def adaptive_pool_impl(ctx, x, kind: str, nd: int, output_size):
    if ctx.spec is None:
        raise Reject("pooling without a traced output shape")
    x = ctx.ref(x)
    shape = ctx.b.shape(x)
    out = tuple(ctx.spec.shape[-nd:])
    if all(o == 1 for o in out):
        # a global pool is a reduction over the spatial dims
        dims = tuple(range(len(shape) - nd, len(shape)))
        if kind == "avg":
            return ctx.b.pw("div", ctx.b.reduce("sum", x, dims, True), RSIZE)
        return ctx.b.reduce("max", x, dims, True)
    attrs = {"kind": kind, "nd": nd, "adaptive": True, "out": out}
    return ctx.b.anchor("pool", (x,), attrs, ctx.spec.shape)


def _max_pool(nd):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                                 "return_indices"],
                  {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False, "return_indices": False})
        if _static(a["return_indices"], "return_indices"):
            raise Reject("max pooling with return_indices is not supported")
        return pool_impl(ctx, a["input"], "max", nd, a["kernel_size"], a["stride"], a["padding"], a["dilation"],
                         a["ceil_mode"])
    return handler


def _avg_pool(nd):
    def handler(ctx, args, kwargs):
        names = ["input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]
        a = _bind(args, kwargs, names, {"stride": None, "padding": 0, "ceil_mode": False, "count_include_pad": True,
                                        "divisor_override": None})
        return pool_impl(ctx, a["input"], "avg", nd, a["kernel_size"], a["stride"], a["padding"], 1, a["ceil_mode"],
                         a["count_include_pad"], a["divisor_override"])
    return handler


def _adaptive(kind, nd):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "output_size", "return_indices"], {"return_indices": False})
        if _static(a["return_indices"], "return_indices"):
            raise Reject("adaptive max pooling with return_indices is not supported")
        return adaptive_pool_impl(ctx, a["input"], kind, nd, a["output_size"])
    return handler


# ---------------------------------------------------------------- normalisation
def batch_norm_eval(ctx, x, mean, var, weight, bias, eps):
    """Inference batch norm: running statistics, a per-channel affine map."""
    x = ctx.ref(x)
    rank = len(ctx.b.shape(x))
    if mean is None or var is None:
        raise Reject("batch norm without running statistics normalises with batch statistics (training mode)")
    inv = ctx.b.pw("rsqrt", ctx.b.pw("add", _channel_view(ctx, var, rank), _const(eps)))
    y = ctx.b.pw("mul", ctx.b.pw("sub", x, _channel_view(ctx, mean, rank)), inv)
    if weight is not None:
        y = ctx.b.pw("mul", y, _channel_view(ctx, weight, rank))
    if bias is not None:
        y = ctx.b.pw("add", y, _channel_view(ctx, bias, rank))
    return y


def _batch_norm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"],
              {"weight": None, "bias": None, "training": False, "momentum": 0.1, "eps": 1e-5})
    if _static(a["training"], "training"):
        raise Reject("batch norm in training mode (batch statistics) is not supported; the executor runs eval()")
    return batch_norm_eval(ctx, a["input"], a["running_mean"], a["running_var"], a["weight"], a["bias"],
                           float(_static(a["eps"], "eps")))


def _moments(ctx, x, dims):
    """(x - mean, 1/sqrt(var + eps) without eps yet): biased variance over ``dims``."""
    mean = ctx.b.pw("div", ctx.b.reduce("sum", x, dims, True), RSIZE)
    centred = ctx.b.pw("sub", x, mean)
    var = ctx.b.pw("div", ctx.b.reduce("sum", ctx.b.pw("square", centred), dims, True), RSIZE)
    return centred, var


def instance_norm_impl(ctx, x, weight, bias, eps):
    x = ctx.ref(x)
    rank = len(ctx.b.shape(x))
    if rank < 3:
        raise Reject("instance norm needs (N, C, spatial...) inputs")
    centred, var = _moments(ctx, x, tuple(range(2, rank)))
    y = ctx.b.pw("mul", centred, ctx.b.pw("rsqrt", ctx.b.pw("add", var, _const(eps))))
    if weight is not None:
        y = ctx.b.pw("mul", y, _channel_view(ctx, weight, rank))
    if bias is not None:
        y = ctx.b.pw("add", y, _channel_view(ctx, bias, rank))
    return y


def _instance_norm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum",
                             "eps"],
              {"running_mean": None, "running_var": None, "weight": None, "bias": None, "use_input_stats": True,
               "momentum": 0.1, "eps": 1e-5})
    if not _static(a["use_input_stats"], "use_input_stats"):
        return batch_norm_eval(ctx, a["input"], a["running_mean"], a["running_var"], a["weight"], a["bias"],
                               float(_static(a["eps"], "eps")))
    return instance_norm_impl(ctx, a["input"], a["weight"], a["bias"], float(_static(a["eps"], "eps")))


def group_norm_impl(ctx, x, groups: int, weight, bias, eps):
    """Normalise (N, G, C/G[, S]) over its last dims. The affine map is a (G, C/G, 1) view
    of the weight, and pointwise work before and after the norm is done in that
    layout too (see Builder.regroup), so one kernel does it all."""
    x = ctx.ref(x)
    shape = tuple(ctx.b.shape(x))
    if len(shape) < 2:
        raise Reject("group norm needs (N, C, ...) inputs")
    c = shape[1]
    if c % groups:
        raise Reject(f"group norm: {c} channels do not split into {groups} groups")
    spec = (groups, c // groups, len(shape) > 2)
    grouped = ctx.b.regroup(x, shape, spec)
    if grouped is None or grouped[1] is None:
        xg = _leaf_view(ctx, x, ctx.b.group_suffix(spec), ctx.b.grouped_shape(shape, spec))
        base = ctx.b.leaf_by_name(x.value).source if x.kind == "leaf" else x
    else:
        xg, base = grouped
    gshape = ctx.b.grouped_shape(shape, spec)
    centred, var = _moments(ctx, xg, tuple(range(2, len(gshape))))
    y = ctx.b.pw("mul", centred, ctx.b.pw("rsqrt", ctx.b.pw("add", var, _const(eps))))
    groups_, per, spatial = spec
    param_view, pshape = (f".view({groups}, {per}, 1)", (groups, per, 1)) if spatial else \
        (f".view({groups}, {per})", (groups, per))
    for param, op in ((weight, "mul"), (bias, "add")):
        if param is not None:  # (C,) per channel
            y = ctx.b.pw(op, y, _leaf_view(ctx, ctx.ref(param), param_view, pshape))
    # back to the input's layout: the buffer is (N, C, *spatial) in memory already
    return ctx.b.ungrouped(y, base, shape, spec)


def _group_norm(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "num_groups", "weight", "bias", "eps"], {"weight": None, "bias": None, "eps": 1e-5})
    return group_norm_impl(ctx, a["input"], int(_static(a["num_groups"], "num_groups")), a["weight"], a["bias"],
                           float(_static(a["eps"], "eps")))


# ---------------------------------------------------------------- scans, flips, arg-reductions
def _flip(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dims"])
    x = a["input"]
    dims = _static(a["dims"], "dims")
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    value = x.value if isinstance(x, Flipped) else ctx.ref(x)
    rank = len(ctx.b.shape(value))
    dims = tuple(sorted(d % rank for d in dims))
    if isinstance(x, Flipped):
        if x.dims == dims:
            return x.value  # flip(flip(v)) is v
        raise Reject("flips over different dims")
    return Flipped(value, dims)


def _scan(kind):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "dim", "dtype"], {"dtype": None})
        x = a["input"]
        reverse = False
        if isinstance(x, Flipped):
            x, reverse = x.value, True
        x = ctx.ref(x)
        rank = len(ctx.b.shape(x))
        dim = int(_static(a["dim"], "dim")) % rank
        if reverse and a["input"].dims != (dim,):
            raise Reject("a scan of a tensor flipped along another dim")
        out = ctx.b.anchor("scan", (x,), {"kind": kind, "dim": dim, "reverse": reverse}, ctx.b.shape(x))
        return Flipped(out, (dim,)) if reverse else out
    return handler


def _arg_reduce(kind):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "dim", "keepdim"], {"dim": None, "keepdim": False})
        x = ctx.ref(a["input"])
        if a["dim"] is None:
            return ctx.b.reduce(kind, x, (), False)
        dims = _dims(a["dim"], len(ctx.b.shape(x)))
        return ctx.b.reduce(kind, x, dims, bool(_static(a["keepdim"], "keepdim")))
    return handler


def _prod(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dim", "keepdim", "dtype"], {"dim": None, "keepdim": False, "dtype": None})
    x = ctx.ref(a["input"])
    return ctx.b.reduce("prod", x, _dims(a["dim"], len(ctx.b.shape(x))), bool(_static(a["keepdim"], "keepdim")))


# ---------------------------------------------------------------- losses
def _reduced(ctx, loss: Ref, reduction: str, batch: int | None = None) -> Ref:
    reduction = _static(reduction, "reduction")
    if reduction == "none":
        return loss
    rank = len(ctx.b.shape(loss))
    if reduction == "sum":
        return ctx.b.reduce("sum", loss, tuple(range(rank)), False) if rank else loss
    if reduction == "mean":
        if not rank:
            return loss
        return ctx.b.pw("div", ctx.b.reduce("sum", loss, tuple(range(rank)), False), RSIZE)
    if reduction == "batchmean":
        total = ctx.b.reduce("sum", loss, tuple(range(rank)), False) if rank else loss
        return ctx.b.pw("div", total, _const(ctx.b.shape(loss)[0] if rank else 1))
    raise Reject(f"loss reduction {reduction!r} is not supported")


def _pair(ctx, args, kwargs, extra: dict | None = None):
    a = _bind(args, kwargs, ["input", "target", "size_average", "reduce", "reduction"] + list(extra or {}),
              {"size_average": None, "reduce": None, "reduction": "mean", "weight": None, **(extra or {})})
    if a["size_average"] is not None or a["reduce"] is not None:
        raise Reject("the deprecated size_average/reduce arguments are not supported")
    if a["weight"] is not None:
        raise Reject("element weights in a loss are not supported")
    return ctx.ref(a["input"]), ctx.ref(a["target"]), a


def _mse_loss(ctx, args, kwargs):
    x, t, a = _pair(ctx, args, kwargs)
    return _reduced(ctx, ctx.b.pw("square", ctx.b.pw("sub", x, t)), a["reduction"])


def _l1_loss(ctx, args, kwargs):
    x, t, a = _pair(ctx, args, kwargs)
    return _reduced(ctx, ctx.b.pw("abs", ctx.b.pw("sub", x, t)), a["reduction"])


def _smooth(ctx, x, t, width: float, huber: bool):
    d = ctx.b.pw("abs", ctx.b.pw("sub", x, t))
    if width == 0:
        return d
    small = ctx.b.pw("mul", ctx.b.pw("square", d), _const(0.5 if huber else 0.5 / width))
    large = ctx.b.pw("sub", d, _const(0.5 * width))
    if huber:
        large = ctx.b.pw("mul", large, _const(width))
    return ctx.b.pw("where", ctx.b.pw("lt", d, _const(width)), small, large)


def _smooth_l1_loss(ctx, args, kwargs):
    x, t, a = _pair(ctx, args, kwargs, {"beta": 1.0})
    return _reduced(ctx, _smooth(ctx, x, t, float(_static(a["beta"], "beta")), False), a["reduction"])


def _huber_loss(ctx, args, kwargs):
    kwargs = dict(kwargs)
    a = _bind(args, kwargs, ["input", "target", "reduction", "delta"], {"reduction": "mean", "delta": 1.0})
    loss = _smooth(ctx, ctx.ref(a["input"]), ctx.ref(a["target"]), float(_static(a["delta"], "delta")), True)
    return _reduced(ctx, loss, a["reduction"])


def _xlogy_self(ctx, t: Ref) -> Ref:
    """t * log(t), 0 where t == 0 (torch.xlogy)."""
    return ctx.b.pw("where", ctx.b.pw("eq", t, _const(0.0)), _const(0.0), ctx.b.pw("mul", t, ctx.b.pw("log", t)))


def _kl_div(ctx, args, kwargs):
    x, t, a = _pair(ctx, args, kwargs, {"log_target": False})
    if _static(a["log_target"], "log_target"):
        loss = ctx.b.pw("mul", ctx.b.pw("exp", t), ctx.b.pw("sub", t, x))
    else:
        loss = ctx.b.pw("sub", _xlogy_self(ctx, t), ctx.b.pw("mul", t, x))
    return _reduced(ctx, loss, a["reduction"])


def _log_softmax_dim(ctx, x: Ref, dim: int) -> Ref:
    m = ctx.b.reduce("max", x, (dim,), True)
    shifted = ctx.b.pw("sub", x, m)
    total = ctx.b.reduce("sum", ctx.b.pw("exp", shifted), (dim,), True)
    return ctx.b.pw("sub", shifted, ctx.b.pw("log", total))


def _class_loss(ctx, logp_or_logits: Ref, target: Ref, reduction, ignore_index: int, from_logits: bool) -> Ref:
    """Cross entropy (logits) or NLL (log-probabilities) with class-index targets."""
    shape = ctx.b.shape(logp_or_logits)
    if len(shape) < 2:
        raise Reject("class losses on unbatched inputs are not supported")
    c = shape[1]
    index = ctx.b.iota(1, tuple(s if i == 1 else 1 for i, s in enumerate(shape)))
    t = unsqueezed(ctx, target, 1)
    picked_mask = ctx.b.pw("eq", index, t)
    if from_logits:
        m = ctx.b.reduce("max", logp_or_logits, (1,), True)
        lse = ctx.b.pw("add", ctx.b.pw("log", ctx.b.reduce("sum", ctx.b.pw("exp", ctx.b.pw("sub", logp_or_logits, m)),
                                                           (1,), True)), m)
        picked = ctx.b.reduce("sum", ctx.b.pw("where", picked_mask, logp_or_logits, _const(0.0)), (1,), True)
        loss = ctx.b.pw("sub", lse, picked)
    else:
        loss = ctx.b.pw("neg", ctx.b.reduce("sum", ctx.b.pw("where", picked_mask, logp_or_logits, _const(0.0)),
                                            (1,), True))
    del c
    loss = ctx.b.pw("mul", loss, ctx.b.pw("ne", t, _const(ignore_index)))
    loss = ctx.b.retag(loss, ctx.b.shape(target))  # a per-row value: its row's shape without the class dim
    reduction = _static(reduction, "reduction")
    if reduction == "mean":
        # the mean over the targets that are not ignore_index
        dims = tuple(range(len(ctx.b.shape(loss))))
        weight = ctx.b.pw("ne", target, _const(ignore_index))
        return ctx.b.pw("div", ctx.b.reduce("sum", loss, dims, False), ctx.b.reduce("sum", weight, dims, False))
    return _reduced(ctx, loss, reduction)


def _cross_entropy(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
                             "label_smoothing"],
              {"weight": None, "size_average": None, "ignore_index": -100, "reduce": None, "reduction": "mean",
               "label_smoothing": 0.0})
    if a["weight"] is not None or _static(a["label_smoothing"], "label_smoothing"):
        raise Reject("cross entropy with class weights or label smoothing is not supported")
    x, t = ctx.ref(a["input"]), ctx.ref(a["target"])
    if ctx.b.dtype(t) in ("float16", "bfloat16", "float32", "float64"):
        # class probabilities as targets
        loss = ctx.b.pw("neg", ctx.b.reduce("sum", ctx.b.pw("mul", t, _log_softmax_dim(ctx, x, 1)), (1,), False))
        return _reduced(ctx, loss, a["reduction"])
    return _class_loss(ctx, x, t, a["reduction"], int(_static(a["ignore_index"], "ignore_index")), True)


def _nll_loss(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction"],
              {"weight": None, "size_average": None, "ignore_index": -100, "reduce": None, "reduction": "mean"})
    if a["weight"] is not None:
        raise Reject("nll loss with class weights is not supported")
    return _class_loss(ctx, ctx.ref(a["input"]), ctx.ref(a["target"]), a["reduction"],
                       int(_static(a["ignore_index"], "ignore_index")), False)


def _bce(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "target", "weight", "size_average", "reduce", "reduction"],
              {"weight": None, "size_average": None, "reduce": None, "reduction": "mean"})
    if a["weight"] is not None:
        raise Reject("binary cross entropy with weights is not supported")
    p, t = ctx.ref(a["input"]), ctx.ref(a["target"])
    logp = ctx.b.pw("clamp", ctx.b.pw("log", p), lo=-100.0)
    log1m = ctx.b.pw("clamp", ctx.b.pw("log", ctx.b.pw("sub", _const(1.0), p)), lo=-100.0)
    loss = ctx.b.pw("neg", ctx.b.pw("add", ctx.b.pw("mul", t, logp),
                                    ctx.b.pw("mul", ctx.b.pw("sub", _const(1.0), t), log1m)))
    return _reduced(ctx, loss, a["reduction"])


def _bce_logits(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "target", "weight", "size_average", "reduce", "reduction", "pos_weight"],
              {"weight": None, "size_average": None, "reduce": None, "reduction": "mean", "pos_weight": None})
    if a["weight"] is not None or a["pos_weight"] is not None:
        raise Reject("binary cross entropy with weights is not supported")
    x, t = ctx.ref(a["input"]), ctx.ref(a["target"])
    # (1 - t) x - log_sigmoid(x)
    loss = ctx.b.pw("sub", ctx.b.pw("mul", ctx.b.pw("sub", _const(1.0), t), x), ctx.b.pw("log_sigmoid", x))
    return _reduced(ctx, loss, a["reduction"])


def _pairwise_distance_impl(ctx, x1, x2, p, eps, keepdim):
    diff = ctx.b.pw("add", ctx.b.pw("sub", ctx.ref(x1), ctx.ref(x2)), _const(eps))
    rank = len(ctx.b.shape(diff))
    return _norm_of(ctx, diff, p, (rank - 1,), keepdim)


def _pairwise_distance(ctx, args, kwargs):
    a = _bind(args, kwargs, ["x1", "x2", "p", "eps", "keepdim"], {"p": 2.0, "eps": 1e-6, "keepdim": False})
    return _pairwise_distance_impl(ctx, a["x1"], a["x2"], float(_static(a["p"], "p")), float(_static(a["eps"], "eps")),
                                   bool(_static(a["keepdim"], "keepdim")))


def _triplet_impl(ctx, anchor, positive, negative, margin, p, eps, swap, reduction):
    d_ap = _pairwise_distance_impl(ctx, anchor, positive, p, eps, False)
    d_an = _pairwise_distance_impl(ctx, anchor, negative, p, eps, False)
    if swap:
        d_an = ctx.b.pw("minimum", d_an, _pairwise_distance_impl(ctx, positive, negative, p, eps, False))
    loss = ctx.b.pw("relu", ctx.b.pw("add", ctx.b.pw("sub", d_ap, d_an), _const(margin)))
    return _reduced(ctx, loss, reduction)


def _triplet(ctx, args, kwargs):
    a = _bind(args, kwargs, ["anchor", "positive", "negative", "margin", "p", "eps", "swap", "size_average", "reduce",
                             "reduction"],
              {"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False, "size_average": None, "reduce": None,
               "reduction": "mean"})
    return _triplet_impl(ctx, a["anchor"], a["positive"], a["negative"], float(_static(a["margin"], "margin")),
                         float(_static(a["p"], "p")), float(_static(a["eps"], "eps")), bool(_static(a["swap"], "swap")),
                         a["reduction"])


def _cosine_similarity_impl(ctx, x1, x2, dim, eps):
    x1, x2 = ctx.ref(x1), ctx.ref(x2)
    dims = (dim % len(ctx.b.shape(ctx.b.pw("mul", x1, x2))),)
    dot = ctx.b.reduce("sum", ctx.b.pw("mul", x1, x2), dims, False)
    n1 = ctx.b.reduce("sum", ctx.b.pw("square", x1), dims, False)
    n2 = ctx.b.reduce("sum", ctx.b.pw("square", x2), dims, False)
    denom = ctx.b.pw("sqrt", ctx.b.pw("clamp", ctx.b.pw("mul", n1, n2), lo=eps * eps))
    return ctx.b.pw("div", dot, denom)


def _cosine_similarity(ctx, args, kwargs):
    a = _bind(args, kwargs, ["x1", "x2", "dim", "eps"], {"dim": 1, "eps": 1e-8})
    return _cosine_similarity_impl(ctx, a["x1"], a["x2"], int(_static(a["dim"], "dim")), float(_static(a["eps"], "eps")))


def _cosine_embedding_loss(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input1", "input2", "target", "margin", "size_average", "reduce", "reduction"],
              {"margin": 0.0, "size_average": None, "reduce": None, "reduction": "mean"})
    cos = _cosine_similarity_impl(ctx, a["input1"], a["input2"], -1, 1e-8)
    t = ctx.ref(a["target"])
    pos = ctx.b.pw("sub", _const(1.0), cos)
    neg = ctx.b.pw("relu", ctx.b.pw("sub", cos, _const(float(_static(a["margin"], "margin")))))
    loss = ctx.b.pw("where", ctx.b.pw("eq", t, _const(1.0)), pos,
                    ctx.b.pw("where", ctx.b.pw("eq", t, _const(-1.0)), neg, _const(0.0)))
    return _reduced(ctx, loss, a["reduction"])


def _hinge_embedding_loss(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "target", "margin", "size_average", "reduce", "reduction"],
              {"margin": 1.0, "size_average": None, "reduce": None, "reduction": "mean"})
    x, t = ctx.ref(a["input"]), ctx.ref(a["target"])
    margin = float(_static(a["margin"], "margin"))
    neg = ctx.b.pw("relu", ctx.b.pw("sub", _const(margin), x))
    loss = ctx.b.pw("add", ctx.b.pw("where", ctx.b.pw("ne", t, _const(-1.0)), x, _const(0.0)),
                    ctx.b.pw("where", ctx.b.pw("ne", t, _const(1.0)), neg, _const(0.0)))
    return _reduced(ctx, loss, a["reduction"])


def _margin_ranking_loss(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input1", "input2", "target", "margin", "size_average", "reduce", "reduction"],
              {"margin": 0.0, "size_average": None, "reduce": None, "reduction": "mean"})
    x1, x2, t = ctx.ref(a["input1"]), ctx.ref(a["input2"]), ctx.ref(a["target"])
    loss = ctx.b.pw("relu", ctx.b.pw("add", ctx.b.pw("mul", ctx.b.pw("neg", t), ctx.b.pw("sub", x1, x2)),
                                     _const(float(_static(a["margin"], "margin")))))
    return _reduced(ctx, loss, a["reduction"])


def _soft_margin_loss(ctx, args, kwargs):
    x, t, a = _pair(ctx, args, kwargs)
    z = ctx.b.pw("mul", ctx.b.pw("neg", t), x)
    return _reduced(ctx, ctx.b.pw("softplus", z, beta=1.0, threshold=20.0), a["reduction"])


# ---------------------------------------------------------------- structure
def _tri(upper: bool):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "diagonal"], {"diagonal": 0})
        x = ctx.ref(a["input"])
        shape = ctx.b.shape(x)
        if len(shape) < 2:
            raise Reject("triu/tril of a tensor with fewer than 2 dims")
        plane = tuple(shape[-2:])
        row, col = ctx.b.iota(0, plane), ctx.b.iota(1, plane)
        offset = ctx.b.pw("sub", col, row)
        k = _const(int(_static(a["diagonal"], "diagonal")))
        keep = ctx.b.pw("ge", offset, k) if upper else ctx.b.pw("le", offset, k)
        return ctx.b.pw("where", keep, x, _const(0.0))
    return handler


def _diag(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "diagonal", "offset"], {"diagonal": 0, "offset": 0})
    x = ctx.ref(a["input"])
    if len(ctx.b.shape(x)) != 1 or _static(a["diagonal"], "diagonal") or _static(a["offset"], "offset"):
        raise Reject("only torch.diag of a vector (a diagonal matrix) is supported")
    return Diag(x)


def _masked_fill(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "mask", "value"])
    return ctx.b.pw("where", ctx.ref(a["mask"]), ctx.ref(a["value"]), ctx.ref(a["input"]))


def _factory_source(name: str, args, kwargs) -> str:
    parts = [py_source(a) for a in args] + [f"{k}={py_source(v)}" for k, v in kwargs.items()]
    return f"torch.{name}({', '.join(parts)})"


def _factory(name: str):
    """zeros/ones/full(...) and their _like forms: allocated in forward (allowed under
    every rule set) and read like an input; of a computed value, a constant."""
    def handler(ctx, args, kwargs):
        if ctx.spec is None:
            raise Reject(f"torch.{name} without a traced shape")
        if name.endswith("_like"):
            base = args[0]
            if isinstance(base, Ref) and base.kind == "leaf":
                rest = [py_source(a) for a in args[1:]] + [f"{k}={py_source(v)}" for k, v in kwargs.items()]
                source = f"torch.{name}({', '.join([ctx.b.leaf_by_name(base.value).source] + rest)})"
                return ctx.b.leaf(source, ctx.spec, name.replace("_like", ""))
            if name == "full_like":
                value = args[1] if len(args) > 1 else kwargs.get("fill_value")
                value = float(_static(value, "fill_value"))
            else:
                value = 0.0 if name == "zeros_like" else 1.0
            return ctx.b.full(value, ctx.spec.shape, ctx.spec.dtype)
        return ctx.b.leaf(_factory_source(name, args, kwargs), ctx.spec, name)
    return handler


def _arange(ctx, args, kwargs):
    """torch.arange(end) / (start, end[, step]): start + step * (index), computed where it is
    read (a position, a distance, a frequency), not read from memory."""
    if ctx.spec is None or len(ctx.spec.shape) != 1:
        raise Reject("torch.arange without a traced shape")
    numbers = [_static(v, "arange bound") for v in args]
    start, step = (numbers[0], numbers[2] if len(numbers) > 2 else 1) if len(numbers) > 1 else (0, 1)
    start, step = _static(kwargs.get("start", start), "start"), _static(kwargs.get("step", step), "step")
    values = ctx.b.iota(0, ctx.spec.shape)
    if step != 1:
        values = ctx.b.pw("mul", values, _const(float(step)))
    if start != 0:
        values = ctx.b.pw("add", values, _const(float(start)))
    return ctx.b.pw("cast", values, dtype=ctx.spec.dtype)


def _eye(ctx, args, kwargs):
    if ctx.spec is None or len(ctx.spec.shape) != 2:
        raise Reject("torch.eye without a traced shape")
    shape = ctx.spec.shape
    return ctx.b.pw("cast", ctx.b.pw("eq", ctx.b.iota(0, shape), ctx.b.iota(1, shape)), dtype=ctx.spec.dtype)


def _random(kind: str):
    """torch.randn/rand(...) and their _like forms: a fresh draw from the global generator
    on every call (state the task draws, not compute over its inputs: see _gen_random)."""
    def handler(ctx, args, kwargs):
        if ctx.spec is None:
            raise Reject("a random draw without a traced shape")
        if kwargs.get("generator") is not None:
            raise Reject("a random draw from a generator of the task's own is not supported")
        if not ctx.spec.dtype.startswith(("float", "bfloat")):
            raise Reject(f"a random draw of dtype {ctx.spec.dtype}")
        return ctx.b.random(kind, ctx.spec.shape, ctx.spec.dtype, any_leaf(ctx))
    return handler


def _tensor(ctx, args, kwargs):
    value = args[0] if args else kwargs.get("data")
    value = _static(value, "torch.tensor data")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Reject("torch.tensor of anything but a Python number")
    return Ref("const", float(value))


def _cat(ctx, args, kwargs):
    a = _bind(args, kwargs, ["tensors", "dim"], {"dim": 0})
    parts = tuple(materialized(ctx, ctx.ref(t)) for t in a["tensors"])
    if ctx.spec is None:
        raise Reject("torch.cat without a traced shape")
    dim = int(_static(a["dim"], "dim")) % len(ctx.spec.shape)
    return ctx.b.cat(parts, dim, ctx.spec.shape)


# ---------------------------------------------------------------- patches
def im2col_impl(ctx, x, kernel_size, dilation, padding, stride):
    """F.unfold (im2col) of an (N, C, H, W) or (C, H, W) tensor: (N, C*kh*kw, L) patches, as
    views and one copy made in forward (pad, two Tensor.unfold, a strided slice, reshape)."""
    x = ctx.ref(x)
    shape = tuple(ctx.b.shape(x))
    if len(shape) not in (3, 4):
        raise Reject(f"unfold (im2col) of a rank-{len(shape)} tensor; it takes (N, C, H, W) or (C, H, W)")
    k, d, p, s = (_tuple(v, 2, what) for v, what in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                                   (padding, "padding"), (stride, "stride")))
    lead, (h, w) = shape[:-2], shape[-2:]
    span = [dd * (kk - 1) + 1 for kk, dd in zip(k, d)]
    out_hw = [(size + 2 * pp - sp) // ss + 1 for size, pp, sp, ss in zip((h, w), p, span, s)]
    if min(out_hw) < 1:
        raise Reject(f"unfold: kernel {k} with dilation {d} does not fit the padded {h}x{w} input")
    if any(p):
        if x.kind != "leaf":
            raise Reject("unfold (im2col) with padding of a computed value is not supported")
        leaf = ctx.b.leaf_by_name(x.value)
        x = ctx.b.leaf(f"torch.nn.functional.pad({leaf.source}, ({p[1]}, {p[1]}, {p[0]}, {p[0]}))",
                       TensorSpec(lead + (h + 2 * p[0], w + 2 * p[1]), leaf.spec.dtype), leaf.name + "_pad")
    r = len(shape)
    suffix = f".unfold({r - 2}, {span[0]}, {s[0]}).unfold({r - 1}, {span[1]}, {s[1]})"
    if d != (1, 1):
        suffix += f"[..., ::{d[0]}, ::{d[1]}]"
    # (.., C, oh, ow, kh, kw) -> (.., C, kh, kw, oh, ow) -> (.., C*kh*kw, oh*ow)
    perm = ", ".join(map(str, list(range(r - 2)) + [r, r + 1, r - 2, r - 1]))
    cols = shape[-3] * k[0] * k[1]
    out = lead[:-1] + (cols, out_hw[0] * out_hw[1])
    suffix += f".permute({perm}).reshape({', '.join(map(str, out))})"
    return _leaf_view(ctx, x, suffix, out)


def _im2col(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "kernel_size", "dilation", "padding", "stride"],
              {"dilation": 1, "padding": 0, "stride": 1})
    return im2col_impl(ctx, a["input"], a["kernel_size"], a["dilation"], a["padding"], a["stride"])


# ---------------------------------------------------------------- small activations
def _softsign(ctx, args, kwargs):
    x = ctx.ref(args[0])
    return ctx.b.pw("div", x, ctx.b.pw("add", ctx.b.pw("abs", x), _const(1.0)))


def _tanhshrink(ctx, args, kwargs):
    x = ctx.ref(args[0])
    return ctx.b.pw("sub", x, ctx.b.pw("tanh", x))


def _shrink(hard: bool):
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "lambd"], {"lambd": 0.5})
        x, lam = ctx.ref(a["input"]), float(_static(a["lambd"], "lambd"))
        outside = ctx.b.pw("gt", ctx.b.pw("abs", x), _const(lam))
        if hard:
            return ctx.b.pw("where", outside, x, _const(0.0))
        shrunk = ctx.b.pw("sub", x, ctx.b.pw("mul", ctx.b.pw("sign", x), _const(lam)))
        return ctx.b.pw("where", outside, shrunk, _const(0.0))
    return handler


def _celu(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "alpha"], {"alpha": 1.0})
    x, alpha = ctx.ref(a["input"]), float(_static(a["alpha"], "alpha"))
    neg = ctx.b.pw("mul", ctx.b.pw("sub", ctx.b.pw("exp", ctx.b.pw("div", x, _const(alpha))), _const(1.0)),
                   _const(alpha))
    return ctx.b.pw("where", ctx.b.pw("gt", x, _const(0.0)), x, neg)


def _threshold(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "threshold", "value"])
    x = ctx.ref(a["input"])
    return ctx.b.pw("where", ctx.b.pw("gt", x, _const(float(_static(a["threshold"], "threshold")))), x,
                    _const(float(_static(a["value"], "value"))))


def _prelu(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "weight"])
    x = ctx.ref(a["input"])
    w = ctx.ref(a["weight"])
    if math.prod(ctx.b.shape(w)) != 1:
        w = _channel_view(ctx, w, len(ctx.b.shape(x)))
    return ctx.b.pw("where", ctx.b.pw("gt", x, _const(0.0)), x, ctx.b.pw("mul", x, w))


NN_HANDLERS = {
    "conv1d": _conv(1, False), "conv2d": _conv(2, False), "conv3d": _conv(3, False),
    "conv_transpose1d": _conv(1, True), "conv_transpose2d": _conv(2, True), "conv_transpose3d": _conv(3, True),
    "max_pool1d": _max_pool(1), "max_pool2d": _max_pool(2), "max_pool3d": _max_pool(3),
    "avg_pool1d": _avg_pool(1), "avg_pool2d": _avg_pool(2), "avg_pool3d": _avg_pool(3),
    "adaptive_avg_pool1d": _adaptive("avg", 1), "adaptive_avg_pool2d": _adaptive("avg", 2),
    "adaptive_avg_pool3d": _adaptive("avg", 3), "adaptive_max_pool1d": _adaptive("max", 1),
    "adaptive_max_pool2d": _adaptive("max", 2), "adaptive_max_pool3d": _adaptive("max", 3),
    "batch_norm": _batch_norm, "instance_norm": _instance_norm, "group_norm": _group_norm,
    "cumsum": _scan("sum"), "cumprod": _scan("prod"), "flip": _flip,
    "argmax": _arg_reduce("argmax"), "argmin": _arg_reduce("argmin"), "prod": _prod,
    "mse_loss": _mse_loss, "l1_loss": _l1_loss, "smooth_l1_loss": _smooth_l1_loss, "huber_loss": _huber_loss,
    "kl_div": _kl_div, "cross_entropy": _cross_entropy, "nll_loss": _nll_loss, "binary_cross_entropy": _bce,
    "binary_cross_entropy_with_logits": _bce_logits, "pairwise_distance": _pairwise_distance,
    "triplet_margin_loss": _triplet, "cosine_similarity": _cosine_similarity,
    "cosine_embedding_loss": _cosine_embedding_loss, "hinge_embedding_loss": _hinge_embedding_loss,
    "margin_ranking_loss": _margin_ranking_loss, "soft_margin_loss": _soft_margin_loss,
    "triu": _tri(True), "tril": _tri(False), "diag": _diag, "diag_embed": _diag, "masked_fill": _masked_fill,
    "zeros_like": _factory("zeros_like"), "ones_like": _factory("ones_like"), "full_like": _factory("full_like"),
    "zeros": _factory("zeros"), "ones": _factory("ones"), "full": _factory("full"), "tensor": _tensor,
    "arange": _arange, "eye": _eye,
    "scalar_tensor": _tensor, "randn": _random("normal"), "randn_like": _random("normal"),
    "rand": _random("uniform"), "rand_like": _random("uniform"), "cat": _cat, "concat": _cat, "concatenate": _cat, "einsum": einsum,
    "softsign": _softsign, "tanhshrink": _tanhshrink,
    "hardshrink": _shrink(True), "softshrink": _shrink(False), "celu": _celu, "threshold": _threshold,
    "prelu": _prelu, "im2col": _im2col,
}


def call_nn_module(ctx, module: nn.Module, param, args, kwargs):
    """Lower an nn module of these families; None when it is not one of them."""
    x = args[0] if args else kwargs.get("input")
    conv_types = {nn.Conv1d: (1, False), nn.Conv2d: (2, False), nn.Conv3d: (3, False),
                  nn.ConvTranspose1d: (1, True), nn.ConvTranspose2d: (2, True), nn.ConvTranspose3d: (3, True)}
    for cls, (nd, tr) in conv_types.items():
        if type(module) is cls:
            if module.padding_mode != "zeros":
                raise Reject(f"convolution with padding_mode={module.padding_mode!r} is not supported")
            if tr and len(args) > 1:
                raise Reject("ConvTranspose with an output_size argument is not supported")
            return conv_impl(ctx, x, param("weight"), param("bias"), nd, module.stride, module.padding,
                             module.dilation, module.groups, tr, module.output_padding if tr else 0)
    pools = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3}
    for cls, nd in pools.items():
        if type(module) is cls:
            if module.return_indices:
                raise Reject("max pooling with return_indices is not supported")
            return pool_impl(ctx, x, "max", nd, module.kernel_size, module.stride, module.padding, module.dilation,
                             module.ceil_mode)
    for cls, nd in {nn.AvgPool1d: 1, nn.AvgPool2d: 2, nn.AvgPool3d: 3}.items():
        if type(module) is cls:
            return pool_impl(ctx, x, "avg", nd, module.kernel_size, module.stride, module.padding, 1, module.ceil_mode,
                             module.count_include_pad, getattr(module, "divisor_override", None))
    adaptive = {nn.AdaptiveAvgPool1d: ("avg", 1), nn.AdaptiveAvgPool2d: ("avg", 2), nn.AdaptiveAvgPool3d: ("avg", 3),
                nn.AdaptiveMaxPool1d: ("max", 1), nn.AdaptiveMaxPool2d: ("max", 2), nn.AdaptiveMaxPool3d: ("max", 3)}
    for cls, (kind, nd) in adaptive.items():
        if type(module) is cls:
            if getattr(module, "return_indices", False):
                raise Reject("adaptive max pooling with return_indices is not supported")
            return adaptive_pool_impl(ctx, x, kind, nd, module.output_size)
    if isinstance(module, nn.modules.batchnorm._BatchNorm):
        if module.training or not module.track_running_stats:
            raise Reject("batch norm with batch statistics (training mode) is not supported")
        return batch_norm_eval(ctx, x, param("running_mean"), param("running_var"), param("weight"), param("bias"),
                               module.eps)
    if isinstance(module, nn.modules.instancenorm._InstanceNorm):
        if module.track_running_stats and not module.training:
            return batch_norm_eval(ctx, x, param("running_mean"), param("running_var"), param("weight"),
                                   param("bias"), module.eps)
        return instance_norm_impl(ctx, x, param("weight"), param("bias"), module.eps)
    if isinstance(module, nn.GroupNorm):
        return group_norm_impl(ctx, x, module.num_groups, param("weight"), param("bias"), module.eps)
    losses = {nn.MSELoss: _mse_loss, nn.L1Loss: _l1_loss, nn.KLDivLoss: _kl_div, nn.SoftMarginLoss: _soft_margin_loss,
              nn.BCELoss: _bce, nn.BCEWithLogitsLoss: _bce_logits}
    for cls, handler in losses.items():
        if type(module) is cls:
            extra = {"log_target": module.log_target} if cls is nn.KLDivLoss else {}
            if cls in (nn.BCELoss, nn.BCEWithLogitsLoss) and getattr(module, "weight", None) is not None:
                raise Reject("binary cross entropy with weights is not supported")
            return handler(ctx, list(args), {"reduction": module.reduction, **extra})
    if type(module) is nn.SmoothL1Loss:
        return _smooth_l1_loss(ctx, list(args), {"reduction": module.reduction, "beta": module.beta})
    if type(module) is nn.HuberLoss:
        return _huber_loss(ctx, list(args), {"reduction": module.reduction, "delta": module.delta})
    if type(module) is nn.CrossEntropyLoss:
        if module.weight is not None or module.label_smoothing:
            raise Reject("cross entropy with class weights or label smoothing is not supported")
        return _cross_entropy(ctx, list(args), {"reduction": module.reduction, "ignore_index": module.ignore_index})
    if type(module) is nn.NLLLoss:
        if module.weight is not None:
            raise Reject("nll loss with class weights is not supported")
        return _nll_loss(ctx, list(args), {"reduction": module.reduction, "ignore_index": module.ignore_index})
    if type(module) is nn.TripletMarginLoss:
        return _triplet_impl(ctx, args[0], args[1], args[2], module.margin, module.p, module.eps, module.swap,
                             module.reduction)
    if type(module) is nn.CosineEmbeddingLoss:
        return _cosine_embedding_loss(ctx, list(args), {"margin": module.margin, "reduction": module.reduction})
    if type(module) is nn.HingeEmbeddingLoss:
        return _hinge_embedding_loss(ctx, list(args), {"margin": module.margin, "reduction": module.reduction})
    if type(module) is nn.MarginRankingLoss:
        return _margin_ranking_loss(ctx, list(args), {"margin": module.margin, "reduction": module.reduction})
    if type(module) is nn.CosineSimilarity:
        return _cosine_similarity_impl(ctx, args[0], args[1], module.dim, module.eps)
    if type(module) is nn.PairwiseDistance:
        return _pairwise_distance_impl(ctx, args[0], args[1], module.norm, module.eps, module.keepdim)
    simple = {nn.Softsign: _softsign, nn.Tanhshrink: _tanhshrink}
    for cls, handler in simple.items():
        if type(module) is cls:
            return handler(ctx, [x], {})
    if type(module) is nn.Hardshrink:
        return _shrink(True)(ctx, [x], {"lambd": module.lambd})
    if type(module) is nn.Softshrink:
        return _shrink(False)(ctx, [x], {"lambd": module.lambd})
    if type(module) is nn.CELU:
        return _celu(ctx, [x], {"alpha": module.alpha})
    if type(module) is nn.Threshold:
        return _threshold(ctx, [x], {"threshold": module.threshold, "value": module.value})
    if type(module) is nn.PReLU:
        return _prelu(ctx, [x, param("weight")], {})
    return None
