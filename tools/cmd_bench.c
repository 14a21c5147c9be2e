/* ctorch bench [--json] [FILTER]: the benchmarks of bench/, with their baselines. */
#include "bench.h"
#include "tool.h"

int ct_cmd_bench(int argc, char **argv) { return ct_bench_main(argc, argv); }
