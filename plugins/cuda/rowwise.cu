// nvcc translation unit of plugins/gpu_common/rowwise.cuh.
#include "../gpu_common/rowwise.cuh"
