"""The builtin families' records (`_families.Family`), registered under their names.

Each names its generator (the `_gen_*` module that writes its kernels), the
`Config` fields it reads, its configuration search space and default (in
`_config`), its retrieval pattern (in `_describe`) and its measure of work (in
`_schedule`).
"""

from __future__ import annotations

from ._config import (Config, attention_default, attention_space, conv_default, conv_space, elementwise_default,
                      elementwise_space, matmul_default, matmul_space, pool_default, pool_space, rnn_default,
                      rnn_space, rows_default, rows_space, scan_default, scan_space)
from ._describe import conv_pattern, host_pattern, matmul_pattern, pool_pattern, rows_pattern, scan_pattern
from ._emit import StageCode
from ._families import Family
from ._gen_attention import generate_attention
from ._gen_conv import generate_conv
from ._gen_elementwise import generate_elementwise
from ._gen_host import generate_host
from ._gen_matmul import generate_matmul
from ._gen_pool import generate_pool
from ._gen_rnn import generate_rnn
from ._gen_rows import generate_rows
from ._gen_scan import generate_scan
from ._ir import Plan
from ._schedule import attention_work, conv_work, host_work, matmul_work, rnn_work, rows_work


def _generate_host(plan: Plan, config: Config | None, tag: str) -> StageCode:
    return generate_host(plan, tag)  # library calls and host-side ops: nothing to configure


ELEMENTWISE = Family("elementwise", generate_elementwise, ("block_n", "num_warps", "inner_grid"), elementwise_space,
                     elementwise_default)
ROWS = Family("rows", generate_rows, ("one_pass", "block_m", "block_n", "num_warps"), rows_space, rows_default,
              rows_pattern, rows_work)
MATMUL = Family("matmul", generate_matmul,
                ("block_m", "block_n", "block_k", "group_m", "num_warps", "num_stages", "split_k", "precision"),
                matmul_space, matmul_default, matmul_pattern, matmul_work)
CONV = Family("conv", generate_conv, ("block_m", "block_n", "block_k", "num_warps", "num_stages", "precision", "gather",
                                      "tile2d"),
              conv_space, conv_default, conv_pattern, conv_work)
POOL = Family("pool", generate_pool, ("block_n", "num_warps"), pool_space, pool_default, pool_pattern)
SCAN = Family("scan", generate_scan, ("block_m", "block_n", "num_warps"), scan_space, scan_default, scan_pattern)
RNN = Family("rnn", generate_rnn, ("one_pass", "split_n", "block_m", "block_n", "block_k", "num_warps", "precision"),
             rnn_space, rnn_default, work=rnn_work)
ATTENTION = Family("attention", generate_attention, ("block_m", "block_n", "num_warps", "num_stages", "precision"),
                   attention_space, attention_default, work=attention_work)
HOST = Family("host", _generate_host, pattern=host_pattern, work=host_work)
