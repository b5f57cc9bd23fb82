#!/usr/bin/env bash
# make bench (issue 38): the runtime's rewritten loops give the bits of the code they replace.
# Builds, from the kernels as scripts/patches/ carries them, three checks and runs them:
# - whisper-sampling.py's expf (8 at a time, in place) against this machine's libm expf on all 2^32 floats;
#   its maximum against std::max_element; its draws against std::discrete_distribution<> (ids and
#   the generator's state after) on random, peaked and sparse distributions;
# - whisper-dtw-median.py's median of 7 against upstream's sorted window (zeros, NaN, edges);
# - whisper-energy.py's signal energy (upstream's function as the patch leaves it) against upstream's;
# - ggml-f16-cols.py's dot products against ggml_vec_dot_f16 of the installed runtime (lengths
#   1 to 3,000, 1 to 3 columns in F16, 1 to 6 columns converted to F32);
# - the q8_0 kernels of voxpipe-q8.inc (16-bit multiply-adds for 16 columns or more, 8-row tiles for
#   2 to 15, 4-row tiles for what is left) against each other and against the block sums written out one product at a time, on
#   random shapes and on scales that are zero, subnormal, infinite or NaN; where the CPU has AMX-INT8,
#   voxpipe-q8-amx.cpp's tiles (16 columns, or 8 for the few columns of a decoder step) against the same;
#   where it has AVX-512 VNNI, voxpipe-q8-vnni.cpp's VPDPBUSD products (16 columns a register, or 16
#   rows at a time for 2 to 15 columns) against the same;
# - ggml-f16-heads.py's attention scores (F16, 2 to 6 columns and 8 or more, every head in one pass)
#   against tinyBLAS in the installed runtime: the same product with 7 columns (which tinyBLAS
#   takes) must give the same bits in those columns;
# - ggml-cpy-f16.py's F32 to F16 copies (rows as they are, transposed) against _cvtss_sh value by value;
# - ggml-vec-max.py's row maximum against upstream's loop (NaN, zeros of both signs, infinities);
# - ggml-fa-wide.py's softmax, 16 values at a time, against ggml_vec_soft_max_f32 of the installed
#   runtime (the x86-64-v3 build): the values and the sum (exp's slow path, masked scores), where the
#   CPU has AVX-512.
# Prints one line per check; exits 1 on the first difference. Also runnable alone.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${VOXPIPE_PREFIX:-/usr/local}
W=$PWD/bench/work/exact-kernels
rm -rf "$W"; mkdir -p "$W"
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
s = open("scripts/patches/whisper-sampling.py").read()
open(f"{w}/sampling.inc", "w").write(s.split('KERNELS = r"""')[1].split('"""')[0])
s = open("scripts/patches/whisper-dtw-median.py").read()
k = s.split('KERNELS = r"""')[1].split('"""')[0]
open(f"{w}/median.inc", "w").write(k[: k.index("static void median_filter(")])
s = open("scripts/patches/ggml-vec-max.py").read()
open(f"{w}/vecmax.inc", "w").write(s.split('KERNEL = r"""')[1].split('"""')[0])
s = open("scripts/patches/ggml-fa-wide.py").read()
open(f"{w}/softmax.inc", "w").write(s.split('SOFT_MAX = r"""')[1].split('"""')[0])
s = open("scripts/patches/ggml-f16-cols.py").read()
k = s.split('KERNEL = r"""')[1].split("// The rows ir0_start")[0]
open(f"{w}/f16cols.inc", "w").write(k.replace("#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)", ""))
PY
# Upstream's whisper.cpp (the sdist setup-whisper.sh builds): its signal energy and its mel
# spectrogram's FFT, as they are (the references) and as whisper-energy.py and whisper-mel-fft.py
# patch them.
. scripts/pypi.sh
read -r _ spec sha < <(grep -o 'sdist_get pywhispercpp==[^ ]* [0-9a-f]*' scripts/setup-whisper.sh)
mkdir -p "$W/sdist"
tar -xzf "$(sdist_get "$spec" "$sha" "$W/sdist")" -C "$W/sdist" --wildcards '*/whisper.cpp/src/whisper.cpp'
python3 - "$W" "$W"/sdist/*/whisper.cpp/src/whisper.cpp <<'PY'
import subprocess, sys
w, src = sys.argv[1], open(sys.argv[2]).read()
def cut(start, end):
    a = src.index(start)
    return src[a : src.index(end, a)]
parts = {
    "energy": cut("static std::vector<float> get_signal_energy(const float * signal, int n_samples, int n_samples_per_half_window) {\n",
                  "static int timestamp_to_sample("),
    "mel": cut("#define SIN_COS_N_COUNT WHISPER_N_FFT\n", "static bool log_mel_spectrogram("),
}
for name, text in parts.items():
    open(f"{w}/{name}-upstream.inc", "w").write(text)
    open(f"{w}/{name}.inc", "w").write(text)
    subprocess.run([sys.executable, f"scripts/patches/whisper-{'energy' if name == 'energy' else 'mel-fft'}.py", f"{w}/{name}.inc"], check=True)
PY
cat >"$W/sampling.cpp" <<'CPP'
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>
#include "sampling.inc"
#include "median.inc"
#include <cassert>
#include <immintrin.h>
#define WHISPER_N_FFT 400
struct whisper_mel { int n_len; int n_len_org; int n_mel; std::vector<float> data; };
struct whisper_filters { int32_t n_mel; int32_t n_fft; std::vector<float> data; };
namespace up {
#include "energy-upstream.inc"
#include "mel-upstream.inc"
}
namespace vp {
#include "energy.inc"
#include "mel.inc"
}
int main() {
    if (!voxpipe_expf_usable()) { puts("exact-kernels: expf: this CPU or libm is not the one the kernel matches (the runtime falls back to libm)"); return 0; }
    std::atomic<uint64_t> bad{0};
    auto work = [&](uint64_t from, uint64_t to) {
        std::vector<float> in(4096), out(4096);
        for (uint64_t b = from; b < to; b += 4096) {
            for (int j = 0; j < 4096; ++j) { const uint32_t u = (uint32_t) (b + j); memcpy(&in[j], &u, 4); }
            out = in;  // in place, as the sampler calls it
            voxpipe_expf_avx2(out.data(), out.data(), 4096);
            for (int j = 0; j < 4096; ++j) {
                const float e = expf(in[j]);
                if (memcmp(&e, &out[j], 4) != 0 && !(e != e && out[j] != out[j]) && bad++ < 5)
                    printf("expf(%a): libm %a, kernel %a\n", in[j], e, out[j]);
            }
        }
    };
    std::thread t(work, 0ull, 1ull << 31);
    work(1ull << 31, 1ull << 32);
    t.join();
    if (bad) { printf("exact-kernels: expf: %llu of 2^32 floats differ\n", (unsigned long long) bad.load()); return 1; }
    puts("exact-kernels: expf: all 2^32 floats give libm's bits");
    std::mt19937 gen(38);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    int maxes = 0, draws = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const int n = trial % 3 == 0 ? 51865 : 1 + (int) (gen() % 3000);
        std::vector<float> logits(n), probs(n);
        for (auto & x : logits) x = normal(gen) * (trial % 5 == 0 ? 6.0f : 1.0f);
        for (int i = 0; i < n; i += 1 + (int) (gen() % 50)) logits[i] = -INFINITY;
        const float ref = *std::max_element(logits.begin(), logits.end());
        if (voxpipe_max_element(logits) != ref) { printf("exact-kernels: maximum differs (n %d)\n", n); return 1; }
        ++maxes;
        for (int i = 0; i < n; ++i) probs[i] = logits[i] == -INFINITY ? 0.0f : expf(logits[i] - ref);
        std::mt19937 a(trial), b(trial);
        std::vector<double> cp;
        int ids[5];
        voxpipe_discrete_draws(probs, b, 5, ids, cp);
        std::discrete_distribution<> dist(probs.begin(), probs.end());
        for (int i = 0; i < 5; ++i) {
            if (dist(a) != ids[i]) { printf("exact-kernels: draw %d differs (n %d)\n", i, n); return 1; }
        }
        if (a != b) { printf("exact-kernels: the generator's state differs (n %d)\n", n); return 1; }
        draws += 5;
    }
    printf("exact-kernels: maximum and draws: %d vectors, %d draws, the same as std::max_element and std::discrete_distribution\n", maxes, draws);
    // DTW's median filter: upstream's loop (reflect padding, a vector sorted per output) on lines
    // with zeros, NaN and repeated values
    long medians = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        const int64_t n = 8 + (int64_t) (gen() % 1600);
        std::vector<float> line(n), out(n);
        for (auto & x : line) x = normal(gen);
        for (int64_t i = 0; i < n; i += 1 + (int64_t) (gen() % 40)) line[i] = (gen() % 3 == 0) ? -0.0f : (gen() % 2 ? 0.0f : NAN);
        for (int64_t i = 0; i < n; i += 1 + (int64_t) (gen() % 9)) line[i] = line[(i * 7) % n];
        voxpipe_median7_avx2(line.data(), n, out.data());
        std::vector<float> filter;
        for (int64_t k = 0; k < n; ++k, ++medians) {
            for (int64_t off = -3; off <= 3; ++off) {
                int64_t idx = k + off;
                if (idx < 0) idx = -idx; else if (idx >= n) idx = 2 * (n - 1) - idx;
                filter.push_back(line[idx]);
            }
            std::sort(filter.begin(), filter.end());
            const float v = filter[filter.size() / 2];
            filter.clear();
            if (memcmp(&v, &out[k], 4) != 0 && !(v != v && out[k] != out[k])) {
                printf("exact-kernels: median %lld of a line of %lld: upstream %a, kernel %a\n", (long long) k, (long long) n, v, out[k]);
                return 1;
            }
        }
    }
    printf("exact-kernels: DTW median filter: %ld medians, upstream's values\n", medians);
    // The signal energy: lengths around the window and long ones, half windows of 0 to 40,
    // with zeros of both signs, subnormals, infinities and NaN among the samples
    long energies = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        const int n = trial < 200 ? trial : (int) (gen() % (trial % 10 == 0 ? 200000 : 3000));
        const int hw = trial % 7 == 0 ? (int) (gen() % 41) : 32;
        std::vector<float> signal(n);
        for (auto & x : signal) x = normal(gen) / 16;
        for (int i = 0; i < n; i += 1 + (int) (gen() % 500)) {
            const float odd[] = {0.0f, -0.0f, 1e-40f, -1e-42f, INFINITY, -INFINITY, NAN, 1e30f};
            signal[i] = odd[gen() % 8];
        }
        const std::vector<float> a = up::get_signal_energy(signal.data(), n, hw), b = vp::get_signal_energy(signal.data(), n, hw);
        for (int i = 0; i < n; ++i, ++energies) {
            if (memcmp(&a[i], &b[i], 4) != 0) {
                printf("exact-kernels: signal energy %d of %d (half window %d): upstream %a, kernel %a\n", i, n, hw, a[i], b[i]);
                return 1;
            }
        }
    }
    printf("exact-kernels: signal energy: %ld outputs, upstream's bits\n", energies);
    // The mel spectrogram: upstream's worker against the patched one (8 frames a lane each, the
    // rest upstream's) on 1 to 3 threads, on noise with silences and spikes; and every lane of the
    // 8-frame FFT against upstream's fft of its frame, all 800 values
    long mels = 0, ffts = 0;
    whisper_filters filters{80, 201, std::vector<float>(80 * 201)};
    for (auto & x : filters.data) x = std::fabs(normal(gen)) / 64;
    std::vector<float> buf8(8 * 4000 + 8);
    __m256 * in8 = (__m256 *) (((uintptr_t) buf8.data() + 31) & ~(uintptr_t) 31), * out8 = in8 + 800;
    std::vector<float> fft_in(800), fft_out(3200);
    for (int trial = 0; trial < 80; ++trial) {
        const int n_threads = 1 + trial % 3;
        const int n_samples = 400 + (int) (gen() % (trial % 4 == 0 ? 500000 : 20000));
        std::vector<float> samples(n_samples + 400);
        for (int i = 0; i < n_samples; ++i) samples[i] = normal(gen) / 16;
        for (int i = 0; i < n_samples; i += 1 + (int) (gen() % 30000)) {
            const int len = (int) (gen() % 4000);
            const float v = gen() % 2 ? 0.0f : (gen() % 2 ? -0.0f : 1.0f);
            for (int j = i; j < std::min(n_samples, i + len); ++j) samples[j] = v;
        }
        whisper_mel a{(int) (samples.size() - 400) / 160, 0, 80, {}}, b = a;
        a.data.resize(80 * a.n_len);
        b.data.resize(80 * b.n_len);
        for (int ith = 0; ith < n_threads; ++ith) {
            up::log_mel_spectrogram_worker_thread(ith, up::global_cache.hann_window, samples, n_samples, 400, 160, n_threads, filters, a);
            vp::log_mel_spectrogram_worker_thread(ith, vp::global_cache.hann_window, samples, n_samples, 400, 160, n_threads, filters, b);
        }
        for (size_t i = 0; i < a.data.size(); ++i, ++mels) {
            if (memcmp(&a.data[i], &b.data[i], 4) != 0) {
                printf("exact-kernels: mel value %zu of %d samples, %d threads: upstream %a, patched %a\n", i, n_samples, n_threads, a.data[i], b.data[i]);
                return 1;
            }
        }
        const int step = 160 * n_threads, first = (int) (gen() % 160);
        if (first + 7 * step > n_samples) continue;
        vp::voxpipe_fft8_frames(vp::global_cache.hann_window, samples.data(), n_samples, 400, first, step, in8, out8);
        for (int f = 0; f < 8; ++f, ++ffts) {
            const int offset = first + f * step;
            std::fill(fft_in.begin(), fft_in.end(), 0.0f);
            for (int j = 0; j < std::min(400, n_samples - offset); ++j) fft_in[j] = up::global_cache.hann_window[j] * samples[offset + j];
            up::fft(fft_in.data(), 400, fft_out.data());
            for (int j = 0; j < 800; ++j) {
                const float v = ((const float *) out8)[j * 8 + f];
                if (memcmp(&v, &fft_out[j], 4) != 0) {
                    printf("exact-kernels: FFT value %d of lane %d: upstream %a, kernel %a\n", j, f, fft_out[j], v);
                    return 1;
                }
            }
        }
    }
    printf("exact-kernels: mel spectrogram: %ld values and %ld frames' FFTs 8 at a time, upstream's bits\n", mels, ffts);
}
CPP
cat >"$W/f16cols.c" <<'C'
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef uint16_t ggml_fp16_t;
typedef double ggml_float;
#define GGML_RESTRICT restrict
#define GGML_CPU_FP16_TO_FP32(x) _cvtsh_ss(x)
void ggml_cpu_init(void);
void ggml_vec_dot_f16(int n, float * s, size_t bs, ggml_fp16_t * x, size_t bx, ggml_fp16_t * y, size_t by, int nrc);
#include "f16cols.inc"
static float value(int kind) { const float u = rand() / (float) RAND_MAX; return kind ? u * u * u : (u - 0.5f) * 8; }
int main(void) {
    ggml_cpu_init();
    const int ns[] = {1, 7, 31, 32, 33, 63, 64, 100, 227, 1500, 1501, 2048, 3000};
    long total = 0;
    srand(38);
    for (int trial = 0; trial < 200; ++trial) {
        for (unsigned t = 0; t < sizeof ns / sizeof *ns; ++t) {
            const int n = ns[t];
            ggml_fp16_t * x = malloc(n * 2), * y[6];
            for (int i = 0; i < n; ++i) x[i] = _cvtss_sh(value(0), 0);
            for (int c = 0; c < 6; ++c) {
                y[c] = malloc(n * 2);
                for (int i = 0; i < n; ++i) y[c][i] = _cvtss_sh(value(trial & 1), 0);
            }
            for (int nc = 1; nc <= 3; ++nc) {
                float out[3], ref;
                if (nc == 1) voxpipe_vec_dot_f16_cols(1, n, x, (const ggml_fp16_t * const *) y, out);
                if (nc == 2) voxpipe_vec_dot_f16_cols(2, n, x, (const ggml_fp16_t * const *) y, out);
                if (nc == 3) voxpipe_vec_dot_f16_cols(3, n, x, (const ggml_fp16_t * const *) y, out);
                for (int c = 0; c < nc; ++c, ++total) {
                    ggml_vec_dot_f16(n, &ref, 0, x, 0, y[c], 0, 1);
                    if (memcmp(&ref, &out[c], 4) != 0) {
                        printf("exact-kernels: F16 columns: n %d, %d columns, column %d: ggml %a, kernel %a\n", n, nc, c, ref, out[c]);
                        return 1;
                    }
                }
            }
            // up to six columns given in F32, as the chunk converts them for rows of up to 2,048 values
            float * yf = malloc(6 * n * sizeof(float));
            for (int c = 0; c < 6; ++c) {
                for (int i = 0; i < n; ++i) yf[c * n + i] = GGML_CPU_FP16_TO_FP32(y[c][i]);
            }
            for (int nc = 1; nc <= 6; ++nc) {
                float out[6], ref;
                const char * ahead = (const char *) x;
                switch (nc) {
                    case 1: voxpipe_vec_dot_f16_f32cols(1, n, x, yf, n, ahead, out); break;
                    case 2: voxpipe_vec_dot_f16_f32cols(2, n, x, yf, n, NULL, out); break;
                    case 3: voxpipe_vec_dot_f16_f32cols(3, n, x, yf, n, ahead, out); break;
                    case 4: voxpipe_vec_dot_f16_f32cols(4, n, x, yf, n, NULL, out); break;
                    case 5: voxpipe_vec_dot_f16_f32cols(5, n, x, yf, n, ahead, out); break;
                    default: voxpipe_vec_dot_f16_f32cols(6, n, x, yf, n, NULL, out); break;
                }
                for (int c = 0; c < nc; ++c, ++total) {
                    ggml_vec_dot_f16(n, &ref, 0, x, 0, y[c], 0, 1);
                    if (memcmp(&ref, &out[c], 4) != 0) {
                        printf("exact-kernels: F16 columns in F32: n %d, %d columns, column %d: ggml %a, kernel %a\n", n, nc, c, ref, out[c]);
                        return 1;
                    }
                }
            }
            free(yf);
            free(x);
            for (int c = 0; c < 6; ++c) free(y[c]);
        }
    }
    printf("exact-kernels: F16 columns: %ld dot products, the bits of ggml_vec_dot_f16\n", total);
    return 0;
}
C
cat >"$W/q8.cpp" <<'CPP'
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "../../../scripts/patches/voxpipe-q8.inc"
#ifdef AMX
#include <sys/syscall.h>
#include <unistd.h>
#include "../../../scripts/patches/voxpipe-q8-amx.cpp"
#endif
#ifdef VNNI
#include "../../../scripts/patches/voxpipe-q8-vnni.cpp"
#endif
using namespace voxpipe_q8;
// the definition: per output, for each block in order, acc = fma(da * db, float(exact integer dot), acc)
static float reference(const blk * a, const blk * b, int64_t k) {
    float acc = 0.0f;
    for (int64_t l = 0; l < k; ++l) {
        int32_t dot = 0;
        for (int q = 0; q < 32; ++q) dot += a[l].qs[q] * b[l].qs[q];
        acc = fmaf(h2f(a[l].d) * h2f(b[l].d), (float) dot, acc);
    }
    return acc;
}
static bool same(float x, float y) { return memcmp(&x, &y, 4) == 0 || (x != x && y != y); }
#if defined(AMX) || defined(VNNI)
// every output of T (m x n, column-major) against the definition; false (and the first difference printed) otherwise
static bool matches(const char * what, const std::vector<blk> & A, const std::vector<blk> & B, const std::vector<float> & T,
                    int64_t m, int64_t n, int64_t k) {
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i)
            if (!same(reference(&A[i * k], &B[j * k], k), T[j * m + i])) {
                printf("exact-kernels: q8_0 %s: m %lld n %lld k %lld, output (%lld, %lld): definition %a, kernel %a\n", what,
                       (long long) m, (long long) n, (long long) k, (long long) i, (long long) j,
                       reference(&A[i * k], &B[j * k], k), T[j * m + i]);
                return false;
            }
    return true;
}
#endif
int main() {
    std::mt19937 gen(38);
    const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x7c00, 0xfc00, 0x7e00, 0x7bff};
    long outputs = 0, wide = 0, narrow = 0;
#ifdef AMX
    // Linux grants the tile data only on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
    if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
        printf("exact-kernels: q8_0 on AMX: Linux did not grant the tiles\n");
        return 1;
    }
    long amx = 0;
#endif
#ifdef VNNI
    long vnni = 0, vnni_narrow = 0;
#endif
    for (int trial = 0; trial < 400; ++trial) {
        const int64_t n = trial % 3 == 0 ? 1 + gen() % 15 : 16 + gen() % (trial % 7 == 0 ? 1500 : 70);
        const int64_t m = 1 + gen() % (trial % 4 == 0 || n < 16 ? 600 : 40), k = 1 + gen() % (trial % 5 == 0 ? 64 : 17);
        std::vector<blk> A(m * k), B(n * k);
        for (auto * v : {&A, &B})
            for (auto & x : *v) {
                for (auto & q : x.qs) q = (int8_t) ((int) (gen() % 255) - 127);
                x.d = _cvtss_sh(std::ldexp((float) (gen() % 1000) / 1000.0f, -(int) (gen() % 12)), 0);
                if (trial % 6 == 5 && gen() % 50 == 0) x.d = special[gen() % 8];
            }
        const int nth = 1 + trial % 2;
        std::vector<float> C(m * n, -1.0f), R(m * n, -2.0f);
        for (int ith = 0; ith < nth; ++ith) gemm(A.data(), k, B.data(), k, C.data(), m, m, n, k, ith, nth);
        rows(A.data(), k, B.data(), k, R.data(), m, k, n, 0, m);  // 4-row tiles, every column
#ifdef AMX
        // the tiles: a thread's share of the columns (groups of 16), or of the rows (8 columns or fewer: narrow tiles)
        std::vector<float> T(m * n, -3.0f);
        for (int ith = 0; ith < nth; ++ith) gemm_amx(A.data(), k, B.data(), k, T.data(), m, m, n, k, ith, nth);
        amx += m * n;
        if (!matches("on AMX", A, B, T, m, n, k)) return 1;
#endif
#ifdef VNNI
        // VPDPBUSD: a thread's share of the rows, 16 columns a register (fewer columns: the baseline's code)
        std::vector<float> V(m * n, -4.0f);
        for (int ith = 0; ith < nth; ++ith) gemm_vnni(A.data(), k, B.data(), k, V.data(), m, m, n, k, ith, nth);
        if (n >= 16) vnni += m * n;
        if (n >= 2 && n < 16 && m >= 16) vnni_narrow += m / 16 * 16 * n;
        if (!matches("with VNNI", A, B, V, m, n, k)) return 1;
#endif
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < m; ++i, ++outputs) {
                const float ref = reference(&A[i * k], &B[j * k], k);
                if (!same(ref, C[j * m + i]) || !same(ref, R[j * m + i])) {
                    printf("exact-kernels: q8_0: m %lld n %lld k %lld, output (%lld, %lld): definition %a, kernel %a, 4-row tiles %a\n",
                           (long long) m, (long long) n, (long long) k, (long long) i, (long long) j, ref, C[j * m + i], R[j * m + i]);
                    return 1;
                }
            }
        if (n >= 16) wide += m * n;
        if (n >= 2 && n < 16 && m >= 8) narrow += m / 8 * 8 * n;
    }
#if defined(VNNI)
    printf("exact-kernels: q8_0 with AVX-512 VNNI: %ld outputs through VPDPBUSD 16 columns a register, about %ld 16 rows at a time, the block sums' bits\n",
           vnni, vnni_narrow);
#elif !defined(AMX)
    printf("exact-kernels: q8_0 products: %ld outputs (%ld through the 16-bit kernel, about %ld through the 8-row tiles), the block sums' bits\n",
           outputs, wide, narrow);
#else
    printf("exact-kernels: q8_0 on AMX: %ld outputs (16 columns a tile, and 8 for products of 8 columns or fewer), the block sums' bits\n", amx);
#endif
}
CPP
g++ -O3 -mavx2 -mfma -mf16c -std=c++17 -o "$W/q8" "$W/q8.cpp"
cat >"$W/vecmax.c" <<'C'
#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vecmax.inc"
int main(void) {
    const float special[] = {NAN, 0.0f, -0.0f, INFINITY, -INFINITY};
    long rows = 0, fast = 0;
    srand(38);
    for (int trial = 0; trial < 200000; ++trial) {
        const int n = 16 + rand() % (trial % 10 == 0 ? 1600 : 64);
        float x[1616];
        for (int i = 0; i < n; ++i) x[i] = (rand() / (float) RAND_MAX - 0.7f) * (trial % 3 ? 10.0f : 1e-3f);
        if (trial % 4 == 0) for (int i = 0; i < n; i += 1 + rand() % 20) x[i] = special[rand() % 5];
        if (trial % 7 == 0) for (int i = 0; i < n; ++i) x[i] = -fabsf(x[i]) * (trial % 14 == 0);
        if (trial % 5 == 1) {  // negative values and zeros of both signs: the maximum's sign depends on the order
            for (int i = 0; i < n; ++i) x[i] = -1.0f - fabsf(x[i]);
            for (int i = rand() % n; i < n; i += 1 + rand() % 30) x[i] = rand() % 2 ? 0.0f : -0.0f;
        }
        float ref = -INFINITY, got = 12345.0f;
        for (int i = 0; i < n; ++i) ref = ref > x[i] ? ref : x[i];  // upstream's loop
        if (voxpipe_vec_max_f32(n, &got, x)) {
            ++fast;
            if (memcmp(&ref, &got, 4) != 0) { printf("exact-kernels: row maximum: n %d: upstream %a, kernel %a\n", n, ref, got); return 1; }
        }
        ++rows;
    }
    printf("exact-kernels: row maximum: %ld rows (%ld taken 8 at a time), upstream's bits\n", rows, fast);
    return 0;
}
C
gcc -O2 -mavx2 -o "$W/vecmax" "$W/vecmax.c"
cat >"$W/heads.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"
static float value(void) { return (rand() / (float) RAND_MAX - 0.5f) * 4; }
int main(void) {
    // the last: more heads' columns than the kernel keeps at once (it goes head by head)
    const int ks[] = {8, 64, 64, 128, 256, 256}, ms[] = {4, 12, 1500, 100, 1500, 40}, hs[] = {1, 8, 8, 3, 2, 16};
    long outputs = 0;
    srand(38);
    for (int s = 0; s < 6; ++s) {
        for (int n = 2; n <= 6; ++n) {
            struct ggml_init_params ip = {256u << 20, NULL, false};
            struct ggml_context * ctx = ggml_init(ip);
            const int k = ks[s], m = ms[s], h = hs[s];
            struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, k, m, h);
            struct ggml_tensor * b7 = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, 7, h);
            struct ggml_tensor * bn = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, n, h);
            for (int64_t i = 0; i < ggml_nelements(a); ++i) ((ggml_fp16_t *) a->data)[i] = ggml_fp32_to_fp16(value());
            for (int64_t i = 0; i < ggml_nelements(b7); ++i) ((float *) b7->data)[i] = value();
            for (int q = 0; q < h; ++q) memcpy((float *) bn->data + (size_t) q * k * n, (float *) b7->data + (size_t) q * k * 7, sizeof(float) * k * n);
            struct ggml_tensor * r7 = ggml_mul_mat(ctx, a, b7), * rn = ggml_mul_mat(ctx, a, bn);
            struct ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, r7);
            ggml_build_forward_expand(gf, rn);
            ggml_graph_compute_with_ctx(ctx, gf, 2);
            for (int q = 0; q < h; ++q)
                for (int j = 0; j < n; ++j)
                    for (int i = 0; i < m; ++i, ++outputs) {
                        const float x = ((float *) r7->data)[((size_t) q * 7 + j) * m + i], y = ((float *) rn->data)[((size_t) q * n + j) * m + i];
                        if (memcmp(&x, &y, 4) != 0) {
                            printf("exact-kernels: F16 heads: k %d, m %d, %d heads, %d columns, output (%d, %d, %d): tinyBLAS %a, kernel %a\n", k, m, h, n, i, j, q, x, y);
                            return 1;
                        }
                    }
            ggml_free(ctx);
        }
    }
    // 8 columns and more (prompt passes, DTW, the encoder's first convolution): each 7 columns of the
    // product against tinyBLAS's product of those 7 alone
    const int bk[] = {64, 64, 240, 128}, bm[] = {1500, 24, 3000, 100}, bh[] = {8, 8, 1, 3}, bn[] = {227, 8, 512, 13};
    for (int s = 0; s < 4; ++s) {
        struct ggml_init_params ip = {512u << 20, NULL, false};
        struct ggml_context * ctx = ggml_init(ip);
        const int k = bk[s], m = bm[s], h = bh[s], n = bn[s];
        struct ggml_tensor * a = ggml_new_tensor_3d(ctx, GGML_TYPE_F16, k, m, h);
        struct ggml_tensor * b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k, n, h);
        for (int64_t i = 0; i < ggml_nelements(a); ++i) ((ggml_fp16_t *) a->data)[i] = ggml_fp32_to_fp16(value());
        for (int64_t i = 0; i < ggml_nelements(b); ++i) ((float *) b->data)[i] = value();
        struct ggml_tensor * r = ggml_mul_mat(ctx, a, b);
        struct ggml_cgraph * gf = ggml_new_graph_custom(ctx, 1024, false);
        ggml_build_forward_expand(gf, r);
        struct ggml_tensor * r7[80];
        const int slices = (n + 6) / 7;
        for (int c = 0; c < slices; ++c) {
            const int first = c * 7 + 7 <= n ? c * 7 : n - 7;
            struct ggml_tensor * b7 = ggml_cont(ctx, ggml_view_3d(ctx, b, k, 7, h, b->nb[1], b->nb[2], (size_t) first * b->nb[1]));
            r7[c] = ggml_mul_mat(ctx, a, b7);
            ggml_build_forward_expand(gf, r7[c]);
        }
        ggml_graph_compute_with_ctx(ctx, gf, 2);
        for (int c = 0; c < slices; ++c) {
            const int first = c * 7 + 7 <= n ? c * 7 : n - 7;
            for (int q = 0; q < h; ++q)
                for (int j = 0; j < 7; ++j)
                    for (int i = 0; i < m; ++i, ++outputs) {
                        const float x = ((float *) r7[c]->data)[((size_t) q * 7 + j) * m + i];
                        const float y = ((float *) r->data)[((size_t) q * n + first + j) * m + i];
                        if (memcmp(&x, &y, 4) != 0) {
                            printf("exact-kernels: F16 heads: k %d, m %d, %d heads, %d columns, output (%d, %d, %d): tinyBLAS %a, kernel %a\n", k, m, h, n, i, first + j, q, x, y);
                            return 1;
                        }
                    }
        }
        ggml_free(ctx);
    }
    printf("exact-kernels: F16 heads: %ld attention scores, the bits of tinyBLAS\n", outputs);
    return 0;
}
C
cat >"$W/softmax.cpp" <<'CPP'
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>
#include "softmax.inc"
extern "C" double ggml_vec_soft_max_f32(const int n, float * y, const float * x, float max);  // ggml_float: double
extern "C" void ggml_cpu_init(void);
int main() {
    ggml_cpu_init();
    std::mt19937 rng(38);
    long rows = 0, values = 0;
    const int ns[] = {1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 64, 100, 227, 1500, 1501};
    for (int trial = 0; trial < 4000; ++trial) {
        const int n = trial % 3 == 0 ? ns[trial / 3 % 15] : 1 + (int) (rng() % 200);
        const float spread = trial % 5 == 0 ? 200.0f : trial % 5 == 1 ? 30.0f : 4.0f;  // 200: exp's slow path
        std::vector<float> x(n), a(n), b(n);
        std::uniform_real_distribution<float> u(-spread, spread);
        float mx = -INFINITY;
        for (int i = 0; i < n; ++i) {
            x[i] = trial % 7 == 0 && rng() % 4 == 0 ? -INFINITY : u(rng);  // masked and padded scores
            mx = x[i] > mx ? x[i] : mx;
        }
        if (mx == -INFINITY) mx = 0;
        const float max = trial % 2 ? mx : mx + u(rng) * 0.1f + 1.0f;  // the flash attention's running maximum
        const double sa = ggml_vec_soft_max_f32(n, a.data(), x.data(), max);
        const double sb = voxpipe_soft_max_f32_avx512(n, b.data(), x.data(), max);
        if (memcmp(a.data(), b.data(), sizeof(float) * n) != 0 || memcmp(&sa, &sb, sizeof sa) != 0) {
            for (int i = 0; i < n; ++i)
                if (memcmp(&a[i], &b[i], 4) != 0) printf("exact-kernels: softmax 16 wide: n %d, value %d (x %a): ggml %a, kernel %a\n", n, i, x[i], a[i], b[i]);
            printf("exact-kernels: softmax 16 wide: n %d: sums ggml %a, kernel %a\n", n, sa, sb);
            return 1;
        }
        ++rows;
        values += n;
    }
    printf("exact-kernels: softmax 16 wide: %ld rows, %ld values and their sums, the bits of ggml_vec_soft_max_f32\n", rows, values);
    return 0;
}
CPP
cat >"$W/cpy.c" <<'C'
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"
// ggml-cpy-f16.py: F32 copied into contiguous F16 by ggml_cpy, rows as they are and transposed
// (whisper's cross-attention K and V), on 1 to 3 threads, against upstream's conversion value by
// value (_cvtss_sh, round to nearest even): NaN, infinities, overflow, subnormals, halfway values.
static float value(void) {
    switch (rand() % 12) {
        case 0: return NAN;
        case 1: return rand() % 2 ? INFINITY : -INFINITY;
        case 2: return (rand() % 2 ? 1 : -1) * (65504.0f + (float) (rand() % 64));
        case 3: return ldexpf((float) (rand() % 2048), -24 - rand() % 12);
        case 4: return 1.0f + ldexpf(1.0f + 2 * (rand() % 4), -11 - rand() % 2);
        default: return ldexpf((rand() / (float) RAND_MAX - 0.5f), rand() % 20 - 10);
    }
}
int main(void) {
    const int rows[] = {512, 12, 7, 64}, cols[] = {1500, 40, 13, 9};
    long values = 0;
    srand(38);
    for (int s = 0; s < 4; ++s) {
        for (int nth = 1; nth <= 3; ++nth) {
            struct ggml_init_params ip = {64u << 20, NULL, false};
            struct ggml_context * ctx = ggml_init(ip);
            const int r = rows[s], c = cols[s];
            struct ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, r, c);
            for (int64_t i = 0; i < ggml_nelements(x); ++i) ((float *) x->data)[i] = value();
            struct ggml_tensor * flat = ggml_new_tensor_1d(ctx, GGML_TYPE_F16, (int64_t) r * c);
            struct ggml_tensor * tr = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, c, r);
            struct ggml_cgraph * gf = ggml_new_graph(ctx);
            ggml_build_forward_expand(gf, ggml_cpy(ctx, x, flat));
            ggml_build_forward_expand(gf, ggml_cpy(ctx, ggml_transpose(ctx, x), tr));
            ggml_graph_compute_with_ctx(ctx, gf, nth);
            for (int j = 0; j < c; ++j)
                for (int i = 0; i < r; ++i, values += 2) {
                    const float v = ((float *) x->data)[(size_t) j * r + i];
                    const ggml_fp16_t want = _cvtss_sh(v, 0);
                    const ggml_fp16_t a = ((ggml_fp16_t *) flat->data)[(size_t) j * r + i], b = ((ggml_fp16_t *) tr->data)[(size_t) i * c + j];
                    if (a != want || b != want) {
                        printf("exact-kernels: F16 copy: %d x %d, %d threads, value (%d, %d) %a: upstream 0x%04x, rows 0x%04x, transposed 0x%04x\n", r, c, nth, i, j, v, want, a, b);
                        return 1;
                    }
                }
            ggml_free(ctx);
        }
    }
    printf("exact-kernels: F16 copy: %ld values, rows as they are and transposed, upstream's bits\n", values);
    return 0;
}
C
gcc -O2 -I"$PREFIX/include" -o "$W/heads" "$W/heads.c" -L"$PREFIX/lib" -lggml-cpu -lggml-base -lggml -Wl,-rpath,"$PREFIX/lib"
g++ -O2 -std=c++17 -o "$W/sampling" "$W/sampling.cpp" -pthread
gcc -O3 -mavx2 -mfma -mf16c -o "$W/f16cols" "$W/f16cols.c" -L"$PREFIX/lib" -lggml-cpu -lggml-base -Wl,-rpath,"$PREFIX/lib"
"$W/sampling"
"$W/f16cols"
"$W/q8"
if grep -qw amx_int8 /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then
  g++ -O3 -mavx2 -mfma -mf16c -mavx512f -mavx512vl -mavx512bw -mavx512dq -mamx-tile -mamx-int8 -std=c++17 -DAMX \
    -o "$W/q8amx" "$W/q8.cpp"
  "$W/q8amx"
else
  echo "exact-kernels: q8_0 on AMX: not checked (this CPU has no AMX-INT8; the runtime does not use it here)"
fi
if grep -qw avx512_vnni /proc/cpuinfo && grep -qw avx512dq /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then
  g++ -O3 -mavx2 -mfma -mf16c -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx512vnni -std=c++17 -DVNNI \
    -o "$W/q8vnni" "$W/q8.cpp"
  "$W/q8vnni"
else
  echo "exact-kernels: q8_0 with AVX-512 VNNI: not checked (this CPU has no AVX-512 VNNI; the runtime does not use it here)"
fi
"$W/heads"
gcc -O2 -mf16c -I"$PREFIX/include" -o "$W/cpy" "$W/cpy.c" -L"$PREFIX/lib" -lggml-cpu -lggml-base -lggml -lm -Wl,-rpath,"$PREFIX/lib"
"$W/cpy"
"$W/vecmax"
if grep -qw avx512dq /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then
  g++ -O2 -mavx512f -mavx512vl -mavx512bw -mavx512dq -o "$W/softmax" "$W/softmax.cpp" -L"$PREFIX/lib" -lggml-cpu -lggml-base -Wl,-rpath,"$PREFIX/lib"
  "$W/softmax"
else
  echo "exact-kernels: softmax 16 wide: not checked (this CPU has no AVX-512; the runtime does not use it here)"
fi
