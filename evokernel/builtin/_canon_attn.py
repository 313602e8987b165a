"""Lowering of the attention modules and of the shape ops models put between layers.

``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``
and their stacks become projections (matmuls), scaled-dot-product attention (``sdpa_impl``: a matmul,
the score chain, a softmax and a matmul, which the scheduler fuses into one attention
kernel, see _gen_attention.fuse_attention), layer norms and pointwise ops, all in eval mode
(dropout is the identity there). ``split``/``chunk`` of computed values and
``repeat_interleave`` are views or copies made in ``forward``.
"""

from __future__ import annotations

import math

import torch.nn as nn
import torch.nn.functional as F

from ._build import Builder, ComputedView, Reject
from ._canon_nn import _leaf_view, im2col_impl
from ._canon_util import _bind, filled, _layer_norm_impl, _softmax, _static, matmul, transposed
from ._ir import Ref, TensorSpec

__all__ = ["ATTN_HANDLERS", "attention_module", "repeat_heads", "repeat_of", "REPEAT_ATTR", "sdpa_impl"]

REPEAT_ATTR = "repeat"  # a view node's (dim, times) when it repeats each slice along dim (repeat_interleave)


def _const(value: float) -> Ref:
    return Ref("const", float(value))


def _view(ctx, ref, suffix: str, shape) -> Ref:
    """ref + suffix as a view of an input or of a computed value's buffer."""
    return _leaf_view(ctx, ctx.ref(ref), suffix, tuple(shape))


def _module_param(ctx, module: nn.Module, param, name: str):
    """A parameter (or None) of ``module`` or of one of its submodules ("out_proj.weight")."""
    owner = module
    *path, last = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    return None if getattr(owner, last, None) is None else param(name)


def linear(ctx, x, weight, bias) -> Ref:
    out = matmul(ctx, ctx.ref(x), transposed(ctx, ctx.ref(weight)))
    return ctx.b.pw("add", out, ctx.ref(bias)) if bias is not None else out


def rows_of(ctx, ref: Ref, start: int, stop: int) -> Ref:
    """Rows [start, stop) of a 2-D parameter, or entries of a vector: a view of the input."""
    shape = ctx.b.shape(ref)
    return _view(ctx, ref, f"[{start}:{stop}]", (stop - start,) + tuple(shape[1:]))


# ---------------------------------------------------------------- repeat, split, chunk
def repeat_heads(ctx, ref: Ref, times: int, dim: int) -> Ref:
    """``ref.repeat_interleave(times, dim)``: each slice along ``dim`` ``times`` times, a
    copy made in forward (unsqueeze, expand, flatten). A computed value's view node
    records (dim, times) so the attention kernel can read the unrepeated keys instead."""
    shape = tuple(ctx.b.shape(ref))
    rank = len(shape)
    dim %= rank
    if times == 1:
        return ref
    out = shape[:dim] + (shape[dim] * times,) + shape[dim + 1:]
    suffix = _repeat_suffix(shape, dim, times)
    if ref.kind == "leaf":
        return _view(ctx, ref, suffix, out)
    b: Builder = ctx.b
    return b._add("view", (ref,), {"suffix": suffix, "regroup": None, REPEAT_ATTR: (dim - rank, times)}, out,
                  b.dtypes[ref.value])


def _repeat_suffix(shape: tuple[int, ...], dim: int, times: int) -> str:
    wide = shape[:dim + 1] + (times,) + shape[dim + 1:]
    return f".unsqueeze({dim + 1}).expand({', '.join(map(str, wide))}).flatten({dim}, {dim + 1})"


def repeat_of(b: Builder, ref: Ref) -> tuple[Ref, int, int] | None:
    """(the unrepeated tensor, dim counted from the end, times) when ``ref`` is repeat_heads' result."""
    if ref.kind == "node":
        node = b.nodes[ref.value]
        rep = node.attr(REPEAT_ATTR) if node.op == "view" else None
        return (node.args[0], rep[0], rep[1]) if rep else None
    if ref.kind != "leaf":
        return None
    for base in b.leaves.values():  # an input's repeat is a view of it: its source is the input's and a suffix
        shape = base.spec.shape
        for dim in range(len(shape)):
            times = b.leaf_by_name(ref.value).spec.shape[dim] // max(1, shape[dim])
            if times > 1 and b.leaf_by_name(ref.value).source == base.source + _repeat_suffix(shape, dim, times):
                return Ref("leaf", base.name), dim - len(shape), times
    return None


