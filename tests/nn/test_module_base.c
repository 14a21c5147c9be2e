/* The module base: registration, dotted names in order, counts, lookups, train/eval, printing,
 * refcounts, and ct_module_to moving a tree in place (cpu -> opencl:0 -> cpu). */
#include "nn/nn_test.h"

/* A custom module as a user writes one: y = relu(fc(x)) * scale, with a buffer. */
typedef struct block {
    double scale;
} block;

static ct_tensor *block_forward(ct_module *self, const ct_tensor *x)
{
    ct_tensor *h = ct_module_forward(ct_module_child(self, "fc"), x);
    ct_tensor *r = ct_relu(h);
    ct_tensor *y = ct_mul_scalar(r, ((block *)ct_module_data(self))->scale);
    ct_release(h);
    ct_release(r);
    return y;
}

static ct_module *make_block(int64_t in, int64_t out)
{
    block *data = malloc(sizeof *data);
    data->scale = 2.0;
    ct_module *m = ct_module_create("Block", block_forward, data, free);
    ct_module *fc = ct_linear(in, out, true);
    assert_int_equal(ct_module_register_module(m, "fc", fc), CT_OK);
    ct_module_release(fc);
    ct_tensor *count = ct_zeros((int64_t[]){1}, 1, CT_I64, CT_DEVICE_CPU);
    assert_int_equal(ct_module_register_buffer(m, "count", count), CT_OK);
    ct_release(count);
    return m;
}

/* encoder = Sequential(Block(3 -> 4), Linear(4 -> 2, no bias)), head = Linear(2 -> 1) */
static ct_module *make_tree(void)
{
    ct_module *root = ct_module_create("Net", NULL, NULL, NULL);
    ct_module *encoder = ct_sequential((ct_module *[]){make_block(3, 4), ct_linear(4, 2, false)}, 2);
    ct_module *head = ct_linear(2, 1, true);
    assert_int_equal(ct_module_register_module(root, "encoder", encoder), CT_OK);
    assert_int_equal(ct_module_register_module(root, "head", head), CT_OK);
    ct_module_release(encoder);
    ct_module_release(head);
    return root;
}

static void dotted_names_in_registration_order(void **state)
{
    (void)state;
    ct_module *net = make_tree();
    ct_named_tensors *params = ct_module_named_parameters(net);
    const char *want[] = {"encoder.0.fc.weight", "encoder.0.fc.bias", "encoder.1.weight", "head.weight",
                          "head.bias"};
    assert_int_equal(params->count, 5);
    for (int i = 0; i < 5; i++) assert_string_equal(params->names[i], want[i]);
    assert_int_equal(ct_tensor_size(params->tensors[2], 0), 2);
    assert_int_equal(ct_tensor_size(params->tensors[2], 1), 4);
    ct_named_tensors_free(params);
    ct_named_tensors *buffers = ct_module_named_buffers(net);
    assert_int_equal(buffers->count, 1);
    assert_string_equal(buffers->names[0], "encoder.0.count");
    ct_named_tensors_free(buffers);
    assert_int_equal(ct_module_parameter_count(net), 5);
    assert_int_equal(ct_module_num_parameters(net), 3 * 4 + 4 + 4 * 2 + 2 + 1);
    ct_module_release(net);
}

