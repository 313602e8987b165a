"""What the CPU model implements, and suggestions when a kernel calls something
it does not.

API_NAMES must name only what include/kernel_operator.h really defines
(tests/test_ascendc_api.py checks every name against the header)."""

from __future__ import annotations

import difflib

API_NAMES: tuple[str, ...] = (
    # qualifiers and types
    "GM_ADDR", "__gm__", "__aicore__", "__global__", "half", "bfloat16_t",
    "GlobalTensor", "LocalTensor", "TPipe", "TQue", "TQueBind", "TBuf",
    "TPosition", "QuePosition", "RoundMode", "ReduceOrder", "HardEvent", "pipe_t", "event_t", "TEventID",
    "DataCopyParams", "DataCopyExtParams", "DataCopyPadExtParams", "DataCopyPadParams",
    "BinaryRepeatParams", "UnaryRepeatParams",
    # core and synchronisation
    "GetBlockIdx", "GetBlockNum", "GetTPipePtr", "PipeBarrier", "pipe_barrier", "SetFlag", "WaitFlag",
    "GetSubBlockIdx", "GetSubBlockNum", "GetTaskRation", "ASCEND_IS_AIC", "ASCEND_IS_AIV",
    "CrossCoreSetFlag", "CrossCoreWaitFlag", "SyncAll", "SetAtomicAdd", "SetAtomicNone", "DisableDmaAtomic",
    "GetSysWorkSpacePtr", "SetSysWorkspace", "GetUserWorkspace",
    # data movement
    "DataCopy", "DataCopyPad",
    # cube (AIC): GM -> L1 -> L0A/L0B -> Mmad -> L0C -> Fixpipe -> GM
    "Nd2NzParams", "LoadData", "LoadData2DParams", "LoadData2dParams", "LoadDataWithTranspose",
    "LoadData2dTransposeParams", "Mmad", "MmadParams", "Fixpipe", "FixpipeParamsV220", "FixpipeParams",
    "FixpipeConfig", "CFG_ROW_MAJOR", "CFG_NZ", "QuantMode_t", "CO2Layout", "CubeFormat",
    # the high-level Matmul API
    "Matmul", "MatmulType", "TCubeTiling", "REGIST_MATMUL_OBJ", "MatmulConfig", "CFG_NORM", "CFG_MDL",
    "LayoutMode",
    # vector compute
    "Add", "Sub", "Mul", "Div", "Max", "Min",
    "Exp", "Ln", "Abs", "Sqrt", "Rsqrt", "Reciprocal", "Relu",
    "Adds", "Muls", "Maxs", "Mins", "LeakyRelu", "Axpy", "Duplicate", "Cast",
    "ReduceSum", "ReduceMax", "ReduceMin", "WholeReduceSum", "WholeReduceMax", "WholeReduceMin",
    # debugging
    "printf", "DumpTensor",
    # constants and kernel-type macros
    "ONE_BLK_SIZE", "ONE_REPEAT_BYTE_SIZE", "MAX_REPEAT_TIMES", "DEFAULT_BLK_NUM", "DEFAULT_BLK_STRIDE",
    "DEFAULT_REPEAT_STRIDE", "BLOCK_CUBE", "KERNEL_TYPE_AIV_ONLY", "KERNEL_TYPE_AIC_ONLY",
    "KERNEL_TYPE_MIX_AIC_1_2", "KERNEL_TYPE_MIX_AIC_1_1", "KERNEL_TYPE_MIX_AIV_1_0", "KERNEL_TYPE_MIX_AIC_1_0",
    "KERNEL_TASK_TYPE_DEFAULT",
)

