/* Streaming read bandwidth of this machine: the denominator of every "% of the bandwidth bound"
 * figure. Reads a buffer much larger than the caches with wide vector loads on N threads and
 * reports the best of several passes in GB/s (1 GB = 1e9 bytes).
 * Build and run: bench/membw.sh [threads] [MiB] */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#define LANE 64
typedef __m512i vec;
#define VLOAD(p) _mm512_load_si512((const void *)(p))
#define VADD(a, b) _mm512_add_epi64(a, b)
#define VZERO() _mm512_setzero_si512()
static long long vsum(vec v) { return _mm512_reduce_add_epi64(v); }
#elif defined(__AVX2__)
#include <immintrin.h>
#define LANE 32
typedef __m256i vec;
#define VLOAD(p) _mm256_load_si256((const __m256i *)(p))
#define VADD(a, b) _mm256_add_epi64(a, b)
#define VZERO() _mm256_setzero_si256()
static long long vsum(vec v) { long long t[4]; memcpy(t, &v, 32); return t[0] + t[1] + t[2] + t[3]; }
#else
#define LANE 8
typedef uint64_t vec;
#define VLOAD(p) (*(const uint64_t *)(p))
#define VADD(a, b) ((a) + (b))
#define VZERO() 0
static long long vsum(vec v) { return (long long)v; }
#endif

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : omp_get_num_procs();
    size_t mib = argc > 2 ? strtoull(argv[2], 0, 10) : 2048;
    size_t n = mib << 20;
    omp_set_num_threads(threads);
    char *a = aligned_alloc(4096, n);
    if (!a) { fprintf(stderr, "membw: cannot allocate %zu MiB\n", mib); return 1; }
#pragma omp parallel for
    for (size_t i = 0; i < n; i += 4096) memset(a + i, (int)(i >> 12), 4096);
    double best = 1e30; long long sink = 0;
    for (int pass = 0; pass < 8; pass++) {
        double t = now();
#pragma omp parallel reduction(+ : sink)
        {
            vec s0 = VZERO(), s1 = VZERO(), s2 = VZERO(), s3 = VZERO();
#pragma omp for schedule(static)
            for (size_t i = 0; i < n; i += 4 * LANE) {
                s0 = VADD(s0, VLOAD(a + i)); s1 = VADD(s1, VLOAD(a + i + LANE));
                s2 = VADD(s2, VLOAD(a + i + 2 * LANE)); s3 = VADD(s3, VLOAD(a + i + 3 * LANE));
            }
            sink += vsum(VADD(VADD(s0, s1), VADD(s2, s3)));
        }
        t = now() - t;
        if (t < best) best = t;
    }
    printf("read bandwidth: %.1f GB/s (%d threads, %zu MiB buffer, %d-byte loads, best of 8) [%lld]\n",
           n / best / 1e9, threads, mib, LANE, sink & 1);
    free(a);
    return 0;
}
