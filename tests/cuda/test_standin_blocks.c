/* The stand-in CUDA driver's blocks: the threads of a block run as fibers that share the block's
 * local arrays and meet at barriers, as a GPU's threads do; threads that disagree about barriers
 * fail the run and, launched on a stream, the context. Run by ctest with 2 stand-in devices. */
#include <stdbool.h>

#include "standin_direct.h"

/* A block's local array, as a kernel's CT_LOCAL one: this thread's, shared by the fibers of the
 * block it runs. */
static _Thread_local long block_scratch[1024];

typedef struct sum_job {
    const long *in;
    long *out;    /* one sum per block */
    long skip_every; /* > 0: blocks whose index is a multiple of it return at once (all threads) */
} sum_job;

/* Each block sums its items in a tree: a step reads what other threads wrote in the step before,
 * which is there only if every thread finished that step before any began the next. */
static void tree_sum(void *arg)
{
    const sum_job *job = arg;
    long group = group_id(), local = local_id(), size = group_size();
    if (job->skip_every > 0 && group % job->skip_every == 0) return;
    block_scratch[local] = job->in[group * size + local];
    barrier();
    for (long half = size / 2; half > 0; half /= 2) {
        if (local < half) block_scratch[local] += block_scratch[local + half];
        barrier();
    }
    if (local == 0) job->out[group] = block_scratch[0];
}

/* Runs tree_sum over `blocks` blocks of `size` (a power of 2) and checks each block's sum. */
static void check_tree_sums(long blocks, long size, long skip_every, bool on_a_stream)
{
    long items = blocks * size;
    long *in = malloc((size_t)items * sizeof *in), *out = malloc((size_t)blocks * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    for (long i = 0; i < items; i++) in[i] = (i * 7919) % 1009 - 300 + i / size;
    for (long g = 0; g < blocks; g++) out[g] = -1;
    /* The local array holds what an earlier run left: a step that read too early reads that. */
    for (long t = 0; t < 1024; t++) block_scratch[t] = 1000000 + t;
    sum_job job = {in, out, skip_every};
    if (on_a_stream) {
        CHECK(launch_blocks(NULL, tree_sum, &job, blocks, size));
        CHECK(cu.cuCtxSynchronize());
    } else {
        CHECK(run_blocks(tree_sum, &job, blocks, size));
    }
    for (long g = 0; g < blocks; g++) {
        long expected = 0;
        for (long t = 0; t < size; t++) expected += in[g * size + t];
        if (skip_every > 0 && g % skip_every == 0) expected = -1;
        if (out[g] != expected)
            fail_msg("blocks of %ld: block %ld of %ld summed %ld, not %ld", size, g, blocks, out[g], expected);
    }
    free(in);
    free(out);
}

static void test_a_tree_sum_in_a_blocks_local_array_meets_at_barriers(void **state)
{
    (void)state;
    check_tree_sums(5, 1, 0, false);
    check_tree_sums(5, 32, 0, false);
    check_tree_sums(7, 256, 0, false);
    check_tree_sums(3, 1024, 0, false);
    check_tree_sums(1, 1024, 0, false);
    check_tree_sums(2, 2, 0, false);
}

/* Blocks decide for themselves: one whose threads all return at once reaches no barrier (as the
 * last blocks of an oversized grid do), and the blocks after it still meet at theirs. */
static void test_whole_blocks_may_return_before_any_barrier(void **state)
{
    (void)state;
    check_tree_sums(6, 64, 2, false); /* blocks 0, 2 and 4 return */
    check_tree_sums(6, 64, 3, false);
}

/* A stream's worker runs blocks the same way, with its own local arrays. */
static void test_a_stream_runs_blocks_on_its_worker(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx0));
    check_tree_sums(4, 256, 0, true);
    check_tree_sums(3, 1024, 1, true);
}

typedef struct ids_job {
    long *out; /* 3 per item */
} ids_job;

/* A thread that reaches no barrier: every item reads its own ids. */
static void record_ids(void *arg)
{
    const ids_job *job = arg;
    long group = group_id(), local = local_id(), size = group_size();
    long *at = job->out + 3 * (group * size + local);
    at[0] = group;
    at[1] = local;
    at[2] = size;
}

