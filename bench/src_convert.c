/* Reference for the libsamplerate engine: what voxpipe does with `engine: libsamplerate`, in
 * plain C — libsndfile reads float blocks, channels are averaged to mono, src_process converts
 * in blocks, libsndfile writes 16-bit PCM WAV. Usage: src_convert IN OUT RATE [QUALITY 0-4] */
#include <samplerate.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s IN OUT RATE [CONVERTER]\n", argv[0]); return 64; }
    int converter = argc > 4 ? atoi(argv[4]) : SRC_SINC_MEDIUM_QUALITY;
    SF_INFO in_info = {0};
    SNDFILE *in = sf_open(argv[1], SFM_READ, &in_info);
    if (!in) { fprintf(stderr, "%s\n", sf_strerror(NULL)); return 1; }
    int rate = atoi(argv[3]);
    SF_INFO out_info = {.samplerate = rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *out = sf_open(argv[2], SFM_WRITE, &out_info);
    if (!out) { fprintf(stderr, "%s\n", sf_strerror(NULL)); return 1; }
    sf_command(out, SFC_SET_CLIPPING, NULL, SF_TRUE);
    int err = 0;
    SRC_STATE *src = src_new(converter, 1, &err);
    double ratio = (double)rate / in_info.samplerate;
    const int block = 16384, ch = in_info.channels;
    float *buf = malloc(sizeof(float) * block * ch), *mono = malloc(sizeof(float) * block);
    long out_cap = (long)(block * ratio) + 256;
    float *obuf = malloc(sizeof(float) * out_cap);
    for (;;) {
        sf_count_t n = sf_readf_float(in, buf, block);
        for (sf_count_t f = 0; f < n; f++) {
            float s = 0;
            for (int c = 0; c < ch; c++) s += buf[f * ch + c];
            mono[f] = s / ch;
        }
        SRC_DATA d = {0};
        d.data_in = mono; d.input_frames = n; d.src_ratio = ratio; d.end_of_input = n == 0;
        long used = 0;
        do {
            d.data_in = mono + used; d.input_frames = n - used;
            d.data_out = obuf; d.output_frames = out_cap;
            if ((err = src_process(src, &d))) { fprintf(stderr, "%s\n", src_strerror(err)); return 1; }
            used += d.input_frames_used;
            sf_writef_float(out, obuf, d.output_frames_gen);
        } while (used < n || (n == 0 && d.output_frames_gen > 0));
        if (n == 0) break;
    }
    src_delete(src); sf_close(in); sf_close(out);
    return 0;
}
