"""The text of the Ascend C API notes: what each call does, its arguments, its
constraints and a two-line example, in EvoKernel's own words (written from the
public Ascend C programming-model documentation; no Huawei text is copied).

One entry per name: (name, category, one-line summary, body). The body keeps
to what a kernel author needs when the verifier rejects a call.
"""

from __future__ import annotations

# (name, category, summary, body)
NOTES: tuple[tuple[str, str, str, str], ...] = (
    # ---- concepts (named after the CPU model's error kinds where one exists) ----------------
    ("kernel_structure", "concept", "the shape of an Ascend C vector kernel",
     "An entry is `extern \"C\" __global__ __aicore__ void name(GM_ADDR x, ..., uint32_t n)`; every one of the\n"
     "block_dim blocks runs it on its own AI vector core. The usual body is a class with Init (GlobalTensor\n"
     "views of this block's slice, pipe.InitBuffer for each queue) and Process (a loop over tiles of\n"
     "CopyIn -> Compute -> CopyOut). Compute happens only on LocalTensors in the Unified Buffer (UB).\n"
     "Example:\n"
     "    KernelAdd op; op.Init(x, y, z, n); op.Process();\n"
     "    ops.add_custom(x, y, z, n, block_dim=8)   # Python side: tensors then scalars, in order"),
    ("queue_protocol", "concept", "TPipe/TQue protocol: AllocTensor, EnQue, DeQue, FreeTensor",
     "Data moves between pipeline stages through queues. A producer does buf = q.AllocTensor<T>(), fills it\n"
     "(DataCopy or a vector op) and q.EnQue(buf); the consumer does buf = q.DeQue<T>(), uses it and\n"
     "q.FreeTensor(buf). VECIN queues carry GM->UB copies to compute, VECOUT queues carry results to the\n"
     "UB->GM copy. Every queue needs pipe.InitBuffer(q, num, bytes) first. DeQue without a matching EnQue,\n"
     "a second AllocTensor while all `num` buffers are out, or using a tensor after FreeTensor are errors.\n"
     "Example:\n"
     "    LocalTensor<float> x = inQ.AllocTensor<float>(); DataCopy(x, xGm[off], TILE); inQ.EnQue(x);\n"
     "    x = inQ.DeQue<float>(); Relu(x, x, TILE); ... inQ.FreeTensor(x);"),
    ("queue_empty", "concept", "DeQue on a queue with nothing enqueued",
     "Every DeQue must follow an EnQue of the same queue (the EnQue publishes the buffer to the next\n"
     "stage). Allocate, fill, EnQue, then DeQue, use, FreeTensor; see queue_protocol.\n"
     "Example:\n"
     "    inQ.EnQue(x);            // was missing\n"
     "    x = inQ.DeQue<float>();"),
    ("queue_depth", "concept", "AllocTensor with every buffer of the queue in use",
     "A queue initialised with InitBuffer(q, num, len) hands out at most `num` buffers at once. Free each\n"
     "tensor (FreeTensor) before allocating the next, or initialise the queue with 2 buffers for double\n"
     "buffering.\n"
     "Example:\n"
     "    pipe.InitBuffer(inQ, 2, TILE * sizeof(float));\n"
     "    inQ.FreeTensor(x);   // give the buffer back each iteration"),
    ("queue_misuse", "concept", "a queue used against its protocol",
     "EnQue twice without a DeQue, FreeTensor of a tensor still enqueued or owned by another queue, or a\n"
     "queue never given memory by InitBuffer. Each tensor goes Alloc -> EnQue -> DeQue -> Free on one queue.\n"
     "Example:\n"
     "    pipe.InitBuffer(outQ, 1, TILE * sizeof(float));\n"
     "    z = outQ.DeQue<float>(); DataCopy(zGm[off], z, TILE); outQ.FreeTensor(z);"),
    ("use_after_free", "concept", "a LocalTensor used after FreeTensor",
     "After q.FreeTensor(t) the buffer belongs to the queue again and may be refilled by the next copy.\n"
     "Free a tensor only after its last use (usually at the end of Compute or CopyOut).\n"
     "Example:\n"
     "    Add(z, x, y, n);\n"
     "    inX.FreeTensor(x); inY.FreeTensor(y);   // after the last read"),
    ("ub_overflow", "concept", "Unified Buffer size: 196,608 bytes (192 KB) per 910B vector core",
     "All InitBuffer calls of a core share its UB: the sum of num * len over queues and TBufs must stay\n"
     "within 196,608 bytes. Shrink the tile, drop to one buffer per queue, or reuse a TBuf. Double\n"
     "buffering doubles the queues' share. Leave room for reduction work buffers.\n"
     "Example:\n"
     "    constexpr uint32_t TILE = 4096;                  // 3 queues x 2 buffers x 16 KB = 96 KB\n"
     "    pipe.InitBuffer(inX, 2, TILE * sizeof(float));"),
    ("datacopy_align", "concept", "32-byte alignment: DataCopy moves whole 32-byte blocks",
     "DataCopy between GM and UB moves whole 32-byte blocks: its count times sizeof(T) must be a multiple\n"
     "of 32 (8 floats, 16 halves). Round tiles to a multiple of 32 bytes and copy a ragged tail (or rows\n"
     "whose length is not a multiple of 8/16 elements) with DataCopyPad, whose blockLen is in bytes.\n"
     "Example:\n"
     "    if ((len * sizeof(T)) % 32 == 0) DataCopy(x, xGm[off], len);\n"
     "    else DataCopyPad(x, xGm[off], DataCopyExtParams{1, len * sizeof(T), 0, 0, 0}, DataCopyPadExtParams<T>{false, 0, 0, 0});"),
    ("ub_align", "concept", "UB operands start on a 32-byte boundary",
     "Copies and vector instructions address UB in 32-byte blocks: a LocalTensor view t[k] used as an\n"
     "operand needs k * sizeof(T) to be a multiple of 32. Lay rows out at a pitch rounded up to 32 bytes\n"
     "(DataCopyPad with several bursts does that) and index rows as t[r * pitch].\n"
     "Example:\n"
     "    uint32_t pitch = (cols + 7) / 8 * 8;   // floats\n"
     "    Exp(y[r * pitch], x[r * pitch], cols);"),
    ("gm_out_of_bounds", "concept", "GM access past a block's slice or the tensor",
     "A GlobalTensor set with SetGlobalBuffer(ptr + start, count) may be read and written only in\n"
     "[0, count). The last block usually gets fewer elements: compute its count as min(per, n - start)\n"
     "and skip blocks with start >= n.\n"
     "Example:\n"
     "    uint32_t start = per * GetBlockIdx(); count = start >= n ? 0 : (n - start < per ? n - start : per);\n"
     "    xGm.SetGlobalBuffer((__gm__ float*)x + start, count);"),
    ("ub_out_of_bounds", "concept", "UB access past a LocalTensor, a TBuf or a work buffer",
     "A vector op of calCount elements reads and writes calCount elements from each operand's start; the\n"
     "tensor (queue buffer, TBuf::Get view, or t[offset] view) must hold them. ReduceSum/Max/Min also need\n"
     "a workLocal of at least one element per 256-byte repeat of the input.\n"
     "Example:\n"
     "    pipe.InitBuffer(workBuf, (cols * 4 + 255) / 256 * 32);   // bytes, one float per repeat, rounded up\n"
     "    ReduceSum(red, x, workBuf.Get<float>(), cols);"),
    ("gm_write_race", "concept", "two blocks writing the same GM element",
     "Each block must own a disjoint slice of the output: offset every GlobalTensor by\n"
     "GetBlockIdx() * blockLength and make the slices cover the output exactly once.\n"
     "Example:\n"
     "    zGm.SetGlobalBuffer((__gm__ float*)z + GetBlockIdx() * per, count);\n"
     "    DataCopyPad(zGm[off], zl, DataCopyExtParams{1, len * 4, 0, 0, 0});"),
    ("sync_deadlock", "concept", "WaitFlag without an earlier SetFlag",
     "SetFlag<E>(id) and WaitFlag<E>(id) pair up on the same event E and id: set on the producing pipe,\n"
     "wait on the consuming one. A WaitFlag with no SetFlag before it never returns.\n"
     "Example:\n"
     "    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));\n"
     "    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);"),
    ("invalid_argument", "concept", "a mask, repeat count or calCount the hardware rejects",
     "In the repeat form the mask counts active elements of one 256-byte repeat (1..64 floats, 1..128\n"
     "halves) and repeatTimes is at most 255; split longer work into several calls or use the count form\n"
     "(calCount elements), which has no such limit.\n"
     "Example:\n"
     "    Add(z, x, y, n);                           // count form: any n\n"
     "    Add(z, x, y, 64, 4, {1, 1, 1, 8, 8, 8});   // repeat form: 4 repeats of 64 floats"),
    ("unknown_api", "concept", "a call that is not an Ascend C API",
     "The vector unit has a fixed instruction set. Use the names in these notes (Add, Sub, Mul, Div, Max,\n"
     "Min, Exp, Ln, Abs, Sqrt, Rsqrt, Reciprocal, Relu, Adds, Muls, Maxs, Mins, LeakyRelu, Axpy,\n"
     "Duplicate, Cast, ReduceSum/Max/Min, WholeReduceSum/Max/Min) and compose the rest: sigmoid is\n"
     "1/(1+exp(-x)), tanh is 1 - 2/(exp(2x)+1), silu is x/(1+exp(-x)).\n"
     "Example:\n"
     "    Muls(t, x, -1.0f, n); Exp(t, t, n); Adds(t, t, 1.0f, n);\n"
     "    Div(y, x, t, n);   // silu"),
    ("double_buffering", "concept", "overlap copy and compute with two buffers per queue",
     "With InitBuffer(q, 2, len) the copy-in of tile i+1 can run on the MTE2 pipe while the vector unit\n"
     "computes tile i and MTE3 writes tile i-1. The code stays a sequential CopyIn/Compute/CopyOut loop;\n"
     "the queues provide the synchronisation. It costs twice the UB of the queues.\n"
     "Example:\n"
     "    TQue<QuePosition::VECIN, 2> inQ;   // BUFFER_NUM = 2\n"
     "    pipe.InitBuffer(inQ, 2, TILE * sizeof(half));"),
    ("tiling", "concept", "block_dim, GetBlockIdx and tile sizes",
     "Split the work over block_dim cores (at most 48 vector cores on a 910B; more blocks run in waves):\n"
     "each block takes a contiguous slice (whole rows for a row operation), then walks it in tiles that\n"
     "fit the UB. Tiles should be a multiple of 32 bytes (and ideally of 256 bytes, one vector repeat);\n"
     "the last tile of a slice is shorter and needs DataCopyPad when not a multiple of 32 bytes.\n"
     "Example:\n"
     "    uint32_t per = (rows + GetBlockNum() - 1) / GetBlockNum(), first = per * GetBlockIdx();\n"
     "    for (uint32_t off = 0; off < count; off += TILE) { uint32_t len = min(TILE, count - off); ... }"),
    ("repeat_params", "concept", "repeat form: mask, repeatTimes and block/repeat strides",
     "A vector instruction processes 256 bytes per repeat (8 blocks of 32 bytes). The repeat form takes a\n"
     "mask (active elements per repeat), repeatTimes (<= 255) and strides: blkStride is the distance\n"
     "between the 8 blocks of one repeat, repStride the distance between repeats, both in 32-byte blocks\n"
     "(defaults 1 and 8: contiguous). BinaryRepeatParams is (dstBlk, src0Blk, src1Blk, dstRep, src0Rep,\n"
     "src1Rep); UnaryRepeatParams is (dstBlk, srcBlk, dstRep, srcRep).\n"
     "Example:\n"
     "    Exp(y, x, 64, rows, UnaryRepeatParams(1, 1, pitch / 8, pitch / 8));   // first 64 floats of each row\n"
     "    Mul(z, x, w, 64, rows, BinaryRepeatParams(1, 1, 1, 8, 8, 0));         // w reused every repeat"),
    ("fp16_compute", "concept", "half data: compute in fp32 where precision matters",
     "Vector ops take half directly, but sums, exp and divisions lose precision in half. Cast tiles to\n"
     "float on arrival (RoundMode::CAST_NONE), compute, and Cast back (RoundMode::CAST_RINT) before the\n"
     "copy out; budget the fp32 scratch in the UB.\n"
     "Example:\n"
     "    Cast(xf, xh, RoundMode::CAST_NONE, n); Exp(xf, xf, n);\n"
     "    Cast(yh, xf, RoundMode::CAST_RINT, n);"),
    ("row_reduction", "concept", "softmax and norms: reduce each row, then broadcast a scalar",
     "Copy rows in at a 32-byte pitch, reduce each row with ReduceMax/ReduceSum (count form, into a\n"
     "small TBuf with a work buffer), read the result with GetValue after a V->S sync, and apply it with\n"
     "the scalar forms Adds/Muls. Rows too long for the UB are streamed in chunks: accumulate a vector\n"
     "(Add/Max) across chunks, reduce it at the end, then a last pass writes the output.\n"
     "Example:\n"
     "    ReduceMax(red, x, work, cols); SyncVtoS(); float m = red.GetValue(0);\n"
     "    Adds(x, x, -m, cols); Exp(x, x, cols);"),

    # ---- qualifiers and types ----------------------------------------------------------------
    ("GM_ADDR", "types", "kernel parameter type for a global-memory address",
     "GM_ADDR is a byte pointer into global memory (__gm__ uint8_t*). Kernel entries take tensors as\n"
     "GM_ADDR and cast them to the element type when setting a GlobalTensor.\n"
     "Example:\n"
     "    extern \"C\" __global__ __aicore__ void k(GM_ADDR x, GM_ADDR y, uint32_t n)\n"
     "    xGm.SetGlobalBuffer((__gm__ float*)x, n);"),
    ("__gm__", "types", "address-space qualifier for global memory",
     "Marks a pointer as pointing to GM (HBM). Only GlobalTensor (and DataCopy to or from it) should touch\n"
     "GM; compute happens on LocalTensors in UB.\n"
     "Example:\n"
     "    __gm__ half* p = (__gm__ half*)x;\n"
     "    xGm.SetGlobalBuffer(p + start, count);"),
    ("__aicore__", "types", "function qualifier: code that runs on an AI Core",
     "Every kernel entry and every member function a kernel calls carries __aicore__ (usually with\n"
     "inline for helpers).\n"
     "Example:\n"
     "    __aicore__ inline void Compute(uint32_t len) { ... }\n"
     "    extern \"C\" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z)"),
    ("__global__", "types", "marks a kernel entry point",
     "An entry is `extern \"C\" __global__ __aicore__ void name(...)` returning void; it is launched on\n"
     "block_dim cores.\n"
     "Example:\n"
     "    extern \"C\" __global__ __aicore__ void relu_custom(GM_ADDR x, GM_ADDR y, uint32_t n)\n"
     "    { KernelRelu op; op.Init(x, y, n); op.Process(); }"),
    ("half", "types", "16-bit IEEE float element type",
     "half is the fp16 element type of tensors and scalars. Sums and transcendental ops are more accurate\n"
     "computed in float after a Cast; see fp16_compute.\n"
     "Example:\n"
     "    LocalTensor<half> xh = inQ.DeQue<half>();\n"
     "    Cast(xf, xh, RoundMode::CAST_NONE, n);"),
    ("bfloat16_t", "types", "bfloat16 element type",
     "The 16-bit brain-float type; convert to float with Cast for arithmetic.\n"
     "Example:\n"
     "    GlobalTensor<bfloat16_t> xGm;\n"
     "    Cast(xf, xb, RoundMode::CAST_NONE, n);"),
    ("GlobalTensor", "types", "a typed view of global memory",
     "GlobalTensor<T> wraps a GM pointer and a length (SetGlobalBuffer). t[i] is a view starting at\n"
     "element i; GetValue/SetValue are slow scalar accesses. It is only read and written by DataCopy and\n"
     "DataCopyPad.\n"
     "Example:\n"
     "    GlobalTensor<float> xGm; xGm.SetGlobalBuffer((__gm__ float*)x + start, count);\n"
     "    DataCopy(xl, xGm[off], TILE);"),
    ("LocalTensor", "types", "a typed view of Unified Buffer memory",
     "LocalTensor<T> comes from a queue (AllocTensor/DeQue) or a TBuf (Get). t[k] is a view starting at\n"
     "element k (k * sizeof(T) must be 32-byte aligned for copies and vector ops). GetValue/SetValue are\n"
     "scalar accesses; sync V->S before reading a value a vector op wrote.\n"
     "Example:\n"
     "    LocalTensor<float> row = x[r * pitch];\n"
     "    float first = row.GetValue(0);"),
    ("TPipe", "memory", "owns the Unified Buffer and hands it to queues",
     "One TPipe per kernel instance. pipe.InitBuffer(queue, num, bytes) carves num buffers of bytes each\n"
     "for a TQue; pipe.InitBuffer(tbuf, bytes) one buffer for a TBuf. The total must fit 196,608 bytes.\n"
     "Example:\n"
     "    TPipe pipe;\n"
     "    pipe.InitBuffer(inQ, 2, TILE * sizeof(float)); pipe.InitBuffer(tmp, TILE * sizeof(float));"),
    ("TQue", "memory", "a queue of UB buffers between pipeline stages",
     "TQue<QuePosition::VECIN, depth> feeds copies-in to compute, TQue<QuePosition::VECOUT, depth>\n"
     "results to copy-out. Use AllocTensor/EnQue/DeQue/FreeTensor (see queue_protocol). The number of\n"
     "buffers is InitBuffer's num (2 for double buffering).\n"
     "Example:\n"
     "    TQue<QuePosition::VECIN, 2> inQ;\n"
     "    LocalTensor<float> x = inQ.AllocTensor<float>();"),
    ("TQueBind", "memory", "a queue bound between two positions",
     "TQueBind<src, dst, depth> is a queue whose buffers move from one position to another (for example\n"
     "VECIN to VECOUT when a tile is copied in and out without a separate output buffer). Same protocol as\n"
     "TQue.\n"
     "Example:\n"
     "    TQueBind<TPosition::VECIN, TPosition::VECOUT, 1> q;\n"
     "    pipe.InitBuffer(q, 1, TILE * sizeof(float));"),
    ("TBuf", "memory", "scratch UB without queue semantics",
     "TBuf<TPosition::VECCALC> holds temporaries (reduction results, work buffers, fp32 copies of half\n"
     "tiles). InitBuffer(tbuf, bytes) once; Get<T>() views the whole buffer, Get<T>(count) the first\n"
     "count elements, GetWithOffset<T>(count, byteOffset) a part. No EnQue/DeQue.\n"
     "Example:\n"
     "    TBuf<TPosition::VECCALC> tmp; pipe.InitBuffer(tmp, TILE * sizeof(float));\n"
     "    LocalTensor<float> t = tmp.Get<float>();"),
    ("TPosition", "memory", "where a buffer lives in the pipeline",
     "Positions name logical buffers: GM (global), VECIN, VECOUT, VECCALC (vector scratch) for vector\n"
     "kernels; A1/A2/B1/B2/C1/C2/CO1/CO2 belong to the cube (matmul) path.\n"
     "Example:\n"
     "    TQue<TPosition::VECOUT, 1> outQ;\n"
     "    TBuf<TPosition::VECCALC> calc;"),
    ("QuePosition", "memory", "the queue-position enum (alias of TPosition for queues)",
     "QuePosition::VECIN / VECOUT name the input and output queues of a vector kernel.\n"
     "Example:\n"
     "    TQue<QuePosition::VECIN, 2> inX;\n"
     "    TQue<QuePosition::VECOUT, 2> outZ;"),
    ("RoundMode", "cast", "rounding of Cast",
     "CAST_NONE (plain conversion, used to widen half to float), CAST_RINT (round to nearest even, the\n"
     "usual float->half), CAST_FLOOR, CAST_CEIL, CAST_ROUND (half away from zero), CAST_TRUNC, CAST_ODD.\n"
     "Example:\n"
     "    Cast(xf, xh, RoundMode::CAST_NONE, n);\n"
     "    Cast(yh, yf, RoundMode::CAST_RINT, n);"),
    ("ReduceOrder", "reduce", "what WholeReduceMax/Min write per repeat",
     "ORDER_VALUE_INDEX (value then index, the default), ORDER_INDEX_VALUE, ORDER_ONLY_VALUE,\n"
     "ORDER_ONLY_INDEX. With a value/index pair each result takes two elements.\n"
     "Example:\n"
     "    WholeReduceMax(m, x, 64, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);\n"
     "    float rowMax = m.GetValue(r);"),
    ("HardEvent", "sync", "a producer->consumer pipe pair for SetFlag/WaitFlag",
     "Names like V_S (vector then scalar), S_V, MTE2_V (copy-in then vector), V_MTE3 (vector then\n"
     "copy-out), MTE3_MTE2. Queues already synchronise the copy/compute stages; flags are for the rest,\n"
     "notably reading with GetValue what a vector op just wrote (V_S).\n"
     "Example:\n"
     "    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));\n"
     "    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);"),
    ("pipe_t", "sync", "the hardware pipes",
     "PIPE_S (scalar), PIPE_V (vector), PIPE_MTE2 (GM->UB), PIPE_MTE3 (UB->GM), PIPE_M (cube), PIPE_ALL.\n"
     "Used by PipeBarrier.\n"
     "Example:\n"
     "    PipeBarrier<PIPE_V>();   // later vector ops wait for earlier ones\n"
     "    PipeBarrier<PIPE_ALL>();"),
    ("event_t", "sync", "an event id for SetFlag/WaitFlag",
     "EVENT_ID0..EVENT_ID7, or one fetched with GetTPipePtr()->FetchEventID(HardEvent::...).\n"
     "Example:\n"
     "    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_V));\n"
     "    SetFlag<HardEvent::MTE2_V>(e); WaitFlag<HardEvent::MTE2_V>(e);"),
    ("TEventID", "sync", "the integer type of an event id",
     "What TPipe::FetchEventID/AllocEventID return; cast to event_t for SetFlag/WaitFlag.\n"
     "Example:\n"
     "    TEventID id = GetTPipePtr()->FetchEventID(HardEvent::V_S);\n"
     "    SetFlag<HardEvent::V_S>(static_cast<event_t>(id));"),
    ("DataCopyParams", "copy", "burst layout of a strided DataCopy",
     "DataCopyParams{blockCount, blockLen, srcStride, dstStride}: blockCount bursts of blockLen 32-byte\n"
     "blocks; the strides are gaps between bursts, in 32-byte blocks, on each side. Use it to copy several\n"
     "rows at once when rows are whole blocks.\n"
     "Example:\n"
     "    DataCopyParams p{rows, cols * 4 / 32, 0, 0};\n"
     "    DataCopy(xl, xGm[off], p);"),
    ("DataCopyExtParams", "copy", "burst layout of DataCopyPad, lengths in bytes",
     "DataCopyExtParams{blockCount, blockLen, srcStride, dstStride, rsv}: blockCount bursts of blockLen\n"
     "BYTES (any multiple of the element size). The GM-side stride is a gap in bytes, the UB-side stride a\n"
     "gap in 32-byte blocks; each burst starts a new 32-byte block in UB, so rows land at a 32-byte pitch.\n"
     "Example:\n"
     "    DataCopyExtParams p{rows, cols * sizeof(T), 0, 0, 0};\n"
     "    DataCopyPad(xl, xGm[off], p, DataCopyPadExtParams<T>{false, 0, 0, 0});"),
    ("DataCopyPadExtParams", "copy", "padding of a GM->UB DataCopyPad",
     "DataCopyPadExtParams<T>{isPad, leftPadding, rightPadding, paddingValue}: with isPad, each burst gets\n"
     "left/right padding elements (together at most one 32-byte block) set to paddingValue. {false, 0, 0,\n"
     "0} copies without padding.\n"
     "Example:\n"
     "    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};\n"
     "    DataCopyPad(xl, xGm[off], DataCopyExtParams{1, len * 4, 0, 0, 0}, pad);"),
    ("DataCopyPadParams", "copy", "older padding struct for DataCopyPad with DataCopyParams",
     "DataCopyPadParams{isPad, leftPadding, rightPadding, paddingValue} goes with the DataCopyParams form\n"
     "of DataCopyPad (blockLen in bytes there too). Prefer DataCopyExtParams/DataCopyPadExtParams.\n"
     "Example:\n"
     "    DataCopyParams p{1, static_cast<uint16_t>(len * 4), 0, 0};\n"
     "    DataCopyPad(xl, xGm[off], p, DataCopyPadParams{false, 0, 0, 0});"),
    ("BinaryRepeatParams", "vector", "strides of a binary op in the repeat form",
     "BinaryRepeatParams(dstBlkStride, src0BlkStride, src1BlkStride, dstRepStride, src0RepStride,\n"
     "src1RepStride), all in 32-byte blocks; defaults (1,1,1,8,8,8) are contiguous. See repeat_params.\n"
     "Example:\n"
     "    BinaryRepeatParams p(1, 1, 1, 8, 8, 0);   // src1 (a 64-float vector) reused by every repeat\n"
     "    Mul(z, x, w, 64, rows, p);"),
    ("UnaryRepeatParams", "vector", "strides of a unary op in the repeat form",
     "UnaryRepeatParams(dstBlkStride, srcBlkStride, dstRepStride, srcRepStride), in 32-byte blocks;\n"
     "defaults (1,1,8,8). See repeat_params.\n"
     "Example:\n"
     "    UnaryRepeatParams p(1, 1, 8, 8);\n"
     "    Exp(y, x, 64, n / 64, p);"),
    # ---- core and synchronisation ----------------------------------------------------------
    ("GetBlockIdx", "core", "index of this block, 0..block_dim-1",
     "Use it to pick this block's slice of the work. Blocks run independently; nothing is shared but GM.\n"
     "Example:\n"
     "    uint32_t start = per * GetBlockIdx();\n"
     "    xGm.SetGlobalBuffer((__gm__ float*)x + start, count);"),
    ("GetBlockNum", "core", "number of blocks the kernel was launched with (block_dim)",
     "Use it to size each block's share so the kernel works with any block_dim.\n"
     "Example:\n"
     "    uint32_t per = (n + GetBlockNum() - 1) / GetBlockNum();\n"
     "    per = (per + 63) / 64 * 64;   // whole 256-byte repeats"),
    ("GetTPipePtr", "sync", "the current TPipe",
     "Returns a pointer to the kernel's TPipe, mostly to fetch event ids for SetFlag/WaitFlag.\n"
     "Example:\n"
     "    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));\n"
     "    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);"),
    ("PipeBarrier", "sync", "wait until earlier instructions of a pipe are done",
     "PipeBarrier<PIPE_V>() orders vector instructions (needed when an op reads what the previous one\n"
     "wrote and the compiler cannot see it); PipeBarrier<PIPE_ALL>() waits for every pipe (slow).\n"
     "Example:\n"
     "    Add(z, x, y, n); PipeBarrier<PIPE_V>();\n"
     "    Relu(z, z, n);"),
    ("pipe_barrier", "sync", "old spelling of PipeBarrier",
     "pipe_barrier(PIPE_V) is the older intrinsic form of PipeBarrier<PIPE_V>().\n"
     "Example:\n"
     "    pipe_barrier(PIPE_V);\n"
     "    pipe_barrier(PIPE_ALL);"),
    ("SetFlag", "sync", "signal an event from a producing pipe",
     "SetFlag<HardEvent::X_Y>(id) is issued on pipe X; the matching WaitFlag<HardEvent::X_Y>(id) blocks\n"
     "pipe Y until it arrives. Always pair them.\n"
     "Example:\n"
     "    SetFlag<HardEvent::V_S>(e);\n"
     "    WaitFlag<HardEvent::V_S>(e); float v = red.GetValue(0);"),
    ("WaitFlag", "sync", "wait for an event set by a producing pipe",
     "Must follow a SetFlag of the same event and id (see sync_deadlock).\n"
     "Example:\n"
     "    SetFlag<HardEvent::MTE3_MTE2>(e);\n"
     "    WaitFlag<HardEvent::MTE3_MTE2>(e);"),
    # ---- data movement ----------------------------------------------------------------------
    ("DataCopy", "copy", "copy between GM and UB (or UB to UB) in whole 32-byte blocks",
     "DataCopy(dst, src, count): count elements, count * sizeof(T) a multiple of 32. GM->UB (dst\n"
     "LocalTensor, src GlobalTensor), UB->GM, or UB->UB. DataCopy(dst, src, DataCopyParams) copies strided\n"
     "bursts. For lengths that are not whole blocks use DataCopyPad.\n"
     "Example:\n"
     "    DataCopy(xl, xGm[off], TILE);   // TILE a multiple of 8 floats\n"
     "    DataCopy(zGm[off], zl, TILE);"),
    ("DataCopyPad", "copy", "copy any number of bytes between GM and UB",
     "GM->UB: DataCopyPad(dst, src, DataCopyExtParams{count, bytes, srcGapBytes, dstGapBlocks, 0},\n"
     "DataCopyPadExtParams<T>{isPad, left, right, value}). UB->GM: DataCopyPad(dst, src,\n"
     "DataCopyExtParams{count, bytes, srcGapBlocks, dstGapBytes, 0}). blockLen is in BYTES. Each UB burst\n"
     "starts on a 32-byte boundary. It writes exactly the bytes asked to GM: the way to copy tails.\n"
     "Example:\n"
     "    DataCopyPad(xl, xGm[off], DataCopyExtParams{1, len * 4, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0});\n"
     "    DataCopyPad(zGm[off], zl, DataCopyExtParams{1, len * 4, 0, 0, 0});"),
    # ---- vector compute ----------------------------------------------------------------------
    ("Add", "vector", "dst = src0 + src1, elementwise",
     "Add(dst, src0, src1, calCount) on LocalTensors of one type (half, float, int16, int32); dst may be\n"
     "one of the sources. The repeat form takes (mask, repeatTimes, BinaryRepeatParams).\n"
     "Example:\n"
     "    Add(z, x, y, len);\n"
     "    Add(acc, acc, chunk, len);   // running sum of a streamed row"),
    ("Sub", "vector", "dst = src0 - src1, elementwise",
     "Same forms and types as Add.\n"
     "Example:\n"
     "    Sub(d, x, mean, len);\n"
     "    Sub(z, x, y, len);"),
    ("Mul", "vector", "dst = src0 * src1, elementwise",
     "Same forms and types as Add. Mul(d, x, x, n) squares.\n"
     "Example:\n"
     "    Mul(z, x, y, len);\n"
     "    Mul(row, row, gamma, cols);   // per-column weight"),
    ("Div", "vector", "dst = src0 / src1, elementwise",
     "half and float. Twice the cost of Mul per repeat; multiplying by a Reciprocal or by 1/s with Muls\n"
     "is cheaper when the divisor repeats.\n"
     "Example:\n"
     "    Div(z, x, y, len);\n"
     "    Div(y, x, t, len);   // x / (1 + exp(-x)) = silu"),
    ("Max", "vector", "dst = max(src0, src1), elementwise",
     "Same forms as Add.\n"
     "Example:\n"
     "    Max(z, x, y, len);\n"
     "    Max(acc, acc, chunk, len);   // running max of a streamed row"),
    ("Min", "vector", "dst = min(src0, src1), elementwise",
     "Same forms as Add.\n"
     "Example:\n"
     "    Min(z, x, y, len);\n"
     "    Min(acc, acc, chunk, len);"),
    ("Exp", "vector", "dst = exp(src)",
     "Exp(dst, src, calCount), half or float; overflows to inf for large inputs (subtract the row max\n"
     "first in softmax). Repeat form with UnaryRepeatParams.\n"
     "Example:\n"
     "    Adds(x, x, -rowMax, cols);\n"
     "    Exp(x, x, cols);"),
    ("Ln", "vector", "dst = natural log of src",
     "Ln(dst, src, calCount), half or float; -inf at 0, NaN below.\n"
     "Example:\n"
     "    Ln(y, x, len);\n"
     "    Ln(s, s, 1);   // log of a row sum held in UB"),
    ("Abs", "vector", "dst = |src|",
     "Abs(dst, src, calCount).\n"
     "Example:\n"
     "    Abs(y, x, len);\n"
     "    Muls(y, y, -1.0f, len);   // -|x|"),
    ("Sqrt", "vector", "dst = sqrt(src)",
     "Sqrt(dst, src, calCount), half or float.\n"
     "Example:\n"
     "    Sqrt(y, x, len);\n"
     "    Reciprocal(y, y, len);"),
    ("Rsqrt", "vector", "dst = 1 / sqrt(src)",
     "Rsqrt(dst, src, calCount), half or float; the usual normalisation factor (var + eps)^-1/2.\n"
     "Example:\n"
     "    Adds(v, v, eps, 1);\n"
     "    Rsqrt(v, v, 1);"),
    ("Reciprocal", "vector", "dst = 1 / src",
     "Reciprocal(dst, src, calCount), half or float.\n"
     "Example:\n"
     "    Adds(t, t, 1.0f, len);\n"
     "    Reciprocal(y, t, len);   // sigmoid = 1 / (1 + exp(-x))"),
    ("Relu", "vector", "dst = max(src, 0)",
     "Relu(dst, src, calCount), half, float or int32. In-place (dst == src) is fine.\n"
     "Example:\n"
     "    Add(z, x, y, len);\n"
     "    Relu(z, z, len);"),
    ("Adds", "vector", "dst = src + scalar",
     "Adds(dst, src, scalar, calCount): the scalar converts to the tensor type. Subtract with a negated\n"
     "scalar.\n"
     "Example:\n"
     "    Adds(y, x, 1.0f, len);\n"
     "    Adds(x, x, -rowMax, cols);"),
    ("Muls", "vector", "dst = src * scalar",
     "Muls(dst, src, scalar, calCount); divide by s with Muls(dst, src, 1.0f / s, n).\n"
     "Example:\n"
     "    Muls(y, x, 2.0f, len);\n"
     "    Muls(row, row, 1.0f / sum, cols);"),
    ("Maxs", "vector", "dst = max(src, scalar)",
     "Maxs(dst, src, scalar, calCount): clamp from below.\n"
     "Example:\n"
     "    Maxs(y, x, 0.0f, len);   // relu\n"
     "    Maxs(y, x, lo, len);"),
    ("Mins", "vector", "dst = min(src, scalar)",
     "Mins(dst, src, scalar, calCount): clamp from above.\n"
     "Example:\n"
     "    Mins(y, x, 6.0f, len);\n"
     "    Maxs(y, y, 0.0f, len);   // relu6 with the line above"),
    ("LeakyRelu", "vector", "dst = src >= 0 ? src : src * slope",
     "LeakyRelu(dst, src, slope, calCount), half or float.\n"
     "Example:\n"
     "    LeakyRelu(y, x, 0.01f, len);\n"
     "    LeakyRelu(y, y, 0.2f, len);"),
    ("Axpy", "vector", "dst = src * scalar + dst",
     "Axpy(dst, src, scalar, calCount): fused multiply-add into the destination.\n"
     "Example:\n"
     "    Duplicate(acc, 0.0f, len);\n"
     "    Axpy(acc, x, alpha, len);   // acc += alpha * x"),
    ("Duplicate", "vector", "fill a tensor with a scalar",
     "Duplicate(dst, scalar, calCount); also a repeat form (mask, repeatTimes, dstBlkStride, dstRepStride).\n"
     "Example:\n"
     "    Duplicate(acc, 0.0f, len);\n"
     "    Duplicate(m, -3.0e38f, 64);"),
    ("Cast", "cast", "convert element type",
     "Cast(dst, src, RoundMode, calCount): half<->float, float->int32 and more. Widening half to float is\n"
     "exact (CAST_NONE); narrowing float to half rounds (CAST_RINT). dst and src must not overlap when the\n"
     "sizes differ.\n"
     "Example:\n"
     "    Cast(xf, xh, RoundMode::CAST_NONE, n);\n"
     "    Cast(yh, yf, RoundMode::CAST_RINT, n);"),
    # ---- reductions ---------------------------------------------------------------------------
    ("ReduceSum", "reduce", "sum of calCount elements into dst[0]",
     "ReduceSum(dst, src, workLocal, calCount): dst[0] gets the sum; workLocal needs at least one element\n"
     "per 256-byte repeat of src. Read the result with GetValue after a V->S sync. Accumulates in the\n"
     "tensor type: reduce half data as float.\n"
     "Example:\n"
     "    ReduceSum(red, x, work, cols);\n"
     "    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e); float s = red.GetValue(0);"),
    ("ReduceMax", "reduce", "maximum of calCount elements into dst[0] (index in dst[1] optionally)",
     "ReduceMax(dst, src, workLocal, calCount, calIndex = false): with calIndex the index of the maximum\n"
     "is stored after the value. workLocal as for ReduceSum.\n"
     "Example:\n"
     "    ReduceMax(red, x, work, cols);\n"
     "    float m = red.GetValue(0);   // after a V->S sync"),
    ("ReduceMin", "reduce", "minimum of calCount elements into dst[0]",
     "ReduceMin(dst, src, workLocal, calCount, calIndex = false); as ReduceMax.\n"
     "Example:\n"
     "    ReduceMin(red, x, work, cols);\n"
     "    float m = red.GetValue(0);"),
    ("WholeReduceSum", "reduce", "one sum per repeat (per row of up to 256 bytes)",
     "WholeReduceSum(dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride): each repeat\n"
     "sums its `mask` active elements into one result; results are dstRepStride apart. Good for many short\n"
     "rows (64 floats or fewer) at once.\n"
     "Example:\n"
     "    WholeReduceSum(sums, x, 64, rows, 1, 1, 8);   // rows of exactly 64 floats\n"
     "    float s0 = sums.GetValue(0);"),
    ("WholeReduceMax", "reduce", "one maximum per repeat",
     "WholeReduceMax(dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride, order):\n"
     "order (ReduceOrder) chooses value, index or both per result.\n"
     "Example:\n"
     "    WholeReduceMax(m, x, 64, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);\n"
     "    float m0 = m.GetValue(0);"),
    ("WholeReduceMin", "reduce", "one minimum per repeat",
     "As WholeReduceMax.\n"
     "Example:\n"
     "    WholeReduceMin(m, x, 64, rows, 1, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);\n"
     "    float m0 = m.GetValue(0);"),
    # ---- debugging ----------------------------------------------------------------------------
    ("printf", "debug", "print from a kernel (debug builds only)",
     "printf(\"fmt\", ...) prints from the device in debug builds; remove it from kernels that are timed.\n"
     "Example:\n"
     "    printf(\"block %d count %u\\n\", (int)GetBlockIdx(), count);\n"
     "    printf(\"first %f\\n\", x.GetValue(0));"),
    ("DumpTensor", "debug", "dump a tensor's elements (debug builds only)",
     "DumpTensor(tensor, desc, count) prints count elements with a numeric tag.\n"
     "Example:\n"
     "    DumpTensor(xl, 1, 16);\n"
     "    DumpTensor(zl, 2, 16);"),
    # ---- constants and kernel-type macros -----------------------------------------------------
    ("ONE_BLK_SIZE", "constants", "32: bytes in one UB block",
     "Copy lengths and UB offsets are multiples of ONE_BLK_SIZE.\n"
     "Example:\n"
     "    constexpr uint32_t PER_BLOCK = ONE_BLK_SIZE / sizeof(half);   // 16\n"
     "    uint32_t aligned = (len + PER_BLOCK - 1) / PER_BLOCK * PER_BLOCK;"),
    ("ONE_REPEAT_BYTE_SIZE", "constants", "256: bytes one vector repeat processes",
     "A repeat covers 64 floats or 128 halves; tiles that are whole repeats waste no lanes.\n"
     "Example:\n"
     "    constexpr uint32_t PER_REPEAT = ONE_REPEAT_BYTE_SIZE / sizeof(float);   // 64\n"
     "    uint32_t repeats = (n + PER_REPEAT - 1) / PER_REPEAT;"),
    ("MAX_REPEAT_TIMES", "constants", "255: the most repeats one instruction may do",
     "In the repeat form split longer work into several calls.\n"
     "Example:\n"
     "    for (uint32_t r = 0; r < repeats; r += MAX_REPEAT_TIMES)\n"
     "        Exp(y[r * 64], x[r * 64], 64, min(MAX_REPEAT_TIMES, repeats - r), {1, 1, 8, 8});"),
    ("DEFAULT_BLK_NUM", "constants", "8: blocks per repeat",
     "One repeat = 8 blocks of 32 bytes.\n"
     "Example:\n"
     "    uint16_t repStride = DEFAULT_BLK_NUM;   // contiguous repeats\n"
     "    UnaryRepeatParams p(1, 1, repStride, repStride);"),
    ("DEFAULT_BLK_STRIDE", "constants", "1: contiguous blocks inside a repeat",
     "The default block stride of the repeat form.\n"
     "Example:\n"
     "    BinaryRepeatParams p(DEFAULT_BLK_STRIDE, DEFAULT_BLK_STRIDE, DEFAULT_BLK_STRIDE, 8, 8, 8);\n"
     "    Add(z, x, y, 64, 4, p);"),
    ("DEFAULT_REPEAT_STRIDE", "constants", "8: contiguous repeats",
     "The default repeat stride (8 blocks = 256 bytes).\n"
     "Example:\n"
     "    UnaryRepeatParams p(1, 1, DEFAULT_REPEAT_STRIDE, DEFAULT_REPEAT_STRIDE);\n"
     "    Relu(y, x, 64, n / 64, p);"),
    ("BLOCK_CUBE", "constants", "16: the cube unit's fractal edge",
     "Matrix tiles for the cube unit are BLOCK_CUBE x BLOCK_CUBE fractals (cube kernels only).\n"
     "Example:\n"
     "    uint32_t mAligned = (m + BLOCK_CUBE - 1) / BLOCK_CUBE * BLOCK_CUBE;\n"
     "    uint32_t kAligned = (k + BLOCK_CUBE - 1) / BLOCK_CUBE * BLOCK_CUBE;"),
    ("KERNEL_TYPE_AIV_ONLY", "constants", "kernel type: vector cores only",
     "Declares a kernel that uses only AI vector cores (no cube), as elementwise and reduction kernels do.\n"
     "Example:\n"
     "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);\n"
     "    KernelAdd op; op.Init(x, y, z, n); op.Process();"),
    ("KERNEL_TASK_TYPE_DEFAULT", "constants", "sets the kernel type of an entry",
     "Placed at the top of an entry body with a KERNEL_TYPE_* value.\n"
     "Example:\n"
     "    extern \"C\" __global__ __aicore__ void k(GM_ADDR x) {\n"
     "        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY); ... }"),
    # ---- members ---------------------------------------------------------------------------------
    ("InitBuffer", "memory", "TPipe::InitBuffer: give a queue or TBuf its UB",
     "pipe.InitBuffer(que, num, bytes) for a TQue (num buffers of bytes each, num 1 or 2),\n"
     "pipe.InitBuffer(tbuf, bytes) for a TBuf. Call once per queue in Init; the sum over all calls is\n"
     "the core's UB use (at most 196,608 bytes).\n"
     "Example:\n"
     "    pipe.InitBuffer(inQ, 2, TILE * sizeof(half));\n"
     "    pipe.InitBuffer(calc, TILE * sizeof(float));"),
    ("AllocTensor", "memory", "TQue::AllocTensor: take a free buffer of the queue",
     "LocalTensor<T> t = q.AllocTensor<T>(); fails when all `num` buffers are out (see queue_depth).\n"
     "Example:\n"
     "    LocalTensor<float> z = outQ.AllocTensor<float>();\n"
     "    Add(z, x, y, len); outQ.EnQue(z);"),
    ("EnQue", "memory", "TQue::EnQue: publish a filled buffer to the next stage",
     "q.EnQue(t) after the copy or compute that filled t.\n"
     "Example:\n"
     "    DataCopy(x, xGm[off], TILE);\n"
     "    inQ.EnQue(x);"),
    ("DeQue", "memory", "TQue::DeQue: take the oldest published buffer",
     "LocalTensor<T> t = q.DeQue<T>(); requires an earlier EnQue (see queue_empty).\n"
     "Example:\n"
     "    LocalTensor<float> x = inQ.DeQue<float>();\n"
     "    Exp(x, x, len);"),
    ("FreeTensor", "memory", "TQue::FreeTensor: give a buffer back to its queue",
     "q.FreeTensor(t) after the last use of t; t must not be used afterwards.\n"
     "Example:\n"
     "    DataCopy(zGm[off], z, TILE);\n"
     "    outQ.FreeTensor(z);"),
    ("SetGlobalBuffer", "memory", "GlobalTensor::SetGlobalBuffer: point at GM",
     "t.SetGlobalBuffer((__gm__ T*)ptr + offset, count): the tensor may then be accessed in [0, count).\n"
     "Example:\n"
     "    xGm.SetGlobalBuffer((__gm__ float*)x + start, count);\n"
     "    DataCopy(xl, xGm[off], TILE);"),
    ("GetValue", "memory", "scalar read of one element (LocalTensor or GlobalTensor)",
     "t.GetValue(i). On a LocalTensor written by a vector op, sync V->S first. On GM it is slow; read\n"
     "a scalar parameter once in Init.\n"
     "Example:\n"
     "    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);\n"
     "    float s = red.GetValue(0);"),
    ("SetValue", "memory", "scalar write of one element",
     "t.SetValue(i, v). Sync S->V before a vector op reads it.\n"
     "Example:\n"
     "    stats.SetValue(r, red.GetValue(0));\n"
     "    SetFlag<HardEvent::S_V>(e); WaitFlag<HardEvent::S_V>(e);"),
    ("Get", "memory", "TBuf::Get: a LocalTensor view of a TBuf",
     "buf.Get<T>() views the whole buffer, buf.Get<T>(count) the first count elements.\n"
     "Example:\n"
     "    LocalTensor<float> work = workBuf.Get<float>();\n"
     "    ReduceSum(red, x, work, cols);"),
    ("GetWithOffset", "memory", "TBuf::GetWithOffset: a view at a byte offset of a TBuf",
     "buf.GetWithOffset<T>(count, byteOffset); the offset should be a multiple of 32.\n"
     "Example:\n"
     "    LocalTensor<float> a = calc.GetWithOffset<float>(TILE, 0);\n"
     "    LocalTensor<float> b = calc.GetWithOffset<float>(TILE, TILE * 4);"),
    ("ReinterpretCast", "memory", "LocalTensor::ReinterpretCast: view the bytes as another type",
     "t.ReinterpretCast<U>() shares the storage; no conversion (use Cast to convert values).\n"
     "Example:\n"
     "    LocalTensor<int32_t> bits = xf.ReinterpretCast<int32_t>();\n"
     "    Cast(xh, xf, RoundMode::CAST_RINT, n);"),
    ("FetchEventID", "sync", "TPipe::FetchEventID: an event id for a HardEvent",
     "GetTPipePtr()->FetchEventID(HardEvent::V_S) returns an id to pass (as event_t) to SetFlag/WaitFlag.\n"
     "Example:\n"
     "    event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));\n"
     "    SetFlag<HardEvent::V_S>(e); WaitFlag<HardEvent::V_S>(e);"),
    # ---- the cube unit (AIC), MIX kernels and the Matmul API ----------------------------------------
    ("cube_dataflow", "cube", "how a matmul moves through a 910B AI Core's cube unit",
     "GM --DataCopy(a1, aGm, Nd2NzParams)--> L1 (TPosition A1/B1, 512 KB) --LoadData--> L0A (A2, 64 KB) and\n"
     "L0B (B2, 64 KB) --Mmad--> L0C (CO1, 128 KB, float) --Fixpipe--> GM. The cube core (AIC) has no Unified\n"
     "Buffer and no vector unit; the vector cores (AIV, two per AI Core) have no L1/L0. Data between them goes\n"
     "through GM, with CrossCoreSetFlag/CrossCoreWaitFlag in between.\n"
     "Example:\n"
     "    DataCopy(a1, aGm, Nd2NzParams(1, m, k, 0, k, ceil16(m), 1, 0));\n"
     "    LoadData(a2, a1, LoadData2DParams(0, kf, mf, 0, 0, false, 0)); Mmad(c, a2, b2, MmadParams(m, n, k));"),
    ("fractal_layout", "cube", "fractals: 512-byte blocks, Nz in L1, Zz in L0A, Zn in L0B, Nz in L0C",
     "A fractal of the left matrix is 16 rows x C0 (C0 = 32 bytes / sizeof(T): 16 half, 8 float), of the\n"
     "right matrix C0 x 16, of the result 16 x 16. ND2NZ writes Nz (C0-wide column strips, each ceil16(rows)\n"
     "tall). Mmad reads A2 as Zz (fractals row by row), B2 as Zn (fractals row by row, each column-major) and\n"
     "writes CO1 as Nz: C(i, j) at (j/16)*ceil16(M)*16 + i*16 + j%16. Rows/columns past m, n, k are ignored.\n"
     "Example:\n"
     "    for (i = 0; i < mf; ++i) LoadData(a2[i*kf*256], a1[i*256], LoadData2DParams(0, kf, mf, 0, 0, false, 0));\n"
     "    for (i = 0; i < kf; ++i) LoadData(b2[i*nf*256], b1[i*256], LoadData2DParams(0, nf, kf16, 0, 0, true, 0));"),
    ("Nd2NzParams", "cube", "DataCopy(GM -> L1) with the row-major to fractal conversion",
     "Nd2NzParams(ndNum, nValue, dValue, srcNdMatrixStride, srcDValue, dstNzC0Stride, dstNzNStride,\n"
     "dstNzMatrixStride): nValue rows of dValue elements, rows srcDValue apart in GM; in L1 column strip b of\n"
     "row r lands at b*dstNzC0Stride*C0 + r*dstNzNStride*C0 (strides in 32-byte units); each row is padded\n"
     "with zeros to 32 bytes. The destination is an A1/B1 tensor, 32-byte aligned.\n"
     "Example:\n"
     "    DataCopy(a1, aGm[m0 * K + k0], Nd2NzParams(1, mLen, kLen, 0, K, ceil16(mLen), 1, 0));\n"
     "    DataCopy(b1, bGm[k0 * N + n0], Nd2NzParams(1, kLen, nLen, 0, N, ceil16(kLen), 1, 0));"),
    ("LoadData", "cube", "L1 (or GM) -> L0A/L0B, one 512-byte fractal per repeat",
     "LoadData(dst, src, LoadData2DParams(startIndex, repeatTimes, srcStride, sid, dstGap, ifTranspose, addrMode)):\n"
     "repeat r copies fractal startIndex + r*srcStride of src to fractal r*(1+dstGap) of dst. A1 -> A2 and\n"
     "B1 -> B2 only; dst 512-byte aligned; repeatTimes <= 255; ifTranspose (b16 only) transposes each fractal,\n"
     "which turns a K x N Nz strip into the Zn L0B wants.\n"
     "Example:\n"
     "    LoadData(a2[i * kf * 256], a1[i * 256], LoadData2DParams(0, kf, mf, 0, 0, false, 0));\n"
     "    LoadData(b2[i * nf * 256], b1[i * 256], LoadData2DParams(0, nf, kf16, 0, 0, true, 0));"),
    ("LoadData2DParams", "cube", "the parameters of LoadData (2-D, fractal by fractal)",
     "Fields startIndex, repeatTimes, srcStride (in fractals), sid (0), dstGap (fractals skipped between\n"
     "repeats), ifTranspose, addrMode (0). LoadData2dParams is the older spelling.\n"
     "Example:\n"
     "    LoadData2DParams p; p.repeatTimes = kf; p.srcStride = mf; p.ifTranspose = false;\n"
     "    LoadData(a2, a1, p);"),
    ("LoadData2dParams", "cube", "older spelling of LoadData2DParams", "Same fields as LoadData2DParams.\n"
     "Example:\n"
     "    LoadData2dParams p(0, kf, 1, 0, 0, false, 0);\n"
     "    LoadData(a2, a1, p);"),
    ("LoadDataWithTranspose", "cube", "L1 -> L0 with each square of fractals transposed (fp32 right matrix)",
     "LoadDataWithTranspose(dst, src, LoadData2dTransposeParams(startIndex, repeatTimes, srcStride, dstGap,\n"
     "dstFracGap)). b16: one 16x16 fractal per repeat. b32: two neighbouring 16x8 fractals form a 16x16\n"
     "square, written transposed as two 16x8 fractals (1 + dstFracGap) fractals apart. Load a float K x N\n"
     "matrix into L1 as 16-row slabs (Nd2NzParams with ndNum slabs) so neighbours form squares.\n"
     "Example:\n"
     "    LoadDataWithTranspose(b2[2 * s * nf * 128], b1[s * nf * 256], LoadData2dTransposeParams(0, nf, 1, 0, nf - 1));\n"
     "    Mmad(c, a2, b2, MmadParams(m, n, k));"),
    ("LoadData2dTransposeParams", "cube", "the parameters of LoadDataWithTranspose",
     "Fields startIndex and srcStride (in squares), repeatTimes, dstGap (512-byte fractals between repeats),\n"
     "dstFracGap (fractals between the two halves of a b32 square), addrMode.\n"
     "Example:\n"
     "    LoadData2dTransposeParams p(0, nf, 1, 0, nf - 1);\n"
     "    LoadDataWithTranspose(b2, b1, p);"),
    ("Mmad", "cube", "the cube's matrix multiply-accumulate: CO1 (+)= A2 x B2",
     "Mmad(c, a, b, MmadParams(m, n, k)) with c in CO1 (float for half/bfloat16/float inputs, int32 for int8),\n"
     "a in A2 (Zz), b in B2 (Zn); m, n, k <= 4095. cmatrixInitVal=true starts from 0, false accumulates into\n"
     "c (K split into chunks). With m == 1 the cube runs as GEMV and reads A2 as k consecutive elements.\n"
     "A2/B2 512-byte aligned, CO1 256-element aligned. Mmad(c, a, b, bias, p) adds a C2 (bias table) row.\n"
     "Example:\n"
     "    MmadParams p(mLen, nLen, kLen); p.cmatrixInitVal = (k0 == 0);\n"
     "    Mmad(acc, a2, b2, p);"),
    ("MmadParams", "cube", "the parameters of Mmad",
     "MmadParams(m, n, k, isBias, fmOffset, enSsparse, enWinogradA, enWinogradB) plus unitFlag,\n"
     "kDirectionAlign (float: K in L0 aligned to 16), cmatrixSource, cmatrixInitVal (default true).\n"
     "Example:\n"
     "    MmadParams p(32, 64, 128);\n"
     "    p.cmatrixInitVal = false;  // accumulate"),
    ("Fixpipe", "cube", "L0C -> GM: the result out of the cube, NZ to row-major, float to half",
     "Fixpipe<OutT, float, CFG_ROW_MAJOR>(cGm, c1, FixpipeParamsV220(nSize, mSize, srcStride, dstStride, reluEn)):\n"
     "mSize x nSize of the NZ result; srcStride = ceil16(M of the Mmad), dstStride = GM row length N. Set\n"
     "quantPre = QuantMode_t::F322F16 for a half output (NoQuant for float). reluEn applies ReLU on the way.\n"
     "Example:\n"
     "    FixpipeParamsV220 p(nLen, mLen, ceil16(mLen), N, false); p.quantPre = QuantMode_t::F322F16;\n"
     "    Fixpipe<half, float, CFG_ROW_MAJOR>(cGm[m0 * N + n0], acc, p);"),
    ("FixpipeParamsV220", "cube", "the parameters of Fixpipe on the 910B",
     "Fields nSize, mSize, srcStride (16-element units between 16-column strips in L0C), dstStride (GM row\n"
     "length for ROW_MAJOR, 32-byte units for NZ), quantPre, deqScalar, ndNum, srcNdStride, dstNdStride,\n"
     "reluEn, unitFlag, isChannelSplit.\n"
     "Example:\n"
     "    FixpipeParamsV220 p(64, 32, 32, N, false);\n"
     "    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, p);"),
    ("FixpipeParams", "cube", "alias of FixpipeParamsV220 in the CPU model", "See FixpipeParamsV220.\n"
     "Example:\n"
     "    FixpipeParams p(64, 32, 32, N, false);\n"
     "    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, p);"),
    ("FixpipeConfig", "cube", "Fixpipe's output layout: CFG_ROW_MAJOR (ND) or CFG_NZ",
     "The third template argument of Fixpipe. CFG_ROW_MAJOR converts NZ to row-major (any nSize); CFG_NZ\n"
     "keeps fractals (nSize a multiple of 16).\n"
     "Example:\n"
     "    Fixpipe<float, float, CFG_ROW_MAJOR>(cGm, c1, p);\n"
     "    Fixpipe<float, float, CFG_NZ>(nzGm, c1, p);"),
    ("CFG_ROW_MAJOR", "cube", "Fixpipe to a row-major GM matrix", "See FixpipeConfig.\nExample:\n"
     "    Fixpipe<half, float, CFG_ROW_MAJOR>(cGm, acc, p);\n    // p.dstStride = N"),
    ("CFG_NZ", "cube", "Fixpipe keeping the NZ fractal layout", "See FixpipeConfig.\nExample:\n"
     "    Fixpipe<float, float, CFG_NZ>(nzGm, acc, p);\n    // p.dstStride in 32-byte units"),
    ("QuantMode_t", "cube", "Fixpipe's conversion of the float result",
     "NoQuant (float -> float, int32 -> int32), F322F16 (float -> half, round to nearest), F322BF16 (float ->\n"
     "bfloat16_t). The scalar/vector quantisation modes are not modelled by the CPU model.\n"
     "Example:\n"
     "    p.quantPre = QuantMode_t::F322F16;\n"
     "    Fixpipe<half, float, CFG_ROW_MAJOR>(cGm, acc, p);"),
    ("CO2Layout", "cube", "the layout enum behind FixpipeConfig (NZ, ROW_MAJOR)", "See FixpipeConfig.\nExample:\n"
     "    constexpr FixpipeConfig cfg = {CO2Layout::ROW_MAJOR};\n    Fixpipe<float, float, cfg>(cGm, c1, p);"),
    ("CubeFormat", "cube", "matrix formats for MatmulType: ND (row-major), NZ (fractals)...",
     "The Matmul API's CubeFormat::ND is a row-major GM matrix; the CPU model supports ND.\n"
     "Example:\n"
     "    using AType = MatmulType<TPosition::GM, CubeFormat::ND, half>;\n"
     "    Matmul<AType, AType, CType, CType> mm;"),
    ("Matmul", "cube", "the high-level Matmul API: C = A x B (+ bias) for one core's block",
     "Matmul<AType, BType, CType, BiasType> mm; REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling)\n"
     "before any InitBuffer; mm.SetTensorA(aGm); mm.SetTensorB(bGm[, isTransposeB]); mm.SetBias(biasGm) (with\n"
     "tiling.isBias = 1); then mm.IterateAll(cGm) or `while (mm.Iterate()) mm.GetTensorC(cUb or cGm);`;\n"
     "mm.End(). In a MIX kernel the vector core drives it and the cube core serves it.\n"
     "Example:\n"
     "    mm.SetTensorA(aGm); mm.SetTensorB(bGm);\n"
     "    while (mm.Iterate()) { mm.GetTensorC(cUb); LeakyRelu(cUb, cUb, 0.1f, n); ... }"),
    ("MatmulType", "cube", "the type description of one Matmul operand",
     "MatmulType<TPosition::GM, CubeFormat::ND, T, isTrans=false>; isTrans=true allows\n"
     "SetTensorA/SetTensorB(gm, true) (A stored K x M, B stored N x K).\n"
     "Example:\n"
     "    using BType = MatmulType<TPosition::GM, CubeFormat::ND, half, true>;\n"
     "    mm.SetTensorB(wGm, true);"),
    ("TCubeTiling", "cube", "the tiling of the Matmul API (normally from the host's GetTiling)",
     "Fields usedCoreNum, M, N, Ka, Kb, singleCoreM/N/K, baseM/N/K, depthA1, depthB1, stepM, stepN, stepKa,\n"
     "stepKb, isBias, iterateOrder, dbL0A/B/C... Rules: baseM, baseN multiples of 16; baseM*baseK*sizeof(A)*dbL0A\n"
     "<= 64 KB, baseN*baseK*sizeof(B)*dbL0B <= 64 KB, baseM*baseN*4*dbL0C <= 128 KB, depthA1 = stepM*stepKa (x2\n"
     "when double-buffered), the L1 blocks within 512 KB. Start from baseM=128, baseN=256, baseK=64.\n"
     "Example:\n"
     "    tiling.baseM = 128; tiling.baseN = 256; tiling.baseK = 64; tiling.stepKa = tiling.stepKb = 4;\n"
     "    tiling.depthA1 = tiling.depthB1 = 8; tiling.dbL0A = tiling.dbL0B = 2;"),
    ("REGIST_MATMUL_OBJ", "cube", "register a Matmul object (and its tiling) with the pipe",
     "REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling) before any pipe.InitBuffer; up to four\n"
     "objects (mm1, &t1, mm2, &t2...). On the cube core of a MIX kernel it never returns: the AIC serves.\n"
     "Example:\n"
     "    TPipe pipe; REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);\n"
     "    pipe.InitBuffer(cQ, 1, 16 * 64 * sizeof(float));"),
    ("MatmulConfig", "cube", "the Matmul template configuration (CFG_NORM, CFG_MDL)",
     "The fifth template argument of Matmul; the CPU model treats both alike.\n"
     "Example:\n"
     "    Matmul<AType, BType, CType, CType, CFG_NORM> mm;\n"
     "    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);"),
    ("CFG_NORM", "cube", "the default Matmul configuration", "See MatmulConfig.\nExample:\n"
     "    Matmul<A, B, C, C, CFG_NORM> mm;\n    mm.IterateAll(cGm);"),
    ("CFG_MDL", "cube", "the Matmul configuration for large K", "See MatmulConfig.\nExample:\n"
     "    Matmul<A, B, C, C, CFG_MDL> mm;\n    mm.IterateAll(cGm);"),
    ("LayoutMode", "cube", "batch layouts of the Matmul API (NONE for a plain matmul)",
     "Only LayoutMode::NONE (no BatchMatmul) is modelled.\nExample:\n"
     "    using A = MatmulType<TPosition::GM, CubeFormat::ND, half, false, LayoutMode::NONE>;\n"
     "    Matmul<A, A, C, C> mm;"),
    ("mix_kernel", "cube", "a MIX kernel: the cube core and its two vector cores in one launch",
     "With block_dim N the launch runs N AI Cores: N AICs and 2N AIVs. Guard each side with\n"
     "`if ASCEND_IS_AIC { ... }` / `if ASCEND_IS_AIV { ... }`. On the AIV GetBlockIdx() is 0..2N-1,\n"
     "GetSubBlockIdx() 0 or 1 and GetTaskRation() 2; the AIC of AI Core g is GetBlockIdx() == g. Pass results\n"
     "through GM and synchronise: AIC CrossCoreSetFlag<2, PIPE_FIX>(id) after Fixpipe, AIV CrossCoreWaitFlag(id).\n"
     "Example:\n"
     "    if ASCEND_IS_AIC { ...; Fixpipe(...); CrossCoreSetFlag<2, PIPE_FIX>(0); }\n"
     "    if ASCEND_IS_AIV { CrossCoreWaitFlag(0); DataCopy(x, workGm[...], n); ... }"),
    ("ASCEND_IS_AIC", "core", "true on the cube core (AIC)", "Written `if ASCEND_IS_AIC { ... }`.\nExample:\n"
     "    if ASCEND_IS_AIC { pipe.InitBuffer(a1q, 2, bytes); }\n    if ASCEND_IS_AIV { pipe.InitBuffer(inQ, 2, bytes); }"),
    ("ASCEND_IS_AIV", "core", "true on a vector core (AIV)", "Written `if ASCEND_IS_AIV { ... }`.\nExample:\n"
     "    if ASCEND_IS_AIV { CrossCoreWaitFlag(0); }\n    uint32_t sub = GetSubBlockIdx();"),
    ("GetSubBlockIdx", "core", "which of its AI Core's vector cores this AIV is (0 or 1)",
     "0 on the AIC. Use it to split the AIC's tile between the two AIVs.\nExample:\n"
     "    uint32_t rows = TILE_M / 2, r0 = GetSubBlockIdx() * rows;\n    DataCopy(x, workGm[r0 * N], rows * N);"),
    ("GetSubBlockNum", "core", "vector cores per AI Core in this launch (2 in a 1:2 MIX kernel)",
     "1 on the AIC.\nExample:\n    uint32_t share = TILE_M / GetSubBlockNum();\n    uint32_t r0 = GetSubBlockIdx() * share;"),
    ("GetTaskRation", "core", "vector cores per cube core (2 on an AIV of a 1:2 MIX kernel, else 1)",
     "GetBlockNum() * GetTaskRation() is the number of vector cores of a MIX launch.\nExample:\n"
     "    uint32_t aivs = GetBlockNum() * GetTaskRation();\n    uint32_t group = GetBlockIdx() / GetTaskRation();"),
    ("CrossCoreSetFlag", "sync", "signal other cores: CrossCoreSetFlag<mode, pipe>(flagId)",
     "flagId 0..15. Mode 0: all cores of the caller's kind; mode 1: the two AIVs of an AI Core; mode 2: the AIC\n"
     "and its AIVs (an AIC set wakes each AIV; the AIVs' sets, once all have set, wake the AIC). pipe is the\n"
     "pipe whose work must be done first (PIPE_FIX after Fixpipe, PIPE_MTE3 after a UB -> GM DataCopy).\n"
     "Example:\n"
     "    Fixpipe<float, float, CFG_ROW_MAJOR>(workGm, c, p);\n"
     "    CrossCoreSetFlag<2, PIPE_FIX>(0);"),
    ("CrossCoreWaitFlag", "sync", "wait for a CrossCoreSetFlag: CrossCoreWaitFlag(flagId)",
     "Blocks until the flag's counter is positive, then takes one. A wait nobody sets hangs (sync_deadlock).\n"
     "Example:\n"
     "    CrossCoreWaitFlag(0);\n"
     "    DataCopy(x, workGm[off], n);"),
    ("SyncAll", "sync", "barrier over all vector cores (SyncAll()) or all cores (SyncAll<false>())",
     "Every core of the set must reach it; GM written before it is visible after it.\nExample:\n"
     "    DataCopy(partialGm[8 * GetBlockIdx()], part, 8);\n    SyncAll();"),
    ("SetAtomicAdd", "sync", "GM writes add to what is there until SetAtomicNone",
     "SetAtomicAdd<float>(); DataCopy/Fixpipe to GM then accumulate (several cores may add to the same\n"
     "elements); SetAtomicNone() ends it.\nExample:\n"
     "    SetAtomicAdd<float>(); DataCopy(outGm, part, 8);\n    SetAtomicNone();"),
    ("SetAtomicNone", "sync", "end SetAtomicAdd", "See SetAtomicAdd.\nExample:\n"
     "    SetAtomicAdd<float>(); DataCopy(outGm, part, 8);\n    SetAtomicNone();"),
    ("DisableDmaAtomic", "sync", "end SetAtomicAdd (another spelling)", "See SetAtomicAdd.\nExample:\n"
     "    SetAtomicAdd<float>(); DataCopy(outGm, part, 8);\n    DisableDmaAtomic();"),
    ("GetSysWorkSpacePtr", "core", "the system workspace the Matmul API and SyncAll need",
     "Pass it to REGIST_MATMUL_OBJ. In direct kernel launches set it first with SetSysWorkspace(workspace).\n"
     "Example:\n    SetSysWorkspace(workspace);\n    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);"),
    ("SetSysWorkspace", "core", "tell the runtime where the system workspace is", "See GetSysWorkSpacePtr.\n"
     "Example:\n    SetSysWorkspace(workspace);\n    GM_ADDR user = GetUserWorkspace(workspace);"),
    ("GetUserWorkspace", "core", "the user part of a workspace argument", "See GetSysWorkSpacePtr.\nExample:\n"
     "    GM_ADDR user = GetUserWorkspace(workspace);\n    workGm.SetGlobalBuffer((__gm__ float*)user, n);"),
    ("KERNEL_TYPE_AIC_ONLY", "core", "kernel type: cube cores only", "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY)\n"
     "in the entry; the CPU model infers it from cube calls without vector queues.\nExample:\n"
     "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIC_ONLY);\n    CubeMatmul<half> op; op.Process();"),
    ("KERNEL_TYPE_MIX_AIC_1_2", "core", "kernel type: one AIC and two AIVs per block", "See mix_kernel.\nExample:\n"
     "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);\n    if ASCEND_IS_AIC { ... }"),
    ("KERNEL_TYPE_MIX_AIC_1_1", "core", "kernel type: one AIC and one AIV per block", "See mix_kernel.\nExample:\n"
     "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);\n    if ASCEND_IS_AIV { ... }"),
    ("KERNEL_TYPE_MIX_AIV_1_0", "core", "kernel type: vector cores with the cross-core scheduler on",
     "For CrossCoreSetFlag mode 0 between vector cores.\nExample:\n"
     "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);\n    CrossCoreSetFlag<0, PIPE_MTE3>(0); CrossCoreWaitFlag(0);"),
    ("KERNEL_TYPE_MIX_AIC_1_0", "core", "kernel type: cube cores with the cross-core scheduler on",
     "For CrossCoreSetFlag mode 0 between cube cores.\nExample:\n"
     "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_0);\n    CrossCoreSetFlag<0, PIPE_FIX>(0); CrossCoreWaitFlag(0);"),
    ("l1_overflow", "concept", "L1 Buffer: 524,288 bytes (512 KB) per cube core",
     "The A1/B1/C1 queues of a cube core share L1. Shrink baseM/baseN/baseK or the queue depth.\nExample:\n"
     "    pipe.InitBuffer(inA1, 2, 128 * 64 * sizeof(half));   // 32 KB\n"
     "    pipe.InitBuffer(inB1, 2, 64 * 256 * sizeof(half));   // 64 KB"),
    ("l0a_overflow", "concept", "L0A: 65,536 bytes per cube core (the A2 queues)",
     "baseM * baseK * sizeof(T) * buffers must fit 64 KB (fp32 halves the block).\nExample:\n"
     "    pipe.InitBuffer(inA2, 2, 128 * 64 * sizeof(half));   // 2 x 16 KB\n    // fp32: baseK 32"),
    ("l0b_overflow", "concept", "L0B: 65,536 bytes per cube core (the B2 queues)",
     "baseK * baseN * sizeof(T) * buffers must fit 64 KB.\nExample:\n"
     "    pipe.InitBuffer(inB2, 2, 64 * 256 * sizeof(half));   // 2 x 32 KB\n    // fp32: baseN 128"),
    ("l0c_overflow", "concept", "L0C: 131,072 bytes per cube core (the CO1 queues, float results)",
     "baseM * baseN * 4 * buffers must fit 128 KB.\nExample:\n"
     "    pipe.InitBuffer(outCO1, 1, 128 * 256 * sizeof(float));  // 128 KB\n    // double-buffered: 128 x 128"),
    ("bt_overflow", "concept", "the bias table (C2): 1 KB per cube core", "baseN * 4 bytes at most 1 KB.\nExample:\n"
     "    pipe.InitBuffer(biasC2, 1, 256 * sizeof(float));\n    Mmad(c, a2, b2, biasC2Local, p);"),
    ("wrong_position", "concept", "a tensor in the wrong buffer for the call",
     "Vector instructions take UB tensors (VECIN/VECOUT/VECCALC); Mmad takes CO1, A2, B2; LoadData writes\n"
     "A2/B2 from A1/B1; DataCopy moves GM <-> UB and GM <-> L1; Fixpipe moves CO1 -> GM. The message names\n"
     "the call to use.\nExample:\n"
     "    LoadData(a2, a1, LoadData2DParams(0, kf, mf, 0, 0, false, 0));   // not DataCopy(a2, ...)\n"
     "    Mmad(c, a2, b2, MmadParams(m, n, k));                              // not Mmad(c, a1, ...)"),
    ("cube_align", "concept", "cube operands start on their buffer's alignment",
     "L0A/L0B tensors 512 bytes (a whole fractal: offsets in multiples of 256 half / 128 float), L1 32 bytes,\n"
     "CO1 256 elements for Mmad and 64 bytes for Fixpipe, the bias table 64 bytes.\nExample:\n"
     "    LoadData(a2[i * kf * 256], a1[i * 256], p);   // half: 256 elements per fractal\n"
     "    Mmad(c, a2, b2, MmadParams(m, n, k));"),
    ("buffer_out_of_bounds", "concept", "a cube call past the end of its L1/L0 tensor",
     "Mmad needs ceil16(m) x ceil(k/C0) fractals in A2, ceil(k/C0) x ceil16(n) in B2 and ceil16(m) x ceil16(n)\n"
     "floats in CO1; LoadData's last repeat must stay inside src and dst. Size the queues from the padded\n"
     "block.\nExample:\n"
     "    pipe.InitBuffer(inA2, 2, ceil16(baseM) * ceil16(baseK) * sizeof(half));\n"
     "    Mmad(c, a2, b2, MmadParams(mLen, nLen, kLen));"),
    ("core_type", "concept", "code for one kind of core running on the other",
     "The AIC has no UB or vector unit, the AIV no L1/L0. In a MIX kernel guard the cube side with\n"
     "`if ASCEND_IS_AIC` and the vector side with `if ASCEND_IS_AIV`; CrossCoreSetFlag modes 1 and 2 need a\n"
     "MIX kernel.\nExample:\n"
     "    if ASCEND_IS_AIC { pipe.InitBuffer(inA1, 2, bytes); }\n"
     "    if ASCEND_IS_AIV { pipe.InitBuffer(inQ, 2, bytes); }"),
    ("cross_core_race", "concept", "a core reads GM another core wrote (or overwrites what it read) without sync",
     "All cores run at once on the NPU. Between a write and another core's read put a release and an\n"
     "acquire: CrossCoreSetFlag after the write and CrossCoreWaitFlag before the read (mode 2 between an AIC\n"
     "and its AIVs), or SyncAll() between vector cores.\nExample:\n"
     "    Fixpipe<float, float, CFG_ROW_MAJOR>(workGm, c, p); CrossCoreSetFlag<2, PIPE_FIX>(0);   // AIC\n"
     "    CrossCoreWaitFlag(0); DataCopy(x, workGm, n);                                           // AIV"),
    ("matmul_misuse", "concept", "the Matmul API used against its protocol or with an impossible tiling",
     "Order: REGIST_MATMUL_OBJ (before InitBuffer), SetTensorA, SetTensorB, [SetBias], IterateAll or\n"
     "Iterate + GetTensorC per block, End. The tiling must satisfy the TCubeTiling rules.\nExample:\n"
     "    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &tiling);\n"
     "    mm.SetTensorA(aGm); mm.SetTensorB(bGm); mm.IterateAll(cGm); mm.End();"),
)
