#if canImport(Glibc)
internal import CMalloc
#endif

/// What a request's memory leaves behind in glibc's heap, given back to the system: a server lives
/// on after a request for a long text, and what the request took must not stay resident. glibc
/// keeps freed blocks in its arenas for reuse (blocks up to 32 MiB once large ones have been freed:
/// its mmap threshold rises), so the 4-KB speech request left 0.1-0.2 GB resident after it even
/// with every buffer freed. Elsewhere than glibc, nothing to do.
enum HeapRelease {
    /// Gives back the free memory of every heap arena, the pages of free chunks inside a heap
    /// too (not only its top): called when a request has been answered.
    static func returnFreeMemory() {
        #if canImport(Glibc)
        _ = malloc_trim(0)
        #endif
    }
}
