#pragma once
// The few entries of onnxruntime's C API (the libonnxruntime that sherpa-onnx's wheel ships) that
// voxpipe's pyannote segmentation uses, declared by their fixed places in the `OrtApi` table
// (an append-only ABI: entry N is the same function in every release since it was added).
// Written from onnxruntime_c_api.h (API version 29); only version 1's entries are used.
#include <stddef.h>
#include <stdint.h>

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtValue OrtValue;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;

typedef struct VoxOrtApiBase {
    const void *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} VoxOrtApiBase;

const VoxOrtApiBase *OrtGetApiBase(void);

/// The API table, or NULL when the library is older than version 1 of it.
static inline const void *const *vox_ort_api(void) {
    const VoxOrtApiBase *base = OrtGetApiBase();
    return base ? (const void *const *)base->GetApi(1) : NULL;
}

#define VOX_ORT_ENTRY(api, index, type) ((type)((api)[index]))

/// The message of a failed call (entry 2); `status` is released (entry 93).
static inline void vox_ort_message(const void *const *api, OrtStatus *status, char *buffer, size_t size) {
    const char *message = VOX_ORT_ENTRY(api, 2, const char *(*)(const OrtStatus *))(status);
    size_t i = 0;
    for (; message && message[i] && i + 1 < size; i++) buffer[i] = message[i];
    if (size) buffer[i] = 0;
    VOX_ORT_ENTRY(api, 93, void (*)(OrtStatus *))(status);
}

/// CreateEnv (3), errors and worse only (level 3).
static inline OrtStatus *vox_ort_create_env(const void *const *api, const char *name, OrtEnv **out) {
    return VOX_ORT_ENTRY(api, 3, OrtStatus *(*)(int, const char *, OrtEnv **))(3, name, out);
}

/// CreateSessionOptions (10), then intra-op threads (24), inter-op threads (25), sequential
/// execution (13: 0), every graph optimization (23: 99).
static inline OrtStatus *vox_ort_create_options(const void *const *api, int threads, OrtSessionOptions **out) {
    OrtStatus *s = VOX_ORT_ENTRY(api, 10, OrtStatus *(*)(OrtSessionOptions **))(out);
    if (s) return s;
    if ((s = VOX_ORT_ENTRY(api, 24, OrtStatus *(*)(OrtSessionOptions *, int))(*out, threads))) return s;
    if ((s = VOX_ORT_ENTRY(api, 25, OrtStatus *(*)(OrtSessionOptions *, int))(*out, 1))) return s;
    if ((s = VOX_ORT_ENTRY(api, 13, OrtStatus *(*)(OrtSessionOptions *, int))(*out, 0))) return s;
    return VOX_ORT_ENTRY(api, 23, OrtStatus *(*)(OrtSessionOptions *, int))(*out, 99);
}

/// CreateSession (7) from a model file.
static inline OrtStatus *vox_ort_create_session(
    const void *const *api, const OrtEnv *env, const char *path, const OrtSessionOptions *options, OrtSession **out) {
    return VOX_ORT_ENTRY(api, 7, OrtStatus *(*)(const OrtEnv *, const char *, const OrtSessionOptions *, OrtSession **))(
        env, path, options, out);
}

/// CreateCpuMemoryInfo (69): the device allocator (0), default memory (0).
static inline OrtStatus *vox_ort_cpu_memory(const void *const *api, OrtMemoryInfo **out) {
    return VOX_ORT_ENTRY(api, 69, OrtStatus *(*)(int, int, OrtMemoryInfo **))(0, 0, out);
}

/// CreateTensorWithDataAsOrtValue (49): a float tensor (element type 1) over caller-owned data.
static inline OrtStatus *vox_ort_float_tensor(
    const void *const *api, const OrtMemoryInfo *memory, float *data, size_t count, const int64_t *shape,
    size_t rank, OrtValue **out) {
    return VOX_ORT_ENTRY(
        api, 49, OrtStatus *(*)(const OrtMemoryInfo *, void *, size_t, const int64_t *, size_t, int, OrtValue **))(
        memory, data, count * sizeof(float), shape, rank, 1, out);
}

/// Run (9): one input, one output, no run options.
static inline OrtStatus *vox_ort_run(
    const void *const *api, OrtSession *session, const char *input, const OrtValue *value, const char *output,
    OrtValue **out) {
    return VOX_ORT_ENTRY(
        api, 9,
        OrtStatus *(*)(OrtSession *, const void *, const char *const *, const OrtValue *const *, size_t,
                       const char *const *, size_t, OrtValue **))(session, NULL, &input, &value, 1, &output, 1, out);
}

/// GetTensorMutableData (51).
static inline OrtStatus *vox_ort_data(const void *const *api, OrtValue *value, float **out) {
    return VOX_ORT_ENTRY(api, 51, OrtStatus *(*)(OrtValue *, void **))(value, (void **)out);
}

/// The tensor's shape: GetTensorTypeAndShape (65), GetDimensionsCount (61), GetDimensions (62),
/// ReleaseTensorTypeAndShapeInfo (99). At most `capacity` dimensions; `*rank` is how many it has.
static inline OrtStatus *vox_ort_shape(
    const void *const *api, const OrtValue *value, int64_t *dims, size_t capacity, size_t *rank) {
    OrtTensorTypeAndShapeInfo *info = NULL;
    OrtStatus *s = VOX_ORT_ENTRY(api, 65, OrtStatus *(*)(const OrtValue *, OrtTensorTypeAndShapeInfo **))(value, &info);
    if (s) return s;
    s = VOX_ORT_ENTRY(api, 61, OrtStatus *(*)(const OrtTensorTypeAndShapeInfo *, size_t *))(info, rank);
    if (!s && *rank <= capacity)
        s = VOX_ORT_ENTRY(api, 62, OrtStatus *(*)(const OrtTensorTypeAndShapeInfo *, int64_t *, size_t))(
            info, dims, *rank);
    VOX_ORT_ENTRY(api, 99, void (*)(OrtTensorTypeAndShapeInfo *))(info);
    return s;
}

/// The Release entries: Env (92), MemoryInfo (94), Session (95), Value (96), SessionOptions (100).
static inline void vox_ort_release_env(const void *const *api, OrtEnv *p) { VOX_ORT_ENTRY(api, 92, void (*)(OrtEnv *))(p); }
static inline void vox_ort_release_memory(const void *const *api, OrtMemoryInfo *p) {
    VOX_ORT_ENTRY(api, 94, void (*)(OrtMemoryInfo *))(p);
}
static inline void vox_ort_release_session(const void *const *api, OrtSession *p) {
    VOX_ORT_ENTRY(api, 95, void (*)(OrtSession *))(p);
}
static inline void vox_ort_release_value(const void *const *api, OrtValue *p) { VOX_ORT_ENTRY(api, 96, void (*)(OrtValue *))(p); }
static inline void vox_ort_release_options(const void *const *api, OrtSessionOptions *p) {
    VOX_ORT_ENTRY(api, 100, void (*)(OrtSessionOptions *))(p);
}
