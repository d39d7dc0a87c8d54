/* kevin_abi.h — the candidate ABI, version 1 (docs/eval.md).
 * C-compatible. The harness puts this header on the include path of every candidate build;
 * a candidate includes it and defines kevin_forward. Changing anything here is an ABI break. */
#ifndef KEVIN_ABI_H_
#define KEVIN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define KEVIN_ABI_VERSION 1

typedef enum {
  KEVIN_F32 = 0,
  KEVIN_F16 = 1,
  KEVIN_BF16 = 2,
  KEVIN_F64 = 3,
  KEVIN_I8 = 4,
  KEVIN_U8 = 5,
  KEVIN_I16 = 6,
  KEVIN_I32 = 7,
  KEVIN_I64 = 8,
  KEVIN_BOOL = 9
} kevin_dtype;

/* One tensor owned by the harness. data is device memory on the CUDA backend and host memory
 * on the CPU backend; shape and strides (in elements) have ndim entries. */
typedef struct {
  void* data;
  int32_t dtype; /* a kevin_dtype */
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides;
} kevin_tensor;

/* Everything one forward call sees. Inputs are forward's tensor arguments, then parameters,
 * then buffers (state_dict order); they are read-only. Outputs are preallocated, contiguous,
 * and filled with poison before every call. Scalars are forward's non-tensor arguments in
 * order. workspace is harness-owned device scratch; stream is the cudaStream_t all work must
 * be enqueued on (NULL on the CPU backend). */
typedef struct {
  const kevin_tensor* inputs;
  int32_t num_inputs;
  kevin_tensor* outputs;
  int32_t num_outputs;
  const double* scalars;
  int32_t num_scalars;
  void* workspace;
  size_t workspace_bytes;
  void* stream;
} kevin_args;

#ifdef __cplusplus
extern "C" {
#endif
/* Defined by the candidate. Returns 0 on success; any other value is a runtime error. */
int kevin_forward(const kevin_args* args);
#ifdef __cplusplus
}
#endif

#endif /* KEVIN_ABI_H_ */
