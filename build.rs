//! Links the unwinder statically on Linux with glibc, where the C toolchain has it.
//!
//! Rust programs link the unwinder from `libgcc_s.so.1` by default. Loading it and running
//! its constructor, which queries the CPU's features with `cpuid` (a trap to the
//! hypervisor on a virtual machine), costs every process about 0.1 ms: a twentieth of the
//! pre-commit hook git runs on every commit. Linked from `libgcc_eh.a` instead, as
//! `gcc -static-libgcc` does, the same unwinder is part of the binary and `libgcc_s` is
//! not loaded at all (the linker drops it, being linked `--as-needed`). Where the archive
//! is not found (another C library, a toolchain without libgcc, a cross build), nothing
//! changes.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=RUSTC_LINKER");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("TARGET") != var("HOST")
    {
        return;
    }
    // The C compiler rustc links with: the configured linker, else `cc`.
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_string());
    let Ok(out) = Command::new(linker)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let printed = String::from_utf8_lossy(&out.stdout);
    let archive = Path::new(printed.trim());
    // A compiler that does not know the file prints its bare name back.
    if out.status.success() && archive.is_absolute() && archive.is_file() {
        // Not bundled into the library: named where every binary is linked, before the
        // standard library names `gcc_s`.
        println!("cargo::rustc-link-lib=static:-bundle=gcc_eh");
    }
}
