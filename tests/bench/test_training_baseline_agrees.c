/* The training benchmark compares ctorch's MLP step with a hand-written one; the comparison means
 * something only while both compute the same step. These run the benchmark's own agreement check
 * at small sizes (so that it cannot rot unnoticed), and show that it catches a different step. */
#include "bench_training.h"
#include "test_common.h"

static const ct_mlp_spec digits_like = {2, {64, 16, 10}, 8, 0.1};
static const ct_mlp_spec deep = {4, {24, 40, 32, 28, 12}, 16, 0.05};

static void assert_agree(const ct_mlp_spec *spec, ct_device device)
{
    char message[512];
    if (!ct_mlp_check_agreement(spec, device, 3, message, sizeof message))
        fail_msg("ctorch and the hand-written step disagree: %s", message);
}

static void one_hidden_layer_steps_agree_on_the_cpu(void **state)
{
    (void)state;
    assert_agree(&digits_like, CT_DEVICE_CPU);
}

static void four_layer_steps_agree_on_the_cpu(void **state)
{
    (void)state;
    assert_agree(&deep, CT_DEVICE_CPU);
}

static void steps_on_opencl_agree_with_the_hand_written_ones(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) == 0) skip();
    assert_agree(&deep, (ct_device){CT_OPENCL, 0});
}

/* A pair set up as the benchmark does, for tampering with one side. */
typedef struct pair {
    ct_mlp_ctorch ctorch;
    ct_mlp_baseline baseline;
} pair;

static void make_pair(pair *p, const ct_mlp_spec *spec)
{
    memset(&p->baseline, 0, sizeof p->baseline);
    if (!ct_mlp_ctorch_init(&p->ctorch, spec, CT_DEVICE_CPU, 7)) fail_msg("%s", p->ctorch.error);
    if (!ct_mlp_baseline_init_from(&p->baseline, &p->ctorch)) fail_msg("%s", p->baseline.error);
}

static void free_pair(pair *p)
{
    ct_mlp_baseline_free(&p->baseline);
    ct_mlp_ctorch_free(&p->ctorch);
}

static void a_different_learning_rate_is_caught(void **state)
{
    (void)state;
    pair p;
    make_pair(&p, &deep);
    p.baseline.spec.lr *= 1.01; /* the same losses at the first step, updates 1% larger */
    char message[512];
    assert_false(ct_mlp_compare_steps(&p.ctorch, &p.baseline, 1, message, sizeof message));
    assert_non_null(strstr(message, "changed differently"));
    free_pair(&p);
}

static void a_different_weight_is_caught(void **state)
{
    (void)state;
    pair p;
    make_pair(&p, &digits_like);
    p.baseline.w[1][3] += 0.5f;
    char message[512];
    assert_false(ct_mlp_compare_steps(&p.ctorch, &p.baseline, 2, message, sizeof message));
    assert_non_null(strstr(message, "losses of step 0 differ"));
    free_pair(&p);
}

static void the_untampered_pair_agrees(void **state)
{
    (void)state;
    pair p;
    make_pair(&p, &deep);
    char message[512];
    if (!ct_mlp_compare_steps(&p.ctorch, &p.baseline, 2, message, sizeof message)) fail_msg("%s", message);
    assert_string_equal(message, "agree");
    free_pair(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_hidden_layer_steps_agree_on_the_cpu),
        cmocka_unit_test(four_layer_steps_agree_on_the_cpu),
        cmocka_unit_test(steps_on_opencl_agree_with_the_hand_written_ones),
        cmocka_unit_test(a_different_learning_rate_is_caught),
        cmocka_unit_test(a_different_weight_is_caught),
        cmocka_unit_test(the_untampered_pair_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
