/* Random tensors, generated on their device by the Philox kernels (kernels/random.ct).
 *
 * Each device has a generator state: the seed (shared: ct_manual_seed seeds every device) and a
 * 64-bit counter offset that advances by the number of values each call draws. Element i of a
 * call uses counter offset + i, so one seed gives the same numbers on every device. */
#include <pthread.h>
#include <string.h>

#include "device/capture.h"
#include "tensor/random_internal.h"
#include "tensor/tensor_internal.h"

/* Devices of one type with a generator; a device index beyond it is refused. */

static pthread_mutex_t generator_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t generator_seed = CT_DEFAULT_SEED;
static uint64_t generator_offsets[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];

void ct_manual_seed(uint64_t seed)
{
    pthread_mutex_lock(&generator_lock);
    generator_seed = seed;
    for (int type = 0; type < CT_DEVICE_TYPE_COUNT; type++)
        for (int index = 0; index < CT_MAX_DEVICES_PER_TYPE; index++) generator_offsets[type][index] = 0;
    pthread_mutex_unlock(&generator_lock);
}

uint64_t ct_initial_seed(void)
{
    pthread_mutex_lock(&generator_lock);
    uint64_t seed = generator_seed;
    pthread_mutex_unlock(&generator_lock);
    return seed;
}

/* Takes `count` counters from device's generator: its seed and the first counter. */
static ct_status reserve_counters(const char *function, ct_device device, uint64_t count,
                                  uint64_t *seed, uint64_t *offset)
{
    if (device.index < 0 || device.index >= CT_MAX_DEVICES_PER_TYPE) {
        char name[CT_DEVICE_STRING_MAX];
        return ct_error(CT_ERR_DEVICE, "%s: device %s has no random generator; ctorch keeps one for "
                        "devices 0 to %d of each type", function,
                        ct_device_format(device, name, sizeof name), CT_MAX_DEVICES_PER_TYPE - 1);
    }
    ct_status refused = ct_capture_refuse(device, true, function, "draws random numbers from a counter "
                                          "the host advances at capture time, so every replay would "
                                          "draw the same ones");
    if (refused != CT_OK) return refused;
    pthread_mutex_lock(&generator_lock);
    *seed = generator_seed;
    *offset = generator_offsets[device.type][device.index];
    generator_offsets[device.type][device.index] += count;
    pthread_mutex_unlock(&generator_lock);
    return CT_OK;
}

