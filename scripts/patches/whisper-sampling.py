#!/usr/bin/env python3
"""Patches whisper.cpp 1.8.5's src/whisper.cpp so the work between two decoder steps (every beam's
log-softmax, probabilities and draws over the 51,865-token vocabulary) costs a fraction of what it
did, with every number the same. On the 10-minute recording of bench/pauses.sh that work took 5 ms
of every 15-ms beam step (13.8 s of 70), on one core while the other waited:
- expf, twice per token and beam, one value at a time: now 8 at a time by glibc 2.36's own
  algorithm (__expf_fma: the same table, the same fused operations in the same order; checked
  against libm's expf on all 2^32 floats, and at first use on a sample, else libm's is used);
  -inf gives 0 without a call, as expf(-inf) does; values past |x| < 88 still go to expf;
- the maximum logit: 8 at a time where no NaN and no zero could make the order matter;
- a top-k sort of all 51,865 logits whose result beam search never read (its candidates are
  drawn below): gone;
- std::discrete_distribution, built (two 415-KB arrays, allocated and freed) for every draw: its
  algorithm, written out (the sum, the normalized partial sums, the last set to one, a draw by
  std::generate_canonical and lower_bound), in a buffer kept per thread: the same ids from the same
  generator;
- the non-speech tokens, looked up by string in the vocabulary's map for every token of every beam:
  found once per context.
The float sums stay sequential, in upstream's order. Applied by scripts/setup-whisper.sh; fails
loudly if the source moved."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sourcepatch import SourcePatch  # noqa: E402

patch = SourcePatch("whisper-sampling", sys.argv[1])

patch.replace_once("#include <map>\n", "#include <map>\n#include <mutex>\n")

patch.replace_once(
    "    whisper_state * state = nullptr;\n",
    "    whisper_state * state = nullptr;\n"
    "\n"
    "    // voxpipe: the non-speech tokens' ids, found once (scripts/patches/whisper-sampling.py)\n"
    "    std::once_flag voxpipe_nst_once;\n"
    "    std::vector<whisper_token> voxpipe_nst_ids;\n",
)

KERNELS = r"""
// voxpipe: the sampler's loops 8 values at a time, the same bits (scripts/patches/whisper-sampling.py)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
// glibc 2.36's __exp2f_data: 2^(i/32) - (i << 47), then its scaled constants
static const uint64_t voxpipe_exp2f_tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

static inline double voxpipe_bits_to_double(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

// 4 lanes of __expf_fma's main path: k = round(x*32/ln2), r, 2^(k/32) from the table, a cubic.
__attribute__((target("avx2,fma"))) static inline __m128 voxpipe_expf4(__m128 x) {
    const __m256d invln2n = _mm256_set1_pd(voxpipe_bits_to_double(0x40471547652b82feull));
    const __m256d shift   = _mm256_set1_pd(voxpipe_bits_to_double(0x4338000000000000ull));
    const __m256d c0      = _mm256_set1_pd(voxpipe_bits_to_double(0x3ebc6af84b912394ull));
    const __m256d c1      = _mm256_set1_pd(voxpipe_bits_to_double(0x3f2ebfce50fac4f3ull));
    const __m256d c2      = _mm256_set1_pd(voxpipe_bits_to_double(0x3f962e42ff0c52d6ull));
    const __m256d xd  = _mm256_cvtps_pd(x);
    const __m256d kds = _mm256_fmadd_pd(invln2n, xd, shift);
    const __m256i ki  = _mm256_castpd_si256(kds);
    const __m256d r   = _mm256_fmsub_pd(invln2n, xd, _mm256_sub_pd(kds, shift));
    __m256i t = _mm256_i64gather_epi64((const long long *) voxpipe_exp2f_tab,
                                       _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
    t = _mm256_add_epi64(t, _mm256_slli_epi64(ki, 47));
    const __m256d z  = _mm256_fmadd_pd(c0, r, c1);
    const __m256d y1 = _mm256_fmadd_pd(r, c2, _mm256_set1_pd(1.0));
    const __m256d y  = _mm256_mul_pd(_mm256_fmadd_pd(z, _mm256_mul_pd(r, r), y1), _mm256_castsi256_pd(t));
    return _mm256_cvtpd_ps(y);
}

// out[i] = expf(in[i]) (out may be in): -inf gives 0; |x| >= 88, infinities and NaN go to expf itself.
__attribute__((target("avx2,fma"))) static void voxpipe_expf_avx2(const float * in, float * out, int n) {
    const __m256i mask = _mm256_set1_epi32(0x7ff), lim = _mm256_set1_epi32(0x42a);
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(in + i);
        const __m256 is_ninf = _mm256_cmp_ps(x, ninf, _CMP_EQ_OQ);
        const __m256i top = _mm256_and_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 20), mask);
        const int special = _mm256_movemask_ps(_mm256_andnot_ps(is_ninf,
                                _mm256_castsi256_ps(_mm256_cmpgt_epi32(top, lim))));
        const __m256 e = _mm256_set_m128(voxpipe_expf4(_mm256_extractf128_ps(x, 1)),
                                         voxpipe_expf4(_mm256_castps256_ps128(x)));
        float xs[8];  // the inputs, for out == in
        _mm256_storeu_ps(xs, x);
        _mm256_storeu_ps(out + i, _mm256_andnot_ps(is_ninf, e));
        for (int j = 0; special != 0 && j < 8; ++j) {
            if (special >> j & 1) {
                out[i + j] = expf(xs[j]);
            }
        }
    }
    for (; i < n; ++i) {
        out[i] = expf(in[i]);
    }
}