static void test_threads_that_reach_no_barrier_read_their_ids(void **state)
{
    (void)state;
    const long shapes[][2] = {{1, 1}, {3, 1}, {4, 256}, {2, 1024}, {5, 96}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        long blocks = shapes[s][0], size = shapes[s][1];
        long *out = calloc((size_t)(3 * blocks * size), sizeof *out);
        assert_non_null(out);
        ids_job job = {out};
        CHECK(run_blocks(record_ids, &job, blocks, size));
        for (long i = 0; i < blocks * size; i++) {
            assert_int_equal(out[3 * i], i / size);
            assert_int_equal(out[3 * i + 1], i % size);
            assert_int_equal(out[3 * i + 2], size);
        }
        free(out);
    }
    assert_int_equal(run_blocks(record_ids, NULL, 1, 1025), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(run_blocks(record_ids, NULL, 0, 32), CUDA_ERROR_INVALID_VALUE);
}

/* Kernels whose threads disagree about barriers. */
typedef enum {
    ODD_THREADS_RETURN,      /* the odd threads of a block return, the even ones wait */
    THREAD_0_RETURNS,        /* thread 0 returns, the others wait */
    THREAD_0_WAITS_TWICE,    /* thread 0 reaches one barrier more than the others */
    LAST_BLOCK_DISAGREES,    /* blocks meet as they should, but in the last the odd threads return */
} disagreement;

typedef struct disagree_job {
    disagreement kind;
    long blocks;
    long *reached_end; /* threads past their last barrier */
} disagree_job;

static void disagree(void *arg)
{
    disagree_job *job = arg;
    long group = group_id(), local = local_id();
    switch (job->kind) {
    case ODD_THREADS_RETURN:
        if (local % 2) return;
        break;
    case THREAD_0_RETURNS:
        if (local == 0) return;
        break;
    case THREAD_0_WAITS_TWICE:
        if (local == 0) barrier();
        break;
    case LAST_BLOCK_DISAGREES:
        if (group == job->blocks - 1 && local % 2) return;
        break;
    }
    barrier();
    (*job->reached_end)++;
}

static void test_threads_that_disagree_about_barriers_fail_the_run(void **state)
{
    (void)state;
    const disagreement kinds[] = {ODD_THREADS_RETURN, THREAD_0_RETURNS, THREAD_0_WAITS_TWICE,
                                  LAST_BLOCK_DISAGREES};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        long reached_end = 0;
        disagree_job job = {kinds[k], 3, &reached_end};
        assert_int_equal(run_blocks(disagree, &job, 3, 64), CUDA_ERROR_LAUNCH_FAILED);
        /* The run stops at the block that disagrees. */
        if (kinds[k] == LAST_BLOCK_DISAGREES)
            assert_int_equal(reached_end, 2 * 64);
        else
            assert_true(reached_end < 64);
    }
    /* The thread's fibers start over for the next run. */
    check_tree_sums(3, 256, 0, false);
}

/* As on a GPU, a kernel's fault fails its context: the next synchronisation and every call in
 * the context after it say so, other contexts go on, and a new context works again. Runs last:
 * it destroys device 1's context. */
static void test_a_block_that_disagrees_fails_its_context(void **state)
{
    (void)state;
    CHECK(cu.cuCtxSetCurrent(ctx1));
    CUstream stream;
    CHECK(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    long reached_end = 0;
    disagree_job job = {ODD_THREADS_RETURN, 2, &reached_end};
    CHECK(launch_blocks(stream, disagree, &job, 2, 32));
    assert_int_equal(cu.cuStreamSynchronize(stream), CUDA_ERROR_LAUNCH_FAILED);
    CUdeviceptr p;
    assert_int_equal(cu.cuMemAlloc(&p, 64), CUDA_ERROR_LAUNCH_FAILED);
    assert_int_equal(cu.cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
    assert_int_equal(launch_blocks(stream, disagree, &job, 2, 32), CUDA_ERROR_LAUNCH_FAILED);
    /* Device 0's context is another. */
    CHECK(cu.cuCtxSetCurrent(ctx0));
    CHECK(cu.cuMemAlloc(&p, 64));
    CHECK(cu.cuMemFree(p));
    CHECK(cu.cuCtxSynchronize());
    /* Destroyed (the last reference released) and made again, device 1's context works. */
    CHECK(cu.cuDevicePrimaryCtxRelease(1));
    CHECK(cu.cuDevicePrimaryCtxRetain(&ctx1, 1));
    CHECK(cu.cuCtxSetCurrent(ctx1));
    CHECK(cu.cuMemAlloc(&p, 64));
    CHECK(cu.cuMemFree(p));
    CHECK(cu.cuCtxSynchronize());
}

/* ---- the other environments ---- */


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_tree_sum_in_a_blocks_local_array_meets_at_barriers),
        cmocka_unit_test(test_whole_blocks_may_return_before_any_barrier),
        cmocka_unit_test(test_a_stream_runs_blocks_on_its_worker),
        cmocka_unit_test(test_threads_that_reach_no_barrier_read_their_ids),
        cmocka_unit_test(test_threads_that_disagree_about_barriers_fail_the_run),
        /* last: it destroys device 1's context */
        cmocka_unit_test(test_a_block_that_disagrees_fails_its_context),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
