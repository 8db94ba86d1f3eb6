//! Shared helpers of the probelab benchmarks.
