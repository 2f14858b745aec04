// The kernel sources compiled for the host emulator (emulate.hpp).
#include "../attention.cuh"
#include "../gemm.cuh"
#include "../rowwise.cuh"
