/* Post-accumulate-grad hooks and end-of-backward callbacks: a hook sees a leaf's whole gradient
 * of the backward once, after every path into it has run; callbacks run once after every hook;
 * failures stop the backward and come back from ct_backward. */
#include <math.h>

#include "autograd_test.h"

/* What the hooks and callbacks saw, in the order they ran. */
typedef struct journal {
    int count;
    char events[16][32];
    double grads[16];
    ct_status fail_with;  /* a hook or callback returns this */
    ct_status callback_saw;
} journal;

static ct_status record_hook(ct_tensor *leaf, void *context)
{
    journal *j = context;
    snprintf(j->events[j->count], sizeof j->events[0], "hook");
    j->grads[j->count++] = grad_of(leaf);
    return j->fail_with;
}

static ct_status second_hook(ct_tensor *leaf, void *context)
{
    journal *j = context;
    snprintf(j->events[j->count], sizeof j->events[0], "second");
    j->grads[j->count++] = grad_of(leaf);
    return CT_OK;
}

static ct_status record_callback(void *context, ct_status backward_status)
{
    journal *j = context;
    snprintf(j->events[j->count++], sizeof j->events[0], "callback");
    j->callback_saw = backward_status;
    return CT_OK;
}

static ct_status hook_that_queues(ct_tensor *leaf, void *context)
{
    journal *j = context;
    ct_status status = record_hook(leaf, context);
    if (status != CT_OK) return status;
    return ct_autograd_queue_callback(record_callback, j);
}

static void a_hook_sees_the_whole_gradient_once(void **state)
{
    (void)state;
    ct_scope_push();
    /* y = x * x + 3 x: two paths into x (three edges); dy/dx = 2x + 3 = 7 at x = 2 */
    ct_tensor *x = scalar(2.0);
    journal j = {0};
    assert_int_equal(ct_register_post_accumulate_grad_hook(x, record_hook, &j), CT_OK);
    assert_int_equal(ct_register_post_accumulate_grad_hook(x, second_hook, &j), CT_OK);
    ct_tensor *y = ct_add(ct_mul(x, x), ct_mul_scalar(x, 3.0));
    assert_int_equal(ct_backward(y), CT_OK);
    assert_int_equal(j.count, 2);
    assert_string_equal(j.events[0], "hook");   /* in registration order */
    assert_string_equal(j.events[1], "second");
    assert_true(fabs(j.grads[0] - 7.0) < 1e-12);
    /* A second backward: the hook sees the accumulated gradient, 14. */
    y = ct_add(ct_mul(x, x), ct_mul_scalar(x, 3.0));
    assert_int_equal(ct_remove_post_accumulate_grad_hook(x, second_hook, &j), CT_OK);
    assert_int_equal(ct_backward(y), CT_OK);
    assert_int_equal(j.count, 3);
    assert_true(fabs(j.grads[2] - 14.0) < 1e-12);
    ct_scope_pop();
}

static void hooks_fire_leaf_by_leaf_as_backward_reaches_them(void **state)
{
    (void)state;
    ct_scope_push();
    /* loss = w2 * (w1 * x): w2's gradient is complete before w1's is computed. */
    ct_tensor *w1 = scalar(3.0), *w2 = scalar(5.0);
    double xv = 2.0;
    ct_tensor *x = ct_tensor_from_data(&xv, CT_F64, NULL, 0, CT_DEVICE_CPU);
    journal j1 = {0}, j2 = {0};
    ct_register_post_accumulate_grad_hook(w1, record_hook, &j1);
    ct_register_post_accumulate_grad_hook(w2, record_hook, &j2);
    assert_int_equal(ct_backward(ct_mul(w2, ct_mul(w1, x))), CT_OK);
    assert_int_equal(j1.count, 1);
    assert_int_equal(j2.count, 1);
    assert_true(fabs(j1.grads[0] - 10.0) < 1e-12);
    assert_true(fabs(j2.grads[0] - 6.0) < 1e-12);
    ct_scope_pop();
}

