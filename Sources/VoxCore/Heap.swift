import Foundation

#if canImport(Glibc)
internal import CMalloc
#endif

/// glibc's heap, kept to what a run needs now. glibc keeps freed blocks in its arenas for reuse;
/// by default a freed block over 128 KB raises the size from which blocks are mapped on their own
/// (up to 32 MB), so the audio blocks, chunks and model buffers that later come and go are cut
/// from the heap, whose holes grow it item after item and block after block, and each thread that
/// allocates may get a heap of its own. Elsewhere than glibc, nothing to do.
public enum Heap {
    /// Set once at the start of the process: blocks of 4 MB or more always mapped on their own
    /// (and unmapped when freed), a heap per core.
    public static func bound() {
        #if canImport(Glibc)
        _ = mallopt(M_MMAP_THRESHOLD, 4 << 20)
        _ = mallopt(M_ARENA_MAX, Int32(max(2, ProcessInfo.processInfo.activeProcessorCount)))
        #endif
    }

    /// Gives back the free memory of every heap arena, the pages of free chunks inside a heap
    /// too (not only its top): called when a server's request has been answered (the 4-KB speech
    /// request left 0.1-0.2 GB resident after it even with every buffer freed) and after each
    /// block a long item is diarized in.
    public static func returnFreeMemory() {
        #if canImport(Glibc)
        _ = malloc_trim(0)
        #endif
    }
}