// The largest value, or false when a NaN or a zero could make std::max_element's answer depend
// on the order (the caller then asks std::max_element).
__attribute__((target("avx2"))) static bool voxpipe_max_avx2(const float * x, int n, float * result) {
    if (n < 8) {
        return false;
    }
    __m256 m = _mm256_loadu_ps(x);
    __m256 nan = _mm256_cmp_ps(m, m, _CMP_UNORD_Q);
    int i = 8;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        m = _mm256_max_ps(m, v);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, m);
    float best = lanes[0];
    for (int j = 1; j < 8; ++j) {
        best = lanes[j] > best ? lanes[j] : best;
    }
    for (; i < n; ++i) {
        if (x[i] != x[i]) {
            return false;
        }
        best = x[i] > best ? x[i] : best;
    }
    if (_mm256_movemask_ps(nan) != 0 || best == 0.0f) {
        return false;
    }
    *result = best;
    return true;
}

// Whether the expf above gives libm's bits here (another libm may round otherwise): a sample of
// the range the sampler uses, once.
static bool voxpipe_expf_usable() {
    static const bool usable = [] {
        if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
            return false;
        }
        std::vector<float> in, out;
        for (uint32_t u = 0; u < 0x7f800000u; u += 0x7919u) {
            for (const uint32_t sign : {0u, 0x80000000u}) {
                const uint32_t bits = u | sign;
                float f;
                memcpy(&f, &bits, sizeof f);
                in.push_back(f);
            }
        }
        out.resize(in.size());
        voxpipe_expf_avx2(in.data(), out.data(), (int) in.size());
        for (size_t i = 0; i < in.size(); ++i) {
            const float e = expf(in[i]);
            if (memcmp(&e, &out[i], sizeof e) != 0 && !(e != e && out[i] != out[i])) {
                return false;
            }
        }
        return true;
    }();
    return usable;
}
#endif

static void voxpipe_expf_n(const float * in, float * out, int n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (voxpipe_expf_usable()) {
        voxpipe_expf_avx2(in, out, n);
        return;
    }
#endif
    for (int i = 0; i < n; ++i) {
        out[i] = in[i] == -INFINITY ? 0.0f : expf(in[i]);
    }
}

static float voxpipe_max_element(const std::vector<float> & x) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    float m;
    if (__builtin_cpu_supports("avx2") && voxpipe_max_avx2(x.data(), (int) x.size(), &m)) {
        return m;
    }
#endif
    return *std::max_element(x.begin(), x.end());
}

