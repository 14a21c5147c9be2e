/* ctorch bench [--json] [--device D] [--quick] [--big|--no-big] [FILTER]: the benchmarks of bench/,
 * with their baselines. */
#include "bench.h"
#include "tool.h"

int ct_cmd_bench(int argc, char **argv) { return ct_bench_main(argc, argv); }
