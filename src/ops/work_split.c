/* Work split by the device's shape. On a CPU (groups of one, 4096-32768 elements per item, about
 * 512 items) a sum of 16M floats is 512 chunks of 32768; on an H100 (blocks of 256, 4-256
 * elements per thread, 132 x 2048 threads) it is 1056 blocks of 256 threads, 62 elements each,
 * and a bias gradient (dim 0 of [512, 256]) 8 tiles of 32 columns x 16 chunks of 32 rows. */
#include "ops/work_split.h"

static long ceil_div(long a, long b) { return (a + b - 1) / b; }

static long power_of_2_at_least(long n)
{
    long p = 1;
    while (p < n) p *= 2;
    return p;
}

static long clamp(long v, long low, long high) { return v < low ? low : v > high ? high : v; }

/* Elements one item walks: the total spread over the items that fill the device. */
static long per_item(const ct_work_shape *shape, int64_t outputs, int64_t count)
{
    return clamp((long)(outputs * count / shape->target_items), shape->min_per_item, shape->max_per_item);
}

/* A group size between the shape's bounds for `items` items' worth of work. */
static int group_for(const ct_work_shape *shape, long items)
{
    return (int)clamp(power_of_2_at_least(items), shape->min_group_size, shape->group_size);
}

/* P even chunks of at most `target` elements, none of them empty. */
static void even_chunks(int64_t count, long target, ct_reduce_split *split)
{
    long chunks = ceil_div((long)count, target);
    split->chunk = ceil_div((long)count, chunks);
    split->chunks = ceil_div((long)count, split->chunk);
}

static void set_combine(const ct_work_shape *shape, ct_reduce_split *split)
{
    split->combine_group_size = group_for(shape, ceil_div(split->chunks, shape->min_per_item));
}

ct_status ct_split_rows(ct_device device, int64_t outputs, int64_t count, ct_reduce_split *split)
{
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    long per = per_item(&shape, outputs, count);
    split->group_size = group_for(&shape, ceil_div((long)count, per));
    split->tile_width = 1;
    even_chunks(count, (long)split->group_size * per, split);
    set_combine(&shape, split);
    return CT_OK;
}

ct_status ct_split_columns(ct_device device, int64_t outputs, int64_t count, ct_reduce_split *split)
{
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    /* A warp's worth of items side by side reads whole lines; each item folds lanes_per_item
     * adjacent outputs (a CPU's vector), and the group's other items split the rows. */
    long across = shape.group_size < 32 ? shape.group_size : 32;
    long rows_per_item = per_item(&shape, outputs, count) / shape.lanes_per_item;
    if (rows_per_item < 1) rows_per_item = 1;
    long down = clamp(power_of_2_at_least(ceil_div((long)count, rows_per_item)), 1,
                      shape.group_size / across);
    split->group_size = (int)(across * down);
    if (split->group_size < shape.min_group_size) split->group_size = shape.min_group_size;
    split->tile_width = across * shape.lanes_per_item;
    even_chunks(count, (split->group_size / across) * rows_per_item, split);
    set_combine(&shape, split);
    return CT_OK;
}

ct_status ct_split_row_groups(ct_device device, int64_t length, int *group_size)
{
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    *group_size = group_for(&shape, ceil_div((long)length, shape.min_per_item));
    return CT_OK;
}
