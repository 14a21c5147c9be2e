/* A program of another project, built against an installed ctorch. */
#include <stdio.h>

#include <ctorch.h>

int main(void)
{
    ct_scope_push();
    float data[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    ct_tensor *x = ct_tensor_from_data(data, CT_F32, shape, 1, CT_DEVICE_CPU);
    ct_tensor *y = ct_add(x, x);
    double last = 0;
    int status = 0;
    if (!y || ct_item(ct_select(y, 0, 2), &last) != CT_OK || last != 6.0) {
        fprintf(stderr, "consumer: %s\n", ct_last_error_message());
        status = 1;
    } else {
        ct_print(y);
    }
    ct_scope_pop();
    return status;
}
