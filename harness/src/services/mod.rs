//! Local services a probe run starts beside the stub: real servers the built-in tools talk to over the
//! network, never mocks inside the tools. Each module owns one service and its files in the sandbox.

pub mod artifact;
pub mod tls;
pub mod web;
