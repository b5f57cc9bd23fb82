#pragma once
// sherpa-onnx 2.0.1's C API, from PyPI's sherpa-onnx-core wheel, installed by scripts/setup-piper.sh.
#include <sherpa-onnx/c-api/c-api.h>