/* A new tensor of shape filled by kernel on device; l2, l3 are the kernel's extra parameters. */
static ct_tensor *random_tensor(const char *function, ct_kernel_id kernel, const int64_t *shape,
                                int ndim, ct_dtype dtype, ct_device device, int64_t l2, int64_t l3)
{
    ct_tensor *t = ct_tensor_alloc(function, device, dtype, shape, ndim);
    if (!t) return NULL;
    uint64_t seed = 0, offset = 0;
    int64_t n = ct_numel(t);
    if (reserve_counters(function, t->storage->device, (uint64_t)n, &seed, &offset) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    ct_kparams p = {0};
    p.n = n;
    p.off[0] = t->offset;
    p.l[0] = (long)seed;
    p.l[1] = (long)offset;
    p.l[2] = l2;
    p.l[3] = l3;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(t)};
    /* Ten Philox rounds per element: enough work to spread over threads early. */
    if (ct_backend_launch(t->storage->device, kernel, buffers, &p, 16) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

/* rand and randn make floats only (PyTorch refuses integer dtypes there too). */
static ct_status check_floating(const char *function, ct_dtype dtype)
{
    if (!ct_dtype_is_valid(dtype))
        return ct_error(CT_ERR_DTYPE, "%s: dtype %d is not a ct_dtype", function, (int)dtype);
    if (!ct_dtype_is_floating(dtype))
        return ct_error(CT_ERR_DTYPE, "%s: not supported for '%s'; it makes float16, bfloat16, float32 or float64 "
                        "(use ct_randint for integers)", function, ct_dtype_name(dtype));
    return CT_OK;
}

ct_tensor *ct_rand(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(rand);
    if (check_floating("ct_rand", dtype) != CT_OK) return ct_api_return(NULL);
    return ct_api_return(random_tensor("ct_rand", kernels[dtype], shape, ndim, dtype, device, 0, 0));
}

ct_tensor *ct_randn(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(randn);
    if (check_floating("ct_randn", dtype) != CT_OK) return ct_api_return(NULL);
    return ct_api_return(random_tensor("ct_randn", kernels[dtype], shape, ndim, dtype, device, 0, 0));
}

/* The values a dtype holds exactly, for randint's bounds (as PyTorch checks them). */
static void exact_range(ct_dtype dtype, int64_t *min, int64_t *max)
{
    switch (dtype) {
    case CT_F32: *min = -(INT64_C(1) << 24), *max = INT64_C(1) << 24; break;
    case CT_F64: *min = -(INT64_C(1) << 53), *max = INT64_C(1) << 53; break;
    case CT_F16: *min = -2048, *max = 2048; break;
    case CT_BF16: *min = -256, *max = 256; break;
    case CT_I32: *min = INT32_MIN, *max = INT32_MAX; break;
    case CT_U8: *min = 0, *max = 255; break;
    case CT_BOOL: *min = 0, *max = 1; break;
    default: *min = INT64_MIN, *max = INT64_MAX; break;
    }
}

static ct_tensor *randint(int64_t low, int64_t high, const int64_t *shape, int ndim, ct_dtype dtype,
                          ct_device device)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(randint);
    if (!ct_dtype_is_valid(dtype))
        return ct_error_null(CT_ERR_DTYPE, "ct_randint: dtype %d is not a ct_dtype", (int)dtype);
    if (low >= high)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_randint: expects low to be less than high, "
                             "but got low=%lld >= high=%lld", (long long)low, (long long)high);
    int64_t min, max;
    exact_range(dtype, &min, &max);
    if (low < min || high - 1 > max)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_randint: [%lld, %lld) is out of bounds for "
                             "%s, which holds %lld to %lld exactly", (long long)low, (long long)high,
                             ct_dtype_name(dtype), (long long)min, (long long)max);
    uint64_t range = (uint64_t)high - (uint64_t)low;
    return random_tensor("ct_randint", kernels[dtype], shape, ndim, dtype, device, low, (int64_t)range);
}

ct_tensor *ct_randint(int64_t low, int64_t high, const int64_t *shape, int ndim, ct_dtype dtype,
                      ct_device device)
{
    CT_API_ENTER;
    return ct_api_return(randint(low, high, shape, ndim, dtype, device));
}

/* ---- the generators' state (torch.get_rng_state / set_rng_state, for every device) ---- */
enum { RNG_STATE_VALUES = 1 + CT_DEVICE_TYPE_COUNT * CT_MAX_DEVICES_PER_TYPE };

ct_tensor *ct_get_rng_state(void)
{
    CT_API_ENTER;
    int64_t shape[1] = {RNG_STATE_VALUES};
    uint64_t values[RNG_STATE_VALUES];
    pthread_mutex_lock(&generator_lock);
    values[0] = generator_seed;
    memcpy(values + 1, generator_offsets, sizeof generator_offsets);
    pthread_mutex_unlock(&generator_lock);
    return ct_api_return(ct_tensor_from_data(values, CT_I64, shape, 1, CT_DEVICE_CPU));
}

ct_status ct_set_rng_state(const ct_tensor *state)
{
    const char *function = "ct_set_rng_state";
    if (!state) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: argument 'state' is NULL", function);
    if (state->dtype != CT_I64 || ct_numel(state) != RNG_STATE_VALUES)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: state is %s of %lld values; a state from "
                        "ct_get_rng_state is int64 of %d values", function, ct_dtype_name(state->dtype),
                        (long long)ct_numel(state), RNG_STATE_VALUES);
    uint64_t values[RNG_STATE_VALUES];
    ct_status status = ct_tensor_to_array(state, values, sizeof values);
    if (status != CT_OK) return status;
    pthread_mutex_lock(&generator_lock);
    generator_seed = values[0];
    memcpy(generator_offsets, values + 1, sizeof generator_offsets);
    pthread_mutex_unlock(&generator_lock);
    return CT_OK;
}
