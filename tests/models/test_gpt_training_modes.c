/* A GPT trains the ways `ctorch train` runs it: under autocast in bfloat16 and float16 (the loss
 * within 0.05 nats of float32's, every gradient float32 as the master weights), and captured in a
 * graph whose replays give the eager step's loss and gradients bit for bit, for each new batch
 * copied into the static inputs (no host synchronisation in the forward or the backward); on the
 * CPU and each OpenCL device. Also its config errors and its names (the tied weight). */
#include <math.h>
#include <stdio.h>

#include "support/devices.h"
#include "test_common.h"

static ct_gpt_config tiny(void)
{
    return (ct_gpt_config){.vocab_size = 67, .padded_vocab_size = 80, .block_size = 8, .n_layer = 2, .n_head = 2,
                           .n_embd = 16, .dropout = 0.0, .bias = true};
}

static ct_tensor *batch(int64_t seed, ct_device device)
{
    ct_manual_seed((uint64_t)seed);
    return ct_randint(0, 67, (const int64_t[]){3, 8}, 2, CT_I64, device);
}

static double loss_of(ct_module *gpt, const ct_tensor *idx, const ct_tensor *targets)
{
    ct_tensor *loss = NULL;
    assert_int_equal(ct_gpt_forward(gpt, idx, targets, NULL, &loss), CT_OK);
    assert_int_equal(ct_backward(loss), CT_OK);
    double value = NAN;
    assert_int_equal(ct_item(loss, &value), CT_OK);
    return value;
}

static void autocast_keeps_the_loss_and_float32_gradients(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    const ct_dtype dtypes[2] = {CT_BF16, CT_F16};
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_manual_seed(1);
        ct_gpt_config config = tiny();
        ct_module *gpt = ct_gpt(&config);
        assert_int_equal(ct_module_to(gpt, devices[d]), CT_OK);
        ct_tensor *idx = batch(2, devices[d]), *targets = batch(3, devices[d]);
        double reference = loss_of(gpt, idx, targets);
        for (int k = 0; k < 2; k++) {
            ct_module_zero_grad(gpt);
            assert_int_equal(ct_autocast_push(devices[d].type, dtypes[k]), CT_OK);
            ct_tensor *logits = NULL, *loss = NULL;
            assert_int_equal(ct_gpt_forward(gpt, idx, targets, &logits, &loss), CT_OK);
            assert_int_equal(ct_tensor_dtype(logits), dtypes[k]); /* the head's product ran low */
            assert_int_equal(ct_autocast_pop(), CT_OK);
            assert_int_equal(ct_backward(loss), CT_OK);
            double value = NAN;
            assert_int_equal(ct_item(loss, &value), CT_OK);
            if (!(fabs(value - reference) < 0.05))
                fail_msg("device %d, %s: loss %g, float32 %g", d, ct_dtype_name(dtypes[k]), value, reference);
            ct_named_tensors *params = ct_module_named_parameters(gpt);
            for (int64_t i = 0; i < params->count; i++) {
                ct_tensor *g = ct_grad(params->tensors[i]);
                if (!g) fail_msg("%s has no gradient", params->names[i]);
                assert_int_equal(ct_tensor_dtype(g), CT_F32);
            }
            ct_named_tensors_free(params);
        }
        ct_module_release(gpt);
        ct_scope_pop();
    }
}

/* The values of t, as float32, into a new host array. */
static float *values(const ct_tensor *t)
{
    int64_t n = ct_numel(t);
    float *v = malloc(sizeof *v * (size_t)n);
    assert_int_equal(ct_tensor_to_array(t, v, sizeof *v * (size_t)n), CT_OK);
    return v;
}

static void same_bits(const ct_tensor *got, const ct_tensor *want, const char *what)
{
    float *g = values(got), *w = values(want);
    if (memcmp(g, w, sizeof *g * (size_t)ct_numel(want)) != 0) fail_msg("%s: the replay's values differ", what);
    free(g), free(w);
}

