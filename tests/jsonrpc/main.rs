//! JSON-RPC 2.0 on the wire: the spec's examples, rejected frames, and the fuzz regressions
//! replayed.

#[path = "../support/mod.rs"]
mod support;

mod roundtrip_fuzz_inputs;
mod spec;
mod wire_rejections;
