/* The machine's f32 multiply-add peak: every thread runs independent chains of fused
 * multiply-adds on registers only (no memory traffic), with the vector width the compiler picks
 * for -march=native. bench_vs_onnxruntime.py compiles and runs it to put each model's achieved
 * GFLOP/s next to what the cores can do at all. Usage: fma_peak THREADS; prints GFLOP/s. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

typedef float vec __attribute__((vector_size(64)));
enum { kChains = 8, kLanes = sizeof(vec) / sizeof(float) };

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1) threads = 1;
  const long iterations = 20000000;
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    float sink = 0;
    double start = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    {
      vec acc[kChains], mul, add;
      for (int l = 0; l < kLanes; ++l) {
        mul[l] = 0.999999f;
        add[l] = 1e-7f;
      }
      for (int c = 0; c < kChains; ++c)
        for (int l = 0; l < kLanes; ++l) acc[c][l] = (float)(c + l);
      for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 8
        for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * mul + add;
      }
      for (int c = 0; c < kChains; ++c)
        for (int l = 0; l < kLanes; ++l) sink += acc[c][l];
    }
    double seconds = omp_get_wtime() - start;
    double gflops = 2.0 * kChains * kLanes * (double)iterations * threads / seconds / 1e9;
    if (gflops > best) best = gflops;
    if (sink == 12345.0f) printf("#");  /* keeps the chains alive */
  }
  printf("%.1f\n", best);
  return 0;
}
