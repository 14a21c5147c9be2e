/* Modules whose forward takes several tensors and gives several (nanoGPT's forward(idx, targets)
 * -> (logits, loss), a padding mask as a second input), the module tree walks apply(fn) and
 * named_modules(), and the small layers Identity, Unflatten and ModuleDict. */
#include "nn_test.h"

enum { V = 5, C = 3, B = 2, T = 3 };

/* ---- a nanoGPT-like model written as a custom module ---- */

static ct_status tiny_gpt_forward(ct_module *self, const ct_tensor *const *inputs, int num_inputs,
                                  ct_tensor **outputs, int num_outputs)
{
    if (num_inputs < 1 || num_inputs > 2 || !inputs[0] || num_outputs > 2) return CT_ERR_INVALID_ARGUMENT;
    ct_tensor *x = ct_module_forward(ct_module_child(self, "wte"), inputs[0]); /* [B, T, C] */
    ct_tensor *logits = ct_module_forward(ct_module_child(self, "lm_head"), x);  /* [B, T, V] */
    ct_release(x);
    if (!logits) return ct_last_error();
    outputs[0] = logits;
    if (num_outputs == 2) {
        const ct_tensor *targets = num_inputs == 2 ? inputs[1] : NULL;
        if (!targets) return CT_OK; /* loss is None */
        ct_tensor *flat = ct_reshape(logits, (int64_t[]){-1, V}, 2);
        ct_tensor *flat_targets = ct_reshape(targets, (int64_t[]){-1}, 1);
        outputs[1] = ct_cross_entropy(flat, flat_targets, 0.0);
        ct_release(flat);
        ct_release(flat_targets);
        if (!outputs[1]) return ct_last_error();
    }
    return CT_OK;
}

static ct_module *tiny_gpt(void)
{
    ct_manual_seed(4);
    ct_module *m = ct_module_create_many("TinyGPT", tiny_gpt_forward, NULL, NULL);
    ct_module *wte = ct_embedding_module(V, C, -1), *head = ct_linear(C, V, true);
    assert_int_equal(ct_module_register_module(m, "wte", wte), CT_OK);
    assert_int_equal(ct_module_register_module(m, "lm_head", head), CT_OK);
    ct_module_release(wte); /* registration took its own references */
    ct_module_release(head);
    return m;
}

static void parameter_values(const ct_module *m, const char *name, double *out, int64_t n)
{
    ct_tensor *p = ct_module_parameter(m, name);
    assert_non_null(p);
    values_of(p, out, n);
    ct_release(p);
}

static void a_gpt_forward_of_idx_and_targets_gives_logits_and_loss(void **state)
{
    (void)state;
    ct_module *gpt = tiny_gpt();
    double tokens[B * T] = {0, 4, 2, 3, 3, 1}, next[B * T] = {4, 2, 1, 3, 1, 0};
    ct_tensor *idx = tensor_of(tokens, (int64_t[]){B, T}, 2, CT_I64, CT_DEVICE_CPU);
    ct_tensor *targets = tensor_of(next, (int64_t[]){B, T}, 2, CT_I64, CT_DEVICE_CPU);
    ct_tensor *out[2];
    assert_int_equal(ct_module_forward_many(gpt, (const ct_tensor *[]){idx, targets}, 2, out, 2), CT_OK);
    assert_int_equal(ct_tensor_ndim(out[0]), 3);
    assert_int_equal(ct_tensor_size(out[0], 2), V);

    /* the same numbers by hand, in double */
    double wte[V * C], w[V * C], b[V], logits[B * T * V], got[B * T * V], loss = 0;
    parameter_values(gpt, "wte.weight", wte, V * C);
    parameter_values(gpt, "lm_head.weight", w, V * C);
    parameter_values(gpt, "lm_head.bias", b, V);
    for (int n = 0; n < B * T; n++) {
        double largest = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++) {
            double z = b[v];
            for (int c = 0; c < C; c++) z += wte[(int)tokens[n] * C + c] * w[v * C + c];
            logits[n * V + v] = z;
            largest = fmax(largest, z);
        }
        for (int v = 0; v < V; v++) sum += exp(logits[n * V + v] - largest);
        loss += -(logits[n * V + (int)next[n]] - largest - log(sum)) / (B * T);
    }
    values_of(out[0], got, B * T * V);
    assert_close_array(got, logits, B * T * V, 1e-5, 1e-6, "logits");
    assert_true(fabs(value_of(out[1]) - loss) < 1e-5);

    /* the loss backpropagates into both children */
    assert_int_equal(ct_backward(out[1]), CT_OK);
    ct_tensor *head_weight = ct_module_parameter(gpt, "lm_head.weight");
    ct_tensor *grad = ct_grad(head_weight);
    assert_non_null(grad);
    ct_release(grad);
    ct_release(head_weight);
    ct_release(out[0]);
    ct_release(out[1]);

    /* targets None: the loss is None; the one-in one-out shortcut gives the logits */
    assert_int_equal(ct_module_forward_many(gpt, (const ct_tensor *[]){idx, NULL}, 2, out, 2), CT_OK);
    assert_null(out[1]);
    ct_tensor *only = ct_module_forward(gpt, idx);
    assert_non_null(only);
    values_of(only, got, B * T * V);
    assert_close_array(got, logits, B * T * V, 1e-5, 1e-6, "logits of the shortcut");
    ct_release(only);
    ct_release(out[0]);

    /* a forward that refuses its arguments: every output NULL, and an error that names the module */
    out[0] = out[1] = idx;
    assert_int_equal(ct_module_forward_many(gpt, (const ct_tensor *[]){idx, targets, idx}, 3, out, 2),
                     CT_ERR_INVALID_ARGUMENT);
    assert_null(out[0]);
    assert_null(out[1]);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the forward of a TinyGPT failed");
    ct_release(idx);
    ct_release(targets);
    ct_module_release(gpt);
}

