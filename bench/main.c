/* ctorch-bench: the benchmarks as a program of their own (also `ctorch bench`). */
#include "bench.h"

int main(int argc, char **argv) { return ct_bench_main(argc - 1, argv + 1); }
