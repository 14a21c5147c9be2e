/* Every kernel family fills a GPU: on the stand-in driver presenting an H100 (132 multiprocessors
 * of 2048 threads, CTORCH_CUDA_STANDIN_PROFILE=h100), the launches of each op at representative
 * sizes are read back from the stand-in's launch log. The op's largest launch must give every
 * multiprocessor at least 2 blocks where the size allows it (at least 4 elements for each of a
 * block's 256 threads), and no thread of it may walk more than a few hundred elements. A kernel
 * shaped for a CPU (a few long work items: one block of 256 threads over a 16M-element sum) fails
 * here even though its answer is right; the answers are the conformance suite's business. */
#include "standin_test.h"

#define MULTIPROCESSORS 132
#define MOST_ELEMENTS_PER_THREAD 300

static ct_tensor *random_on_device(int64_t rows, int64_t columns)
{
    int64_t shape[2] = {rows, columns};
    return ct_rand(shape, columns > 0 ? 2 : 1, CT_F32, CUDA0);
}

/* Runs op, waits for it, and checks its launches for an op over `elements` elements. */
static void check_launches(const char *name, int64_t elements, ct_tensor *(*op)(void *), void *arg)
{
    ctorch_standin_launch_log_clear_fn clear =
        (ctorch_standin_launch_log_clear_fn)standin_function("ctorch_standin_launch_log_clear");
    ctorch_standin_launch_log_fn read_log = (ctorch_standin_launch_log_fn)standin_function("ctorch_standin_launch_log");
    assert_int_equal(ct_synchronize(CUDA0), CT_OK);
    clear();
    ct_tensor *out = op(arg);
    if (!out) fail_msg("%s: %s", name, ct_last_error_message());
    assert_int_equal(ct_synchronize(CUDA0), CT_OK);
    ct_release(out);
    static ctorch_standin_launch launches[CTORCH_STANDIN_LAUNCH_LOG_CAPACITY];
    size_t count = read_log(launches, CTORCH_STANDIN_LAUNCH_LOG_CAPACITY);
    if (count == 0) fail_msg("%s launched no kernel", name);
    const ctorch_standin_launch *largest = &launches[0];
    printf("%s over %lld elements:", name, (long long)elements);
    for (size_t i = 0; i < count; i++) {
        const ctorch_standin_launch *l = &launches[i];
        printf(" %s %ux%u", l->kernel, l->grid_x, l->block_x);
        if ((double)l->grid_x * l->block_x > (double)largest->grid_x * largest->block_x) largest = l;
    }
    printf("\n");
    double threads = (double)largest->grid_x * largest->block_x;
    long allowed = (long)(elements / (4 * 256));
    long wanted = allowed < 2 * MULTIPROCESSORS ? allowed : 2 * MULTIPROCESSORS;
    if ((long)largest->grid_x < wanted)
        fail_msg("%s: its largest launch (%s) has %u blocks of %u; an H100 needs %ld (2 per "
                 "multiprocessor, or one per 1024 elements)", name, largest->kernel,
                 largest->grid_x, largest->block_x, wanted);
    if ((double)elements / threads > MOST_ELEMENTS_PER_THREAD)
        fail_msg("%s: its largest launch (%s, %u blocks of %u) leaves %.0f elements to each thread",
                 name, largest->kernel, largest->grid_x, largest->block_x, (double)elements / threads);
}

typedef struct inputs {
    ct_tensor *a, *b, *labels;
    int dim;
} inputs;

static ct_tensor *sum_all(void *arg) { return ct_sum(((inputs *)arg)->a, NULL, 0, false); }
static ct_tensor *max_all(void *arg) { return ct_max(((inputs *)arg)->a, NULL, 0, false); }
static ct_tensor *var_all(void *arg) { return ct_var(((inputs *)arg)->a, NULL, 0, 1, false); }
static ct_tensor *argmax_all(void *arg) { return ct_argmax_all(((inputs *)arg)->a); }
static ct_tensor *sum_dim(void *arg) { inputs *in = arg; return ct_sum(in->a, &in->dim, 1, false); }
static ct_tensor *max_dim(void *arg) { inputs *in = arg; return ct_max(in->a, &in->dim, 1, false); }
static ct_tensor *argmax_dim(void *arg) { inputs *in = arg; return ct_argmax(in->a, in->dim, false); }
static ct_tensor *add(void *arg) { inputs *in = arg; return ct_add(in->a, in->b); }
static ct_tensor *mul(void *arg) { inputs *in = arg; return ct_mul(in->a, in->b); }
static ct_tensor *exp_of(void *arg) { return ct_exp(((inputs *)arg)->a); }
static ct_tensor *softmax_rows(void *arg) { return ct_softmax(((inputs *)arg)->a, 1); }
static ct_tensor *log_softmax_rows(void *arg) { return ct_log_softmax(((inputs *)arg)->a, 1); }
static ct_tensor *cross_entropy(void *arg) { inputs *in = arg; return ct_cross_entropy(in->a, in->labels, 0.0); }