static void a_captured_step_replays_the_eager_step(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_manual_seed(4);
        ct_gpt_config config = tiny();
        ct_module *gpt = ct_gpt(&config);
        assert_int_equal(ct_module_to(gpt, devices[d]), CT_OK);
        ct_tensor *static_idx = batch(5, devices[d]), *static_targets = batch(6, devices[d]);
        loss_of(gpt, static_idx, static_targets); /* the warm-up, as PyTorch's recipe */
        ct_module_zero_grad(gpt);
        ct_graph *graph = ct_graph_new();
        assert_int_equal(ct_graph_begin(graph, devices[d], NULL), CT_OK);
        ct_tensor *static_loss = NULL;
        ct_status status = ct_gpt_forward(gpt, static_idx, static_targets, NULL, &static_loss);
        if (status == CT_OK) status = ct_backward(static_loss);
        ct_status ended = ct_graph_end(graph);
        if (status != CT_OK || ended != CT_OK) fail_msg("device %d: the capture failed: %s", d, ct_last_error_message());
        ct_named_tensors *params = ct_module_named_parameters(gpt);
        ct_tensor **static_grads = calloc((size_t)params->count, sizeof *static_grads);
        for (int64_t i = 0; i < params->count; i++) static_grads[i] = ct_grad(params->tensors[i]);
        for (int64_t seed = 10; seed < 12; seed++) {
            ct_tensor *idx = batch(seed, devices[d]), *targets = batch(seed + 100, devices[d]);
            assert_int_equal(ct_copy_(static_idx, idx), CT_OK);
            assert_int_equal(ct_copy_(static_targets, targets), CT_OK);
            assert_int_equal(ct_graph_replay(graph), CT_OK);
            /* the eager step on a twin with the same weights */
            ct_module *twin = ct_gpt(&config);
            ct_state_dict *weights = ct_module_state_dict(gpt, NULL);
            assert_int_equal(ct_module_load_state_dict(twin, weights, true, NULL), CT_OK);
            ct_state_dict_free(weights);
            assert_int_equal(ct_module_to(twin, devices[d]), CT_OK);
            ct_tensor *loss = NULL;
            assert_int_equal(ct_gpt_forward(twin, idx, targets, NULL, &loss), CT_OK);
            assert_int_equal(ct_backward(loss), CT_OK);
            same_bits(static_loss, loss, "loss");
            ct_named_tensors *twin_params = ct_module_named_parameters(twin);
            for (int64_t i = 0; i < params->count; i++) same_bits(static_grads[i], ct_grad(twin_params->tensors[i]), params->names[i]);
            ct_named_tensors_free(twin_params);
            ct_module_release(twin);
        }
        free(static_grads);
        ct_named_tensors_free(params);
        ct_graph_free(graph);
        ct_module_release(gpt);
        ct_scope_pop();
    }
}

