/// Sample-rate conversion for stages that are not resamplers themselves (a WAV writer's `rate`,
/// an evidence bundle's 48 kHz). The executable supplies libsoxr's through `StageContext`, so
/// stage modules need not import each other.
public protocol RateConversion: Sendable {
    func converter(channels: Int, from inputRate: Int, to outputRate: Int) throws -> any RateConverter
}

/// One stream's converter: interleaved Float32 in, converted frames out as they are ready.
public protocol RateConverter: AnyObject {
    func process(_ samples: [Float]) throws -> [Float]
    /// What the converter still holds, at end of input.
    func flush() throws -> [Float]
}

extension RateConverter {
    /// Converts a whole bounded buffer (a chunk).
    public func convertAll(_ samples: [Float]) throws -> [Float] {
        try process(samples) + flush()
    }
}
