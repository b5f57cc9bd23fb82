#pragma once
// whisper.cpp 1.8.5, built from PyPI's pywhispercpp source package by scripts/setup-whisper.sh.
#include <whisper.h>
