//! Read budgets: Read of 1 KB, 64 KB and 256 KB files, a file just over 256 KB (the cost of the
//! refusal), a file at the 25,000-token boundary, and offset/limit windows into a 100 MB file — each as
//! time and throughput (MB/s over the file's bytes; for windows, over the bytes scanned to the window's end).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use probelab_runtime::limits::{READ_MAX_FILE_BYTES as MAX_FILE_BYTES, READ_MAX_OUTPUT_TOKENS as MAX_OUTPUT_TOKENS};
use probelab_runtime::ToolOutput;
use serde_json::json;
use std::io::Write;

const LINE: &[u8] = b"fn main() { println!(\"hello, probelab\"); } // a 64-byte line..\n";

fn make(path: &std::path::Path, bytes: u64) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap_or_else(|e| panic!("{e}")));
    let mut left = bytes as usize;
    while left > 0 {
        let n = left.min(LINE.len());
        f.write_all(&LINE[..n]).unwrap_or_else(|e| panic!("{e}"));
        left -= n;
    }
    f.flush().unwrap_or_else(|e| panic!("{e}"));
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ctx = rt.block_on(probelab_benches::session(dir.path(), None, Vec::new())).ctx;
    let read = probelab_benches::tool("Read");
    // 25,000 tokens at the estimate's 4 bytes per token of numbered output: 2,000 lines (the default
    // window) of the length that lands on the ceiling.
    let boundary_line = (MAX_OUTPUT_TOKENS as usize * 4) / 2000 - 8; // "  NNNN\t" + line + "\n"
    let boundary: Vec<u8> =
        std::iter::repeat_n([vec![b'x'; boundary_line - 1], vec![b'\n']].concat(), 2000).flatten().collect();
    std::fs::write(ctx.cwd.join("boundary.txt"), &boundary).unwrap_or_else(|e| panic!("{e}"));
    let files =
        [("1KB", 1024u64), ("64KB", 64 * 1024), ("256KB", MAX_FILE_BYTES), ("256KB+1_refused", MAX_FILE_BYTES + 1)];
    for (name, bytes) in files {
        make(&ctx.cwd.join(format!("{name}.txt")), bytes);
    }
    make(&ctx.cwd.join("100MB.txt"), 100 * 1024 * 1024);

    let call = |input: serde_json::Value| {
        let out = rt.block_on(read.call(input, &ctx));
        match out {
            Ok(ToolOutput::Text(t)) => t.len(),
            Ok(_) => 0,
            Err(e) => e.to_string().len(),
        }
    };
    let mut g = c.benchmark_group("read/whole_file");
    for (name, bytes) in files {
        let path = ctx.cwd.join(format!("{name}.txt")).display().to_string();
        g.throughput(Throughput::Bytes(bytes));
        g.bench_with_input(BenchmarkId::from_parameter(name), &path, |b, p| b.iter(|| call(json!({"file_path": p}))));
    }
    let p = ctx.cwd.join("boundary.txt").display().to_string();
    g.throughput(Throughput::Bytes(boundary.len() as u64));
    g.bench_with_input(BenchmarkId::from_parameter("25k_token_boundary"), &p, |b, p| {
        b.iter(|| call(json!({"file_path": p})))
    });
    g.finish();

    let mut g = c.benchmark_group("read/window_100MB");
    g.sample_size(10);
    let p = ctx.cwd.join("100MB.txt").display().to_string();
    let lines = 100 * 1024 * 1024 / LINE.len() as u64;
    for (name, offset) in [("start", 1u64), ("middle", lines / 2), ("end", lines - 100)] {
        // bytes scanned to reach the window and read it
        g.throughput(Throughput::Bytes((offset + 100) * LINE.len() as u64));
        g.bench_with_input(BenchmarkId::from_parameter(name), &p, |b, p| {
            b.iter(|| call(json!({"file_path": p, "offset": offset, "limit": 100})))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
