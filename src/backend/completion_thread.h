/* Where the accelerator backends run a queued copy's `done`: on one completion thread of ctorch's,
 * never in the driver's own callback, which may not call the driver (CUDA host functions) or
 * block (OpenCL event callbacks), while `done` may release storage that waits for events and
 * frees pinned memory. */
#ifndef CT_COMPLETION_THREAD_H
#define CT_COMPLETION_THREAD_H

#include "device/backend_interface.h"

typedef struct ct_completion ct_completion;

/* done(arg), prepared for a driver callback; NULL when no completion thread can run (the caller
 * then waits for the copy and runs done itself). */
ct_completion *ct_completion_new(ct_backend_done done, void *arg);
/* From the driver's callback, on any thread: hands c to the completion thread, which runs and
 * frees it. Makes no driver call and does not block for long. */
void ct_completion_post(ct_completion *c);
/* Frees a completion the driver did not take. NULL-safe. */
void ct_completion_discard(ct_completion *c);

#endif
