/* llm.c's train_gpt2.c, step for step: its tiny checkpoint trained on its token file in llm.c's
 * sequential order with its AdamW (lr 1e-4, betas 0.9/0.999, eps 1e-8, no weight decay, no
 * clipping) gives the train losses of steps 0..40 and the val losses every 10 steps that
 * train_gpt2.c printed (tests/models/fixtures/llmc_tiny, made by bench/llmc/make_llmc_reference.py).
 * On the CPU and, where there is one, an OpenCL device. llm.c is built with -Ofast and prints 6
 * digits: relative 1e-5 on the CPU (measured: 2.6e-7), 1e-4 on a device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "test_common.h"

#define FIXTURE CTORCH_SOURCE_DIR "/tests/models/fixtures/llmc_tiny"

static cJSON *reference(void)
{
    FILE *f = fopen(FIXTURE "/train_gpt2_losses.json", "rb");
    assert_non_null(f);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    cJSON *ref = cJSON_Parse(text);
    assert_non_null(ref);
    return ref;
}

static void train_on(ct_device device, double tolerance)
{
    cJSON *ref = reference();
    const cJSON *train_losses = cJSON_GetObjectItem(ref, "train_losses"), *val_losses = cJSON_GetObjectItem(ref, "val_losses");
    assert_int_equal(cJSON_GetArraySize(train_losses), 41);
    ct_gpt_config c;
    ct_state_dict *sd = ct_gpt_checkpoint_load(FIXTURE "/gpt2_tiny.bin", NULL, &c);
    assert_non_null(sd);
    ct_module *gpt = ct_gpt(&c);
    assert_non_null(gpt);
    assert_int_equal(ct_gpt_load_state_dict(gpt, sd), CT_OK);
    assert_int_equal(ct_module_to(gpt, device), CT_OK);
    ct_token_data *train = ct_token_data_load(FIXTURE "/tiny_shakespeare_train.bin", c.vocab_size);
    ct_token_data *val = ct_token_data_load(FIXTURE "/tiny_shakespeare_val.bin", c.vocab_size);
    ct_token_loader_options o = ct_token_loader_options_default();
    o.batch_size = cJSON_GetObjectItem(ref, "batch_size")->valueint;
    o.seq_len = cJSON_GetObjectItem(ref, "seq_len")->valueint;
    o.order = CT_TOKEN_ORDER_SEQUENTIAL;
    o.device = device;
    ct_token_loader *tl = ct_token_loader_create(train, &o), *vl = ct_token_loader_create(val, &o);
    assert_non_null(tl);
    assert_non_null(vl);
    ct_adam_options adam = ct_adam_options_default(1e-4); /* betas 0.9, 0.999, eps 1e-8 */
    ct_optimizer *optimizer = ct_optim_adamw(gpt, &adam); /* weight decay 0 */
    double worst = 0;
    for (int step = 0; step < 41; step++) {
        ct_scope_push();
        if (step % 10 == 0) {
            assert_int_equal(ct_token_loader_set_position(vl, 0), CT_OK);
            double sum = 0;
            ct_no_grad_push();
            for (int i = 0; i < 5; i++) {
                ct_tensor *x, *y, *loss;
                double value;
                assert_int_equal(ct_token_loader_next(vl, &x, &y), CT_OK);
                assert_int_equal(ct_gpt_forward(gpt, x, y, NULL, &loss), CT_OK);
                assert_int_equal(ct_item(loss, &value), CT_OK);
                sum += value;
            }
            ct_no_grad_pop();
            double expected = cJSON_GetArrayItem(val_losses, step / 10)->valuedouble;
            worst = fmax(worst, fabs(sum / 5 - expected) / expected);
        }
        ct_tensor *x, *y, *loss;
        double value;
        assert_int_equal(ct_token_loader_next(tl, &x, &y), CT_OK);
        ct_optimizer_zero_grad(optimizer);
        assert_int_equal(ct_gpt_forward(gpt, x, y, NULL, &loss), CT_OK);
        assert_int_equal(ct_item(loss, &value), CT_OK);
        assert_int_equal(ct_backward(loss), CT_OK);
        assert_int_equal(ct_optimizer_step(optimizer), CT_OK);
        double expected = cJSON_GetArrayItem(train_losses, step)->valuedouble;
        if (fabs(value - expected) > tolerance * expected)
            fail_msg("step %d: ctorch's loss %.6f, llm.c's %.6f", step, value, expected);
        worst = fmax(worst, fabs(value - expected) / expected);
        assert_int_equal(ct_scope_pop(), CT_OK);
    }
    if (worst > tolerance) fail_msg("a val loss differs from llm.c's by %.2e relative", worst);
    printf("largest relative difference from llm.c: %.2e\n", worst);
    ct_optimizer_free(optimizer);
    ct_token_loader_free(tl);
    ct_token_loader_free(vl);
    ct_token_data_free(train);
    ct_token_data_free(val);
    ct_module_free(gpt);
    ct_state_dict_free(sd);
    cJSON_Delete(ref);
}

static void the_cpu_trains_as_llmc(void **state)
{
    (void)state;
    train_on(CT_DEVICE_CPU, 1e-5);
}

static void an_opencl_device_trains_as_llmc(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 1) skip();
    train_on((ct_device){CT_OPENCL, 0}, 1e-4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_cpu_trains_as_llmc),
        cmocka_unit_test(an_opencl_device_trains_as_llmc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