def _repeat_interleave(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "repeats", "dim", "output_size"], {"dim": None, "output_size": None})
    repeats = _static(a["repeats"], "repeats")
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        raise Reject("repeat_interleave: only a constant integer count of repeats is supported")
    x = ctx.ref(a["input"])
    if a["dim"] is None:
        raise Reject("repeat_interleave without dim (of the flattened tensor) is not supported")
    return repeat_heads(ctx, x, repeats, int(_static(a["dim"], "dim")))


def tiled(ctx, ref: Ref, sizes: tuple[int, ...]) -> Ref:
    """``ref.repeat(*sizes)``: the whole tensor ``sizes[i]`` times along each dim (the sizes beyond
    its rank as new leading dims), a copy made in forward: per tiled dim a new dim before it,
    expanded and flattened into it, so element k * n + j of the result is element j of the input."""
    shape = tuple(ctx.b.shape(ref))
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise Reject(f"repeat: {len(sizes)} sizes for a tensor of {len(shape)} dims")
    cur = (1,) * lead + shape
    suffix = f".reshape({', '.join(map(str, cur))})" if lead else ""
    for d, times in enumerate(sizes):
        if times != 1:
            wide = cur[:d] + (times,) + cur[d:]
            suffix += f".unsqueeze({d}).expand({', '.join(map(str, wide))}).flatten({d}, {d + 1})"
            cur = cur[:d] + (cur[d] * times,) + cur[d + 1:]
    return _view(ctx, ref, suffix, cur) if suffix else ref


def _repeat_sizes(values, what: str) -> tuple[int, ...]:
    sizes = tuple(_static(v, what) for v in values)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):  # x.repeat((2, 1)), torch.tile(x, (2, 1))
        sizes = tuple(_static(v, what) for v in sizes[0])
    if not sizes or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in sizes):
        raise Reject(f"{what}: only constant positive integer sizes are supported")
    return sizes


def _repeat(ctx, args, kwargs):
    if not args:
        raise Reject("repeat without a tensor")
    return tiled(ctx, ctx.ref(args[0]), _repeat_sizes(tuple(args[1:]) or (kwargs.get("repeats"),), "repeat"))


def _tile(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "dims"])
    x = ctx.ref(a["input"])
    sizes = _repeat_sizes((a["dims"],), "tile")
    rank = len(ctx.b.shape(x))
    return tiled(ctx, x, (1,) * (rank - len(sizes)) + sizes)  # tile pads the sizes with leading ones


def pieces(ctx, x, sizes: list[int], dim: int) -> tuple:
    """Views of consecutive slices of ``x`` along ``dim`` (split and chunk)."""
    shape = tuple(ctx.b.shape(ctx.ref(x)) if not isinstance(x, ComputedView) else x.shape)
    rank = len(shape)
    dim %= rank
    out, start = [], 0
    for size in sizes:
        piece = shape[:dim] + (size,) + shape[dim + 1:]
        suffix = f".narrow({dim}, {start}, {size})"
        if isinstance(x, ComputedView):
            out.append(ComputedView(x.base, x.suffixes + (suffix,), piece, x.extra))
        elif x.kind == "node":
            out.append(ComputedView(x, (suffix,), piece))
        else:
            out.append(_view(ctx, x, suffix, piece))
        start += size
    return tuple(out)


