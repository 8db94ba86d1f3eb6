//! Integration tests of stub-messages: every endpoint over a real socket, faults, the official
//! Python SDK as a client, the strict request rules, and property tests of the stream grammar and of bad
//! request bodies.

mod endpoints;
mod faults;
mod props;
mod sdk;
mod support;
mod validation;