static void config_errors_name_the_field(void **state)
{
    (void)state;
    ct_gpt_config c = tiny();
    c.n_head = 3;
    assert_null(ct_gpt(&c));
    assert_error(CT_ERR_INVALID_ARGUMENT, "n_embd (16) is not a multiple of n_head (3)");
    c = tiny();
    c.padded_vocab_size = 60;
    assert_int_equal(ct_gpt_config_check(&c), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "padded_vocab_size (60) is smaller than vocab_size (67)");
    c = tiny();
    c.block_size = 0;
    assert_int_equal(ct_gpt_config_check(&c), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "block_size is 0");
    c = tiny();
    c.dropout = 1.0;
    assert_int_equal(ct_gpt_config_check(&c), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "dropout is 1");
    assert_int_equal(ct_gpt_config_check(NULL), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    c = ct_gpt_config_default();
    assert_int_equal(ct_gpt_config_check(&c), CT_OK);
    c = ct_gpt_config_gpt2();
    assert_int_equal(ct_gpt_config_check(&c), CT_OK);

    ct_scope_push();
    c = tiny();
    ct_module *gpt = ct_gpt(&c);
    ct_gpt_config back;
    assert_int_equal(ct_gpt_config_of(gpt, &back), CT_OK);
    assert_true(back.vocab_size == c.vocab_size && back.padded_vocab_size == c.padded_vocab_size &&
                back.block_size == c.block_size && back.n_layer == c.n_layer && back.n_head == c.n_head &&
                back.n_embd == c.n_embd && back.dropout == c.dropout && back.bias == c.bias);
    ct_tensor *long_idx = ct_zeros((const int64_t[]){1, 9}, 2, CT_I64, CT_DEVICE_CPU);
    ct_tensor *logits = NULL;
    assert_int_equal(ct_gpt_forward(gpt, long_idx, NULL, &logits, NULL), CT_ERR_SHAPE);
    assert_error(CT_ERR_SHAPE, "sequence of length 9: the block size is only 8");
    ct_module *linear = ct_linear(2, 2, false);
    assert_int_equal(ct_gpt_config_of(linear, &back), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "is a Linear, not a GPT");
    ct_module_release(linear);
    ct_module_release(gpt);
    ct_scope_pop();
}

/* nanoGPT's names, the tie (one tensor, two names in the state dict, once in the parameters),
 * GPT-2's initialisation. */
static void names_tie_and_initialisation_are_nanogpts(void **state)
{
    (void)state;
    ct_scope_push();
    ct_manual_seed(0);
    ct_gpt_config c = {.vocab_size = 500, .padded_vocab_size = 512, .block_size = 64, .n_layer = 3, .n_head = 2,
                       .n_embd = 64, .dropout = 0.0, .bias = true};
    ct_module *gpt = ct_gpt(&c);
    ct_state_dict *sd = ct_module_state_dict(gpt, NULL);
    /* 2 embeddings + 12 per block + ln_f's 2 + lm_head */
    assert_int_equal(ct_state_dict_count(sd), 2 + 12 * 3 + 2 + 1);
    assert_string_equal(ct_state_dict_name_at(sd, 0), "transformer.wte.weight");
    assert_string_equal(ct_state_dict_name_at(sd, 4), "transformer.h.0.attn.c_attn.weight");
    assert_string_equal(ct_state_dict_name_at(sd, ct_state_dict_count(sd) - 1), "lm_head.weight");
    assert_ptr_equal(ct_module_parameter(gpt, "lm_head.weight"), ct_module_parameter(gpt, "transformer.wte.weight"));
    assert_int_equal(ct_module_parameter_count(gpt), 2 + 12 * 3 + 2); /* the tied weight once */
    ct_named_tensors *params = ct_module_named_parameters(gpt);
    for (int64_t i = 0; i < params->count; i++) {
        const char *name = params->names[i];
        ct_tensor *p = params->tensors[i];
        double mean = 0, sq = 0;
        int64_t n = ct_numel(p);
        float *v = values(p);
        for (int64_t k = 0; k < n; k++) mean += v[k] / (double)n, sq += (double)v[k] * v[k] / (double)n;
        free(v);
        double std = sqrt(sq - mean * mean);
        if (strstr(name, ".ln_") && strstr(name, "weight")) assert_true(mean == 1.0 && std == 0.0);
        else if (strstr(name, "bias")) assert_true(mean == 0.0 && std == 0.0);
        else {
            double want = strstr(name, "c_proj.weight") ? 0.02 / sqrt(6.0) : 0.02;
            if (!(fabs(std - want) < 0.1 * want)) fail_msg("%s: std %g, GPT-2's %g", name, std, want);
        }
    }
    ct_named_tensors_free(params);
    /* loading a state dict with one of the tied names only */
    ct_state_dict *half = ct_state_dict_create();
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++)
        if (strcmp(ct_state_dict_name_at(sd, i), "lm_head.weight"))
            assert_int_equal(ct_state_dict_add(half, ct_state_dict_name_at(sd, i), ct_state_dict_tensor_at(sd, i)), CT_OK);
    ct_module *other = ct_gpt(&c);
    assert_int_equal(ct_gpt_load_state_dict(other, half), CT_OK);
    same_bits(ct_module_parameter(other, "lm_head.weight"), ct_module_parameter(gpt, "transformer.wte.weight"), "tied");
    ct_state_dict_free(half);
    ct_state_dict_free(sd);
    ct_module_release(other);
    ct_module_release(gpt);
    ct_scope_pop();
}

