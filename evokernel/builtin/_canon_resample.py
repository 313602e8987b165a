"""Resampling over the trailing spatial dims: ``F.interpolate`` (and the deprecated
``F.upsample``), the ``nn.Upsample`` modules (``UpsamplingNearest2d``,
``UpsamplingBilinear2d``), and the ``upsample_*`` ops a dynamo capture records for them.

``F.affine_grid`` and ``F.grid_sample`` (a spatial transformer's warp, 2-D) resample at
positions a tensor holds: the grid is pointwise work on the affine matrix and iotas, the
sample a weighted sum of torch.gather reads of the flattened input at each corner the
position falls between (zero weight outside the input, or the position clamped to its
border), as torch's grid sampler computes them.

Interpolate's each becomes one "resample" node (a kernel of its own, _gen_resample). Its attributes fix
what torch's source-index rule needs besides the input's sizes, which the launcher reads
at run time: the mode ("nearest", "nearest-exact" or "linear" for linear, bilinear and
trilinear alike), the output's spatial size when ``size`` gives it, the scale factors
otherwise, whether those factors also drive the index rule (they do unless
``recompute_scale_factor`` is set: torch then uses input / output size instead), and
``align_corners``.
"""

from __future__ import annotations

import torch.nn as nn

from ._build import Reject
from ._canon_nn import _leaf_view
from ._canon_util import _bind, _static, round_half_even
from ._ir import Ref

__all__ = ["RESAMPLE_HANDLERS", "resample_module"]

# the modes with a kernel, by the number of spatial dims each takes (None: any of 1-3)
_MODES: dict[str, int | None] = {"nearest": None, "nearest-exact": None, "linear": 1, "bilinear": 2, "trilinear": 3}


def _per_dim(value, nd: int, what: str) -> tuple | None:
    value = _static(value, what)
    if value is None:
        return None
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd
    if len(values) != nd:
        raise Reject(f"interpolate {what} has {len(values)} entries for {nd} spatial dims")
    return values


def resample(ctx, x, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
             recompute_scale_factor=None, antialias: bool = False):
    """F.interpolate's arguments as one resample node (its shape is the traced result's)."""
    mode, antialias = _static(mode, "mode"), bool(_static(antialias, "antialias"))
    align_corners = _static(align_corners, "align_corners")
    recompute = bool(_static(recompute_scale_factor, "recompute_scale_factor"))
    if mode not in _MODES:
        raise Reject(f"interpolate mode {mode!r} is not supported (nearest, nearest-exact, linear, bilinear, "
                     "trilinear are)")
    if antialias:
        raise Reject(f"interpolate mode {mode!r} with antialias=True is not supported")
    if ctx.spec is None:
        raise Reject("an interpolate without a traced shape")
    src = ctx.ref(x)
    shape = tuple(ctx.b.shape(src))
    nd = len(shape) - 2
    if not 1 <= nd <= 3 or _MODES[mode] not in (None, nd):
        raise Reject(f"interpolate mode {mode!r} of a {len(shape)}-d input is not supported")
    size = _per_dim(size, nd, "size")
    factors = _per_dim(scale_factor, nd, "scale_factor")
    if (size is None) == (factors is None):
        raise Reject("interpolate needs exactly one of size and scale_factor")
    linear = mode in ("linear", "bilinear", "trilinear")
    attrs = {"mode": "linear" if linear else mode, "nd": nd,
             "size": None if size is None else tuple(int(s) for s in size),
             "factors": None if factors is None else tuple(float(f) for f in factors),
             # the factors drive the source index unless recomputed (or aligned corners, which ignore them)
             "factors_index": factors is not None and not recompute,
             "align_corners": bool(align_corners) if linear else False}
    return ctx.b.resample(src, attrs, tuple(ctx.spec.shape))


def _interpolate(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "size", "scale_factor", "mode", "align_corners", "recompute_scale_factor",
                             "antialias"],
              {"size": None, "scale_factor": None, "mode": "nearest", "align_corners": None,
               "recompute_scale_factor": None, "antialias": False})
    return resample(ctx, a["input"], a["size"], a["scale_factor"], a["mode"], a["align_corners"],
                    a["recompute_scale_factor"], a["antialias"])


