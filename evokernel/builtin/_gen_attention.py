"""Fused attention: ``softmax(chain(q @ k^T)) @ v`` in one kernel with an online softmax,
the scores never written to memory (FlashAttention's idea); or ``chain(q @ k^T) @ v``
with no softmax (ReLU attention).

``chain`` is whatever pointwise work the reference does on the scores between the two
matmuls: a scale, a causal mask (index values), a boolean mask (``masked_fill`` or
``where``), an additive mask, a ReLU. It is emitted on each [BLOCK_M, BLOCK_N] score
tile, its tensor operands read at the tile's (query, key) positions through broadcast
strides. One program owns BLOCK_M queries of one (batch, head): it walks the keys in
BLOCK_N steps, keeping the running row maximum and sum of exponentials, and rescales
its [BLOCK_M, head dim] accumulator whenever the maximum grows. Keys and values shared
by a group of query heads (grouped-query attention) are read at head // group.

fp32 operands take their products as the matmul family does (``precision``): "3xtf32"
splits each tile into TF32 high and low parts in registers, three TF32 tensor-core
products per pair, fp32 to within the lo*lo term; "auto" takes IEEE fp32 products (TF32
where torch's TF32 switch for matmuls is on). Half and bfloat16 operands go to the
tensor cores as they are, accumulating in fp32.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import replace

from ._build import Builder
from ._config import Config
from ._emit import TF32_ROUND, Emitter, StageCode, load_other, out_dtype_expr, scalar_sources, wrap_params
from ._gen_elementwise import SPAN_HELPER
from ._gen_matmul import EpilogueEmitter
from ._ir import Node, Plan, Ref
from ._pointwise import POINTWISE

__all__ = ["fuse_attention", "match_attention", "generate_attention", "MAX_HEAD_DIM"]

MAX_HEAD_DIM = 256  # q/k and v head dims the kernel keeps in registers (one tile each)
_FLOATS = ("float16", "bfloat16", "float32")
_TRANSPOSES = (".transpose(-2, -1)", ".transpose(-1, -2)", ".mT")


# ---------------------------------------------------------------- recognising the pattern
def match_attention(b: Builder, mm2: Node, users: dict[int, list[int]], live: set[str]) -> Node | None:
    """The attention node replacing ``mm2`` (= probs @ v) and everything only it reads
    back to the score matmul, or None when ``mm2`` does not end an attention. ``live``:
    the inputs the graph reads (an input's repeat is read unrepeated only if it is one:
    the plan's inputs were fixed before scheduling)."""
    p_ref, v_ref = mm2.args
    if p_ref.kind != "node" or mm2.id not in users:
        return None
    softmax = _softmax_of(b, b.nodes[p_ref.value])
    t_ref, inner = softmax if softmax else (p_ref, ())
    chain, mm1 = _score_chain(b, t_ref)
    if mm1 is None or (not softmax and not chain):
        return None
    if not softmax and (len(b.shape(mm1.args[1])) < 3 or len(b.shape(v_ref)) < 3):
        return None  # keys and values shared by every row: a two-layer MLP, which the matmul kernels serve
    spine = _depends_on(b, chain, mm1.id)
    score_shape = tuple(mm1.shape)
    own = set(spine) | set(inner) | {mm1.id}
    for node_id in own:
        outside = [u for u in users.get(node_id, []) if u not in own and u != mm2.id]
        if outside:  # the scores or probabilities are read elsewhere (returned attention weights)
            return None
    if any(tuple(b.nodes[i].shape) != score_shape for i in spine) or tuple(b.nodes[p_ref.value].shape) != score_shape:
        return None
    rank = len(score_shape)
    for node_id in chain:
        node = b.nodes[node_id]
        if node.op == "iota" and node.attr("dim") + rank - len(node.shape) < rank - 2:
            return None  # an index along a batch dim: not a (query, key) position
    q_ref, kt_ref = mm1.args
    shapes = [b.shape(r) for r in (q_ref, kt_ref, v_ref)]
    if any(len(s) < 2 for s in shapes) or shapes[0][-1] > MAX_HEAD_DIM or shapes[2][-1] > MAX_HEAD_DIM:
        return None
    dtypes = {b.dtype(r) for r in (q_ref, kt_ref, v_ref)}
    if len(dtypes) != 1 or dtypes.pop() not in _FLOATS:
        return None
    k_arg, layout, group, v_arg = _keys_and_values(b, kt_ref, v_ref, live)
    args: list[Ref] = [q_ref, k_arg, v_arg]
    rewritten = []
    for node_id in chain:
        node = b.nodes[node_id]
        new_args = []
        for a in node.args:
            if a.kind == "node" and a.value == mm1.id:
                new_args.append(Ref("score", 0))
            elif a.kind == "node" and a.value in chain:
                new_args.append(a)
            elif a.kind == "const":
                new_args.append(a)
            else:  # an input, a runtime scalar or another kernel's value: an operand of the kernel
                if a not in args[3:]:
                    args.append(a)
                new_args.append(Ref("arg", 3 + args[3:].index(a)))
        rewritten.append(replace(node, args=tuple(new_args)))
    masks = _masks(b, mm1.id, t_ref, bool(softmax))
    causal = _causal_offset(b, masks)
    # another mask (a tensor): a key block it masks whole is skipped at run time
    skip = next(((rewritten[chain.index(m.id)].args[0], b.nodes[m.id].args[2] == Ref("const", float("-inf")))
                 for m in masks if _causal_where(b, m) is None and not _reads(b, m.args[0], mm1.id)), None)
    attrs = {"chain": tuple(rewritten), "chain_out": t_ref.value if t_ref.value != mm1.id else -1,
             "softmax": bool(softmax), "k_layout": layout, "kv_group": group, "causal": causal,
             "skip_unless": skip if causal is None else None,
             "out_perm": _consumer_perm(b, mm2, users)}
    return Node(id=mm2.id, op="attention", args=tuple(args), attrs=tuple(sorted(attrs.items())), shape=mm2.shape)


_LEADING_PERM = re.compile(r"^\.(permute|transpose)\(([-\d, ]+)\)")


def _consumer_perm(b: Builder, mm2: Node, users) -> tuple[int, ...] | None:
    """The permutation every reader applies first to a (batch, heads, queries, dim) result
    (heads back beside the dim: .transpose(1, 2), .permute(0, 2, 1, 3)...): the kernel then
    writes that layout, and the readers' .contiguous() or .reshape copies nothing."""
    if len(mm2.shape) != 4 or not users.get(mm2.id):
        return None
    perms = set()
    for u in users[mm2.id]:
        node = b.nodes[u]
        found = _LEADING_PERM.match(node.attr("suffix") or "") if node.op == "view" else None
        if found is None:
            return None
        dims = [int(d) % 4 for d in found.group(2).split(",")]
        if found.group(1) == "transpose":
            if len(dims) != 2:
                return None
            perm = [0, 1, 2, 3]
            perm[dims[0]], perm[dims[1]] = perm[dims[1]], perm[dims[0]]
            dims = perm
        perms.add(tuple(dims))
    if len(perms) != 1:
        return None
    perm = perms.pop()
    return perm if sorted(perm) == [0, 1, 2, 3] and perm[3] == 3 and perm != (0, 1, 2, 3) else None


_KEEPS_MINUS_INF = ("add", "sub", "where", "mul", "div")  # with the score first (and a positive constant)


def _masks(b: Builder, score: int, t_ref: Ref, softmax: bool) -> list[Node]:
    """The where(cond, s, -inf) / where(cond, -inf, s) nodes on the chain from the scores to t
    after which nothing lets a -inf score contribute again (a key they mask adds nothing: the
    kernel may skip it)."""
    path, ref = [], t_ref
    while ref.kind == "node" and ref.value != score:  # the chain from t back to the scores, one score operand a step
        node = b.nodes[ref.value]
        inner = [a for a in node.args if a.kind == "node" and (a.value == score or _reads(b, a, score))]
        if len(inner) != 1:
            return []
        path.append((node, inner[0]))
        ref = inner[0]
    masks = []
    for i, (node, spine) in enumerate(path):  # t first
        after = [n for n, _ in path[:i]]
        if not softmax and after and after[0].op == "relu":  # relu(-inf) = 0: no contribution either
            after = after[1:]
        if not all(_keeps_minus_inf(b, n) for n in after):
            break
        if _minus_inf_branch(node, spine) is not None:
            masks.append(node)
    return masks


def _minus_inf_branch(node: Node, spine: Ref) -> int | None:
    """1 or 2: the branch of a where that is -inf, the other being the scores; else None."""
    minus_inf = Ref("const", float("-inf"))
    if node.op != "where" or node.args[0] == spine:
        return None
    for branch in (1, 2):
        if node.args[branch] == minus_inf and node.args[3 - branch] == spine:
            return branch
    return None


def _causal_offset(b: Builder, masks: list[Node]) -> int | None:
    """c when a mask is F.scaled_dot_product_attention's is_causal, where(key - query <= c, s, -inf):
    the kernel then stops at the diagonal."""
    for node in masks:
        offset = _causal_where(b, node)
        if offset is not None:
            return offset
    return None


def _reads(b: Builder, ref: Ref, target: int) -> bool:
    stack, seen = [ref], set()
    while stack:
        r = stack.pop()
        if r.kind != "node" or r.value in seen:
            continue
        if r.value == target:
            return True
        seen.add(r.value)
        stack.extend(b.nodes[r.value].args)
    return False


def _causal_where(b: Builder, node: Node) -> int | None:
    if node.args[2] != Ref("const", float("-inf")) or node.args[0].kind != "node":
        return None
    keep = b.nodes[node.args[0].value]
    if keep.op != "le" or keep.args[1].kind != "const" or keep.args[0].kind != "node":
        return None
    diff = b.nodes[keep.args[0].value]
    if diff.op != "sub" or any(a.kind != "node" for a in diff.args):
        return None
    key, query = (b.nodes[a.value] for a in diff.args)
    axes = [n.attr("dim") - len(n.shape) if n.op == "iota" else None for n in (key, query)]
    if axes != [-1, -2] or keep.args[1].value != int(keep.args[1].value):
        return None
    return int(keep.args[1].value)


def _keeps_minus_inf(b: Builder, node: Node) -> bool:
    """The op maps a -inf score to -inf (the score is its first operand)."""
    if node.op not in _KEEPS_MINUS_INF:
        return False
    if node.op == "where":
        return Ref("const", float("-inf")) in node.args[1:]
    if node.op in ("mul", "div"):
        other = node.args[1]
        return other.kind == "const" and other.value > 0 and node.args[0].kind == "node"
    other = node.args[1]  # add/sub of a mask: finite where the mask is, -inf stays -inf
    return node.args[0].kind == "node" and not (other.kind == "const" and abs(other.value) == float("inf"))


def _softmax_of(b: Builder, p: Node) -> tuple[Ref, tuple[int, ...]] | None:
    """(the softmax's input, its own node ids) when ``p`` is softmax over the last dim as
    _canon_util._softmax writes it: exp(t - max(t)) / sum(exp(t - max(t)))."""
    if p.op != "div" or any(a.kind != "node" for a in p.args):
        return None
    e, z = (b.nodes[a.value] for a in p.args)
    if e.op != "exp" or z.op != "reduce" or z.attr("kind") != "sum" or z.args[0] != Ref("node", e.id):
        return None
    if e.args[0].kind != "node":
        return None
    shifted = b.nodes[e.args[0].value]
    if shifted.op != "sub" or shifted.args[1].kind != "node":
        return None
    t_ref, mx = shifted.args[0], b.nodes[shifted.args[1].value]
    if mx.op != "reduce" or mx.attr("kind") != "max" or mx.args[0] != t_ref or t_ref.kind != "node":
        return None
    rank = len(p.shape)
    for red in (mx, z):
        if (red.attr("start"), red.attr("stop"), red.attr("keepdim")) != (rank - 1, rank, True):
            return None
    return t_ref, (p.id, e.id, z.id, shifted.id, mx.id)


def _score_chain(b: Builder, t_ref: Ref) -> tuple[list[int], Node | None]:
    """The pointwise nodes ``t`` is computed by, back to one score matmul (ids in graph
    order), and that matmul; (…, None) when there is not exactly one."""
    chain, matmuls, stack = set(), set(), [t_ref]
    while stack:
        ref = stack.pop()
        if ref.kind != "node" or ref.value in chain:
            continue
        node = b.nodes[ref.value]
        if node.op == "matmul" and tuple(node.shape) == tuple(b.shape(t_ref)):
            matmuls.add(node.id)
        elif node.op in POINTWISE:
            chain.add(node.id)
            stack.extend(node.args)
    if len(matmuls) != 1:
        return [], None
    mm1 = b.nodes[matmuls.pop()]
    return sorted(chain), mm1


def _depends_on(b: Builder, chain: list[int], root: int) -> list[int]:
    out: set[int] = set()
    for node_id in chain:  # graph order: arguments come first
        if any(a.kind == "node" and (a.value == root or a.value in out) for a in b.nodes[node_id].args):
            out.add(node_id)
    return sorted(out)


def _keys_and_values(b: Builder, kt_ref: Ref, v_ref: Ref, live: set[str]) -> tuple[Ref, str, int, Ref]:
    """(keys operand, "kt" for (…, E, S) or "k" for (…, S, E), group, values operand):
    keys and values repeated per query head (repeat_interleave on the head dim) are
    read unrepeated, each serving a group of query heads."""
    from ._canon_attn import repeat_of

    keys = None
    if kt_ref.kind == "node":
        view = b.nodes[kt_ref.value]
        if view.op == "view" and view.attr("suffix") in _TRANSPOSES and len(view.args) == 1:
            keys = view.args[0]
    elif kt_ref.kind == "leaf":
        source = b.leaf_by_name(kt_ref.value).source
        for suffix in _TRANSPOSES:
            if source.endswith(suffix) and source[:-len(suffix)] in b.leaves:
                keys = Ref("leaf", b.leaves[source[:-len(suffix)]].name)
    k_rep, v_rep = (repeat_of(b, keys) if keys else None), repeat_of(b, v_ref)
    bases_live = all(r[0].kind == "node" or r[0].value in live for r in (k_rep, v_rep) if r)
    if k_rep and v_rep and k_rep[1:] == v_rep[1:] and k_rep[1] == -3 and bases_live:
        return k_rep[0], "k", k_rep[2], v_rep[0]
    return kt_ref, "kt", 1, v_ref


def fuse_attention(b: Builder, nodes: list[Node], roots: list[Ref]) -> list[Node]:
    """Rewrite every ``softmax(chain(q @ kt)) @ v`` (or ``chain(q @ kt) @ v`` with no
    softmax, as ReLU attention) whose intermediates nothing else reads into one
    "attention" anchor (see _gen_attention), and return the nodes still reachable from
    ``roots``. The anchor takes the id of the second matmul, so its users are unchanged."""
    for node_id in [n.id for n in nodes if n.op == "matmul"]:
        users = _users(nodes)
        if node_id not in users:  # the first matmul of an attention fused before
            continue
        live = {a.value for n in nodes for a in n.args if a.kind == "leaf"}
        fused = match_attention(b, b.nodes[node_id], users, live)
        if fused is not None:
            b.nodes[node_id] = fused
            nodes = _reachable(b, roots)
    return nodes


def _users(nodes: list[Node]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {n.id: [] for n in nodes}
    for n in nodes:
        for a in n.args:
            if a.kind == "node" and a.value in out:
                out[a.value].append(n.id)
    return out


def _reachable(b: Builder, roots: list[Ref]) -> list[Node]:
    seen, stack = set(), [r for r in roots if r.kind == "node"]
    while stack:
        ref = stack.pop()
        if ref.value in seen:
            continue
        seen.add(ref.value)
        stack.extend(a for a in b.nodes[ref.value].args if a.kind == "node")
    return [n for n in b.nodes if n.id in seen]


# ---------------------------------------------------------------- code generation
class _ScoreEmitter(Emitter):
    """The score chain on a [BLOCK_M, BLOCK_N] tile ``s``: operands read at the tile's
    (query, key) positions of their (B0, B1, Tq, Tk) broadcast views."""

    def __init__(self, plan: Plan, att: Node):
        super().__init__(plan, indent=2)
        self.att = att
        self.chain = {n.id: n for n in att.attr("chain")}
        self.used: list[str] = []

    def value(self, ref: Ref, ctx: str = "tile") -> str:
        if ref.kind == "score":
            return "s"
        if ref.kind == "arg":
            return self.value(self.att.args[ref.value], ctx)
        if ref.kind == "node":
            key = self.memo_key(ref, ctx)
            if key not in self.memo:
                self.memo[key] = self.compute(self.chain[ref.value], ctx)
            return self.memo[key]
        return super().value(ref, ctx)

    def load_leaf(self, name: str, ctx: str) -> str:
        self.used.append(name)
        var = f"l_{name}"
        self.emit(f"{var} = tl.load(v_sc_{name}_ptr + b0 * stride_{name}_s0 + b1 * stride_{name}_s1 "
                  f"+ offs_m[:, None] * stride_{name}_sm + offs_n[None, :] * stride_{name}_sn, mask=s_mask, "
                  f"other={load_other(self.plan, name)}).to(tl.float32)")
        return var

    def compute(self, node: Node, ctx: str) -> str:
        if node.op == "iota":
            var = f"v{node.id}"
            axis = node.attr("dim") - len(node.shape)  # -1: the key position, -2: the query position
            if node.shape[node.attr("dim")] == 1:
                self.emit(f"{var} = 0.0")
            else:
                self.emit(f"{var} = ({'offs_n[None, :]' if axis == -1 else 'offs_m[:, None]'}).to(tl.float32)")
            return var
        return super().compute(node, ctx)


_OUT_HELPER = '''def _attention_out(shape, dtype, device, perm=None):
    """An empty result of ``shape`` whose .permute(perm) is contiguous (the readers' layout)."""
    if perm is None or len(shape) != len(perm):
        return torch.empty(shape, dtype=dtype, device=device)
    inverse = [perm.index(d) for d in range(len(perm))]
    return torch.empty([shape[p] for p in perm], dtype=dtype, device=device).permute(inverse)
'''

_ATTENTION_DOT = '''@triton.jit
def _attention_dot(a, b, PRECISION: tl.constexpr, TERMS: tl.constexpr):
    """a @ b in fp32: 3xTF32 on split fp32 tiles, IEEE or TF32 products, or half-precision tensor-core products."""
    if PRECISION == "3xtf32":
        if TERMS == 3:
            out = _dot_3xtf32(a, b)
        else:
            out = tl.dot(_to_tf32(a), _to_tf32(b), input_precision="tf32")
    elif PRECISION == "native":
        out = tl.dot(a, b)
    else:
        out = tl.dot(a, b, input_precision=PRECISION)
    return out
'''

_BATCH_HELPER = '''def _attention_view(t, batch, rows, cols, group=1):
    """t (..., rows, cols) broadcast to batch + (rows, cols) as (B0, B1, rows, cols): the last
    batch dim (divided by ``group`` for key/value heads shared by query heads) and the rest
    folded, zero strides where t broadcasts; a view unless folding needs a copy."""
    batch = tuple(batch) or (1,)
    lead, last = batch[:-1], batch[-1] // group
    return _reshape(t.expand(lead + (last, rows, cols)), _prod(lead), last, rows, cols)
'''

_HEAD = """\
    pid_m = tl.program_id(0)
    pid_b = tl.program_id(1)
    if IDX64:
        pid_b = pid_b.to(tl.int64)
    b0 = pid_b // B1
    b1 = pid_b % B1
    kv1 = b1 // KV_GROUP
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_e = tl.arange(0, BLOCK_E)
    offs_d = tl.arange(0, BLOCK_D)
    q_tile = tl.load(v_q_ptr + b0 * stride_q0 + b1 * stride_q1 + offs_m[:, None] * stride_qm + offs_e[None, :] * stride_qe,
                     mask=(offs_m[:, None] < Tq) & (offs_e[None, :] < E), other=0.0)
    k_base = v_k_ptr + b0 * stride_k0 + kv1 * stride_k1
    v_base = v_v_ptr + b0 * stride_v0 + kv1 * stride_v1
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
"""

_SOFTMAX_INIT = """\
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)  # running row maximum
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)  # running sum of exp(score - m_i)
"""

_LOOP_HEAD = """\
    for start_n in range(0, {hi}, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        s_mask = (offs_m[:, None] < Tq) & (offs_n[None, :] < Tk)
"""

_SCORES = """\
        k_tile = tl.load(k_base + offs_e[:, None] * stride_ke + offs_n[None, :] * stride_kn,
                         mask=(offs_e[:, None] < E) & (offs_n[None, :] < Tk), other=0.0)
        s = _attention_dot(q_tile, k_tile, PRECISION, TERMS)
"""

_SOFTMAX_STEP = """\
        t = tl.where(offs_n[None, :] < Tk, {t}, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(t, 1))
        # a row with every score -inf so far keeps a zero shift (exp(-inf) = 0, no inf - inf)
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp2((t - m_use[:, None]) * 1.4426950408889634)
        alpha = tl.exp2((m_i - m_use) * 1.4426950408889634)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        m_i = m_new
"""

_PLAIN_STEP = """\
        p = tl.where(offs_n[None, :] < Tk, {t}, 0.0)
"""

_LOOP_TAIL = """\
        v_tile = tl.load(v_base + offs_n[:, None] * stride_vn + offs_d[None, :] * stride_vd,
                         mask=(offs_n[:, None] < Tk) & (offs_d[None, :] < DV), other=0.0)
        acc += _attention_dot(p.to(v_tile.dtype), v_tile, PRECISION, TERMS)
"""


def generate_attention(plan: Plan, config: Config, tag: str = "") -> StageCode:
    att = plan.node(plan.anchor_id)
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    softmax = att.attr("softmax")

    score = _ScoreEmitter(plan, att)
    skip = att.attr("skip_unless")  # (the mask's condition, whether nonzero keeps a key)
    keep = score.value(skip[0]) if skip else None
    mask_lines = score.lines[:]
    chain_out = att.attr("chain_out")
    t = "s" if chain_out < 0 else score.value(Ref("node", chain_out))
    chain_lines = score.lines[len(mask_lines):]
    score_leaves = list(dict.fromkeys(score.used))
    epi = EpilogueEmitter(plan, att.id)
    result = epi.value(plan.output)
    epi_leaves = list(dict.fromkeys(epi.used))

    score_strides = [f"stride_{n}_{d}" for n in score_leaves for d in ("s0", "s1", "sm", "sn")]
    epi_strides = [f"stride_{n}_{d}" for n in epi_leaves for d in "bmn"] + ["stride_out_0", "stride_out_1",
                                                                           "stride_out_m", "stride_out_n"]
    params = (["v_q_ptr", "v_k_ptr", "v_v_ptr"] + [f"v_sc_{n}_ptr" for n in score_leaves]
              + [f"{n}_ptr" for n in epi_leaves] + ["out_ptr"] + scalars + ["Tq", "Tk", "E", "DV", "B1", "KV_GROUP"]
              + [f"stride_{r}{d}" for r, dims in (("q", "01me"), ("k", "01ne"), ("v", "01nd")) for d in dims]
              + score_strides + epi_strides)
    kernel_name = f"_attention_kernel{tag}"
    body = _HEAD
    k = ["@triton.jit", f"def {kernel_name}(", *wrap_params(params),
         "    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_D: tl.constexpr,",
         "    PRECISION: tl.constexpr, TERMS: tl.constexpr, IDX64: tl.constexpr,", "):", body.rstrip("\n")]
    if softmax:
        k.append(_SOFTMAX_INIT.rstrip("\n"))
    causal = att.attr("causal")
    if causal is not None:
        k.append(f"    # keys past query + {causal} are masked to -inf: stop at the last block before them")
        k.append(f"    hi = tl.minimum(Tk, (pid_m + 1) * BLOCK_M + {causal})")
    k.append(_LOOP_HEAD.format(hi="Tk" if causal is None else "hi").rstrip("\n"))
    step = [_SCORES]
    if chain_lines:
        step += ["        # the reference's work on the scores, in fp32 registers\n", *(line + "\n" for line in chain_lines)]
    step += [(_SOFTMAX_STEP if softmax else _PLAIN_STEP).format(t=t), _LOOP_TAIL]
    if skip is None:
        k.append("".join(step).rstrip("\n"))
    else:
        # a key block the mask hides from every query of this program adds nothing: skip its loads and products
        k += mask_lines
        test = f"{keep} != 0.0" if skip[1] else f"{keep} == 0.0"
        k.append(f"        if tl.sum(tl.where(s_mask & ({test}), 1, 0)) > 0:")
        k.append(textwrap.indent("".join(step), "    ").rstrip("\n"))
    if softmax:
        k.append("    acc = acc / l_i[:, None]  # a row whose scores were all -inf is 0 / 0 = nan, as in torch")
    k += ["    # the output tile at its (batch, head, query, value dim) strides",
          "    offs_n = offs_d",
          "    mask = (offs_m[:, None] < Tq) & (offs_d[None, :] < DV)"]
    if epi.lines:
        k.append("    # fused epilogue, in fp32 registers")
        k += epi.lines
    k.append(f"    tl.store(out_ptr + b0 * stride_out_0 + b1 * stride_out_1 + offs_m[:, None] * stride_out_m "
             f"+ offs_n[None, :] * stride_out_n, {result}.to(out_ptr.dtype.element_ty), mask=mask)")
    kernel = "\n".join(k) + "\n"
    entry = f"fused_attention{tag}"
    launcher = _launcher(plan, att, config, entry, kernel_name, score_leaves, epi_leaves)
    return StageCode(kernels=(kernel,), launcher=launcher, entry=entry,
                     helpers=(SPAN_HELPER, TF32_ROUND, _ATTENTION_DOT, _BATCH_HELPER, _OUT_HELPER))


def _launcher(plan: Plan, att: Node, c: Config, entry: str, kernel_name: str, score_leaves: list[str],
              epi_leaves: list[str]) -> str:
    """The stage's Python launcher: (B0, B1, rows, cols) views of every operand, the output in its
    readers' layout, the precision mode, and the grid (query blocks, batch x heads)."""
    q_name, k_name, v_name = (a.value for a in att.args[:3])
    names = [leaf.name for leaf in plan.leaves]
    scalars = [f"s{i}" for i in range(len(scalar_sources(plan)))]
    group = att.attr("kv_group")
    # the readers' layout, unless the kernel's own epilogue reads the result
    perm = att.attr("out_perm") if plan.output == Ref("node", att.id) else None
    keys = f"{k_name}.transpose(-2, -1)" if att.attr("k_layout") == "kt" else k_name
    # local names start with v_, which no leaf name does (see _build._identifier)
    l = [f"def {entry}({', '.join(names + scalars)}):",
         f"    v_q, v_k, v_v = {q_name}, {keys}, {v_name}  # v_k: (..., keys, head dim)",
         "    Tq, E = v_q.shape[-2], v_q.shape[-1]",
         "    Tk, DV = v_k.shape[-2], v_v.shape[-1]",
         f"    group = {group}  # query heads per key/value head",
         "    kv_batch = v_k.shape[:-2][:-1] + (v_k.shape[-3] * group,) if group > 1 else v_k.shape[:-2]",
         "    batch = _broadcast_shapes(v_q.shape[:-2], kv_batch, v_v.shape[:-2] if group == 1 else kv_batch)",
         "    out_shape = batch + (Tq, DV)",
         f"    out = _attention_out(out_shape, {out_dtype_expr(plan)}, v_q.device, {perm!r})",
         "    if out.numel() == 0:",
         "        return out",
         "    v_q = _attention_view(v_q, batch, Tq, E)",
         "    v_k = _attention_view(v_k, batch, Tk, E, group)",
         "    v_v = _attention_view(v_v, batch, Tk, DV, group)",
         "    n_batch = v_q.shape[0] * v_q.shape[1]",
         "    v_out = _attention_view(out, batch, Tq, DV)  # a view: the output is contiguous in some order"]
    for n in score_leaves:
        l.append(f"    v_sc_{n} = _attention_view({n}, batch, Tq, Tk)")
    for n in epi_leaves:
        l.append(f"    v_{n}_3d = _reshape({n}.expand(out_shape), n_batch, Tq, DV)")
    l += ["    idx64 = _needs_i64(v_q, v_k, v_v, v_out)",
          "    if v_q.dtype == torch.float32:",
          "        tf32 = v_q.is_cuda and torch.backends.cuda.matmul.allow_tf32  # the reference's matmuls run TF32 too",
          (f"        modes = dict(PRECISION='3xtf32', TERMS=1 if tf32 else 3)" if c.precision == "3xtf32" else
           "        modes = dict(PRECISION='tf32' if tf32 else 'ieee', TERMS=1)"),
          "    else:",
          "        modes = dict(PRECISION='native', TERMS=1)",
          f"    {kernel_name}[(triton.cdiv(Tq, {c.block_m}), n_batch)](",
          f"        v_q, v_k, v_v, {''.join(f'v_sc_{n}, ' for n in score_leaves)}"
          f"{''.join(f'v_{n}_3d, ' for n in epi_leaves)}v_out, {''.join(s + ', ' for s in scalars)}"
          "Tq, Tk, E, DV, v_q.shape[1], group,",
          "        *v_q.stride(), *v_k.stride(), *v_v.stride(),"]
    if score_leaves:
        l.append(f"        {', '.join(f'*v_sc_{n}.stride()' for n in score_leaves)},")
    l += [f"        *({' + '.join(f'list(v_{n}_3d.stride())' for n in epi_leaves)}{' + ' if epi_leaves else ''}"
          "list(v_out.stride())),",
          f"        BLOCK_M={c.block_m}, BLOCK_N={c.block_n}, BLOCK_E=max(16, triton.next_power_of_2(E)),",
          "        BLOCK_D=max(16, triton.next_power_of_2(DV)), IDX64=idx64,",
          f"        num_warps={c.num_warps}, num_stages={c.num_stages}, **modes,",
          "    )",
          "    return out"]
    return "\n".join(l) + "\n"
