/* A gate that holds a stream: work queued on it after stream_gate_close waits, on the device,
 * until stream_gate_open. The tests use it to keep a stream's work pending for as long as they
 * need, without relying on how long anything takes. OpenCL: a barrier on a user event. CUDA (the
 * stand-in driver only): a call queued on the stream that waits for the gate. */
#ifndef CT_TEST_STREAM_GATE_H
#define CT_TEST_STREAM_GATE_H

#include "ctorch/stream.h"

typedef struct stream_gate stream_gate;

/* Fails the test when the stream's device type has no gate here. */
stream_gate *stream_gate_close(ct_stream *stream);
/* Lets the held work run (from any thread); opening twice is opening once. */
void stream_gate_open(stream_gate *gate);
/* Opens the gates still closed (a test that failed left them so) and frees every gate: the
 * teardown of each test, once nothing else can open one. */
void stream_gates_release(void);
/* Whether a gate can hold streams of this device type in this build. */
bool stream_gate_available(ct_device_type type);

#endif
