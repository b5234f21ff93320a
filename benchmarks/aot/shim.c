/* ctypes-facing shim around the CuTe DSL AOT export of one row_norm_fw SKU (design (b) of the
 * launch-path study, benchmarks/bench_launch.py).  build_aot.py generates bench_aot.h/.o with
 * cute.compile(...).export_to_c(...) and links this file, the object, the DSL's static
 * libcuda_dialect_runtime and the static CUDA runtime into build/libbench_aot.so.
 *
 * BENCH_AOT_CIFACE is defined by build_aot.py: the packed-argument entry the header's wrapper calls.
 */
#include <stdint.h>
#include <time.h>
#include "bench_aot.h"

#ifndef BENCH_AOT_CIFACE
#error "BENCH_AOT_CIFACE must name the exported _mlir_..._ciface_ function"
#endif

static bench_aot_Kernel_Module_t g_module;

/* Load the embedded cubin on device 0 with the export's init/load entries (the header's
 * Kernel_Module_Load does the same for every device but ignores a failed cudaGetDeviceCount and
 * then loops over an uninitialised count).  Returns the first CUDA runtime error (0 on success). */
int bench_aot_load(void) {
    int count = 0;
    cudaError_t ret = cudaGetDeviceCount(&count);
    if (ret != cudaSuccess) return (int)ret;
    if (count < 1) return (int)cudaErrorNoDevice;
    cudaLibrary_t *libraryPtr = &g_module.module;
    struct { cudaLibrary_t **libraryPtr; cudaError_t *ret; } initArgs = {&libraryPtr, &ret};
    _mlir_bench_aot_cuda_init((void **)&initArgs);
    if (ret != cudaSuccess) return (int)ret;
    int32_t device_id = 0;
    struct { cudaLibrary_t **library; int32_t *device_id; cudaError_t *ret; } loadArgs =
        {&libraryPtr, &device_id, &ret};
    _mlir_bench_aot_cuda_load_to_device((void **)&loadArgs);
    if (ret != cudaSuccess) return (int)ret;
    return (int)cudaGetLastError();
}

/* One launch through the generated C wrapper: typed arguments, exactly the kernel's host ABI
 * (x y w b mean rstd M N s1 s2 x0 x1 x2 y0 y1 y2 eps flags hw cpg G stream).  Returns the launch
 * status. */
int bench_aot_launch(void *px, void *py, void *pw, void *pb, void *pmean, void *prstd,
                     int32_t M, int32_t N, int32_t s1, int32_t s2, int64_t x0, int64_t x1,
                     int64_t x2, int64_t y0, int64_t y1, int64_t y2, double eps, int32_t flags,
                     int32_t hw, int32_t cpg, int32_t G, void *stream) {
    return cute_dsl_bench_aot_wrapper(&g_module, px, py, pw, pb, pmean, prstd, M, N, s1, s2, x0,
                                      x1, x2, y0, y1, y2, eps, flags, hw, cpg, G,
                                      (cudaStream_t)stream);
}

/* One launch from a caller-packed array: args[0..21] point at the 22 values above (in order) and
 * args[22] at an int32 that receives the status.  The cheapest call from Python (two ctypes
 * arguments, the array is filled once). */
void bench_aot_launch_packed(void **args) {
    BENCH_AOT_CIFACE(args, 23);
}

/* n launches in a C loop: host nanoseconds per launch of the DSL shim itself, with no Python in
 * the way.  Returns the mean ns per launch, or a negative status on the first failed launch. */
double bench_aot_loop_ns(int n, void *px, void *py, int32_t M, int32_t N, void *stream) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < n; ++i) {
        int r = cute_dsl_bench_aot_wrapper(&g_module, px, py, 0, 0, 0, 0, M, N, 1, 1, N, N, N,
                                           N, N, N, 1e-6, 0, 1, 0, 1, (cudaStream_t)stream);
        if (r != 0) return -(double)r;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n;
}

int bench_aot_synchronize(void) { return (int)cudaDeviceSynchronize(); }

int bench_aot_last_error(void) { return (int)cudaGetLastError(); }
