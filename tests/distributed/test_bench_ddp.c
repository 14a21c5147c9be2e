/* The DDP benchmark's code (bench/bench_ddp_run.c) runs at a small size under mpirun and reports
 * figures that make sense: every collective matches on every rank (or the job would hang until its
 * time limit), a bucket per parameter is found as DDP made them, positive times. It times nothing
 * that is checked. */
#include "bench_ddp.h"
#include "dist_test.h"

static void the_ddp_benchmark_runs_small(void **state)
{
    (void)state;
    /* 3 Linear(32, 32) layers; buckets of ~100 bytes: one per parameter (6). */
    const ct_ddp_bench_spec spec = {.layers = 3, .width = 32, .batch = 4, .bucket_cap_mb = 1e-4,
                                    .warmup = 1, .repeats = 3, .settle_seconds = 0};
    ct_ddp_bench_figures f;
    if (!ct_ddp_bench_run(&spec, &f)) fail_msg("ct_ddp_bench_run: %s", f.error);
    assert_int_equal(f.world, ct_dist_world_size());
    assert_int_equal(f.bucket_count, 6);
    assert_true(f.all_reduce_per_bucket);
    assert_int_equal(f.gradient_bytes, 3 * (32 * 32 + 32) * (int64_t)sizeof(float));
    assert_true(f.threads_per_rank >= 1 && f.threads_alone >= f.threads_per_rank);
    assert_true(f.step_ddp > 0 && f.step_no_sync > 0);
    assert_true(f.backward_ddp > 0 && f.backward_no_sync > 0 && f.all_reduce > 0);
    if (ct_dist_rank() == 0) assert_true(f.step_alone > 0);
    assert_true(isfinite(f.hidden_fraction));
    assert_true(f.last_wait >= 0 && f.last_communication >= 0);
}

static void a_bad_spec_is_refused_on_every_rank(void **state)
{
    (void)state;
    const ct_ddp_bench_spec spec = {.layers = 0, .width = 32, .batch = 4, .bucket_cap_mb = 1, .repeats = 3};
    ct_ddp_bench_figures f;
    assert_false(ct_ddp_bench_run(&spec, &f));
    assert_non_null(strstr(f.error, "layers"));
    assert_int_equal(ct_dist_barrier(), CT_OK); /* the ranks are still in step */
}

int main(void)
{
    if (ct_dist_init() != CT_OK) {
        fprintf(stderr, "ct_dist_init: %s\n", ct_last_error_message());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_ddp_benchmark_runs_small),
        cmocka_unit_test(a_bad_spec_is_refused_on_every_rank),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_dist_finalize();
    return failed;
}
