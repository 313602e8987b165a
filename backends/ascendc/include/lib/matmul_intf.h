// The Matmul API header of CANN kernels: on the CPU model everything is in kernel_operator.h.
#pragma once
#include "../kernel_operator.h"