static void lookups_by_dotted_name(void **state)
{
    (void)state;
    ct_module *net = make_tree();
    ct_tensor *w = ct_module_parameter(net, "encoder.0.fc.weight");
    assert_non_null(w);
    assert_true(ct_requires_grad(w));
    assert_true(ct_is_leaf(w));
    ct_module *fc = ct_module_child(net, "encoder.0.fc");
    assert_string_equal(ct_module_kind(fc), "Linear");
    ct_tensor *same = ct_module_parameter(fc, "weight");
    assert_ptr_equal(w, same);
    ct_tensor *count = ct_module_buffer(net, "encoder.0.count");
    assert_int_equal(ct_tensor_dtype(count), CT_I64);
    assert_int_equal(ct_module_child_count(ct_module_child(net, "encoder")), 2);
    assert_string_equal(ct_module_kind(ct_module_child_at(ct_module_child(net, "encoder"), 1)), "Linear");
    ct_release(w);
    ct_release(same);
    ct_release(count);

    assert_null(ct_module_parameter(net, "encoder.0.fc.bias2"));
    assert_error(CT_ERR_INDEX, "no parameter named 'encoder.0.fc.bias2'");
    assert_null(ct_module_parameter(net, "decoder.weight"));
    assert_error(CT_ERR_INDEX, "no parameter named 'decoder.weight'");
    assert_null(ct_module_buffer(net, "encoder.0.fc.weight"));
    assert_error(CT_ERR_INDEX, "no buffer named");
    assert_null(ct_module_child(net, "encoder.5"));
    assert_error(CT_ERR_INDEX, "no child module named 'encoder.5'");
    assert_null(ct_module_child_at(net, 2));
    assert_error(CT_ERR_INDEX, "index 2 is out of range for a Net with 2 children");
    ct_module_release(net);
}

static void registration_errors(void **state)
{
    (void)state;
    ct_module *m = ct_module_create("Custom", NULL, NULL, NULL);
    ct_tensor *w = ct_zeros((int64_t[]){2}, 1, CT_F32, CT_DEVICE_CPU);
    ct_tensor *ints = ct_zeros((int64_t[]){2}, 1, CT_I32, CT_DEVICE_CPU);
    assert_int_equal(ct_module_register_parameter(m, "w", w), CT_OK);
    assert_true(ct_requires_grad(w));
    assert_int_equal(ct_module_register_parameter(m, "w", w), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "already has a parameter named 'w'");
    assert_int_equal(ct_module_register_buffer(m, "w", ints), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "already has a parameter named 'w'");
    assert_int_equal(ct_module_register_parameter(m, "a.b", w), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "contains '.'");
    assert_int_equal(ct_module_register_parameter(m, "", w), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "the name is empty");
    assert_int_equal(ct_module_register_parameter(m, "i", ints), CT_ERR_DTYPE);
    assert_error(CT_ERR_DTYPE, "parameters must be floating (float32, float64, float16 or bfloat16");
    ct_tensor *made = ct_mul(w, w);
    assert_int_equal(ct_module_register_parameter(m, "made", made), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "must be a leaf");
    assert_int_equal(ct_module_register_parameter(m, "n", NULL), CT_ERR_NULL_ARGUMENT);
    assert_error(CT_ERR_NULL_ARGUMENT, "parameter");
    assert_int_equal(ct_module_register_module(m, "self", m), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "would make a cycle");
    ct_module *outer = ct_sequential((ct_module *[]){ct_module_retain(m)}, 1);
    assert_int_equal(ct_module_register_module(m, "outer", outer), CT_ERR_INVALID_ARGUMENT);
    assert_error(CT_ERR_INVALID_ARGUMENT, "would make a cycle");
    assert_null(ct_module_forward(m, w));
    assert_error(CT_ERR_INVALID_ARGUMENT, "a Custom has no forward of its own");
    assert_null(ct_sequential((ct_module *[]){ct_linear(2, 2, true), NULL}, 2));
    assert_error(CT_ERR_NULL_ARGUMENT, "modules[1] is NULL");
    assert_null(ct_linear(-1, 2, true));
    assert_error(CT_ERR_INVALID_ARGUMENT, "must not be negative");
    assert_null(ct_dropout(1.5));
    assert_error(CT_ERR_INVALID_ARGUMENT, "between 0 and 1, but got 1.5");
    ct_module_release(outer);
    ct_module_release(m);
    ct_release(w);
    ct_release(ints);
    ct_release(made);
}

static void train_and_eval_reach_every_module(void **state)
{
    (void)state;
    ct_module *net = make_tree();
    assert_true(ct_module_is_training(net));
    ct_module_eval(net);
    assert_false(ct_module_is_training(net));
    assert_false(ct_module_is_training(ct_module_child(net, "encoder.0.fc")));
    ct_module_train(net, true);
    assert_true(ct_module_is_training(ct_module_child(net, "encoder.1")));
    ct_module_release(net);
}