static void a_leaf_root_runs_its_hooks(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *x = scalar(4.0);
    journal j = {0};
    ct_register_post_accumulate_grad_hook(x, record_hook, &j);
    assert_int_equal(ct_backward(x), CT_OK);
    assert_int_equal(j.count, 1);
    assert_true(fabs(j.grads[0] - 1.0) < 1e-12);
    ct_scope_pop();
}

static void callbacks_run_once_after_every_hook(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *a = scalar(1.0), *b = scalar(2.0);
    journal j = {0};
    ct_register_post_accumulate_grad_hook(a, hook_that_queues, &j);
    ct_register_post_accumulate_grad_hook(b, record_hook, &j);
    assert_int_equal(ct_backward(ct_mul(ct_add(a, b), b)), CT_OK);
    assert_int_equal(j.count, 3);
    assert_string_equal(j.events[2], "callback");
    assert_int_equal(j.callback_saw, CT_OK);
    /* Outside a backward there is nothing to queue on. */
    assert_int_not_equal(ct_autograd_queue_callback(record_callback, &j), CT_OK);
    assert_error(CT_ERR_INVALID_ARGUMENT, "no backward is running");
    ct_scope_pop();
}

static void a_failing_hook_stops_the_backward_and_callbacks_still_run(void **state)
{
    (void)state;
    ct_scope_push();
    ct_tensor *a = scalar(1.0);
    journal j = {0};
    ct_register_post_accumulate_grad_hook(a, hook_that_queues, &j);
    ct_register_post_accumulate_grad_hook(a, record_hook, &j);
    journal failing = {.fail_with = CT_ERR_BACKEND};
    ct_register_post_accumulate_grad_hook(a, record_hook, &failing);
    assert_int_equal(ct_backward(ct_mul_scalar(a, 2.0)), CT_ERR_BACKEND);
    assert_int_equal(j.callback_saw, CT_ERR_BACKEND); /* told, to let go of what it started */
    ct_clear_error();
    /* The engine is not left half-way: the next backward works and fires each hook again. */
    failing.fail_with = CT_OK;
    assert_int_equal(ct_backward(ct_mul_scalar(a, 2.0)), CT_OK);
    assert_int_equal(failing.count, 2);
    ct_scope_pop();
}

static void bad_registrations_are_errors(void **state)
{
    (void)state;
    ct_scope_push();
    journal j = {0};
    ct_tensor *a = scalar(1.0);
    double v = 1.0;
    ct_tensor *plain = ct_tensor_from_data(&v, CT_F64, NULL, 0, CT_DEVICE_CPU);
    assert_int_not_equal(ct_register_post_accumulate_grad_hook(plain, record_hook, &j), CT_OK);
    assert_error(CT_ERR_INVALID_ARGUMENT, "does not require grad");
    assert_int_not_equal(ct_register_post_accumulate_grad_hook(ct_mul(a, a), record_hook, &j), CT_OK);
    assert_error(CT_ERR_INVALID_ARGUMENT, "made by an op");
    assert_int_not_equal(ct_register_post_accumulate_grad_hook(NULL, record_hook, &j), CT_OK);
    ct_clear_error();
    assert_int_not_equal(ct_remove_post_accumulate_grad_hook(a, record_hook, &j), CT_OK);
    assert_error(CT_ERR_INVALID_ARGUMENT, "no hook");
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_hook_sees_the_whole_gradient_once),
        cmocka_unit_test(hooks_fire_leaf_by_leaf_as_backward_reaches_them),
        cmocka_unit_test(a_leaf_root_runs_its_hooks),
        cmocka_unit_test(callbacks_run_once_after_every_hook),
        cmocka_unit_test(a_failing_hook_stops_the_backward_and_callbacks_still_run),
        cmocka_unit_test(bad_registrations_are_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
