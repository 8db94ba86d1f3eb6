//! Integration tests of stub-messages: every endpoint over a real socket, faults, the official
//! Python SDK as a client, and property tests of the stream grammar and of bad request bodies.

mod endpoints;
mod faults;
mod props;
mod sdk;
mod support;