def _upsample_fixed(mode: str, align_corners: bool | None):
    """F.upsample_nearest / F.upsample_bilinear (the latter aligns corners)."""
    def handler(ctx, args, kwargs):
        a = _bind(args, kwargs, ["input", "size", "scale_factor"], {"size": None, "scale_factor": None})
        return resample(ctx, a["input"], a["size"], a["scale_factor"], mode, align_corners)
    return handler


def _aten_upsample(mode: str, aligned: bool):
    """``torch._C._nn.upsample_<mode><n>d(input, output_size, [align_corners,] scale_factors)``,
    what F.interpolate calls (a dynamo capture records these): the factors it passes are the
    ones the index rule uses, and output_size is given when they are not."""
    def handler(ctx, args, kwargs):
        names = ["input", "output_size"] + (["align_corners"] if aligned else []) + ["scale_factors"]
        a = _bind(args, kwargs, names, {"align_corners": False, "scale_factors": None})
        factors = _static(a["scale_factors"], "scale_factors")
        size = None if factors is not None else a["output_size"]
        return resample(ctx, a["input"], size, factors, mode, a["align_corners"] if aligned else None)
    return handler


def _c(value: float) -> Ref:
    return Ref("const", float(value))


def _grid_axis(b, size: int, aligned: bool, dim: int, shape: tuple[int, ...]) -> Ref:
    """The normalised coordinate (-1 to 1) of each position along an axis of ``size``: at the
    centres of the end pixels when aligned, at their outer edges otherwise (torch's affine_grid)."""
    i = b.iota(dim, shape)
    if aligned:
        return b.pw("sub", b.pw("mul", i, _c(2.0 / (size - 1))), _c(1.0)) if size > 1 else b.full(-1.0, shape)
    return b.pw("sub", b.pw("div", b.pw("add", b.pw("mul", i, _c(2.0)), _c(1.0)), _c(size)), _c(1.0))


def _affine_grid(ctx, args, kwargs):
    """(N, H, W, 2) sampling positions: theta (N, 2, 3) applied to each output pixel's (x, y, 1)."""
    a = _bind(args, kwargs, ["theta", "size", "align_corners"], {"align_corners": None})
    size = tuple(int(s) for s in _static(a["size"], "size"))
    if len(size) != 4:
        raise Reject(f"affine_grid of a {len(size)}-d size is not supported (4-d, N C H W, is)")
    aligned = bool(_static(a["align_corners"], "align_corners"))
    n, _, h, w = size
    b, theta = ctx.b, ctx.ref(a["theta"])
    # column j of theta as (N, 1, 1, 2): the (x, y) outputs' coefficients of the pixel's x, y and 1
    column = [_leaf_view(ctx, theta, f".transpose(1, 2)[:, {j}:{j + 1}].unsqueeze(1)", (n, 1, 1, 2)) for j in range(3)]
    xs = _grid_axis(b, w, aligned, 2, (1, 1, w, 1))
    ys = _grid_axis(b, h, aligned, 1, (1, h, 1, 1))
    return b.pw("add", b.pw("add", b.pw("mul", column[0], xs), b.pw("mul", column[1], ys)), column[2])


def _source_index(b, coord: Ref, size: int, aligned: bool, border: bool) -> Ref:
    """A normalised coordinate to a position in pixels along an axis of ``size``, clamped to the
    input where the padding mode is "border" (torch's grid_sampler_compute_source_index)."""
    if aligned:
        pos = b.pw("mul", b.pw("div", b.pw("add", coord, _c(1.0)), _c(2.0)), _c(size - 1))
    else:
        pos = b.pw("div", b.pw("sub", b.pw("mul", b.pw("add", coord, _c(1.0)), _c(size)), _c(1.0)), _c(2.0))
    return b.pw("clamp", pos, lo=0.0, hi=float(size - 1)) if border else pos