/* dropout while training only; bias=false leaves out every bias (nanoGPT's LayerNorm(bias=False)) */
static void dropout_trains_and_bias_false_drops_the_biases(void **state)
{
    (void)state;
    ct_scope_push();
    ct_manual_seed(8);
    ct_gpt_config c = tiny();
    c.dropout = 0.3;
    ct_module *gpt = ct_gpt(&c);
    ct_tensor *idx = batch(1, CT_DEVICE_CPU), *targets = batch(2, CT_DEVICE_CPU);
    double a = loss_of(gpt, idx, targets), b = loss_of(gpt, idx, targets);
    assert_true(a != b); /* other masks */
    ct_module_eval(gpt);
    a = loss_of(gpt, idx, targets), b = loss_of(gpt, idx, targets);
    assert_true(a == b);
    ct_module_release(gpt);

    c = tiny();
    c.bias = false;
    gpt = ct_gpt(&c);
    ct_state_dict *sd = ct_module_state_dict(gpt, NULL);
    /* 2 embeddings + 6 per block (ln_1, c_attn, c_proj, ln_2, c_fc, c_proj weights) + ln_f + lm_head */
    assert_int_equal(ct_state_dict_count(sd), 2 + 6 * 2 + 1 + 1);
    for (int64_t i = 0; i < ct_state_dict_count(sd); i++) assert_null(strstr(ct_state_dict_name_at(sd, i), "bias"));
    ct_state_dict_free(sd);
    assert_true(isfinite(loss_of(gpt, idx, targets)));
    ct_module_release(gpt);
    ct_scope_pop();
}

/* The mean cross-entropy of logits [B, T, V] against targets [B, T]. */
static ct_tensor *mean_loss(const ct_tensor *logits, const ct_tensor *targets)
{
    int64_t rows = ct_tensor_shape(logits)[0] * ct_tensor_shape(logits)[1];
    return ct_cross_entropy(ct_reshape(logits, (const int64_t[]){rows, ct_tensor_shape(logits)[2]}, 2),
                            ct_reshape(targets, (const int64_t[]){rows}, 1), 0.0);
}

static bool close_to(const ct_tensor *got, const ct_tensor *want)
{
    float *g = values(got), *w = values(want);
    bool ok = true;
    for (int64_t i = 0; ok && i < ct_numel(want); i++) ok = fabs(g[i] - w[i]) <= 1e-5 + 1e-4 * fabs(w[i]);
    free(g), free(w);
    return ok;
}

/* DataParallel over two OpenCL devices: each replica runs the GPT on its part of the batch (the
 * parts found by name, not kept in the modules' data that replicas share); the same logits and
 * gradients as one device. */