MEMBER_NAMES: dict[str, tuple[str, ...]] = {
    "GlobalTensor": ("SetGlobalBuffer", "GetValue", "SetValue", "GetSize", "GetPhyAddr", "SetL2CacheHint"),
    "LocalTensor": ("GetValue", "SetValue", "GetSize", "GetLength", "SetSize", "GetPhyAddr", "GetPosition",
                    "ReinterpretCast"),
    "TPipe": ("InitBuffer", "Destroy", "Reset", "FetchEventID", "AllocEventID", "ReleaseEventID"),
    "TQue": ("AllocTensor", "EnQue", "DeQue", "FreeTensor", "GetTensorCountInQue", "HasTensorInQue",
             "VacantInQue", "HasIdleBuffer"),
    "TBuf": ("Get", "GetWithOffset"),
    "TPosition": ("GM", "VECIN", "VECOUT", "VECCALC", "A1", "A2", "B1", "B2", "C1", "C2", "CO1", "CO2", "TSCM"),
    "Matmul": ("Init", "SetOrgShape", "SetSingleShape", "SetTail", "SetTensorA", "SetTensorB", "SetBias",
               "DisableBias", "ClearBias", "IterateAll", "Iterate", "GetTensorC", "End", "SetHF32", "SetWorkspace",
               "SetLocalWorkspace"),
    "MmadParams": ("m", "n", "k", "isBias", "fmOffset", "enSsparse", "enWinogradA", "enWinogradB", "unitFlag",
                   "kDirectionAlign", "cmatrixSource", "cmatrixInitVal"),
    "Nd2NzParams": ("ndNum", "nValue", "dValue", "srcNdMatrixStride", "srcDValue", "dstNzC0Stride",
                    "dstNzNStride", "dstNzMatrixStride"),
    "LoadData2DParams": ("startIndex", "repeatTimes", "srcStride", "sid", "dstGap", "ifTranspose", "addrMode"),
    "FixpipeParamsV220": ("nSize", "mSize", "srcStride", "dstStride", "quantPre", "deqScalar", "ndNum",
                          "srcNdStride", "dstNdStride", "reluEn", "unitFlag", "isChannelSplit"),
    "RoundMode": ("CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL", "CAST_ROUND", "CAST_TRUNC", "CAST_ODD"),
    "ReduceOrder": ("ORDER_VALUE_INDEX", "ORDER_INDEX_VALUE", "ORDER_ONLY_VALUE", "ORDER_ONLY_INDEX"),
}

COMPUTE_NAMES: tuple[str, ...] = (
    "DataCopy", "DataCopyPad", "LoadData", "LoadDataWithTranspose", "Mmad", "Fixpipe", "Add", "Sub", "Mul", "Div", "Max", "Min", "Exp", "Ln", "Abs", "Sqrt", "Rsqrt",
    "Reciprocal", "Relu", "Adds", "Muls", "Maxs", "Mins", "LeakyRelu", "Axpy", "Duplicate", "Cast", "ReduceSum",
    "ReduceMax", "ReduceMin", "WholeReduceSum", "WholeReduceMax", "WholeReduceMin",
)

# Real Ascend C APIs (public documentation) that the model does not implement:
# a kernel calling one gets a different message from a call to an invented name.
KNOWN_UNMODELLED: tuple[str, ...] = (
    "Compare", "CompareScalar", "Select", "Gather", "Transpose", "BlockReduceSum", "BlockReduceMax",
    "BlockReduceMin", "PairReduceSum", "Brcb", "SetMaskCount", "SetMaskNorm", "SetVectorMask", "ResetMask",
    "And", "Or", "Not", "ShiftLeft", "ShiftRight", "SoftMax", "LayerNorm", "Sort", "Power",
    "LoadDataWithSparse", "MmadWithSparse", "LoadData3DParamsV2", "SetFixpipeNz2ndFlag", "SetFixPipeConfig",
    "IterateBatch", "BatchMatmul", "Conv3D",
)

_ALL_MEMBERS = tuple(sorted({m for ms in MEMBER_NAMES.values() for m in ms}))


def nearest(name: str, *, member_of: str | None = None, n: int = 3) -> list[str]:
    """The modelled names closest to `name` (members of a class when given)."""
    pool = MEMBER_NAMES.get(member_of, _ALL_MEMBERS) if member_of else API_NAMES
    found = difflib.get_close_matches(name, pool, n=n, cutoff=0.5)
    if not found:
        low = name.lower()
        found = [p for p in pool if low in p.lower() or p.lower() in low][:n]
    return found


def unknown_api_message(name: str, *, member_of: str | None = None) -> str:
    """The message for a call the model does not know, with suggestions."""
    qualified = f"{member_of}::{name}" if member_of else f"AscendC::{name}"
    near = nearest(name, member_of=member_of)
    tail = (f"nearest real ones: {', '.join(near)}" if near
            else f"the modelled vector and copy APIs are: {', '.join(COMPUTE_NAMES)}")
    if name in KNOWN_UNMODELLED:
        return (
            f"{qualified} is a real Ascend C API that the CPU model does not implement; "
            f"write it with the modelled APIs ({tail})"
        )
    return f"{qualified} is not an Ascend C API known to the CPU model; {tail}"
