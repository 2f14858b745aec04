// hipcc translation unit of plugins/gpu_common/delta_net.cuh.
#include "../gpu_common/delta_net.cuh"