static void data_parallel_over_two_devices_equals_one(void **state)
{
    (void)state;
    if (ct_device_count(CT_OPENCL) < 2) {
        ct_clear_error();
        skip();
    }
    ct_scope_push();
    ct_device devices[2] = {{CT_OPENCL, 0}, {CT_OPENCL, 1}};
    ct_manual_seed(9);
    ct_gpt_config c = tiny();
    ct_module *gpt = ct_gpt(&c), *single = ct_gpt(&c);
    ct_state_dict *weights = ct_module_state_dict(gpt, NULL);
    assert_int_equal(ct_module_load_state_dict(single, weights, true, NULL), CT_OK);
    ct_state_dict_free(weights);
    assert_int_equal(ct_module_to(gpt, devices[0]), CT_OK);
    assert_int_equal(ct_module_to(single, devices[0]), CT_OK);
    ct_tensor *idx = ct_randint(0, 67, (const int64_t[]){4, 8}, 2, CT_I64, devices[0]);
    ct_tensor *targets = ct_randint(0, 67, (const int64_t[]){4, 8}, 2, CT_I64, devices[0]);
    ct_module *dp = ct_data_parallel(gpt, devices, 2, devices[0]);
    assert_non_null(dp);
    ct_tensor *logits = ct_module_forward(dp, idx);
    if (!logits) fail_msg("DataParallel's forward: %s", ct_last_error_message());
    assert_int_equal(ct_backward(mean_loss(logits, targets)), CT_OK);
    ct_tensor *want = ct_module_forward(single, idx);
    assert_int_equal(ct_backward(mean_loss(want, targets)), CT_OK);
    assert_true(close_to(logits, want));
    ct_named_tensors *a = ct_module_named_parameters(gpt), *b = ct_module_named_parameters(single);
    for (int64_t i = 0; i < a->count; i++)
        if (!close_to(ct_grad(a->tensors[i]), ct_grad(b->tensors[i]))) fail_msg("%s: gradients differ", a->names[i]);
    ct_named_tensors_free(a);
    ct_named_tensors_free(b);
    ct_module_release(dp);
    ct_module_release(gpt);
    ct_module_release(single);
    ct_scope_pop();
}

/* A target of -1 adds nothing to the loss (nanoGPT's ignore_index): the loss is the mean over the
 * other positions of their cross-entropy, and -1 is not an id out of range. */
static void targets_of_minus_one_are_ignored(void **state)
{
    (void)state;
    ct_device devices[8];
    int count = ct_test_devices(devices);
    for (int d = 0; d < count; d++) {
        ct_scope_push();
        ct_manual_seed(4);
        ct_gpt_config config = tiny();
        ct_module *gpt = ct_gpt(&config);
        assert_int_equal(ct_module_to(gpt, devices[d]), CT_OK);
        ct_tensor *idx = batch(5, devices[d]);
        int64_t ids[24];
        for (int i = 0; i < 24; i++) ids[i] = i % 5 == 1 ? -1 : (i * 7) % 67;
        ct_tensor *targets = ct_tensor_from_data(ids, CT_I64, (const int64_t[]){3, 8}, 2, devices[d]);
        ct_tensor *logits = NULL, *loss = NULL;
        assert_int_equal(ct_gpt_forward(gpt, idx, targets, &logits, &loss), CT_OK);
        float *l = values(ct_reshape(logits, (const int64_t[]){24, 67}, 2));
        double sum = 0.0;
        int kept = 0;
        for (int i = 0; i < 24; i++) {
            if (ids[i] < 0) continue;
            double top = -INFINITY, z = 0.0;
            for (int c = 0; c < 67; c++) top = fmax(top, l[i * 67 + c]);
            for (int c = 0; c < 67; c++) z += exp(l[i * 67 + c] - top);
            sum += top + log(z) - l[i * 67 + ids[i]];
            kept++;
        }
        free(l);
        double value = NAN;
        assert_int_equal(ct_item(loss, &value), CT_OK);
        if (!(fabs(value - sum / kept) <= 1e-5 * fabs(sum / kept)))
            fail_msg("device %d: loss %.9g, the mean over the kept positions %.9g", d, value, sum / kept);
        assert_int_equal(ct_backward(loss), CT_OK);
        ct_module_release(gpt);
        ct_scope_pop();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(autocast_keeps_the_loss_and_float32_gradients),
        cmocka_unit_test(a_captured_step_replays_the_eager_step),
        cmocka_unit_test(config_errors_name_the_field),
        cmocka_unit_test(names_tie_and_initialisation_are_nanogpts),
        cmocka_unit_test(dropout_trains_and_bias_false_drops_the_biases),
        cmocka_unit_test(data_parallel_over_two_devices_equals_one),
        cmocka_unit_test(targets_of_minus_one_are_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