def _grid_sample(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "grid", "mode", "padding_mode", "align_corners"],
              {"mode": "bilinear", "padding_mode": "zeros", "align_corners": None})
    mode, padding = _static(a["mode"], "mode"), _static(a["padding_mode"], "padding_mode")
    aligned = bool(_static(a["align_corners"], "align_corners"))
    if mode not in ("bilinear", "nearest"):
        raise Reject(f"grid_sample mode {mode!r} is not supported (bilinear and nearest are)")
    if padding not in ("zeros", "border"):
        raise Reject(f"grid_sample padding_mode {padding!r} is not supported (zeros and border are)")
    b, x, grid = ctx.b, ctx.ref(a["input"]), ctx.ref(a["grid"])
    if len(b.shape(x)) != 4:
        raise Reject(f"grid_sample of a {len(b.shape(x))}-d input is not supported (4-d, N C H W, is)")
    n, c, h, w = b.shape(x)
    _, ho, wo, _ = b.shape(grid)
    points = ho * wo
    # each output position's source coordinates as (N, 1, points), broadcast over the channels
    ix, iy = (_source_index(b, _leaf_view(ctx, grid, f".reshape({n}, 1, {points}, 2)[..., {k}]", (n, 1, points)),
                            size, aligned, padding == "border") for k, size in ((0, w), (1, h)))
    flat = _leaf_view(ctx, x, f".reshape({n}, {c}, {h * w})", (n, c, h * w))
    channels = b.full(0.0, (1, c, 1))

    def read(col: Ref, row: Ref) -> Ref:
        """The input at (row, col), 0 where that is outside it."""
        inside = b.pw("mul", b.pw("mul", b.pw("ge", col, _c(0.0)), b.pw("le", col, _c(w - 1))),
                      b.pw("mul", b.pw("ge", row, _c(0.0)), b.pw("le", row, _c(h - 1))))
        at = b.pw("add", b.pw("mul", b.pw("clamp", row, lo=0.0, hi=float(h - 1)), _c(w)),
                  b.pw("clamp", col, lo=0.0, hi=float(w - 1)))
        index = b.pw("cast", b.pw("add", at, channels), dtype="int64")
        return b.pw("mul", b.gather(flat, index, 2, "gather", (n, c, points)), inside)

    if mode == "nearest":  # torch rounds half to even (nearbyint)
        out = read(round_half_even(b, ix), round_half_even(b, iy))
    else:
        x0, y0 = b.pw("floor", ix), b.pw("floor", iy)
        x1, y1 = b.pw("add", x0, _c(1.0)), b.pw("add", y0, _c(1.0))
        out = None
        for col, row, weight in ((x0, y0, b.pw("mul", b.pw("sub", x1, ix), b.pw("sub", y1, iy))),
                                 (x1, y0, b.pw("mul", b.pw("sub", ix, x0), b.pw("sub", y1, iy))),
                                 (x0, y1, b.pw("mul", b.pw("sub", x1, ix), b.pw("sub", iy, y0))),
                                 (x1, y1, b.pw("mul", b.pw("sub", ix, x0), b.pw("sub", iy, y0)))):
            term = b.pw("mul", read(col, row), weight)
            out = term if out is None else b.pw("add", out, term)
    return _leaf_view(ctx, out, f".reshape({n}, {c}, {ho}, {wo})", (n, c, ho, wo))


RESAMPLE_HANDLERS = {
    "affine_grid": _affine_grid, "grid_sample": _grid_sample,
    "interpolate": _interpolate, "upsample": _interpolate,
    "upsample_nearest": _upsample_fixed("nearest", None), "upsample_bilinear": _upsample_fixed("bilinear", True),
    **{f"upsample_nearest{n}d": _aten_upsample("nearest", False) for n in (1, 2, 3)},
    **{f"_upsample_nearest_exact{n}d": _aten_upsample("nearest-exact", False) for n in (1, 2, 3)},
    "upsample_linear1d": _aten_upsample("linear", True), "upsample_bilinear2d": _aten_upsample("bilinear", True),
    "upsample_trilinear3d": _aten_upsample("trilinear", True),
}


def resample_module(ctx, module: nn.Module, args, kwargs):
    """nn.Upsample and its subclasses (UpsamplingNearest2d, UpsamplingBilinear2d); None for other modules."""
    if not isinstance(module, nn.Upsample):
        return None
    x = args[0] if args else kwargs.get("input")
    return resample(ctx, x, module.size, module.scale_factor, module.mode, module.align_corners,
                    getattr(module, "recompute_scale_factor", None))
