import CSndFile
import Foundation
import VoxCore
import VoxDecode
import VoxTestSupport

/// Writes samples with libsndfile in the given major|subtype format; false where this
/// libsndfile cannot write it.
func writeSoundFile(_ url: URL, format: Int32, rate: Int, channels: Int, samples: [Float]) -> Bool {
    var info = SF_INFO()
    info.samplerate = Int32(rate)
    info.channels = Int32(channels)
    info.format = format
    guard sf_format_check(&info) != 0, let handle = sf_open(url.path, Int32(SFM_WRITE), &info) else { return false }
    _ = samples.withUnsafeBufferPointer {
        sf_writef_float(handle, $0.baseAddress, sf_count_t(samples.count / channels))
    }
    sf_close(handle)
    return true
}
