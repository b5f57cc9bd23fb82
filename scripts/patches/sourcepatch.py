"""What the patches under scripts/patches share: a source file whose every change must match
exactly once, so a patch fails loudly when upstream's source moved."""
import os
import sys


class SourcePatch:
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.src = open(path, encoding="utf-8").read()

    def replace_once(self, old, new):
        if self.src.count(old) != 1:
            sys.exit(f"{self.name} patch: expected one match for {old[:60]!r} in {self.path}")
        self.src = self.src.replace(old, new)

    def save(self):
        open(self.path, "w", encoding="utf-8").write(self.src)


def add_x86_cpu_source(name, ggml_src, source, flags, why):
    """Adds `source` (a path under ggml/src) to ggml-cpu's sources, compiled with `flags` (a CMake
    list), on x86-64 only: the kernels a patch builds beyond the baseline, called only where the
    CPU has what they use. `why` becomes the CMake comment."""
    cmake = SourcePatch(name, os.path.join(ggml_src, "ggml-cpu", "CMakeLists.txt"))
    anchor = (
        "        list(APPEND GGML_CPU_SOURCES\n"
        "                    ggml-cpu/llamafile/sgemm.cpp\n"
        "                    ggml-cpu/llamafile/sgemm.h)\n"
    )
    cmake.replace_once(
        anchor,
        anchor + '        if (CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64" AND NOT MSVC)\n'
        f"            # voxpipe: {why} (scripts/patches/{name}.py)\n"
        f"            list(APPEND GGML_CPU_SOURCES {source})\n"
        f"            set_source_files_properties({source} PROPERTIES COMPILE_OPTIONS\n"
        f'                "{flags}")\n'
        "        endif()\n",
    )
    cmake.save()
