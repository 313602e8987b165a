// kernel_operator.h for EvoKernel's CPU model of Ascend C.
//
// Our own model of the public Ascend C programming interface, written from
// its documentation; not Huawei's header. Kernels include it in place of the
// CANN header and are compiled with g++ and run block by block on the CPU
// (backends/ascendc/_build.py). What it covers is listed in API_NAMES
// (backends/ascendc/_api.py); anything else is a compile error that the
// loader turns into "not an Ascend C API known to the CPU model".
#pragma once
#include "evk_ascendc/core.h"
#include "evk_ascendc/tensor.h"
#include "evk_ascendc/pipe.h"
#include "evk_ascendc/copy.h"
#include "evk_ascendc/vector.h"
#include "evk_ascendc/cast.h"
#include "evk_ascendc/reduce.h"
#include "evk_ascendc/sync.h"
#include "evk_ascendc/cube.h"
#include "evk_ascendc/matmul.h"
#include "evk_ascendc/debug.h"
#include "evk_ascendc/runtime.h"