def _split(ctx, args, kwargs):
    a = _bind(args, kwargs, ["tensor", "split_size_or_sections", "dim"], {"dim": 0})
    if "split_size" in kwargs:
        a["split_size_or_sections"] = kwargs["split_size"]
    x = a["tensor"]
    length = (x.shape if isinstance(x, ComputedView) else ctx.b.shape(ctx.ref(x)))[int(_static(a["dim"], "dim"))]
    size = _static(a["split_size_or_sections"], "split size")
    if isinstance(size, int):
        if size <= 0:
            raise Reject("split with a non-positive size")
        sizes = [min(size, length - s) for s in range(0, length, size)]
    else:
        sizes = [int(s) for s in size]
        if sum(sizes) != length:
            raise Reject(f"split sections {sizes} do not add up to {length}")
    return pieces(ctx, x, sizes, int(_static(a["dim"], "dim")))


def _chunk(ctx, args, kwargs):
    a = _bind(args, kwargs, ["input", "chunks", "dim"], {"dim": 0})
    x = a["input"]
    length = (x.shape if isinstance(x, ComputedView) else ctx.b.shape(ctx.ref(x)))[int(_static(a["dim"], "dim"))]
    chunks = int(_static(a["chunks"], "chunks"))
    size = -(-length // chunks)
    sizes = [min(size, length - s) for s in range(0, length, size)]
    return pieces(ctx, x, sizes, int(_static(a["dim"], "dim")))


def _pad(ctx, args, kwargs):
    """F.pad in constant mode: of an input, torch's own pad made in forward; of a computed value,
    torch.cat of the value and constant blocks (copies and a fill in forward)
    and narrow views where a pad is negative (a crop)."""
    a = _bind(args, kwargs, ["input", "pad", "mode", "value"], {"mode": "constant", "value": None})
    mode = _static(a["mode"], "mode")
    if mode != "constant":
        raise Reject(f"F.pad with mode={mode!r} is not supported (constant padding is)")
    pads = [int(p) for p in _static(a["pad"], "pad")]
    value = float(_static(a["value"], "value") or 0.0)
    x = ctx.ref(a["input"])
    shape = list(ctx.b.shape(x))
    if len(pads) % 2 or len(pads) // 2 > len(shape):
        raise Reject(f"F.pad with {len(pads)} pad sizes for a rank-{len(shape)} tensor")
    if x.kind == "leaf" and all(p >= 0 for p in pads):
        out = list(shape)
        for i in range(len(pads) // 2):
            out[-1 - i] += pads[2 * i] + pads[2 * i + 1]
        source = ctx.b.leaf_by_name(x.value).source
        return ctx.b.leaf(f"torch.nn.functional.pad({source}, {pads!r}, value={value!r})",
                          TensorSpec(tuple(out), ctx.b.dtype(x)), ctx.b.leaf_by_name(x.value).name + "_pad")
    for i in range(len(pads) // 2):
        dim = len(shape) - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        if lo < 0 or hi < 0:  # a crop: a narrow view
            start, size = max(0, -lo), shape[dim] + min(0, lo) + min(0, hi)
            x = _view(ctx, x, f".narrow({dim}, {start}, {size})", shape[:dim] + [size] + shape[dim + 1:])
            shape[dim] = size
            lo, hi = max(0, lo), max(0, hi)
        if lo or hi:
            parts = []
            for width in (lo, None, hi):
                if width is None:
                    parts.append(x)
                elif width:
                    parts.append(filled(ctx, tuple(shape[:dim] + [width] + shape[dim + 1:]), value, ctx.b.dtype(x)))
            shape[dim] += lo + hi
            x = ctx.b.cat(tuple(parts), dim, tuple(shape))
    return x


def _stack(ctx, args, kwargs):
    """torch.stack: torch.cat of the tensors, each with the new dim (a view), a copy in forward."""
    a = _bind(args, kwargs, ["tensors", "dim"], {"dim": 0})
    parts = [ctx.ref(t) for t in a["tensors"]]
    shape = tuple(ctx.b.shape(parts[0]))
    if any(tuple(ctx.b.shape(p)) != shape for p in parts):
        raise Reject("torch.stack of tensors of different shapes")
    dim = int(_static(a["dim"], "dim")) % (len(shape) + 1)
    wide = shape[:dim] + (1,) + shape[dim:]
    pieces = tuple(_view(ctx, p, f".unsqueeze({dim})", wide) for p in parts)
    return ctx.b.cat(pieces, dim, shape[:dim] + (len(parts),) + shape[dim:])


# ---------------------------------------------------------------- scaled dot-product attention
def _sdpa(ctx, args, kwargs):
    a = _bind(args, kwargs, ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"],
              {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False})
    if _static(a["dropout_p"], "dropout_p"):
        raise Reject("attention dropout is random")
    q, k, v = (ctx.ref(a[n]) for n in ("query", "key", "value"))
    mask = None if a["attn_mask"] is None else ctx.ref(a["attn_mask"])
    return sdpa_impl(ctx, q, k, v, mask, bool(_static(a["is_causal"], "is_causal")), _static(a["scale"], "scale"),
                     bool(_static(a["enable_gqa"], "enable_gqa")))


def sdpa_impl(ctx, q: Ref, k: Ref, v: Ref, mask: Ref | None, causal: bool, scale, gqa: bool = False,
              with_probs: bool = False):
    """softmax(q @ k^T * scale + mask) @ v as matmul, score chain, softmax and matmul: the
    scheduler fuses them into one attention kernel (see _gen_attention.fuse_attention).
    ``mask``: bool (True keeps a score) or additive; ``gqa``: k and v have fewer heads
    (dim -3), each shared by a group of query heads. With ``with_probs``, (output, probs)."""
    hq, hk = ctx.b.shape(q)[-3] if len(ctx.b.shape(q)) > 2 else 1, ctx.b.shape(k)[-3] if len(ctx.b.shape(k)) > 2 else 1
    if gqa and hq != hk:
        if hq % hk:
            raise Reject(f"grouped-query attention: {hq} query heads do not split into {hk} key/value heads")
        k, v = repeat_heads(ctx, k, hq // hk, -3), repeat_heads(ctx, v, hq // hk, -3)
    e = ctx.b.shape(q)[-1]
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    scores = ctx.b.pw("mul", matmul(ctx, q, transposed(ctx, k)), _const(scale))
    plane = tuple(ctx.b.shape(scores)[-2:])
    if causal:
        keep = ctx.b.pw("le", ctx.b.pw("sub", ctx.b.iota(1, plane), ctx.b.iota(0, plane)), _const(0))
        scores = ctx.b.pw("where", keep, scores, _const(-math.inf))
    if mask is not None:
        if ctx.b.is_bool(mask):
            scores = ctx.b.pw("where", mask, scores, _const(-math.inf))
        else:
            scores = ctx.b.pw("add", scores, mask)
    probs = _softmax(ctx, [scores], {"dim": -1})
    out = matmul(ctx, probs, v)
    return (out, probs) if with_probs else out



ATTN_HANDLERS = {"scaled_dot_product_attention": _sdpa, "repeat_interleave": _repeat_interleave, "split": _split, "chunk": _chunk, "pad": _pad,
                 "stack": _stack, "repeat": _repeat, "tile": _tile}


# ---------------------------------------------------------------- multi-head attention
def _heads(ctx, ref: Ref, batch_first: bool, heads: int) -> Ref:
    """Projected tokens (L, N, E) or (N, L, E) viewed as (N, heads, L, E / heads)."""
    d0, d1, e = ctx.b.shape(ref)
    hd = e // heads
    n, length = (d0, d1) if batch_first else (d1, d0)
    perm = "(0, 2, 1, 3)" if batch_first else "(1, 2, 0, 3)"
    return _view(ctx, ref, f".view({d0}, {d1}, {heads}, {hd}).permute{perm}", (n, heads, length, hd))


def _packed_heads(ctx, packed: Ref, batch_first: bool, heads: int, parts: int = 3) -> tuple[Ref, ...]:
    """q, k, v (or k, v) as (N, heads, L, hd) views of one (.., .., parts * E) projection."""
    d0, d1, width = ctx.b.shape(packed)
    hd = width // parts // heads
    n, length = (d0, d1) if batch_first else (d1, d0)
    perm = "(0, 2, 1, 3)" if batch_first else "(1, 2, 0, 3)"
    return tuple(_view(ctx, packed, f".view({d0}, {d1}, {parts}, {heads}, {hd})[:, :, {i}].permute{perm}",
                       (n, heads, length, hd)) for i in range(parts))


def _mask_additive(ctx, mask: Ref) -> Ref:
    """MultiheadAttention's masks: bool True means "may not attend" (-inf); floats are added."""
    if ctx.b.is_bool(mask):
        return ctx.b.pw("where", mask, _const(-math.inf), _const(0.0))
    return mask


def mha_impl(ctx, module: nn.MultiheadAttention, param, query, key, value, key_padding_mask=None,
             need_weights=True, attn_mask=None, average_attn_weights=True, is_causal=False):
    """(output, weights or None) of ``module`` in eval mode, as torch computes them."""
    if module.bias_k is not None or module.add_zero_attn:
        raise Reject("MultiheadAttention with add_bias_kv or add_zero_attn is not supported")
    if module.training and module.dropout:
        raise Reject("MultiheadAttention dropout in training mode is random")
    q_in, k_in, v_in = (ctx.ref(t) for t in (query, key, value))
    if len(ctx.b.shape(q_in)) != 3:
        raise Reject("MultiheadAttention on unbatched (2-D) inputs is not supported")
    e, heads, bf = module.embed_dim, module.num_heads, module.batch_first
    bias = _module_param(ctx, module, param, "in_proj_bias")
    if module._qkv_same_embed_dim:
        w = param("in_proj_weight")
        rows = lambda t, start, stop: None if t is None else rows_of(ctx, t, start * e, stop * e)  # noqa: E731
        if q_in == k_in == v_in:  # self-attention: one GEMM for the three projections
            q, k, v = _packed_heads(ctx, linear(ctx, q_in, w, bias), bf, heads)
        elif k_in == v_in:  # attention to memory (a decoder's): one GEMM for keys and values
            q = _heads(ctx, linear(ctx, q_in, rows(w, 0, 1), rows(bias, 0, 1)), bf, heads)
            k, v = _packed_heads(ctx, linear(ctx, k_in, rows(w, 1, 3), rows(bias, 1, 3)), bf, heads, parts=2)
        else:
            q, k, v = (_heads(ctx, linear(ctx, t, rows(w, i, i + 1), rows(bias, i, i + 1)), bf, heads)
                       for i, t in enumerate((q_in, k_in, v_in)))
    else:
        bs = [None if bias is None else rows_of(ctx, bias, i * e, (i + 1) * e) for i in range(3)]
        q, k, v = (_heads(ctx, linear(ctx, t, param(f"{p}_proj_weight"), bi), bf, heads)
                   for t, p, bi in zip((q_in, k_in, v_in), "qkv", bs))
    n, _, length, _ = ctx.b.shape(q)
    source = ctx.b.shape(k)[2]
    causal = bool(_static(is_causal, "is_causal"))
    if causal and attn_mask is None:
        raise Reject("MultiheadAttention with is_causal=True needs attn_mask (torch raises without it)")
    if causal and key_padding_mask is None and not _static(need_weights, "need_weights"):
        attn_mask = None  # torch trusts the hint: scaled-dot-product attention's causal mask instead of attn_mask
    else:
        causal = False
    mask = None
    if attn_mask is not None:
        mask = _mask_additive(ctx, ctx.ref(attn_mask))
        if len(ctx.b.shape(mask)) == 3:  # (N * heads, L, S)
            mask = _view(ctx, mask, f".view({n}, {heads}, {length}, {source})", (n, heads, length, source))
    if key_padding_mask is not None:
        pad = _mask_additive(ctx, ctx.ref(key_padding_mask))
        pad = _view(ctx, pad, f".view({n}, 1, 1, {source})", (n, 1, 1, source))
        mask = pad if mask is None else ctx.b.pw("add", mask, pad)
    out, probs = sdpa_impl(ctx, q, k, v, mask, causal, None, with_probs=True)
    if bf:
        tokens = _view(ctx, out, f".permute(0, 2, 1, 3).reshape({n}, {length}, {e})", (n, length, e))
    else:
        tokens = _view(ctx, out, f".permute(2, 0, 1, 3).reshape({length}, {n}, {e})", (length, n, e))
    result = linear(ctx, tokens, param("out_proj.weight"), _module_param(ctx, module, param, "out_proj.bias"))
    weights = None
    if _static(need_weights, "need_weights"):
        weights = probs
        if _static(average_attn_weights, "average_attn_weights"):
            weights = ctx.b.pw("div", ctx.b.reduce("sum", probs, (1,), False), _const(heads))
    return result, weights


def _mha_call(ctx, module, param, args, kwargs):
    a = _bind(args, kwargs, ["query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
                             "average_attn_weights", "is_causal"],
              {"key_padding_mask": None, "need_weights": True, "attn_mask": None, "average_attn_weights": True,
               "is_causal": False})
    return mha_impl(ctx, module, param, a["query"], a["key"], a["value"], a["key_padding_mask"], a["need_weights"],
                    a["attn_mask"], a["average_attn_weights"], a["is_causal"])


# ---------------------------------------------------------------- transformer layers
def _activation(ctx, layer: nn.Module, x: Ref) -> Ref:
    activation = layer.activation
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return ctx.b.pw("relu", x)
    if activation is F.gelu or (isinstance(activation, nn.GELU) and activation.approximate == "none"):
        return ctx.b.pw("gelu_erf", x)
    if isinstance(activation, nn.GELU):
        return ctx.b.pw("gelu_tanh", x)
    raise Reject(f"{type(layer).__name__} activation {activation!r} is not supported (relu and gelu are)")


def _layer_norm(ctx, norm: nn.LayerNorm, param, prefix: str, x: Ref) -> Ref:
    return _layer_norm_impl(ctx, x, norm.normalized_shape, _module_param(ctx, norm, lambda n: param(f"{prefix}.{n}"),
                                                                         "weight"),
                            _module_param(ctx, norm, lambda n: param(f"{prefix}.{n}"), "bias"), norm.eps)


def _submodule(param, prefix: str):
    """``param`` of the submodule at ``prefix`` ("self_attn")."""
    return lambda n: param(f"{prefix}.{n}")


def _residual_blocks(ctx, layer: nn.Module, param, x, blocks) -> Ref:
    """A transformer layer in eval mode: each (norm name, block) of ``blocks`` in turn with its
    residual and layer norm, the norm before the block when ``norm_first``, after the sum otherwise."""
    if layer.training and any(m.p for m in layer.modules() if isinstance(m, nn.Dropout)):
        raise Reject(f"{type(layer).__name__} dropout in training mode is random")
    x = ctx.ref(x)
    for name, block in blocks:
        norm = lambda h, name=name: _layer_norm(ctx, getattr(layer, name), param, name, h)  # noqa: E731
        x = ctx.b.pw("add", x, block(norm(x))) if layer.norm_first else norm(ctx.b.pw("add", x, block(x)))
    return x


def _feed_forward(ctx, layer: nn.Module, param):
    def block(h: Ref) -> Ref:
        hidden = _activation(ctx, layer, linear(ctx, h, param("linear1.weight"),
                                                _module_param(ctx, layer, param, "linear1.bias")))
        return linear(ctx, hidden, param("linear2.weight"), _module_param(ctx, layer, param, "linear2.bias"))
    return block


def _attention_block(ctx, mha: nn.MultiheadAttention, param, memory=None, mask=None, key_padding_mask=None,
                     is_causal=False):
    """Self-attention of the block's input, or (``memory`` given) its attention to memory."""
    def block(h: Ref) -> Ref:
        source = h if memory is None else memory
        out, _ = mha_impl(ctx, mha, param, h, source, source, key_padding_mask, False, mask, is_causal=is_causal)
        return out
    return block


def encoder_layer_impl(ctx, layer: nn.TransformerEncoderLayer, param, x, src_mask=None, src_key_padding_mask=None):
    """Self-attention and the feed-forward block."""
    return _residual_blocks(ctx, layer, param, x, [
        ("norm1", _attention_block(ctx, layer.self_attn, _submodule(param, "self_attn"), None, src_mask,
                                   src_key_padding_mask)),
        ("norm2", _feed_forward(ctx, layer, param))])


def decoder_layer_impl(ctx, layer: nn.TransformerDecoderLayer, param, x, memory, tgt_mask=None, memory_mask=None,
                       tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False,
                       memory_is_causal=False):
    """Self-attention (masked by tgt_mask), attention to ``memory`` and the feed-forward block."""
    return _residual_blocks(ctx, layer, param, x, [
        ("norm1", _attention_block(ctx, layer.self_attn, _submodule(param, "self_attn"), None, tgt_mask,
                                   tgt_key_padding_mask, tgt_is_causal)),
        ("norm2", _attention_block(ctx, layer.multihead_attn, _submodule(param, "multihead_attn"), ctx.ref(memory),
                                   memory_mask, memory_key_padding_mask, memory_is_causal)),
        ("norm3", _feed_forward(ctx, layer, param))])


_DECODER_ARGS = ["tgt", "memory", "tgt_mask", "memory_mask", "tgt_key_padding_mask", "memory_key_padding_mask",
                 "tgt_is_causal", "memory_is_causal"]


def attention_module(ctx, module: nn.Module, param, args, kwargs):
    """Lower an attention or transformer module; None when ``module`` is none of them."""
    if isinstance(module, nn.MultiheadAttention):
        return _mha_call(ctx, module, param, args, kwargs)
    if isinstance(module, nn.TransformerEncoderLayer):
        a = _bind(args, kwargs, ["src", "src_mask", "src_key_padding_mask", "is_causal"],
                  {"src_mask": None, "src_key_padding_mask": None, "is_causal": False})
        return encoder_layer_impl(ctx, module, param, a["src"], a["src_mask"], a["src_key_padding_mask"])
    if isinstance(module, nn.TransformerEncoder):
        a = _bind(args, kwargs, ["src", "mask", "src_key_padding_mask", "is_causal"],
                  {"mask": None, "src_key_padding_mask": None, "is_causal": False})
        if a["src_key_padding_mask"] is not None and getattr(module, "use_nested_tensor", False):
            # in eval mode torch may run the layers on a nested tensor and return zeros at padded
            # positions, depending on the mask's values and on autograd: not one function of the inputs
            raise Reject("TransformerEncoder with src_key_padding_mask and enable_nested_tensor=True (padded outputs "
                         "zeroed or not depending on the mask's values) is not supported")
        x = a["src"]
        for i, layer in enumerate(module.layers):  # without nested tensors each layer masks the keys itself
            x = encoder_layer_impl(ctx, layer, _submodule(param, f"layers.{i}"), x, a["mask"], a["src_key_padding_mask"])
        return x if module.norm is None else _layer_norm(ctx, module.norm, param, "norm", x)
    if isinstance(module, (nn.TransformerDecoderLayer, nn.TransformerDecoder)):
        a = _bind(args, kwargs, _DECODER_ARGS, {n: None for n in _DECODER_ARGS[2:]})
        masks = {n: a[n] for n in _DECODER_ARGS[2:6]}
        causal = {n: bool(_static(a[n], n)) for n in _DECODER_ARGS[6:]}
        if isinstance(module, nn.TransformerDecoderLayer):
            return decoder_layer_impl(ctx, module, param, a["tgt"], a["memory"], **masks, **causal)
        x, memory = a["tgt"], ctx.ref(a["memory"])
        for i, layer in enumerate(module.layers):
            x = decoder_layer_impl(ctx, layer, _submodule(param, f"layers.{i}"), x, memory, **masks, **causal)
        return x if module.norm is None else _layer_norm(ctx, module.norm, param, "norm", x)
    if isinstance(module, nn.Unfold):
        return im2col_impl(ctx, args[0], module.kernel_size, module.dilation, module.padding, module.stride)
    return None
