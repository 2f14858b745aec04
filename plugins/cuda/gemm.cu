// nvcc translation unit of plugins/gpu_common/gemm.cuh.
#include "../gpu_common/gemm.cuh"