static void printing_as_pytorch_does(void **state)
{
    (void)state;
    ct_module *seq = ct_sequential((ct_module *[]){ct_linear(3, 3, true), ct_relu_module(), ct_dropout(0.5),
                                                   ct_flatten_module(1, -1)}, 4);
    char *s = ct_module_to_string(seq);
    assert_string_equal(s, "Sequential(\n"
                           "  (0): Linear(in_features=3, out_features=3, bias=True)\n"
                           "  (1): ReLU()\n"
                           "  (2): Dropout(p=0.5, inplace=False)\n"
                           "  (3): Flatten(start_dim=1, end_dim=-1)\n"
                           ")");
    free(s);
    ct_module *net = make_tree();
    s = ct_module_to_string(net);
    assert_non_null(strstr(s, "Net(\n  (encoder): Sequential(\n    (0): Block(\n      (fc): Linear("));
    free(s);
    ct_module_release(net);
    ct_module_release(seq);
}

static void references_and_scopes(void **state)
{
    (void)state;
    ct_module *fc = ct_linear(2, 2, true);
    ct_module *seq = ct_sequential((ct_module *[]){ct_module_retain(fc)}, 1);
    assert_int_equal(ct_module_refcount(fc), 2);
    ct_tensor *w = ct_module_parameter(fc, "weight");
    assert_int_equal(ct_refcount(w), 2);
    ct_module_release(seq);
    assert_int_equal(ct_module_refcount(fc), 1);
    ct_module_free(fc);
    assert_int_equal(ct_refcount(w), 1); /* the caller's reference outlives the module */
    ct_release(w);

    /* A custom forward inside a scope: every intermediate is released by the pop. */
    ct_module *net = make_tree();
    ct_scope_push();
    ct_tensor *x = ct_ones((int64_t[]){5, 3}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *y = ct_module_forward(ct_module_child(net, "encoder"), x);
    assert_non_null(y);
    assert_int_equal(ct_tensor_size(y, 1), 2);
    ct_scope_pop();
    ct_module_release(net);
}

static void moving_to(ct_module *net, ct_device device, ct_tensor *const *params, const double *values,
                      int64_t count)
{
    assert_int_equal(ct_module_to(net, device), CT_OK);
    assert_true(ct_device_equal(ct_module_device(net), device));
    ct_named_tensors *now = ct_module_named_parameters(net);
    assert_int_equal(now->count, count);
    int64_t offset = 0;
    for (int64_t i = 0; i < count; i++) {
        assert_ptr_equal(now->tensors[i], params[i]); /* the same tensor objects */
        assert_true(ct_device_equal(ct_tensor_device(params[i]), device));
        assert_true(ct_requires_grad(params[i]));
        assert_true(ct_is_leaf(params[i]));
        int64_t n = ct_numel(params[i]);
        double got[64];
        values_of(params[i], got, n);
        assert_close_array(got, values + offset, n, 0, 0, now->names[i]);
        offset += n;
        ct_tensor *g = ct_grad(params[i]);
        assert_non_null(g);
        assert_true(ct_device_equal(ct_tensor_device(g), device));
        ct_release(g);
    }
    ct_named_tensors_free(now);
    ct_tensor *count_buffer = ct_module_buffer(net, "encoder.0.count");
    assert_true(ct_device_equal(ct_tensor_device(count_buffer), device));
    ct_release(count_buffer);
}

static void module_to_moves_in_place(void **state)
{
    (void)state;
    if (!have_opencl()) skip();
    ct_manual_seed(3);
    ct_module *net = make_tree();
    ct_named_tensors *params = ct_module_named_parameters(net);
    double values[64];
    int64_t offset = 0;
    for (int64_t i = 0; i < params->count; i++) {
        values_of(params->tensors[i], values + offset, ct_numel(params->tensors[i]));
        offset += ct_numel(params->tensors[i]);
        /* A gradient to move along: d sum(p + p) / dp = 2. */
        ct_tensor *twice = ct_add(params->tensors[i], params->tensors[i]);
        ct_tensor *total = ct_sum(twice, NULL, 0, false);
        assert_int_equal(ct_backward(total), CT_OK);
        ct_release(twice);
        ct_release(total);
    }
    ct_module *before = net;
    moving_to(net, OPENCL0, params->tensors, values, params->count);
    assert_ptr_equal(net, before);

    /* It computes there, and the result matches the cpu's. */
    ct_tensor *x = ct_ones((int64_t[]){2, 3}, 2, CT_F32, OPENCL0);
    ct_tensor *y = ct_module_forward(ct_module_child(net, "encoder"), x);
    if (!y) fail_msg("forward on opencl:0: %s", ct_last_error_message());
    assert_true(ct_device_equal(ct_tensor_device(y), OPENCL0));
    double on_device[4], on_cpu[4];
    values_of(y, on_device, 4);

    moving_to(net, CT_DEVICE_CPU, params->tensors, values, params->count);
    ct_tensor *xc = ct_ones((int64_t[]){2, 3}, 2, CT_F32, CT_DEVICE_CPU);
    ct_tensor *yc = ct_module_forward(ct_module_child(net, "encoder"), xc);
    values_of(yc, on_cpu, 4);
    assert_close_array(on_device, on_cpu, 4, 1e-5, 1e-6, "encoder output");

    /* The old device's memory is given back: nothing of the module stays on opencl:0. */
    ct_release(x);
    ct_release(y);
    ct_release(xc);
    ct_release(yc);
    ct_named_tensors_free(params);
    ct_module_release(net);
}

static void module_to_a_missing_device_changes_nothing(void **state)
{
    (void)state;
    ct_module *net = make_tree();
    ct_tensor *w = ct_module_parameter(net, "head.weight");
    assert_int_equal(ct_module_to(net, (ct_device){CT_OPENCL, 57}), CT_ERR_DEVICE);
    assert_true(strlen(ct_last_error_message()) > 0);
    ct_clear_error();
    assert_true(ct_device_equal(ct_tensor_device(w), CT_DEVICE_CPU));
    assert_int_equal(ct_module_to(NULL, CT_DEVICE_CPU), CT_ERR_NULL_ARGUMENT);
    ct_clear_error();
    assert_int_equal(ct_module_to(net, CT_DEVICE_CPU), CT_OK); /* already there: nothing to do */
    ct_release(w);
    ct_module_release(net);
}

static void zero_grad_drops_every_gradient(void **state)
{
    (void)state;
    ct_module *net = make_tree();
    ct_named_tensors *params = ct_module_named_parameters(net);
    for (int64_t i = 0; i < params->count; i++) {
        ct_tensor *total = ct_sum(params->tensors[i], NULL, 0, false);
        assert_int_equal(ct_backward(total), CT_OK);
        ct_release(total);
    }
    ct_tensor *g = ct_grad(params->tensors[4]);
    assert_non_null(g);
    ct_release(g);
    ct_module_zero_grad(net);
    for (int64_t i = 0; i < params->count; i++) assert_null(ct_grad(params->tensors[i]));
    ct_named_tensors_free(params);
    ct_module_release(net);
}

static void shared_parameters_are_listed_once(void **state)
{
    (void)state;
    ct_module *fc = ct_linear(2, 2, false);
    ct_module *tied = ct_sequential((ct_module *[]){ct_module_retain(fc), ct_module_retain(fc)}, 2);
    ct_named_tensors *params = ct_module_named_parameters(tied);
    assert_int_equal(params->count, 1);
    assert_string_equal(params->names[0], "0.weight");
    ct_named_tensors_free(params);
    assert_int_equal(ct_module_num_parameters(tied), 4);
    ct_module_release(tied);
    ct_module_release(fc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dotted_names_in_registration_order),
        cmocka_unit_test(lookups_by_dotted_name),
        cmocka_unit_test(registration_errors),
        cmocka_unit_test(train_and_eval_reach_every_module),
        cmocka_unit_test(printing_as_pytorch_does),
        cmocka_unit_test(references_and_scopes),
        cmocka_unit_test(module_to_moves_in_place),
        cmocka_unit_test(module_to_a_missing_device_changes_nothing),
        cmocka_unit_test(zero_grad_drops_every_gradient),
        cmocka_unit_test(shared_parameters_are_listed_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
