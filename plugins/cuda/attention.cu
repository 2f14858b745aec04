// nvcc translation unit of plugins/gpu_common/attention.cuh.
#include "../gpu_common/attention.cuh"
