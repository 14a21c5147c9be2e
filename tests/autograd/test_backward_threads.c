/* Autograd from several threads: graphs recorded concurrently, and backwards run concurrently
 * over graphs that meet in one leaf, accumulate every gradient (the engine runs one backward at
 * a time); a new thread records with grad mode on. */
#include <pthread.h>

#include "test_common.h"

enum { THREADS = 4, ROUNDS = 200, N = 64 };

typedef struct job {
    ct_tensor *w; /* the shared leaf */
    int id;
    ct_status status;
} job;

/* ROUNDS times: loss = sum(w * (id + 1)), backward. Each adds id + 1 to every element of w.grad. */
static void *train(void *arg)
{
    job *j = arg;
    for (int r = 0; r < ROUNDS && j->status == CT_OK; r++) {
        ct_scope_push();
        ct_tensor *scaled = ct_mul_scalar(j->w, j->id + 1);
        ct_tensor *loss = ct_sum(scaled, NULL, 0, false);
        j->status = loss ? ct_backward(loss) : ct_last_error();
        ct_scope_pop();
    }
    return NULL;
}

static void concurrent_backwards_into_one_leaf_add_every_gradient(void **state)
{
    (void)state;
    ct_tensor *w = ct_ones((int64_t[]){N}, 1, CT_F32, CT_DEVICE_CPU);
    assert_int_equal(ct_requires_grad_(w, true), CT_OK);
    pthread_t threads[THREADS];
    job jobs[THREADS];
    for (int i = 0; i < THREADS; i++) {
        jobs[i] = (job){w, i, CT_OK};
        assert_int_equal(pthread_create(&threads[i], NULL, train, &jobs[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < THREADS; i++) assert_int_equal(jobs[i].status, CT_OK);
    /* every sum is of small integers, exact in float32 */
    double want = 0;
    for (int i = 0; i < THREADS; i++) want += (double)ROUNDS * (i + 1);
    ct_tensor *grad = ct_grad(w);
    assert_non_null(grad);
    float got[N];
    assert_int_equal(ct_tensor_to_array(grad, got, sizeof got), CT_OK);
    for (int i = 0; i < N; i++) assert_true(got[i] == (float)want);
    ct_release(grad);
    ct_release(w);
}

static void *grad_mode_of_a_new_thread(void *arg)
{
    *(bool *)arg = ct_is_grad_enabled();
    return NULL;
}

static void a_new_thread_starts_with_grad_mode_on(void **state)
{
    (void)state;
    ct_no_grad_push();
    bool enabled = false;
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, grad_mode_of_a_new_thread, &enabled), 0);
    pthread_join(thread, NULL);
    assert_false(ct_is_grad_enabled());
    ct_no_grad_pop();
    assert_true(enabled);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_backwards_into_one_leaf_add_every_gradient),
        cmocka_unit_test(a_new_thread_starts_with_grad_mode_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