// k draws of std::discrete_distribution<>(probs.begin(), probs.end()) from rng, as libstdc++ makes
// them (random.tcc: the sum, each weight over it summed in order, the last set to 1, then
// lower_bound of generate_canonical), in the decoder's buffer `cp` instead of two new arrays.
static void voxpipe_discrete_draws(
        const std::vector<float> & probs, std::mt19937 & rng, int k, int * ids, std::vector<double> & cp) {
    const size_t n = probs.size();
    if (n < 2) {
        for (int i = 0; i < k; ++i) {
            ids[i] = 0;
        }
        return;
    }
    cp.resize(n);
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        sum = sum + (double) probs[i];
    }
    double acc = (double) probs[0] / sum;
    cp[0] = acc;
    for (size_t i = 1; i < n; ++i) {
        acc = acc + (double) probs[i] / sum;
        cp[i] = acc;
    }
    cp[n - 1] = 1.0;
    for (int i = 0; i < k; ++i) {
        const double p = std::generate_canonical<double, std::numeric_limits<double>::digits>(rng);
        ids[i] = (int) (std::lower_bound(cp.begin(), cp.end(), p) - cp.begin());
    }
}
"""

patch.replace_once(
    "static void whisper_compute_logprobs(\n"
    "                const std::vector<float> & logits,\n"
    "                              const int    n_logits,\n"
    "                      std::vector<float> & logprobs) {\n",
    KERNELS + "\n"
    "static void whisper_compute_logprobs(\n"
    "                const std::vector<float> & logits,\n"
    "                              const int    n_logits,\n"
    "                      std::vector<float> & logprobs,\n"
    "                      std::vector<float> & shifted) { // voxpipe: scratch (whisper-sampling.py)\n",
)
patch.replace_once(
    "        whisper_compute_logprobs(logits, n_logits, logprobs);\n",
    "        whisper_compute_logprobs(logits, n_logits, logprobs, probs);\n",
)
patch.replace_once(
    "                    whisper_compute_logprobs(state->logits, n_logits, logprobs);\n",
    "                    whisper_compute_logprobs(state->logits, n_logits, logprobs, probs);\n",
)
patch.replace_once(
    "    mutable std::mt19937 rng; // used for sampling at t > 0.0\n",
    "    mutable std::mt19937 rng; // used for sampling at t > 0.0\n"
    "    mutable std::vector<double> voxpipe_cp; // voxpipe: the draws' partial sums (whisper-sampling.py)\n",
)

patch.replace_once(
    "    const float logit_max = *std::max_element(logits.begin(), logits.end());\n"
    "    float logsumexp = 0.0f;\n"
    "    for (int i = 0; i < n_logits; ++i) {\n"
    "        if (logits[i] > -INFINITY) {\n"
    "            logsumexp += expf(logits[i] - logit_max);\n"
    "        }\n"
    "    }\n"
    "    logsumexp = logf(logsumexp) + logit_max;\n"
    "\n"
    "    for (int i = 0; i < n_logits; ++i) {\n",
    "    // voxpipe: the same values, the exponentials 8 at a time (whisper-sampling.py)\n"
    "    const float logit_max = voxpipe_max_element(logits);\n"
    "    shifted.resize(n_logits);\n"
    "    for (int i = 0; i < n_logits; ++i) {\n"
    "        shifted[i] = logits[i] - logit_max;\n"
    "    }\n"
    "    voxpipe_expf_n(shifted.data(), shifted.data(), n_logits);\n"
    "    float logsumexp = 0.0f;\n"
    "    for (int i = 0; i < n_logits; ++i) {\n"
    "        if (logits[i] > -INFINITY) {\n"
    "            logsumexp += shifted[i];\n"
    "        }\n"
    "    }\n"
    "    logsumexp = logf(logsumexp) + logit_max;\n"
    "\n"
    "    for (int i = 0; i < n_logits; ++i) {\n",
)

patch.replace_once(
    "    for (int i = 0; i < n_logits; ++i) {\n"
    "        if (logits[i] == -INFINITY) {\n"
    "            probs[i] = 0.0f;\n"
    "        } else {\n"
    "            probs[i] = expf(logprobs[i]);\n"
    "        }\n"
    "    }\n",
    "    // voxpipe: 8 at a time (whisper-sampling.py)\n"
    "    voxpipe_expf_n(logprobs.data(), probs.data(), n_logits);\n"
    "    for (int i = 0; i < n_logits; ++i) {\n"
    "        if (logits[i] == -INFINITY) {\n"
    "            probs[i] = 0.0f;\n"
    "        }\n"
    "    }\n",
)

NST_HEAD = "        if (params.suppress_nst) {\n"
NST_BODY = (
    "            for (const std::string & token : non_speech_tokens) {\n"
    "                const std::string suppress_tokens[] = {token, \" \" + token};\n"
    "                for (const std::string & suppress_token : suppress_tokens) {\n"
    "                    if (vocab.token_to_id.find(suppress_token) != vocab.token_to_id.end()) {\n"
    "                        logits[vocab.token_to_id.at(suppress_token)] = -INFINITY;\n"
    "                    }\n"
    "                }\n"
    "            }\n"
    "\n"
    "            // allow hyphens \"-\" and single quotes \"'\" between words, but not at the beginning of a word\n"
    "            if (vocab.token_to_id.find(\" -\") != vocab.token_to_id.end()) {\n"
    "                logits[vocab.token_to_id.at(\" -\")] = -INFINITY;\n"
    "            }\n"
    "            if (vocab.token_to_id.find(\" '\") != vocab.token_to_id.end()) {\n"
    "                logits[vocab.token_to_id.at(\" '\")] = -INFINITY;\n"
    "            }\n"
)
# The same lookups, once per context: each suppression becomes an id kept in the context.
collect = re.sub(r"logits\[(vocab\.token_to_id\.at\(.*?\))\] = -INFINITY;", r"ctx.voxpipe_nst_ids.push_back(\1);", NST_BODY)
collect = "".join("    " + line if line.strip() else line for line in collect.splitlines(keepends=True))
patch.replace_once(
    NST_HEAD + NST_BODY + "        }\n",
    NST_HEAD
    + "            // voxpipe: the same tokens, looked up once per context (whisper-sampling.py)\n"
    "            std::call_once(ctx.voxpipe_nst_once, [&] {\n"
    + collect
    + "            });\n"
    "            for (const whisper_token id : ctx.voxpipe_nst_ids) {\n"
    "                logits[id] = -INFINITY;\n"
    "            }\n"
    "        }\n",
)

patch.replace_once(
    "        std::discrete_distribution<> dist(probs.begin(), probs.end());\n"
    "\n"
    "        result.id   = dist(decoder.rng);\n",
    "        // voxpipe: std::discrete_distribution's draw, written out (whisper-sampling.py)\n"
    "        voxpipe_discrete_draws(probs, decoder.rng, 1, &result.id, decoder.voxpipe_cp);\n",
)

patch.replace_once(
    "    auto & logits_id = decoder.logits_id;\n"
    "\n"
    "    logits_id.resize(n_logits);\n"
    "    for (int i = 0; i < n_logits; ++i) {\n"
    "        logits_id[i].first = logits[i];\n"
    "        logits_id[i].second = i;\n"
    "    }\n"
    "\n"
    "    {\n"
    "        using pair_type = std::remove_reference<decltype(logits_id)>::type::value_type;\n"
    "        std::partial_sort(\n"
    "                logits_id.begin(),\n"
    "                logits_id.begin() + k, logits_id.end(),\n"
    "                [](const pair_type & a, const pair_type & b) {\n"
    "            return a.first > b.first;\n"
    "        });\n"
    "    }\n"
    "\n",
    "    // voxpipe: no sort of the logits, whose order nothing below read (whisper-sampling.py)\n"
    "    (void) logits;\n"
    "\n",
)

patch.replace_once(
    "    std::discrete_distribution<> dist(probs.begin(), probs.end());\n"
    "\n"
    "    for (int i = 0; i < k; ++i) {\n"
    "        const auto id = dist(decoder.rng);\n",
    "    // voxpipe: std::discrete_distribution's draws, written out (whisper-sampling.py)\n"
    "    std::vector<int> voxpipe_ids(k);\n"
    "    voxpipe_discrete_draws(probs, decoder.rng, k, voxpipe_ids.data(), decoder.voxpipe_cp);\n"
    "\n"
    "    for (int i = 0; i < k; ++i) {\n"
    "        const auto id = voxpipe_ids[i];\n",
)

patch.save()
