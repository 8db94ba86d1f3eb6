//! Integration tests of stub-messages: every endpoint over a real socket, faults, the official
//! Python SDK and the Claude Code binary as clients, the strict request rules, and property tests of the
//! stream grammar and of bad request bodies.

mod claude_code;
mod endpoints;
mod faults;
mod hardening;
mod prefix;
mod props;
mod sdk;
mod stored;
mod support;
mod validation;
mod waits;
