"""Resampling over the trailing spatial dims: ``F.interpolate`` (and the deprecated
``F.upsample``), the ``nn.Upsample`` modules (``UpsamplingNearest2d``,
``UpsamplingBilinear2d``), and the ``upsample_*`` ops a dynamo capture records for them.

Each becomes one "resample" node (a kernel of its own, _gen_resample). Its attributes fix
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
from ._canon_util import _bind, _static

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


RESAMPLE_HANDLERS = {
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
