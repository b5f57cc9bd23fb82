#pragma once
// sherpa-onnx 2.0.1's C API, from PyPI's sherpa-onnx-core wheel, installed by scripts/setup-piper.sh,
// and the entries of its onnxruntime's C API that the speaker segmentation calls directly.
#include <sherpa-onnx/c-api/c-api.h>
#include "ort.h"
