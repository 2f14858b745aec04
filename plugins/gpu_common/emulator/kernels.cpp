// The kernel sources compiled for the host emulator (emulate.hpp).
#include "../attention.cuh"
#include "../delta_net.cuh"
#include "../gemm.cuh"
#include "../rowwise.cuh"
