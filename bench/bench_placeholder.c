int ct_bench_placeholder(void) { return 0; }