/* mean over the positions whose mask is 1: x [B, T, C], mask [B, T] -> [B, C] */
static ct_status masked_mean_forward(ct_module *self, const ct_tensor *const *inputs, int num_inputs,
                                     ct_tensor **outputs, int num_outputs)
{
    (void)self;
    if (num_inputs != 2 || num_outputs != 1) return CT_ERR_INVALID_ARGUMENT;
    ct_scope_push();
    ct_tensor *mask = ct_unsqueeze(inputs[1], 2);
    ct_tensor *sum = ct_sum(ct_mul(inputs[0], mask), (int[]){1}, 1, false);
    ct_tensor *count = ct_sum(mask, (int[]){1}, 1, false);
    outputs[0] = ct_scope_keep(ct_div(sum, count));
    ct_scope_pop();
    return outputs[0] ? CT_OK : ct_last_error();
}

static void a_padding_mask_is_a_second_input(void **state)
{
    (void)state;
    ct_module *pool = ct_module_create_many("MaskedMean", masked_mean_forward, NULL, NULL);
    double x[B * T * C], mask[B * T] = {1, 1, 0, 1, 0, 0}, want[B * C] = {0}, got[B * C];
    for (int i = 0; i < B * T * C; i++) x[i] = 0.5 * i - 3;
    for (int b = 0; b < B; b++)
        for (int c = 0; c < C; c++) {
            double sum = 0, count = 0;
            for (int t = 0; t < T; t++) {
                sum += x[(b * T + t) * C + c] * mask[b * T + t];
                count += mask[b * T + t];
            }
            want[b * C + c] = sum / count;
        }
    ct_tensor *input = tensor_of(x, (int64_t[]){B, T, C}, 3, CT_F32, CT_DEVICE_CPU);
    ct_tensor *padding = tensor_of(mask, (int64_t[]){B, T}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *out = NULL;
    assert_int_equal(ct_module_forward_many(pool, (const ct_tensor *[]){input, padding}, 2, &out, 1), CT_OK);
    values_of(out, got, B * C);
    assert_close_array(got, want, B * C, 1e-6, 1e-6, "masked mean");
    ct_release(out);
    /* a one-input module asked for two inputs says what it takes */
    ct_module *linear = ct_linear(C, C, false);
    assert_int_equal(ct_module_forward_many(linear, (const ct_tensor *[]){input, padding}, 2, &out, 1),
                     CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "a Linear takes one input and gives one output");
    assert_int_equal(ct_module_forward_many(linear, (const ct_tensor *[]){input}, 1, &out, 1), CT_OK);
    assert_int_equal(ct_tensor_size(out, 2), C);
    ct_release(out);
    ct_module_release(linear);
    ct_release(input);
    ct_release(padding);
    ct_module_release(pool);
}

/* ---- walking a tree ---- */

static ct_module *tree(void)
{
    ct_module *dict = ct_module_dict((const char *[]){"act", "proj"},
                                     (ct_module *[]){ct_relu_module(), ct_linear(4, 2, true)}, 2);
    assert_non_null(dict);
    ct_module *seq = ct_sequential((ct_module *[]){ct_linear(3, 4, true), dict, ct_identity_module(),
                                                   ct_unflatten_module(1, (int64_t[]){2, 1}, 2)}, 4);
    assert_non_null(seq);
    return seq;
}

typedef struct visits {
    char kinds[16][16];
    int count, stop_at;
} visits;

static ct_status record_kind(ct_module *m, void *context)
{
    visits *v = context;
    if (v->count == v->stop_at) return CT_ERR_INVALID_ARGUMENT;
    snprintf(v->kinds[v->count++], 16, "%s", ct_module_kind(m));
    return CT_OK;
}

static ct_status zero_linear_biases(ct_module *m, void *context)
{
    (void)context;
    if (strcmp(ct_module_kind(m), "Linear") != 0) return CT_OK;
    ct_tensor *bias = ct_module_parameter(m, "bias");
    ct_tensor *zeros = ct_zeros(ct_tensor_shape(bias), 1, CT_F32, CT_DEVICE_CPU);
    ct_status status = ct_module_register_buffer(m, "bias", zeros); /* a name in use: refused */
    ct_release(zeros);
    ct_release(bias);
    return status;
}

static void apply_visits_children_before_parents_and_stops_at_an_error(void **state)
{
    (void)state;
    ct_module *m = tree();
    visits v = {.stop_at = -1};
    assert_int_equal(ct_module_apply(m, record_kind, &v), CT_OK);
    const char *want[] = {"Linear", "ReLU", "Linear", "ModuleDict", "Identity", "Unflatten", "Sequential"};
    assert_int_equal(v.count, 7);
    for (int i = 0; i < 7; i++) assert_string_equal(v.kinds[i], want[i]);
    visits stop = {.stop_at = 2};
    assert_int_equal(ct_module_apply(m, record_kind, &stop), CT_ERR_INVALID_ARGUMENT);
    assert_int_equal(stop.count, 2);
    assert_int_equal(ct_module_apply(m, zero_linear_biases, NULL), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "already has a parameter named 'bias'");
    assert_int_equal(ct_module_apply(NULL, record_kind, &v), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    ct_module_release(m);
}

static void named_modules_lists_the_tree_once_each(void **state)
{
    (void)state;
    ct_module *m = tree();
    /* the same Linear under a second name is listed once, under its first */
    ct_module *shared = ct_module_child(m, "0");
    assert_int_equal(ct_module_register_module(m, "again", shared), CT_OK);
    ct_named_modules *list = ct_module_named_modules(m);
    assert_non_null(list);
    const char *names[] = {"", "0", "1", "1.act", "1.proj", "2", "3"};
    assert_int_equal(list->count, 7);
    for (int i = 0; i < 7; i++) assert_string_equal(list->names[i], names[i]);
    assert_ptr_equal(list->modules[0], m);
    assert_ptr_equal(list->modules[4], ct_module_child(m, "1.proj"));
    assert_int_equal(ct_module_refcount(shared), 3); /* the tree's two and the list's */
    ct_named_modules_free(list);
    assert_int_equal(ct_module_refcount(shared), 2);
    ct_module_release(m);
}

static void identity_unflatten_and_module_dict_behave_as_pytorch_s(void **state)
{
    (void)state;
    ct_module *m = tree();
    char *text = ct_module_to_string(m);
    assert_non_null(strstr(text, "(1): ModuleDict(\n    (act): ReLU()\n    (proj): Linear(in_features=4, "
                                 "out_features=2, bias=True)\n  )"));
    assert_non_null(strstr(text, "(2): Identity()\n  (3): Unflatten(dim=1, unflattened_size=(2, 1))"));
    free(text);
    ct_module_release(m);

    double values[12];
    for (int i = 0; i < 12; i++) values[i] = i;
    ct_tensor *x = tensor_of(values, (int64_t[]){2, 6}, 2, CT_F32, CT_DEVICE_CPU);
    ct_module *unflatten = ct_unflatten_module(-1, (int64_t[]){-1, 2}, 2);
    ct_tensor *y = ct_module_forward(unflatten, x);
    assert_non_null(y);
    assert_int_equal(ct_tensor_ndim(y), 3);
    assert_int_equal(ct_tensor_size(y, 1), 3);
    assert_true(ct_tensor_shares_storage(x, y)); /* a view */
    double got[12];
    values_of(y, got, 12);
    assert_close_array(got, values, 12, 0, 0, "unflattened values");
    ct_release(y);
    ct_module_release(unflatten);
    unflatten = ct_unflatten_module(1, (int64_t[]){4, 2}, 2);
    assert_null(ct_module_forward(unflatten, x));
    assert_error(CT_ERR_SHAPE, "must multiply to the size of dim 1 of the input, 6");
    ct_module_release(unflatten);
    assert_null(ct_unflatten_module(1, (int64_t[]){-1, -1}, 2));
    assert_error(CT_ERR_INVALID_ARGUMENT, "only one can be inferred");

    ct_module *identity = ct_identity_module();
    y = ct_module_forward(identity, x);
    assert_ptr_equal(y, x);
    ct_release(y);
    ct_module_release(identity);
    ct_release(x);

    assert_null(ct_module_dict((const char *[]){"a", "a"}, (ct_module *[]){ct_relu_module(), ct_relu_module()}, 2));
    assert_error(CT_ERR_INVALID_ARGUMENT, "already has a child module named 'a'");
    assert_null(ct_module_dict((const char *[]){"a.b"}, (ct_module *[]){ct_relu_module()}, 1));
    assert_error(CT_ERR_INVALID_ARGUMENT, "contains '.'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_gpt_forward_of_idx_and_targets_gives_logits_and_loss),
        cmocka_unit_test(a_padding_mask_is_a_second_input),
        cmocka_unit_test(apply_visits_children_before_parents_and_stops_at_an_error),
        cmocka_unit_test(named_modules_lists_the_tree_once_each),
        cmocka_unit_test(identity_unflatten_and_module_dict_behave_as_pytorch_s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