static ct_tensor *cross_entropy_backward(void *arg)
{
    inputs *in = arg;
    ct_tensor *loss = ct_cross_entropy(in->a, in->labels, 0.0);
    if (!loss || ct_backward(loss) != CT_OK) return NULL;
    return loss;
}

static void test_reductions_over_everything_fill_the_gpu(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_scope_push();
    inputs in = {.a = random_on_device(16 << 20, 0)};
    assert_non_null(in.a);
    check_launches("sum of 16M", 16 << 20, sum_all, &in);
    check_launches("max of 16M", 16 << 20, max_all, &in);
    check_launches("var of 16M", 16 << 20, var_all, &in);
    check_launches("argmax of 16M", 16 << 20, argmax_all, &in);
    ct_scope_pop();
}

static void test_reductions_over_one_dim_fill_the_gpu(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_scope_push();
    inputs square = {.a = random_on_device(4096, 4096)};
    inputs bias = {.a = random_on_device(512, 256)};
    assert_non_null(square.a);
    assert_non_null(bias.a);
    for (int dim = 0; dim < 2; dim++) {
        square.dim = dim;
        char name[64];
        snprintf(name, sizeof name, "sum over dim %d of [4096, 4096]", dim);
        check_launches(name, 4096 * 4096, sum_dim, &square);
        snprintf(name, sizeof name, "max over dim %d of [4096, 4096]", dim);
        check_launches(name, 4096 * 4096, max_dim, &square);
        snprintf(name, sizeof name, "argmax over dim %d of [4096, 4096]", dim);
        check_launches(name, 4096 * 4096, argmax_dim, &square);
    }
    bias.dim = 0; /* a bias gradient */
    check_launches("sum over dim 0 of [512, 256]", 512 * 256, sum_dim, &bias);
    ct_scope_pop();
}

static void test_rows_of_softmax_and_cross_entropy_fill_the_gpu(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_scope_push();
    int64_t count[1] = {4096};
    inputs in = {.a = random_on_device(4096, 1000),
                 .labels = ct_to_dtype(ct_mul_scalar(ct_rand(count, 1, CT_F32, CUDA0), 999.0), CT_I64)};
    assert_non_null(in.a);
    assert_non_null(in.labels);
    check_launches("softmax of [4096, 1000]", 4096 * 1000, softmax_rows, &in);
    check_launches("log_softmax of [4096, 1000]", 4096 * 1000, log_softmax_rows, &in);
    check_launches("cross-entropy of [4096, 1000]", 4096 * 1000, cross_entropy, &in);
    assert_int_equal(ct_requires_grad_(in.a, true), CT_OK);
    check_launches("cross-entropy of [4096, 1000] and its backward", 4096 * 1000, cross_entropy_backward, &in);
    ct_scope_pop();
}

static void test_elementwise_ops_fill_the_gpu(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_scope_push();
    inputs in = {.a = random_on_device(16 << 20, 0), .b = random_on_device(16 << 20, 0)};
    assert_non_null(in.a);
    assert_non_null(in.b);
    check_launches("add of 16M", 16 << 20, add, &in);
    check_launches("mul of 16M", 16 << 20, mul, &in);
    check_launches("exp of 16M", 16 << 20, exp_of, &in);
    ct_scope_pop();
}

typedef struct adam_case {
    ct_optimizer *optimizer;
    ct_tensor *parameter;
} adam_case;

static ct_tensor *adam_step(void *arg)
{
    adam_case *c = arg;
    if (ct_optimizer_step(c->optimizer) != CT_OK) return NULL;
    return ct_detach(c->parameter);
}

static void test_an_adam_step_fills_the_gpu(void **state)
{
    (void)state;
    REQUIRE_CUDA_DEVICES(1);
    ct_scope_push();
    ct_tensor *parameter = random_on_device(2048, 2048);
    assert_non_null(parameter);
    assert_int_equal(ct_requires_grad_(parameter, true), CT_OK);
    assert_int_equal(ct_backward(ct_sum(ct_mul(parameter, parameter), NULL, 0, false)), CT_OK);
    ct_adam_options options = ct_adam_options_default(1e-3);
    adam_case c = {ct_optim_adam_params(&parameter, 1, &options), parameter};
    assert_non_null(c.optimizer);
    check_launches("an Adam step on 2048 x 2048", 2048 * 2048, adam_step, &c);
    ct_optimizer_free(c.optimizer);
    ct_scope_pop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reductions_over_everything_fill_the_gpu),
        cmocka_unit_test(test_reductions_over_one_dim_fill_the_gpu),
        cmocka_unit_test(test_rows_of_softmax_and_cross_entropy_fill_the_gpu),
        cmocka_unit_test(test_elementwise_ops_fill_the_gpu),
        cmocka_unit_test(test_an_adam_step_fills_the_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
